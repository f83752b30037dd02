/**
 * Whole HTTP/1.1 exchanges on keep-alive sockets that are written and read directly (node:net,
 * or node:tls for https://), one request at a time on each socket: the HTTP client's calls whose
 * answer is read whole, and `infernode perf`'s inference requests. Why not node:http's client
 * (the Agent, ClientRequest and IncomingMessage streams): at concurrency 1 on a 2-core VM a small
 * inference cost the client 220-315 µs of CPU through it and 120-205 µs here, and one connection
 * carried 1.4-1.8× fewer calls per second (docs/http.md, "Clients"). Answers streamed as they
 * arrive (server-sent events) still go through node:http (http-transport.ts, `open`).
 *
 * Answers are read by http-answer-reader.ts. A socket answered with `Connection: close`, closed,
 * in error, timed out or aborted is dropped; an idle socket the server closes leaves the pool at
 * once. At most `maxSockets` sockets; calls beyond them wait their turn (FIFO),
 * within their own deadline. Everything runs on the event loop thread.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { performance } from 'node:perf_hooks';
import { InferenceServerError } from '../errors';
import { AnswerReader } from './http-answer-reader';

/**
 * An answer as the server sent it: status, lower-cased headers, the body (not decompressed), and
 * two moments (performance.now()) for perf_analyzer's client timers: when the whole request was
 * handed to the socket (SEND_END; queued behind a connect on a new socket) and when the first
 * bytes of the answer arrived (RECV_START).
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  sentAt: number;
  firstByteAt: number;
}

export interface ServerAddress {
  /** Host name or address as the URL gives it (IPv6 in brackets). */
  hostname: string;
  port: number;
  /** `http://host:port`, for messages. */
  origin: string;
  /** node:tls options (ca, cert, key, checkServerIdentity) for https://; absent for http://. */
  tls?: tls.ConnectionOptions;
  /** The error for a socket that never connected (refused, unknown host, failed TLS handshake). */
  unreachable(err: NodeJS.ErrnoException): Error;
}

/** How long a socket that takes no more requests waits for the server to close before it is destroyed. */
const RETIRE_GRACE_MS = 2000;
/** TCP keep-alive on every socket, so a dead peer of an idle socket is noticed (node:http's Agent: 1 s). */
const KEEP_ALIVE_PROBE_MS = 1000;
/** Characters node:http refuses in a request path (ERR_UNESCAPED_CHARACTERS). */
const INVALID_PATH = /[^\u0021-\u00ff]/;

/**
 * The bytes of an HTTP/1.1 request head: `Host`, then `headers` (names compared without case, the
 * last one given wins, as node:http's setHeader does), then `Content-Length`. Names and values are
 * checked as node:http checks them, so no header can smuggle a line break.
 */
export function requestHead(method: string, host: string, path: string, headers: Record<string, string | number>, bodyLength: number): Buffer {
  if (INVALID_PATH.test(path)) throw new TypeError(`Request path contains unescaped characters: ${JSON.stringify(path)}`);
  const merged = new Map<string, [string, string]>([['host', ['Host', host]]]);
  for (const [name, value] of Object.entries(headers)) {
    validateHeaderName(name);
    validateHeaderValue(name, String(value));
    merged.set(name.toLowerCase(), [name, String(value)]);
  }
  merged.delete('content-length');
  merged.delete('transfer-encoding');
  merged.set('content-length', ['Content-Length', String(bodyLength)]);
  let head = `${method} ${path} HTTP/1.1\r\n`;
  for (const [name, value] of merged.values()) head += `${name}: ${value}\r\n`;
  return Buffer.from(`${head}\r\n`, 'latin1');
}

interface Waiting {
  resolve(answer: RawAnswer): void;
  reject(err: Error): void;
}

/** One keep-alive socket and the request in flight on it, if any. */
class Connection {
  readonly socket: net.Socket;
  reusable = true;
  readonly #reader = new AnswerReader();
  #waiting: Waiting | null = null;
  #connected = false;
  /** Answers read on this socket so far. */
  #answers = 0;
  /** The request in flight: when it was written, when its answer's first bytes came (-1: not yet). */
  #sentAt = 0;
  #firstByteAt = -1;

  /** `tlsSessions`: the pool's last TLS session, resumed by a new socket (as https.Agent's cache does). */
  constructor(private readonly address: ServerAddress, private readonly onGone: (c: Connection) => void,
    tlsSessions?: { last?: Buffer }) {
    const host = address.hostname.replace(/^\[(.*)\]$/, '$1');
    const secure = address.tls !== undefined;
    this.socket = secure
      ? tls.connect({ ...address.tls, host, port: address.port, servername: net.isIP(host) ? undefined : host, session: tlsSessions?.last })
      : net.connect(address.port, host);
    if (secure && tlsSessions) this.socket.on('session', (session: Buffer) => { tlsSessions.last = session; });
    this.socket.setNoDelay(true);
    this.socket.setKeepAlive(true, KEEP_ALIVE_PROBE_MS);
    this.socket.once(secure ? 'secureConnect' : 'connect', () => { this.#connected = true; });
    // The server ended an idle socket (its keep-alive timeout): out of the pool before a call takes it.
    this.socket.on('end', () => {
      if (!this.#waiting) this.#gone(new InferenceServerError('UNAVAILABLE', `the server at ${address.origin} closed the connection`));
    });
    this.socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    this.socket.on('error', (err: NodeJS.ErrnoException) => this.#gone(this.#connected
      ? new InferenceServerError('UNAVAILABLE', `the connection to ${address.origin} failed before the whole answer arrived: ${err.message}`)
      : address.unreachable(err)));
    this.socket.on('close', () => this.#onClose());
  }

  get busy(): boolean {
    return this.#waiting !== null;
  }

  /**
   * Idle: the socket does not keep the process alive (as node:http's Agent unrefs its free
   * sockets), so a program that never closes its client still exits.
   */
  idle(idle: boolean): void {
    if (idle) this.socket.unref();
    else this.socket.ref();
  }

  /** Writes one request; settles with its whole answer, or fails when the socket goes first. */
  send(head: Buffer, body: Buffer | undefined): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#firstByteAt = -1;
      if (body && body.length > 0) {
        this.socket.cork();
        this.socket.write(head);
        this.socket.write(body);
        this.socket.uncork();
      } else {
        this.socket.write(head);
      }
      this.#sentAt = performance.now();
    });
  }

  /** Drops the socket; the request on it (if any) fails with `err`. */
  destroy(err: Error): void {
    this.#gone(err);
    this.socket.destroy();
  }

  #onData(chunk: Buffer): void {
    if (!this.#waiting) {
      // Bytes on an idle socket belong to no request (a server's stray 408, junk): drop it.
      this.destroy(new InferenceServerError('UNAVAILABLE', `the server at ${this.address.origin} sent bytes no request asked for`));
      return;
    }
    if (this.#firstByteAt < 0) this.#firstByteAt = performance.now();
    this.#reader.push(chunk);
    try {
      this.#tryAnswer(false);
    } catch (err) {
      this.destroy(new InferenceServerError('UNAVAILABLE', `the answer from ${this.address.origin} could not be read: ${(err as Error).message}`));
    }
  }

  /** Settles the request once its whole answer is here (`closed`: the server has closed the socket). */
  #tryAnswer(closed: boolean): void {
    const answer = this.#reader.next(closed);
    if (!answer) return;
    const { head, body } = answer;
    if (!this.#waiting) throw new Error(`an answer (HTTP ${head.status}) came with no request waiting for it`);
    // Bytes after the answer would be taken for the next request's answer: never reuse such a socket.
    if (!head.keepAlive || closed || head.status === 101 || this.#reader.started) this.#retire();
    const waiting = this.#waiting;
    this.#waiting = null;
    this.#answers++;
    waiting.resolve({ status: head.status, headers: head.headers, body, sentAt: this.#sentAt, firstByteAt: this.#firstByteAt });
  }

  #onClose(): void {
    if (this.#waiting && this.#reader.started) {
      try {
        this.#tryAnswer(true);
      } catch { /* reported below as an answer cut off */ }
    }
    const origin = this.address.origin;
    this.#gone(new InferenceServerError('UNAVAILABLE', this.#reader.started
      ? `the connection to ${origin} closed before the whole answer arrived`
      : `the server at ${origin} closed the connection without answering` +
        (this.address.tls || this.#answers > 0 ? '' : ' (an https:// server does this to a plain http:// client)')));
  }

  /**
   * No more requests on this socket: it leaves the pool at once (its place is free for a new
   * one), ends, and no longer holds the process; a server that never closes its side gets
   * RETIRE_GRACE_MS before the socket is destroyed.
   */
  #retire(): void {
    if (!this.reusable) return;
    this.reusable = false;
    this.onGone(this);
    this.socket.end();
    this.socket.unref();
    this.socket.setTimeout(RETIRE_GRACE_MS, () => this.socket.destroy());
  }

  /** Leaves the pool (idle or not); a request still waiting on this socket fails with `err`. */
  #gone(err: Error): void {
    this.reusable = false;
    const waiting = this.#waiting;
    this.#waiting = null;
    this.onGone(this);
    waiting?.reject(err);
  }
}

/**
 * A call waiting its turn (every socket busy, no more may be opened): for one of the pool's
 * sockets (`start` gets it), or for a place of its own (`start` gets null: a stream node:http
 * carries, counted among maxSockets).
 */
interface Turn {
  wantsSocket: boolean;
  start(connection: Connection | null): void;
  fail(err: Error): void;
}

/** Keep-alive sockets to one server, each carrying one request at a time. */
export class HttpConnectionPool {
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  readonly #turns: Turn[] = [];
  readonly #tlsSessions: { last?: Buffer } = {};
  /** Places given to sockets the pool does not own (`reserve`), counted with its own against maxSockets. */
  #reserved = 0;
  /** #startWaiting is on the stack: a socket it closes to make room must not start it again. */
  #serving = false;
  #closed = false;

  readonly #maxSockets: number;

  /** `maxSockets`: at most this many sockets at once; 0, a negative number or NaN means no limit (as node:http's Agent). */
  constructor(private readonly address: ServerAddress, maxSockets = Infinity) {
    this.#maxSockets = maxSockets > 0 ? maxSockets : Infinity;
  }

  /**
   * Sends one request (`head` from requestHead, then `body`) and resolves with its answer.
   * `failure()` makes the error for a deadline past (`timeoutMs`, waiting for a socket included)
   * or an aborted `signal`; either drops the socket the request is on, as node:http does.
   */
  send(head: Buffer, body: Buffer | undefined, timeoutMs: number, signal: AbortSignal | undefined,
    failure: (why: 'timeout' | 'abort') => Error): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      let connection: Connection | null = null;
      this.#inTurn(true, timeoutMs, signal, failure, reject, (c, finish) => {
        connection = c!;
        c!.send(head, body).then((answer) => {
          this.#release(c!);
          finish(null);
          resolve(answer);
        }, (err: Error) => finish(err));
      }, (err) => {
        if (connection?.busy) connection.destroy(err);
      });
    });
  }

  /**
   * Waits, in turn with the calls, for a place among the maxSockets for a socket this pool does
   * not own (a stream node:http carries: http-transport.ts `open`); an idle socket of the pool is
   * closed to make room. Resolves with the function that gives the place back (once the stream's
   * socket has closed). `timeoutMs`, `signal` and `failure` as for `send`.
   */
  reserve(timeoutMs: number, signal: AbortSignal | undefined, failure: (why: 'timeout' | 'abort') => Error): Promise<() => void> {
    return new Promise((resolve, reject) => {
      this.#inTurn(false, timeoutMs, signal, failure, reject, (_, finish) => {
        this.#reserved++;
        finish(null);
        let given = false;
        resolve(() => {
          if (given) return;
          given = true;
          this.#reserved--;
          this.#startWaiting();
        });
      }, () => undefined);
    });
  }

  /**
   * Runs `start` once the call's turn comes (at once when a socket or place is free), unless its
   * deadline passes or `signal` aborts first; `finish(err)` ends the call's watch, failing it
   * with `err` through `reject`. `stopped(err)` runs when the deadline or abort ends the call first.
   */
  #inTurn(wantsSocket: boolean, timeoutMs: number, signal: AbortSignal | undefined, failure: (why: 'timeout' | 'abort') => Error,
    reject: (err: Error) => void, start: (c: Connection | null, finish: (err: Error | null) => void) => void,
    stopped: (err: Error) => void): void {
    let settled = false;
    const finish = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const queued = this.#turns.indexOf(turn);
      if (queued >= 0) this.#turns.splice(queued, 1);
      if (err) reject(err);
    };
    const stop = (why: 'timeout' | 'abort'): void => {
      const err = failure(why);
      if (!settled) stopped(err);
      finish(err);
    };
    const onAbort = (): void => stop('abort');
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    const turn: Turn = { wantsSocket, start: (c) => start(c, finish), fail: (err) => finish(err) };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#turns.push(turn);
    this.#startWaiting();
  }

  /** Drops every socket; requests in flight or waiting fail with `err`. */
  close(err: Error): void {
    this.#closed = true;
    for (const c of [...this.#all]) c.destroy(err);
    for (const turn of this.#turns.splice(0)) turn.fail(err);
  }

  /** An idle socket, a new one while there is room, or null (wait for a turn). */
  #take(): Connection | null {
    const idle = this.#idle.pop();
    if (idle) {
      idle.idle(false);
      return idle;
    }
    if (!this.#hasRoom()) return null;
    let connection: Connection;
    try {
      connection = new Connection(this.address, (gone) => this.#forget(gone), this.#tlsSessions);
    } catch (err) {
      // node:tls throws at once for options it cannot use (a key that does not match its certificate).
      throw this.address.unreachable(err as NodeJS.ErrnoException);
    }
    this.#all.add(connection);
    return connection;
  }

  /** Fewer than maxSockets sockets open, counting the places reserved. */
  #hasRoom(): boolean {
    return this.#all.size + this.#reserved < this.#maxSockets;
  }

  /** Room for a place of its own: there is some, or an idle socket is closed to make it. */
  #makeRoom(): boolean {
    if (this.#hasRoom()) return true;
    const idle = this.#idle.pop();
    if (!idle) return false;
    idle.destroy(new InferenceServerError('UNAVAILABLE', 'an idle socket closed to make room'));  // no request is on it
    return this.#hasRoom();
  }

  /** A socket whose request has its answer: the next waiting call takes it, or it waits idle. */
  #release(connection: Connection): void {
    if (this.#closed) return;
    if (!connection.reusable) {
      this.#startWaiting();
      return;
    }
    const turn = this.#turns[0];
    if (turn?.wantsSocket) {
      this.#turns.shift();
      turn.start(connection);
      return;
    }
    connection.idle(true);
    this.#idle.push(connection);
    // A call waiting for a place of its own: closing this socket makes the room.
    if (turn) this.#startWaiting();
  }

  #forget(gone: Connection): void {
    this.#all.delete(gone);
    const at = this.#idle.indexOf(gone);
    if (at >= 0) this.#idle.splice(at, 1);
    if (!this.#closed) this.#startWaiting();
  }

  /** Starts the waiting calls, in order, while sockets or places are free. */
  #startWaiting(): void {
    if (this.#serving) return;
    this.#serving = true;
    try {
      while (this.#turns.length > 0) {
        const turn = this.#turns[0]!;
        let connection: Connection | null = null;
        if (turn.wantsSocket) {
          try {
            connection = this.#take();
          } catch (err) {
            this.#turns.shift();
            turn.fail(err as Error);
            continue;
          }
          if (!connection) return;
        } else if (!this.#makeRoom()) {
          return;
        }
        this.#turns.shift();
        turn.start(connection);
      }
    } finally {
      this.#serving = false;
    }
  }
}
