/**
 * Ensembles in a model repository (issue 10), in process: ONNX models written by infernode's
 * ONNX writer and JS models as steps, loaded by the real repository manager and run by the real
 * engines. A linear pipeline mixing ONNX and JS steps, a diamond whose branches run at the same
 * time, a failing step named in the error, a step's requests batched with direct traffic to the
 * step model, every load error of the DAG, and the ensemble's availability following its step
 * models (explicit mode loads the steps with the ensemble; unloading one makes it unavailable).
 */
import { NDArray } from '../../ts/tensor';
import { toModelConfigJson } from '../../ts/config/model-config-json';
import { expectRejects, waitFor } from './helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repository/repo-helpers';

declare global {
  var __ensembleEvents: { started: string[]; meet?: () => void; met?: Promise<void> } | undefined;
}

let repo: TempRepo;
let served: Served | undefined;

beforeEach(() => {
  repo = new TempRepo('ensemble');
  let meet: () => void = () => undefined;
  const met = new Promise<void>((resolve) => { meet = resolve; });
  globalThis.__ensembleEvents = { started: [], meet, met };
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  delete globalThis.__ensembleEvents;
  repo.cleanup();
});

const WIDTH = 4;

/** An ONNX step: OUTPUT0 = INPUT0 + value, FP32 [-1, 4], batching with `extra` (dynamic_batching). */
function onnxAdd(name: string, value: number, extra = 'dynamic_batching { }'): void {
  repo.config(name, `
    platform: "onnxruntime_onnx"
    max_batch_size: 8
    input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    ${extra}`);
  repo.onnx(name, 1, addConstModel(value, WIDTH));
}

/** A JS step: OUT = f(inputs), FP32 [-1, 4]. */
function jsModel(name: string, inputs: string[], body: string, dtype = 'TYPE_FP32'): void {
  repo.config(name, `
    backend: "js"
    max_batch_size: 8
    input [ ${inputs.map((i) => `{ name: "${i}", data_type: ${dtype}, dims: [ ${WIDTH} ] }`).join(', ')} ]
    output [ { name: "OUT", data_type: ${dtype}, dims: [ ${WIDTH} ] } ]
    dynamic_batching { }`);
  repo.write(`${name}/1/model.js`, `'use strict';\nexports.execute = async (requests) => {\n${body}\n};\n`);
}

const DOUBLE = 'return requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v * 2) }));';

interface Step { model: string; inputs: Record<string, string>; outputs: Record<string, string>; version?: number }

/** An ensemble's config.pbtxt: FP32 [-1, 4] inputs and outputs. */
function ensemble(name: string, inputs: string[], outputs: string[], steps: Step[], extra = '', dtype = 'TYPE_FP32'): void {
  const tensor = (n: string): string => `{ name: "${n}", data_type: ${dtype}, dims: [ ${WIDTH} ] }`;
  const map = (field: string, m: Record<string, string>): string =>
    Object.entries(m).map(([k, v]) => `${field} { key: "${k}" value: "${v}" }`).join(' ');
  repo.config(name, `
    platform: "ensemble"
    max_batch_size: 8
    input [ ${inputs.map(tensor).join(', ')} ]
    output [ ${outputs.map(tensor).join(', ')} ]
    ensemble_scheduling { step [ ${steps.map((s) => `{ model_name: "${s.model}" model_version: ${s.version ?? -1}
      ${map('input_map', s.inputs)} ${map('output_map', s.outputs)} }`).join(', ')} ] }
    ${extra}`);
  repo.mkdir(`${name}/1`);
}

const row = (...values: number[]): NDArray => new NDArray('FP32', [1, WIDTH], Float32Array.from(values));
const values = (arr: NDArray): number[] => Array.from(arr.data as Float32Array);

/** add1 (ONNX) → double (JS) → add10 (ONNX). */
function linearPipeline(): void {
  onnxAdd('add1', 1);
  onnxAdd('add10', 10);
  jsModel('double', ['IN'], DOUBLE);
  ensemble('pipeline', ['X'], ['Y'], [
    { model: 'add1', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'a' } },
    { model: 'double', inputs: { IN: 'a' }, outputs: { OUT: 'b' } },
    { model: 'add10', inputs: { INPUT0: 'b' }, outputs: { OUTPUT0: 'Y' } },
  ]);
}

test('a linear pipeline of ONNX and JS steps: ONNX → JS → ONNX, tensors mapped step to step', async () => {
  linearPipeline();
  served = await startRepoTriton(repo.root);
  const out = await served.triton.infer('pipeline', { X: row(0, 1, 2, 3) });
  expect(Object.keys(out)).toEqual(['Y']);
  expect(values(out.Y)).toEqual([12, 14, 16, 18]);
  // Steps listed in any order run in DAG order.
  const model = served.triton.model('pipeline');
  expect(model.config.platform).toBe('ensemble');
  const json = toModelConfigJson(model.config);
  expect(json.platform).toBe('ensemble');
  expect(json.instance_group).toEqual([]);
  expect((json.ensemble_scheduling as { step: { model_name: string }[] }).step.map((s) => s.model_name)).toEqual(['add1', 'double', 'add10']);
  const stats = model.stats();
  expect(stats.success.count).toBe(1);
  expect(served.triton.model('double').stats().success.count).toBe(1);
});

test('a diamond: both branches run at the same time, the join waits for both', async () => {
  // Each branch waits until the other has started: run one after the other, they never finish.
  const meet = `
    const ev = globalThis.__ensembleEvents;
    ev.started.push(NAME);
    if (ev.started.length === 2) ev.meet();
    await ev.met;
    return requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v + DELTA) }));`;
  jsModel('left', ['IN'], meet.replace('NAME', "'left'").replace('DELTA', '100'));
  jsModel('right', ['IN'], meet.replace('NAME', "'right'").replace('DELTA', '1000'));
  jsModel('join', ['A', 'B'], 'return requests.map((r) => ({ OUT: r.data.A.data.map((v, i) => v + r.data.B.data[i]) }));');
  onnxAdd('add1', 1);
  ensemble('diamond', ['X'], ['Y'], [
    { model: 'join', inputs: { A: 'l', B: 'r' }, outputs: { OUT: 'Y' } },
    { model: 'left', inputs: { IN: 'x1' }, outputs: { OUT: 'l' } },
    { model: 'right', inputs: { IN: 'x1' }, outputs: { OUT: 'r' } },
    { model: 'add1', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'x1' } },
  ]);
  served = await startRepoTriton(repo.root);
  const out = await served.triton.infer('diamond', { X: row(0, 1, 2, 3) });
  expect(values(out.Y)).toEqual([1102, 1104, 1106, 1108]);
  expect(globalThis.__ensembleEvents!.started.sort()).toEqual(['left', 'right']);
});

test('a failing step fails the request with the step named, keeping its status code', async () => {
  onnxAdd('add1', 1);
  jsModel('boom', ['IN'], "throw Object.assign(new Error('IN must be positive'), { code: 'INVALID_ARG' });");
  ensemble('fragile', ['X'], ['Y'], [
    { model: 'add1', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'a' } },
    { model: 'boom', inputs: { IN: 'a' }, outputs: { OUT: 'Y' } },
  ]);
  served = await startRepoTriton(repo.root);
  await expectRejects(served.triton.infer('fragile', { X: row(0, 1, 2, 3) }), 'INVALID_ARG',
    /in ensemble 'fragile', step 2 \(model 'boom'\) failed: .*IN must be positive/);
  expect(served.triton.model('fragile').stats().fail.count).toBe(1);
});

test("a step's requests batch together with direct requests to the step model", async () => {
  // Batches of 2 go at once; a lone request would wait the (long) queue delay, then run alone.
  onnxAdd('add1', 1, 'dynamic_batching { preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 5000000 }');
  jsModel('double', ['IN'], DOUBLE);
  ensemble('pipe2', ['X'], ['Y'], [
    { model: 'add1', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'a' } },
    { model: 'double', inputs: { IN: 'a' }, outputs: { OUT: 'Y' } },
  ]);
  served = await startRepoTriton(repo.root);
  const [viaEnsemble, direct] = await Promise.all([
    served.triton.infer('pipe2', { X: row(1, 1, 1, 1) }),
    served.triton.infer('add1', { INPUT0: row(5, 5, 5, 5) }),
  ]);
  expect(values(viaEnsemble.Y)).toEqual([4, 4, 4, 4]);
  expect(values(direct.OUTPUT0)).toEqual([6, 6, 6, 6]);
  const batches = served.triton.model('add1').stats().batchStats;
  expect(batches.map((b) => [b.batchSize, b.computeInfer.count])).toEqual([[2, 1]]);
});

test('priority, timeout and parameters of the request pass to each step', async () => {
  repo.config('seer', `
    backend: "js"
    max_batch_size: 8
    input [ { name: "IN", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    dynamic_batching { }`);
  repo.write('seer/1/model.js', `exports.execute = async (requests) => requests.map((r) => ({ OUT: r.data.IN.data.map(() => Number(r.parameters.tag)) }));`);
  ensemble('tagged', ['X'], ['Y'], [{ model: 'seer', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]);
  served = await startRepoTriton(repo.root);
  const out = await served.triton.infer('tagged', { X: row(0, 0, 0, 0) }, { parameters: { tag: '7' } });
  expect(values(out.Y)).toEqual([7, 7, 7, 7]);
});

describe('load errors name the ensemble, the step and the tensor', () => {
  async function loadFails(message: RegExp): Promise<void> {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    await expectRejects(served.triton.loadModel('bad'), 'INVALID_ARG', message);
    expect(served.triton.repositoryIndex().find((e) => e.name === 'bad')?.state).toBe('UNAVAILABLE');
  }

  beforeEach(() => {
    onnxAdd('add1', 1);
    jsModel('double', ['IN'], DOUBLE);
    jsModel('int', ['IN'], DOUBLE, 'TYPE_INT32');
  });

  test('a cycle', async () => {
    ensemble('bad', ['X'], ['Y'], [
      { model: 'add1', inputs: { INPUT0: 'b' }, outputs: { OUTPUT0: 'a' } },
      { model: 'double', inputs: { IN: 'a' }, outputs: { OUT: 'b' } },
      { model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } },
    ]);
    await loadFails(/ensemble 'bad': the steps form a cycle: step 1 \(model 'add1'\) -> step 2 \(model 'double'\) -> step 1/);
  });

  test('an unknown model, and an unknown version', async () => {
    ensemble('bad', ['X'], ['Y'], [{ model: 'nosuch', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]);
    await loadFails(/ensemble 'bad': step 1 \(model 'nosuch'\): the step model is not available/);
    ensemble('bad', ['X'], ['Y'], [{ model: 'double', version: 3, inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', /step 1 \(model 'double' version 3\): the step model is not available.*version 3/);
  });

  test('an unmapped step input, an unknown input name, a tensor nobody produces', async () => {
    jsModel('pair', ['A', 'B'], 'return requests.map((r) => ({ OUT: r.data.A.data }));');
    ensemble('bad', ['X'], ['Y'], [{ model: 'pair', inputs: { A: 'X' }, outputs: { OUT: 'Y' } }]);
    await loadFails(/step 1 \(model 'pair'\): input 'B' of model 'pair' is not mapped/);
    ensemble('bad', ['X'], ['Y'], [{ model: 'double', inputs: { IN: 'X', EXTRA: 'X' }, outputs: { OUT: 'Y' } }]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', /input_map names input 'EXTRA', which model 'double' does not have/);
    ensemble('bad', ['X'], ['Y'], [{ model: 'pair', inputs: { A: 'X', B: 'ghost' }, outputs: { OUT: 'Y' } }]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', /reads ensemble tensor 'ghost', which is neither an ensemble input nor any step's output/);
  });

  test('an unmapped ensemble output, an unknown step output', async () => {
    ensemble('bad', ['X'], ['Y', 'Z'], [{ model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]);
    await loadFails(/ensemble 'bad': ensemble output 'Z' is not mapped/);
    ensemble('bad', ['X'], ['Y'], [{ model: 'double', inputs: { IN: 'X' }, outputs: { NOPE: 'Y' } }]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', /step 1 \(model 'double'\): output_map names output 'NOPE'/);
  });

  test('a datatype mismatch between steps', async () => {
    ensemble('bad', ['X'], ['Y'], [
      { model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'a' } },
      { model: 'int', inputs: { IN: 'a' }, outputs: { OUT: 'Y' } },
    ]);
    await loadFails(/ensemble tensor 'a': output 'OUT' of step 1 \(model 'double'\) has datatype FP32, but input 'IN' of step 2 \(model 'int'\) expects INT32/);
  });

  test('a shape mismatch between the ensemble and a step', async () => {
    repo.config('bad', `
      platform: "ensemble"
      max_batch_size: 8
      input [ { name: "X", data_type: TYPE_FP32, dims: [ 3 ] } ]
      output [ { name: "Y", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
      ensemble_scheduling { step [ { model_name: "double" model_version: -1
        input_map { key: "IN" value: "X" } output_map { key: "OUT" value: "Y" } } ] }`);
    repo.mkdir('bad/1');
    await loadFails(/ensemble tensor 'X': ensemble input 'X' has shape \[-1,3\], but input 'IN' of step 1 \(model 'double'\) expects \[-1,4\]/);
  });

  test("Triton's graph checks: an empty input_map or output_map, an unused ensemble input, a tensor nobody reads, model_warmup", async () => {
    ensemble('bad', ['X'], ['Y'], [{ model: 'double', inputs: {}, outputs: { OUT: 'Y' } }]);
    await loadFails(/ensemble 'bad': step 1 \(model 'double'\) has an empty input_map.*must specify 'input_map' in step 0 of ensemble 'bad'/);
    ensemble('bad', ['X'], ['Y'], [
      { model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } },
      { model: 'double', inputs: { IN: 'X' }, outputs: {} },
    ]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', /step 2 \(model 'double'\) has an empty output_map.*must specify 'output_map' in step 1 of ensemble 'bad'/);
    ensemble('bad', ['X', 'W'], ['Y'], [{ model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', "ensemble input 'W' for ensemble bad' is not used");
    ensemble('bad', ['X'], ['Y'], [
      { model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } },
      { model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'dropped' } },
    ]);
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG',
      /ensemble tensor 'dropped' is unused in ensemble 'bad': step 2 \(model 'double'\) writes it \(output 'OUT'\)/);
    ensemble('bad', ['X'], ['Y'], [{ model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }],
      'model_warmup [ { name: "w" batch_size: 1 inputs { key: "X" value: { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]');
    await expectRejects(served!.triton.loadModel('bad'), 'INVALID_ARG', "model_warmup can not be specified for ensemble 'bad'");
    expect(served!.triton.repositoryIndex().find((e) => e.name === 'bad')?.state).toBe('UNAVAILABLE');
  });

  test('instance_group on an ensemble', async () => {
    ensemble('bad', ['X'], ['Y'], [{ model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }],
      'instance_group [ { count: 2, kind: KIND_CPU } ]');
    await loadFails(/ensemble 'bad': instance_group is not allowed on an ensemble/);
  });
});

test('explicit mode: loading an ensemble loads its steps; unloading a step makes it unavailable until it is back', async () => {
  linearPipeline();
  served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
  await served.triton.loadModel('pipeline');
  const ready = (): Record<string, string> =>
    Object.fromEntries(served!.triton.repositoryIndex().map((e) => [e.name, e.state]));
  expect(ready()).toEqual({ add1: 'READY', add10: 'READY', double: 'READY', pipeline: 'READY' });
  await served.triton.unloadModel('double');
  expect(ready().pipeline).toBe('UNAVAILABLE');
  await expectRejects(served.triton.infer('pipeline', { X: row(0, 0, 0, 0) }), 'UNAVAILABLE',
    /ensemble 'pipeline' is not available: its step 2 \(model 'double'\) is not serving/);
  await served.triton.loadModel('double');
  expect(ready().pipeline).toBe('READY');
  expect(values((await served.triton.infer('pipeline', { X: row(0, 0, 0, 0) })).Y)).toEqual([12, 12, 12, 12]);
});

test('explicit mode: loading an unavailable ensemble again (its files unchanged) loads its step that is not serving', async () => {
  linearPipeline();
  served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
  await served.triton.loadModel('pipeline');
  await served.triton.unloadModel('double');
  await served.triton.loadModel('pipeline');
  expect(Object.fromEntries(served.triton.repositoryIndex().map((e) => [e.name, e.state]))).toMatchObject({ double: 'READY', pipeline: 'READY' });
  expect(values((await served.triton.infer('pipeline', { X: row(0, 0, 0, 0) })).Y)).toEqual([12, 12, 12, 12]);
});

test('a step model reloaded with a config that no longer fits makes the ensemble unavailable until one that fits is back (Triton reloads its dependents)', async () => {
  linearPipeline();
  served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
  await served.triton.loadModel('pipeline');
  const state = (): string | undefined => served!.triton.repositoryIndex().find((e) => e.name === 'pipeline')?.state;
  jsModel('double', ['IN'], 'return requests.map((r) => ({ OUT: Int32Array.from(r.data.IN.data, (v) => v * 2) }));', 'TYPE_INT32');
  await served.triton.loadModel('double');
  expect(state()).toBe('UNAVAILABLE');
  await expectRejects(served.triton.infer('pipeline', { X: row(0, 0, 0, 0) }), 'UNAVAILABLE',
    /ensemble 'pipeline' is not available: a step model changed and no longer fits it \(.*model 'double'\) expects INT32\)/);
  jsModel('double', ['IN'], DOUBLE);
  await served.triton.loadModel('double');
  expect(state()).toBe('READY');
  expect(values((await served.triton.infer('pipeline', { X: row(0, 0, 0, 0) })).Y)).toEqual([12, 12, 12, 12]);
});

test('unloading a step model while a request runs: that request finishes on it, later ones are UNAVAILABLE (Triton holds the step models per request)', async () => {
  jsModel('held', ['IN'], `
    const ev = globalThis.__ensembleEvents;
    ev.started.push('held');
    await ev.met;
    return requests.map((r) => ({ OUT: r.data.IN.data }));`);
  onnxAdd('add1', 1);
  ensemble('chain', ['X'], ['Y'], [
    { model: 'held', inputs: { IN: 'X' }, outputs: { OUT: 'a' } },
    { model: 'add1', inputs: { INPUT0: 'a' }, outputs: { OUTPUT0: 'Y' } },
  ]);
  served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
  await served.triton.loadModel('chain');
  const result = served.triton.infer('chain', { X: row(0, 1, 2, 3) });
  result.catch(() => undefined);
  await waitFor(() => globalThis.__ensembleEvents!.started.length === 1, 'the first step to execute');
  let unloaded = false;
  const unloading = served.triton.unloadModel('add1').then(() => { unloaded = true; });
  const add1State = (): string | undefined => served!.triton.repositoryIndex().find((e) => e.name === 'add1')?.state;
  await waitFor(() => add1State() !== 'READY', 'the unload to begin');
  await expectRejects(served.triton.infer('chain', { X: row(0, 0, 0, 0) }), 'UNAVAILABLE', /its step 2 \(model 'add1'\) is not serving/);
  expect(unloaded).toBe(false);  // the request in flight still holds add1
  globalThis.__ensembleEvents!.meet!();
  expect(values((await result).Y)).toEqual([1, 2, 3, 4]);
  await unloading;
  expect(add1State()).toBe('UNAVAILABLE');
});

test('stop(): an ensemble request in flight finishes its later steps before the step models unload', async () => {
  jsModel('held', ['IN'], `
    const ev = globalThis.__ensembleEvents;
    ev.started.push('held');
    await ev.met;
    return requests.map((r) => ({ OUT: r.data.IN.data }));`);
  onnxAdd('add1', 1);
  ensemble('chain', ['X'], ['Y'], [
    { model: 'held', inputs: { IN: 'X' }, outputs: { OUT: 'a' } },
    { model: 'add1', inputs: { INPUT0: 'a' }, outputs: { OUTPUT0: 'Y' } },
  ]);
  served = await startRepoTriton(repo.root);
  const result = served.triton.infer('chain', { X: row(0, 1, 2, 3) });
  result.catch(() => undefined);
  await waitFor(() => globalThis.__ensembleEvents!.started.length === 1, 'the first step to execute');
  const stopped = served.triton.stop();
  globalThis.__ensembleEvents!.meet!();
  expect(values((await result).Y)).toEqual([1, 2, 3, 4]);
  await stopped;
});

test('ensembles that name each other fail to load instead of waiting for each other forever', async () => {
  jsModel('double', ['IN'], DOUBLE);
  ensemble('ping', ['X'], ['Y'], [{ model: 'pong', inputs: { X: 'X' }, outputs: { Y: 'Y' } }]);
  ensemble('pong', ['X'], ['Y'], [{ model: 'ping', inputs: { X: 'X' }, outputs: { Y: 'Y' } }]);
  ensemble('fine', ['X'], ['Y'], [{ model: 'double', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]);
  served = await startRepoTriton(repo.root);
  const index = Object.fromEntries(served.triton.repositoryIndex().map((e) => [e.name, [e.state, e.reason]]));
  expect(index.ping).toEqual(['UNAVAILABLE', expect.stringMatching(/step 1 \(model 'pong'\): the step model is not available/)]);
  expect(index.pong).toEqual(['UNAVAILABLE', expect.stringMatching(/step 1 \(model 'ping'\): the step model is not available/)]);
  expect(index.fine).toEqual(['READY', '']);
});

test('poll mode: a new ensemble loads at a rescan; a reloaded step model serves its next request', async () => {
  onnxAdd('add1', 1);
  onnxAdd('add10', 10);
  jsModel('double', ['IN'], DOUBLE);
  served = await startRepoTriton(repo.root, { controlMode: 'poll' });
  ensemble('pipeline', ['X'], ['Y'], [
    { model: 'add1', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'a' } },
    { model: 'double', inputs: { IN: 'a' }, outputs: { OUT: 'b' } },
    { model: 'add10', inputs: { INPUT0: 'b' }, outputs: { OUTPUT0: 'Y' } },
  ]);
  await served.manager.poll();
  expect(values((await served.triton.infer('pipeline', { X: row(0, 0, 0, 0) })).Y)).toEqual([12, 12, 12, 12]);
  repo.onnx('add10', 1, addConstModel(100, WIDTH));
  await served.manager.poll();
  expect(values((await served.triton.infer('pipeline', { X: row(0, 0, 0, 0) })).Y)).toEqual([102, 102, 102, 102]);
});
