/**
 * Request bodies with their limits checked before anything is allocated (security.md §1.1):
 * a Content-Length above the maximum is refused without reading a byte, a chunked body is
 * counted as it arrives and refused the moment it passes the maximum (or Triton's 65,536
 * chunks), and a compressed body (gzip or deflate, Triton's `Content-Encoding` support) is
 * inflated with the same maximum as the output bound. Any other Content-Encoding is refused
 * before reading. A body costs its own size in memory however it is framed: the pieces Node
 * hands over are copied into one buffer as they come.
 *
 * Alignment: the binary tensor data extension puts raw tensors right after the JSON header.
 * When the body is assembled from several chunks (or inflated), it is placed so that its binary
 * part starts on an 8-byte boundary, so tensors reach native code as views, not copies.
 */
import type { IncomingMessage } from 'node:http';
import * as zlib from 'node:zlib';
import { invalidArg, InferenceServerError } from '../../errors';
import { checkJsonArrays, checkJsonObjects, MAX_MANAGEMENT_JSON_ARRAYS } from '../../json-bounds';

/** Triton's --http-max-input-size default: 64 MiB. */
export const DEFAULT_MAX_INPUT_SIZE = 1 << 26;

type Encoding = 'identity' | 'gzip' | 'deflate';

/** The request's Content-Encoding; INVALID_ARG for anything but gzip, deflate or identity. */
export function contentEncoding(req: IncomingMessage): Encoding {
  const value = req.headers['content-encoding'];
  if (value === undefined) return 'identity';
  const enc = value.trim().toLowerCase();
  if (enc === '' || enc === 'identity') return 'identity';
  if (enc === 'gzip' || enc === 'x-gzip') return 'gzip';
  if (enc === 'deflate') return 'deflate';
  throw invalidArg(`unsupported Content-Encoding '${value}': expected gzip, deflate or identity`);
}

const RAISE_LIMIT = 'Use --http-max-input-size to increase the limit.';

/**
 * Triton's texts for a body over --http-max-input-size: a raw binary request
 * (Inference-Header-Content-Length: 0) is one input, everything else a JSON request.
 */
function tooLarge(req: IncomingMessage, size: number | string, max: number): InferenceServerError {
  if (req.headers['inference-header-content-length'] === '0') {
    return invalidArg(`Raw input has a byte_size (${size} bytes) that exceeds the maximum allowed value of ${max} bytes. ${RAISE_LIMIT}`);
  }
  return invalidArg(`request JSON size of ${size} bytes exceeds the maximum allowed input size of ${max} bytes. ${RAISE_LIMIT}`);
}

function decompressedTooLarge(max: number): InferenceServerError {
  return invalidArg(`Decompressed data size exceeds the maximum allowed value of ${max} bytes. ${RAISE_LIMIT}`);
}

/** Checks the declared Content-Length against the maximum before reading (null when chunked). */
export function declaredLength(req: IncomingMessage, max: number): number | null {
  const header = req.headers['content-length'];
  if (header === undefined) return null;
  // llhttp has already refused malformed values; a huge one still parses to a large number.
  const length = Number(header);
  if (length > max) throw tooLarge(req, header, max);
  return length;
}

/** A buffer of `size` bytes whose byte `alignAt` sits on an 8-byte boundary. */
function alignedBuffer(size: number, alignAt: number): Buffer {
  // allocUnsafe: small bodies come from Node's pool (no ArrayBuffer per request); up to 7
  // spare bytes let byte `alignAt` land on an 8-byte boundary wherever the slice starts.
  const base = Buffer.allocUnsafe(size + 7);
  const start = (8 - ((base.byteOffset + alignAt) % 8)) % 8;
  return base.subarray(start, start + size);
}

/** `data` itself when its byte `alignAt` is 8-byte aligned, else an aligned copy. */
function aligned(data: Buffer, alignAt: number): Buffer {
  if ((data.byteOffset + alignAt) % 8 === 0) return data;
  const out = alignedBuffer(data.length, alignAt);
  out.set(data);
  return out;
}

/** Triton's cap on the non-empty chunks of a chunked body (http_server.cc kMaxChunkedChunks). */
export const MAX_CHUNKED_CHUNKS = 1 << 16;

/**
 * Pieces of a chunked body this small count against MAX_CHUNKED_CHUNKS. Node hands a body over
 * per chunk and per socket read, with no chunk boundaries: a large chunk arrives as read-sized
 * pieces (a TCP segment's 1,448 bytes at least, on a real link), which must not count, or one
 * big chunk would pass the cap at ~95 MB; small chunks, what the cap is about, arrive as small
 * pieces and count as in Triton.
 */
export const COUNTED_PIECE_BYTES = 1024;

function tooManyChunks(): InferenceServerError {
  return invalidArg(`Chunked request body exceeds maximum of ${MAX_CHUNKED_CHUNKS} non-empty chunks. ` +
    'Send fewer or larger HTTP chunks.');
}

/** Room a body gets when its second piece comes; it doubles from there. */
const FIRST_GROWTH = 64 << 10;

/**
 * A body as it arrives, in one aligned buffer. Node hands the body over in pieces (one per HTTP
 * chunk and socket read, each a Buffer of its own); keeping them to the end let 22M one-byte
 * chunks (132 MB on the wire, a 22 MB body) fill the heap with Buffer objects. Copying each into
 * place as it comes keeps memory at the body's size whatever the framing. The first piece is kept
 * as it is until a second one comes: most bodies are one piece, and stay uncopied when aligned.
 */
class BodyBuffer {
  private first: Buffer | null = null;
  private buf: Buffer | null = null;
  length = 0;

  /** `declared`: the Content-Length (null when chunked), the most room the body needs. */
  constructor(private readonly alignAt: number, private readonly declared: number | null, private readonly max: number) {}

  add(piece: Buffer): void {
    if (this.length === 0) {
      this.first = piece;
    } else {
      const needed = this.length + piece.length;
      if (!this.buf || needed > this.buf.length) this.grow(needed);
      this.buf!.set(piece, this.length);
    }
    this.length += piece.length;
  }

  /** The body, byte `alignAt` 8-byte aligned. */
  result(): Buffer {
    if (this.length === 0) return Buffer.alloc(0);
    if (!this.buf) return aligned(this.first!, this.alignAt);
    return this.buf.subarray(0, this.length);
  }

  /**
   * Doubles the room, up to the Content-Length (or the maximum): a body holds at most twice the
   * bytes that came, so a Content-Length alone reserves nothing, at the cost of copying each
   * byte at most twice.
   */
  private grow(needed: number): void {
    const doubled = Math.max(2 * (this.buf?.length ?? 0), FIRST_GROWTH);
    const next = alignedBuffer(Math.max(needed, Math.min(this.declared ?? this.max, doubled)), this.alignAt);
    next.set(this.buf ? this.buf.subarray(0, this.length) : this.first!);
    this.first = null;
    this.buf = next;
  }
}

function inflate(encoding: 'gzip' | 'deflate', data: Buffer, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, out: Buffer): void => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        return reject(decompressedTooLarge(max));
      }
      reject(invalidArg(`unable to decompress the request body (${encoding}): ${err.message}`));
    };
    if (encoding === 'gzip') zlib.gunzip(data, { maxOutputLength: max }, done);
    else zlib.inflate(data, { maxOutputLength: max }, done);
  });
}

/**
 * Reads the whole body (at most `max` bytes, also after decompression). `alignAt`: the offset
 * in the (decompressed) body that should be 8-byte aligned. Rejects with INVALID_ARG on a limit
 * or encoding error, and with CANCELLED when the client goes away before the body is complete.
 */
export async function readBody(req: IncomingMessage, max: number, alignAt = 0): Promise<Buffer> {
  const encoding = contentEncoding(req);
  const declared = declaredLength(req, max);
  const raw = await collect(req, max, declared, encoding === 'identity' ? alignAt : 0);
  if (encoding === 'identity') return raw;
  const inflated = await inflate(encoding, raw, max);
  return aligned(inflated, alignAt);
}

function collect(req: IncomingMessage, max: number, declared: number | null, alignAt: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const body = new BodyBuffer(alignAt, declared, max);
    // A chunked body's small pieces count against Triton's chunk cap (COUNTED_PIECE_BYTES;
    // docs/http.md, "Limits").
    const chunked = declared === null && req.headers['transfer-encoding'] !== undefined;
    let pieces = 0;
    let finished = false;
    const cleanup = (): void => {
      finished = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const refuse = (err: InferenceServerError): void => {
      cleanup();
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer): void => {
      if (body.length + chunk.length > max) return refuse(tooLarge(req, `more than ${max}`, max));
      if (chunked && chunk.length < COUNTED_PIECE_BYTES && ++pieces > MAX_CHUNKED_CHUNKS) return refuse(tooManyChunks());
      body.add(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(body.result());
    };
    const gone = (): void => {
      if (finished) return;
      cleanup();
      reject(new InferenceServerError('CANCELLED', 'the client closed the connection before sending the whole request body'));
    };
    const onError = gone;
    const onClose = (): void => {
      if (!req.complete) gone();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** A management body (repository, shared memory, trace, logging): a JSON object, {} when empty. */
export async function readJsonObject(req: IncomingMessage, max: number): Promise<Record<string, unknown>> {
  const body = await readBody(req, max);
  if (body.length === 0) return {};
  checkJsonObjects(body, 0, body.length, 'the request');
  checkJsonArrays(body, 0, body.length, 'the request', MAX_MANAGEMENT_JSON_ARRAYS);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw invalidArg(`failed to parse the request JSON buffer: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArg('the request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
