/**
 * The inference transport of `infernode perf` over plain HTTP: the HTTP client's keep-alive
 * sockets (ts/client/http-connection.ts), with each request's bytes encoded once and sent again
 * (perf_analyzer's client does the same with libcurl), so perf measures the server rather than
 * the client's encoding. Metadata, config and statistics go through the client as usual.
 *
 * Each answer carries two moments for perf_analyzer's client timers: when its request was handed
 * to the socket (SEND_END) and when the answer's first bytes arrived (RECV_START).
 */
import { InferenceServerError } from '../errors';
import { ClientTimeoutError } from '../client/errors';
import { HttpConnectionPool, requestHead, type RawAnswer } from '../client/http-connection';

export type { RawAnswer } from '../client/http-connection';

/** How long one request waits for its answer: the HTTP client's default call deadline. */
const ANSWER_TIMEOUT_MS = 60_000;

/** A whole HTTP/1.1 POST to send again and again: the head (Host, `headers`, Content-Length), then `body`. */
export function postRequest(host: string, path: string, headers: Record<string, string | number>, body: Buffer): Buffer {
  return Buffer.concat([requestHead('POST', host, path, headers, body.length), body]);
}

/** Keep-alive sockets to one plain-HTTP server, each carrying one request at a time. */
export class RawHttpPool {
  readonly #pool: HttpConnectionPool;
  readonly #origin: string;
  #closed = false;

  constructor(host: string, port: number) {
    this.#origin = `http://${host}:${port}`;
    this.#pool = new HttpConnectionPool({
      hostname: host, port, origin: this.#origin,
      unreachable: (err) => new InferenceServerError('UNAVAILABLE', `cannot reach the server at ${this.#origin}: ${err.code ?? err.message}`),
    });
  }

  /** Sends `request` (a whole HTTP/1.1 request, head and body) and resolves with its answer. */
  async send(request: Buffer, timeoutMs = ANSWER_TIMEOUT_MS): Promise<RawAnswer> {
    if (this.#closed) throw new InferenceServerError('UNAVAILABLE', 'the perf transport is closed');
    return this.#pool.send(request, undefined, timeoutMs, undefined,
      () => new ClientTimeoutError(`no answer from ${this.#origin} within ${timeoutMs} ms`));
  }

  close(): void {
    this.#closed = true;
    this.#pool.close(new InferenceServerError('UNAVAILABLE', 'the perf transport is closed'));
  }
}
