/**
 * In-process misuse that used to read the wrong memory or lose requests (issue 16, items 2, 3
 * and 5): inputs changed or transferred while their request is queued, TypedArrays of another
 * kind than the datatype, batches finishing while a model stops, and a throwing channel
 * listener. Real models: bound JS callables and ONNX Runtime models from a temporary repository.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { InferenceServerError } from '../../ts/errors';
import { native } from '../../ts/native';
import { NDArray } from '../../ts/tensor';
import type { Triton } from '../../ts/triton';
import { expectRejects, expectThrows, inProcessTriton, waitFor } from './helpers';
import { TempRepo, addConstModel, slowAddModel, startRepoTriton } from './repository/repo-helpers';
import { identityModel } from '../../ts/tools/onnx/factories';
import { LIB, ensureLib } from './lib-build';

let repo: TempRepo;
let triton: Triton | undefined;

beforeEach(() => {
  repo = new TempRepo('memsafe');
});

afterEach(async () => {
  await triton?.stop();
  triton = undefined;
  repo.cleanup();
});

/** An ONNX model adding 10 to FP32 [batch, 4], whose queue holds requests for `delayMs`. */
async function delayedOnnx(delayMs: number): Promise<Triton> {
  repo.onnx('add10', 1, addConstModel(10));
  repo.config('add10', `
    platform: "onnxruntime_onnx"
    max_batch_size: 8
    input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
    output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
    dynamic_batching { preferred_batch_size: [ 8 ], max_queue_delay_microseconds: ${delayMs * 1000} }`);
  triton = (await startRepoTriton(repo.root)).triton;
  return triton;
}

/** A bound identity model (JS callable) whose queue holds requests for `delayMs`. */
async function delayedIdentity(delayMs: number): Promise<Triton> {
  triton = inProcessTriton();
  triton.bind({
    modelName: 'identity',
    inferFunc: (requests) => requests.map((r) => ({ OUT: r.data.IN })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: delayMs * 1000, preferredBatchSize: [8] } },
  });
  await triton.run();
  return triton;
}

/** Moves `buffer`'s memory to a new ArrayBuffer (detaching the old one), as postMessage does. */
function transfer(buffer: ArrayBuffer): ArrayBuffer {
  return structuredClone(buffer, { transfer: [buffer] });
}

describe('outputs of a native engine belong to the caller once answered', () => {
  // Outputs up to 4 KiB reach JS as copies, larger ones as views of the batch's pooled output
  // memory (cpp/napi/native_model.cc): on both sides of that line, a held answer must keep its
  // values while later batches of the same shape reuse the pool.
  test.each([1000, 1024, 1025, 65_536])('FP32[%i]: held answers keep their values through later batches', async (n) => {
    repo.onnx('ident', 1, identityModel('FP32', ['n']));
    repo.config('ident', `
      platform: "onnxruntime_onnx"
      max_batch_size: 4
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
      dynamic_batching { preferred_batch_size: [ 4 ], max_queue_delay_microseconds: 50000 }`);
    triton = (await startRepoTriton(repo.root)).triton;
    const t = triton;
    const round = (base: number): Promise<Record<string, NDArray>[]> => Promise.all([0, 1, 2, 3].map((r) =>
      t.infer('ident', { INPUT0: { data: Float32Array.from({ length: n }, (_, i) => base + r * n + i), shape: [1, n] } })));
    const held = await round(0);
    for (let k = 1; k <= 8; k++) await round(k * 1e6);
    held.forEach(({ OUTPUT0 }, r) => {
      expect(OUTPUT0.shape).toEqual([1, n]);
      const data = OUTPUT0.data as Float32Array;
      expect(data).toBeInstanceOf(Float32Array);
      expect(data.length).toBe(n);
      const wrong = data.findIndex((v, i) => v !== r * n + i);
      expect(wrong).toBe(-1);
    });
    expect(t.model('ident').stats().executionCount).toBeLessThan(4 * 9);  // the rounds ran as batches
  });
});

describe('inputs of a queued request belong to the request, not to the caller (item 2)', () => {
  test('ONNX: changing the caller array after infer() returns does not change the answer', async () => {
    const t = await delayedOnnx(100);
    const input = new Float32Array([1, 2, 3, 4]);
    const pending = t.infer('add10', { INPUT0: { data: input, shape: [1, 4] } });
    input.fill(-1000);
    const { OUTPUT0 } = await pending;
    expect(Array.from(OUTPUT0.data as Float32Array)).toEqual([11, 12, 13, 14]);
  });

  test('ONNX: transferring the caller buffer while queued: the engine never reads the moved memory', async () => {
    const t = await delayedOnnx(100);
    const input = new Float32Array([1, 2, 3, 4]);
    const pending = t.infer('add10', { INPUT0: { data: input, shape: [1, 4] } });
    // The memory now belongs to `moved`: writing it would change what a view of the old
    // buffer reads; collecting it would free it under the engine.
    const moved = new Float32Array(transfer(input.buffer as ArrayBuffer));
    moved.fill(-1000);
    expect(input.length).toBe(0);
    const { OUTPUT0 } = await pending;
    expect(Array.from(OUTPUT0.data as Float32Array)).toEqual([11, 12, 13, 14]);
  });

  test('JS model: a transferred buffer does not reach the callable as an empty array', async () => {
    const t = await delayedIdentity(100);
    const input = new Float32Array([5, 6, 7]);
    const pending = t.infer('identity', { IN: new NDArray('FP32', [1, 3], input) });
    transfer(input.buffer as ArrayBuffer);
    const { OUT } = await pending;
    expect(OUT.shape).toEqual([1, 3]);
    expect(Array.from(OUT.data as Float32Array)).toEqual([5, 6, 7]);
  });

  test('BYTES: changing an element after infer() returns does not change the answer', async () => {
    triton = inProcessTriton();
    triton.bind({
      modelName: 'echo',
      inferFunc: (requests) => requests.map((r) => ({ OUT: r.data.IN })),
      inputs: [{ name: 'IN', dtype: 'BYTES', shape: [-1] }],
      outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [-1] }],
      config: { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 100_000, preferredBatchSize: [8] } },
    });
    await triton.run();
    const word = Buffer.from('hello');
    const pending = triton.infer('echo', { IN: new NDArray('BYTES', [1, 1], [word]) });
    word.write('HELLO');
    const { OUT } = await pending;
    expect(Buffer.from((OUT.data as Uint8Array[])[0]).toString()).toBe('hello');
  });

  test('an input already detached when infer() is called is refused with INVALID_ARG naming it', async () => {
    const t = await delayedIdentity(0);
    const arr = new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3]));
    transfer((arr.data as Float32Array).buffer as ArrayBuffer);
    await expectRejects(t.infer('identity', { IN: arr }), 'INVALID_ARG',
      /input 'IN' for model 'identity': FP32 tensor of shape \[1,3\] needs 3 elements, got 0 \(was its buffer transferred/);
  });
});

describe('a TypedArray of another kind is refused, not reinterpreted (item 3)', () => {
  test('NDArray refuses an Int32Array for FP32, a Uint32Array for INT32, a plain array for BYTES', () => {
    expectThrows(() => new NDArray('FP32', [1, 16], new Int32Array(16)), 'INVALID_ARG',
      'FP32 data must be a Float32Array, got Int32Array; convert it (e.g. Float32Array.from(data)) or declare the datatype that matches the array');
    expectThrows(() => new NDArray('INT32', [4], new Uint32Array(4)), 'INVALID_ARG', /INT32 data must be a Int32Array, got Uint32Array/);
    expectThrows(() => new NDArray('BYTES', [1], ['text'] as unknown as Uint8Array[]), 'INVALID_ARG',
      'BYTES elements must be Uint8Arrays (or Buffers), got string');
    expect(new NDArray('UINT8', [2], Buffer.from([1, 2])).size).toBe(2);  // a Buffer is a Uint8Array
  });

  test('triton.infer refuses { data: Int32Array } for an FP32 input, naming the input and the model', async () => {
    const t = await delayedIdentity(0);
    await expectRejects(t.infer('identity', { IN: { data: new Int32Array(3), shape: [1, 3], dtype: 'FP32' } }), 'INVALID_ARG',
      /FP32 data must be a Float32Array, got Int32Array/);
  });

  test('replacing nd.data after construction is caught when the request is queued', async () => {
    const t = await delayedIdentity(0);
    const arr = new NDArray('FP32', [1, 3], new Float32Array(3));
    (arr as unknown as { data: unknown }).data = new Int32Array(3);
    await expectRejects(t.infer('identity', { IN: arr }), 'INVALID_ARG',
      "input 'IN' for model 'identity': FP32 data must be a Float32Array, got Int32Array; convert it (e.g. Float32Array.from(data)) or declare the datatype that matches the array");
  });

  test('the addon checks again: enqueue with an Int32Array for FP32 throws INVALID_ARG', async () => {
    const t = await delayedIdentity(0);
    const model = new (native().NativeModel)(t.model('identity').config, () => undefined, () => undefined);
    try {
      let caught: unknown;
      try {
        // meta: one input, priority 0, no timeout, no copy, any instance; input 0 (IN), FP32 (11), 16 bytes, shape [1, 4]
        model.enqueue(1, new Float64Array([1, 0, 0, 0, -1, 0, 11, 16, 2, 1, 4]), undefined, new Int32Array(4));
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InferenceServerError);
      expect((caught as InferenceServerError).code).toBe('INVALID_ARG');
      expect((caught as Error).message).toBe("data of input 'IN' is a Int32Array, but its datatype FP32 needs a Float32Array");
      expect(model.stats().pending).toBe(0);
    } finally {
      model.stop();
    }
  });
});

test('enqueue, pump and completeBatch kept after their model was collected throw instead of reaching freed memory', () => {
  const script = path.join(__dirname, 'fixtures', 'linked-methods-after-gc.js');
  const child = spawnSync(process.execPath, ['--expose-gc', script], { encoding: 'utf8', timeout: 20_000 });
  expect(child.status).toBe(0);
  const result = JSON.parse(child.stdout.trim()) as { collected: boolean; errors: (string | null)[] };
  expect(result.collected).toBe(true);
  expect(result.errors).toEqual(Array(3).fill('NativeModel: the model was collected'));
});

test('a model unloaded from the repository is collected with its native side (ONNX, JS, ensemble, sequence) and its JS module', () => {
  // The native model held its JS callbacks, closures over the BoundModel that holds the native
  // model's wrapper, by strong references: every model ever unloaded stayed in memory with its
  // pool and ONNX Runtime sessions (the soak's RSS grew ~0.3 MiB/s under reloads). And each
  // reload of a repository JS model left its CommonJS module listed in the loader's children.
  ensureLib();
  const script = path.join(__dirname, 'fixtures', 'models-collected.js');
  const child = spawnSync(process.execPath, ['--expose-gc', script, LIB], { encoding: 'utf8', timeout: 60_000 });
  expect(child.stderr).toBe('');
  expect(child.status).toBe(0);
  const result = JSON.parse(child.stdout.trim()) as {
    collected: Record<string, boolean>; aliveAfterCycles: number; modulesAlive: number; cycles: number;
  };
  expect(result.collected).toEqual({ cycle_onnx: true, cycle_js: true, ens_cycle_add: true, seq_sum_js: true });
  expect(result.cycles).toBe(20);
  expect(result.aliveAfterCycles).toBe(0);
  // The last module loaded may stay listed as the loader's child until the next reload; the
  // other 19 went (before the fix all 20 stayed: require() lists each in the loader's children).
  expect(result.modulesAlive).toBeLessThanOrEqual(1);
});

describe('every accepted request settles when a model stops (item 5)', () => {
  test('an ONNX batch finishing while stop() joins the instances answers its requests', async () => {
    repo.onnx('slow', 1, slowAddModel(1, 256, 24));
    repo.config('slow', `
      platform: "onnxruntime_onnx"
      max_batch_size: 1
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 256, 256 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 256, 256 ] } ]`);
    triton = (await startRepoTriton(repo.root, { config: { exitTimeoutSecs: 0 } })).triton;
    const model = triton.model('slow');
    const outcomes: string[] = [];
    const requests = Array.from({ length: 3 }, () =>
      triton!.infer('slow', { INPUT0: new NDArray('FP32', [1, 256, 256], new Float32Array(256 * 256)) })
        .then(() => outcomes.push('ok'), (err: InferenceServerError) => outcomes.push(err.code)));
    await waitFor(() => model.stats().queued < 3, 'a batch to start executing');
    await triton.stop();
    triton = undefined;
    // Before the fix the executing request's promise never settled: this wait timed out.
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<string>((resolve) => { timer = setTimeout(() => resolve('hung'), 20_000); });
    await expect(Promise.race([Promise.all(requests).then(() => 'settled'), hung])).resolves.toBe('settled');
    clearTimeout(timer);
    expect(outcomes).toHaveLength(3);
    expect(outcomes).toContain('ok');
    for (const outcome of outcomes) expect(['ok', 'UNAVAILABLE']).toContain(outcome);
  });

  test('a throwing channel listener does not skip the execute queued behind it', () => {
    const script = path.join(__dirname, 'fixtures', 'channel-requeue.js');
    const child = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.status).toBe(0);
    const result = JSON.parse(child.stdout.trim()) as { executed: number[]; responses: { id: number; code: number }[] };
    expect(result.executed).toEqual([2]);
    expect(result.responses).toEqual([{ id: 1, code: 5 }, { id: 2, code: 0 }]);
  });
});
