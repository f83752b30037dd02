/**
 * JS models under Node's own module loader, in a child process running the compiled lib/: ES
 * module models (model.mjs, named or default exports) and reloading a changed model file (and
 * the files it requires) at the same path. Jest replaces Node's module loader in its sandbox
 * (no dynamic import() of ES modules, a module registry that require.cache does not reach), so
 * these run where infernode really runs.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { ensureLib, LIB } from '../lib-build';
import { TempRepo } from './repo-helpers';

let repo: TempRepo;

beforeAll(() => {
  ensureLib();
}, 120_000);

beforeEach(() => {
  repo = new TempRepo('jsnode');
});

afterEach(() => {
  repo.cleanup();
});

const CONFIG = `
  backend: "js"
  max_batch_size: 4
  input [ { name: "IN", data_type: TYPE_FP32, dims: [ 2 ] } ]
  output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 2 ] } ]
  instance_group [ { count: 2, kind: KIND_CPU } ]`;

/**
 * Runs `body` (async JS, with `triton`, `manager`, `infer(name, values)`, `write(rel, text)`
 * and `report(value)` in scope) in a child node process serving `repo`; returns the reports.
 */
function runChild(controlMode: string, body: string): unknown[] {
  const script = `
    const fs = require('node:fs');
    const path = require('node:path');
    const { Triton } = require(${JSON.stringify(path.join(LIB, 'triton.js'))});
    const { NDArray } = require(${JSON.stringify(path.join(LIB, 'tensor.js'))});
    const repo = ${JSON.stringify(repo.root)};
    const report = (value) => process.stdout.write('REPORT ' + JSON.stringify(value) + '\\n');
    const write = (rel, text) => { fs.mkdirSync(path.dirname(path.join(repo, rel)), { recursive: true }); fs.writeFileSync(path.join(repo, rel), text); };
    const triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false, exitOnError: false } });
    const manager = triton.useRepository({ repositories: [repo], controlMode: ${JSON.stringify(controlMode)}, pollSecs: 0, log: () => {} });
    const infer = async (name, values) => {
      const out = await triton.infer(name, { IN: new NDArray('FP32', [values.length / 2, 2], new Float32Array(values)) });
      return Array.from(out.OUT.data);
    };
    (async () => {
      await triton.run();
      ${body}
      await triton.stop();
    })().catch((err) => { report({ error: err.message }); process.exit(3); });`;
  const file = repo.write('child.js', script);
  const result = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
  const reports = result.stdout.split('\n').filter((l) => l.startsWith('REPORT ')).map((l) => JSON.parse(l.slice(7)) as unknown);
  if (result.status !== 0) throw new Error(`child exited with ${result.status}: ${JSON.stringify(reports)}\n${result.stderr}`);
  return reports;
}

test('model.mjs: initialize per instance, execute, finalize per instance at unload (named exports)', () => {
  repo.config('esm', CONFIG);
  repo.write('esm/1/model.mjs', `
    const log = (globalThis.esmLog ??= []);
    export async function initialize(args) { log.push('initialize ' + args.instanceIndex + ' ' + args.modelName + ' v' + args.modelVersion); }
    export function execute(requests) { return requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v * 3) })); }
    export function finalize(args) { log.push('finalize ' + args.instanceIndex); }`);
  const reports = runChild('explicit', `
    await triton.loadModel('esm');
    report(globalThis.esmLog.slice());
    report(await infer('esm', [1, 2, 3, 4]));
    await triton.unloadModel('esm');
    report(globalThis.esmLog.slice());`);
  expect(reports).toEqual([
    ['initialize 0 esm v1', 'initialize 1 esm v1'],
    [3, 6, 9, 12],
    ['initialize 0 esm v1', 'initialize 1 esm v1', 'finalize 0', 'finalize 1'],
  ]);
});

test('model.mjs with a default export object, and a throwing execute failing only its batch', () => {
  repo.config('esm', CONFIG);
  repo.write('esm/1/model.mjs', `
    export default {
      execute(requests) {
        if (requests.some((r) => r.data.IN.data[0] < 0)) throw Object.assign(new Error('negative input'), { code: 'INVALID_ARG' });
        return requests.map((r) => ({ OUT: r.data.IN.data.map((v) => -v) }));
      },
    };`);
  const reports = runChild('none', `
    report(await infer('esm', [1, 2]));
    try { await infer('esm', [-1, 2]); } catch (err) { report([err.code, err.message]); }
    report(await infer('esm', [5, 6]));`);
  expect(reports).toEqual([[-1, -2], ['INVALID_ARG', 'negative input'], [-5, -6]]);
});

test('poll reloads a changed model.js and the file it requires, at the same paths', () => {
  repo.config('cjs', CONFIG);
  repo.write('cjs/1/k.js', 'module.exports = 10;');
  repo.write('cjs/1/model.js', `
    const k = require('./k.js');
    exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v + k) }));`);
  const reports = runChild('poll', `
    report(await infer('cjs', [1, 2]));
    write('cjs/1/k.js', 'module.exports = 1000;');
    await manager.poll();
    report(await infer('cjs', [1, 2]));
    write('cjs/1/model.js', "const k = require('./k.js'); exports.execute = (rs) => rs.map((r) => ({ OUT: r.data.IN.data.map((v) => v * k) }));");
    await manager.poll();
    report(await infer('cjs', [1, 2]));`);
  expect(reports).toEqual([[11, 12], [1001, 1002], [1000, 2000]]);
});

test('poll reloads a changed model.mjs at the same path', () => {
  repo.config('esm', CONFIG);
  repo.write('esm/1/model.mjs', 'export const execute = (rs) => rs.map((r) => ({ OUT: r.data.IN.data.map((v) => v + 1) }));');
  const reports = runChild('poll', `
    report(await infer('esm', [1, 2]));
    write('esm/1/model.mjs', 'export const execute = (rs) => rs.map((r) => ({ OUT: r.data.IN.data.map((v) => v + 2) }));');
    await manager.poll();
    report(await infer('esm', [1, 2]));`);
  expect(reports).toEqual([[2, 3], [3, 4]]);
});

test('a model.mjs that fails to import is UNAVAILABLE with the reason', () => {
  repo.config('esm', CONFIG);
  repo.write('esm/1/model.mjs', 'export const execute = ;');
  const reports = runChild('none', 'report(triton.repositoryIndex());');
  expect(reports).toEqual([[{
    name: 'esm', version: '', state: 'UNAVAILABLE', reason: expect.stringMatching(/^model 'esm' version 1: cannot load .*model\.mjs: /),
  }]]);
});
