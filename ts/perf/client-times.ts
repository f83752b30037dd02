/**
 * The client-side timers of `infernode perf`, as perf_analyzer's client library keeps them (its
 * InferStat): over the completed requests, the sum of each one's whole time (REQUEST_START to
 * REQUEST_END), its send time (SEND_START to SEND_END) and its receive time (RECV_START to
 * RECV_END). What send and receive cover depends on the transport (target.ts says it for each).
 * A target only adds to these sums; the measurement windows read them as counters, a delta
 * between two snapshots, as they read the server's statistics.
 *
 * Times are performance.now() readings (ms, doubles: no allocation on the hot path), summed in µs.
 */
import { performance } from 'node:perf_hooks';

export interface ClientTimes {
  /** Requests completed. */
  completed: number;
  /** Sums over those requests, µs. */
  requestUs: number;
  sendUs: number;
  recvUs: number;
}

/**
 * What a streamed request (a decoupled model's) brought: its responses, the empty final one not
 * counted, and when the last of them arrived (performance.now()). Its latency ends there, as
 * perf_analyzer's does, not at the flag-only end of the stream. It lives here, not in target.ts,
 * so that grpc-timed.ts, which target.ts imports, need not import target.ts.
 */
export interface StreamAnswer {
  responses: number;
  lastResponseMs: number;
}

export function zeroClientTimes(): ClientTimes {
  return { completed: 0, requestUs: 0, sendUs: 0, recvUs: 0 };
}

/**
 * Counts one completed request: started at `startMs`, sent at `sentMs`, done at `endMs`
 * (performance.now() readings), with `recvMs` spent receiving its answer.
 */
export function countRequest(times: ClientTimes, startMs: number, sentMs: number, recvMs: number, endMs: number): void {
  times.completed++;
  times.requestUs += (endMs - startMs) * 1000;
  times.sendUs += (sentMs - startMs) * 1000;
  times.recvUs += recvMs * 1000;
}

/**
 * `decode`, timed into `times.recvUs`. For decoding that a library runs inside the call (grpc-js
 * calls a method's deserialize function), where no code around the call can time it; the
 * request it belongs to is counted later by countRequest, which needs no per-request state.
 */
export function timedDecode<T>(times: ClientTimes, decode: (bytes: Buffer) => T): (bytes: Buffer) => T {
  return (bytes) => {
    const start = performance.now();
    const message = decode(bytes);
    times.recvUs += (performance.now() - start) * 1000;
    return message;
  };
}

export function clientTimesDelta(after: ClientTimes, before: ClientTimes): ClientTimes {
  return {
    completed: after.completed - before.completed,
    requestUs: after.requestUs - before.requestUs,
    sendUs: after.sendUs - before.sendUs,
    recvUs: after.recvUs - before.recvUs,
  };
}

export function addClientTimes(a: ClientTimes, b: ClientTimes): ClientTimes {
  return {
    completed: a.completed + b.completed,
    requestUs: a.requestUs + b.requestUs,
    sendUs: a.sendUs + b.sendUs,
    recvUs: a.recvUs + b.recvUs,
  };
}

/** Averages per completed request (µs), perf_analyzer's avg_request_time, avg_send_time, avg_receive_time. */
export interface ClientAverages {
  requestUs: number;
  sendUs: number;
  recvUs: number;
}

export function clientAverages(t: ClientTimes): ClientAverages {
  const per = (us: number): number => (t.completed > 0 ? us / t.completed : 0);
  return { requestUs: per(t.requestUs), sendUs: per(t.sendUs), recvUs: per(t.recvUs) };
}
