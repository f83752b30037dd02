/**
 * The dynamic batcher's rules (triton-protocol.md §6.1–6.2), seen from outside: real callables
 * bound with `bind()`, requests sent with `infer()`, the real native batcher in between.
 * Queue states are built deterministically by holding the single instance busy on a gate.
 */
import { performance } from 'node:perf_hooks';
import { Triton, type BindOptions } from '../../ts/triton';
import { TimeoutAction, type ModelConfig, type Tensor } from '../../ts/config/types';
import type { InferOptions } from '../../ts/model';
import type { Request, TritonContext } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import {
  Recorder, expectRejects, fp32, gate, settleLoop, sleep, tagOf, track, waitFor, inProcessTriton,
} from './helpers';

let triton: Triton;

beforeEach(() => {
  triton = inProcessTriton();
});

afterEach(async () => {
  await triton.stop();
});

const IN: Tensor = { name: 'IN', dtype: 'FP32', shape: [1] };
const OUT: Tensor = { name: 'OUT', dtype: 'FP32', shape: [1] };

function bindRecorder(rec: Recorder, config: ModelConfig, extra: Partial<BindOptions> = {}): string {
  const modelName = extra.modelName ?? 'identity';
  triton.bind({ modelName, inferFunc: rec.func, inputs: [IN], outputs: [OUT], config, ...extra });
  return modelName;
}

function send(model: string, tag: number, options: InferOptions = {}, rows = 1): Promise<number> {
  return triton.infer(model, { IN: fp32(tag, rows) }, options).then(tagOf);
}

describe('batch sizes', () => {
  test('the callable never sees more than maxBatchSize rows under concurrent load, and every request gets its own rows back', async () => {
    const batches: number[] = [];
    triton.bind({
      modelName: 'load',
      inputs: [IN],
      outputs: [OUT],
      config: { maxBatchSize: 4 },
      inferFunc: async (requests: Request[]) => {
        batches.push(requests.reduce((n, r) => n + r.data.IN.rows, 0));
        await sleep(1);  // keep the instance busy so that the queue builds up
        return requests.map((r) => ({ OUT: new Float32Array(r.data.IN.data as Float32Array).map((v) => v * 2) }));
      },
    });
    await triton.run();
    const pending: Promise<void>[] = [];
    let totalRows = 0;
    for (let burst = 0; burst < 12; burst++) {
      for (let i = 0; i < 5; i++) {
        const tag = burst * 5 + i;
        const rows = 1 + (tag % 3);
        totalRows += rows;
        pending.push(triton.infer('load', { IN: fp32(tag, rows) }).then((out) => {
          expect(out.OUT.shape).toEqual([rows, 1]);
          expect(Array.from(out.OUT.data as Float32Array)).toEqual(new Array(rows).fill(tag * 2));
        }));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(pending);
    expect(Math.max(...batches)).toBeLessThanOrEqual(4);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(totalRows);
    // Requests queued while the instance was busy were merged.
    expect(batches.length).toBeLessThan(pending.length);
  });

  test('requests arriving within the queue delay window coalesce; a full batch goes without waiting out the window', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 3_000_000 } });
    await triton.run();
    const start = performance.now();
    const pending: Promise<number>[] = [];
    for (let i = 0; i < 8; i++) {
      pending.push(send('identity', i));
      await new Promise((resolve) => setImmediate(resolve));  // one request per event-loop turn
    }
    expect(await Promise.all(pending)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(rec.batchSizes).toEqual([8]);
    expect(performance.now() - start).toBeLessThan(2500);
  });

  test('with enough load queued the callable sees the preferred batch sizes', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 8, batcher: { preferredBatchSize: [2, 4] } });
    await triton.run();
    const release = rec.hold();
    const first = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const queued = Array.from({ length: 11 }, (_, i) => send('identity', i + 1));
    await settleLoop();
    expect(rec.calls.length).toBe(1);
    release.open();
    expect(await first).toBe(0);
    expect(await Promise.all(queued)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    // 11 queued: the largest preferred size (4) twice, then 3 left: the preferred 2, then the
    // remaining 1 (no preferred size reachable, zero delay: sent as it is). Never 8 or 3.
    expect(rec.batchSizes).toEqual([1, 4, 4, 2, 1]);
    expect(rec.tagOrder).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });
});

describe('queue delay', () => {
  test('a lone request waits about maxQueueDelayMicroseconds for company', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 500_000 } });
    await triton.run();
    const start = performance.now();
    expect(await send('identity', 7)).toBe(7);
    const elapsed = performance.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(10_000);
    expect(rec.batchSizes).toEqual([1]);
  });

  test('with maxQueueDelayMicroseconds 0 a lone request is sent at once', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 0 } });
    await triton.run();
    const start = performance.now();
    expect(await send('identity', 7)).toBe(7);
    // Not held for company (0 is no delay, not "until the batch fills"); the bound is loose only
    // so that a stalled machine cannot fail it: nothing would release a held request sooner.
    expect(performance.now() - start).toBeLessThan(5000);
    expect(rec.batchSizes).toEqual([1]);
  });
});

describe('preserveOrdering', () => {
  /** Instance 0 is held on a gate; instance 1 answers at once. */
  async function run(preserveOrdering: boolean): Promise<{ order: number[]; fastSettledWhileSlowBusy: boolean }> {
    const rec = new Recorder();
    triton.bind({
      modelName: 'ordered',
      inferFunc: [rec.func, rec.func],
      inputs: [IN],
      outputs: [OUT],
      config: { maxBatchSize: 1, batcher: { preserveOrdering } },
    });
    await triton.run();
    const order: number[] = [];
    const release = rec.hold();
    const slow = track(send('ordered', 1).then((t) => { order.push(t); return t; }));
    await waitFor(() => rec.active === 1, 'request 1 to execute');
    const fast = track(send('ordered', 2).then((t) => { order.push(t); return t; }));
    await waitFor(() => rec.calls.length === 2, 'request 2 to execute');
    if (!preserveOrdering) await waitFor(() => fast.settled, 'request 2 to resolve');
    else await settleLoop(50);
    const fastSettledWhileSlowBusy = fast.settled;
    expect(slow.settled).toBe(false);
    expect(rec.calls.map((c) => [c.instance, c.tags[0]])).toEqual([[0, 1], [1, 2]]);
    release.open();
    await Promise.all([slow.promise, fast.promise]);
    return { order, fastSettledWhileSlowBusy };
  }

  test('on: with a slow instance 0 and a fast instance 1, responses still resolve in request order', async () => {
    const { order, fastSettledWhileSlowBusy } = await run(true);
    expect(fastSettledWhileSlowBusy).toBe(false);
    expect(order).toEqual([1, 2]);
  });

  test('off: the fast instance\'s response resolves first', async () => {
    const { order, fastSettledWhileSlowBusy } = await run(false);
    expect(fastSettledWhileSlowBusy).toBe(true);
    expect(order).toEqual([2, 1]);
  });
});

describe('priorities', () => {
  test('high-priority requests queued after low-priority ones execute first; priority 0 or out of range means the default level', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 2, batcher: { priorityLevels: 2, defaultPriorityLevel: 2 } });
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const low = [
      send('identity', 11, { priority: 2 }),
      send('identity', 12),                   // 0 → default level 2
      send('identity', 13, { priority: 9 }),  // beyond the levels → default level 2
    ];
    const high = [21, 22, 23].map((t) => send('identity', t, { priority: 1 }));
    await settleLoop();
    release.open();
    await Promise.all([blocker, ...low, ...high]);
    expect(rec.tagOrder).toEqual([0, 21, 22, 23, 11, 12, 13]);
    expect(Math.max(...rec.batchSizes)).toBeLessThanOrEqual(2);
  });
});

describe('uint64 priority levels and timeouts (Triton\'s ModelDynamicBatching fields are uint64)', () => {
  test('priorityLevels 2^64 - 1 with the default level at 2^32 (qa/L0_model_queue test_max_priority_levels): levels serve in order', async () => {
    const rec = new Recorder();
    // 2^64 - 1 levels: the native queue makes a level when a request first uses it.
    bindRecorder(rec, { maxBatchSize: 2, batcher: { priorityLevels: 2n ** 64n - 1n, defaultPriorityLevel: 2n ** 32n } });
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const queued = [
      send('identity', 11),                                          // 0 → the default level, 2^32
      send('identity', 12, { priority: 2 ** 32 }),                   // the default level, named
      send('identity', 13, { priority: 2 ** 32 + 1 }),               // just below it
      send('identity', 14, { priority: Number.MAX_SAFE_INTEGER }),   // far below
      send('identity', 21, { priority: 1 }),                         // the highest level
      send('identity', 22, { priority: 2 ** 32 - 1 }),               // just above the default
    ];
    await settleLoop();
    release.open();
    await Promise.all([blocker, ...queued]);
    expect(rec.tagOrder).toEqual([0, 21, 22, 11, 12, 13, 14]);
  });

  test('a default timeout of 2^64 - 1 µs never expires, and a request may still shorten it when the policy allows', async () => {
    const rec = new Recorder();
    bindRecorder(rec, {
      maxBatchSize: 1,
      batcher: {
        maxQueueDelayMicroseconds: 2n ** 64n - 1n,
        defaultQueuePolicy: { defaultTimeoutMicroseconds: 2n ** 64n - 1n, allowTimeoutOverride: true, timeoutAction: TimeoutAction.REJECT },
      },
    });
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const kept = send('identity', 1);
    const short = send('identity', 2, { timeoutMicroseconds: 50_000 });
    await expectRejects(short, 'UNAVAILABLE', 'Request timeout expired');
    await sleep(100);
    release.open();
    // A full batch (1 row) goes at once: the 2^64 - 1 µs delay is never waited out.
    expect(await Promise.all([blocker, kept])).toEqual([0, 1]);
    expect(rec.tagOrder).toEqual([0, 1]);
  });
});

describe('queue policy', () => {
  test('a request beyond maxQueueSize is refused with UNAVAILABLE "Exceeds maximum queue size"; queued ones still complete', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 1, batcher: { defaultQueuePolicy: { maxQueueSize: 2 } } });
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const queued = [send('identity', 1), send('identity', 2)];
    const err = await expectRejects(send('identity', 3), 'UNAVAILABLE', 'Exceeds maximum queue size');
    expect(err.httpStatus).toBe(503);
    release.open();
    expect(await Promise.all([blocker, ...queued])).toEqual([0, 1, 2]);
    expect(rec.tagOrder).toEqual([0, 1, 2]);
    // Refused before it was queued: no statistics count it, as in Triton (only a queued
    // request's timeout is a REJECTED failure).
    expect(triton.model('identity').stats().failures.REJECTED).toBe(0);
    expect(triton.model('identity').stats().fail.count).toBe(0);
  });

  test('timeoutAction REJECT: requests queued past the timeout fail with "Request timeout expired"; the executing one is not timed out', async () => {
    const rec = new Recorder();
    bindRecorder(rec, {
      maxBatchSize: 1,
      batcher: { defaultQueuePolicy: { defaultTimeoutMicroseconds: 100_000, timeoutAction: TimeoutAction.REJECT } },
    });
    await triton.run();
    const release = rec.hold();
    const blocker = track(send('identity', 0));
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const expired = [send('identity', 1), send('identity', 2)];
    for (const p of expired) await expectRejects(p, 'UNAVAILABLE', 'Request timeout expired');
    expect(blocker.settled).toBe(false);
    release.open();
    expect(await blocker.promise).toBe(0);
    expect(rec.tagOrder).toEqual([0]);
    // The model still serves new requests.
    expect(await send('identity', 3)).toBe(3);
  });

  test('timeoutAction DELAY: an expired request still completes, but after requests that have not expired', async () => {
    const rec = new Recorder();
    bindRecorder(rec, {
      maxBatchSize: 1,
      // The expiring request gets 200 ms of its own; the others the 60 s default, so that no
      // stall of the machine can expire them too (two expired requests keep their order).
      batcher: { defaultQueuePolicy: { defaultTimeoutMicroseconds: 60_000_000, allowTimeoutOverride: true, timeoutAction: TimeoutAction.DELAY } },
    });
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const old = track(send('identity', 1, { timeoutMicroseconds: 200_000 }));
    await sleep(500);  // request 1 is past its timeout now
    expect(old.settled).toBe(false);
    const fresh = send('identity', 2);
    release.open();
    expect(await Promise.all([blocker, old.promise, fresh])).toEqual([0, 1, 2]);
    expect(rec.tagOrder).toEqual([0, 2, 1]);
  });
});

describe('per-request timeout override', () => {
  function config(allowTimeoutOverride: boolean, defaultTimeoutMicroseconds: number): ModelConfig {
    return {
      maxBatchSize: 1,
      batcher: { defaultQueuePolicy: { allowTimeoutOverride, defaultTimeoutMicroseconds } },
    };
  }

  test('allowTimeoutOverride true: a smaller per-request timeout expires before the default', async () => {
    const rec = new Recorder();
    bindRecorder(rec, config(true, 30_000_000));
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const start = performance.now();
    const short = send('identity', 1, { timeoutMicroseconds: 100_000 });
    const long = track(send('identity', 2));
    await expectRejects(short, 'UNAVAILABLE', 'Request timeout expired');
    expect(performance.now() - start).toBeLessThan(10_000);
    expect(long.settled).toBe(false);
    release.open();
    expect(await Promise.all([blocker, long.promise])).toEqual([0, 2]);
    expect(rec.tagOrder).toEqual([0, 2]);
  });

  test('allowTimeoutOverride false: the per-request timeout is ignored and the default applies', async () => {
    const rec = new Recorder();
    bindRecorder(rec, config(false, 1_000_000));
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const start = performance.now();
    const req = track(send('identity', 1, { timeoutMicroseconds: 50_000 }));
    // 50 ms was ignored: the rejection comes after the 1 s default (a check that it had not
    // settled after a sleep could itself be failed by a stalled machine oversleeping).
    await expectRejects(req.promise, 'UNAVAILABLE', 'Request timeout expired');
    expect(performance.now() - start).toBeGreaterThanOrEqual(900);  // the 1 s default
    release.open();
    expect(await blocker).toBe(0);
  });

  test('allowTimeoutOverride true with no default timeout: the per-request timeout is ignored (Triton)', async () => {
    const rec = new Recorder();
    bindRecorder(rec, config(true, 0));
    await triton.run();
    const release = rec.hold();
    const blocker = send('identity', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const req = track(send('identity', 1, { timeoutMicroseconds: 50_000 }));
    await sleep(300);
    expect(req.settled).toBe(false);
    release.open();
    expect(await Promise.all([blocker, req.promise])).toEqual([0, 1]);
  });
});

describe('request shapes', () => {
  test('a request with more rows than maxBatchSize is refused with INVALID_ARG naming the model', async () => {
    const rec = new Recorder();
    bindRecorder(rec, { maxBatchSize: 4 }, { modelName: 'small_batch' });
    await triton.run();
    await expectRejects(send('small_batch', 1, {}, 5), 'INVALID_ARG', /small_batch/);
    expect(await send('small_batch', 2, {}, 4)).toBe(2);  // exactly maxBatchSize is fine
    expect(rec.batchSizes).toEqual([4]);
  });

  async function variableShapes(allowRaggedBatch: boolean): Promise<Recorder> {
    const rec = new Recorder();
    triton.bind({
      modelName: 'variable',
      inferFunc: rec.func,
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1], allowRaggedBatch }],
      outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const release = rec.hold();
    const blocker = send('variable', 0);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const widths = [2, 3, 2, 3, 3, 3, 2, 2];
    const queued = widths.map((w, i) => triton.infer('variable', { IN: fp32(i + 1, 1, w) }).then((out) => {
      expect(out.OUT.shape).toEqual([1, w]);
      return tagOf(out);
    }));
    await settleLoop();
    release.open();
    expect(await Promise.all([blocker, ...queued])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    return rec;
  }

  test('requests whose variable dims differ never share a batch', async () => {
    const rec = await variableShapes(false);
    for (const call of rec.calls) {
      expect(new Set(call.shapes.map((s) => s.join('x'))).size).toBe(1);
    }
    // Arrival order is kept; a mismatch closes the batch: [2] [3] [2] [3,3,3] [2,2].
    expect(rec.calls.slice(1).map((c) => c.shapes.map((s) => s[1]))).toEqual([[2], [3], [2], [3, 3, 3], [2, 2]]);
  });

  test('with allowRaggedBatch requests of different shapes share a batch', async () => {
    const rec = await variableShapes(true);
    expect(rec.batchSizes).toEqual([1, 8]);
    expect(rec.calls[1].shapes.map((s) => s[1])).toEqual([2, 3, 2, 3, 3, 3, 2, 2]);
  });
});

describe('non-batching model', () => {
  test('batching false: the callable gets exactly one request per call, shapes without a batch axis', async () => {
    const seen: { count: number; shape: number[]; maxBatchSize: number }[] = [];
    const release = gate();
    let first = true;
    triton.bind({
      modelName: 'single',
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [2] }],
      outputs: [{ name: 'OUT', dtype: 'FP32', shape: [2] }],
      config: { batching: false },
      inferFunc: async (requests: Request[], context: TritonContext) => {
        seen.push({ count: requests.length, shape: [...requests[0].data.IN.shape], maxBatchSize: context.modelConfig.maxBatchSize });
        if (first) {
          first = false;
          await release.promise;
        }
        return requests.map((r) => ({ OUT: new Float32Array(r.data.IN.data as Float32Array).map((v) => v + 1) }));
      },
    });
    await triton.run();
    const results = [1, 2, 3, 4, 5].map((v) => triton.infer('single', { IN: new NDArray('FP32', [2], new Float32Array([v, -v])) }));
    await waitFor(() => seen.length === 1, 'the first request to execute');
    await settleLoop();
    expect(seen.length).toBe(1);
    release.open();
    const outputs = await Promise.all(results);
    outputs.forEach((out, i) => {
      expect(out.OUT.shape).toEqual([2]);
      expect(Array.from(out.OUT.data as Float32Array)).toEqual([i + 2, -(i + 1) + 1]);
    });
    expect(seen).toEqual(new Array(5).fill({ count: 1, shape: [2], maxBatchSize: 0 }));
    // A batch axis is refused: the model has none.
    await expectRejects(triton.infer('single', { IN: new NDArray('FP32', [1, 2], new Float32Array(2)) }), 'INVALID_ARG');
  });
});
