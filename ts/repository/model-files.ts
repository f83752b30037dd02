/**
 * Which files a model repository may make the server read — the one place the rule lives:
 * every file a load reads (config.pbtxt, the model file, label files, warm-up data) is resolved
 * with realpath (symbolic links followed) and must lie inside the real path of the repository
 * it belongs to (Triton resolves model files under the repository). Links that stay inside are
 * fine; a file, a version directory or a model directory leading outside fails the load with an
 * error naming it and this rule. Files a config names (warm-up data, label files) are in addition
 * relative paths without `..` inside the model's own directory (or its warmup/ directory). Scans
 * follow links too (a link to a directory may be a model; poll's fingerprint, layout.ts), but
 * only as far as this rule lets a load read (linkTarget).
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { invalidArg } from '../errors';

/** Whether the real path `real` is `root` or below it (both real paths). */
function isWithin(real: string, root: string): boolean {
  return real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/** Where an existing `file` really leads when that is outside `root`'s real path; null when inside. */
function escapeOf(file: string, root: string): { real: string; realRoot: string } | null {
  const real = realpathSync(file);
  const realRoot = realpathSync(root);
  return isWithin(real, realRoot) ? null : { real, realRoot };
}

/**
 * Where an existing path leads (links followed) and whether a load may read there (inside the
 * real path of `repository`); null for a dangling link. What a scan may follow.
 */
export function linkTarget(file: string, repository: string): { real: string; inside: boolean } | null {
  let real: string;
  try {
    real = realpathSync(file);
  } catch {
    return null;
  }
  return { real, inside: isWithin(real, realpathSync(repository)) };
}

/**
 * `file` (an existing file or directory), checked to resolve to a path inside the real path of `repository`.
 * @param what names the file in errors (model and role)
 */
export function checkFileInside(file: string, repository: string, what: string): string {
  const escape = escapeOf(file, repository);
  if (escape) {
    throw invalidArg(`${what} ${file} resolves to ${escape.real}, outside ${escape.realRoot}: files a model repository ` +
      'serves must lie inside it (symbolic links may point only within the repository)');
  }
  return file;
}

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
  if (escapeOf(full, baseDir)) throw invalidArg(`${where} '${file}' leads outside ${baseDir}`);
  return full;
}
