/**
 * FP16 and BF16 ONNX models served as TYPE_FP32 (issue 15): clients send and receive FP32, the
 * server converts to the model's type before ONNX Runtime runs and back after it (on the host
 * here: CPU instances). Values are checked against a JS rounding to nearest, ties to even,
 * written here independently of the native conversion. A real server on loopback (HTTP) serves
 * the models; the served config, metadata and statistics say FP32. Other datatype mismatches
 * still fail the load, and auto-completed configs keep the model's own types.
 */
import type { HttpInferenceServerClient as Client } from '../../../ts/client/http';
import { HttpInferenceServerClient } from '../../../ts/client/http';
import { NDArray } from '../../../ts/tensor';
import { addSubModel, identityModel } from '../../../ts/tools/onnx';
import type { Triton } from '../../../ts/triton';
import { expectRejects } from '../helpers';
import { serve } from '../http/http-helpers';
import { TempRepo, randomFloats, startRepoTriton } from './repo-helpers';

/** `v` rounded to nearest, ties to even. */
function roundEven(v: number): number {
  const floor = Math.floor(v);
  const rest = v - floor;
  if (rest !== 0.5) return rest < 0.5 ? floor : floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** `x` rounded to a float with `mantissa` fraction bits, exponents down to `minExp` (subnormals below), overflowing at `limit`. */
function roundTo(x: number, mantissa: number, minExp: number, limit: number): number {
  if (Number.isNaN(x) || !Number.isFinite(x) || x === 0) return x;
  const abs = Math.abs(x);
  let exp = Math.max(Math.floor(Math.log2(abs)), minExp);
  if (exp > minExp && 2 ** exp > abs) exp -= 1;
  if (2 ** (exp + 1) <= abs) exp += 1;
  const ulp = 2 ** (exp - mantissa);
  const rounded = roundEven(abs / ulp) * ulp;
  return Math.sign(x) * (rounded >= limit ? Infinity : rounded);
}

/** FP32 → FP16 → FP32. */
const f16 = (x: number): number => roundTo(Math.fround(x), 10, -14, 65536);
/** FP32 → BF16 → FP32. */
const bf16 = (x: number): number => roundTo(Math.fround(x), 7, -126, 2 ** 128);

const fp32 = (rows: number, width: number, values: ArrayLike<number>): NDArray => new NDArray('FP32', [rows, width], Float32Array.from(values));
const values = (a: NDArray): number[] => Array.from(a.data as Float32Array);

test('the JS reference rounds as FP16 and BF16 do', () => {
  expect([0, 1, 65504, 65519, 65520, 1e-8, 2 ** -25, 3 * 2 ** -25, 6.1e-5, 1 + 2 ** -11, 1 + 3 * 2 ** -11].map(f16))
    .toEqual([0, 1, 65504, 65504, Infinity, 0, 0, 2 ** -23, 1023 * 2 ** -24, 1, 1 + 2 ** -9]);
  expect([1 + 2 ** -8, 1 + 3 * 2 ** -8, -3].map(bf16)).toEqual([1, 1 + 2 ** -6, -3]);
});

describe('served as FP32 on a real server (HTTP on loopback)', () => {
  let repo: TempRepo;
  let triton: Triton;
  let client: Client;
  const logs: string[] = [];

  beforeAll(async () => {
    repo = new TempRepo('half');
    repo.onnx('half_add', 1, addSubModel('FP16', [7]));
    repo.config('half_add', `platform: "onnxruntime_onnx"
      max_batch_size: 8
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 7 ] }, { name: "INPUT1", data_type: TYPE_FP32, dims: [ 7 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 7 ] }, { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 7 ] } ]
      dynamic_batching { max_queue_delay_microseconds: 200000 }`);
    repo.onnx('half_id', 1, identityModel('FP16', [5]));
    repo.config('half_id', `platform: "onnxruntime_onnx"
      max_batch_size: 4
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 5 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 5 ] } ]`);
    repo.onnx('bf16_id', 1, identityModel('BF16', [7]));
    repo.config('bf16_id', `platform: "onnxruntime_onnx"
      max_batch_size: 8
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 7 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 7 ] } ]`);
    // Only the output declared FP32: the input keeps the model's FP16.
    repo.onnx('half_out', 1, identityModel('FP16', [3]));
    repo.config('half_out', `platform: "onnxruntime_onnx"
      max_batch_size: 4
      input [ { name: "INPUT0", data_type: TYPE_FP16, dims: [ 3 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 3 ] } ]`);
    repo.onnx('half_auto', 1, identityModel('FP16', [3]));
    const served = await serve((t) => {
      t.useRepository({ repositories: [repo.root], controlMode: 'none', pollSecs: 0, log: (line) => logs.push(line) });
    });
    triton = served.triton;
    client = new HttpInferenceServerClient(`127.0.0.1:${served.port}`);
  });

  afterAll(async () => {
    await client?.close();
    await triton?.stop();
    repo.cleanup();
  });

  test('FP16 add/sub: FP32 in, FP32 out, equal to the FP16-rounded arithmetic', async () => {
    // Operands whose FP16 sums and differences are exact in FP32: one rounding, at the output.
    const a = [0, 1, 65504, 65519, 1e-8, 5.96e-8, 6.1e-5, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 0.1, -2.5, 1000.3, 2047.5, 3.14159];
    const b = [0, 0.5, 0, 0, 0, 0, 0, 0, 0, 0.25, -1.75, 0.125, 0.5, -3];
    const x0 = fp32(2, 7, a);
    const x1 = fp32(2, 7, b);
    const result = await client.infer({ modelName: 'half_add', inputs: { INPUT0: x0, INPUT1: x1 } });
    expect(result.outputs.OUTPUT0.dtype).toBe('FP32');
    expect(result.outputs.OUTPUT0.shape).toEqual([2, 7]);
    expect(values(result.outputs.OUTPUT0)).toEqual(a.map((v, i) => f16(f16(v) + f16(b[i]))));
    expect(values(result.outputs.OUTPUT1)).toEqual(a.map((v, i) => f16(f16(v) - f16(b[i]))));
    expect(values(result.outputs.OUTPUT0).slice(0, 9)).toEqual([0, 1.5, 65504, 65504, 0, 2 ** -24, 1023 * 2 ** -24, 1, 1 + 2 ** -9]);
  });

  test('FP16 overflow gives Inf through the model', async () => {
    const result = await client.infer({ modelName: 'half_add', inputs: { INPUT0: fp32(1, 7, [65520, -1e6, 70000, 1, 2, 3, 4]), INPUT1: fp32(1, 7, [0, 0, 0, 0, 0, 0, 0]) } });
    expect(values(result.outputs.OUTPUT0)).toEqual([Infinity, -Infinity, Infinity, 1, 2, 3, 4]);
  });

  test('a batch of an odd row count (1 + 2 + 2 requests merged into 5 rows) is converted and split back', async () => {
    const rows = [1, 2, 2];
    const inputs = rows.map((r, i) => [fp32(r, 7, randomFloats(r * 7, 10 + i).map((v) => v * 10 - 5)), fp32(r, 7, new Float32Array(r * 7).fill(0.5))]);
    const results = await Promise.all(inputs.map(([INPUT0, INPUT1]) => triton.infer('half_add', { INPUT0, INPUT1 })));
    results.forEach((out, i) => {
      const x = values(inputs[i][0]);
      expect(out.OUTPUT0.shape).toEqual([rows[i], 7]);
      expect(values(out.OUTPUT0)).toEqual(x.map((v) => f16(f16(v) + 0.5)));
      expect(values(out.OUTPUT1)).toEqual(x.map((v) => f16(f16(v) - 0.5)));
    });
    const stats = triton.model('half_add').stats();
    expect(stats.batchStats.map((s) => s.batchSize)).toContain(5);
    expect(stats.computeInput.count).toBeGreaterThan(0);
  });

  test('FP16 identity: edge values, NaN, -0 and ±Inf survive the round trip', async () => {
    const x = [0, -0, NaN, Infinity, -Infinity, 65520, 5.96e-8, 2 ** -25, 3 * 2 ** -25, 6.1e-5, 1e-8, -65504, 0.1, 1 / 3, 1e-7];
    const out = await triton.infer('half_id', { INPUT0: fp32(3, 5, x) });
    const got = values(out.OUTPUT0);
    expect(Object.is(got[1], -0)).toBe(true);
    expect(Number.isNaN(got[2])).toBe(true);
    expect(got).toEqual(x.map(f16));
  });

  test('BF16 identity: ties to even, one row and an odd number of rows', async () => {
    const ties = [1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -(1 + 2 ** -8), 3e38, 1e-40, 0.1];
    const one = await client.infer({ modelName: 'bf16_id', inputs: { INPUT0: fp32(1, 7, ties) } });
    expect(values(one.outputs.OUTPUT0)).toEqual(ties.map(bf16));
    expect(values(one.outputs.OUTPUT0).slice(0, 4)).toEqual([1, 1 + 2 ** -6, 1 + 2 ** -7, -1]);
    const x = randomFloats(5 * 7, 3).map((v) => (v - 0.5) * 1e4);
    const five = await triton.infer('bf16_id', { INPUT0: fp32(5, 7, x) });
    expect(values(five.OUTPUT0)).toEqual(Array.from(x, bf16));
  });

  test('only the tensors declared FP32 are converted', async () => {
    const half = new NDArray('FP16', [1, 3], new Uint16Array([0x3c00, 0x3555, 0xfc00]));  // 1, 0.333, -Inf
    const out = await triton.infer('half_out', { INPUT0: half });
    expect(out.OUTPUT0.dtype).toBe('FP32');
    expect(values(out.OUTPUT0)).toEqual([1, 0.25 * (1 + 0x155 / 1024), -Infinity]);
  });

  test('the served config, metadata and statistics show FP32; the load log names the cast tensors once', async () => {
    const metadata = await client.getModelMetadata('half_add');
    expect(metadata.inputs.map((t) => t.datatype)).toEqual(['FP32', 'FP32']);
    expect(metadata.outputs.map((t) => t.datatype)).toEqual(['FP32', 'FP32']);
    const config = await client.getModelConfig('bf16_id') as { input: { data_type: string }[]; output: { data_type: string }[] };
    expect(config.input[0].data_type).toBe('TYPE_FP32');
    expect(config.output[0].data_type).toBe('TYPE_FP32');
    const stats = await client.getInferenceStatistics('half_add');
    expect(stats.model_stats[0]).toMatchObject({ name: 'half_add' });
    const cast = logs.filter((l) => l.includes('serves FP32 for'));
    expect(cast).toEqual(expect.arrayContaining([
      "infernode: model 'half_add' serves FP32 for input 'INPUT0' (FP16), input 'INPUT1' (FP16), output 'OUTPUT0' (FP16), " +
        "output 'OUTPUT1' (FP16): converted on the host",
      "infernode: model 'bf16_id' serves FP32 for input 'INPUT0' (BF16), output 'OUTPUT0' (BF16): converted on the host",
      "infernode: model 'half_out' serves FP32 for output 'OUTPUT0' (FP16): converted on the host",
    ]));
    // Once per model (half_add, half_id, bf16_id, half_out), and none for the auto-completed one.
    expect(cast).toHaveLength(4);
    expect(cast.some((l) => l.includes('half_auto'))).toBe(false);
  });

  test('auto-completion keeps the model\'s own FP16 (no cast)', async () => {
    const model = triton.model('half_auto');
    expect(model.config.inputs[0].dtype).toBe('FP16');
    expect(model.config.outputs[0].dtype).toBe('FP16');
    const out = await triton.infer('half_auto', { INPUT0: new NDArray('FP16', [1, 3], new Uint16Array([0x3c00, 0x0001, 0x7bff])) });
    expect(out.OUTPUT0.dtype).toBe('FP16');
    expect(Array.from(out.OUTPUT0.data as Uint16Array)).toEqual([0x3c00, 0x0001, 0x7bff]);
  });
});

describe('every other datatype mismatch still fails the load, naming the tensor', () => {
  let repo: TempRepo;
  beforeEach(() => { repo = new TempRepo('half-refused'); });
  afterEach(() => repo.cleanup());

  test.each([
    ['FP16', 'input', 'TYPE_INT32', "configuration expects datatype TYPE_INT32 for input 'INPUT0', model provides TYPE_FP16"],
    ['FP16', 'input', 'TYPE_FP64', "configuration expects datatype TYPE_FP64 for input 'INPUT0', model provides TYPE_FP16"],
    ['BF16', 'input', 'TYPE_FP16', "configuration expects datatype TYPE_FP16 for input 'INPUT0', model provides TYPE_BF16"],
    ['FP16', 'output', 'TYPE_BF16', "configuration expects datatype TYPE_BF16 for output 'OUTPUT0', model provides TYPE_FP16"],
    ['FP32', 'input', 'TYPE_FP16', "configuration expects datatype TYPE_FP16 for input 'INPUT0', model provides TYPE_FP32"],
  ] as const)('a %s model with its %s declared %s', async (modelType, kind, declared, message) => {
    repo.onnx('m', 1, identityModel(modelType, [3]));
    repo.config('m', `platform: "onnxruntime_onnx"\nmax_batch_size: 4\n` +
      `${kind} [ { name: "${kind === 'input' ? 'INPUT0' : 'OUTPUT0'}", data_type: ${declared}, dims: [ 3 ] } ]`);
    const { triton } = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    try {
      await expectRejects(triton.loadModel('m'), 'INVALID_ARG', message);
    } finally {
      await triton.stop();
    }
  });
});
