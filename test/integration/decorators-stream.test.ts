/**
 * The decorators over generators (issue 9): decoupled models bound with a decorated generator
 * or async generator, streamed with triton.inferStream() through the real native batcher. The
 * queue delay and a preferred batch size make the batcher put several requests into one
 * execution, so that `batch` really splits each yielded result. Every request's sequence of
 * responses is checked, and so are errors mid-generator, a decorator's check failing on a
 * yielded step, and that the wrapped generators are closed (their `finally` runs).
 */
import {
  ConstantPadder, batch, fillOptionals, firstValue, getInferenceRequestBatchSize, groupByKeys, groupByValues, padBatch,
  sample, tritonContext, type Kwargs,
} from '../../ts/index';
import type { Tensor } from '../../ts/config/types';
import { InferenceServerError } from '../../ts/errors';
import { Request, type InferFunc } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import type { Triton } from '../../ts/triton';
import { expectRejects, inProcessTriton, waitFor } from './helpers';

let triton: Triton;

afterEach(async () => {
  await triton?.stop();
});

const IN: Tensor = { name: 'IN', dtype: 'FP32', shape: [1] };
const OUT: Tensor = { name: 'OUT', dtype: 'FP32', shape: [1] };
const T: Tensor = { name: 'T', dtype: 'FP32', shape: [1] };

/** An FP32 batch of one value per row. */
const rows = (...values: number[]): NDArray => new NDArray('FP32', [values.length, 1], Float32Array.from(values));
/** `a` with `f` applied to every element (same shape). */
const map = (a: NDArray, f: (v: number, i: number) => number): NDArray =>
  new NDArray('FP32', a.shape, Float32Array.from(a.data as Float32Array, f));
const valuesOf = (a: NDArray): number[] => Array.from(a.data as Float32Array);

/** Executions of the bound model: the batch size of each request, per execution. */
let executions: number[][];

/**
 * Binds the decoupled model `m` around `inferFunc`; a queue delay of 200 ms and the preferred
 * batch size `preferred` let the requests a test sends at once run in one execution.
 */
async function bindStream(
  inferFunc: InferFunc, options: { inputs?: Tensor[]; outputs?: Tensor[]; preferred?: number; batching?: boolean; decoupled?: boolean } = {},
): Promise<Triton> {
  executions = [];
  const batching = options.batching ?? true;
  triton = inProcessTriton();
  triton.bind({
    modelName: 'm',
    inferFunc: (requests, context) => {
      executions.push(requests.map((r) => getInferenceRequestBatchSize(r)));
      return inferFunc(requests, context);
    },
    inputs: options.inputs ?? [IN],
    outputs: options.outputs ?? [OUT],
    config: {
      decoupled: options.decoupled ?? true,
      ...(batching
        ? { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 200_000, preferredBatchSize: [options.preferred ?? 1] } }
        : { batching: false }),
    },
  });
  await triton.run();
  return triton;
}

/** What one request got: the values of OUT of each response, and the error it ended with. */
interface Outcome {
  responses: number[][];
  error?: InferenceServerError;
}

async function outcome(stream: AsyncIterable<Record<string, NDArray>>): Promise<Outcome> {
  const responses: number[][] = [];
  try {
    for await (const outputs of stream) responses.push(valuesOf(outputs.OUT));
  } catch (err) {
    return { responses, error: err as InferenceServerError };
  }
  return { responses };
}

/** Streams one request per entry of `inputs`, all at once; their outcomes in order. */
function streamAll(inputs: Record<string, NDArray>[]): Promise<Outcome[]> {
  return Promise.all(inputs.map((data) => outcome(triton.inferStream('m', data))));
}

/** The responses of every request, which must all have completed without error. */
async function responsesOf(inputs: Record<string, NDArray>[]): Promise<number[][][]> {
  const outcomes = await streamAll(inputs);
  for (const o of outcomes) expect(o.error).toBeUndefined();
  return outcomes.map((o) => o.responses);
}

type Mode = 'sync' | 'async';

/** Records which generators `steps` made were closed (their `finally` ran). */
class Closed {
  count = 0;
}

/**
 * `count` steps `f(0)`, `f(1)`, … from a generator of the mode: a sync generator, or an async
 * one that yields to the event loop before each step. `closed` counts the generator's `finally`.
 */
function steps<T>(mode: Mode, count: number, f: (step: number) => T, closed = new Closed()): Generator<T> | AsyncGenerator<T> {
  if (mode === 'sync') {
    return (function* syncSteps() {
      try {
        for (let k = 0; k < count; k++) yield f(k);
      } finally {
        closed.count++;
      }
    })();
  }
  return (async function* asyncSteps() {
    try {
      for (let k = 0; k < count; k++) {
        await new Promise((resolve) => setImmediate(resolve));
        yield f(k);
      }
    } finally {
      closed.count++;
    }
  })();
}

describe('batch', () => {
  test.each([
    ['a generator function', function* gen({ IN: x }: Kwargs) {
      for (let k = 0; k < 3; k++) yield { OUT: map(x, (v) => v + 10 * k) };
    }],
    ['an async generator function', async function* gen({ IN: x }: Kwargs) {
      for (let k = 0; k < 3; k++) {
        await new Promise((resolve) => setImmediate(resolve));
        yield { OUT: map(x, (v) => v + 10 * k) };
      }
    }],
  ])('each result %s yields is split into the requests of the batch, one response per request per step', async (_, gen) => {
    await bindStream(batch(gen), { preferred: 4 });
    const got = await responsesOf([{ IN: rows(1) }, { IN: rows(2, 3) }, { IN: rows(4) }]);
    expect(executions).toEqual([[1, 2, 1]]);
    expect(got).toEqual([
      [[1], [11], [21]],
      [[2, 3], [12, 13], [22, 23]],
      [[4], [14], [24]],
    ]);
  });

  test.each(['sync', 'async'] as Mode[])('%s: an async callable resolving to a generator, and array results per step', async (mode) => {
    await bindStream(batch(async ({ IN: x }) => steps(mode, 2, (k) => [map(x, (v) => -v - k)])), { preferred: 2 });
    expect(await responsesOf([{ IN: rows(1) }, { IN: rows(2) }])).toEqual([[[-1], [-2]], [[-2], [-3]]]);
    expect(executions).toEqual([[1, 1]]);
  });

  test.each(['sync', 'async'] as Mode[])('%s: an error mid-generator reaches every request after the responses yielded before it', async (mode) => {
    const closed = new Closed();
    await bindStream(batch(({ IN: x }) => steps(mode, 3, (k) => {
      if (k === 1) throw new Error('decoder failed at step 1');
      return { OUT: x };
    }, closed)), { preferred: 3 });
    const [a, b] = await streamAll([{ IN: rows(1) }, { IN: rows(2, 3) }]);
    expect(executions).toEqual([[1, 2]]);
    for (const [o, first] of [[a, [1]], [b, [2, 3]]] as const) {
      expect(o.responses).toEqual([first]);
      expect(o.error).toBeInstanceOf(InferenceServerError);
      expect(o.error!.code).toBe('INTERNAL');
      expect(o.error!.message).toBe('decoder failed at step 1');
    }
    expect(closed.count).toBe(1);
  });

  test.each(['sync', 'async'] as Mode[])('%s: a yielded result with the wrong number of rows fails the requests with batch\'s error and closes the generator', async (mode) => {
    const closed = new Closed();
    await bindStream(batch(({ IN: x }) => steps(mode, 5, (k) => ({ OUT: k === 0 ? x : rows(7) }), closed)), { preferred: 3 });
    const [a, b] = await streamAll([{ IN: rows(1) }, { IN: rows(2, 3) }]);
    expect(a.responses).toEqual([[1]]);
    expect(b.responses).toEqual([[2, 3]]);
    const message = "model 'm': batch: every output needs 3 rows (the sum of the batch sizes of 2 requests: 1+2), " +
      "but output 'OUT' has shape [1,1]";
    for (const o of [a, b]) {
      expect(o.error?.code).toBe('INTERNAL');
      expect(o.error?.message).toBe(message);
    }
    expect(closed.count).toBe(1);
  });

  test.each(['sync', 'async'] as Mode[])('%s: leaving the loop early closes the wrapped generator', async (mode) => {
    const closed = new Closed();
    await bindStream(batch(({ IN: x }) => steps(mode, Infinity, (k) => ({ OUT: map(x, (v) => v + k) }), closed)));
    const seen: number[][] = [];
    for await (const outputs of triton.inferStream('m', { IN: rows(5) })) {
      seen.push(valuesOf(outputs.OUT));
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([[5], [6]]);
    await waitFor(() => closed.count === 1, 'the generator behind batch to be closed');
  });

  test('a generator for a model that is not decoupled fails with a message saying what to do', async () => {
    await bindStream(batch(function* gen({ IN: x }: Kwargs) { yield { OUT: x }; }), { decoupled: false });
    await expectRejects(triton.infer('m', { IN: rows(1) }), 'INTERNAL',
      "model 'm': batch: the callable returned a generator (a stream of responses), which only a decoupled model can send: " +
      'bind the model with config: { decoupled: true }, or return the outputs');
  });
});

describe.each(['sync', 'async'] as Mode[])('%s generators', (mode) => {
  test('sample: each step yields the request\'s response (outputs by name or in declared order)', async () => {
    const calls: number[][] = [];
    await bindStream(sample(({ IN: x }) => {
      calls.push([...x.shape]);
      return steps(mode, 3, (k) => (k < 2 ? { OUT: map(x, (v) => v * 10 + k) } : [map(x, (v) => -v)]));
    }), { batching: false });
    const one = (v: number) => new NDArray('FP32', [1], Float32Array.of(v));
    expect(await responsesOf([{ IN: one(1) }, { IN: one(2) }])).toEqual([[[10], [11], [-1]], [[20], [21], [-2]]]);
    expect(calls).toEqual([[1], [1]]);
  });

  test('sample: a step that is not outputs fails the request with sample\'s error', async () => {
    await bindStream(sample(({ IN: x }) => steps(mode, 2, (k) => (k === 0 ? { OUT: x } : (x as never)))), { batching: false });
    const [o] = await streamAll([{ IN: new NDArray('FP32', [1], Float32Array.of(3)) }]);
    expect(o.responses).toEqual([[3]]);
    expect(o.error?.code).toBe('INTERNAL');
    expect(o.error?.message).toBe("model 'm': sample: the callable must return an object of outputs or an array of outputs " +
      'in declared order, got NDArray');
  });

  const OPT: Tensor = { name: 'OPT', dtype: 'FP32', shape: [1], optional: true };

  /**
   * Drops OPT from the requests whose OPT is negative. The native batcher never puts requests
   * with different input sets into one batch; Triton's own batcher may, and this forms one.
   */
  const dropNegativeOpt = (fn: InferFunc): InferFunc => (requests, context) => fn(requests.map((r) =>
    ((r.data.OPT.data as Float32Array)[0] < 0 ? new Request({ IN: r.data.IN }, r.parameters) : r)), context);

  test('groupByKeys: the groups\' generators are merged step by step in request order; an ended group sends nothing more', async () => {
    const calls: string[][] = [];
    const closed = new Closed();
    await bindStream(dropNegativeOpt(groupByKeys(batch(({ IN: x, OPT: opt }) => {
      calls.push([...Object.keys(opt ? { IN: x, OPT: opt } : { IN: x }), String(x.rows)]);
      // The group without OPT streams 3 steps, the one with it 1.
      return steps(mode, opt ? 1 : 3, (k) => ({ OUT: map(x, (v, i) => v + (opt ? (opt.data as Float32Array)[i] : 0) + 10 * k) }), closed);
    }))), { inputs: [IN, OPT], preferred: 4 });
    const got = await responsesOf([
      { IN: rows(1), OPT: rows(-1) },
      { IN: rows(2, 3), OPT: rows(5, 6) },
      { IN: rows(4), OPT: rows(-1) },
    ]);
    expect(executions).toEqual([[1, 2, 1]]);
    // Groups in sorted key order: [IN] (requests 0 and 2), then [IN, OPT] (request 1).
    expect(calls).toEqual([['IN', '2'], ['IN', 'OPT', '2']]);
    expect(got).toEqual([[[1], [11], [21]], [[7, 9]], [[4], [14], [24]]]);
    expect(closed.count).toBe(2);
  });

  test('groupByKeys: a group\'s step that is not one entry per request fails every request and closes the other generators', async () => {
    const closed = new Closed();
    await bindStream(dropNegativeOpt(groupByKeys((requests) => steps(mode, 3, (k) =>
      (k === 1 && requests.length === 1 ? [] : requests.map((r) => ({ OUT: r.data.IN }))), closed))), { inputs: [IN, OPT], preferred: 3 });
    const outcomes = await streamAll([{ IN: rows(1), OPT: rows(-1) }, { IN: rows(2), OPT: rows(5) }, { IN: rows(3), OPT: rows(-1) }]);
    expect(executions).toEqual([[1, 1, 1]]);
    expect(outcomes.map((o) => o.responses)).toEqual([[[1]], [[2]], [[3]]]);
    for (const o of outcomes) {
      expect(o.error?.code).toBe('INTERNAL');
      expect(o.error?.message).toBe("model 'm': groupByKeys: step 1 of a group's generator must yield one outputs object " +
        '(or null) per request of its group (1), got an array of 0');
    }
    expect(closed.count).toBe(2);
  });

  test('groupByValues: the sub-batches\' generators are padded and merged per step, then batch splits each step', async () => {
    const calls: number[][] = [];
    const closed = new Closed();
    // OUT is as wide as T's value: the sub-batches' results differ in width and are padded with 0.
    await bindStream(batch(groupByValues('T', { padFn: new ConstantPadder(0) })(({ IN: x, T: t }) => {
      calls.push(valuesOf(x));
      const width = (t.data as Float32Array)[0];
      return steps(mode, 2, (k) => ({
        OUT: new NDArray('FP32', [x.rows, width], Float32Array.from({ length: x.rows * width },
          (_, i) => (x.data as Float32Array)[Math.floor(i / width)] * width + 10 * k)),
      }), closed);
    })), { inputs: [IN, T], outputs: [{ ...OUT, shape: [-1] }], preferred: 4 });
    const got = await responsesOf([
      { IN: rows(1), T: rows(1) },
      { IN: rows(2, 3), T: rows(2, 1) },
      { IN: rows(4), T: rows(2) },
    ]);
    expect(executions).toEqual([[1, 2, 1]]);
    // Sub-batches in order of first appearance: T=1 (rows 0 and 2), then T=2 (rows 1 and 3).
    expect(calls).toEqual([[1, 3], [2, 4]]);
    expect(got).toEqual([
      [[1, 0], [11, 0]],
      [[4, 4, 3, 0], [14, 14, 13, 0]],
      [[8, 8], [18, 18]],
    ]);
    expect(closed.count).toBe(2);
  });

  test('groupByValues: sub-batch generators that yield different numbers of steps fail the requests; the longer one is closed', async () => {
    const closed = new Closed();
    await bindStream(batch(groupByValues('T')(({ IN: x, T: t }) =>
      steps(mode, (t.data as Float32Array)[0], () => ({ OUT: x }), closed))), { inputs: [IN, T], preferred: 3 });
    const [a, b] = await streamAll([{ IN: rows(1), T: rows(1) }, { IN: rows(2, 3), T: rows(3, 1) }]);
    expect(a.responses).toEqual([[1]]);
    expect(b.responses).toEqual([[2, 3]]);
    for (const o of [a, b]) {
      expect(o.error?.code).toBe('INTERNAL');
      expect(o.error?.message).toBe("model 'm': groupByValues: the sub-batches' generators must yield the same number of " +
        'steps (each step answers the whole batch): sub-batch 0 (2 rows) ended after 1 step, sub-batch 1 (1 row) yielded step 2');
    }
    expect(closed.count).toBe(2);
  });

  test('groupByValues: leaving the loop early closes every sub-batch\'s generator', async () => {
    const closed = new Closed();
    await bindStream(batch(groupByValues('T')(({ IN: x }) => steps(mode, Infinity, (k) => ({ OUT: map(x, (v) => v + k) }), closed))),
      { inputs: [IN, T], preferred: 2 });
    const seen: number[][] = [];
    for await (const outputs of triton.inferStream('m', { IN: rows(1, 2), T: rows(1, 2) })) {
      seen.push(valuesOf(outputs.OUT));
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([[1, 2], [2, 3]]);
    await waitFor(() => closed.count === 2, 'both sub-batch generators to be closed');
  });

  test('fillOptionals: the defaults reach the generator, whose steps pass through', async () => {
    await bindStream(fillOptionals({ OPT: new Float32Array([100]) })(batch(({ IN: x, OPT: opt }) =>
      steps(mode, 2, (k) => ({ OUT: map(x, (v, i) => v + (opt.data as Float32Array)[i] + k) })))), { inputs: [IN, OPT], preferred: 3 });
    expect(await responsesOf([{ IN: rows(1) }, { IN: rows(2, 3) }])).toEqual([[[101], [102]], [[102, 103], [103, 104]]]);
    expect(executions).toEqual([[1, 2]]);
  });

  test('padBatch: the generator sees the padded batch; each step is cut back before batch splits it', async () => {
    const sizes: number[] = [];
    await bindStream(batch(padBatch(({ IN: x }) => {
      sizes.push(x.rows);
      return steps(mode, 2, (k) => ({ OUT: map(x, (v) => v * 10 + k) }));
    })), { preferred: 4 });
    // 3 rows wait for the queue delay (the preferred size is 4); padBatch repeats the last row once.
    expect(await responsesOf([{ IN: rows(1) }, { IN: rows(2, 3) }])).toEqual([[[10], [11]], [[20, 30], [21, 31]]]);
    expect(executions).toEqual([[1, 2]]);
    expect(sizes).toEqual([4]);
  });

  test('firstValue: the generator gets the first value; a strict violation fails the requests before it runs', async () => {
    const seen: number[][] = [];
    await bindStream(batch(firstValue('T')(({ IN: x, T: t }) => {
      seen.push([...t.shape, ...valuesOf(t)]);
      return steps(mode, 2, (k) => ({ OUT: map(x, (v) => v * (t.data as Float32Array)[0] + k) }));
    })), { inputs: [IN, T], preferred: 3 });
    expect(await responsesOf([{ IN: rows(1), T: rows(2) }, { IN: rows(2, 3), T: rows(2, 2) }]))
      .toEqual([[[2], [3]], [[4, 6], [5, 7]]]);
    expect(seen).toEqual([[2]]);  // shape [] and the value 2
    const outcomes = await streamAll([{ IN: rows(1), T: rows(2) }, { IN: rows(2, 3), T: rows(2, 5) }]);
    for (const o of outcomes) {
      expect(o.responses).toEqual([]);
      expect(o.error?.code).toBe('INVALID_ARG');
      expect(o.error?.message).toContain("model 'm': firstValue: the values of input 'T' are not equal across the batch");
    }
  });

  test('tritonContext: the generator reads the context from its inputs', async () => {
    await bindStream(batch(tritonContext(({ IN: x, tritonContext: context }) =>
      steps(mode, 2, (k) => ({ OUT: map(x, (v) => v + context.modelConfig.maxBatchSize * k) })))), { preferred: 2 });
    expect(await responsesOf([{ IN: rows(1) }, { IN: rows(2) }])).toEqual([[[1], [9]], [[2], [10]]]);
    expect(executions).toEqual([[1, 1]]);
  });
});
