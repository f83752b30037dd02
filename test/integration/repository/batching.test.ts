/**
 * Each request's batched result equals its unbatched result. The same ONNX files are served
 * twice: without dynamic batching (every request runs alone) and with a batcher that merges
 * the concurrent requests into one ONNX Runtime run. The MLP's matrix products may sum in a
 * different order for another batch size (ONNX Runtime does not promise bitwise equality), so
 * it is compared within 1e-6 relative; copies (Identity) are compared bit for bit.
 */
import { NDArray } from '../../../ts/tensor';
import { identityModel, mlpModel, mlpWeights } from '../../../ts/tools/onnx';
import type { Triton } from '../../../ts/triton';
import { TempRepo, randomFloats, startRepoTriton } from './repo-helpers';

const LAYERS = [32, 64, 64, 10];
const SEED = 11;
/** Rows per request: 12 in all, the batched model's preferred batch size. */
const ROWS = [1, 2, 1, 3, 1, 4];

let repo: TempRepo;
let triton: Triton;

beforeAll(async () => {
  repo = new TempRepo('batching');
  const mlp = mlpModel(LAYERS, SEED);
  const io = `
    input [ { name: "input", data_type: TYPE_FP32, dims: [ ${LAYERS[0]} ] } ]
    output [ { name: "logits", data_type: TYPE_FP32, dims: [ ${LAYERS[LAYERS.length - 1]} ] } ]
    instance_group [ { count: 1, kind: KIND_CPU } ]`;
  repo.onnx('mlp_alone', 1, mlp);
  repo.config('mlp_alone', `platform: "onnxruntime_onnx"\nmax_batch_size: 16\n${io}`);
  repo.onnx('mlp_batched', 1, mlp);
  repo.config('mlp_batched', `platform: "onnxruntime_onnx"\nmax_batch_size: 16\n${io}
    dynamic_batching { preferred_batch_size: [ 12 ], max_queue_delay_microseconds: 10000000 }`);
  const identity = identityModel('FP32', [5]);
  repo.onnx('copy_alone', 1, identity);
  repo.config('copy_alone', 'platform: "onnxruntime_onnx"\nmax_batch_size: 16');
  repo.onnx('copy_batched', 1, identity);
  repo.config('copy_batched', `platform: "onnxruntime_onnx"\nmax_batch_size: 16
    dynamic_batching { preferred_batch_size: [ 12 ], max_queue_delay_microseconds: 10000000 }`);
  repo.onnx('var_len', 1, identityModel('FP32', ['length']));
  repo.config('var_len', `platform: "onnxruntime_onnx"\nmax_batch_size: 8
    dynamic_batching { max_queue_delay_microseconds: 100000 }`);
  repo.onnx('copy_eager', 1, identity);
  repo.config('copy_eager', 'platform: "onnxruntime_onnx"\nmax_batch_size: 16\ndynamic_batching { }');
  ({ triton } = await startRepoTriton(repo.root));
});

afterAll(async () => {
  await triton?.stop();
  repo.cleanup();
});

function requestInputs(width: number, seedBase: number): NDArray[] {
  return ROWS.map((rows, i) => new NDArray('FP32', [rows, width], randomFloats(rows * width, seedBase + i)));
}

/** The MLP in float64 from the same weights: the reference the engine must approach. */
function referenceMlp(x: Float32Array, rows: number): Float64Array {
  const { weights, biases } = mlpWeights(LAYERS, SEED);
  let current = Float64Array.from(x);
  for (let l = 0; l + 1 < LAYERS.length; l++) {
    const [fanIn, fanOut] = [LAYERS[l], LAYERS[l + 1]];
    const next = new Float64Array(rows * fanOut);
    for (let r = 0; r < rows; r++) {
      for (let o = 0; o < fanOut; o++) {
        let sum = biases[l][o];
        for (let i = 0; i < fanIn; i++) sum += current[r * fanIn + i] * weights[l][i * fanOut + o];
        next[r * fanOut + o] = l + 2 < LAYERS.length ? Math.max(0, sum) : sum;
      }
    }
    current = next;
  }
  return current;
}

/** Runs the requests one after another: no two are ever in the same batch. */
async function oneByOne(model: string, inputs: NDArray[], name: string): Promise<NDArray[]> {
  const outs: NDArray[] = [];
  for (const input of inputs) outs.push(Object.values(await triton.infer(model, { [name]: input }))[0]);
  return outs;
}

test('the MLP: requests merged into one batch get the results they get alone (1e-6 relative), and the float64 reference within 1e-5', async () => {
  const inputs = requestInputs(LAYERS[0], 100);
  const alone = await oneByOne('mlp_alone', inputs, 'input');
  const aloneStats = triton.model('mlp_alone').stats();
  // Without dynamic batching every request ran alone: one execution per request, of its own rows.
  expect(aloneStats.executionCount).toBe(ROWS.length);
  expect(aloneStats.batchStats.map((s) => [s.batchSize, s.computeInfer.count]).sort((a, b) => a[0] - b[0]))
    .toEqual([[1, 3], [2, 1], [3, 1], [4, 1]]);

  const batched = await Promise.all(inputs.map((input) => triton.infer('mlp_batched', { input })));
  const stats = triton.model('mlp_batched').stats();
  // The batcher merged all six requests (12 rows) into one ONNX Runtime run.
  expect(stats.executionCount).toBe(1);
  expect(stats.inferenceCount).toBe(12);
  expect(stats.batchStats.map((s) => [s.batchSize, s.computeInfer.count])).toEqual([[12, 1]]);

  let maxRelative = 0;
  batched.forEach((out, i) => {
    const got = out.logits.data as Float32Array;
    const ref = alone[i].data as Float32Array;
    expect(out.logits.shape).toEqual([ROWS[i], LAYERS[LAYERS.length - 1]]);
    expect(alone[i].shape).toEqual(out.logits.shape);
    const reference = referenceMlp(inputs[i].data as Float32Array, ROWS[i]);
    for (let k = 0; k < got.length; k++) {
      const scale = Math.max(Math.abs(got[k]), Math.abs(ref[k]), 1e-30);
      maxRelative = Math.max(maxRelative, Math.abs(got[k] - ref[k]) / scale);
      expect(Math.abs(got[k] - reference[k])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(reference[k])));
    }
  });
  expect(maxRelative).toBeLessThanOrEqual(1e-6);
});

test('Identity: requests merged into one batch get exactly the bits they get alone', async () => {
  const inputs = requestInputs(5, 200);
  // NaN payloads, -0 and denormals must survive the batch buffers unchanged.
  const special = new Uint32Array([0x7fc00001, 0x80000000, 0x00000001, 0xff800000, 0x7f7fffff]);
  (inputs[0].data as Float32Array).set(new Float32Array(special.buffer));
  const alone = await oneByOne('copy_alone', inputs, 'INPUT0');
  const batched = await Promise.all(inputs.map((INPUT0) => triton.infer('copy_batched', { INPUT0 })));
  expect(triton.model('copy_batched').stats().batchStats.map((s) => s.batchSize)).toEqual([12]);
  expect(triton.model('copy_alone').stats().executionCount).toBe(ROWS.length);
  const bytes = (a: NDArray): Buffer => Buffer.from((a.data as Float32Array).buffer, (a.data as Float32Array).byteOffset, a.size * 4);
  batched.forEach((out, i) => {
    expect(bytes(out.OUTPUT0)).toEqual(bytes(inputs[i]));
    expect(bytes(alone[i])).toEqual(bytes(inputs[i]));
  });
});

test('concurrent bursts larger than max_batch_size are split into batches and still answer every request with its own rows', async () => {
  // 40 requests of 1–4 rows against max_batch_size 16, no queue delay.
  const inputs = Array.from({ length: 40 }, (_, i) => new NDArray('FP32', [1 + (i % 4), 5], randomFloats((1 + (i % 4)) * 5, 300 + i)));
  const outs = await Promise.all(inputs.map((INPUT0) => triton.infer('copy_eager', { INPUT0 })));
  outs.forEach((out, i) => expect(out.OUTPUT0.data).toEqual(inputs[i].data));
  const stats = triton.model('copy_eager').stats();
  const executions = stats.executionCount;
  expect(stats.inferenceCount).toBe(100);
  // 100 rows need at least 7 runs of ≤ 16 rows; none may exceed max_batch_size.
  expect(executions).toBeGreaterThanOrEqual(7);
  expect(Math.max(...stats.batchStats.map((s) => s.batchSize))).toBeLessThanOrEqual(16);
});

test('variable-length inputs: only requests of the same shape share a batch, and each gets its own shape back', async () => {
  const inputs = [[1, 3], [2, 3], [1, 5], [3, 3]].map(([rows, len], i) => new NDArray('FP32', [rows, len], randomFloats(rows * len, 400 + i)));
  const outs = await Promise.all(inputs.map((INPUT0) => triton.infer('var_len', { INPUT0 })));
  outs.forEach((out, i) => {
    expect(out.OUTPUT0.shape).toEqual(inputs[i].shape);
    expect(out.OUTPUT0.data).toEqual(inputs[i].data);
  });
  const stats = triton.model('var_len').stats();
  expect(stats.inferenceCount).toBe(7);
  // In queue order: [1,3] and [2,3] run together (3 rows); the [1,5] request ends that batch
  // (Triton's rule: a batch holds one shape) and runs alone; then [3,3] runs alone.
  expect(stats.executionCount).toBe(3);
  expect(stats.batchStats.map((s) => [s.batchSize, s.computeInfer.count])).toEqual([[1, 1], [3, 2]]);
});
