/**
 * The request plumbing of the HTTP client: keep-alive sockets (http-connection.ts; streamed
 * answers through node:http, their sockets counted in the same maxSockets), a deadline per
 * call, response decompression, and failures turned into InferenceServerErrors — the server's
 * `{"error": ...}` message with a code derived from the HTTP status, or a client error for
 * timeouts, unreachable servers and closed clients.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as zlib from 'node:zlib';
import { performance } from 'node:perf_hooks';
import { InferenceServerError } from '../errors';
import { ClientClosedError, ClientInvalidUrlError, ClientTimeoutError, codeFromHttpStatus } from './errors';
import { isTlsFailure } from './tls';
import { HttpConnectionPool, requestHead } from './http-connection';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface TransportRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: Buffer;
  headers?: Record<string, string | number>;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Inflating in pieces of 1 MiB: few thread-pool turns per answer, and a deadline can stop it between two. */
const INFLATE_OPTIONS: zlib.ZlibOptions = { chunkSize: 1024 * 1024 };

/**
 * The answer's body as the server meant it: gunzipped or inflated per its Content-Encoding, within
 * what is left of the call's deadline (`remainingMs`) and until `signal` aborts, so a large or
 * slow-to-inflate answer cannot hold a call past its timeout. `failure()` makes those errors.
 */
function inflate(encoding: string | undefined, body: Buffer, remainingMs: number, signal: AbortSignal | undefined,
  failure: (why: 'timeout' | 'abort') => Error): Promise<Buffer> {
  if (!encoding || encoding === 'identity' || body.length === 0) return Promise.resolve(body);
  if (encoding !== 'gzip' && encoding !== 'deflate') {
    return Promise.reject(new InferenceServerError('INTERNAL', `the server answered with an unknown Content-Encoding '${encoding}'`));
  }
  return new Promise((resolve, reject) => {
    const stream = encoding === 'gzip' ? zlib.createGunzip(INFLATE_OPTIONS) : zlib.createInflate(INFLATE_OPTIONS);
    const chunks: Buffer[] = [];
    const settle = (err: Error | null): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        stream.destroy();
        reject(err);
      } else {
        resolve(Buffer.concat(chunks));
      }
    };
    const onAbort = (): void => settle(failure('abort'));
    const timer = setTimeout(() => settle(failure('timeout')), Math.max(0, remainingMs));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => settle(null));
    stream.once('error', (err) => settle(new InferenceServerError('INTERNAL', `cannot decompress the server's ${encoding} response: ${err.message}`)));
    stream.end(body);
  });
}

/** The error a non-200 answer stands for: the server's message, a code from its status. */
export function errorFromResponse(res: HttpResponse): InferenceServerError {
  const code = codeFromHttpStatus(res.status);
  let message = '';
  try {
    const parsed = JSON.parse(res.body.toString('utf8')) as { error?: unknown };
    if (typeof parsed.error === 'string') message = parsed.error;
  } catch {
    message = res.body.toString('utf8').slice(0, 1000);
  }
  if (!message) message = `the server answered HTTP ${res.status} without an error message`;
  else if (code === 'UNKNOWN') message = `${message} (HTTP ${res.status})`;
  return new InferenceServerError(code, message);
}

/** An answer whose body is still arriving (a server-sent event stream): status and headers are here. */
export interface OpenResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as it arrives; destroying it closes the connection (the server cancels the request). */
  body: http.IncomingMessage;
}

/**
 * One server: its base URL, `send` (whole answers, on the pool's sockets) and `open` (streamed
 * answers, through node:http's keep-alive agent).
 */
export class HttpTransport {
  readonly url: URL;
  readonly #agent: http.Agent;
  readonly #module: typeof http | typeof https;
  readonly #headers: Record<string, string>;
  /** The URL's path, without its trailing slashes: calls' paths go after it. */
  readonly #base: string;
  /** Whole-answer calls (send); the agent serves the streamed ones (open). */
  readonly #pool: HttpConnectionPool;
  #closed = false;

  /**
   * `tls`: the https Agent's certificate options (ca, cert, key, checkServerIdentity), used when
   * the URL is https://; refused with an http:// URL, where they would be silently ignored.
   */
  constructor(url: string, headers: Record<string, string> = {}, maxSockets = Infinity, tls?: https.AgentOptions) {
    let parsed: URL;
    try {
      parsed = new URL(url.includes('://') ? url : `http://${url}`);
    } catch {
      throw new ClientInvalidUrlError(`invalid server URL '${url}'`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ClientInvalidUrlError(`invalid server URL '${url}': the HTTP client speaks http:// or https://`);
    }
    this.url = parsed;
    this.#module = parsed.protocol === 'https:' ? https : http;
    if (tls && parsed.protocol !== 'https:') {
      throw new ClientInvalidUrlError(`TLS options were given for '${url}', which is plain HTTP: use an https:// URL (or ssl: true)`);
    }
    // Streams (open) only: one socket each, closed with the stream, counted by the pool against maxSockets.
    this.#agent = parsed.protocol === 'https:' ? new https.Agent({ keepAlive: false, ...tls }) : new http.Agent({ keepAlive: false });
    this.#headers = headers;
    this.#base = parsed.pathname.replace(/\/+$/, '');
    this.#pool = new HttpConnectionPool({
      hostname: parsed.hostname, port: Number(parsed.port) || (parsed.protocol === 'https:' ? 443 : 80), origin: parsed.origin,
      tls: parsed.protocol === 'https:' ? { ...tls } as TlsConnectionOptions : undefined,
      unreachable: (err) => this.#unreachable(err),
    }, maxSockets);
  }

  /** The error of a request that never got an answer: no connection, or a failed TLS handshake. */
  #unreachable(err: NodeJS.ErrnoException): InferenceServerError {
    if (this.url.protocol === 'https:' && isTlsFailure(err.code)) {
      return new InferenceServerError('UNAVAILABLE', `TLS with the server at ${this.url.origin} failed (${err.code}: ${err.message.trim()}): ` +
        "give the CA that signed the server's certificate (sslOptions.caCerts) and, when the server requires " +
        'client certificates, the client certificate and key (sslOptions.certFile, sslOptions.keyFile)');
    }
    return new InferenceServerError('UNAVAILABLE', `cannot reach the server at ${this.url.origin}: ${err.code ?? err.message}`);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The error of a call whose deadline passed or whose signal aborted. */
  static #failure(request: TransportRequest): (why: 'timeout' | 'abort') => Error {
    return (why) => (why === 'timeout'
      ? new ClientTimeoutError(`${request.method} ${request.path} timed out after ${request.timeoutMs} ms`)
      : new InferenceServerError('CANCELLED', `${request.method} ${request.path} was cancelled`));
  }

  /**
   * Sends one request; resolves with any HTTP answer, rejects on transport failures. Written and
   * read on the pool's own keep-alive sockets (http-connection.ts), not through node:http.
   */
  async send(request: TransportRequest): Promise<HttpResponse> {
    if (this.#closed) throw new ClientClosedError();
    const head = requestHead(request.method, this.url.host, this.#base + request.path, { ...this.#headers, ...request.headers },
      request.body?.length ?? 0);
    const failure = HttpTransport.#failure(request);
    const started = performance.now();
    const answer = await this.#pool.send(head, request.body, request.timeoutMs, request.signal, failure);
    // The deadline covers the whole call: decompressing the answer too.
    const body = await inflate(answer.headers['content-encoding'], answer.body, request.timeoutMs - (performance.now() - started),
      request.signal, failure);
    return { status: answer.status, headers: answer.headers, body };
  }

  /**
   * Sends one request and resolves as soon as the answer's head arrived; the body is read by the
   * caller. `timeoutMs` bounds the wait for the head (a place among maxSockets included).
   * Aborting `signal` later destroys the body with a CANCELLED error (the connection closes: the
   * server cancels the request). The stream's socket counts against maxSockets until it closes.
   */
  async open(request: TransportRequest): Promise<OpenResponse> {
    if (this.#closed) throw new ClientClosedError();
    const failure = HttpTransport.#failure(request);
    const started = performance.now();
    const release = await this.#pool.reserve(request.timeoutMs, request.signal, failure);
    if (this.#closed) {
      release();
      throw new ClientClosedError();
    }
    try {
      return await this.#openReserved(request, request.timeoutMs - (performance.now() - started), failure, release);
    } catch (err) {
      // node:http throws at once for a header it refuses (a line break in a value): the place
      // must come back, or each such call would take one of maxSockets for good.
      release();
      throw err;
    }
  }

  #openReserved(request: TransportRequest, remainingMs: number, failure: (why: 'timeout' | 'abort') => Error,
    release: () => void): Promise<OpenResponse> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        request.signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      const req = this.#module.request({
        agent: this.#agent, method: request.method, host: this.url.hostname, port: this.url.port || undefined,
        path: this.#base + request.path,
        headers: { ...this.#headers, ...request.headers, 'Content-Length': request.body?.length ?? 0 },
      }, (res) => {
        settled = true;
        clearTimeout(timer);
        const { signal } = request;
        if (signal) {
          request.signal?.removeEventListener('abort', onAbort);
          const abortBody = (): void => {
            res.destroy(failure('abort'));
          };
          signal.addEventListener('abort', abortBody, { once: true });
          res.once('close', () => signal.removeEventListener('abort', abortBody));
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res });
      });
      // The place is given back when the stream's socket closes (the agent keeps none alive), or
      // the request ends without one.
      req.once('socket', (socket) => socket.once('close', release));
      req.once('close', release);
      req.on('error', (err: NodeJS.ErrnoException) => {
        fail(this.#closed ? new ClientClosedError()
          : this.#unreachable(err));
      });
      const timer = setTimeout(() => {
        fail(failure('timeout'));
        req.destroy();
      }, Math.max(0, remainingMs));
      const onAbort = (): void => {
        fail(failure('abort'));
        req.destroy();
      };
      if (request.signal?.aborted) return onAbort();
      request.signal?.addEventListener('abort', onAbort, { once: true });
      req.end(request.body);
    });
  }

  /** Closes the keep-alive sockets; calls in flight and later ones fail with ClientClosedError. */
  close(): void {
    this.#closed = true;
    this.#pool.close(new ClientClosedError());
    this.#agent.destroy();
  }
}
