/**
 * PyTriton's decorators (pytriton-api.md §4), exercised through `new Triton()`, `bind()` and
 * `infer()` with the real native batcher. Batches of several requests are formed by holding
 * one execution on a gate while the others queue behind it.
 */
import { Triton } from '../../ts/triton';
import type { Tensor } from '../../ts/config/types';
import { Request, type InferFunc, type ResponseOutputs, type TritonContext } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import {
  ConstantPadder, batch, fillOptionals, firstValue, getInferenceRequestBatchSize, groupByKeys, groupByValues,
  padBatch, sample, tritonContext, type Kwargs,
} from '../../ts/index';
import { expectRejects, expectThrows, gate, inProcessTriton, settleLoop, sleep, waitFor, type Gate } from './helpers';

let triton: Triton;

beforeEach(() => {
  triton = inProcessTriton();
});

afterEach(async () => {
  await triton.stop();
});

const f32 = (values: number[], width = 1): NDArray =>
  new NDArray('FP32', [values.length / width, width], Float32Array.from(values));
const i32 = (values: number[]): NDArray => new NDArray('INT32', [values.length, 1], Int32Array.from(values));
const str = (values: string[]): NDArray => new NDArray('BYTES', [values.length, 1], values.map((v) => Buffer.from(v)));
const valuesOf = (a: NDArray): number[] => Array.from(a.data as ArrayLike<number>);
const stringsOf = (a: NDArray): string[] => (a.data as Uint8Array[]).map((b) => Buffer.from(b).toString());
const times = (a: NDArray, k: number): Float32Array => Float32Array.from(a.data as Float32Array, (v) => v * k);

/** Records each execution's request batch sizes; `behind()` forms batches of several requests. */
class Holder {
  /** Batch size of each request, per execution. */
  readonly batches: number[][] = [];
  /** The inputs of each request, per execution, as the model received them. */
  readonly inputs: Record<string, NDArray>[][] = [];
  readonly #gates = new Map<number, Gate>();

  constructor(readonly inner: InferFunc) {}

  readonly func: InferFunc = async (requests: Request[], context: TritonContext) => {
    const index = this.batches.length;
    this.batches.push(requests.map((r) => getInferenceRequestBatchSize(r)));
    this.inputs.push(requests.map((r) => r.data));
    const held = this.#gates.get(index);
    if (held) await held.promise;
    return this.inner(requests, context);
  };

  /**
   * Sends `first` and holds its execution until `rest` (sent meanwhile) has queued up behind
   * it, so that the next execution batches `rest` together.
   */
  async behind<T>(first: () => Promise<T>, rest: () => Promise<T>[]): Promise<{ first: Promise<T>; rest: Promise<T>[] }> {
    const index = this.batches.length;
    const held = gate();
    this.#gates.set(index, held);
    const firstPromise = first();
    await waitFor(() => this.batches.length === index + 1, 'the blocking execution');
    const others = rest();
    for (const p of [firstPromise, ...others]) p.catch(() => undefined);  // awaited by the test
    await settleLoop();
    held.open();
    return { first: firstPromise, rest: others };
  }
}

describe('batch', () => {
  test('concurrent requests of different batch sizes are concatenated, run once, and each gets its own rows (views)', async () => {
    const seen: NDArray[] = [];
    const produced: NDArray[] = [];
    const h = new Holder(batch(({ x }) => {
      seen.push(x);
      const y = new NDArray('FP32', x.shape, times(x, 2));
      produced.push(y);
      return { y, total: new Int32Array(x.rows).fill(x.rows) };
    }));
    triton.bind({
      modelName: 'split',
      inferFunc: h.func,
      inputs: [{ name: 'x', dtype: 'FP32', shape: [2] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [2] }, { name: 'total', dtype: 'INT32', shape: [1] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const blockerInput = f32([100, 101], 2);
    const { first, rest } = await h.behind(
      () => triton.infer('split', { x: blockerInput }),
      () => [f32([0, 1], 2), f32([10, 11, 12, 13], 2), f32([20, 21, 22, 23, 24, 25], 2)].map((x) => triton.infer('split', { x })),
    );
    const [a, b, c] = await Promise.all(rest);
    const blocker = await first;
    expect(h.batches).toEqual([[1], [1, 2, 3]]);
    expect(seen.map((x) => x.shape)).toEqual([[1, 2], [6, 2]]);
    // One request: its own array, no copy (infer() copied the caller's when it queued the
    // request). Several: concatenated in queue order.
    expect(seen[0]).toBe(h.inputs[0][0].x);
    expect(valuesOf(seen[0])).toEqual(valuesOf(blockerInput));
    expect(valuesOf(seen[1])).toEqual([0, 1, 10, 11, 12, 13, 20, 21, 22, 23, 24, 25]);
    expect(valuesOf(blocker.y)).toEqual([200, 202]);
    expect(blocker.y).toBe(produced[0]);
    expect(a.y.shape).toEqual([1, 2]);
    expect(valuesOf(a.y)).toEqual([0, 2]);
    expect(b.y.shape).toEqual([2, 2]);
    expect(valuesOf(b.y)).toEqual([20, 22, 24, 26]);
    expect(c.y.shape).toEqual([3, 2]);
    expect(valuesOf(c.y)).toEqual([40, 42, 44, 46, 48, 50]);
    // The responses are views into the one batch output.
    for (const r of [a, b, c]) expect((r.y.data as Float32Array).buffer).toBe((produced[1].data as Float32Array).buffer);
    expect([a, b, c].map((r) => r.total.shape)).toEqual([[1, 1], [2, 1], [3, 1]]);
    expect([a, b, c].flatMap((r) => valuesOf(r.total))).toEqual([6, 6, 6, 6, 6, 6]);
  });

  test('an array result is mapped onto the declared outputs in order; a wrong length fails with the declared names', async () => {
    const h = new Holder(batch(({ a, b }) => {
      const add = new NDArray('FP32', a.shape, Float32Array.from(a.data as Float32Array, (v, i) => v + Number(b.data[i])));
      const sub = Float32Array.from(a.data as Float32Array, (v, i) => v - Number(b.data[i]));  // a bare TypedArray
      return Number(a.data[0]) < 0 ? [add] : [add, sub];
    }));
    triton.bind({
      modelName: 'AddSub',
      inferFunc: h.func,
      inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'sub', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('AddSub', { a: f32([1, 2, 3], 3), b: f32([1, 1, 1], 3) }),
      () => [
        triton.infer('AddSub', { a: f32([5, 6, 7], 3), b: f32([1, 2, 3], 3) }),
        triton.infer('AddSub', { a: f32([10, 20, 30, 40, 50, 60], 3), b: f32([1, 2, 3, 4, 5, 6], 3) }),
      ],
    );
    const blocker = await first;
    expect(valuesOf(blocker.add)).toEqual([2, 3, 4]);
    expect(valuesOf(blocker.sub)).toEqual([0, 1, 2]);
    const [one, two] = await Promise.all(rest);
    expect(h.batches).toEqual([[1], [1, 2]]);
    expect(one.add.shape).toEqual([1, 3]);
    expect(valuesOf(one.add)).toEqual([6, 8, 10]);
    expect(one.sub.shape).toEqual([1, 3]);
    expect(valuesOf(one.sub)).toEqual([4, 4, 4]);
    expect(two.sub.shape).toEqual([2, 3]);
    expect(valuesOf(two.add)).toEqual([11, 22, 33, 44, 55, 66]);
    expect(valuesOf(two.sub)).toEqual([9, 18, 27, 36, 45, 54]);
    await expectRejects(triton.infer('AddSub', { a: f32([-1], 1), b: f32([1], 1) }), 'INTERNAL',
      "model 'AddSub': batch: the callable returned an array of 1 outputs, but the model declares 2 (add, sub)");
  });

  test('outputs whose first dim is not the total row count fail every request of that batch with the output and the sizes', async () => {
    const h = new Holder(batch(({ x }) => {
      const rows = x.rows === 3 ? 2 : x.rows;  // the model "forgets" a row in batches of 3
      return { y: new NDArray('FP32', [rows, 2], new Float32Array(rows * 2).fill(7)) };
    }));
    triton.bind({
      modelName: 'rows',
      inferFunc: h.func,
      inputs: [{ name: 'x', dtype: 'FP32', shape: [2] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [2] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('rows', { x: f32([0, 0], 2) }),
      () => [triton.infer('rows', { x: f32([1, 1], 2) }), triton.infer('rows', { x: f32([2, 2, 2, 2], 2) })],
    );
    expect(valuesOf((await first).y)).toEqual([7, 7]);
    for (const p of rest) {
      await expectRejects(p, 'INTERNAL',
        "model 'rows': batch: every output needs 3 rows (the sum of the batch sizes of 2 requests: 1+2), but output 'y' has shape [2,2]");
    }
    expect(h.batches).toEqual([[1], [1, 2]]);
    // The model keeps serving.
    expect(valuesOf((await triton.infer('rows', { x: f32([3, 3, 3, 3], 2) })).y)).toEqual([7, 7, 7, 7]);
  });

  test('an async decorated function batches BYTES inputs and splits BYTES outputs', async () => {
    const seen: string[][] = [];
    const h = new Holder(batch(async ({ s }) => {
      await sleep(1);
      seen.push(stringsOf(s));
      return { upper: new NDArray('BYTES', s.shape, stringsOf(s).map((v) => Buffer.from(v.toUpperCase()))) };
    }));
    triton.bind({
      modelName: 'upper',
      inferFunc: h.func,
      inputs: [{ name: 's', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'upper', dtype: 'BYTES', shape: [1] }],
      config: { maxBatchSize: 4 },
    });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('upper', { s: str(['zero']) }),
      () => [triton.infer('upper', { s: str(['a', 'bc']) }), triton.infer('upper', { s: str(['d\u00e9f']) })],
    );
    expect(stringsOf((await first).upper)).toEqual(['ZERO']);
    const [one, two] = await Promise.all(rest);
    expect(one.upper.shape).toEqual([2, 1]);
    expect(stringsOf(one.upper)).toEqual(['A', 'BC']);
    expect(stringsOf(two.upper)).toEqual(['D\u00c9F']);
    expect(seen).toEqual([['zero'], ['a', 'bc', 'd\u00e9f']]);
  });
});

describe('sample', () => {
  test('a non-batching model gets the request\'s inputs as they are and one result back (sync and async, object or array)', async () => {
    const shapes: number[][] = [];
    triton.bind({
      modelName: 'reverse',
      inferFunc: sample(({ x }) => {
        shapes.push([...x.shape]);
        return { y: new NDArray('FP32', x.shape, Float32Array.from(x.data as Float32Array).reverse()) };
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [3] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [3] }],
      config: { batching: false },
    });
    triton.bind({
      modelName: 'negate',
      inferFunc: sample(async ({ x }) => {
        await sleep(1);
        return [Float32Array.from(x.data as Float32Array, (v) => -v)];
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [3] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [3] }],
      config: { batching: false },
    });
    await triton.run();
    const vec = (...v: number[]): NDArray => new NDArray('FP32', [3], Float32Array.from(v));
    const [r1, r2] = await Promise.all([triton.infer('reverse', { x: vec(1, 2, 3) }), triton.infer('reverse', { x: vec(4, 5, 6) })]);
    expect(valuesOf(r1.y)).toEqual([3, 2, 1]);
    expect(valuesOf(r2.y)).toEqual([6, 5, 4]);
    expect(shapes).toEqual([[3], [3]]);
    const n = await triton.infer('negate', { x: vec(1, -2, 3) });
    expect(n.y.shape).toEqual([3]);
    expect(valuesOf(n.y)).toEqual([-1, 2, -3]);
  });
});

describe('groupByKeys', () => {
  const inputs: Tensor[] = [{ name: 'x', dtype: 'FP32', shape: [1] }, { name: 'bias', dtype: 'FP32', shape: [1], optional: true }];
  const outputs: Tensor[] = [{ name: 'y', dtype: 'FP32', shape: [1] }];
  const addBias = (calls: string[][]) => ({ x, bias }: Kwargs) => {
    calls.push(Object.keys(bias ? { x, bias } : { x }).concat(String(x.rows)));
    return { y: Float32Array.from(x.data as Float32Array, (v, i) => v + (bias ? Number(bias.data[i]) : 0)) };
  };

  test('requests with and without an optional input are served through groupByKeys(batch(...))', async () => {
    const calls: string[][] = [];
    const h = new Holder(groupByKeys(batch(addBias(calls))));
    triton.bind({ modelName: 'bias', inferFunc: h.func, inputs, outputs, config: { maxBatchSize: 8 } });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('bias', { x: f32([0]) }),
      () => [
        triton.infer('bias', { x: f32([1]) }),
        triton.infer('bias', { x: f32([2, 3]), bias: f32([10, 20]) }),
        triton.infer('bias', { x: f32([4]) }),
        triton.infer('bias', { x: f32([5]), bias: f32([30]) }),
      ],
    );
    expect(valuesOf((await first).y)).toEqual([0]);
    const results = await Promise.all(rest);
    expect(results.map((r) => valuesOf(r.y))).toEqual([[1], [12, 23], [4], [35]]);
    // The native batcher never mixes requests that differ in which optional inputs they carry.
    expect(h.batches).toEqual([[1], [1], [2], [1], [1]]);
    expect(calls).toEqual([['x', '1'], ['x', '1'], ['x', 'bias', '2'], ['x', '1'], ['x', 'bias', '1']]);
  });

  test('a batch mixing input sets (as Triton itself may form): batch refuses it, groupByKeys splits and reorders, fillOptionals unifies it', async () => {
    triton.bind({ modelName: 'mixed', inferFunc: batch(addBias([])), inputs, outputs, config: { maxBatchSize: 8 } });
    await triton.run();
    // The bound model's real normalized config; the request list the native batcher cannot form.
    const context: TritonContext = { modelConfig: triton.model('mixed').config, instanceIndex: 0 };
    const mixed = [
      new Request({ x: f32([1]) }),
      new Request({ x: f32([2, 3]), bias: f32([10, 20]) }),
      new Request({ x: f32([4]) }),
      new Request({ x: f32([5]), bias: f32([30]) }),
    ];
    const calls: string[][] = [];
    expectThrows(() => batch(addBias(calls))(mixed, context), 'INVALID_ARG',
      "model 'mixed': batch: cannot batch requests with different sets of inputs: request 0 has [x], request 1 has [x, bias] " +
      '(put groupByKeys above batch)');
    const grouped = groupByKeys(batch(addBias(calls)))(mixed, context);
    expect(grouped).not.toBeInstanceOf(Promise);  // a sync callable stays sync
    expect((grouped as ResponseOutputs[]).map((r) => valuesOf(r.y as NDArray))).toEqual([[1], [12, 23], [4], [35]]);
    // Groups in sorted key order ([bias, x] before [x]), one call each.
    expect(calls).toEqual([['x', 'bias', '3'], ['x', '2']]);
    calls.length = 0;
    const filled = fillOptionals({ bias: new Float32Array([0.5]) })(groupByKeys(batch(addBias(calls))))(mixed, context);
    expect((filled as ResponseOutputs[]).map((r) => valuesOf(r.y as NDArray))).toEqual([[1.5], [12, 23], [4.5], [35]]);
    expect(calls).toEqual([['x', 'bias', '5']]);
    // The caller's requests are left as they were.
    expect(Object.keys(mixed[0].data)).toEqual(['x']);
    const asyncGrouped = groupByKeys(batch(async (kw: Kwargs) => addBias(calls)(kw)))(mixed, context);
    expect(asyncGrouped).toBeInstanceOf(Promise);
    expect((await asyncGrouped).map((r) => valuesOf(r.y as NDArray))).toEqual([[1], [12, 23], [4], [35]]);
  });
});

describe('groupByValues', () => {
  test('sub-batches share the values of the keys (numeric and BYTES); results are scattered back in row order', async () => {
    const calls: number[][] = [];
    const h = new Holder(batch(groupByValues('mode', 'lang')(({ x, mode, lang }) => {
      calls.push(valuesOf(x));
      const m = valuesOf(mode);
      const l = stringsOf(lang);
      if (m.some((v) => v !== m[0]) || l.some((v) => v !== l[0])) throw new Error('a sub-batch mixes values');
      return { y: times(x, m[0]).map((v) => v + (l[0] === 'de' ? 1000 : 0)) };
    })));
    triton.bind({
      modelName: 'modes',
      inferFunc: h.func,
      inputs: [
        { name: 'x', dtype: 'FP32', shape: [1] }, { name: 'mode', dtype: 'INT32', shape: [1] },
        { name: 'lang', dtype: 'BYTES', shape: [1] },
      ],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('modes', { x: f32([100]), mode: i32([1]), lang: str(['en']) }),
      () => [
        triton.infer('modes', { x: f32([1, 2]), mode: i32([1, 2]), lang: str(['en', 'en']) }),
        triton.infer('modes', { x: f32([3]), mode: i32([2]), lang: str(['en']) }),
        triton.infer('modes', { x: f32([4, 5]), mode: i32([1, 1]), lang: str(['de', 'en']) }),
      ],
    );
    expect(valuesOf((await first).y)).toEqual([100]);
    const [a, b, c] = await Promise.all(rest);
    expect(h.batches).toEqual([[1], [2, 1, 2]]);
    // Rows (x, mode, lang): (1,1,en) (2,2,en) (3,2,en) (4,1,de) (5,1,en) → groups in order of first appearance.
    expect(calls).toEqual([[100], [1, 5], [2, 3], [4]]);
    expect(a.y.shape).toEqual([2, 1]);
    expect(valuesOf(a.y)).toEqual([1, 4]);
    expect(valuesOf(b.y)).toEqual([6]);
    expect(valuesOf(c.y)).toEqual([1004, 5]);
  });

  const padInputs: Tensor[] = [{ name: 'x', dtype: 'FP32', shape: [1] }, { name: 'n', dtype: 'INT32', shape: [1] }];
  const padOutputs: Tensor[] = [{ name: 'seq', dtype: 'FP32', shape: [-1] }];
  /** `seq`: each row is its x repeated n times (n is the sub-batch's key); x = 666 answers INT32. */
  const repeat = async ({ x, n }: Kwargs): Promise<Kwargs> => {
    await sleep(1);
    const width = Number(n.data[0]);
    const data = new Float32Array(x.rows * width).map((_, i) => Number(x.data[Math.floor(i / width)]));
    if (x.data[0] === 666) return { seq: new NDArray('INT32', [x.rows, width], Int32Array.from(data)) };
    return { seq: new NDArray('FP32', [x.rows, width], data) };
  };

  test('ConstantPadder pads the sub-batches\' outputs to the largest shape before they are merged', async () => {
    const h = new Holder(batch(groupByValues('n', { padFn: new ConstantPadder(-1) })(repeat)));
    triton.bind({ modelName: 'padded', inferFunc: h.func, inputs: padInputs, outputs: padOutputs, config: { maxBatchSize: 8 } });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('padded', { x: f32([9]), n: i32([2]) }),
      () => [
        triton.infer('padded', { x: f32([1]), n: i32([1]) }),
        triton.infer('padded', { x: f32([2, 3]), n: i32([3, 3]) }),
        triton.infer('padded', { x: f32([4]), n: i32([2]) }),
      ],
    );
    const blocker = await first;
    expect(blocker.seq.shape).toEqual([1, 2]);
    expect(valuesOf(blocker.seq)).toEqual([9, 9]);
    const [a, b, c] = await Promise.all(rest);
    expect(a.seq.shape).toEqual([1, 3]);
    expect(valuesOf(a.seq)).toEqual([1, -1, -1]);
    expect(b.seq.shape).toEqual([2, 3]);
    expect(valuesOf(b.seq)).toEqual([2, 2, 2, 3, 3, 3]);
    expect(valuesOf(c.seq)).toEqual([4, 4, -1]);
    // Sub-batches whose outputs differ in datatype cannot be padded into one array.
    const mixed = await h.behind(
      () => triton.infer('padded', { x: f32([9]), n: i32([2]) }),
      () => [triton.infer('padded', { x: f32([666]), n: i32([1]) }), triton.infer('padded', { x: f32([5]), n: i32([2]) })],
    );
    for (const p of mixed.rest) {
      await expectRejects(p, 'INTERNAL',
        "model 'padded': groupByValues padFn: ConstantPadder: output 'seq' has datatype INT32 in one sub-batch and FP32 in another");
    }
  });

  test('without a padFn, sub-batch outputs of different shapes fail the batch with a hint', async () => {
    const h = new Holder(batch(groupByValues('n')(repeat)));
    triton.bind({ modelName: 'unpadded', inferFunc: h.func, inputs: padInputs, outputs: padOutputs, config: { maxBatchSize: 8 } });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('unpadded', { x: f32([9]), n: i32([2]) }),
      () => [triton.infer('unpadded', { x: f32([1]), n: i32([1]) }), triton.infer('unpadded', { x: f32([2]), n: i32([3]) })],
    );
    expect(valuesOf((await first).seq)).toEqual([9, 9]);
    for (const p of rest) {
      await expectRejects(p, 'INTERNAL', "model 'unpadded': groupByValues: output 'seq' is FP32[1,3] in one sub-batch and " +
        'FP32[1,1] in another; pass a padFn (e.g. new ConstantPadder())');
    }
  });

  test('above batch (on a request list), or with a key that is not an input, it is refused', async () => {
    const io: { inputs: Tensor[]; outputs: Tensor[] } = {
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
    };
    triton.bind({
      modelName: 'misplaced',
      // Deliberately misplaced (the types forbid it): a request list reaches groupByValues.
      inferFunc: groupByValues('x')(batch(({ x }) => ({ y: x })) as never) as never,
      ...io,
    });
    triton.bind({
      modelName: 'unknownKey',
      inferFunc: batch(groupByValues('x', 'nope')(({ x }) => ({ y: x }))),
      ...io,
    });
    await triton.run();
    await expectRejects(triton.infer('misplaced', { x: f32([1]) }), 'INVALID_ARG',
      "model 'misplaced': groupByValues: it must sit below batch");
    await expectRejects(triton.infer('unknownKey', { x: f32([1]) }), 'INVALID_ARG',
      "model 'unknownKey': groupByValues: no input named 'nope' (the model's inputs are x)");
    expectThrows(() => groupByValues('x', 3 as never), 'INVALID_ARG', 'groupByValues: keys must be input names');
  });
});

describe('fillOptionals', () => {
  const inputs: Tensor[] = [
    { name: 'x', dtype: 'FP32', shape: [2] },
    { name: 'scale', dtype: 'FP32', shape: [1], optional: true },
    { name: 'lang', dtype: 'BYTES', shape: [1], optional: true },
  ];
  const outputs: Tensor[] = [{ name: 'y', dtype: 'FP32', shape: [2] }, { name: 'lang', dtype: 'BYTES', shape: [1] }];

  test('missing inputs get the default, tiled to the request\'s batch size; present ones are kept', async () => {
    const seen: { scale: number[]; scaleShape: number[]; lang: string[] }[] = [];
    triton.bind({
      modelName: 'fill',
      inferFunc: fillOptionals({ scale: new Float32Array([10]), lang: new NDArray('BYTES', [1], [Buffer.from('en')]) })(
        groupByKeys(batch(({ x, scale, lang }) => {
          seen.push({ scale: valuesOf(scale), scaleShape: [...scale.shape], lang: stringsOf(lang) });
          return { y: Float32Array.from(x.data as Float32Array, (v, i) => v * Number(scale.data[Math.floor(i / 2)])), lang };
        }))),
      inputs,
      outputs,
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const a = await triton.infer('fill', { x: f32([1, 2, 3, 4], 2) });
    expect(seen[0]).toEqual({ scale: [10, 10], scaleShape: [2, 1], lang: ['en', 'en'] });
    expect(valuesOf(a.y)).toEqual([10, 20, 30, 40]);
    expect(stringsOf(a.lang)).toEqual(['en', 'en']);
    const b = await triton.infer('fill', { x: f32([1, 2], 2), scale: f32([3]), lang: str(['de']) });
    expect(seen[1]).toEqual({ scale: [3], scaleShape: [1, 1], lang: ['de'] });
    expect(valuesOf(b.y)).toEqual([3, 6]);
    expect(stringsOf(b.lang)).toEqual(['de']);
  });

  test('a non-batching model gets the default as it is', async () => {
    const shapes: number[][] = [];
    triton.bind({
      modelName: 'fillOne',
      inferFunc: fillOptionals({ scale: f32([4]).reshape([1]) })(sample(({ x, scale }) => {
        shapes.push([...scale.shape]);
        return { y: times(x, Number(scale.data[0])) };
      })),
      inputs: inputs.slice(0, 2),
      outputs: outputs.slice(0, 1),
      config: { batching: false },
    });
    await triton.run();
    const out = await triton.infer('fillOne', { x: new NDArray('FP32', [2], Float32Array.from([1, 2])) });
    expect(valuesOf(out.y)).toEqual([4, 8]);
    expect(shapes).toEqual([[1]]);
  });

  test('defaults that do not match the declared inputs fail the requests with INVALID_ARG naming the input', async () => {
    const identity = groupByKeys(batch(({ x }) => ({ y: x })));
    const bindWith = (modelName: string, defaults: Record<string, NDArray | Int32Array | Float32Array>): void => {
      triton.bind({ modelName, inferFunc: fillOptionals(defaults)(identity), inputs, outputs: outputs.slice(0, 1) });
    };
    bindWith('badDtype', { scale: new Int32Array([1]) });
    bindWith('badName', { nope: new Float32Array([1]) });
    bindWith('badShape', { scale: new NDArray('FP32', [2], new Float32Array(2)) });
    await triton.run();
    const x = f32([1, 2], 2);
    await expectRejects(triton.infer('badDtype', { x }), 'INVALID_ARG',
      "model 'badDtype': fillOptionals: the default for input 'scale' has datatype INT32, expected FP32");
    await expectRejects(triton.infer('badName', { x }), 'INVALID_ARG',
      "model 'badName': fillOptionals: no input named 'nope' (the model's inputs are x, scale, lang)");
    await expectRejects(triton.infer('badShape', { x }), 'INVALID_ARG',
      "model 'badShape': fillOptionals: the default for input 'scale' has shape [2], expected [1]");
    // Every call checks again (nothing was cached for a failed check).
    await expectRejects(triton.infer('badDtype', { x }), 'INVALID_ARG', 'has datatype INT32');
    expectThrows(() => fillOptionals({ scale: [1] as never }), 'INVALID_ARG',
      "fillOptionals: the default for 'scale' must be an NDArray or a TypedArray without the batch axis");
  });
});

describe('padBatch', () => {
  test('the callable sees the next preferred (or the max) batch size; each client gets its own rows', async () => {
    const seen: number[][] = [];
    const h = new Holder(batch(padBatch(({ x }) => {
      seen.push(valuesOf(x));
      return [times(x, 2)];
    })));
    triton.bind({
      modelName: 'padBatch',
      inferFunc: h.func,
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 8, batcher: { preferredBatchSize: [2, 4] } },
    });
    await triton.run();
    const round1 = await h.behind(
      () => triton.infer('padBatch', { x: f32([100]) }),
      () => [triton.infer('padBatch', { x: f32([1]) }), triton.infer('padBatch', { x: f32([2, 3]) })],
    );
    const blocker = await round1.first;
    expect(blocker.y.shape).toEqual([1, 1]);
    expect(valuesOf(blocker.y)).toEqual([200]);
    const [a, b] = await Promise.all(round1.rest);
    expect(valuesOf(a.y)).toEqual([2]);
    expect(b.y.shape).toEqual([2, 1]);
    expect(valuesOf(b.y)).toEqual([4, 6]);
    // A batch that already has a preferred size is not padded; one above the largest preferred
    // size (a single request of 5 rows: batches of several requests stop at 4) goes to maxBatchSize.
    const c = await triton.infer('padBatch', { x: f32([7, 8]) });
    expect(valuesOf(c.y)).toEqual([14, 16]);
    const d = await triton.infer('padBatch', { x: f32([4, 5, 6, 9, 10]) });
    expect(d.y.shape).toEqual([5, 1]);
    expect(valuesOf(d.y)).toEqual([8, 10, 12, 18, 20]);
    expect(h.batches).toEqual([[1], [1, 2], [2], [5]]);
    // 1 → 2, 3 → 4, 2 stays, 5 → 8 (maxBatchSize): the last row repeated.
    expect(seen).toEqual([[100, 100], [1, 2, 3, 3], [7, 8], [4, 5, 6, 9, 10, 10, 10, 10]]);
  });
});

describe('firstValue', () => {
  const inputs: Tensor[] = [{ name: 'x', dtype: 'FP32', shape: [1] }, { name: 't', dtype: 'FP32', shape: [1] }];
  const outputs: Tensor[] = [{ name: 'y', dtype: 'FP32', shape: [1] }];

  test('the selected input becomes its first row, squeezed to shape []; unequal rows fail the batch (strict)', async () => {
    const seen: { shape: number[]; value: number }[] = [];
    const h = new Holder(batch(firstValue('t')(({ x, t }) => {
      seen.push({ shape: [...t.shape], value: Number(t.data[0]) });
      return { y: times(x, Number(t.data[0])) };
    })));
    triton.bind({ modelName: 'temperature', inferFunc: h.func, inputs, outputs, config: { maxBatchSize: 8 } });
    await triton.run();
    const equal = await h.behind(
      () => triton.infer('temperature', { x: f32([1]), t: f32([0.5]) }),
      () => [triton.infer('temperature', { x: f32([1, 2]), t: f32([2, 2]) }), triton.infer('temperature', { x: f32([3]), t: f32([2]) })],
    );
    expect(valuesOf((await equal.first).y)).toEqual([0.5]);
    const [a, b] = await Promise.all(equal.rest);
    expect(valuesOf(a.y)).toEqual([2, 4]);
    expect(valuesOf(b.y)).toEqual([6]);
    expect(seen).toEqual([{ shape: [], value: 0.5 }, { shape: [], value: 2 }]);
    const unequal = await h.behind(
      () => triton.infer('temperature', { x: f32([1]), t: f32([1]) }),
      () => [triton.infer('temperature', { x: f32([1]), t: f32([2]) }), triton.infer('temperature', { x: f32([1]), t: f32([3]) })],
    );
    await unequal.first;
    for (const p of unequal.rest) {
      await expectRejects(p, 'INVALID_ARG', "model 'temperature': firstValue: the values of input 't' are not equal " +
        'across the batch (row 0 is [2], row 1 is [3])');
    }
  });

  test('strict: false takes the first row; squeezeSingleValues: false keeps its shape', async () => {
    const shapes: number[][] = [];
    const h = new Holder(batch(firstValue('t', { strict: false, squeezeSingleValues: false })(({ x, t }) => {
      shapes.push([...t.shape]);
      return { y: times(x, Number(t.data[0])) };
    })));
    triton.bind({ modelName: 'loose', inferFunc: h.func, inputs, outputs, config: { maxBatchSize: 8 } });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('loose', { x: f32([1]), t: f32([1]) }),
      () => [triton.infer('loose', { x: f32([1, 2]), t: f32([2, 9]) }), triton.infer('loose', { x: f32([3]), t: f32([3]) })],
    );
    await first;
    const [a, b] = await Promise.all(rest);
    expect(valuesOf(a.y)).toEqual([2, 4]);
    expect(valuesOf(b.y)).toEqual([6]);
    expect(shapes).toEqual([[1], [1]]);
  });

  test('on a request list each request\'s input is replaced; non-batching models and reserved keys are refused', async () => {
    triton.bind({
      modelName: 'perRequest',
      inferFunc: firstValue('t')((requests: Request[]) => requests.map((r) => ({
        y: times(r.data.x, Number(r.data.t.data[0])),
        tShape: new Int32Array(r.data.x.rows).fill(r.data.t.shape.length),
      }))),
      inputs,
      outputs: [...outputs, { name: 'tShape', dtype: 'INT32', shape: [1] }],
      config: { maxBatchSize: 8 },
    });
    triton.bind({
      modelName: 'noBatching',
      inferFunc: sample(firstValue('t')(({ x }) => ({ y: x }))),
      inputs,
      outputs,
      config: { batching: false },
    });
    triton.bind({ modelName: 'unknownFirst', inferFunc: batch(firstValue('temperature')(({ x }) => ({ y: x }))), inputs, outputs });
    await triton.run();
    const out = await triton.infer('perRequest', { x: f32([1, 2]), t: f32([4, 4]) });
    expect(valuesOf(out.y)).toEqual([4, 8]);
    expect(valuesOf(out.tShape)).toEqual([0, 0]);  // rank 0: squeezed
    await expectRejects(triton.infer('perRequest', { x: f32([1, 2]), t: f32([4, 5]) }), 'INVALID_ARG',
      "model 'perRequest': firstValue: the values of input 't' are not equal across the batch (row 0 is [4], row 1 is [5])");
    const vec = new NDArray('FP32', [1], new Float32Array([1]));
    await expectRejects(triton.infer('noBatching', { x: vec, t: vec }), 'INVALID_ARG',
      "model 'noBatching': firstValue: it can only be used with models that batch (maxBatchSize > 0)");
    await expectRejects(triton.infer('unknownFirst', { x: f32([1]), t: f32([1]) }), 'INVALID_ARG',
      "model 'unknownFirst': firstValue: no input named 'temperature' (the model's inputs are x, t)");
    expectThrows(() => firstValue('t', 'tritonContext'), 'INVALID_ARG',
      "firstValue: 'tritonContext' cannot be a key: the reserved names are tritonContext");
  });
});

describe('tritonContext', () => {
  test('the context arrives as inputs.tritonContext (and as the second argument) on every instance', async () => {
    const release = gate();
    const seen: { instance: number; model: string; same: boolean }[] = [];
    const f = batch(tritonContext(async ({ x, tritonContext: ctx }, second) => {
      await release.promise;
      seen.push({ instance: ctx.instanceIndex, model: ctx.modelConfig.name, same: ctx === second });
      return { y: x, instance: new Int32Array([ctx.instanceIndex]) };
    }));
    const requestKeys: string[][] = [];
    const outer: InferFunc = (requests, context) => {
      const result = f(requests, context);
      requestKeys.push(...requests.map((r) => Object.keys(r.data)));
      return result;
    };
    triton.bind({
      modelName: 'ctx',
      inferFunc: [outer, outer],
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }, { name: 'instance', dtype: 'INT32', shape: [1] }],
      config: { maxBatchSize: 1 },
    });
    await triton.run();
    const both = [triton.infer('ctx', { x: f32([1]) }), triton.infer('ctx', { x: f32([2]) })];
    await settleLoop();
    release.open();
    const [a, b] = await Promise.all(both);
    expect([valuesOf(a.y), valuesOf(b.y)]).toEqual([[1], [2]]);
    expect([valuesOf(a.instance), valuesOf(b.instance)]).toEqual([[0], [1]]);
    expect(seen.map((s) => [s.instance, s.model, s.same]).sort()).toEqual([[0, 'ctx', true], [1, 'ctx', true]]);
    // The requests' own inputs are not touched.
    expect(requestKeys).toEqual([['x'], ['x']]);
  });

  test('on a request list it passes the call through', async () => {
    triton.bind({
      modelName: 'ctxList',
      inferFunc: tritonContext((requests: Request[], context: TritonContext) => requests.map((r) => ({
        y: r.data.x,
        instance: new Int32Array([Array.isArray(requests) && !('tritonContext' in r.data) ? context.instanceIndex + 7 : -1]),
      }))),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }, { name: 'instance', dtype: 'INT32', shape: [1] }],
    });
    await triton.run();
    const out = await triton.infer('ctxList', { x: f32([3]) });
    expect(valuesOf(out.y)).toEqual([3]);
    expect(valuesOf(out.instance)).toEqual([7]);
  });
});

describe('the recommended stack', () => {
  test('fillOptionals → groupByKeys → batch → groupByValues → firstValue → tritonContext around an async function', async () => {
    const subCalls: { t: number; tShape: number[]; x: number[]; model: string }[] = [];
    let active = 0;
    let maxActive = 0;
    const h = new Holder(fillOptionals({ t: new Float32Array([1]) })(groupByKeys(batch(groupByValues('t')(firstValue('t')(
      tritonContext(async ({ x, t, tritonContext: ctx }) => {
        active++;
        maxActive = Math.max(maxActive, active);
        await sleep(1);
        active--;
        subCalls.push({ t: Number(t.data[0]), tShape: [...t.shape], x: valuesOf(x), model: ctx.modelConfig.name });
        return { y: times(x, Number(t.data[0])) };
      })))))));
    triton.bind({
      modelName: 'stack',
      inferFunc: h.func,
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }, { name: 't', dtype: 'FP32', shape: [1], optional: true }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    const { first, rest } = await h.behind(
      () => triton.infer('stack', { x: f32([1]), t: f32([5]) }),
      () => [
        triton.infer('stack', { x: f32([1, 2]) }),
        triton.infer('stack', { x: f32([3]), t: f32([2]) }),
        triton.infer('stack', { x: f32([4]), t: f32([2]) }),
        triton.infer('stack', { x: f32([5, 6]), t: f32([1, 2]) }),
      ],
    );
    expect(valuesOf((await first).y)).toEqual([5]);
    const results = await Promise.all(rest);
    expect(results.map((r) => valuesOf(r.y))).toEqual([[1, 2], [6], [8], [5, 12]]);
    // Without t the request cannot share a batch with those that carry it (native batch keys).
    expect(h.batches).toEqual([[1], [2], [1, 1, 2]]);
    expect(subCalls).toEqual([
      { t: 5, tShape: [], x: [1], model: 'stack' },
      { t: 1, tShape: [], x: [1, 2], model: 'stack' },
      { t: 2, tShape: [], x: [3, 4, 6], model: 'stack' },
      { t: 1, tShape: [], x: [5], model: 'stack' },
    ]);
    expect(maxActive).toBe(1);  // sub-batches run one after the other
  });
});
