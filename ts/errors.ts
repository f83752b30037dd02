/**
 * Errors with Triton's status codes. Every error infernode raises to a caller is an
 * `InferenceServerError`; its `code` is Triton's core status and it knows the HTTP status and
 * gRPC code Triton answers with (reference: triton-protocol.md §1.12).
 */

/**
 * Triton's core error codes. The numeric values are shared with `cpp/core/status.h` (which also
 * has kSuccess = 0); test/unit/shared-constants.test.ts checks that the two lists agree.
 */
export const StatusCode = {
  UNKNOWN: 1,
  INTERNAL: 2,
  NOT_FOUND: 3,
  INVALID_ARG: 4,
  UNAVAILABLE: 5,
  UNSUPPORTED: 6,
  ALREADY_EXISTS: 7,
  CANCELLED: 8,
} as const;

export type StatusCodeName = keyof typeof StatusCode;

const HTTP_STATUS: Record<StatusCodeName, number> = {
  UNKNOWN: 400,
  INTERNAL: 500,
  NOT_FOUND: 404,
  INVALID_ARG: 400,
  UNAVAILABLE: 503,
  UNSUPPORTED: 501,
  ALREADY_EXISTS: 400,
  CANCELLED: 400,
};

/** gRPC status numbers (grpc/status.h). */
const GRPC_CODE: Record<StatusCodeName, number> = {
  UNKNOWN: 2,
  INTERNAL: 13,
  NOT_FOUND: 5,
  INVALID_ARG: 3,
  UNAVAILABLE: 14,
  UNSUPPORTED: 12,
  ALREADY_EXISTS: 6,
  CANCELLED: 1,
};

const NAME_BY_NUMBER = new Map<number, StatusCodeName>(
  (Object.keys(StatusCode) as StatusCodeName[]).map((name) => [StatusCode[name], name]),
);

/** The error every infernode API rejects or throws with. */
export class InferenceServerError extends Error {
  /** Triton's core status code name, e.g. `INVALID_ARG`. */
  readonly code: StatusCodeName;

  constructor(code: StatusCodeName | number, message: string) {
    super(message);
    this.name = 'InferenceServerError';
    this.code = typeof code === 'number' ? NAME_BY_NUMBER.get(code) ?? 'INTERNAL' : code;
  }

  /** The HTTP status Triton answers with for this error. */
  get httpStatus(): number {
    return HTTP_STATUS[this.code];
  }

  /** The gRPC status code Triton answers with for this error. */
  get grpcCode(): number {
    return GRPC_CODE[this.code];
  }
}

/** Shorthand constructors used across the facade. */
export function invalidArg(message: string): InferenceServerError {
  return new InferenceServerError('INVALID_ARG', message);
}

export function notFound(message: string): InferenceServerError {
  return new InferenceServerError('NOT_FOUND', message);
}

export function unavailable(message: string): InferenceServerError {
  return new InferenceServerError('UNAVAILABLE', message);
}

/** Wraps anything thrown by user code into an InferenceServerError, keeping its message. */
export function toInferenceServerError(err: unknown): InferenceServerError {
  if (err instanceof InferenceServerError) return err;
  if (err instanceof Error) return new InferenceServerError('INTERNAL', err.message);
  return new InferenceServerError('INTERNAL', String(err));
}

/**
 * The most characters of one piece of client-supplied text (a model or tensor name, a shape, a
 * value) that an error message echoes. A request can carry megabytes of it; echoed whole, the
 * message would not fit a gRPC status (sent in HTTP/2 trailers) and would bloat HTTP error
 * bodies. Message builders pass client text through `clip` / `clipShape`; the frontends bound
 * whole messages as a last resort (`boundMessage`).
 */
export const MAX_ECHOED_CHARS = 256;

/** The longest error message a frontend sends (characters; gRPC also bounds its encoding). */
export const MAX_MESSAGE_CHARS = 4096;

/** `text` when short, else its first `max` characters, '…' and its length. */
export function clip(text: string, max = MAX_ECHOED_CHARS): string {
  if (text.length <= max) return text;
  return `${wholeChars(text.slice(0, max))}… (${text.length} characters)`;
}

/** A shape for a message, "[1,2,3]", clipped like `clip` ("[1,1,…] (1000000 dims)"). */
export function clipShape(shape: readonly unknown[], max = MAX_ECHOED_CHARS): string {
  let text = '';
  for (let i = 0; i < shape.length; i++) {
    const dim = `${i > 0 ? ',' : ''}${typeof shape[i] === 'string' ? clip(shape[i] as string, 32) : String(shape[i])}`;
    if (text.length + dim.length > max) return `[${text},…] (${shape.length} dims)`;
    text += dim;
  }
  return `[${text}]`;
}

/**
 * The last-resort bound on a whole message: its head and tail around '…' when longer than `max`
 * (both ends say what and where: "unexpected shape for input 'X' … got [1,1,…]").
 */
export function boundMessage(message: string, max = MAX_MESSAGE_CHARS): string {
  if (message.length <= max) return message;
  const tail = Math.floor(max / 4);
  return `${wholeChars(message.slice(0, max - tail - 1))}…${wholeChars(message.slice(message.length - tail))}`;
}

/** Drops a surrogate half that slicing left at either end (it would not encode as UTF-8). */
function wholeChars(text: string): string {
  let start = 0;
  let end = text.length;
  if (end > 0 && isLowSurrogate(text.charCodeAt(0))) start = 1;
  if (end > start && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
