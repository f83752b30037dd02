/**
 * bind(): the callable's inputs follow the declared inputs, and what it returns is checked
 * against the declared outputs (names and datatypes). Compiled by types.test.ts, never run.
 */
import { expectTypeOf } from 'expect-type';
import {
  NDArray, Triton, batch, sample, defineModel, type Request, type InputsOf, type TensorData, type Tensor, type TypedArray,
} from '../../ts/index';

declare const triton: Triton;

// The README's "Bind a function" example, as TypeScript: `a`, `b` are Float32Array batches.
triton.bind({
  modelName: 'AddSub',
  inferFunc: batch(({ a, b }) => {
    expectTypeOf(a).toEqualTypeOf<NDArray<Float32Array>>();
    const add = a.data.map((v, i) => v + b.data[i]);
    const sub = a.data.map((v, i) => v - b.data[i]);
    return { add: new NDArray('FP32', a.shape, add), sub: new NDArray('FP32', a.shape, sub) };
  }),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'sub', dtype: 'FP32', shape: [-1] }],
  config: { maxBatchSize: 64 },
});

// Each datatype's array: INT64/UINT64 BigInt64Array/BigUint64Array, BYTES one Uint8Array per
// element, BOOL one byte per element, FP16/BF16 their 16-bit patterns; a constructor as dtype.
triton.bind({
  modelName: 'kinds',
  inferFunc: (requests) => requests.map((r) => {
    expectTypeOf(r.data.i64.data).toEqualTypeOf<BigInt64Array>();
    expectTypeOf(r.data.u64.data).toEqualTypeOf<BigUint64Array>();
    expectTypeOf(r.data.text.data).toEqualTypeOf<Uint8Array[]>();
    expectTypeOf(r.data.flag.data).toEqualTypeOf<Uint8Array>();
    expectTypeOf(r.data.half.data).toEqualTypeOf<Uint16Array>();
    expectTypeOf(r.data.f64.data).toEqualTypeOf<Float64Array>();
    expectTypeOf(r.data.opt).toEqualTypeOf<NDArray<Int32Array> | undefined>();
    const sum = r.data.i64.data.reduce((acc, v) => acc + v, 0n);  // bigint arithmetic compiles
    return { total: new BigInt64Array([sum]), echo: r.data.text, same: r.data.flag.data };
  }),
  inputs: [
    { name: 'i64', dtype: 'INT64', shape: [-1] }, { name: 'u64', dtype: 'UINT64', shape: [-1] },
    { name: 'text', dtype: 'BYTES', shape: [1] }, { name: 'flag', dtype: 'BOOL', shape: [1] },
    { name: 'half', dtype: 'FP16', shape: [2] }, { name: 'f64', dtype: Float64Array, shape: [1] },
    { name: 'opt', dtype: 'INT32', shape: [1], optional: true },
  ],
  outputs: [
    { name: 'total', dtype: 'INT64', shape: [1] }, { name: 'echo', dtype: 'BYTES', shape: [1] },
    { name: 'same', dtype: 'BOOL', shape: [1] },
  ],
});

// Inputs the server adds (a sequence model's state) are reachable by name, untyped.
triton.bind({
  modelName: 'running_sum',
  inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
  outputs: [{ name: 'sum', dtype: 'FP32', shape: [1] }],
  config: { maxBatchSize: 8, sequenceBatcher: { states: [{ inputName: 'sum_in', outputName: 'sum_out', dtype: 'FP32', shape: [1] }] } },
  inferFunc: (requests) => requests.map((r) => {
    expectTypeOf(r.data.sum_in).toEqualTypeOf<NDArray>();
    const sum = new Float32Array([Number(r.data.sum_in.data[0]) + r.data.x.data[0]]);
    return { sum };
  }),
});

// A decoupled generator: each step's outputs are checked too.
triton.bind({
  modelName: 'Countdown',
  inferFunc: function* (requests) {
    const starts = requests.map((r) => r.data.N.data[0]);
    for (let step = 0; step < Math.max(...starts); step++) {
      yield starts.map((n) => (step < n ? { LEFT: new Int32Array([n - step - 1]) } : null));
    }
  },
  inputs: [{ name: 'N', dtype: 'INT32', shape: [1] }],
  outputs: [{ name: 'LEFT', dtype: 'INT32', shape: [1] }],
  config: { decoupled: true, maxBatchSize: 8 },
});

// A misspelled output name does not compile: returned alone...
triton.bind({
  modelName: 'typo-alone',
  // @ts-expect-error 'ad' is not a declared output
  inferFunc: batch(({ a }) => ({ ad: a })),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }],
});

// ...or beside the declared ones, through batch, sample or on its own, sync or async.
triton.bind({
  modelName: 'typo-beside',
  // @ts-expect-error 'sbu' is not a declared output
  inferFunc: batch(({ a }) => ({ add: a, sbu: a })),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'sub', dtype: 'FP32', shape: [-1] }],
});
triton.bind({
  modelName: 'typo-sample-async',
  // @ts-expect-error 'sbu' is not a declared output
  inferFunc: sample(async ({ a }) => ({ add: a, sbu: a })),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'sub', dtype: 'FP32', shape: [-1] }],
});
triton.bind({
  modelName: 'typo-requests',
  // @ts-expect-error 'sbu' is not a declared output
  inferFunc: (requests) => requests.map((r) => ({ add: r.data.a, sbu: r.data.a })),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'sub', dtype: 'FP32', shape: [-1] }],
});
triton.bind({
  modelName: 'typo-generator',
  // @ts-expect-error 'LFT' is not a declared output
  inferFunc: function* (requests) {
    yield requests.map(() => ({ LFT: new Int32Array([1]) }));
  },
  inputs: [{ name: 'N', dtype: 'INT32', shape: [1] }],
  outputs: [{ name: 'LEFT', dtype: 'INT32', shape: [1] }],
  config: { decoupled: true },
});

// An output of another datatype does not compile (an NDArray or a bare TypedArray).
triton.bind({
  modelName: 'wrong-dtype',
  // @ts-expect-error INT64 output 'count' returned as a Float32Array
  inferFunc: batch(({ a }) => ({ count: a.data })),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'count', dtype: 'INT64', shape: [-1] }],
});
triton.bind({
  modelName: 'wrong-dtype-ndarray',
  // @ts-expect-error FP32 output 'y' returned as an NDArray of Int32Array
  inferFunc: batch(() => ({ y: new NDArray('INT32', [1], new Int32Array(1)) })),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
});

// Declared inputs carry their datatype's element type.
triton.bind({
  modelName: 'input-kinds',
  inferFunc: batch(({ a }) => {
    // @ts-expect-error Float32Array data holds numbers, not bigints
    const big: bigint = a.data[0];
    return { y: a };
  }),
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
});

// Untyped usage keeps working: specs built at run time, untyped requests and NDArrays.
const specs: Tensor[] = [{ name: 'IN', dtype: 'FP32', shape: [-1] }];
triton.bind({
  modelName: 'untyped',
  inferFunc: (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN, ANY: r.data.IN })),
  inputs: specs,
  outputs: specs,
});
triton.bind({
  modelName: 'untyped-requests',
  // An untyped NDArray passed through is checked at run time only.
  inferFunc: (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN })),
  inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
});
declare const someArray: TypedArray;
triton.bind({
  modelName: 'untyped-array',
  // A TypedArray of unknown kind: cast to the declared datatype at run time, as before.
  inferFunc: (requests) => requests.map(() => ({ OUT: someArray })),
  inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
});
expectTypeOf<InputsOf<Tensor[]>>().toEqualTypeOf<Record<string, NDArray>>();
expectTypeOf<NDArray['data']>().toEqualTypeOf<TensorData>();

// defineModel: one spec for bind and for the types of triton.infer.
const Scale = defineModel({
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }, { name: 'ids', dtype: 'INT64', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }, { name: 'tokens', dtype: 'BYTES', shape: [-1] }],
});
triton.bind({
  modelName: 'Scale',
  ...Scale,
  inferFunc: batch(({ x }) => ({ y: x.data.map((v) => v * 2) })),
});
