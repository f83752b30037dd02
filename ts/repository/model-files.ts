/**
 * Files a model's config names (warm-up data, label files) must lie inside the model's own
 * directory: a relative path without `..`, and no symbolic link leading out, so a config cannot
 * make the server read arbitrary files.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { invalidArg } from '../errors';

/**
 * The absolute path of `file` under `baseDir`, checked to be a regular file that stays inside it.
 * @param where the start of error messages (model and field)
 */
export function resolveFileInside(baseDir: string, file: string, where: string): string {
  if (file === '' || path.isAbsolute(file) || file.split(/[\\/]/).includes('..')) {
    throw invalidArg(`${where} '${file}' must be a relative path inside ${baseDir}`);
  }
  const full = path.join(baseDir, file);
  if (!existsSync(full) || !statSync(full).isFile()) throw invalidArg(`${where} '${file}' is not a file in ${baseDir}`);
  if (!realpathSync(full).startsWith(realpathSync(baseDir) + path.sep)) {
    throw invalidArg(`${where} '${file}' leads outside ${baseDir}`);
  }
  return full;
}
