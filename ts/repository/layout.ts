/**
 * Triton's repository layout on disk: `<repo>/<model>/config.pbtxt` (optional when the model
 * can be auto-completed) and numeric version directories holding `model.onnx`, `model.js` or
 * `model.mjs` (or `default_model_filename`). Model names never become paths unvalidated.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { InferenceServerError, invalidArg } from '../errors';
import { MODEL_NAME_PATTERN } from '../config/normalize';

export interface ModelDirectory {
  name: string;
  repository: string;
  dir: string;
}

export type ModelFileKind = 'onnx' | 'js';

/** Rejects names that are not plain directory names (no '/', no '..', Triton's character set). */
export function checkModelName(name: string): void {
  if (!MODEL_NAME_PATTERN.test(name) || name === '.' || name === '..') {
    throw invalidArg(`invalid model name '${name}': expected letters, digits, '.', '_' or '-' only`);
  }
}

/** Every model directory of the repositories; a name in two repositories is an error. */
export function scanRepositories(repositories: string[]): Map<string, ModelDirectory> {
  const found = new Map<string, ModelDirectory>();
  for (const repository of repositories) {
    if (!existsSync(repository) || !statSync(repository).isDirectory()) {
      throw invalidArg(`model repository '${repository}' is not a directory`);
    }
    for (const entry of readdirSync(repository, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.') || !MODEL_NAME_PATTERN.test(entry.name)) continue;
      const previous = found.get(entry.name);
      if (previous) {
        throw new InferenceServerError('INVALID_ARG',
          `model '${entry.name}' is in two repositories: ${previous.repository} and ${repository}`);
      }
      found.set(entry.name, { name: entry.name, repository, dir: path.join(repository, entry.name) });
    }
  }
  return found;
}

/** Numeric version directories (Triton ignores non-numeric names and names starting with 0). */
export function versionsOnDisk(modelDir: string): number[] {
  return readdirSync(modelDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^[1-9][0-9]*$/.test(e.name))
    .map((e) => Number(e.name))
    .filter((v) => Number.isSafeInteger(v))
    .sort((a, b) => a - b);
}

/** Triton's version_policy: latest N (default 1), all, or specific versions. */
export interface VersionPolicy {
  latest?: { num_versions?: number | string };
  all?: object;
  specific?: { versions?: (number | string)[] };
}

export function selectVersions(onDisk: number[], policy: VersionPolicy | undefined, model: string): number[] {
  if (policy?.all) return onDisk;
  if (policy?.specific) {
    const wanted = (policy.specific.versions ?? []).map(Number);
    const missing = wanted.filter((v) => !onDisk.includes(v));
    if (missing.length > 0) throw invalidArg(`model '${model}': version(s) ${missing.join(', ')} not found on disk`);
    return wanted.sort((a, b) => a - b);
  }
  const n = Number(policy?.latest?.num_versions ?? 1);
  return onDisk.slice(Math.max(0, onDisk.length - n));
}

/** The model file of a version directory and which engine runs it; null when there is none. */
export function findModelFile(versionDir: string, defaultFilename?: string): { file: string; kind: ModelFileKind } | null {
  const candidates = defaultFilename ? [defaultFilename] : ['model.onnx', 'model.js', 'model.mjs', 'model.cjs'];
  for (const name of candidates) {
    if (name.includes('/') || name.includes('..')) throw invalidArg(`default_model_filename '${name}' must be a plain file name`);
    let file = path.join(versionDir, name);
    if (!existsSync(file)) continue;
    // ONNX Runtime's backend also accepts a directory holding model.onnx.
    if (statSync(file).isDirectory()) file = path.join(file, 'model.onnx');
    if (!existsSync(file)) continue;
    return { file, kind: /\.(m|c)?js$/.test(name) ? 'js' : 'onnx' };
  }
  return null;
}

/** The config.pbtxt text, or null when the model has none. */
export function readConfigText(modelDir: string): string | null {
  const file = path.join(modelDir, 'config.pbtxt');
  return existsSync(file) ? readFileSync(file, 'utf8') : null;
}

/** Changes when anything a load reads changes: used by poll mode to find models to reload. */
export function fingerprint(modelDir: string): string {
  const parts: string[] = [];
  const walk = (dir: string, depth: number): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && depth < 2) walk(full, depth + 1);
      else if (entry.isFile()) {
        const st = statSync(full);
        parts.push(`${path.relative(modelDir, full)}:${st.size}:${st.mtimeMs}`);
      }
    }
  };
  if (existsSync(modelDir)) walk(modelDir, 0);
  return parts.join('|');
}
