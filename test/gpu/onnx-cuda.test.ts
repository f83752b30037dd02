/**
 * ONNX models on ONNX Runtime's CUDA execution provider: the same model loaded as KIND_GPU and
 * KIND_CPU gives the same answers (within float tolerance) for single requests and for
 * dynamically batched ones, the served config says KIND_GPU, and the phases are timed. FP16 and
 * BF16 models served as TYPE_FP32 (cast kernels on the instance's stream on the GPU, host
 * conversion on the CPU) give the same bits on both.
 * Needs a CUDA device and the CUDA provider library beside libonnxruntime.so (ONNXRUNTIME_ROOT,
 * docs/gpu.md); without a device every test here is skipped, and the suite says so.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { native } from '../../ts/native';
import { NDArray } from '../../ts/tensor';
import { addSubModel, identityModel } from '../../ts/tools/onnx';
import type { Triton } from '../../ts/triton';
import {
  TempRepo, addConstModel, randomFloats, rowSumModel, slowAddModel, startRepoTriton, type Served,
} from '../integration/repository/repo-helpers';

const hasDevice = native().buildInfo().cudaDeviceCount > 0;
if (!hasDevice) console.warn('GPU suite skipped: no CUDA device (onnx-cuda)');
const gpuTest = hasDevice ? test : test.skip;

const MLP = path.join(__dirname, '../../examples/models/mlp_classifier/1/model.onnx');

let repo: TempRepo;
let served: Served | undefined;

beforeEach(() => {
  repo = new TempRepo('cuda');
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  repo.cleanup();
});

/** Writes `bytes` twice, as `<name>_gpu` (KIND_GPU) and `<name>_cpu` (KIND_CPU), with `config` lines. */
function twins(name: string, bytes: Uint8Array, config: string, count = 1): void {
  for (const kind of ['gpu', 'cpu']) {
    repo.onnx(`${name}_${kind}`, 1, bytes);
    repo.config(`${name}_${kind}`, `platform: "onnxruntime_onnx"\n${config}\n` +
      `instance_group [ { count: ${count}, kind: KIND_${kind.toUpperCase()} } ]`);
  }
}

async function serve(): Promise<Triton> {
  served = await startRepoTriton(repo.root);
  return served.triton;
}

function expectClose(gpu: NDArray, cpu: NDArray, tolerance = 1e-4): void {
  expect(gpu.shape).toEqual(cpu.shape);
  expect(gpu.dtype).toBe(cpu.dtype);
  const a = gpu.data as Float32Array;
  const b = cpu.data as Float32Array;
  // Errors relative to the tensor's largest magnitude: matrix products run in TF32 on the GPU
  // (ONNX Runtime's default there), whose rounding scales with the operands, not each result.
  const scale = b.reduce((m, v) => Math.max(m, Math.abs(v)), 1);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / scale);
  expect(worst).toBeLessThanOrEqual(tolerance);
}

/** Sends `rows` requests at once to both twins and compares each answer. */
async function compareBatched(triton: Triton, name: string, input: string, dims: number[], rows: number, seed: number,
  tolerance = 1e-4): Promise<void> {
  const per = dims.reduce((a, b) => a * b, 1);
  const requests = Array.from({ length: rows }, (_, i) => new NDArray('FP32', [1, ...dims], randomFloats(per, seed + i)));
  const [gpu, cpu] = await Promise.all(['gpu', 'cpu'].map((kind) =>
    Promise.all(requests.map((tensor) => triton.infer(`${name}_${kind}`, { [input]: tensor })))));
  for (let i = 0; i < rows; i++) {
    for (const output of Object.keys(cpu[i])) expectClose(gpu[i][output], cpu[i][output], tolerance);
  }
}

gpuTest('KIND_GPU loads on the CUDA provider and the served config says so', async () => {
  twins('add', addConstModel(3, 16), 'max_batch_size: 8');
  const triton = await serve();
  expect(served!.logs.filter((l) => /runs on|unavailable/i.test(l))).toEqual([]);
  expect(triton.model('add_gpu').config.instanceGroup[0].kind).toBe('KIND_GPU');
  expect(triton.model('add_cpu').config.instanceGroup[0].kind).toBe('KIND_CPU');
  const out = await triton.infer('add_gpu', { INPUT0: new NDArray('FP32', [2, 16], new Float32Array(32).fill(1)) });
  expect(Array.from(out.OUTPUT0.data as Float32Array)).toEqual(new Array(32).fill(4));
});

gpuTest('the MLP classifier: GPU and CPU agree, one request at a time and dynamically batched', async () => {
  twins('mlp', readFileSync(MLP), 'max_batch_size: 64\ndynamic_batching { max_queue_delay_microseconds: 2000 }');
  const triton = await serve();
  await compareBatched(triton, 'mlp', 'input', [16], 1, 1, 5e-3);
  await compareBatched(triton, 'mlp', 'input', [16], 64, 100, 5e-3);
  const stats = triton.model('mlp_gpu').stats();
  expect(stats.batchStats.some((s) => s.batchSize > 1)).toBe(true);
  expect(stats.computeInfer.count).toBeGreaterThan(0);
});

gpuTest('shapes the model computes (ReduceSum keepdims) and odd row counts match the CPU', async () => {
  twins('rows', rowSumModel(true), 'max_batch_size: 16\ninput [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 2, 3 ] } ]\n' +
    'output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 2, 1 ] } ]\ndynamic_batching { max_queue_delay_microseconds: 2000 }');
  const triton = await serve();
  for (const rows of [1, 3, 7, 13]) await compareBatched(triton, 'rows', 'INPUT0', [2, 3], rows, rows * 10);
});

gpuTest('a compute-heavy model (matrix products) agrees within tolerance, two GPU instances', async () => {
  twins('slow', slowAddModel(5, 64, 4), 'max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 1000 }', 2);
  const triton = await serve();
  await compareBatched(triton, 'slow', 'INPUT0', [64, 64], 16, 7, 2e-2);
});

gpuTest('the TensorRT accelerator runs on TensorRT where it is installed, else on CUDA with a log line saying so', async () => {
  repo.onnx('trt', 1, addConstModel(1, 16));
  repo.config('trt', `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninstance_group [ { kind: KIND_GPU } ]
    optimization { execution_accelerators { gpu_execution_accelerator: [ { name: "tensorrt",
      parameters [ { key: "precision_mode" value: "FP16" } ] } ] } }`);
  const triton = await serve();
  expect(triton.model('trt').config.instanceGroup[0].kind).toBe('KIND_GPU');
  const fellBack = served!.logs.filter((l) => l.includes("model 'trt' runs on CUDA (TensorRT unavailable)"));
  expect(fellBack.length).toBeLessThanOrEqual(1);
  const out = await triton.infer('trt', { INPUT0: new NDArray('FP32', [1, 16], new Float32Array(16).fill(2)) });
  expect(Array.from(out.OUTPUT0.data as Float32Array)).toEqual(new Array(16).fill(3));
});

/** `count` FP32 values for the cast tests: edge values first (overflow, subnormals, ties, -0, ±Inf, NaN), then spread over ±70000. */
function castInputs(count: number, seed: number): Float32Array {
  const edges = [65520, -65504, 5.96e-8, 2 ** -25, 3 * 2 ** -25, 6.1e-5, 1e-8, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -0, Infinity, -Infinity, NaN, 1e30, 1e-40];
  const out = randomFloats(count, seed).map((v, i) => (i % 3 === 0 ? (v - 0.5) * 140000 : (v - 0.5) * 16));
  edges.slice(0, count).forEach((v, i) => { out[i] = v; });
  return out;
}

/** Sends one request of `rows` rows to both twins and expects the same bits back, output by output. */
async function compareExactly(triton: Triton, name: string, inputs: Record<string, NDArray>): Promise<void> {
  const [gpu, cpu] = await Promise.all(['gpu', 'cpu'].map((kind) => triton.infer(`${name}_${kind}`, inputs)));
  for (const output of Object.keys(cpu)) {
    expect(gpu[output].dtype).toBe('FP32');
    expect(gpu[output].shape).toEqual(cpu[output].shape);
    // Same bits: compare the raw words (NaN payloads aside, which both keep as NaN).
    const a = Array.from(gpu[output].data as Float32Array, (v) => (Number.isNaN(v) ? 'NaN' : Object.is(v, -0) ? '-0' : v));
    const b = Array.from(cpu[output].data as Float32Array, (v) => (Number.isNaN(v) ? 'NaN' : Object.is(v, -0) ? '-0' : v));
    expect(a).toEqual(b);
  }
}

const FEATURES = [1, 7, 1023];
const ROWS = [1, 3, 17, 257];

/** Config lines serving `dtype` tensors of the model as TYPE_FP32. */
function servedFp32(width: number, inputs: string[], outputs: string[]): string {
  const tensors = (names: string[]) => names.map((n) => `{ name: "${n}", data_type: TYPE_FP32, dims: [ ${width} ] }`).join(', ');
  return `max_batch_size: 512\ninput [ ${tensors(inputs)} ]\noutput [ ${tensors(outputs)} ]\n` +
    'dynamic_batching { max_queue_delay_microseconds: 2000 }';
}

gpuTest('FP16 add/sub served as FP32: GPU casts and CPU casts agree bit for bit at odd rows and widths', async () => {
  for (const width of FEATURES) twins(`half${width}`, addSubModel('FP16', [width]), servedFp32(width, ['INPUT0', 'INPUT1'], ['OUTPUT0', 'OUTPUT1']));
  const triton = await serve();
  expect(served!.logs.filter((l) => l.includes('serves FP32 for') && l.endsWith('converted on the GPU'))).toHaveLength(FEATURES.length);
  for (const width of FEATURES) {
    for (const rows of ROWS) {
      // INPUT1 holds quarters: FP16 sums stay exact in FP32, so both providers round once.
      const quarters = randomFloats(rows * width, rows + width).map((v) => Math.round((v - 0.5) * 32) / 4);
      await compareExactly(triton, `half${width}`, {
        INPUT0: new NDArray('FP32', [rows, width], castInputs(rows * width, rows * 31 + width)),
        INPUT1: new NDArray('FP32', [rows, width], quarters),
      });
    }
  }
  const stats = triton.model('half7_gpu').stats();
  expect(stats.computeInput.count).toBeGreaterThan(0);
  expect(stats.computeOutput.count).toBeGreaterThan(0);
});

gpuTest('BF16 identity served as FP32: GPU and CPU agree bit for bit, single requests and dynamically batched', async () => {
  for (const width of FEATURES) twins(`bf${width}`, identityModel('BF16', [width]), servedFp32(width, ['INPUT0'], ['OUTPUT0']));
  const triton = await serve();
  for (const width of FEATURES) {
    for (const rows of ROWS) {
      await compareExactly(triton, `bf${width}`, { INPUT0: new NDArray('FP32', [rows, width], castInputs(rows * width, rows + 7 * width)) });
    }
  }
  // 17 one-row requests at once: merged into batches by the dynamic batcher on each twin.
  const requests = Array.from({ length: 17 }, (_, i) => new NDArray('FP32', [1, 7], castInputs(7, 500 + i)));
  const [gpu, cpu] = await Promise.all(['gpu', 'cpu'].map((kind) => Promise.all(requests.map((INPUT0) => triton.infer(`bf7_${kind}`, { INPUT0 })))));
  for (let i = 0; i < requests.length; i++) {
    expect(Array.from(gpu[i].OUTPUT0.data as Float32Array).map(String)).toEqual(Array.from(cpu[i].OUTPUT0.data as Float32Array).map(String));
  }
});

gpuTest('a lone request\'s large input goes to the GPU from the caller\'s buffer, pinned or registered for the copy', async () => {
  const elements = (5 << 20) / 4 + 3;  // past the 4 MiB from which a buffer is registered, not staged
  twins('big', identityModel('FP32', [elements]), 'max_batch_size: 8', 2);
  const triton = await serve();
  const both = randomFloats(2 * elements + 1024, 11);
  // Two inputs in one ArrayBuffer, a page apart at most: run at once on the two instances, the
  // second registration overlaps the first's pages and falls back to a staged copy.
  const first = new NDArray('FP32', [1, elements], both.subarray(0, elements));
  const second = new NDArray('FP32', [1, elements], both.subarray(elements + 3, 2 * elements + 3));
  const sameBits = (out: NDArray, input: NDArray): void => {
    expect(out.shape).toEqual(input.shape);
    const a = out.data as Float32Array;
    const b = input.data as Float32Array;
    expect(Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength))).toBe(0);
  };
  const model = triton.model('big_gpu');
  // inputsOwned: native code reads the caller's pageable arrays; otherwise they are first copied
  // into the model's pool, whose blocks are pinned already.
  for (const inputsOwned of [true, false]) {
    const [a, b] = await Promise.all([first, second].map((INPUT0) => model.infer({ INPUT0 }, { inputsOwned })));
    sameBits(a.OUTPUT0, first);
    sameBits(b.OUTPUT0, second);
  }
});

gpuTest('a KIND_CPU group and a KIND_GPU group in one model: sessions on both, same answers from either', async () => {
  repo.onnx('mixed', 1, addConstModel(3, 16));
  repo.config('mixed', `platform: "onnxruntime_onnx"\nmax_batch_size: 8
    instance_group [ { name: "host", count: 1, kind: KIND_CPU }, { name: "device", count: 1, kind: KIND_GPU } ]`);
  const triton = await serve();
  expect(triton.model('mixed').config.instanceGroup.map((g) => [g.name, g.kind, g.gpus])).toEqual([
    ['host', 'KIND_CPU', []], ['device', 'KIND_GPU', Array.from({ length: native().buildInfo().cudaDeviceCount }, (_, i) => i)],
  ]);
  // Enough requests at once that every instance takes some; each answer is exact on either.
  const answers = await Promise.all(Array.from({ length: 64 }, (_, i) =>
    triton.infer('mixed', { INPUT0: new NDArray('FP32', [1, 16], new Float32Array(16).fill(i)) })));
  answers.forEach((a, i) => expect(Array.from(a.OUTPUT0.data as Float32Array)).toEqual(new Array(16).fill(i + 3)));
});
