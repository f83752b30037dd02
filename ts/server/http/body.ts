/**
 * Request bodies with their limits checked before anything is allocated (security.md §1.1):
 * a Content-Length above the maximum is refused without reading a byte, a chunked body is
 * counted as it arrives and refused the moment it passes the maximum, and a compressed body
 * (gzip or deflate, Triton's `Content-Encoding` support) is inflated with the same maximum as
 * the output bound. Any other Content-Encoding is refused before reading.
 *
 * Alignment: the binary tensor data extension puts raw tensors right after the JSON header.
 * When the body is assembled from several chunks (or inflated), it is placed so that its binary
 * part starts on an 8-byte boundary, so tensors reach native code as views, not copies.
 */
import type { IncomingMessage } from 'node:http';
import * as zlib from 'node:zlib';
import { invalidArg, InferenceServerError } from '../../errors';

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

/** Copies chunks into one buffer whose byte `alignAt` sits on an 8-byte boundary. */
function assemble(chunks: Buffer[], total: number, alignAt: number): Buffer {
  if (chunks.length === 1 && (chunks[0].byteOffset + alignAt) % 8 === 0) return chunks[0];
  // allocUnsafe: small bodies come from Node's pool (no ArrayBuffer per request); up to 7
  // spare bytes let byte `alignAt` land on an 8-byte boundary wherever the slice starts.
  const base = Buffer.allocUnsafe(total + 7);
  const start = (8 - ((base.byteOffset + alignAt) % 8)) % 8;
  const out = base.subarray(start, start + total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
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
  declaredLength(req, max);
  const raw = await collect(req, max, encoding === 'identity' ? alignAt : 0);
  if (encoding === 'identity') return raw;
  const inflated = await inflate(encoding, raw, max);
  return assemble([inflated], inflated.length, alignAt);
}

function collect(req: IncomingMessage, max: number, alignAt: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let finished = false;
    const cleanup = (): void => {
      finished = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > max) {
        cleanup();
        req.pause();
        reject(tooLarge(req, `more than ${max}`, max));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(total === 0 ? Buffer.alloc(0) : assemble(chunks, total, alignAt));
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
