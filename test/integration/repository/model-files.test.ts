/**
 * Which files a repository may make the server read (issue 16, item 11; docs/repository.md):
 * every file a load reads resolves (symbolic links followed) inside the repository's real path.
 * Links within the repository load; a model file, config, version directory or label file
 * leading outside fails the load with an error naming the file and the rule, and nothing
 * outside is read or run. Real repositories on disk, real JS and ONNX model loads.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NDArray } from '../../../ts/tensor';
import { expectRejects } from '../helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repo-helpers';

declare global {
  var __outsideModelRan: boolean | undefined;
}

let repo: TempRepo;
let outside: string;
let served: Served;

const CONFIG = `backend: "js"
  max_batch_size: 0
  input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
  output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]`;

/** OUT = IN × 2; records that it ran. */
const MODEL = `
globalThis.__outsideModelRan = true;
exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v * 2) }));`;

const RULE = /resolves to .*, outside .*: files a model repository serves must lie inside it/;

beforeEach(async () => {
  repo = new TempRepo('files');
  outside = mkdtempSync(path.join(os.tmpdir(), 'infernode-outside-'));
  globalThis.__outsideModelRan = false;
  served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
});

afterEach(async () => {
  await served.triton.stop();
  repo.cleanup();
  rmSync(outside, { recursive: true, force: true });
  delete globalThis.__outsideModelRan;
});

async function doubled(model: string, version?: number): Promise<number> {
  const out = await served.triton.infer(model, { IN: new NDArray('FP32', [1], new Float32Array([21])) }, { modelVersion: version });
  return (out.OUT.data as Float32Array)[0];
}

test('a model.js that is a symbolic link to a file outside the repository is not loaded, and never runs', async () => {
  const target = path.join(outside, 'model.js');
  writeFileSync(target, MODEL);
  repo.config('m', CONFIG);
  repo.mkdir('m/1');
  symlinkSync(target, repo.path('m/1/model.js'));
  const e = await expectRejects(served.triton.loadModel('m'), 'INVALID_ARG', RULE);
  expect(e.message).toContain(repo.path('m/1/model.js'));
  expect(e.message).toContain(target);
  expect(globalThis.__outsideModelRan).toBe(false);
  expect(served.triton.repositoryIndex().find((x) => x.name === 'm')?.state).toBe('UNAVAILABLE');
});

test('symbolic links that stay inside the repository load: a model file and a version directory', async () => {
  repo.config('m', CONFIG);
  repo.write('m/impl/model.js', MODEL);
  repo.mkdir('m/1');
  symlinkSync('../impl/model.js', repo.path('m/1/model.js'));
  symlinkSync('1', repo.path('m/2'));
  await served.triton.loadModel('m');
  expect(served.triton.modelVersions('m').map((m) => m.version)).toEqual([2]);
  expect(await doubled('m')).toBe(42);
});

test('a version directory that is a symbolic link to a directory outside: the load fails naming its model file', async () => {
  writeFileSync(path.join(outside, 'model.js'), MODEL);
  repo.config('m', CONFIG);
  symlinkSync(outside, repo.path('m/1'));
  const e = await expectRejects(served.triton.loadModel('m'), 'INVALID_ARG', RULE);
  expect(e.message).toContain("model 'm' version 1");
  expect(e.message).toContain(repo.path('m/1/model.js'));
  expect(globalThis.__outsideModelRan).toBe(false);
});

test('a config.pbtxt leading outside fails the load naming the config file', async () => {
  const target = path.join(outside, 'config.pbtxt');
  writeFileSync(target, CONFIG);
  repo.mkdir('m');
  symlinkSync(target, repo.path('m/config.pbtxt'));
  repo.write('m/1/model.js', MODEL);
  const e = await expectRejects(served.triton.loadModel('m'), 'INVALID_ARG', RULE);
  expect(e.message).toContain(`model 'm': the config file ${repo.path('m/config.pbtxt')}`);
});

test('an ONNX model file leading outside fails the load', async () => {
  const target = path.join(outside, 'model.onnx');
  writeFileSync(target, addConstModel(1));
  repo.config('onnx', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
  repo.mkdir('onnx/1');
  symlinkSync(target, repo.path('onnx/1/model.onnx'));
  const e = await expectRejects(served.triton.loadModel('onnx'), 'INVALID_ARG', RULE);
  expect(e.message).toContain(repo.path('onnx/1/model.onnx'));
});

test('a label file leading outside fails the load', async () => {
  const target = path.join(outside, 'labels.txt');
  writeFileSync(target, 'a\nb\n');
  repo.config('m', CONFIG.replace(
    'output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]',
    'output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ], label_filename: "labels.txt" } ]'));
  symlinkSync(target, repo.path('m/labels.txt'));
  repo.write('m/1/model.js', MODEL);
  await expectRejects(served.triton.loadModel('m'), 'INVALID_ARG', /label_filename 'labels.txt'.*outside/);
});

test('a model directory that is a symbolic link staying inside the repository is a model (Triton stats through links)', async () => {
  repo.config('.store/m', CONFIG);
  repo.write('.store/m/1/model.js', MODEL);
  symlinkSync('.store/m', repo.path('alias'));
  await served.triton.loadModel('alias');
  expect(await doubled('alias')).toBe(42);
  expect(served.triton.repositoryIndex().map((e) => e.name)).toEqual(['alias']);
});

test('a model directory linking outside the repository is listed, and its load fails naming it and the rule; nothing outside runs', async () => {
  writeFileSync(path.join(outside, 'config.pbtxt'), CONFIG);
  mkdirSync(path.join(outside, '1'));
  writeFileSync(path.join(outside, '1', 'model.js'), MODEL);
  symlinkSync(outside, repo.path('ext'));
  const e = await expectRejects(served.triton.loadModel('ext'), 'INVALID_ARG', RULE);
  expect(e.message).toContain(`model 'ext': the model directory ${repo.path('ext')}`);
  expect(globalThis.__outsideModelRan).toBe(false);
  expect(served.triton.repositoryIndex().find((x) => x.name === 'ext')?.state).toBe('UNAVAILABLE');
});
