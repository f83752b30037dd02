/**
 * model_warmup in a repository config (triton-protocol.md §6.9): the samples run on every
 * instance, through the model's own queue, before the model is ready; a failing warm-up fails
 * the load. Data comes from zeros, random values or a file under `<model>/warmup/`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NDArray } from '../../../ts/tensor';
import { expectRejects } from '../helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repo-helpers';

interface Events {
  calls: { instance: number; shape: number[]; values: number[] }[];
  finalized: number;
  failOn?: number;
}

declare global {
  var __warmupEvents: Events | undefined;
}

let repo: TempRepo;
let served: Served | undefined;
let events: Events;

beforeEach(() => {
  repo = new TempRepo('warmup');
  events = { calls: [], finalized: 0 };
  globalThis.__warmupEvents = events;
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  delete globalThis.__warmupEvents;
  repo.cleanup();
});

/** Records every request it executes; fails a batch holding the value events.failOn. */
const RECORDER = `
  const events = () => globalThis.__warmupEvents;
  exports.execute = (requests, context) => requests.map((r) => {
    const values = Array.from(r.data.IN.data);
    events().calls.push({ instance: context.instanceIndex, shape: r.data.IN.shape, values });
    if (values.includes(events().failOn)) throw new Error('cannot handle ' + events().failOn);
    return { OUT: r.data.IN };
  });
  exports.finalize = () => { events().finalized += 1; };`;

function jsModel(warmup: string, count = 2): void {
  repo.config('m', `
    backend: "js"
    max_batch_size: 4
    input [ { name: "IN", data_type: TYPE_INT32, dims: [ 3 ] } ]
    output [ { name: "OUT", data_type: TYPE_INT32, dims: [ 3 ] } ]
    instance_group [ { count: ${count}, kind: KIND_CPU } ]
    ${warmup}`);
  repo.write('m/1/model.js', RECORDER);
}

test('zero_data and input_data_file samples run count × instances times through the queue before the model is ready', async () => {
  const data = new Int32Array([7, 8, 9, -1, -2, -3]);
  repo.write('m/warmup/sample.bin', Buffer.from(data.buffer));
  jsModel(`
    model_warmup [
      { name: "zeros", batch_size: 2, count: 2, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], zero_data: true } } },
      { name: "file", batch_size: 2, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], input_data_file: "sample.bin" } } }
    ]`);
  served = await startRepoTriton(repo.root);
  // Ready: every warm-up ran first (2 instances × count 2 zero samples, then 2 × 1 file samples;
  // the scheduler picks the instance, so which instance ran each is not fixed).
  expect(served.triton.repositoryIndex()[0]).toMatchObject({ state: 'READY' });
  expect(events.calls.map((c) => [c.shape, c.values])).toEqual([
    ...Array(4).fill([[2, 3], [0, 0, 0, 0, 0, 0]]),
    ...Array(2).fill([[2, 3], [7, 8, 9, 7, 8, 9]]),  // one sample per request, as Triton
  ]);
});

test('warm-up runs on every instance of every group', async () => {
  // Two groups of 2 (native scheduler and JS instances agree on 4); each instance runs the sample.
  repo.config('m', `
    backend: "js"
    max_batch_size: 4
    input [ { name: "IN", data_type: TYPE_INT32, dims: [ 3 ] } ]
    output [ { name: "OUT", data_type: TYPE_INT32, dims: [ 3 ] } ]
    instance_group [ { count: 2, kind: KIND_CPU }, { count: 2, kind: KIND_CPU } ]
    model_warmup [ { name: "zeros", batch_size: 1, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], zero_data: true } } } ]`);
  repo.write('m/1/model.js', RECORDER);
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()[0]).toMatchObject({ state: 'READY' });
  expect(events.calls.map((c) => c.instance)).toEqual([0, 1, 2, 3]);
  const out = await served.triton.infer('m', { IN: new NDArray('INT32', [1, 3], new Int32Array([1, 2, 3])) });
  expect(Array.from(out.OUT.data as Int32Array)).toEqual([1, 2, 3]);
});

test('random_data gives values of the declared type and shape', async () => {
  jsModel('model_warmup [ { name: "random", batch_size: 1, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], random_data: true } } } ]', 1);
  served = await startRepoTriton(repo.root);
  expect(events.calls).toHaveLength(1);
  expect(events.calls[0].shape).toEqual([1, 3]);
  expect(events.calls[0].values.every((v) => Number.isInteger(v))).toBe(true);
});

test("input_data_file holds one sample, repeated batch_size times (Triton's per-request data)", async () => {
  repo.write('m/warmup/one.bin', Buffer.from(new Int32Array([7, 8, 9]).buffer));
  jsModel('model_warmup [ { name: "file", batch_size: 3, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], input_data_file: "one.bin" } } } ]', 1);
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()[0]).toMatchObject({ state: 'READY' });
  expect(events.calls.map((c) => [c.shape, c.values])).toEqual([[[3, 3], [7, 8, 9, 7, 8, 9, 7, 8, 9]]]);
});

test("BYTES warm-up: random_data gives empty strings (Triton's zero data) and a file's strings are one sample, repeated", async () => {
  const seen: string[][] = [];
  (globalThis as { __warmupBytes?: string[][] }).__warmupBytes = seen;
  const serialized = Buffer.concat(['ab', 'c'].map((t) => {
    const len = Buffer.alloc(4);
    len.writeUInt32LE(t.length);
    return Buffer.concat([len, Buffer.from(t)]);
  }));
  repo.write('s/warmup/strings.bin', serialized);
  repo.config('s', `backend: "js"\nmax_batch_size: 4
    input [ { name: "IN", data_type: TYPE_STRING, dims: [ 2 ] } ]
    output [ { name: "OUT", data_type: TYPE_STRING, dims: [ 2 ] } ]
    instance_group [ { count: 1, kind: KIND_CPU } ]
    model_warmup [
      { name: "random", batch_size: 2, inputs { key: "IN", value: { data_type: TYPE_STRING, dims: [ 2 ], random_data: true } } },
      { name: "file", batch_size: 2, inputs { key: "IN", value: { data_type: TYPE_STRING, dims: [ 2 ], input_data_file: "strings.bin" } } }
    ]`);
  repo.write('s/1/model.js', `exports.execute = (requests) => requests.map((r) => {
    globalThis.__warmupBytes.push(Array.from(r.data.IN.data, (b) => Buffer.from(b).toString()));
    return { OUT: r.data.IN };
  });`);
  try {
    served = await startRepoTriton(repo.root);
    expect(served.triton.repositoryIndex()[0]).toMatchObject({ state: 'READY' });
    expect(seen).toEqual([['', '', '', ''], ['ab', 'c', 'ab', 'c']]);
  } finally {
    delete (globalThis as { __warmupBytes?: string[][] }).__warmupBytes;
  }
});

test("a sequence model's warm-up may list its control inputs (Triton sends them as override inputs); the model sees a sequence of its own", async () => {
  repo.config('m', `backend: "js"\nmax_batch_size: 4
    input [ { name: "IN", data_type: TYPE_INT32, dims: [ 3 ] } ]
    output [ { name: "OUT", data_type: TYPE_INT32, dims: [ 3 ] } ]
    instance_group [ { count: 1, kind: KIND_CPU } ]
    sequence_batching { control_input [
      { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
      { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] } ] }
    model_warmup [ { name: "seq", batch_size: 1, inputs [
      { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], zero_data: true } },
      { key: "START", value: { data_type: TYPE_INT32, dims: [ 1 ], zero_data: true } },
      { key: "READY", value: { data_type: TYPE_INT32, dims: [ 1 ], zero_data: true } } ] } ]`);
  repo.write('m/1/model.js', `exports.execute = (requests) => requests.map((r) => {
    globalThis.__warmupEvents.calls.push({ instance: 0, shape: r.data.IN.shape, values: [...r.data.START.data, ...r.data.READY.data] });
    return { OUT: r.data.IN };
  });`);
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()[0]).toMatchObject({ state: 'READY', reason: '' });
  expect(events.calls).toEqual([{ instance: 0, shape: [1, 3], values: [1, 1] }]);
});

test('a failing warm-up fails the load with the warm-up named; both instances are finalized', async () => {
  events.failOn = 0;
  jsModel('model_warmup [ { name: "zeros", batch_size: 1, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], zero_data: true } } } ]');
  served = await startRepoTriton(repo.root);
  expect(served.triton.repositoryIndex()).toEqual([{
    name: 'm', version: '', state: 'UNAVAILABLE', reason: "model 'm' version 1: failed to run warmup sample 'zeros': cannot handle 0;",
  }]);
  expect(events.finalized).toBe(2);
  await expectRejects(served.triton.infer('m', { IN: new NDArray('INT32', [1, 3], new Int32Array(3)) }), 'NOT_FOUND');
});

test("the server log says each warm-up run and a failure in Triton's words (what Triton's L0_warmup looks for)", async () => {
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'infernode-warmup-log-'));
  const logFile = path.join(logDir, 'server.log');
  try {
    events.failOn = 5;
    repo.config('bad', `backend: "js"\nmax_batch_size: 4
      input [ { name: "IN", data_type: TYPE_INT32, dims: [ 3 ] } ]
      output [ { name: "OUT", data_type: TYPE_INT32, dims: [ 3 ] } ]
      model_warmup [ { name: "five sample", batch_size: 1, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], input_data_file: "five.bin" } } } ]`);
    repo.write('bad/1/model.js', RECORDER);
    repo.write('bad/warmup/five.bin', Buffer.from(new Int32Array([5, 5, 5]).buffer));
    jsModel('model_warmup [ { name: "regular sample", batch_size: 1, count: 2, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], zero_data: true } } } ]');
    served = await startRepoTriton(repo.root, { config: { logVerbose: 1, logFile } });
    const failures = served.logs.join('\n');  // the repository's error lines (the test's log)
    await served.triton.stop();
    served = undefined;
    const log = readFileSync(logFile, 'utf8');
    for (const instance of ['m_0_0', 'm_0_1']) {
      for (const iteration of [1, 2]) {
        expect(log).toContain(`model 'm' instance ${instance} is running warmup sample 'regular sample' for iteration ${iteration}`);
      }
    }
    expect(log).toContain("model 'bad' instance bad_0 failed to run warmup sample 'five sample'");
    expect(failures).toContain("failed to load model 'bad': model 'bad' version 1: failed to run warmup sample 'five sample': cannot handle 5;");
  } finally {
    rmSync(logDir, { recursive: true, force: true });
  }
});

test('a failing warm-up on reload keeps the old version serving', async () => {
  jsModel('', 1);
  served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['m'] });
  events.failOn = 0;
  jsModel('model_warmup [ { name: "zeros", batch_size: 1, inputs { key: "IN", value: { data_type: TYPE_INT32, dims: [ 3 ], zero_data: true } } } ]', 1);
  await expectRejects(served.triton.loadModel('m'), 'INVALID_ARG', "failed to load 'm': model 'm' version 1: failed to run warmup sample 'zeros': cannot handle 0;");
  const out = await served.triton.infer('m', { IN: new NDArray('INT32', [1, 3], new Int32Array([4, 5, 6])) });
  expect(Array.from(out.OUT.data as Int32Array)).toEqual([4, 5, 6]);
});

test('an ONNX warm-up whose sample the model rejects fails the load', async () => {
  repo.onnx('onnx', 1, addConstModel(1));
  repo.config('onnx', `platform: "onnxruntime_onnx"\nmax_batch_size: 4
    model_warmup [ { name: "wide", batch_size: 1, inputs { key: "INPUT0", value: { data_type: TYPE_FP32, dims: [ 5 ], random_data: true } } } ]`);
  repo.onnx('ok', 1, addConstModel(1));
  repo.config('ok', `platform: "onnxruntime_onnx"\nmax_batch_size: 4
    model_warmup [ { name: "zeros", batch_size: 4, count: 3, inputs { key: "INPUT0", value: { data_type: TYPE_FP32, dims: [ 4 ], zero_data: true } } } ]`);
  served = await startRepoTriton(repo.root);
  const [ok, bad] = served.triton.repositoryIndex();  // sorted by name: 'ok', 'onnx'
  expect(bad.state).toBe('UNAVAILABLE');
  expect(bad.reason).toMatch(/^model 'onnx' version 1: failed to run warmup sample 'wide': .*INPUT0/);
  expect(ok.state).toBe('READY');
  expect(served.triton.model('ok').stats().executionCount).toBe(3);
});

test.each([
  ['a data file outside warmup/', 'input_data_file: "../config.pbtxt"', "input_data_file '../config.pbtxt' must be a relative path inside"],
  ['a missing data file', 'input_data_file: "nothing.bin"', "input_data_file 'nothing.bin' is not a file in"],
  ['a data file too short', 'input_data_file: "short.bin"', 'warmup setting expects 12 bytes, but the data provided from '],
  ['an input the model does not have', 'zero_data: true', "'IMAGE' is not an input of the model"],
])('%s fails the load with a clear error', async (_what, source, message) => {
  repo.write('m/warmup/short.bin', Buffer.alloc(4));
  const name = source === 'zero_data: true' ? 'IMAGE' : 'IN';
  jsModel(`model_warmup [ { name: "w", batch_size: 1, inputs { key: "${name}", value: { data_type: TYPE_INT32, dims: [ 3 ], ${source} } } } ]`, 1);
  served = await startRepoTriton(repo.root);
  const [entry] = served.triton.repositoryIndex();
  expect(entry.state).toBe('UNAVAILABLE');
  expect(entry.reason).toContain(message);
  expect(entry.reason).toContain("'m'");
  if (source.includes('short.bin')) expect(entry.reason).toMatch(/short\.bin only has 4 bytes;$/);
});

test('bind(): a warm-up with count 0 (Triton\'s default) runs once on each instance', async () => {
  const { inProcessTriton } = await import('../helpers');
  const triton = inProcessTriton();
  const seen: number[] = [];
  const func = (instance: number) => (requests: { data: Record<string, NDArray> }[]) => {
    seen.push(instance);
    return requests.map((r) => ({ OUT: r.data.IN }));
  };
  triton.bind({
    modelName: 'b', inferFunc: [func(0), func(1)],
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { modelWarmup: [{ name: 'once', batchSize: 1, count: 0, inputs: { IN: { dtype: 'FP32', shape: [1], zeroData: true } } }] },
  });
  try {
    await triton.run();
    expect(seen).toEqual([0, 1]);
  } finally {
    await triton.stop();
  }
});
