/**
 * Suites that run infernode in a child process (the CLI, JS models under Node's own module
 * loader) need the compiled lib/. `npm test` builds it before jest (`npm run build:ts`); when a
 * suite runs on its own and lib/ is older than ts/, ensureLib() compiles it first. A lock
 * directory keeps two suites from compiling at once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

export const ROOT = path.join(__dirname, '..', '..');
export const LIB = path.join(ROOT, 'lib');

/** The first ts/ source whose compiled lib/ file is missing or older; null when lib/ is fresh. */
function staleSource(dir = path.join(ROOT, 'ts')): string | null {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = staleSource(full);
      if (found) return found;
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const out = path.join(LIB, path.relative(path.join(ROOT, 'ts'), full)).replace(/\.ts$/, '.js');
      if (!existsSync(out) || statSync(out).mtimeMs < statSync(full).mtimeMs) return full;
    }
  }
  return null;
}

const sleepSync = (ms: number): void => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms); };

/** Compiles ts/ into lib/ when lib/ is stale (type errors elsewhere do not stop the emit). */
export function ensureLib(): void {
  if (!staleSource()) return;
  const lock = path.join(ROOT, '.lib-build-lock');
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another suite is compiling; a lock older than two minutes is left over from a crash.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 120_000) rmdirSync(lock);
      if (Date.now() > deadline) throw new Error('timed out waiting for another suite to compile lib/');
      sleepSync(200);
    }
  }
  try {
    if (!staleSource()) return;
    const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
    const result = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.json')], { cwd: ROOT, encoding: 'utf8' });
    if (!existsSync(path.join(LIB, 'cli', 'main.js'))) {
      throw new Error(`compiling lib/ failed:\n${result.stdout}${result.stderr}`);
    }
  } finally {
    rmdirSync(lock);
  }
}
