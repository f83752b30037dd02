/**
 * What the suites running NVIDIA's Python code share (python-clients.test.ts, python-qa.test.ts):
 * the assembly of tritonclient into build-pyclients/ and the repository of Triton's example models.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addSubModel } from '../../ts/tools/onnx';

export const ROOT = path.join(__dirname, '..', '..');
export const BUILD = path.join(ROOT, 'build-pyclients');
export const EXAMPLES = path.join(BUILD, 'examples');
export const OWN_SCRIPTS = path.join(ROOT, 'test', 'python');
/** Debian's interpreter: its dist-packages hold python3-grpcio and friends (a pyenv python does not). */
export const PYTHON = process.env.INFERNODE_PYTHON ?? '/usr/bin/python3';

/**
 * Runs the (idempotent) assembly, while jest collects a suite, so a machine without the Python
 * packages skips visibly instead of failing. Returns why it cannot run, or null.
 */
export function assembleClients(): string | null {
  const result = spawnSync(path.join(ROOT, 'scripts', 'python-clients.sh'), [], {
    cwd: ROOT, env: { ...process.env, PYTHON }, encoding: 'utf8', timeout: 300_000,
  });
  if (result.status === 0) return null;
  return (result.stderr || result.stdout || String(result.error ?? `exit ${result.status}`)).trim();
}

/**
 * A temporary copy of test/python/models (Triton's example models), `simple`'s ONNX file written
 * by infernode's ONNX writer, without the models named in `leaveOut`.
 */
export function exampleRepository(leaveOut: string[] = []): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'infernode-pyclients-'));
  cpSync(path.join(OWN_SCRIPTS, 'models'), root, { recursive: true });
  const onnxFile = path.join(root, 'simple', '1', 'model.onnx');
  mkdirSync(path.dirname(onnxFile), { recursive: true });
  writeFileSync(onnxFile, addSubModel('INT32', [16]));
  for (const name of leaveOut) rmSync(path.join(root, name), { recursive: true, force: true });
  return root;
}
