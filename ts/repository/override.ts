/**
 * The load API's `file:<version>/<name>` parameters: model files sent by the client, written to
 * a private temporary directory that then serves as the model's directory. Paths are checked
 * before anything is written: relative, no '..', a numeric version directory first.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { invalidArg } from '../errors';
import type { ModelDirectory } from './layout';

/** Writes the files (keys like `1/model.onnx`) and returns the directory to load from. */
export function writeOverrideDirectory(name: string, files: Record<string, Buffer>): ModelDirectory {
  const repository = mkdtempSync(path.join(os.tmpdir(), 'infernode-override-'));
  const modelDir = path.join(repository, name);
  for (const [key, content] of Object.entries(files)) {
    const parts = key.split('/');
    if (parts.length < 2 || !/^[1-9][0-9]*$/.test(parts[0]) || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\'))) {
      throw invalidArg(`load of model '${name}': file parameter 'file:${key}' must be '<version>/<path>' without '..'`);
    }
    const target = path.join(modelDir, ...parts);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  return { name, repository, dir: modelDir };
}
