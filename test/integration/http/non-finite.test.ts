/**
 * NaN and ±Infinity in JSON outputs travel as Triton writes them (the bare tokens NaN, Infinity,
 * -Infinity, which Python's json reads), and infernode's HTTP client reads them back; strings
 * that merely contain those words are left alone.
 */
import { HttpInferenceServerClient } from '../../../ts/client/http';
import { parseTritonJson } from '../../../ts/client/triton-json';
import { NDArray } from '../../../ts/tensor';
import { post, serve, type Served } from './http-helpers';

let s: Served;

beforeAll(async () => {
  s = await serve((triton) => triton.bind({
    modelName: 'odd',
    inferFunc: (requests) => requests.map(() => ({ OUT: new Float32Array([NaN, Infinity, -Infinity, 1.5]) })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
    config: { batching: false },
  }));
});

afterAll(async () => {
  await s.triton.stop();
});

test('JSON outputs carry NaN, Infinity and -Infinity as Triton writes them', async () => {
  const r = await post(s.port, '/v2/models/odd/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [1] }] });
  expect(r.status).toBe(200);
  expect(r.body.toString()).toContain('"data":[NaN,Infinity,-Infinity,1.5]');
});

test('the HTTP client reads them back as NaN and ±Infinity from a JSON answer', async () => {
  const client = new HttpInferenceServerClient(`127.0.0.1:${s.port}`, { binaryOutputs: false });
  try {
    const result = await client.infer({ modelName: 'odd', inputs: { IN: new NDArray('FP32', [1], new Float32Array([1])) } });
    expect(Array.from(result.outputs.OUT.data as Float32Array)).toEqual([NaN, Infinity, -Infinity, 1.5]);
  } finally {
    await client.close();
  }
});

test('parseTritonJson leaves strings alone and refuses what is not JSON even so', () => {
  expect(parseTritonJson('{"a":"NaN Infinity -Infinity \\" NaN","b":[NaN,-Infinity]}'))
    .toEqual({ a: 'NaN Infinity -Infinity " NaN', b: [NaN, -Infinity] });
  expect(parseTritonJson('[1,2]')).toEqual([1, 2]);
  expect(() => parseTritonJson('[NaN,')).toThrow(SyntaxError);
  expect(() => parseTritonJson('{bad}')).toThrow(SyntaxError);
});
