/**
 * The inference transport of `infernode perf` over plain HTTP: keep-alive sockets written and
 * read directly, one request at a time on each, the request's bytes encoded once and sent again
 * (perf_analyzer's client does the same with libcurl). Why not node:http's client, which the
 * project's HttpInferenceServerClient uses: on a 2-core VM it cost ~370 µs of client CPU per
 * request against ~100 µs for a raw socket, so perf reported the client's own time as the
 * server's latency and hit the client's ceiling before the server's. Metadata, config and
 * statistics still go through the client; https:// inference too.
 *
 * Answers are read as HTTP/1.1 says: a Content-Length body, a chunked body, or (neither) a body
 * that ends when the server closes. A socket answered with `Connection: close`, closed, or in
 * error is dropped; the pool keeps at most as many sockets as requests were ever in flight.
 * Everything runs on the event loop thread.
 *
 * Each answer carries two moments for perf_analyzer's client timers: when its request was handed
 * to the socket (SEND_END) and when the answer's first bytes arrived (RECV_START).
 */
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import { InferenceServerError } from '../errors';
import { ClientTimeoutError } from '../client/errors';
import type { HttpResponse } from '../client/http-transport';

/** How long one request waits for its answer: the HTTP client's default call deadline. */
const ANSWER_TIMEOUT_MS = 60_000;

const HEADER_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

/** A whole HTTP/1.1 POST to send again and again: the head (Host, `headers`, Content-Length), then `body`. */
export function postRequest(host: string, path: string, headers: Record<string, string | number>, body: Buffer): Buffer {
  const lines = Object.entries({ Host: host, ...headers, 'Content-Length': body.length }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\n${lines}\r\n`, 'latin1'), body]);
}

/** An answer, and when (performance.now()) its request was written and its first bytes came. */
export interface RawAnswer extends HttpResponse {
  /** When socket.write() returned with the whole request: the bytes are the kernel's (or queued behind a connect). */
  sentAt: number;
  /** When the first chunk of the answer arrived. */
  firstByteAt: number;
}

/** One parsed answer head: status, lower-cased headers, where the body starts. */
interface Head {
  status: number;
  headers: Record<string, string>;
  bodyStart: number;
}

function parseHead(buf: Buffer, end: number): Head {
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const status = Number(lines[0].slice(9, 12));
  if (!/^HTTP\/1\.[01] \d{3}/.test(lines[0])) throw new Error(`not an HTTP/1.1 answer: ${JSON.stringify(lines[0].slice(0, 80))}`);
  const headers: Record<string, string> = {};
  for (let i = 1; i < lines.length; i++) {
    const colon = lines[i].indexOf(':');
    if (colon > 0) headers[lines[i].slice(0, colon).trim().toLowerCase()] = lines[i].slice(colon + 1).trim();
  }
  return { status, headers, bodyStart: end + HEADER_END.length };
}

/**
 * The body of a chunked answer when `buf` holds all of it (from `start`): the joined chunks and
 * where the answer ends; null while incomplete.
 */
function chunkedBody(buf: Buffer, start: number): { body: Buffer; end: number } | null {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buf.indexOf(CRLF, at);
    if (lineEnd < 0) return null;
    const size = parseInt(buf.toString('latin1', at, lineEnd).split(';')[0], 16);
    if (!Number.isFinite(size) || size < 0) throw new Error('malformed chunk size in a chunked answer');
    if (size === 0) {
      const trailerEnd = buf.indexOf(CRLF, lineEnd + 2);  // no trailers expected: the empty line
      return trailerEnd < 0 ? null : { body: Buffer.concat(parts), end: trailerEnd + 2 };
    }
    if (buf.length < lineEnd + 2 + size + 2) return null;
    parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** One keep-alive socket and the request in flight on it, if any. */
class Connection {
  readonly socket: net.Socket;
  reusable = true;
  #pending: Buffer = Buffer.alloc(0);
  #head: Head | null = null;
  #waiting: { resolve: (r: RawAnswer) => void; reject: (e: Error) => void } | null = null;
  #connected = false;
  /** The request in flight: when it was written, when its answer's first chunk came (-1: not yet). */
  #sentAt = 0;
  #firstByteAt = -1;

  constructor(host: string, port: number, private readonly origin: string, private readonly onGone: (c: Connection) => void) {
    this.socket = net.connect(port, host);
    this.socket.setNoDelay(true);
    this.socket.once('connect', () => { this.#connected = true; });
    this.socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    this.socket.on('error', (err: NodeJS.ErrnoException) => this.#gone(!this.#connected
      ? new InferenceServerError('UNAVAILABLE', `cannot reach the server at ${this.origin}: ${err.code ?? err.message}`)
      : new InferenceServerError('UNAVAILABLE', `the connection to ${this.origin} failed before the whole answer arrived: ${err.message}`)));
    this.socket.on('close', () => this.#onClose());
  }

  /** Sends one request; an answer that has not come in `timeoutMs` fails it and drops the socket. */
  send(request: Buffer, timeoutMs: number): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#gone(new ClientTimeoutError(`no answer from ${this.origin} within ${timeoutMs} ms`));
        this.socket.destroy();
      }, timeoutMs);
      const settle = <T>(f: (v: T) => void) => (v: T): void => {
        clearTimeout(timer);
        f(v);
      };
      this.#waiting = { resolve: settle(resolve), reject: settle(reject) };
      this.#firstByteAt = -1;
      this.socket.write(request);
      this.#sentAt = performance.now();
    });
  }

  #onData(chunk: Buffer): void {
    if (this.#firstByteAt < 0) this.#firstByteAt = performance.now();
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    try {
      this.#tryAnswer(false);
    } catch (err) {
      this.#gone(new InferenceServerError('UNAVAILABLE', `the answer from ${this.origin} could not be read: ${(err as Error).message}`));
      this.socket.destroy();
    }
  }

  /** Settles the request once its whole answer is here (`closed`: the server has closed the socket). */
  #tryAnswer(closed: boolean): void {
    if (!this.#head) {
      const end = this.#pending.indexOf(HEADER_END);
      if (end < 0) return;
      this.#head = parseHead(this.#pending, end);
    }
    const head = this.#head;
    let body: Buffer;
    let end: number;
    if (head.headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const chunked = chunkedBody(this.#pending, head.bodyStart);
      if (!chunked) return;
      ({ body, end } = chunked);
    } else if (head.headers['content-length'] !== undefined) {
      end = head.bodyStart + Number(head.headers['content-length']);
      if (this.#pending.length < end) return;
      body = this.#pending.subarray(head.bodyStart, end);
    } else if (head.status === 204 || head.status === 304) {
      end = head.bodyStart;
      body = Buffer.alloc(0);
    } else {
      if (!closed) return;  // the body ends when the server closes
      end = this.#pending.length;
      body = this.#pending.subarray(head.bodyStart);
    }
    if (head.headers.connection?.toLowerCase() === 'close' || closed) this.reusable = false;
    const waiting = this.#waiting;
    this.#pending = this.#pending.subarray(end);
    this.#head = null;
    this.#waiting = null;
    if (!this.reusable) this.socket.end();
    waiting?.resolve({ status: head.status, headers: head.headers, body, sentAt: this.#sentAt, firstByteAt: this.#firstByteAt });
  }

  #onClose(): void {
    if (this.#waiting && this.#head) {
      try {
        this.#tryAnswer(true);
      } catch { /* reported below as a cut-off answer */ }
    }
    this.#gone(new InferenceServerError('UNAVAILABLE', `the connection to ${this.origin} closed before the whole answer arrived`));
  }

  /** Drops this socket from its pool; a request still waiting on it fails with `err`. */
  #gone(err: Error): void {
    this.reusable = false;
    const waiting = this.#waiting;
    this.#waiting = null;
    this.onGone(this);
    waiting?.reject(err);
  }
}

/** Keep-alive sockets to one plain-HTTP server, each carrying one request at a time. */
export class RawHttpPool {
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  readonly #origin: string;
  #closed = false;

  constructor(private readonly host: string, private readonly port: number) {
    this.#origin = `http://${host}:${port}`;
  }

  /** Sends `request` (a whole HTTP/1.1 request, head and body) and resolves with its answer. */
  async send(request: Buffer, timeoutMs = ANSWER_TIMEOUT_MS): Promise<RawAnswer> {
    if (this.#closed) throw new InferenceServerError('UNAVAILABLE', 'the perf transport is closed');
    const connection = this.#idle.pop() ?? this.#open();
    const answer = await connection.send(request, timeoutMs);
    if (connection.reusable && !this.#closed) this.#idle.push(connection);
    return answer;
  }

  close(): void {
    this.#closed = true;
    for (const c of this.#all) c.socket.destroy();
    this.#all.clear();
    this.#idle.length = 0;
  }

  #open(): Connection {
    const connection = new Connection(this.host, this.port, this.#origin, (gone) => {
      this.#all.delete(gone);
      const at = this.#idle.indexOf(gone);
      if (at >= 0) this.#idle.splice(at, 1);
    });
    this.#all.add(connection);
    return connection;
  }
}
