/**
 * Decoupled models (0..N responses per request) on the JS side: what a decoupled callable may
 * return and how its responses are driven, and the bounded stream a caller reads them from.
 *
 * A decoupled callable returns, for its batch of requests, either
 *  - PyTriton's form: a generator, async generator or any (async) iterable that yields lists of
 *    per-request outputs (one entry per request; null/undefined sends nothing to that request
 *    this round), or
 *  - one (async) iterable of outputs per request (an array as long as the batch),
 * possibly behind a promise. Each yielded outputs object is one response; when a request's
 * iteration ends, the request completes (its final response carries no outputs).
 *
 * Threads: everything here runs on the JS main thread.
 */
import { InferenceServerError, toInferenceServerError } from './errors';
import type { NDArray } from './tensor';

/** Where the driver sends each response, and how it learns that a request stopped listening. */
export interface DecoupledSink {
  /** One response (an outputs object as the callable yielded it) for request `index`. */
  send(index: number, outputs: unknown): void;
  /** Request `index` ended: completed (null) or failed. Called once per request; later calls are ignored. */
  end(index: number, error: InferenceServerError | null): void;
  /** True once request `index` was cancelled or ended: send nothing more. */
  closed(index: number): boolean;
  /**
   * Resolves once request `index`'s reader has room for another response, for a reader that
   * asked to hold the model back rather than be cancelled (StreamOptions.waitForReader);
   * undefined when there is room now. The driver awaits it before taking the next response.
   */
  ready?(index: number): Promise<void> | undefined;
}

type AnyIterator = Iterator<unknown> | AsyncIterator<unknown>;

function iteratorOf(value: unknown): AnyIterator | null {
  if (value === null || typeof value !== 'object') return null;
  const v = value as { [Symbol.asyncIterator]?: () => AsyncIterator<unknown>; [Symbol.iterator]?: () => Iterator<unknown> };
  if (typeof v[Symbol.asyncIterator] === 'function') return v[Symbol.asyncIterator]!();
  if (typeof v[Symbol.iterator] === 'function' && !Array.isArray(value)) return v[Symbol.iterator]!();
  return null;
}

/** Stops an iterator early (runs a generator's `finally`); its own failure is ignored. */
async function stop(iterator: AnyIterator): Promise<void> {
  try {
    await iterator.return?.();
  } catch {
    // the request is over either way
  }
}

/** Drives one request's own iterable to its end. */
async function driveOne(iterator: AnyIterator, index: number, sink: DecoupledSink): Promise<void> {
  try {
    for (;;) {
      if (sink.closed(index)) {
        await stop(iterator);
        sink.end(index, null);  // ignored when it ended already; a cancelled request counts as CANCELLED
        return;
      }
      const step = await iterator.next();
      if (step.done) break;
      if (!sink.closed(index)) {
        sink.send(index, step.value);
        const room = sink.ready?.(index);
        if (room) await room;
      }
    }
    sink.end(index, null);
  } catch (err) {
    sink.end(index, toInferenceServerError(err));
  }
}

/** Drives PyTriton's form: each step yields one list with an entry per request. */
async function driveBatch(iterator: AnyIterator, count: number, sink: DecoupledSink, what: string): Promise<void> {
  const all = Array.from({ length: count }, (_, i) => i);
  try {
    for (;;) {
      if (all.every((i) => sink.closed(i))) {
        await stop(iterator);
        break;
      }
      const step = await iterator.next();
      if (step.done) break;
      const list = step.value;
      if (!Array.isArray(list) || list.length !== count) {
        await stop(iterator);
        throw new InferenceServerError('INTERNAL', `${what}: each step must yield an array with one outputs object (or null) ` +
          `per request (${count}), got ${Array.isArray(list) ? `an array of ${list.length}` : typeof list}`);
      }
      list.forEach((outputs, i) => {
        if (outputs !== null && outputs !== undefined && !sink.closed(i)) sink.send(i, outputs);
      });
      const rooms = all.map((i) => sink.ready?.(i)).filter((room) => room !== undefined);
      if (rooms.length > 0) await Promise.all(rooms);
    }
    for (const i of all) sink.end(i, null);
  } catch (err) {
    const error = toInferenceServerError(err);
    for (const i of all) sink.end(i, error);
  }
}

/**
 * Drives the value a decoupled callable returned (its promise already settled) until every
 * request has ended. `undefined` means the callable uses its requests' response senders: each
 * request ends when its sender sends the final flag. Never rejects.
 */
export async function driveDecoupled(value: unknown, count: number, sink: DecoupledSink, what: string): Promise<void> {
  if (value === undefined) return;
  const batchIterator = iteratorOf(value);
  if (batchIterator) {
    await driveBatch(batchIterator, count, sink, what);
    return;
  }
  const perRequest = Array.isArray(value) && value.length === count ? value.map(iteratorOf) : null;
  if (perRequest && perRequest.every((it) => it !== null)) {
    await Promise.all(perRequest.map((it, i) => driveOne(it!, i, sink)));
    return;
  }
  const error = new InferenceServerError('INTERNAL', `${what}: a decoupled model's callable must return a generator (or an ` +
    `(async) iterable) yielding one outputs list per step, or one (async) iterable of outputs per request (${count}), ` +
    `or nothing when it answers through request.responseSender; got ` +
    `${Array.isArray(value) ? `an array of ${value.length}` : value === null ? 'null' : typeof value}`);
  for (let i = 0; i < count; i++) sink.end(i, error);
}

/**
 * A decoupled request's response sender (`request.responseSender`), the twin of the Python
 * backend's: any number of responses, the last one flagged final, from anywhere and at any time
 * (also after the callable returned).
 */
export class ResponseSender {
  readonly #sink: DecoupledSink;
  readonly #index: number;

  /** @internal */
  constructor(sink: DecoupledSink, index: number) {
    this.#sink = sink;
    this.#index = index;
  }

  /**
   * Sends one response (`outputs`, or none for a flag-only final response); with `final` the
   * request ends. Sending after the end, or after the request was cancelled, does nothing.
   */
  send(outputs?: Record<string, unknown> | null, options: { final?: boolean } = {}): void {
    if (this.#sink.closed(this.#index)) return;
    if (outputs !== undefined && outputs !== null) this.#sink.send(this.#index, outputs);
    if (options.final) this.#sink.end(this.#index, null);
  }

  /** Ends the request with an error (the client gets it after the responses sent before). */
  sendError(error: unknown): void {
    if (!this.#sink.closed(this.#index)) this.#sink.end(this.#index, toInferenceServerError(error));
  }

  /** True once the client went away (cancelled, disconnected) or the request ended: stop working on it. */
  isCancelled(): boolean {
    return this.#sink.closed(this.#index);
  }
}

/** Responses a stream holds for a reader that has not taken them, by default. */
export const DEFAULT_MAX_QUEUED_RESPONSES = 1024;

/**
 * The responses of one decoupled request as an async iterator: each item is one response's
 * outputs; iteration ends after the final response, or throws the request's error. The queue of
 * responses not yet read is bounded: `push` returns false past the bound (the caller then
 * cancels the request), unless the stream waits for its reader (`waitForReader`): then a
 * producer that awaits `room()` after each push is held back at the bound instead. Ending the
 * iteration early (`break`, `return()`) cancels the request.
 */
export class ResponseStream implements AsyncIterableIterator<Record<string, NDArray>> {
  readonly #queue: Record<string, NDArray>[] = [];
  /** Responses held for the reader at most. */
  readonly maxQueued: number;
  /** A full queue holds the producer back (room()) rather than failing the request. */
  readonly waitForReader: boolean;
  readonly #onReturn: () => void;
  #error: InferenceServerError | null = null;
  #ended = false;
  #waiter: { resolve: (r: IteratorResult<Record<string, NDArray>>) => void; reject: (e: unknown) => void } | null = null;
  /** The producer waiting for room (waitForReader), woken when the reader takes a response or the stream closes. */
  #roomWaiter: (() => void) | null = null;

  constructor(maxQueued: number, onReturn: () => void, waitForReader = false) {
    this.maxQueued = maxQueued;
    this.#onReturn = onReturn;
    this.waitForReader = waitForReader;
  }

  /**
   * For a stream that waits for its reader: a promise resolved once the queue is below
   * `maxQueued` again (or the stream closed); undefined when it is below now.
   */
  room(): Promise<void> | undefined {
    if (!this.waitForReader || this.closed || this.#queue.length < this.maxQueued) return undefined;
    return new Promise((resolve) => {
      const previous = this.#roomWaiter;
      this.#roomWaiter = () => {
        previous?.();
        resolve();
      };
    });
  }

  #wakeProducer(): void {
    const wake = this.#roomWaiter;
    this.#roomWaiter = null;
    wake?.();
  }

  /** True once the stream ended or failed: nothing more is delivered. */
  get closed(): boolean {
    return this.#ended || this.#error !== null;
  }

  /** Delivers one response; false when the reader is `maxQueued` responses behind. */
  push(outputs: Record<string, NDArray>): boolean {
    if (this.closed) return true;
    if (this.#waiter) {
      const waiter = this.#waiter;
      this.#waiter = null;
      waiter.resolve({ value: outputs, done: false });
      return true;
    }
    // A stream that waits for its reader takes one past the bound: its producer awaits room()
    // before the next (a response sender, which cannot wait, is still refused past twice it).
    if (this.#queue.length >= (this.waitForReader ? 2 * this.maxQueued : this.maxQueued)) return false;
    this.#queue.push(outputs);
    return true;
  }

  /** The final response arrived: iteration ends once the queued responses are read. */
  end(): void {
    if (this.closed) return;
    this.#ended = true;
    this.#wake();
  }

  /** The request failed (or was cancelled): the reader gets the error after the queued responses. */
  fail(error: InferenceServerError): void {
    if (this.closed) return;
    this.#error = error;
    this.#wake();
  }

  #wake(): void {
    this.#wakeProducer();
    if (!this.#waiter || this.#queue.length > 0) return;
    const waiter = this.#waiter;
    this.#waiter = null;
    if (this.#error) waiter.reject(this.#error);
    else waiter.resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<Record<string, NDArray>>> {
    if (this.#queue.length > 0) {
      const value = this.#queue.shift()!;
      if (this.#queue.length < this.maxQueued) this.#wakeProducer();
      return Promise.resolve({ value, done: false });
    }
    if (this.#error) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => { this.#waiter = { resolve, reject }; });
  }

  /** The reader stops early: the request is cancelled and the rest is dropped. */
  return(): Promise<IteratorResult<Record<string, NDArray>>> {
    if (!this.closed) this.#onReturn();
    this.#queue.length = 0;
    this.#ended = true;
    this.#error = null;
    this.#wakeProducer();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Record<string, NDArray>> {
    return this;
  }
}
