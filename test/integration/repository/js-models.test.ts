/**
 * JS models in a repository (`<model>/<version>/model.js`): the Node twin of Triton's Python
 * backend. initialize runs per instance with its args before the model is ready, execute runs
 * the batches the native batcher forms, finalize runs per instance at unload after the last
 * request; a throwing execute fails only its batch. (model.mjs, and reloading a changed file at
 * the same path, need Node's own module loader: js-models-node.test.ts runs those in a child
 * process.)
 */
import { expectRejects, gate, settleLoop, track, waitFor } from '../helpers';
import { NDArray } from '../../../ts/tensor';
import { native } from '../../../ts/native';
import { TempRepo, startRepoTriton, type Served } from './repo-helpers';

/** What the test models record (they run in this realm, so globalThis is shared). */
interface Events {
  log: string[];
  args: Record<string, unknown>[];
  finalized: Record<string, unknown>[];
  gate?: Promise<void>;
}

declare global {
  var __jsModelEvents: Events | undefined;
}

let repo: TempRepo;
let served: Served | undefined;
let events: Events;

beforeEach(() => {
  repo = new TempRepo('jsmodels');
  events = { log: [], args: [], finalized: [] };
  globalThis.__jsModelEvents = events;
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  delete globalThis.__jsModelEvents;
  repo.cleanup();
});

const CONFIG = (options: { maxBatchSize?: number; count?: number; extra?: string } = {}): string => `
  backend: "js"
  max_batch_size: ${options.maxBatchSize ?? 2}
  input [ { name: "IN", data_type: TYPE_FP32, dims: [ 2 ] } ]
  output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 2 ] } ]
  instance_group [ { count: ${options.count ?? 1}, kind: KIND_CPU } ]
  parameters { key: "scale", value: { string_value: "10" } }
  dynamic_batching { }
  ${options.extra ?? ''}`;

/**
 * OUT = IN × scale (the config parameter). A request whose first value is negative makes the
 * batch fail: -1 a plain Error, -2 an error carrying code INVALID_ARG, -3 an async rejection;
 * -4 waits on events.gate first (then succeeds).
 */
const MODEL = `
'use strict';
const events = () => globalThis.__jsModelEvents;
let scale = 0;
exports.initialize = async (args) => {
  events().args.push(args);
  events().log.push('initialize ' + args.instanceIndex);
  if (args.parameters.fail_instance === String(args.instanceIndex)) throw new Error('no device for instance ' + args.instanceIndex);
  scale = Number(args.parameters.scale);
};
exports.execute = async (requests, context) => {
  events().log.push('execute ' + context.instanceIndex + ' [' + requests.map((r) => r.data.IN.data[0]).join(',') + ']');
  const tags = requests.map((r) => r.data.IN.data[0]);
  if (tags.includes(-4)) await events().gate;
  if (tags.includes(-1)) throw new Error('poisoned batch');
  if (tags.includes(-2)) throw Object.assign(new Error('IN must not be negative'), { code: 'INVALID_ARG' });
  if (tags.includes(-3)) return Promise.reject(new Error('async failure'));
  return requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v * scale) }));
};
exports.finalize = (args) => {
  events().finalized.push(args);
  events().log.push('finalize ' + args.instanceIndex);
};
`;

function writeModel(name = 'm', config = CONFIG(), source = MODEL, file = 'model.js', version = 1): void {
  repo.config(name, config);
  repo.write(`${name}/${version}/${file}`, source);
}

const input = (...values: number[]): NDArray => new NDArray('FP32', [values.length / 2, 2], new Float32Array(values));

async function out(name: string, ...values: number[]): Promise<number[]> {
  const result = await served!.triton.infer(name, { IN: input(...values) });
  return Array.from(result.OUT.data as Float32Array);
}

test('initialize runs once per instance with its args, before the model is ready', async () => {
  writeModel('m', CONFIG({ count: 3 }));
  served = await startRepoTriton(repo.root);
  expect(events.log).toEqual(['initialize 0', 'initialize 1', 'initialize 2']);
  expect(events.args.map((a) => [a.instanceIndex, a.instanceName, a.instanceKind])).toEqual([
    [0, 'm_0_0', 'KIND_CPU'], [1, 'm_0_1', 'KIND_CPU'], [2, 'm_0_2', 'KIND_CPU'],  // Triton's <group>_<c>
  ]);
  expect(events.args[0]).toMatchObject({
    modelName: 'm', modelVersion: 1, modelRepository: repo.root, modelDirectory: repo.path('m'), parameters: { scale: '10' },
  });
  expect((events.args[0].modelConfig as { maxBatchSize: number }).maxBatchSize).toBe(2);
  expect(served.triton.model('m').config.instanceGroup).toEqual([expect.objectContaining({ kind: 'KIND_CPU', count: 3 })]);
});

test('instance groups are placed as Triton places them: KIND_GPU without a GPU fails the load, KIND_AUTO and KIND_CPU run on the CPU', async () => {
  const groups = (g: string): string => CONFIG().replace(/instance_group \[[^\]]*\]/, `instance_group [ ${g} ]`);
  writeModel('gpu', groups('{ count: 2, kind: KIND_GPU }'));
  writeModel('listed', groups('{ count: 1, kind: KIND_GPU, gpus: [ 7 ] }'));
  writeModel('mixed', groups('{ count: 1, kind: KIND_CPU }, { count: 2, kind: KIND_AUTO, gpus: [ 7 ] }'));
  served = await startRepoTriton(repo.root);
  const gpus = native().buildInfo().cudaDeviceCount;
  const index = Object.fromEntries(served.triton.repositoryIndex().map((e) => [e.name, e]));
  // Triton's texts: a build without CUDA "does not support GPUs"; one with CUDA and no device has "no GPUs".
  const noGpu = native().buildInfo().cuda ? 'no GPUs are available (this machine has no usable CUDA device)' : 'server does not support GPUs';
  if (gpus === 0) {
    expect(index.gpu.state).toBe('UNAVAILABLE');
    expect(index.gpu.reason).toContain(`instance group gpu_0 of model gpu has kind KIND_GPU but ${noGpu}`);
    expect(index.gpu.reason).toMatch(/; use kind KIND_AUTO \(the GPU when there is one, else the CPU\) or KIND_CPU$/);
  } else {
    // Every GPU present, count on each (Triton lists them in the served config).
    expect(served.triton.model('gpu').config.instanceGroup).toEqual([
      expect.objectContaining({ kind: 'KIND_GPU', count: 2, gpus: Array.from({ length: gpus }, (_, i) => i) })]);
    expect(events.args.filter((a) => a.modelName === 'gpu').map((a) => [a.instanceKind, a.instanceDeviceId]))
      .toEqual([0, 1].flatMap(() => Array.from({ length: gpus }, (_, i) => ['KIND_GPU', i])));  // count-major, as Triton
  }
  expect(index.listed.state).toBe('UNAVAILABLE');
  if (gpus === 0) expect(index.listed.reason).toContain(`instance group listed_0 of model listed has kind KIND_GPU but ${noGpu}`);
  else expect(index.listed.reason).toMatch(/^instance group listed_0 of model listed specifies invalid or unsupported gpu id 7\. GPUs with at least/);
  // KIND_AUTO listing a GPU that is not there runs on the CPU, beside the KIND_CPU group.
  expect(index.mixed.state).toBe('READY');
  expect(served.triton.model('mixed').config.instanceGroup.map((g) => [g.kind, g.count, g.gpus])).toEqual([['KIND_CPU', 1, []], ['KIND_CPU', 2, []]]);
  expect(events.args.filter((a) => a.modelName === 'mixed').map((a) => [a.instanceIndex, a.instanceKind, a.instanceDeviceId]))
    .toEqual([[0, 'KIND_CPU', 0], [1, 'KIND_CPU', 0], [2, 'KIND_CPU', 0]]);
  expect(await out('mixed', 1, 2)).toEqual([10, 20]);
});

test('execute runs the batches the native batcher forms: each request gets its own rows back', async () => {
  writeModel();
  served = await startRepoTriton(repo.root);
  const results = await Promise.all([out('m', 1, 2), out('m', 3, 4), out('m', 5, 6)]);
  expect(results).toEqual([[10, 20], [30, 40], [50, 60]]);
  // max_batch_size 2: two batches, [1, 3] and [5].
  expect(events.log.filter((l) => l.startsWith('execute'))).toEqual(['execute 0 [1,3]', 'execute 0 [5]']);
  expect(served.triton.model('m').stats().batchStats.map((s) => [s.batchSize, s.computeInfer.count])).toEqual([[1, 1], [2, 1]]);
});

test('several instances run batches concurrently (async execute)', async () => {
  writeModel('m', CONFIG({ count: 2, maxBatchSize: 1 }));
  served = await startRepoTriton(repo.root);
  const held = gate();
  events.gate = held.promise;
  const first = track(out('m', -4, 0));
  const second = track(out('m', -4, 1));
  await waitFor(() => events.log.filter((l) => l.startsWith('execute')).length === 2, 'both instances to execute');
  expect(events.log.filter((l) => l.startsWith('execute')).sort()).toEqual(['execute 0 [-4]', 'execute 1 [-4]']);
  held.open();
  expect(await first.promise).toEqual([-40, 0]);
  expect(await second.promise).toEqual([-40, 10]);
});

describe('a throwing execute fails only its own batch', () => {
  test.each([
    [-1, 'INTERNAL', 'poisoned batch'],
    [-2, 'INVALID_ARG', 'IN must not be negative'],
    [-3, 'INTERNAL', 'async failure'],
  ] as const)('tag %d → %s', async (tag, code, message) => {
    writeModel();
    served = await startRepoTriton(repo.root);
    const requests = [out('m', 1, 1), out('m', 2, 2), out('m', tag, 3), out('m', 4, 4)].map(track);
    expect(await requests[0].promise).toEqual([10, 10]);
    expect(await requests[1].promise).toEqual([20, 20]);
    await expectRejects(requests[2].promise, code, message);
    await expectRejects(requests[3].promise, code, message);  // same batch as the poisoned request
    // The model carries on serving.
    expect(await out('m', 5, 5)).toEqual([50, 50]);
    const stats = served.triton.model('m').stats();
    expect(stats.failures.BACKEND).toBe(2);
    expect(stats.success.count).toBe(3);
  });
});

test('finalize runs per instance at unload, after the in-flight request finishes', async () => {
  writeModel('m', CONFIG({ count: 2 }));
  served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['m'] });
  const held = gate();
  events.gate = held.promise;
  const inFlight = track(out('m', -4, 7));
  await waitFor(() => events.log.some((l) => l.startsWith('execute')), 'the request to execute');
  const unloading = track(served.triton.unloadModel('m'));
  await settleLoop(30);
  expect(events.finalized).toEqual([]);
  expect(unloading.settled).toBe(false);
  // New requests no longer reach the model.
  await expectRejects(served.triton.infer('m', { IN: input(1, 1) }), 'NOT_FOUND');
  held.open();
  expect(await inFlight.promise).toEqual([-40, 70]);
  await unloading.promise;
  expect(events.finalized.map((a) => a.instanceIndex)).toEqual([0, 1]);
  expect(events.finalized[0]).toBe(events.args[0]);
  expect(events.log.slice(-2)).toEqual(['finalize 0', 'finalize 1']);
  expect(served.triton.repositoryIndex()).toEqual([{ name: 'm', version: '', state: 'UNAVAILABLE', reason: 'unloaded' }]);
});

test('a finalize that throws is logged and the unload still completes', async () => {
  writeModel('m', CONFIG(), MODEL.replace("events().log.push('finalize ' + args.instanceIndex);", "throw new Error('cannot release');"));
  served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['m'] });
  await served.triton.unloadModel('m');
  expect(served.triton.repositoryIndex()).toEqual([{ name: 'm', version: '', state: 'UNAVAILABLE', reason: 'unloaded' }]);
  expect(served.logs).toContain("infernode: model 'm' version 1: finalize failed: cannot release");
  await served.triton.loadModel('m');
  expect(await out('m', 1, 1)).toEqual([10, 10]);
});

test('finalize runs when the server stops', async () => {
  writeModel();
  served = await startRepoTriton(repo.root);
  expect(await out('m', 1, 2)).toEqual([10, 20]);
  await served.triton.stop();
  expect(events.log).toEqual(['initialize 0', 'execute 0 [1]', 'finalize 0']);
});

test('an initialize that throws fails the load, naming the model, the version and the instance; initialized instances are finalized', async () => {
  writeModel('m', CONFIG({ count: 3, extra: 'parameters { key: "fail_instance", value: { string_value: "1" } }' }));
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()).toEqual([{
    name: 'm', version: '', state: 'UNAVAILABLE',
    reason: "model 'm' version 1: initialize of instance 1 failed: no device for instance 1",
  }]);
  expect(events.log).toEqual(['initialize 0', 'initialize 1', 'finalize 0']);
});

test('outputs may be NDArrays or TypedArrays; a wrong number of outputs fails the batch with a clear error', async () => {
  writeModel('m', CONFIG(), `
    exports.execute = (requests) => requests[0].data.IN.data[0] === 9
      ? []
      : requests.map((r, i) => (i % 2 ? { OUT: r.data.IN } : { OUT: new Float32Array(r.data.IN.data) }));`);
  served = await startRepoTriton(repo.root);
  expect(await Promise.all([out('m', 1, 2), out('m', 3, 4)])).toEqual([[1, 2], [3, 4]]);
  await expectRejects(out('m', 9, 9), 'INTERNAL', 'must return an array with one outputs object per request (1), got an array of 0');
});

test('default_model_filename names the JS file of each version', async () => {
  writeModel('m', CONFIG({ extra: 'default_model_filename: "handler.js"' }), MODEL, 'handler.js');
  repo.write('m/1/model.js', 'throw new Error("model.js must not be loaded");');
  served = await startRepoTriton(repo.root);
  expect(await out('m', 1, 2)).toEqual([10, 20]);
});

test('a JS model without a config.pbtxt cannot load: it has no inputs and outputs to serve', async () => {
  repo.write('m/1/model.js', MODEL);
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()[0]).toMatchObject({
    state: 'UNAVAILABLE', reason: "model 'm': a JS model needs a config.pbtxt declaring its inputs and outputs",
  });
});

test('backend "js" with only a model.onnx in the version directory reports the missing JS file', async () => {
  repo.config('m', CONFIG());
  repo.write('m/1/model.onnx', 'not js');
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()[0].reason).toMatch(/^model 'm' version 1: no model file \(model\.js or model\.mjs\) in /);
});

test('each version of a JS model is its own module with its own instances', async () => {
  writeModel('m', CONFIG({ extra: 'version_policy { all { } }' }));
  repo.write('m/2/model.js', MODEL.replace('v * scale', 'v * scale * 2'));
  served = await startRepoTriton(repo.root);
  expect(await served.triton.infer('m', { IN: input(1, 2) }, { modelVersion: 1 }).then((r) => Array.from(r.OUT.data as Float32Array))).toEqual([10, 20]);
  expect(await out('m', 1, 2)).toEqual([20, 40]);
  expect(events.args.map((a) => a.modelVersion)).toEqual([1, 2]);
});
