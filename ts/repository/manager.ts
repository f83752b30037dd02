/**
 * The model repository manager: Triton's model control modes over one or more repositories.
 * - none: every model is loaded at start; load/unload through the API is refused.
 * - explicit: only `loadModels` ('*' = all) at start; then load/unload through the API.
 * - poll: every model at start, then a rescan every `pollSecs` loads new models, reloads changed
 *   ones and unloads removed ones.
 * A reload loads the new versions first and swaps them in; requests already on the old versions
 * finish there (their BoundModel drains before it stops). A model that fails to load is
 * UNAVAILABLE with its reason in the index; it never takes the server down (unless exitOnError
 * at start-up). Operations on one model run one after another.
 */
import { InferenceServerError, toInferenceServerError } from '../errors';
import type { BoundModel } from '../model';
import type { RawModelConfig } from './autocomplete';
import { checkModelName, fingerprint, scanRepositories, type ModelDirectory } from './layout';
import { loadModel, type LoadedVersion } from './loader';
import { writeOverrideDirectory } from './override';
import { validateModelConfigJson } from '../config/pbtxt';

export type ControlMode = 'none' | 'poll' | 'explicit';
export type ModelState = 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface IndexEntry {
  name: string;
  version: string;
  state: ModelState;
  reason: string;
}

/** Where loaded versions are published for serving (Triton implements it). */
export interface ModelRegistry {
  setModelVersions(name: string, versions: Map<number, BoundModel> | null): void;
}

export interface RepositoryOptions {
  repositories: string[];
  controlMode?: ControlMode;
  /** explicit mode: models to load at start ('*' = all). */
  loadModels?: string[];
  /** poll mode: seconds between rescans. Default 15. */
  pollSecs?: number;
  maxQueueSizeHardLimit?: number;
  log?: (line: string) => void;
}

/** What the load API may carry (Triton's `parameters`: `config` JSON, `file:<path>` contents). */
export interface LoadOverride {
  config?: string;
  files?: Record<string, Buffer>;
}

interface ModelRecord {
  dir: ModelDirectory;
  fingerprint: string;
  versions: Map<number, LoadedVersion>;
  state: ModelState;
  reason: string;
}

export class ModelRepositoryManager {
  readonly controlMode: ControlMode;
  readonly #options: RepositoryOptions;
  readonly #registry: ModelRegistry;
  readonly #records = new Map<string, ModelRecord>();
  readonly #queues = new Map<string, Promise<void>>();
  readonly #log: (line: string) => void;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(registry: ModelRegistry, options: RepositoryOptions) {
    this.#registry = registry;
    this.#options = options;
    this.controlMode = options.controlMode ?? 'none';
    this.#log = options.log ?? ((line) => console.log(line));
  }

  /** Initial loads; resolves with the models that failed (name → reason). */
  async start(): Promise<Map<string, string>> {
    const dirs = scanRepositories(this.#options.repositories);
    let names = [...dirs.keys()];
    if (this.controlMode === 'explicit') {
      const wanted = this.#options.loadModels ?? [];
      names = wanted.includes('*') ? names : wanted;
    }
    await Promise.all(names.map((name) => this.#enqueue(name, () => this.#load(name, dirs.get(name)))));
    if (this.controlMode === 'poll') this.#schedulePoll();
    const failed = new Map<string, string>();
    for (const [name, record] of this.#records) if (record.state === 'UNAVAILABLE') failed.set(name, record.reason);
    return failed;
  }

  /** Stops polling and unloads every model (in-flight requests finish first). */
  async stop(timeoutMs = 30_000): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await Promise.all([...this.#records.keys()].map((name) => this.#enqueue(name, () => this.#unload(name, timeoutMs))));
  }

  /** Triton's repository index: one entry per loaded version, or per model when none is. */
  index(readyOnly = false): IndexEntry[] {
    const entries: IndexEntry[] = [];
    const known = new Set(this.#records.keys());
    for (const name of this.#safeScan().keys()) known.add(name);
    for (const name of [...known].sort()) {
      const record = this.#records.get(name);
      if (record && record.versions.size > 0) {
        for (const v of [...record.versions.keys()].sort((a, b) => a - b)) {
          entries.push({ name, version: String(v), state: record.state, reason: record.reason });
        }
      } else if (!readyOnly) {
        entries.push({ name, version: '', state: record?.state ?? 'UNAVAILABLE', reason: record?.reason ?? 'unloaded' });
      }
    }
    return readyOnly ? entries.filter((e) => e.state === 'READY') : entries;
  }

  /** The load API: (re)loads a model; explicit mode only. */
  async load(name: string, override: LoadOverride = {}): Promise<void> {
    this.#checkExplicit();
    checkModelName(name);
    let dir: ModelDirectory | undefined;
    let config: RawModelConfig | undefined;
    if (override.config !== undefined) config = parseConfigOverride(name, override.config);
    if (override.files && Object.keys(override.files).length > 0) {
      if (!config) throw new InferenceServerError('INVALID_ARG', `load of model '${name}': file: parameters need a config parameter`);
      dir = writeOverrideDirectory(name, override.files);
    } else {
      dir = this.#safeScan().get(name);
      if (!dir) throw new InferenceServerError('NOT_FOUND', `failed to load '${name}', failed to poll from model repository`);
    }
    await this.#enqueue(name, () => this.#load(name, dir, config));
    const record = this.#records.get(name);
    if (record?.state !== 'READY') {
      throw new InferenceServerError('INVALID_ARG', `failed to load '${name}': ${record?.reason ?? 'unknown error'}`);
    }
  }

  /** The unload API: in-flight requests finish; explicit mode only. */
  async unload(name: string): Promise<void> {
    this.#checkExplicit();
    checkModelName(name);
    await this.#enqueue(name, () => this.#unload(name));
  }

  #checkExplicit(): void {
    if (this.controlMode !== 'explicit') {
      throw new InferenceServerError('UNAVAILABLE',
        `explicit model load / unload is not allowed if polling is enabled or the model control mode is '${this.controlMode}'`);
    }
  }

  #safeScan(): Map<string, ModelDirectory> {
    try {
      return scanRepositories(this.#options.repositories);
    } catch (err) {
      this.#log(`infernode: cannot scan the model repository: ${(err as Error).message}`);
      return new Map();
    }
  }

  /** Runs `op` after every earlier operation on the same model (ops never reject). */
  #enqueue(name: string, op: () => Promise<void>): Promise<void> {
    const next = (this.#queues.get(name) ?? Promise.resolve()).then(op);
    this.#queues.set(name, next.catch(() => undefined));
    return next;
  }

  async #load(name: string, dir: ModelDirectory | undefined, config?: RawModelConfig): Promise<void> {
    const record = this.#records.get(name) ?? {
      dir: dir ?? { name, repository: '', dir: '' }, fingerprint: '', versions: new Map(), state: 'LOADING' as ModelState, reason: '',
    };
    this.#records.set(name, record);
    if (!dir) {
      record.state = 'UNAVAILABLE';
      record.reason = `model '${name}' is not in the model repository`;
      return;
    }
    const previous = record.versions;
    if (previous.size === 0) record.state = 'LOADING';
    try {
      const loaded = await loadModel(dir, { configOverride: config, maxQueueSizeHardLimit: this.#options.maxQueueSizeHardLimit, log: this.#log });
      record.dir = dir;
      record.fingerprint = fingerprint(dir.dir);
      record.versions = loaded;
      record.state = 'READY';
      record.reason = '';
      this.#registry.setModelVersions(name, new Map([...loaded].map(([v, l]) => [v, l.model])));
      this.#log(`infernode: loaded model '${name}' version(s) ${[...loaded.keys()].join(', ')}`);
      await retire(previous);
    } catch (err) {
      const reason = toInferenceServerError(err).message;
      this.#log(`infernode: failed to load model '${name}': ${reason}`);
      // A failed reload leaves the old versions serving (Triton's behaviour).
      if (previous.size === 0) {
        record.state = 'UNAVAILABLE';
        record.reason = reason;
        record.fingerprint = fingerprint(dir.dir);
      } else {
        record.reason = `reload failed: ${reason}`;
        record.fingerprint = fingerprint(dir.dir);
      }
    }
  }

  async #unload(name: string, timeoutMs = 30_000): Promise<void> {
    const record = this.#records.get(name);
    if (!record) return;
    const versions = record.versions;
    record.state = 'UNLOADING';
    this.#registry.setModelVersions(name, null);
    await retire(versions, timeoutMs);
    record.versions = new Map();
    record.state = 'UNAVAILABLE';
    record.reason = 'unloaded';
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.poll().finally(() => this.#schedulePoll());
    }, (this.#options.pollSecs ?? 15) * 1000);
    this.#timer.unref();
  }

  /** One rescan (poll mode): new and changed models are (re)loaded, removed ones unloaded. */
  async poll(): Promise<void> {
    const dirs = this.#safeScan();
    const ops: Promise<void>[] = [];
    for (const [name, dir] of dirs) {
      const record = this.#records.get(name);
      if (!record || record.fingerprint !== fingerprint(dir.dir)) ops.push(this.#enqueue(name, () => this.#load(name, dir)));
    }
    for (const name of this.#records.keys()) {
      if (!dirs.has(name) && this.#records.get(name)!.versions.size > 0) ops.push(this.#enqueue(name, () => this.#unload(name)));
    }
    await Promise.all(ops);
  }
}

/** Stops versions that no longer serve: their in-flight requests finish first. */
async function retire(versions: Map<number, LoadedVersion>, timeoutMs = 30_000): Promise<void> {
  await Promise.all([...versions.values()].map(async (v) => {
    await v.model.stop(timeoutMs);
    await v.finalize();
  }));
}

/** The load API's `config` parameter: JSON text of a ModelConfig, canonicalized (Triton's field checks). */
function parseConfigOverride(name: string, text: string): RawModelConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new InferenceServerError('INVALID_ARG', `load of model '${name}': the config parameter is not valid JSON: ${(err as Error).message}`);
  }
  return validateModelConfigJson(parsed, `load of model '${name}': the config parameter`) as unknown as RawModelConfig;
}
