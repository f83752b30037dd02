/**
 * Version directories and version_policy (latest N, all, specific), and the model file name
 * (model.onnx, a model.onnx directory, default_model_filename). Every version's model adds its
 * own version number, so each response tells which version served it.
 */
import { toModelConfigJson } from '../../../ts/config/model-config-json';
import { NDArray } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import { expectRejects } from '../helpers';
import { TempRepo, addConstModel, startRepoTriton } from './repo-helpers';

let repo: TempRepo;
let triton: Triton | undefined;

beforeEach(() => {
  repo = new TempRepo('versions');
});

afterEach(async () => {
  await triton?.stop();
  triton = undefined;
  repo.cleanup();
});

const x = (): NDArray => new NDArray('FP32', [1, 4], new Float32Array([0, 1, 2, 3]));

/** The constant the serving version adds (its version number). */
async function servedBy(name: string, version?: number): Promise<number> {
  const out = await triton!.infer(name, { INPUT0: x() }, { modelVersion: version });
  return (out.OUTPUT0.data as Float32Array)[0];
}

/** Writes versions 1..3 of `name` (each adds its number) with `policy` in config.pbtxt. */
function versioned(name: string, policy: string, versions = [1, 2, 3]): void {
  for (const v of versions) repo.onnx(name, v, addConstModel(v));
  repo.config(name, `platform: "onnxruntime_onnx"\nmax_batch_size: 4\n${policy}`);
}

async function serve(): Promise<Triton> {
  ({ triton } = await startRepoTriton(repo.root));
  return triton;
}

function loadedVersions(name: string): string[] {
  return triton!.repositoryIndex().filter((e) => e.name === name && e.state === 'READY').map((e) => e.version);
}

test('the default policy serves the latest version only', async () => {
  versioned('m', '');
  await serve();
  expect(loadedVersions('m')).toEqual(['3']);
  expect(await servedBy('m')).toBe(3);
  expect(await servedBy('m', 3)).toBe(3);
  await expectRejects(servedBy('m', 2), 'NOT_FOUND', "'m' version 2");
  expect(toModelConfigJson(triton!.model('m').config).version_policy).toEqual({ latest: { num_versions: 1 } });
});

test('latest { num_versions: 2 } serves the two highest versions; requests without a version go to the highest', async () => {
  versioned('m', 'version_policy { latest { num_versions: 2 } }');
  await serve();
  expect(loadedVersions('m')).toEqual(['2', '3']);
  expect(await servedBy('m')).toBe(3);
  expect(await servedBy('m', 2)).toBe(2);
  await expectRejects(servedBy('m', 1), 'NOT_FOUND');
});

test('latest with more versions than exist serves them all', async () => {
  versioned('m', 'version_policy { latest { num_versions: 10 } }');
  await serve();
  expect(loadedVersions('m')).toEqual(['1', '2', '3']);
});

test('all serves every version, each with its own session', async () => {
  versioned('m', 'version_policy { all { } }');
  await serve();
  expect(loadedVersions('m')).toEqual(['1', '2', '3']);
  expect(await Promise.all([1, 2, 3].map((v) => servedBy('m', v)))).toEqual([1, 2, 3]);
  expect(triton!.model('m', 1).config.version).toBe(1);
});

test('specific serves exactly the listed versions', async () => {
  versioned('m', 'version_policy { specific { versions: [ 1, 3 ] } }');
  await serve();
  expect(loadedVersions('m')).toEqual(['1', '3']);
  expect(await servedBy('m', 1)).toBe(1);
  expect(await servedBy('m')).toBe(3);
  await expectRejects(servedBy('m', 2), 'NOT_FOUND');
});

test('specific listing a version twice loads it once', async () => {
  versioned('m', 'version_policy { specific { versions: [ 2, 2 ] } }');
  await serve();
  expect(loadedVersions('m')).toEqual(['2']);
  expect(await servedBy('m')).toBe(2);
});

test('specific naming a version without its directory loads the others and logs Triton\'s line for it', async () => {
  versioned('m', 'version_policy { specific { versions: [ 2, 7 ] } }');
  const served = await startRepoTriton(repo.root);
  triton = served.triton;
  expect(loadedVersions('m')).toEqual(['2']);
  expect(await servedBy('m')).toBe(2);
  expect(served.logs).toContain("infernode: version 7 is specified for model 'm', but the version directory is not present");
});

test('specific naming only versions without directories fails the load with Triton\'s text', async () => {
  versioned('m', 'version_policy { specific { versions: [ 7, 8 ] } }');
  await serve();
  expect(triton!.repositoryIndex()).toEqual([{
    name: 'm', version: '', state: 'UNAVAILABLE',
    reason: "at least one version must be available under the version policy of model 'm'",
  }]);
});

test('latest { num_versions: 0 } is refused as a config error, not reported as missing versions', async () => {
  versioned('m', 'version_policy { latest { num_versions: 0 } }');
  await serve();
  const [entry] = triton!.repositoryIndex();
  expect(entry.state).toBe('UNAVAILABLE');
  expect(entry.reason).toContain('version_policy.latest.num_versions must be >= 1, got 0');
});

test('version directories that are not positive integers without leading zeros are ignored', async () => {
  for (const dir of ['01', '0', 'v4', '1.5', '-1']) repo.onnx('m', 1, addConstModel(99), `../${dir}/model.onnx`);
  repo.onnx('m', 2, addConstModel(2));
  repo.write('m/10', 'a file, not a directory');
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\nversion_policy { all { } }');
  await serve();
  expect(loadedVersions('m')).toEqual(['2']);
  expect(await servedBy('m')).toBe(2);
});

test('versions order numerically: 10 is later than 9', async () => {
  versioned('m', '', [9, 10]);
  await serve();
  expect(loadedVersions('m')).toEqual(['10']);
  expect(await servedBy('m')).toBe(10);
});

test('default_model_filename picks the file in each version directory', async () => {
  repo.onnx('m', 1, addConstModel(5), 'weights.onnx');
  repo.onnx('m', 1, addConstModel(1));  // model.onnx is ignored when another name is configured
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\ndefault_model_filename: "weights.onnx"');
  await serve();
  expect(await servedBy('m')).toBe(5);
  expect(toModelConfigJson(triton!.model('m').config).default_model_filename).toBe('weights.onnx');
});

test('default_model_filename naming a missing file fails the load, naming the file and the version', async () => {
  repo.onnx('m', 1, addConstModel(1));
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\ndefault_model_filename: "weights.onnx"');
  await serve();
  const [entry] = triton!.repositoryIndex();
  expect(entry).toMatchObject({ name: 'm', state: 'UNAVAILABLE' });
  expect(entry.reason).toContain("model 'm' version 1: no model file");
  expect(entry.reason).toContain("'weights.onnx'");
});

test.each(['../1/model.onnx', 'sub/model.onnx', '..'])('default_model_filename %s (not a plain file name) is refused', async (name) => {
  repo.onnx('m', 1, addConstModel(1));
  repo.config('m', `platform: "onnxruntime_onnx"\nmax_batch_size: 4\ndefault_model_filename: "${name}"`);
  await serve();
  const [entry] = triton!.repositoryIndex();
  expect(entry.state).toBe('UNAVAILABLE');
  expect(entry.reason).toContain(`default_model_filename '${name}' must be a plain file name`);
});

test('a model.onnx directory holding model.onnx is loaded (ONNX Runtime backend layout)', async () => {
  repo.onnx('m', 1, addConstModel(4), 'model.onnx/model.onnx');
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
  await serve();
  expect(await servedBy('m')).toBe(4);
});
