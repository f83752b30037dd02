/**
 * `Triton`: binds inference callables as models and serves them (PyTriton's `Triton`).
 * `infer()` is the in-process path; the HTTP/gRPC frontends serve the same models.
 */
import { performance } from 'node:perf_hooks';
import { checkTritonConfigKeys } from './config/triton-config-keys';
import type { ModelConfig, Tensor, TritonConfig } from './config/types';
import { normalizeBindConfig } from './config/normalize';
import { DEFAULT_EXIT_TIMEOUT_SECS } from './config/defaults';
import { ResponseStream } from './decoupled';
import { InferenceServerError, clip, notFound, toInferenceServerError } from './errors';
import { BoundModel, type InferOptions, type StreamOptions } from './model';
import type { RequestSink } from './cache/model-cache';
import type { InferFunc, InferFuncResult, Request, ResponseOutputs, TritonContext } from './request';
import { NDArray, ndarray, typedArrayFor, type DataType, type TensorData } from './tensor';
import type { NormalizedModelConfig, NormalizedTensor } from './config/normalize';
import type {
  CheckedOutputs, InferInput, InferInputsOf, InferResultOf, InputsOf, ModelSpec, OutputsOf, TensorSpecs,
} from './typed-model';
import { warmUp } from './warmup';
import { parseCacheConfig } from './cache/config';
import { parseRateLimiterSettings } from './config/rate-limiter';
import { native, type RateLimiter } from './native';
import { ResponseCache } from './cache/response-cache';
import { EnsembleModel } from './ensemble/ensemble-model';
import { normalizeEnsembleScheduling, validateEnsemble } from './ensemble/validate';
import { Logger } from './log';
import { checkModelNameLength } from './model-name';
import { createServerContext, traceSettingsFromConfig, type ServerContext } from './server/context';
import { startFrontends, type Frontend } from './server/frontends';
import type { ServedTriton } from './server/served-triton';
import {
  ModelRepositoryManager, type IndexEntry, type LoadOverride, type RepositoryOptions,
} from './repository/manager';

/**
 * Arguments of `bind()` (PyTriton's `bind`, camelCased). `I`/`O` are the declared inputs and
 * outputs (literal tuples when written inline: see typed-model.ts) and `R` what the callable
 * returns per request, checked against `O`.
 */
export interface BindOptions<
  I extends TensorSpecs = Tensor[], O extends TensorSpecs = Tensor[], R = ResponseOutputs,
> {
  modelName: string;
  /**
   * One callable per model instance; a list binds that many instances. Absent for an ensemble
   * (`config.ensembleScheduling`), whose steps do the work. It receives the declared inputs
   * typed by their datatypes, and what it returns must name declared outputs only, each of its
   * datatype.
   */
  inferFunc?: BoundInferFunc<I, O, R> | BoundInferFunc<I, O, R>[];
  inputs: I;
  outputs: O;
  /** Default 1. */
  modelVersion?: number;
  config?: ModelConfig;
  /** Default false. Validate output names, dtypes and shapes against `outputs`. */
  strict?: boolean;
}

/** `bind()`'s options as the run time reads them. */
interface UntypedBindOptions extends Omit<BindOptions, 'inferFunc' | 'inputs' | 'outputs'> {
  inferFunc?: InferFunc | InferFunc[];
  inputs: Tensor[];
  outputs: Tensor[];
}

/** The callable `bind()` takes for declared inputs `I` and outputs `O`, returning `R` per request. */
export type BoundInferFunc<I extends TensorSpecs, O extends TensorSpecs, R> = (
  requests: Request<InputsOf<I>>[],
  context: TritonContext,
) => InferFuncResult<R & CheckedOutputs<R, OutputsOf<O>>>;

/** An input of `infer()` (defined in typed-model.ts, which types inputs by a model's spec). */
export type { InferInput } from './typed-model';

export interface TritonInferOptions extends InferOptions {
  /** Default: the latest bound version. */
  modelVersion?: number;
}

export interface TritonStreamOptions extends StreamOptions {
  /** Default: the latest bound version. */
  modelVersion?: number;
}

const INPUT_FORMS = 'an NDArray, a TypedArray, or { data, shape?, dtype? }';

/** What `toNDArray` needs of the model: its name, batching and declared inputs. */
type ModelInputsConfig = Pick<NormalizedModelConfig, 'name' | 'maxBatchSize' | 'inputs'>;

/**
 * One in-process input as an NDArray; anything else is INVALID_ARG naming the input and model.
 * Data without a shape (a bare TypedArray, a list of byte strings, `{ data }`) is one sample of
 * the declared input, as ModelClient.inferSample takes it: its declared dims (a -1 resolved from
 * the element count), behind a batch axis of 1 when the model batches.
 */
function toNDArray(model: ModelInputsConfig, name: string, value: InferInput): NDArray {
  const refuse = (what: string): never => {
    throw new InferenceServerError('INVALID_ARG', `input '${clip(name)}' for model '${clip(model.name)}': ${what}; expected ${INPUT_FORMS}`);
  };
  if (value instanceof NDArray) return value;
  if (value === null || typeof value !== 'object') return refuse(`got ${value === null ? 'null' : typeof value}`);
  if (Array.isArray(value) && value.some((v) => typeof v !== 'string' && !(v instanceof Uint8Array))) {
    // A plain array is BYTES (strings or Uint8Arrays); numbers need a typed array to say their dtype.
    return refuse('a plain array of numbers has no datatype (wrap it, e.g. new Float32Array([...]))');
  }
  const parts = ArrayBuffer.isView(value) || Array.isArray(value)
    ? { data: value as TensorData | string[], shape: undefined, dtype: undefined }
    : value as { data: TensorData | string[]; shape?: number[]; dtype?: DataType };
  if (parts.data === undefined || parts.data === null) refuse('it has no data');
  if (parts.shape !== undefined && (!Array.isArray(parts.shape) || parts.shape.some((d) => !Number.isSafeInteger(d) || d < 0))) {
    refuse(`its shape must be an array of non-negative integers, got ${clip(JSON.stringify(parts.shape) ?? String(parts.shape))}`);
  }
  const spec = model.inputs.find((t) => t.name === name);
  try {
    const dtype = parts.dtype ?? declaredDataTypeOf(spec, parts.data);
    const shape = parts.shape ?? (spec && hasLength(parts.data) ? sampleShape(model, spec, parts.data.length) : undefined);
    return ndarray(parts.data, shape, dtype);
  } catch (err) {
    if (err instanceof InferenceServerError) {
      throw new InferenceServerError(err.code, `input '${clip(name)}' for model '${clip(model.name)}': ${err.message}`);
    }
    return refuse(err instanceof Error ? err.message : String(err));
  }
}

function hasLength(data: unknown): data is { length: number } {
  return typeof (data as { length?: unknown }).length === 'number';
}

/**
 * The declared datatype when the array is its kind (a Uint8Array for BOOL, a Uint16Array for
 * FP16/BF16, which the array alone would call UINT8/UINT16); otherwise the array decides.
 */
function declaredDataTypeOf(spec: NormalizedTensor | undefined, data: unknown): DataType | undefined {
  if (!spec || spec.dtype === 'BYTES' || !ArrayBuffer.isView(data)) return undefined;
  return data instanceof typedArrayFor(spec.dtype) ? spec.dtype : undefined;
}

/**
 * The shape of one sample of `count` elements of a declared input: its dims with a single -1
 * resolved, behind a batch axis of 1 when the model batches. INVALID_ARG saying which shape was
 * expected when the elements cannot make one sample.
 */
function sampleShape(model: ModelInputsConfig, spec: NormalizedTensor, count: number): number[] {
  const batching = model.maxBatchSize > 0;
  const dims = [...spec.dims];
  // A batching model with scalar rows (dims []): the elements are the rows, as before.
  if (batching && dims.length === 0) return [count];
  const known = dims.filter((d) => d >= 0).reduce((a, b) => a * b, 1);
  const free = dims.filter((d) => d < 0).length;
  let fits = free === 0 ? known === count : free === 1 && (known === 0 ? count === 0 : count % known === 0);
  if (free === 1 && fits) dims[dims.indexOf(-1)] = known === 0 ? 0 : count / known;
  if (free > 1) fits = false;  // which dims the elements spread over is not known
  if (!fits) {
    const expected = `[${spec.dims.join(',')}]`;
    throw new InferenceServerError('INVALID_ARG', `${count} elements without a shape are one sample of shape ${expected}` +
      `${batching ? ' (the batch axis is added)' : ''}, which ${free > 1 ? 'has more than one variable dimension' : `they do not fill`}; ` +
      `give the shape: { data, shape: [${batching ? '1,' : ''}${spec.dims.map((d) => (d < 0 ? 'n' : d)).join(',')}] } or an NDArray`);
  }
  return batching ? [1, ...dims] : dims;
}

/** A `signal` must be an AbortSignal (or behave like one): checked before anything is queued. */
function checkSignal(model: string, signal: unknown): void {
  if (signal === undefined) return;
  const s = signal as { aborted?: unknown; addEventListener?: unknown } | null;
  if (s === null || typeof s !== 'object' || typeof s.aborted !== 'boolean' || typeof s.addEventListener !== 'function') {
    throw new InferenceServerError('INVALID_ARG', `request for model '${clip(model)}': options.signal must be an AbortSignal ` +
      '(e.g. AbortSignal.timeout(ms) or an AbortController\'s signal)');
  }
}

export class Triton implements ServedTriton {
  readonly config: TritonConfig;
  /** Lower-cased model name → versions (PyTriton treats names case-insensitively for duplicates). */
  readonly #models = new Map<string, Map<number, BoundModel>>();
  /** Name as callers spell it → latest version; cleared whenever a model is bound. */
  readonly #latest = new Map<string, BoundModel>();
  readonly #warmups: Promise<void>[] = [];
  /** The models bind() made; repository models are the repository manager's to stop. */
  readonly #bound: BoundModel[] = [];
  #repository: ModelRepositoryManager | null = null;
  #server: ServerContext | null = null;
  #frontends: Frontend[] = [];
  #running = false;
  #stopped = false;
  /** What stop() waits for (its drain), for a serve() that a stop() from elsewhere woke. */
  #stopDone: Promise<void> | null = null;
  /** Ends serve()'s wait for a signal (set while serve() waits). */
  #wakeServe: (() => void) | null = null;
  /**
   * Lower-cased names of every model the server had when stop() began: while it drains, a
   * request for one of them is refused as retryable (UNAVAILABLE), never answered "unknown".
   */
  #servedAtStop: Set<string> | null = null;
  #exitTimeoutExpired = false;
  /** What each published model reports its successful requests to (reportRequestsTo). */
  #sinkFor: ((model: BoundModel) => RequestSink | null) | null = null;
  /** The server's log (Triton's logging extension). */
  readonly logger: Logger;
  /**
   * The response cache every model of this Triton shares (`cacheConfig`); null without one.
   * @internal
   */
  readonly responseCache: ResponseCache | null;
  /**
   * The rate limiter every model of this Triton shares (`rateLimit: 'execution_count'`); null
   * when rate limiting is off.
   * @internal
   */
  readonly rateLimiter: RateLimiter | null;

  constructor(options: { config?: TritonConfig } = {}) {
    checkTritonConfigKeys(options.config ?? {});
    this.config = { ...options.config };
    const cache = parseCacheConfig(this.config);
    this.responseCache = cache ? new ResponseCache(cache.sizeBytes) : null;
    const rateLimits = parseRateLimiterSettings(this.config);
    this.rateLimiter = rateLimits ? new (native().RateLimiter)(rateLimits.map((r) => [r.name, r.count, r.device])) : null;
    this.logger = new Logger(this.config);
    const pinned = this.config.pinnedMemoryPoolByteSize;
    if (pinned !== undefined) {
      if (!Number.isSafeInteger(pinned) || pinned < 0) {
        throw new InferenceServerError('INVALID_ARG', `pinnedMemoryPoolByteSize must be a non-negative integer (bytes), got ${pinned}`);
      }
      native().pinnedMemory(pinned);
    }
  }

  /** Binds a callable (or one per instance) as a model; it can serve requests at once. */
  bind<const I extends TensorSpecs, const O extends TensorSpecs, R = ResponseOutputs>(typed: BindOptions<I, O, R>): void {
    // The type parameters only check the caller's code; at run time every binding is checked alike.
    const options = typed as unknown as UntypedBindOptions;
    if (this.#stopped) throw new InferenceServerError('UNAVAILABLE', 'this Triton was stopped');
    checkModelNameLength(options.modelName);
    if (options.config?.ensembleScheduling) {
      this.#bindEnsemble(options);
      return;
    }
    const funcs = options.inferFunc === undefined ? [] : Array.isArray(options.inferFunc) ? options.inferFunc : [options.inferFunc];
    if (funcs.length === 0 || funcs.some((f) => typeof f !== 'function')) {
      throw new InferenceServerError('INVALID_ARG', `model '${options.modelName}': inferFunc must be a function or a non-empty list of functions`);
    }
    const config = normalizeBindConfig({
      modelName: options.modelName,
      modelVersion: options.modelVersion,
      inputs: options.inputs,
      outputs: options.outputs,
      config: options.config,
      instanceCount: funcs.length,
      maxQueueSizeHardLimit: this.config.maxQueueSizeHardLimit,
    });
    this.#checkFree(config);
    const model = new BoundModel(config, { kind: 'js', funcs, strict: options.strict ?? false }, this.rateLimiter ?? undefined);
    this.#register(model);
    // Awaited by run(), which rejects with the first failure; handled here so that a failure
    // before run() is called is not an unhandled rejection.
    const binding = performance.now();
    const warming = warmUp(model, (line) => this.logger.verbose(1, line));
    // Triton's nv_model_load_duration_secs: from bind() to warmed up.
    warming.then(() => { model.loadDurationSeconds = (performance.now() - binding) / 1000; }, () => undefined);
    this.#warmups.push(warming);
  }

  /**
   * Binds an ensemble declared in code: its steps must be bound (or loaded) already; the DAG is
   * checked against them now, as a repository ensemble's is at load.
   */
  #bindEnsemble(options: UntypedBindOptions): void {
    if (options.inferFunc !== undefined) {
      throw new InferenceServerError('INVALID_ARG', `ensemble '${options.modelName}': an ensemble has no inferFunc; its steps do the work`);
    }
    const { ensembleScheduling, ...rest } = options.config!;
    const base = normalizeBindConfig({
      modelName: options.modelName, modelVersion: options.modelVersion, inputs: options.inputs, outputs: options.outputs,
      config: { ...rest, batcher: undefined }, instanceCount: 1, maxQueueSizeHardLimit: this.config.maxQueueSizeHardLimit,
    });
    const config = {
      ...base, backend: '', platform: 'ensemble', instanceGroup: [], dynamicBatching: null,
      ensembleScheduling: normalizeEnsembleScheduling(base.name, ensembleScheduling!),
    };
    this.#checkFree(config);
    const plan = validateEnsemble(config, (name, version) => this.#stepModel(name, version).config);
    this.#register(new EnsembleModel(config, plan, (name, version) => this.#stepModel(name, version)));
  }

  /** A step model of an ensemble: version -1 is the latest. */
  #stepModel(name: string, version: number): BoundModel {
    return this.model(name, version < 0 ? undefined : version);
  }

  #checkFree(config: { name: string; version: number }): void {
    if (this.#models.get(config.name.toLowerCase())?.has(config.version)) {
      throw new InferenceServerError('ALREADY_EXISTS', `model '${config.name}' version ${config.version} is already bound`);
    }
  }

  #register(model: BoundModel): void {
    this.#publish(model);
    const key = model.name.toLowerCase();
    const versions = this.#models.get(key) ?? new Map<number, BoundModel>();
    versions.set(model.version, model);
    this.#bound.push(model);
    this.#models.set(key, versions);
    this.#latest.clear();
  }

  /**
   * Serves the models of a Triton model repository too (`infernode serve`). Call before run():
   * run() performs the initial loads of the control mode.
   */
  useRepository(options: Omit<RepositoryOptions, 'maxQueueSizeHardLimit' | 'rateLimiter'>): ModelRepositoryManager {
    if (this.#repository) throw new InferenceServerError('ALREADY_EXISTS', 'a model repository is already in use');
    this.#repository = new ModelRepositoryManager(this, {
      log: (line) => this.logger.info(line), logError: options.log ?? ((line) => this.logger.error(line)),
      logVerbose: (line) => this.logger.verbose(1, line),
      ...options, maxQueueSizeHardLimit: this.config.maxQueueSizeHardLimit,
      rateLimiter: this.rateLimiter ?? undefined,
    });
    return this.#repository;
  }

  /** What a model gets from this Triton when it is published: its response cache and request sink. */
  #publish(model: BoundModel): void {
    model.useResponseCache(this.responseCache);
    model.reportRequestsTo(this.#sinkFor?.(model) ?? null);
  }

  /**
   * Has every serving model, and each one published later, report its successful requests to
   * the sink `sinkFor` gives it (the metrics frontend's); null: to none.
   * @internal
   */
  reportRequestsTo(sinkFor: ((model: BoundModel) => RequestSink | null) | null): void {
    this.#sinkFor = sinkFor;
    for (const model of this.models()) model.reportRequestsTo(sinkFor?.(model) ?? null);
  }

  /**
   * Publishes (or, with null, withdraws) the versions of a repository model. Requests already
   * queued on withdrawn versions finish there.
   * @internal
   */
  setModelVersions(name: string, versions: Map<number, BoundModel> | null): void {
    const key = name.toLowerCase();
    for (const model of versions?.values() ?? []) this.#publish(model);
    if (versions && versions.size > 0) this.#models.set(key, versions);
    else this.#models.delete(key);
    this.#latest.clear();
  }

  /**
   * Starts serving without blocking: warm-ups and the repository's initial loads finish first,
   * then the frontends the config allows (HTTP, gRPC, metrics) start listening.
   */
  async run(): Promise<void> {
    if (this.#running) return;
    if (this.#stopped) throw new InferenceServerError('UNAVAILABLE', 'this Triton was stopped');
    try {
      // Settings read only when the frontends start are checked before any model loads.
      try {
        traceSettingsFromConfig(this.config.traceConfig);
      } catch (err) {
        throw new InferenceServerError('INVALID_ARG', (err as Error).message);
      }
      await Promise.all(this.#warmups);
    } catch (err) {
      await this.stop();
      throw err;
    }
    if (this.#repository) {
      const failed = await this.#repository.start();
      if (this.#stopped) throw stoppedDuringStart();
      if (failed.size > 0 && (this.config.exitOnError ?? true)) {
        const reasons = [...failed].map(([name, reason]) => `\n  ${name}: ${reason}`).join('');
        await this.stop();
        throw new InferenceServerError('UNAVAILABLE', `failed to load model(s):${reasons}\n` +
          'To serve the models that did load, start with exitOnError: false (infernode serve --exit-on-error=false).');
      }
    }
    if (this.#stopped) throw stoppedDuringStart();
    this.#server = createServerContext(this, this.logger);
    try {
      this.#frontends = await startFrontends(this.#server);
    } catch (err) {
      await this.stop();
      throw err;
    }
    if (this.#stopped) {
      // stop() ran while the frontends started: they were not in its list yet.
      await Promise.all(this.#frontends.map((f) => f.close()));
      this.#frontends = [];
      throw stoppedDuringStart();
    }
    this.#running = true;
  }

  /**
   * The state the frontends share (null before run()).
   * @internal
   */
  get server(): ServerContext | null {
    return this.#server;
  }

  /** The port each running frontend listens on (useful with port 0). */
  get ports(): { http?: number; grpc?: number; metrics?: number } {
    const ports: { http?: number; grpc?: number; metrics?: number } = {};
    for (const f of this.#frontends) ports[f.kind] = f.port;
    return ports;
  }

  /** The repository index (Triton's repository extension): bound models, then repository models. */
  repositoryIndex(readyOnly = false): IndexEntry[] {
    const repo = this.#repository?.index(readyOnly) ?? [];
    const repoNames = new Set(repo.map((e) => e.name.toLowerCase()));
    const bound = this.models()
      .filter((m) => !repoNames.has(m.name.toLowerCase()))
      .map((m): IndexEntry => ({ name: m.name, version: String(m.version), state: 'READY', reason: '' }));
    return [...bound, ...repo].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
  }

  /** The repository load API; UNAVAILABLE unless the repository's control mode is explicit. */
  async loadModel(name: string, override?: LoadOverride): Promise<void> {
    if (!this.#repository) {
      throw new InferenceServerError('UNAVAILABLE', 'explicit model load / unload is not allowed: no model repository is in use');
    }
    await this.#repository.load(name, override);
  }

  /** The repository unload API; in-flight requests finish first. */
  async unloadModel(name: string): Promise<void> {
    if (!this.#repository) {
      throw new InferenceServerError('UNAVAILABLE', 'explicit model load / unload is not allowed: no model repository is in use');
    }
    await this.#repository.unload(name);
  }

  /** Server readiness: serving, and (strict readiness, the default) every known model ready. */
  isReady(): boolean {
    if (!this.#running) return false;
    if (this.config.strictReadiness === false) return true;
    return this.repositoryIndex().every((e) => e.state === 'READY' || e.reason === 'unloaded');
  }

  /**
   * Runs until SIGINT or SIGTERM, then stops gracefully (in-flight requests finish first); a
   * stop() called meanwhile from elsewhere ends it too, once that stop has finished.
   */
  async serve(): Promise<void> {
    await this.run();
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        process.off('SIGINT', wake);
        process.off('SIGTERM', wake);
        this.#wakeServe = null;
        resolve();
      };
      this.#wakeServe = wake;
      process.on('SIGINT', wake);
      process.on('SIGTERM', wake);
    });
    if (!(await this.stop())) await this.#stopDone;
  }

  /**
   * Graceful stop: the frontends stop accepting, in-flight requests finish, every model stops
   * (a repository load still running is waited for), then the frontends close. All of it is
   * bounded by `exitTimeoutSecs`: past it, Triton's "Exit timeout expired. Exiting
   * immediately." is logged, `exitTimeoutExpired` turns true and stop() resolves anyway (what
   * is still running is abandoned; `infernode serve` then exits with code 1). While it drains,
   * requests for the models the server had are refused with UNAVAILABLE (retryable), never
   * NOT_FOUND. The log is flushed and closed when it resolves. False when already stopped.
   */
  async stop(): Promise<boolean> {
    if (this.#stopped) return false;
    this.#stopped = true;
    this.#wakeServe?.();
    this.#stopDone = this.#drainAndClose();
    await this.#stopDone;
    return true;
  }

  /** stop()'s work, once: drain, stop every model, close the frontends (bounded by exitTimeoutSecs). */
  async #drainAndClose(): Promise<void> {
    this.#running = false;
    this.#servedAtStop = new Set([
      ...this.#models.keys(), ...this.repositoryIndex().map((e) => e.name.toLowerCase()),
    ]);
    if (this.#server) this.#server.exiting = true;
    for (const f of this.#frontends) f.beginShutdown();
    const timeoutMs = (this.config.exitTimeoutSecs ?? DEFAULT_EXIT_TIMEOUT_SECS) * 1000;
    const deadline = Date.now() + timeoutMs;
    // Repository models are stopped by their manager, which finalizes each one after its last
    // request (stopping them here too would make its wait return early).
    // Ensembles drain first: their requests in flight still send requests to their step models.
    const ensembles = this.#bound.filter((m) => m instanceof EnsembleModel);
    // The repository's stop starts now (it refuses loads from this moment on).
    const drained = Promise.all([
      Promise.all(ensembles.map((m) => m.stop(timeoutMs)))
        .then(() => Promise.all(this.#bound.filter((m) => !(m instanceof EnsembleModel)).map((m) => m.stop(timeoutMs)))),
      this.#repository?.stop(timeoutMs),
    ]);
    let inTime = await settlesWithin(drained, timeoutMs);
    const closed = Promise.all(this.#frontends.map((f) => f.close()));
    if (inTime) inTime = await settlesWithin(closed, Math.max(0, deadline - Date.now()));
    this.#frontends = [];
    // Client regions (POSIX fds, CUDA IPC mappings) are released now rather than when collected:
    // an embedding process may run on long after its server stopped.
    this.#server?.sharedMemory.releaseAll();
    this.#server?.tracer.flush();
    if (!inTime) {
      this.#exitTimeoutExpired = true;
      this.logger.error('Exit timeout expired. Exiting immediately.');
    }
    await this.logger.close();
  }

  /** True once stop() gave up waiting after `exitTimeoutSecs` (Triton then exits with code 1). */
  get exitTimeoutExpired(): boolean {
    return this.#exitTimeoutExpired;
  }

  /** True between run() and stop(). */
  isConnected(): boolean {
    return this.#running;
  }

  /** Every bound model version. */
  models(): BoundModel[] {
    return [...this.#models.values()].flatMap((versions) => [...versions.values()]);
  }

  /** Every serving version of a model, oldest first; NOT_FOUND when the name is unknown. */
  modelVersions(name: string): BoundModel[] {
    return [...this.#versionsOf(name).values()].sort((a, b) => a.version - b.version);
  }

  /**
   * A bound model; NOT_FOUND when the name or version is unknown, UNAVAILABLE when the server is
   * stopping and no longer serves it. Latest version by default.
   */
  model(name: string, version?: number): BoundModel {
    if (version === undefined) {
      const latest = this.#latest.get(name);  // the hot path: no lower-casing, no search
      if (latest) return available(latest);
    }
    const versions = this.#versionsOf(name);
    if (version === undefined) {
      const latest = versions.get(Math.max(...versions.keys()))!;
      this.#latest.set(name, latest);
      return available(latest);
    }
    const model = versions.get(version);
    if (!model) throw notFound(`Request for unknown model: '${clip(name)}' version ${version} is not found`);
    return available(model);
  }

  /**
   * The serving versions of a model: the one lookup every name from a caller goes through (the
   * frontends, infer(), metadata), so the name's bound and the draining answer live here only.
   */
  #versionsOf(name: string): Map<number, BoundModel> {
    checkModelNameLength(name);
    const key = name.toLowerCase();
    const versions = this.#models.get(key);
    if (versions && versions.size > 0) return versions;
    if (this.#servedAtStop?.has(key)) throw serverShuttingDown(name);
    const failure = this.#repository?.failureReason(name);
    throw notFound(`Request for unknown model: '${clip(name)}' is not found` + (failure ? ` (its last load failed: ${failure})` : ''));
  }

  /**
   * In-process inference: resolves with the outputs, or rejects with an InferenceServerError.
   * With the model's spec as type argument (`triton.infer<typeof spec>(...)`, see `defineModel`)
   * the inputs and outputs are typed by their declared names and datatypes; with `options.outputs`
   * only those outputs are present.
   */
  infer<M extends ModelSpec = ModelSpec>(
    modelName: string, inputs: InferInputsOf<M>, options: TritonInferOptions = {},
  ): Promise<InferResultOf<M['outputs']>> {
    let model: BoundModel;
    let arrays: Record<string, NDArray>;
    try {
      [model, arrays] = this.#modelAndInputs(modelName, inputs as Record<string, InferInput>, options);
    } catch (err) {
      return Promise.reject(err);
    }
    return model.infer(arrays, options) as Promise<InferResultOf<M['outputs']>>;
  }

  /** The model an in-process call names, and its inputs as NDArrays; throws what is wrong. */
  #modelAndInputs(modelName: string, inputs: Record<string, InferInput>, options: TritonInferOptions): [BoundModel, Record<string, NDArray>] {
    const model = this.model(modelName, options.modelVersion);
    checkSignal(modelName, options.signal);
    if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
      throw new InferenceServerError('INVALID_ARG', `request for model '${clip(modelName)}': inputs must be an object of named inputs, ` +
        `got ${inputs === null ? 'null' : Array.isArray(inputs) ? 'an array' : typeof inputs}`);
    }
    const arrays: Record<string, NDArray> = {};
    for (const name in inputs) arrays[name] = toNDArray(model.config, name, inputs[name]);
    return [model, arrays];
  }

  /**
   * In-process inference on a decoupled model: an async iterator of its responses (each one's
   * outputs), which ends after the final response or throws the request's error. Leaving the
   * loop early (or aborting `options.signal`) cancels the request.
   */
  inferStream<M extends ModelSpec = ModelSpec>(
    modelName: string, inputs: InferInputsOf<M>, options: TritonStreamOptions = {},
  ): AsyncIterableIterator<InferResultOf<M['outputs']>> {
    let model: BoundModel;
    let arrays: Record<string, NDArray>;
    try {
      [model, arrays] = this.#modelAndInputs(modelName, inputs as Record<string, InferInput>, options);
    } catch (err) {
      const failed = new ResponseStream(0, () => undefined);
      failed.fail(toInferenceServerError(err));
      return failed as AsyncIterableIterator<InferResultOf<M['outputs']>>;
    }
    return model.inferStream(arrays, options) as AsyncIterableIterator<InferResultOf<M['outputs']>>;
  }
}

/**
 * The answer to a request for a model the server had, once it began stopping: UNAVAILABLE (HTTP
 * 503), which clients and load balancers retry elsewhere; NOT_FOUND would be final.
 */
export function serverShuttingDown(model: string): InferenceServerError {
  return new InferenceServerError('UNAVAILABLE',
    `Server is shutting down: model '${model}' no longer accepts requests here; retry on another server`);
}

/** An ensemble whose step model is not serving (unloaded) is UNAVAILABLE, not ready. */
function available(model: BoundModel): BoundModel {
  if (model instanceof EnsembleModel) {
    const reason = model.unavailableReason();
    if (reason) throw reason;
  }
  return model;
}

function stoppedDuringStart(): InferenceServerError {
  return new InferenceServerError('UNAVAILABLE', 'this Triton was stopped while it was starting');
}

/** Whether `work` settles within `ms` (it keeps running either way; its rejection is ignored). */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true, () => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}
