/**
 * The load API's `file:<version>/<name>` parameters: model files sent by the client, written to
 * a private temporary directory that then serves as the model's directory. Every path is checked
 * before anything is written: relative, a numeric version directory first, no '.', '..', empty
 * or backslash segments, no NUL. The directory is removed when the model is unloaded or
 * replaced, or when its load fails.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { invalidArg } from '../errors';
import type { ModelDirectory } from './layout';

/** The override repositories this process created (only these are ever removed). */
const created = new Set<string>();

function checkKey(name: string, key: string): string[] {
  const parts = key.split('/');
  const bad = parts.length < 2 || !/^[1-9][0-9]*$/.test(parts[0]) ||
    parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\') || p.includes('\0'));
  if (bad) throw invalidArg(`failed to load '${name}', file parameter 'file:${key}' must be '<version>/<path>' without '..'`);
  return parts;
}

/** Writes the files (keys like `1/model.onnx`) and returns the directory to load from. */
export function writeOverrideDirectory(name: string, files: Record<string, Buffer>): ModelDirectory {
  const entries = Object.entries(files).map(([key, content]) => [checkKey(name, key), content] as const);
  const repository = mkdtempSync(path.join(os.tmpdir(), 'infernode-override-'));
  created.add(repository);
  const modelDir = path.join(repository, name);
  try {
    for (const [parts, content] of entries) {
      const target = path.join(modelDir, ...parts);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, content);
    }
  } catch (err) {
    removeOverrideDirectory({ name, repository, dir: modelDir });
    throw invalidArg(`failed to load '${name}', cannot write the file parameters: ${(err as Error).message}`);
  }
  return { name, repository, dir: modelDir };
}

/** Removes a directory writeOverrideDirectory made; any other directory is left alone. */
export function removeOverrideDirectory(dir: ModelDirectory): void {
  if (!created.delete(dir.repository)) return;
  rmSync(dir.repository, { recursive: true, force: true });
}

/** Whether `dir` is a load API override (its files came with the request). */
export function isOverrideDirectory(dir: ModelDirectory): boolean {
  return created.has(dir.repository);
}
