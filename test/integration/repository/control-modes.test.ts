/**
 * Model control modes (triton-protocol.md §5, §6.10): none loads everything and refuses the
 * load/unload API; explicit loads only what it is told (loadModels, '*'), then follows the API;
 * poll loads everything and each rescan loads new models, new versions and changed configs, and
 * unloads removed models. Refusals outside explicit mode are Triton's 503 message.
 */
import { readFileSync, renameSync, symlinkSync, unlinkSync, utimesSync } from 'node:fs';
import { NDArray } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import { expectRejects, waitFor } from '../helpers';
import { TempRepo, addConstModel, repoTriton, startRepoTriton, type Served } from './repo-helpers';

const TRITON_503 = 'explicit model load / unload is not allowed if polling is enabled';

let repo: TempRepo;
let served: Served | undefined;

beforeEach(() => {
  repo = new TempRepo('control');
  for (const [name, value] of [['a', 1], ['b', 2], ['c', 3]] as const) repo.onnx(name, 1, addConstModel(value));
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  repo.cleanup();
});

const x = (): NDArray => new NDArray('FP32', [1, 4], new Float32Array(4));

async function added(triton: Triton, name: string, version?: number): Promise<number> {
  const out = await triton.infer(name, { INPUT0: x() }, { modelVersion: version });
  return (out.OUTPUT0.data as Float32Array)[0];
}

/** Points the symbolic link `link` at `target` (what `ln -sfn` does). */
function repoint(link: string, target: string): void {
  unlinkSync(link);
  symlinkSync(target, link);
}

function ready(triton: Triton): string[] {
  return triton.repositoryIndex().filter((e) => e.state === 'READY').map((e) => `${e.name}:${e.version}`);
}

describe('none', () => {
  test('every model is loaded at start and load/unload are refused with 503 before the name is even checked', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'none' });
    const { triton } = served;
    expect(ready(triton)).toEqual(['a:1', 'b:1', 'c:1']);
    for (const call of [() => triton.loadModel('a'), () => triton.unloadModel('a'), () => triton.loadModel('../etc')]) {
      const err = await expectRejects(call(), 'UNAVAILABLE');
      expect(err.message).toBe(TRITON_503);
      expect(err.httpStatus).toBe(503);
    }
    expect(await added(triton, 'a')).toBe(1);
  });

  test('a bad --trace-config refuses the start before any model loads', async () => {
    const bad = repoTriton(repo.root, { controlMode: 'none', config: { traceConfig: ['level=BOGUS'] } });
    await expectRejects(bad.triton.run(), 'INVALID_ARG', 'invalid value for trace level option: BOGUS');
    expect(bad.logs.filter((l) => l.includes('loaded model'))).toEqual([]);
    await bad.triton.stop();
  });

  test('changes on disk are ignored', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'none' });
    repo.onnx('a', 2, addConstModel(20));
    repo.onnx('d', 1, addConstModel(4));
    await served.manager.poll().catch(() => undefined);
    expect(await added(served.triton, 'a')).toBe(1);
    await expectRejects(served.triton.infer('d', { INPUT0: x() }), 'NOT_FOUND');
  });
});

describe('explicit', () => {
  test('loads only the loadModels at start; the index lists the others as unloaded', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['b'] });
    const { triton } = served;
    expect(triton.repositoryIndex()).toEqual([
      { name: 'a', version: '', state: 'UNAVAILABLE', reason: 'unloaded' },
      { name: 'b', version: '1', state: 'READY', reason: '' },
      { name: 'c', version: '', state: 'UNAVAILABLE', reason: 'unloaded' },
    ]);
    expect(triton.repositoryIndex(true)).toEqual([{ name: 'b', version: '1', state: 'READY', reason: '' }]);
    await expectRejects(triton.infer('a', { INPUT0: x() }), 'NOT_FOUND', "Request for unknown model: 'a' is not found");
    expect(triton.isReady()).toBe(true);  // unloaded models do not count against readiness
  });

  test("loadModels ['*'] loads every model; none loads nothing", async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['*'] });
    expect(ready(served.triton)).toEqual(['a:1', 'b:1', 'c:1']);
    await served.triton.stop();
    served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    expect(ready(served.triton)).toEqual([]);
  });

  test('loadModels naming a model the repository lacks fails the start-up with exitOnError', async () => {
    const { repoTriton } = await import('./repo-helpers');
    const s = repoTriton(repo.root, { controlMode: 'explicit', loadModels: ['a', 'zzz'], config: { exitOnError: true } });
    await expectRejects(s.triton.run(), 'UNAVAILABLE', "failed to load model(s):\n  zzz: model 'zzz' is not in the model repository\nTo serve the models that did load, start with exitOnError: false (infernode serve --exit-on-error=false).");
  });

  test('load, reload and unload through the API', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    const { triton } = served;
    await triton.loadModel('a');
    expect(await added(triton, 'a')).toBe(1);
    // Loading again re-reads the directory: the new version replaces the old one.
    repo.onnx('a', 2, addConstModel(20));
    await triton.loadModel('a');
    expect(ready(triton)).toEqual(['a:2']);
    expect(await added(triton, 'a')).toBe(20);
    await triton.unloadModel('a');
    await expectRejects(triton.infer('a', { INPUT0: x() }), 'NOT_FOUND');
    expect(ready(triton)).toEqual([]);
    // Unloading a model that is not loaded is not an error.
    await triton.unloadModel('a');
    await triton.unloadModel('b');
  });

  test('load of a name the repository lacks is NOT_FOUND with Triton\'s message; invalid names are refused', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    await expectRejects(served.triton.loadModel('zzz'), 'NOT_FOUND', "failed to load 'zzz', failed to poll from model repository");
    for (const name of ['../a', 'a/b', '..', '']) {
      await expectRejects(served.triton.loadModel(name), 'INVALID_ARG', 'invalid model name');
    }
  });

  test('racing loads and unloads of one model all settle, in order, and the last one wins', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    const { triton } = served;
    repo.onnx('a', 2, addConstModel(20));
    const ops = [
      triton.loadModel('a'), triton.unloadModel('a'), triton.loadModel('a'), triton.loadModel('a', { config: '{"max_batch_size": 2}' }),
      triton.unloadModel('a'), triton.loadModel('a'),
    ];
    const results = await Promise.allSettled(ops);
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(ready(triton)).toEqual(['a:2']);
    expect(triton.model('a').config.maxBatchSize).toBe(4);
    expect(await added(triton, 'a')).toBe(20);
  });

  test('stop() while a load is in progress: the load settles, nothing stays loaded, later loads are refused', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit' });
    const { triton } = served;
    const loading = triton.loadModel('a').then(() => 'loaded', (err: Error) => err.message);
    const stopping = triton.stop();
    const after = triton.loadModel('b').then(() => 'loaded', (err: Error) => err.message);
    await stopping;
    expect(['loaded', "failed to load 'a': the server is stopping"]).toContain(await loading);
    expect(await after).toBe('the server is stopping: models can no longer be loaded or unloaded');
    expect(triton.models()).toEqual([]);
    served = undefined;
  });

  // Triton's qa/L0_lifecycle test_load_new_model_version: a load reloads only what changed.
  test('a load reloads only the versions whose files changed; an unchanged model is left alone', async () => {
    const inits = repo.path('inits.log');
    const code = `const fs = require('fs');
exports.initialize = (a) => fs.appendFileSync(${JSON.stringify(inits)}, 'v' + a.modelVersion + ' ');
exports.execute = (reqs) => reqs.map(() => ({ OUTPUT0: new Float32Array([1]) }));`;
    const config = (policy: string, extra = ''): string => `backend: "js"\nversion_policy: { ${policy} }\n${extra}
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 1 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 1 ] } ]`;
    for (const v of [1, 2, 3]) repo.write(`j/${v}/model.js`, code);
    repo.config('j', config('specific: { versions: [1, 2] }'));
    served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['j'] });
    const { triton, logs } = served;
    const initialized = (): string => readFileSync(inits, 'utf8').trim();
    const v1 = triton.model('j', 1);
    await triton.loadModel('j');
    expect(initialized()).toBe('v1 v2');
    // Version 2 touched, 4 added, the policy now lists 1 to 4: 1 stays as it is.
    repo.write('j/2/model.js', `${code}\n// touched`);
    repo.write('j/4/model.js', code);
    repo.config('j', config('specific: { versions: [1, 2, 3, 4] }'));
    await triton.loadModel('j');
    expect(initialized()).toBe('v1 v2 v2 v3 v4');
    expect(triton.model('j', 1)).toBe(v1);
    expect(ready(triton)).toEqual(['j:1', 'j:2', 'j:3', 'j:4']);
    expect(logs).toContain("infernode: loaded model 'j' version(s) 2, 3, 4 (version(s) 1 unchanged)");
    // A file beside the versions (a dependency) or a config change beyond version_policy: all reload.
    repo.write('j/dependency.txt', 'x');
    await triton.loadModel('j');
    expect(initialized()).toBe('v1 v2 v2 v3 v4 v1 v2 v3 v4');
    repo.config('j', config('specific: { versions: [1, 2, 3, 4] }', 'max_batch_size: 2'));
    await triton.loadModel('j');
    expect(initialized()).toBe('v1 v2 v2 v3 v4 v1 v2 v3 v4 v1 v2 v3 v4');
    expect(triton.model('j', 1).config.maxBatchSize).toBe(2);
  });

  test('a config with uint64 values past 2^53 (Triton\'s priority_levels: 2^64 - 1) unchanged: a load leaves the model alone', async () => {
    repo.config('a', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\n' +
      'dynamic_batching { priority_levels: 18446744073709551615 default_priority_level: 4294967296 }');
    served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['a'] });
    const { triton } = served;
    const before = triton.model('a');
    expect(before.config.dynamicBatching).toMatchObject({ priorityLevels: 2n ** 64n - 1n, defaultPriorityLevel: 4294967296 });
    await triton.loadModel('a');
    expect(triton.model('a')).toBe(before);
    expect(await added(triton, 'a')).toBe(1);
  });

  test('a load with a config reloads even unchanged files, and so does the next plain load', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['a'] });
    const { triton } = served;
    const before = triton.model('a');
    await triton.loadModel('a', { config: '{"max_batch_size": 2}' });
    expect(triton.model('a').config.maxBatchSize).toBe(2);
    await triton.loadModel('a');
    expect(triton.model('a').config.maxBatchSize).toBe(4);
    expect(triton.model('a')).not.toBe(before);
  });

  test('changes on disk are picked up only by a load', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['a'] });
    repo.onnx('a', 2, addConstModel(20));
    await served.manager.poll().catch(() => undefined);
    expect(await added(served.triton, 'a')).toBe(1);
  });
});

describe('poll', () => {
  test('load/unload are refused with 503 (Triton\'s message)', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    const err = await expectRejects(served.triton.loadModel('a'), 'UNAVAILABLE');
    expect(err.message).toBe(TRITON_503);
    expect((await expectRejects(served.triton.unloadModel('a'), 'UNAVAILABLE')).message).toBe(TRITON_503);
  });

  test('a rescan loads a new model, swaps in a new version, reloads a changed config and unloads a removed model', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    const { triton, manager, logs } = served;
    expect(ready(triton)).toEqual(['a:1', 'b:1', 'c:1']);

    repo.onnx('d', 1, addConstModel(4));                      // new model
    repo.onnx('a', 2, addConstModel(20));                     // new version of a
    repo.config('b', 'platform: "onnxruntime_onnx"\nmax_batch_size: 16');  // b gets a config
    repo.remove('c');                                         // c removed
    await manager.poll();

    expect(ready(triton)).toEqual(['a:2', 'b:1', 'd:1']);
    expect(await added(triton, 'a')).toBe(20);
    await expectRejects(triton.infer('a', { INPUT0: x() }, { modelVersion: 1 }), 'NOT_FOUND');
    expect(triton.model('b').config.maxBatchSize).toBe(16);
    expect(await added(triton, 'd')).toBe(4);
    await expectRejects(triton.infer('c', { INPUT0: x() }), 'NOT_FOUND');
    expect(triton.repositoryIndex().find((e) => e.name === 'c')).toBeUndefined();
    expect(logs).toEqual(expect.arrayContaining([
      "infernode: loaded model 'a' version(s) 2", "infernode: loaded model 'b' version(s) 1", "infernode: loaded model 'd' version(s) 1",
    ]));
  });

  test('a rescan with nothing changed reloads nothing', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    const before = served.triton.model('a');
    const lines = served.logs.length;
    await served.manager.poll();
    expect(served.triton.model('a')).toBe(before);
    expect(served.logs.length).toBe(lines);
  });

  test('a config rewritten with the same size and time stamp is still seen as changed', async () => {
    repo.config('a', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    const file = repo.config('a', 'platform: "onnxruntime_onnx"\nmax_batch_size: 8');
    const stamp = new Date('2024-01-01T00:00:00Z');
    utimesSync(file, stamp, stamp);
    await served.manager.poll();
    const file2 = repo.config('a', 'platform: "onnxruntime_onnx"\nmax_batch_size: 2');
    utimesSync(file2, stamp, stamp);
    await served.manager.poll();
    expect(served.triton.model('a').config.maxBatchSize).toBe(2);
  });

  test('a model broken on disk keeps its loaded version serving (a failed reload leaves the old model)', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    repo.onnx('a', 2, Buffer.from('not onnx'));
    await served.manager.poll();
    expect(await added(served.triton, 'a')).toBe(1);
    expect(served.triton.repositoryIndex().find((e) => e.name === 'a')).toMatchObject({
      version: '1', state: 'READY', reason: expect.stringMatching(/^reload failed: model 'a' version 2: /),
    });
    // Fixed on disk, the next rescan loads it.
    repo.onnx('a', 2, addConstModel(20));
    await served.manager.poll();
    expect(await added(served.triton, 'a')).toBe(20);
    expect(served.triton.repositoryIndex().find((e) => e.name === 'a')).toMatchObject({ version: '2', state: 'READY', reason: '' });
  });

  test('a model that failed at start is retried once its files change', async () => {
    repo.onnx('bad', 1, Buffer.alloc(0));
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    expect(served.triton.repositoryIndex().find((e) => e.name === 'bad')!.state).toBe('UNAVAILABLE');
    repo.onnx('bad', 1, addConstModel(5));
    await served.manager.poll();
    expect(await added(served.triton, 'bad')).toBe(5);
  });

  test('removing the only version directory unloads the model', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    repo.remove('a/1');
    await served.manager.poll();
    await expectRejects(served.triton.infer('a', { INPUT0: x() }), 'NOT_FOUND');
    expect(served.triton.repositoryIndex().find((e) => e.name === 'a')).toMatchObject({ state: 'UNAVAILABLE', version: '' });
  });

  test('re-pointing a linked version directory or model file (ln -sfn deploys) reloads the model', async () => {
    repo.write('.store/v1/model.onnx', addConstModel(1));
    repo.write('.store/v2/model.onnx', addConstModel(2));
    repo.mkdir('m');
    symlinkSync('../.store/v1', repo.path('m/1'));
    repo.write('.store/f10.onnx', addConstModel(10));
    repo.write('.store/f20.onnx', addConstModel(20));
    repo.mkdir('f/1');
    symlinkSync('../../.store/f10.onnx', repo.path('f/1/model.onnx'));
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    expect([await added(served.triton, 'm'), await added(served.triton, 'f')]).toEqual([1, 10]);
    repoint(repo.path('m/1'), '../.store/v2');
    repoint(repo.path('f/1/model.onnx'), '../../.store/f20.onnx');
    await served.manager.poll();
    expect([await added(served.triton, 'm'), await added(served.triton, 'f')]).toEqual([2, 20]);
  });

  test('a config.pbtxt linked to a Kubernetes ConfigMap volume in the repository is reloaded when the map changes', async () => {
    // The kubelet's volume layout (mounted at .configs/): <key> -> ..data/<key>, ..data ->
    // ..<timestamp>/; an update writes a new timestamped directory and re-points ..data.
    repo.write('.configs/..2024_01/a.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
    symlinkSync('..2024_01', repo.path('.configs/..data'));
    symlinkSync('..data/a.pbtxt', repo.path('.configs/a.pbtxt'));
    symlinkSync('../.configs/a.pbtxt', repo.path('a/config.pbtxt'));
    served = await startRepoTriton(repo.root, { controlMode: 'poll' });
    expect(served.triton.model('a').config.maxBatchSize).toBe(4);
    repo.write('.configs/..2024_02/a.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 8');
    repoint(repo.path('.configs/..data'), '..2024_02');
    repo.remove('.configs/..2024_01');
    await served.manager.poll();
    expect(served.triton.model('a').config.maxBatchSize).toBe(8);
  });

  test('with pollSecs, rescans happen on their own', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll', pollSecs: 1 });
    repo.onnx('d', 1, addConstModel(4));
    await waitFor(() => served!.triton.repositoryIndex().some((e) => e.name === 'd' && e.state === 'READY'), 'the timed rescan', 5000);
    expect(await added(served.triton, 'd')).toBe(4);
  });

  test('pollSecs 0 disables timed rescans (tritonserver\'s --repository-poll-secs=0)', async () => {
    served = await startRepoTriton(repo.root, { controlMode: 'poll', pollSecs: 0 });
    repo.onnx('d', 1, addConstModel(4));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(served.triton.repositoryIndex().find((e) => e.name === 'd')).toMatchObject({ state: 'UNAVAILABLE', reason: 'unloaded' });
    await served.manager.poll();
    expect(await added(served.triton, 'd')).toBe(4);
  });
});

test('several repositories are served together', async () => {
  const other = new TempRepo('control-b');
  try {
    other.onnx('z', 1, addConstModel(26));
    served = await startRepoTriton([repo.root, other.root]);
    expect(ready(served.triton)).toEqual(['a:1', 'b:1', 'c:1', 'z:1']);
    expect(await added(served.triton, 'z')).toBe(26);
  } finally {
    await served?.triton.stop();
    served = undefined;
    other.cleanup();
  }
});

/**
 * Several repositories (Triton's qa/L0_lifecycle test_multiple_model_repository_polling and
 * test_model_repository_index): a name in two of them, or a repository that cannot be listed,
 * affects those models only.
 */
describe('several repositories', () => {
  const DUPLICATE = 'model appears in two or more repositories';
  let other: TempRepo;

  beforeEach(() => {
    other = new TempRepo('control-b');
    other.onnx('z', 1, addConstModel(26));
  });

  afterEach(async () => {
    await served?.triton.stop();
    served = undefined;
    other.cleanup();
  });

  test('poll: a name that appears in a second repository unloads that model only; removing one copy loads the other', async () => {
    served = await startRepoTriton([repo.root, other.root], { controlMode: 'poll' });
    const { triton, manager, logs } = served;
    other.onnx('b', 1, addConstModel(200));
    await manager.poll();
    expect(ready(triton)).toEqual(['a:1', 'c:1', 'z:1']);
    expect(triton.repositoryIndex().filter((e) => e.name === 'b')).toEqual([{ name: 'b', version: '', state: 'UNAVAILABLE', reason: DUPLICATE }]);
    await expectRejects(triton.infer('b', { INPUT0: x() }), 'NOT_FOUND');
    expect(await added(triton, 'a')).toBe(1);
    expect(await added(triton, 'z')).toBe(26);
    expect(logs).toContain(`infernode: failed to poll model 'b': not unique across all model repositories (${repo.root}, ${other.root})`);
    repo.remove('b');
    await manager.poll();
    expect(await added(triton, 'b')).toBe(200);
  });

  test('poll: a repository gone for a rescan unloads its own models only (Triton\'s poll), and they come back with it', async () => {
    served = await startRepoTriton([repo.root, other.root], { controlMode: 'poll' });
    const { triton, manager, logs } = served;
    const away = `${other.root}-away`;
    renameSync(other.root, away);
    try {
      await manager.poll();
      expect(ready(triton)).toEqual(['a:1', 'b:1', 'c:1']);
      expect(await added(triton, 'a')).toBe(1);
      const failed = (): number => logs.filter((l) => l.startsWith(`infernode: failed to poll model repository '${other.root}': `)).length;
      expect(failed()).toBe(1);
      triton.repositoryIndex();
      await manager.poll();
      expect(failed()).toBe(1);  // logged when it became unreadable, not at every scan
    } finally {
      renameSync(away, other.root);
    }
    await manager.poll();
    expect(await added(triton, 'z')).toBe(26);
  });

  test('none: a duplicated name fails alone; the other models of both repositories serve', async () => {
    repo.onnx('z', 1, addConstModel(27));
    served = await startRepoTriton([repo.root, other.root]);
    expect(ready(served.triton)).toEqual(['a:1', 'b:1', 'c:1']);
    expect(served.triton.repositoryIndex().find((e) => e.name === 'z')).toEqual({ name: 'z', version: '', state: 'UNAVAILABLE', reason: DUPLICATE });
  });

  test('explicit: the start-up loads what it is told despite a duplicate elsewhere; loading the duplicate fails as in Triton', async () => {
    repo.onnx('z', 1, addConstModel(27));
    served = await startRepoTriton([repo.root, other.root], { controlMode: 'explicit', loadModels: ['a'] });
    expect(ready(served.triton)).toEqual(['a:1']);
    await served.triton.loadModel('b');
    expect(await added(served.triton, 'b')).toBe(2);
    await expectRejects(served.triton.loadModel('z'), 'INTERNAL', `failed to load 'z', failed to poll from model repository: ${DUPLICATE}`);
    expect(served.triton.repositoryIndex().find((e) => e.name === 'z')).toMatchObject({ state: 'UNAVAILABLE', reason: DUPLICATE });
  });
});
