/**
 * Triton's repository layout on disk: `<repo>/<model>/config.pbtxt` (optional when the model
 * can be auto-completed) and numeric version directories holding `model.onnx`, `model.js` or
 * `model.mjs` (or `default_model_filename`). Model names never become paths unvalidated.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { invalidArg } from '../errors';
import { MODEL_NAME_PATTERN, type NormalizedVersionPolicy } from '../config/normalize';
import { checkModelNameLength } from '../model-name';
import { checkFileInside, linkTarget } from './model-files';

export interface ModelDirectory {
  name: string;
  repository: string;
  dir: string;
}

export type ModelFileKind = 'onnx' | 'js';

/**
 * Rejects names that are not plain directory names (no '/', no '..', Triton's character set) or
 * longer than a file name may be.
 */
export function checkModelName(name: string): void {
  checkModelNameLength(name);
  if (!MODEL_NAME_PATTERN.test(name) || name === '.' || name === '..') {
    throw invalidArg(`invalid model name '${name}': expected letters, digits, '.', '_' or '-' only`);
  }
}

/**
 * Triton's index reason for a model name in two or more repositories (model_repository_manager.h
 * MODEL_READY_REASON_DUPLICATE): such a model is neither loaded nor served; the others are.
 */
export const DUPLICATE_REASON = 'model appears in two or more repositories';

/** What a scan of the repositories found. */
export interface RepositoryScan {
  /** The models found in exactly one repository, by name. */
  models: Map<string, ModelDirectory>;
  /** Names found in two or more repositories, with those repositories: none of them serves. */
  duplicates: Map<string, string[]>;
  /** Repositories that could not be listed (gone, unreadable), with why: their models are not found. */
  unreadable: Map<string, string>;
}

/** Fails unless every repository is a directory: a start-up error in Triton too (Create). */
export function checkRepositories(repositories: string[]): void {
  for (const repository of repositories) {
    if (!existsSync(repository) || !statSync(repository).isDirectory()) {
      throw invalidArg(`model repository '${repository}' is not a directory`);
    }
  }
}

/**
 * Every model directory of the repositories. As Triton's Poll (model_repository_manager.cc), a
 * problem stays with what it concerns: a name in two repositories is a duplicate (that model
 * only), a repository that cannot be listed is reported and its models are not found; the rest
 * of the scan goes on.
 */
export function scanRepositories(repositories: string[]): RepositoryScan {
  const scan: RepositoryScan = { models: new Map(), duplicates: new Map(), unreadable: new Map() };
  for (const repository of repositories) {
    // Absolute, so model files (JS models above all) load the same whatever the working directory.
    const root = path.resolve(repository);
    let names: string[];
    try {
      names = modelNamesIn(root);
    } catch (err) {
      scan.unreadable.set(repository, (err as Error).message);
      continue;
    }
    for (const name of names) {
      const seen = scan.duplicates.get(name) ?? (scan.models.has(name) ? [scan.models.get(name)!.repository] : null);
      if (seen) {
        scan.duplicates.set(name, [...seen, root]);
        scan.models.delete(name);
      } else {
        scan.models.set(name, { name, repository: root, dir: path.join(root, name) });
      }
    }
  }
  return scan;
}

/**
 * The model directories of one repository: Triton's subdirectories (GetDirectorySubdirs, stat:
 * a symbolic link to a directory counts), less hidden and invalid names. Where a link leads is
 * checked when the model loads (model-files.ts).
 */
function modelNamesIn(repository: string): string[] {
  return readdirSync(repository, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith('.') && MODEL_NAME_PATTERN.test(entry.name))
    .filter((entry) => entry.isDirectory() || (entry.isSymbolicLink() && isDirectory(path.join(repository, entry.name))))
    .map((entry) => entry.name);
}

/**
 * Numeric version directories (Triton ignores non-numeric names and names starting with 0). A
 * symbolic link to a directory counts; where it leads is checked when its model file is read.
 */
export function versionsOnDisk(modelDir: string): number[] {
  return readdirSync(modelDir, { withFileTypes: true })
    .filter((e) => /^[1-9][0-9]*$/.test(e.name) && (e.isDirectory() || (e.isSymbolicLink() && isDirectory(path.join(modelDir, e.name)))))
    .map((e) => Number(e.name))
    .filter((v) => Number.isSafeInteger(v))
    .sort((a, b) => a - b);
}

/**
 * The versions Triton's version_policy selects among those on disk (latest N, all, or specific).
 * A specific version without its directory is logged and the others load, as Triton's
 * VersionsToLoad does (model_lifecycle.cc); when none of them is there, the load fails with
 * Triton's AsyncLoad text.
 */
export function selectVersions(
  onDisk: number[], policy: NormalizedVersionPolicy, model: string, logError: (line: string) => void = () => {},
): number[] {
  if (policy.kind === 'all') return onDisk;
  if (policy.kind === 'specific') {
    for (const v of policy.versions.filter((v) => !onDisk.includes(v))) {
      logError(`infernode: version ${v} is specified for model '${model}', but the version directory is not present`);
    }
    const present = policy.versions.filter((v) => onDisk.includes(v));
    // Without any version directory the load says so (loader.ts noVersionDirectory).
    if (present.length === 0 && onDisk.length > 0) {
      throw invalidArg(`at least one version must be available under the version policy of model '${model}'`);
    }
    return present;
  }
  return onDisk.slice(Math.max(0, onDisk.length - policy.numVersions));
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;  // a dangling link
  }
}

/** The file names each engine looks for, in order, when no default_model_filename is set. */
const DEFAULT_FILES: Record<ModelFileKind, string[]> = { onnx: ['model.onnx'], js: ['model.js', 'model.mjs', 'model.cjs'] };

/**
 * The model file of a version directory and which engine runs it; null when there is none.
 * `engine` (from the config's backend or platform) limits the search to that engine's files.
 * The file must resolve inside `repository` (model-files.ts).
 */
export function findModelFile(
  versionDir: string, repository: string, defaultFilename?: string, engine?: ModelFileKind,
): { file: string; kind: ModelFileKind } | null {
  const candidates = defaultFilename ? [defaultFilename] : engine ? DEFAULT_FILES[engine] : [...DEFAULT_FILES.onnx, ...DEFAULT_FILES.js];
  for (const name of candidates) {
    if (name.includes('/') || name.includes('\\') || name === '.' || name === '..') {
      throw invalidArg(`default_model_filename '${name}' must be a plain file name`);
    }
    let file = path.join(versionDir, name);
    if (!existsSync(file)) continue;
    // ONNX Runtime's backend also accepts a directory holding model.onnx.
    if (statSync(file).isDirectory()) file = path.join(file, 'model.onnx');
    if (!existsSync(file) || !statSync(file).isFile()) continue;
    checkFileInside(file, repository, 'the model file');
    return { file, kind: engine ?? (/\.(m|c)?js$/.test(name) ? 'js' : 'onnx') };
  }
  return null;
}

/** The names findModelFile looks for, for error messages. */
export function modelFileNames(defaultFilename?: string, engine?: ModelFileKind): string {
  if (defaultFilename) return `'${defaultFilename}'`;
  if (engine === 'onnx') return 'model.onnx';
  if (engine === 'js') return 'model.js or model.mjs';
  return 'model.onnx, model.js or model.mjs';
}

/** The config.pbtxt text, or null when the model has none. It must resolve inside the repository. */
export function readConfigText(dir: ModelDirectory): string | null {
  const file = path.join(dir.dir, 'config.pbtxt');
  if (!existsSync(file)) return null;
  checkFileInside(file, dir.repository, `model '${dir.name}': the config file`);
  return readFileSync(file, 'utf8');
}

/** Files up to this size are fingerprinted by content; larger ones by size and time stamp. */
const HASHED_FILE_BYTES = 1 << 20;

/**
 * Changes when anything a load reads changes: used by poll mode to find models to reload.
 * Small files (configs, labels, JS models) count by content, so a rewrite that keeps the size
 * and time stamp is still seen; large model files by size and modification time. The model
 * directory itself counts: the same files in another repository are another model directory.
 * Symbolic links are followed as a load follows them (model-files.ts) and count by where they
 * lead too, so re-pointing one (`ln -sfn`, a ConfigMap's ..data link) is a change; what lies
 * outside the repository is never read, only where the link leads.
 */
export function fingerprint(dir: ModelDirectory): string {
  return modelPrint(dir).whole;
}

/**
 * A model directory's fingerprint (`whole`), and split as a reload needs it: each version
 * directory's own (`versions`), and the rest (`shared`: labels, warm-up data, any other file)
 * except config.pbtxt, whose content a reload compares parsed (Triton's ModelTimestamp keeps
 * the same three apart: IsModelVersionModified, model_repository_manager.cc).
 */
export interface ModelPrint {
  whole: string;
  shared: string;
  versions: Map<number, string>;
}

/** The fingerprint of a model directory, whole and split (ModelPrint). */
export function modelPrint(dir: ModelDirectory): ModelPrint {
  const parts = fingerprintParts(dir);
  const shared: string[] = [];
  const versions = new Map<number, string[]>();
  for (const [relative, value] of parts) {
    const top = relative.split(path.sep)[0];
    if (/^[1-9][0-9]*$/.test(top)) {
      versions.set(Number(top), [...versions.get(Number(top)) ?? [], `${relative}${value}`]);
    } else if (top !== 'config.pbtxt') {
      shared.push(`${relative}${value}`);
    }
  }
  return {
    whole: parts.map(([relative, value]) => `${relative}${value}`).join('|'),
    shared: shared.join('|'),
    versions: new Map([...versions].map(([v, p]) => [v, p.join('|')])),
  };
}

/** What the fingerprint counts: [path relative to the model directory ('' for itself), its value]. */
function fingerprintParts(dir: ModelDirectory): [string, string][] {
  const parts: [string, string][] = [['', dir.dir]];
  const walk = (current: string, depth: number): void => {
    for (const entry of readdirSync(current, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(current, entry.name);
      const relative = path.relative(dir.dir, full);
      if (entry.isSymbolicLink()) {
        const target = linkTarget(full, dir.repository);
        parts.push([relative, `->${target ? `${target.real}${target.inside ? '' : ' (outside)'}` : 'nothing'}`]);
        if (target?.inside) fingerprintEntry(full, relative, depth);
      } else {
        fingerprintEntry(full, relative, depth);
      }
    }
  };
  const fingerprintEntry = (full: string, relative: string, depth: number): void => {
    const st = statSync(full);
    if (st.isDirectory()) {
      if (depth < 4) walk(full, depth + 1);
    } else if (st.isFile()) {
      const content = st.size <= HASHED_FILE_BYTES ? createHash('sha1').update(readFileSync(full)).digest('hex') : `${st.mtimeMs}`;
      parts.push([relative, `:${st.size}:${content}`]);
    }
  };
  try {
    // A model directory that is a link counts by where it leads; outside the repository, by that only.
    const target = existsSync(dir.dir) ? linkTarget(dir.dir, dir.repository) : null;
    if (target) parts.push(['', `->${target.real}`]);
    if (target?.inside) walk(dir.dir, 0);
  } catch (err) {
    // A directory changing under the scan: different from any complete fingerprint.
    parts.push(['', `unreadable:${(err as Error).message}`]);
  }
  return parts;
}
