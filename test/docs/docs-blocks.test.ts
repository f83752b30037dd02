/**
 * Every code block of README.md and docs/*.md runs as written (the convention: blocks.ts and
 * docs/testing.md): CommonJS and ES module blocks with node, TypeScript blocks compiled with
 * tsc --strict and run, each importing 'infernode' as a user's code does (a temporary project
 * whose node_modules/infernode links to this checkout, built lib/ and its .d.ts); serving
 * blocks are stopped with SIGINT once ready, after the blocks that call them; JS model blocks
 * are served from a repository and answer a request. Blocks run in a few child processes, two
 * groups at a time, each group in its own network namespace where one can be made (its
 * localhost:8000 is its own). Every block must run, or say why not.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureLib } from '../integration/lib-build';
import { docFiles, extractBlocks, shellNeedsMarker, type DocBlock } from './blocks';

const ROOT = path.resolve(__dirname, '../..');
const GROUP_TIMEOUT_MS = 60_000;
const CONCURRENT_GROUPS = 2;

/** The configs of the docs' JS models (the block is the model file). */
const MODEL_CONFIGS: Record<string, () => string> = {
  add_sub: () => readFileSync(path.join(ROOT, 'examples/models/add_sub/config.pbtxt'), 'utf8'),
  counter: () => `name: "counter"
backend: "js"
max_batch_size: 8
input [ { name: "N", data_type: TYPE_INT32, dims: [ 1 ] } ]
output [ { name: "K", data_type: TYPE_INT32, dims: [ 1 ] } ]
model_transaction_policy { decoupled: true }
`,
};

interface Step { id: string; command: string[]; cwd: string; env?: Record<string, string> }
interface Group { server?: Step; steps: Step[] }
interface Result { ok: boolean; output: string }

const blocks: DocBlock[] = docFiles(ROOT).flatMap((file) => extractBlocks(ROOT, file));
const results = new Map<string, Result>();
let work = '';

/** `unshare -rn` with loopback up, when this machine allows it: a network namespace per group. */
function isolation(): string[] {
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8' });
  return probe.status === 0 ? ['unshare', '-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"'] : [];
}

function fileName(block: DocBlock, ext: string): string {
  return `${block.file.replace(/[^A-Za-z0-9]+/g, '_')}_${block.line}${ext}`;
}

/** Writes the runnable blocks into the temporary project; returns each block's step (TS: once compiled). */
function prepare(): Map<string, Step> {
  const steps = new Map<string, Step>();
  const tsFiles: [DocBlock, string][] = [];
  for (const block of blocks) {
    if (block.notRun || !block.kind) continue;
    if (block.kind === 'cjs' || block.kind === 'mjs') {
      const file = path.join(work, fileName(block, block.kind === 'cjs' ? '.cjs' : '.mjs'));
      writeFileSync(file, block.code);
      steps.set(block.id, { id: block.id, command: [process.execPath, file], cwd: work });
    } else if (block.kind === 'ts') {
      const file = path.join(work, 'ts', fileName(block, '.mts'));
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, block.code);
      tsFiles.push([block, file]);
      steps.set(block.id, { id: block.id, command: [process.execPath, path.join(work, 'ts-out', fileName(block, '.mjs'))], cwd: work });
    } else if (block.kind === 'js-model') {
      const { name, file } = block.model!;
      const repo = path.join(work, `repo_${block.line}_${name}`);
      const config = MODEL_CONFIGS[name];
      mkdirSync(path.join(repo, name, '1'), { recursive: true });
      writeFileSync(path.join(repo, name, '1', file), block.code);
      if (config) writeFileSync(path.join(repo, name, 'config.pbtxt'), config());
      steps.set(block.id, { id: block.id, command: [process.execPath, path.join(__dirname, 'js-model-check.js'), repo, name], cwd: work });
    } else if (block.kind === 'shell' && (block.withServer || block.serves)) {
      const bin = path.join(work, 'bin');
      steps.set(block.id, {
        id: block.id, command: ['bash', '-euo', 'pipefail', '-c', block.code], cwd: ROOT,
        env: { PATH: `${bin}:${process.env.PATH}` },
      });
    }
  }
  compileTypeScript(tsFiles);
  return steps;
}

/** One tsc --strict run for every TS block; a block that does not compile gets tsc's lines as its result. */
function compileTypeScript(files: [DocBlock, string][]): void {
  if (files.length === 0) return;
  writeFileSync(path.join(work, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', outDir: 'ts-out', rootDir: 'ts',
      types: ['node'], typeRoots: [path.join(ROOT, 'node_modules/@types')], skipLibCheck: false,
    },
    include: ['ts/*.mts'],
  }));
  const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
  const run = spawnSync(process.execPath, [tsc, '-p', work, '--pretty', 'false'], { cwd: work, encoding: 'utf8' });
  const output = `${run.stdout}${run.stderr}`;
  for (const [block, file] of files) {
    const errors = output.split('\n').filter((l) => l.startsWith(path.relative(work, file)) || l.startsWith(file));
    if (errors.length > 0) results.set(block.id, { ok: false, output: `tsc --strict:\n${errors.join('\n')}` });
  }
  if (run.status !== 0 && ![...files].some(([b]) => results.has(b.id))) {
    for (const [block] of files) results.set(block.id, { ok: false, output: `tsc failed:\n${output}` });
  }
}

/** Groups: a serving block (or a file run as the server) with the blocks that call it; every other block alone. */
function groups(steps: Map<string, Step>): Group[] {
  const byServer = new Map<string, Group>();
  const out: Group[] = [];
  for (const block of blocks) {
    const step = steps.get(block.id);
    if (!step || results.has(block.id)) continue;
    if (block.serves) {
      const group = byServer.get(block.serves) ?? { steps: [] };
      group.server = step;
      if (!byServer.has(block.serves)) out.push(group);
      byServer.set(block.serves, group);
    } else if (block.withServer) {
      let group = byServer.get(block.withServer);
      if (!group) {
        group = { steps: [] };
        byServer.set(block.withServer, group);
        out.push(group);
        if (/\.(c|m)?js$/.test(block.withServer)) {
          group.server = { id: block.withServer, command: [process.execPath, path.join(ROOT, block.withServer)], cwd: ROOT };
        }
      }
      group.steps.push(step);
    } else {
      out.push({ steps: [step] });
    }
  }
  return out;
}

function runGroup(group: Group, wrap: string[], index: number): Promise<void> {
  const specFile = path.join(work, `group_${index}.json`);
  writeFileSync(specFile, JSON.stringify({ ...group, timeoutMs: GROUP_TIMEOUT_MS }));
  const command = [...wrap, process.execPath, path.join(__dirname, 'run-group.js'), specFile];
  return new Promise((resolve) => {
    const child = spawn(command[0], command.slice(1), { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('close', () => {
      const ids = [group.server?.id, ...group.steps.map((s) => s.id)].filter((id): id is string => id !== undefined);
      try {
        const report = JSON.parse(stdout) as { results: Record<string, Result>; error?: string };
        for (const id of ids) results.set(id, report.results[id] ?? { ok: false, output: `no result (${report.error ?? 'the group stopped early'})` });
      } catch {
        for (const id of ids) results.set(id, { ok: false, output: `the group's runner failed:\n${stdout}${stderr}` });
      }
      resolve();
    });
  });
}

beforeAll(async () => {
  ensureLib();
  work = mkdtempSync(path.join(os.tmpdir(), 'infernode-docs-'));
  mkdirSync(path.join(work, 'node_modules'));
  symlinkSync(ROOT, path.join(work, 'node_modules', 'infernode'), 'dir');
  // `infernode` on the PATH of shell blocks: the CLI of this checkout.
  mkdirSync(path.join(work, 'bin'));
  writeFileSync(path.join(work, 'bin', 'infernode'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, 'lib/cli/main.js')}" "$@"\n`, { mode: 0o755 });
  writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'docs-blocks', private: true }));
  const steps = prepare();
  const queue = groups(steps);
  const wrap = isolation();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < queue.length) {
      const index = next++;
      await runGroup(queue[index], wrap, index);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT_GROUPS }, worker));
  // DOCS_BLOCKS_LOG=FILE keeps every block's output, passing or not (to see what a block printed).
  if (process.env.DOCS_BLOCKS_LOG) writeFileSync(process.env.DOCS_BLOCKS_LOG, JSON.stringify(Object.fromEntries(results), null, 2));
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const runnable = blocks.filter((b) => b.kind && b.kind !== 'shell' && !b.notRun);
const shells = blocks.filter((b) => b.kind === 'shell');

test('the docs have runnable blocks', () => {
  expect(runnable.length).toBeGreaterThan(5);
});

test.each(runnable.map((b) => [b.id, b] as const))('%s runs as written', (_id, block) => {
  const result = results.get(block.id) ?? { ok: false, output: 'not run: no group ran it' };
  if (!result.ok) throw new Error(`${block.id} (${block.kind}) failed:\n${result.output.slice(-4000)}`);
});

test.each(shells.map((b) => [b.id, b] as const))('shell block %s runs when it calls infernode or curl, or says why not', (_id, block) => {
  if (block.notRun) return;
  if (!block.withServer && !block.serves) {
    expect(shellNeedsMarker(block.code) ? `${block.id} runs infernode/curl: mark it docs-test: with-server … or not-run: reason` : '').toBe('');
    return;
  }
  const result = results.get(block.id) ?? { ok: false, output: 'not run' };
  if (!result.ok) throw new Error(`${block.id} failed:\n${result.output.slice(-4000)}`);
  // `curl -s` exits 0 on an HTTP error too: Triton's error body says it failed.
  expect(result.output).not.toMatch(/"error"\s*:/);
});
