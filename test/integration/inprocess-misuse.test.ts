/**
 * In-process misuse gets the InferenceServerError the README promises, checked before anything
 * is queued: INVALID_ARG naming the input and model for malformed inputs and options, and a
 * model that returns the wrong amount of data is the model's fault (INTERNAL, naming the model
 * and the output), not the client's.
 */
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import { expectRejects } from './helpers';
import { echo } from './http/http-helpers';

let triton: Triton;

beforeAll(async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  triton.bind({
    modelName: 'echo', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 4 },
  });
  triton.bind({
    modelName: 'short', inferFunc: (requests) => requests.map(() => ({ OUT: new Float32Array(5) })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [16] }],
    config: { maxBatchSize: 4 },
  });
  await triton.run();
});

afterAll(async () => {
  await triton.stop();
});

const ONE = new NDArray('FP32', [1, 3], new Float32Array(3));
const FORMS = 'expected an NDArray, a TypedArray, or { data, shape?, dtype? }';

test.each([
  ['a plain array of numbers', [1, 2, 3], "input 'IN' for model 'echo': a plain array of numbers has no datatype"],
  ['a shape given as a string', { dtype: 'FP32', shape: '3', data: new Float32Array(3) }, 'its shape must be an array of non-negative integers, got "3"'],
  ['a negative dimension', { dtype: 'FP32', shape: [-3], data: new Float32Array(3) }, 'got [-3]'],
  ['null', null, "input 'IN' for model 'echo': got null"],
  ['a number', 7, 'got number'],
  ['parts without data', { dtype: 'FP32', shape: [3] }, 'it has no data'],
])('%s as an input is INVALID_ARG naming the input and model', async (_what, value, message) => {
  const err = await expectRejects(triton.infer('echo', { IN: value as never }), 'INVALID_ARG', message);
  expect(err.message).toContain(FORMS);
});

test('inputs that are not an object are INVALID_ARG', async () => {
  await expectRejects(triton.infer('echo', null as never), 'INVALID_ARG', "request for model 'echo': inputs must be an object of named inputs, got null");
  await expectRejects(triton.infer('echo', [ONE] as never), 'INVALID_ARG', 'got an array');
});

test('a signal that is not an AbortSignal is refused before the request is queued', async () => {
  const before = triton.model('echo').stats().inferenceCount;
  await expectRejects(triton.infer('echo', { IN: ONE }, { signal: {} as AbortSignal }), 'INVALID_ARG',
    "request for model 'echo': options.signal must be an AbortSignal");
  expect(triton.model('echo').stats().inferenceCount).toBe(before);
  // A real one still works.
  const out = await triton.infer('echo', { IN: ONE }, { signal: new AbortController().signal });
  expect(out.OUT.shape).toEqual([1, 3]);
});

test('a model returning too few elements fails INTERNAL, naming the model and the output', async () => {
  await expectRejects(triton.infer('short', { IN: ONE }), 'INTERNAL',
    "model 'short': output 'OUT': FP32 tensor of shape [1,16] needs 16 elements, got 5");
});

test('one sample without its batch axis: Triton\'s text, then how to give the batch axis', async () => {
  triton.bind({
    modelName: 'four', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [4] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
    config: { maxBatchSize: 4 },
  });
  await expectRejects(triton.infer('four', { IN: new NDArray('FP32', [4], new Float32Array(4)) }), 'INVALID_ARG',
    "unexpected shape for input 'IN' for model 'four'. Expected [-1,4], got [4] (one sample without the batch dimension: give it shape [1,4])");
  // (A bare TypedArray, with no shape, is one sample: the batch axis is added; inprocess-input-forms.test.ts.)
  // A shape that is wrong in another way gets Triton's text alone.
  await expectRejects(triton.infer('four', { IN: new NDArray('FP32', [1, 3], new Float32Array(3)) }), 'INVALID_ARG',
    /Expected \[-1,4\], got \[1,3\]$/);
});
