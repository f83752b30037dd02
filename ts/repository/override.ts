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
import { InferenceServerError, invalidArg } from '../errors';
import type { ModelDirectory } from './layout';

/** The override repositories this process created (only these are ever removed). */
const created = new Set<string>();

/** The longest file or directory name the file systems infernode runs on accept (NAME_MAX). */
const NAME_MAX_BYTES = 255;

/**
 * Files that cannot be written fail as Triton's do: its repository poll cannot localize them, so
 * the load answers INTERNAL "failed to load '<model>', failed to poll from model repository"
 * (Triton's model-control example checks both for a 256-character file name).
 */
function cannotWrite(name: string, detail: string): InferenceServerError {
  return new InferenceServerError('INTERNAL', `failed to load '${name}', failed to poll from model repository: ${detail}`);
}

function checkKey(name: string, key: string): string[] {
  const parts = key.split('/');
  const tooLong = parts.find((p) => Buffer.byteLength(p) > NAME_MAX_BYTES);
  if (tooLong !== undefined) {
    throw cannotWrite(name, `file parameter 'file:${key}' has a name of ${Buffer.byteLength(tooLong)} bytes; ` +
      `file and directory names can have at most ${NAME_MAX_BYTES}`);
  }
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
    throw cannotWrite(name, `cannot write the file parameters: ${(err as Error).message}`);
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
