/**
 * The load API's `file:<path>` parameters: model files sent by the client, written to a private
 * temporary directory that then serves as the model's directory. As Triton's LocalizeRepoAgent
 * (model_repository_manager.cc), a path is relative to the model directory (a leading '/'
 * included), normalized, and must stay inside it: `1/model.onnx`, `/1/model.py`, `labels.txt`,
 * `warmup/sample.bin`. Every path is checked before anything is written; NUL and backslashes
 * are refused too. The directory is removed when the model is unloaded or replaced, or when its
 * load fails.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** The path segments `key` names inside the model directory; throws when it cannot be written there. */
function checkKey(name: string, key: string): string[] {
  const tooLong = key.split('/').find((p) => Buffer.byteLength(p) > NAME_MAX_BYTES);
  if (tooLong !== undefined) {
    throw cannotWrite(name, `file parameter 'file:${key}' has a name of ${Buffer.byteLength(tooLong)} bytes; ` +
      `file and directory names can have at most ${NAME_MAX_BYTES}`);
  }
  if (key.includes('\\') || key.includes('\0')) {
    throw invalidArg(`failed to load '${name}', file parameter 'file:${key}' must not hold a backslash or NUL`);
  }
  // Triton joins the key to the model directory (JoinPath: a leading '/' stays inside it), then
  // normalizes it (weakly_canonical): '.', '..' and repeated '/' resolve first.
  const normalized = path.posix.normalize(key.replace(/^\/+/, ''));
  if (normalized === '..' || normalized.startsWith('../') || path.posix.isAbsolute(normalized)) {
    throw invalidArg(`Invalid file parameter 'file:${key}' with normalized path '${normalized}' must stay within model directory.`);
  }
  // The model directory itself, or a path ending with '/', names no file to write.
  if (normalized === '.' || normalized === '' || key.endsWith('/')) {
    throw invalidArg(`failed to load '${name}', file parameter 'file:${key}' names a directory, not a file`);
  }
  return normalized.split('/');
}

/** Whether `file` is there and not a directory (Triton's "directory has been created as a file"). */
function isFile(file: string): boolean {
  return existsSync(file) && !statSync(file).isDirectory();
}

/** Writes the files (keys like `1/model.onnx`) and returns the directory to load from. */
export function writeOverrideDirectory(name: string, files: Record<string, Buffer>): ModelDirectory {
  const entries = Object.entries(files).map(([key, content]) => [key, checkKey(name, key), content] as const);
  const repository = mkdtempSync(path.join(os.tmpdir(), 'infernode-override-'));
  created.add(repository);
  const modelDir = path.join(repository, name);
  try {
    for (const [key, parts, content] of entries) {
      const target = path.join(modelDir, ...parts);
      if (isFile(path.dirname(target))) {
        throw invalidArg(`Invalid file parameter 'file:${key}', directory has been created as a file`);
      }
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, content);
    }
  } catch (err) {
    removeOverrideDirectory({ name, repository, dir: modelDir });
    if (err instanceof InferenceServerError) throw err;
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
