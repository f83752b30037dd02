/**
 * triton.infer() takes the input forms ModelClient.inferSample takes: data without a shape (a
 * bare TypedArray, a list of strings, `{ data }`) is one sample, shaped by the declared dims
 * with the batch axis added when the model batches, and the output keeps that batch axis (as
 * an NDArray would). Data that cannot make one sample is INVALID_ARG naming the model, the input
 * and the shape expected. Through the real in-process path: bound models, the native queue.
 */
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import { expectRejects } from './helpers';
import { echo } from './http/http-helpers';

let triton: Triton;

function bindEcho(modelName: string, dtype: 'FP32' | 'BOOL' | 'BYTES' | 'FP16', shape: number[]): void {
  triton.bind({
    modelName, inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype, shape }], outputs: [{ name: 'OUT', dtype, shape }],
    config: { maxBatchSize: 8 },
  });
}

beforeAll(async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  bindEcho('four', 'FP32', [4]);
  bindEcho('free', 'FP32', [-1]);
  bindEcho('matrix', 'FP32', [2, -1]);
  bindEcho('two_free', 'FP32', [-1, -1]);
  triton.bind({
    modelName: 'unbatched', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { batching: false },
  });
  bindEcho('flags', 'BOOL', [3]);
  bindEcho('half', 'FP16', [2]);
  bindEcho('text', 'BYTES', [-1]);
  await triton.run();
});

afterAll(async () => {
  await triton.stop();
});

test('a bare TypedArray is one sample: the batch axis is added for a batching model', async () => {
  const { OUT } = await triton.infer('four', { IN: new Float32Array([1, 2, 3, 4]) });
  expect(OUT.shape).toEqual([1, 4]);
  expect(Array.from(OUT.data as Float32Array)).toEqual([1, 2, 3, 4]);
});

test('a variable dim is resolved from the element count', async () => {
  expect((await triton.infer('free', { IN: new Float32Array(5) })).OUT.shape).toEqual([1, 5]);
  expect((await triton.infer('matrix', { IN: new Float32Array(6) })).OUT.shape).toEqual([1, 2, 3]);
});

test('a model that does not batch gets its declared dims, without a batch axis', async () => {
  expect((await triton.infer('unbatched', { IN: new Float32Array(3) })).OUT.shape).toEqual([3]);
});

test('{ data } without a shape is one sample too; with a shape, the shape is kept', async () => {
  expect((await triton.infer('four', { IN: { data: new Float32Array(4) } })).OUT.shape).toEqual([1, 4]);
  expect((await triton.infer('four', { IN: { data: new Float32Array(8), shape: [2, 4] } })).OUT.shape).toEqual([2, 4]);
  expect((await triton.infer('four', { IN: new NDArray('FP32', [2, 4], new Float32Array(8)) })).OUT.shape).toEqual([2, 4]);
});

test('BOOL and FP16 take their arrays (Uint8Array, Uint16Array) as the declared datatype', async () => {
  const flags = await triton.infer('flags', { IN: new Uint8Array([1, 0, 1]) });
  expect([flags.OUT.dtype, flags.OUT.shape]).toEqual(['BOOL', [1, 3]]);
  const half = await triton.infer('half', { IN: new Uint16Array([0x3c00, 0x4000]) });
  expect([half.OUT.dtype, half.OUT.shape]).toEqual(['FP16', [1, 2]]);
});

test('a list of strings is one BYTES sample', async () => {
  const { OUT } = await triton.infer('text', { IN: ['a', 'bc'] });
  expect(OUT.shape).toEqual([1, 2]);
  expect((OUT.data as Uint8Array[]).map((b) => Buffer.from(b).toString())).toEqual(['a', 'bc']);
});

test('elements that cannot make one sample: INVALID_ARG naming the model, the input and the shape expected', async () => {
  await expectRejects(triton.infer('four', { IN: new Float32Array(3) }), 'INVALID_ARG',
    "input 'IN' for model 'four': 3 elements without a shape are one sample of shape [4] (the batch axis is added), " +
    'which they do not fill; give the shape: { data, shape: [1,4] } or an NDArray');
  await expectRejects(triton.infer('matrix', { IN: new Float32Array(5) }), 'INVALID_ARG',
    "input 'IN' for model 'matrix': 5 elements without a shape are one sample of shape [2,-1]");
  await expectRejects(triton.infer('two_free', { IN: new Float32Array(4) }), 'INVALID_ARG',
    'one sample of shape [-1,-1] (the batch axis is added), which has more than one variable dimension; ' +
    'give the shape: { data, shape: [1,n,n] } or an NDArray');
});
