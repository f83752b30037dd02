/**
 * Errors with Triton's status codes. Every error infernode raises to a caller is an
 * `InferenceServerError`; its `code` is Triton's core status and it knows the HTTP status and
 * gRPC code Triton answers with (reference: triton-protocol.md §1.12).
 */

/** Triton's core error codes. The numeric values are shared with `cpp/core/status.h`. */
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
