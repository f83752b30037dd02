/**
 * Writing HTTP responses the way Triton's clients expect them: JSON bodies with
 * `Content-Type: application/json`, errors as `{"error": "<message>"}` with Triton's status
 * (InferenceServerError.httpStatus), empty bodies for health answers. Every response is one
 * `end()` call: Node writes the head and the body together (one writev).
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import * as zlib from 'node:zlib';
import { InferenceServerError, boundMessage } from '../../errors';
import type { Logger } from '../../log';

const JSON_TYPE = 'application/json';

/** Sends a JSON text (already serialized). */
export function sendJsonText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.destroyed) return;
  const body = Buffer.from(text, 'utf8');
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': body.length });
  res.end(body);
}

/** Sends a value as JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendJsonText(res, status, JSON.stringify(value));
}

/** Sends an empty body (health answers, successful management calls). */
export function sendEmpty(res: ServerResponse, status: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Length': 0 });
  res.end();
}

/**
 * Sends an error as Triton does. An error that is not an InferenceServerError is an internal
 * fault: 500, logged.
 */
export function sendError(req: IncomingMessage, res: ServerResponse, err: unknown, logger: Logger): void {
  let status: number;
  let message: string;
  if (err instanceof InferenceServerError) {
    status = err.httpStatus;
    message = err.message;
  } else {
    status = 500;
    message = err instanceof Error ? err.message : String(err);
    logger.error(`infernode: internal error serving ${req.method} ${req.url}: ${err instanceof Error ? err.stack : message}`);
  }
  if (res.headersSent || res.destroyed) return;
  // Bounded as a last resort: builders clip what they echo from the request, but no error body
  // may grow with the input.
  const body = Buffer.from(JSON.stringify({ error: boundMessage(message) }), 'utf8');
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': body.length });
  res.end(body);
}

/** The response compression a request accepts (Accept-Encoding): gzip, then deflate; null for none. */
export function acceptedEncoding(req: IncomingMessage): 'gzip' | 'deflate' | null {
  const header = req.headers['accept-encoding'];
  if (!header) return null;
  let deflate = false;
  for (const part of header.split(',')) {
    const [token, ...params] = part.trim().toLowerCase().split(';');
    if (params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p))) continue;
    if (token === 'gzip' || token === 'x-gzip') return 'gzip';
    if (token === 'deflate') deflate = true;
  }
  return deflate ? 'deflate' : null;
}

/** Writes a body given as one buffer or several (corked: one writev for all of them). */
function writeBody(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Buffer | Buffer[]): void {
  if (res.headersSent || res.destroyed) return;
  if (Buffer.isBuffer(body)) {
    headers['Content-Length'] = body.length;
    res.writeHead(status, headers);
    res.end(body);
    return;
  }
  headers['Content-Length'] = body.reduce((n, b) => n + b.length, 0);
  res.writeHead(status, headers);
  res.cork();
  for (const chunk of body) res.write(chunk);
  res.uncork();
  res.end();
}

/**
 * Sends a body, compressed when the client accepts gzip or deflate (off the event loop, in
 * libuv's pool). A compression failure falls back to the uncompressed body, as Triton does.
 */
export function sendBody(
  req: IncomingMessage, res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Buffer | Buffer[],
): void {
  const encoding = acceptedEncoding(req);
  if (!encoding) return writeBody(res, status, headers, body);
  const whole = Buffer.isBuffer(body) ? body : Buffer.concat(body);
  const done = (err: Error | null, compressed: Buffer): void => {
    if (err) return writeBody(res, status, headers, whole);
    headers['Content-Encoding'] = encoding;
    headers.Vary = 'Accept-Encoding';
    writeBody(res, status, headers, compressed);
  };
  if (encoding === 'gzip') zlib.gzip(whole, done);
  else zlib.deflate(whole, done);
}
