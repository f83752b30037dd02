/**
 * Shared helpers of the integration suites: controllable promises (to build queue states
 * deterministically while an instance is busy), polling with a generous deadline, and a
 * recording identity callable. Nothing here mocks infernode: every suite drives the real
 * native batcher through `new Triton()`, `bind()` and `infer()`.
 */
import { InferenceServerError, type StatusCodeName } from '../../ts/errors';
import type { Request, ResponseOutputs, TritonContext } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import type { TritonConfig } from '../../ts/config/types';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise the test resolves when it chooses. */
export interface Gate {
  promise: Promise<void>;
  open: () => void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => { open = resolve; });
  return { promise, open };
}

/** Polls `cond` until true; fails after `timeoutMs` (generous: the machine may be loaded). */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** Lets queued microtasks, immediates and channel wakes run. */
export async function settleLoop(ms = 20): Promise<void> {
  await sleep(ms);
}

/** Tracks whether a promise has settled, without consuming its rejection unhandled. */
export interface Tracked<T> {
  promise: Promise<T>;
  settled: boolean;
  value?: T;
  error?: unknown;
}

export function track<T>(promise: Promise<T>): Tracked<T> {
  const t: Tracked<T> = { promise, settled: false };
  promise.then(
    (value) => { t.settled = true; t.value = value; },
    (error: unknown) => { t.settled = true; t.error = error; },
  );
  return t;
}

/** Awaits a rejection and checks it is an InferenceServerError with `code` (and `message`). */
export async function expectRejects(
  promise: Promise<unknown>, code: StatusCodeName, message?: string | RegExp,
): Promise<InferenceServerError> {
  let error: unknown;
  try {
    await promise;
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(InferenceServerError);
  const e = error as InferenceServerError;
  expect(e.code).toBe(code);
  if (typeof message === 'string') expect(e.message).toContain(message);
  else if (message) expect(e.message).toMatch(message);
  return e;
}

/** Checks that a synchronous call throws an InferenceServerError with `code` (and `message`). */
export function expectThrows(fn: () => unknown, code: StatusCodeName, message?: string | RegExp): InferenceServerError {
  let error: unknown;
  try {
    fn();
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(InferenceServerError);
  const e = error as InferenceServerError;
  expect(e.code).toBe(code);
  if (typeof message === 'string') expect(e.message).toContain(message);
  else if (message) expect(e.message).toMatch(message);
  return e;
}

/** An FP32 input of `rows` rows × `width` columns, every element `value` (a request's tag). */
export function fp32(value: number, rows = 1, width = 1): NDArray {
  return new NDArray('FP32', [rows, width], new Float32Array(rows * width).fill(value));
}

/** One execution as the callable saw it. */
export interface Call {
  instance: number;
  /** Element 0 of input `IN` of each request: the test's tag for that request. */
  tags: number[];
  /** Rows (batch dim) of each request. */
  rows: number[];
  /** Shape of input `IN` of each request. */
  shapes: number[][];
}

/**
 * A recording identity model (`IN` → `OUT`). `hold()` makes the next execution wait until the
 * returned gate opens, so a test can keep the instance busy while it fills the queue.
 */
export class Recorder {
  readonly calls: Call[] = [];
  readonly #holds: Gate[] = [];
  /** Executions currently inside the callable. */
  active = 0;

  hold(): Gate {
    const g = gate();
    this.#holds.push(g);
    return g;
  }

  get batchSizes(): number[] {
    return this.calls.map((c) => c.rows.reduce((a, b) => a + b, 0));
  }

  get tagOrder(): number[] {
    return this.calls.flatMap((c) => c.tags);
  }

  readonly func = async (requests: Request[], context: TritonContext): Promise<ResponseOutputs[]> => {
    const input = (r: Request): NDArray => r.data.IN;
    this.calls.push({
      instance: context.instanceIndex,
      tags: requests.map((r) => Number(input(r).data[0])),
      rows: requests.map((r) => input(r).rows),
      shapes: requests.map((r) => [...input(r).shape]),
    });
    const held = this.#holds.shift();
    this.active++;
    try {
      if (held) await held.promise;
    } finally {
      this.active--;
    }
    return requests.map((r) => ({ OUT: input(r) }));
  };
}

/** The tag (element 0) of output `OUT`. */
export function tagOf(outputs: Record<string, NDArray>): number {
  return Number(outputs.OUT.data[0]);
}

/**
 * A Triton for in-process suites: no HTTP, gRPC or metrics listeners (suites run in parallel,
 * and the default ports would collide). Frontend suites pass ports 0 instead.
 */
export function inProcessTriton(config: TritonConfig = {}): Triton {
  return new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false, ...config } });
}
