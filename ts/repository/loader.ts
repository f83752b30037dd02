/**
 * Loads one model of a repository: its config (config.pbtxt, or an override from the load
 * API), the versions its version policy selects, each version's engine (ONNX Runtime sessions,
 * or a JS model), auto-completed and normalized into a BoundModel per version.
 */
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { InferenceServerError, toInferenceServerError } from '../errors';
import { BoundModel } from '../model';
import { instanceDevices, placeInstanceGroups, type PlacedGroup } from '../config/instances';
import type { NormalizedInstanceGroup, NormalizedModelConfig } from '../config/normalize';
import { loadOnnxEngine, type OnnxEngine, type OnnxSessionGroup } from '../engines/onnx';
import { native, type RateLimiter, type TensorRtLoadOptions } from '../native';
import { warmUp, type WarmupLog } from '../warmup';
import { autoCompleteOnnxConfig, castTensors, markScalarTensors, type RawModelConfig } from './autocomplete';
import { precheckModelConfig, precheckRawConfig, readRawConfig, normalizeRawConfig } from './config-source';
import { loadJsModel } from './js-model';
import { checkFileInside } from './model-files';
import { loadEnsembleVersion, type StepModels } from '../ensemble/repository';
import {
  findModelFile, modelFileNames, selectVersions, versionsOnDisk, type ModelDirectory, type ModelFileKind,
} from './layout';

/** A loaded version, with what must run when it is unloaded. */
export interface LoadedVersion {
  model: BoundModel;
  finalize(): Promise<void>;
}

export interface LoadOptions {
  /** A config given through the load API (protobuf-JSON form), instead of config.pbtxt. */
  configOverride?: RawModelConfig;
  maxQueueSizeHardLimit?: number;
  log?: (line: string) => void;
  /** Verbose lines: each warm-up run (ts/warmup.ts). */
  logVerbose?: (line: string) => void;
  /** Problems that do not fail the load (a specific version without its directory); default: `log`. */
  logError?: (line: string) => void;
  /** The serving models an ensemble's steps resolve to (the server's model lookup). */
  stepModels?: StepModels;
  /** The server's rate limiter (rateLimit 'execution_count'), given to every model loaded. */
  rateLimiter?: RateLimiter;
  /** Versions serving already that a reload keeps as they are (their files did not change). */
  keep?: Map<number, LoadedVersion>;
}

const ONNX_BACKENDS = new Set(['onnxruntime']);
const JS_BACKENDS = new Set(['js', 'node', 'nodejs']);

/**
 * The engine the config's backend (or platform) asks for; undefined when it names none (the
 * model file decides). Any other backend is UNSUPPORTED, before any file is read.
 */
function configuredEngine(model: string, backend: string, platform: string): ModelFileKind | undefined {
  if (ONNX_BACKENDS.has(backend)) return 'onnx';
  if (JS_BACKENDS.has(backend)) return 'js';
  if (backend === '' && platform === '') return undefined;
  throw new InferenceServerError('UNSUPPORTED', `model '${model}': ${backend ? `backend '${backend}'` : `platform '${platform}'`} ` +
    'is not supported by infernode (supported: onnxruntime, js)');
}

export interface OnnxPlacement {
  placed: PlacedGroup[];
  sessions: OnnxSessionGroup[];
}

/**
 * The ONNX Runtime sessions each instance group asks for, in the config's order, once Triton's
 * rules have put the group on the CPU or on its GPUs (ts/config/instances.ts); `placed` are the
 * groups as the served config shows them when they run where placed.
 */
export function onnxSessionGroups(model: string, groups: NormalizedInstanceGroup[], deviceCount: number): OnnxPlacement {
  const placed = placeInstanceGroups(model, groups, deviceCount, native().buildInfo().cuda);
  const sessions = placed.map(({ group, fromAuto }) => ({
    name: group.name ?? model,
    count: group.count,
    gpus: group.kind === 'KIND_GPU' ? instanceDevices(group).map((d) => d ?? 0) : null,
    cpuFallback: fromAuto,
  }));
  return { placed, sessions };
}

/** An integer parameter of the config within [0, max]; `zero` says what 0 means. */
function intParameter(model: string, config: RawModelConfig, key: string, max: number, zero: string): number | undefined {
  const params = config.parameters as Record<string, { string_value?: string }> | undefined;
  const value = params?.[key]?.string_value;
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new InferenceServerError('INVALID_ARG', `model '${model}': parameter '${key}' must be an integer from 0 (${zero}) to ${max}, got '${value}'`);
  }
  return n;
}

/**
 * How much lower than the JS thread the compute threads (instance threads, ONNX Runtime's
 * pools) are scheduled, as a nice increment: under CPU contention the event loop runs first,
 * which keeps its delay low while ONNX Runtime uses every core it leaves. 19, the most, so
 * ONNX Runtime's spinning workers (engines/onnx.ts) give way at once to any thread with work
 * (10 left them a tenth of a contended core; docs/repository.md, "Threads and session options").
 */
export const DEFAULT_COMPUTE_THREAD_NICE = 19;

/** The config's `session.*` parameters: ONNX Runtime session config entries, passed as they are. */
function sessionConfigEntries(config: RawModelConfig): Record<string, string> | undefined {
  const params = config.parameters as Record<string, { string_value?: string }> | undefined;
  const entries = Object.entries(params ?? {}).filter(([key]) => key.startsWith('session.'));
  return entries.length === 0 ? undefined : Object.fromEntries(entries.map(([key, v]) => [key, v.string_value ?? '']));
}

/** Prefixes an error with the model and version, keeping its code. */
function inVersion(where: string, err: unknown): InferenceServerError {
  const e = toInferenceServerError(err);
  return e.message.startsWith('model ') ? e : new InferenceServerError(e.code, `${where}: ${e.message}`);
}

type RawAccelerators = { execution_accelerators?: { gpu_execution_accelerator?: { name?: string; parameters?: Record<string, string> }[] } };

/**
 * The TensorRT accelerator a config asks for (`optimization { execution_accelerators {
 * gpu_execution_accelerator: [ { name: "tensorrt", parameters {...} } ] } }`), with the parameters
 * Triton's onnxruntime backend takes; null when it asks for none.
 */
export function tensorRtOptions(model: string, config: RawModelConfig): TensorRtLoadOptions | null {
  const accelerators = (config.optimization as RawAccelerators | undefined)?.execution_accelerators?.gpu_execution_accelerator ?? [];
  const trt = accelerators.find((a) => a.name === 'tensorrt');
  if (!trt) return null;
  const options: TensorRtLoadOptions = {};
  let cacheEnabled = false;
  for (const [key, value] of Object.entries(trt.parameters ?? {})) {
    const refuse = (expected: string): never => {
      throw new InferenceServerError('INVALID_ARG', `model '${model}': TensorRT accelerator parameter '${key}' is '${value}', expected ${expected}`);
    };
    if (key === 'precision_mode') {
      if (value === 'INT8') refuse('FP32 or FP16 (INT8 needs a calibration table, which infernode does not take yet)');
      if (value !== 'FP32' && value !== 'FP16') refuse('FP32 or FP16');
      options.fp16 = value === 'FP16';
    } else if (key === 'max_workspace_size_bytes') {
      const n = Number(value);
      if (value.trim() === '' || !Number.isSafeInteger(n) || n <= 0) refuse('a positive number of bytes');
      options.maxWorkspaceBytes = n;
    } else if (key === 'trt_engine_cache_enable') {
      if (value !== 'true' && value !== 'false') refuse('true or false');
      cacheEnabled = value === 'true';
    } else if (key === 'trt_engine_cache_path') {
      options.engineCachePath = value;
    } else {
      throw new InferenceServerError('INVALID_ARG', `model '${model}': unknown parameter '${key}' is provided for TensorRT Execution Accelerator ` +
        '(known: precision_mode, max_workspace_size_bytes, trt_engine_cache_enable, trt_engine_cache_path)');
    }
  }
  if (cacheEnabled && !options.engineCachePath) {
    throw new InferenceServerError('INVALID_ARG', `model '${model}': trt_engine_cache_enable is true but no trt_engine_cache_path is given`);
  }
  if (!cacheEnabled) delete options.engineCachePath;
  return options;
}

async function loadVersion(
  dir: ModelDirectory, raw: RawModelConfig, version: number, engine: ModelFileKind | undefined, options: LoadOptions,
): Promise<LoadedVersion> {
  const where = `model '${dir.name}' version ${version}`;
  const versionDir = path.join(dir.dir, String(version));
  const defaultFile = (raw.default_model_filename as string | undefined) || undefined;
  let found: ReturnType<typeof findModelFile>;
  try {
    found = findModelFile(versionDir, dir.repository, defaultFile, engine);
  } catch (err) {
    throw inVersion(where, err);
  }
  if (!found) {
    throw new InferenceServerError('INVALID_ARG', `${where}: no model file (${modelFileNames(defaultFile, engine)}) in ${versionDir}`);
  }
  if (statSync(found.file).size === 0) throw new InferenceServerError('INVALID_ARG', `${where}: the model file ${found.file} is empty`);
  if (found.kind === 'onnx') {
    // Everything that needs no model file is checked before ONNX Runtime creates sessions.
    const groups = precheckRawConfig({ backend: 'onnxruntime', ...raw }, normalizeOptions(dir, version, options));
    const instances = onnxSessionGroups(dir.name, groups, native().buildInfo().cudaDeviceCount);
    const intraOpThreads = intParameter(dir.name, raw, 'intra_op_thread_count', 1024, "ONNX Runtime's default");
    const interOpThreads = intParameter(dir.name, raw, 'inter_op_thread_count', 1024, "ONNX Runtime's default");
    const computeThreadNice = intParameter(dir.name, raw, 'compute_thread_nice', 19, 'the JS thread\'s priority') ??
      DEFAULT_COMPUTE_THREAD_NICE;
    let engine: OnnxEngine;
    try {
      engine = await loadOnnxEngine({
        modelName: dir.name, modelPath: found.file, groups: instances.sessions, tensorRt: tensorRtOptions(dir.name, raw) ?? undefined,
        intraOpThreads, interOpThreads, sessionConfig: sessionConfigEntries(raw), computeThreadNice, log: options.log,
      });
    } catch (err) {
      throw inVersion(where, err);
    }
    let model: BoundModel;
    try {
      model = onnxModel(dir, raw, version, engine, instances, options);
    } catch (err) {
      // The sessions exist already: freed now, not whenever V8 collects their handles.
      engine.release();
      throw err;
    }
    return warmedUp({ model, finalize: async () => {} }, options.logVerbose);
  }
  if (!raw.input || !raw.output) {
    throw new InferenceServerError('INVALID_ARG', `model '${dir.name}': a JS model needs a config.pbtxt declaring its inputs and outputs`);
  }
  const config = normalize({ backend: 'js', ...raw }, dir, version, options);
  // Triton's placement applies to every backend: a KIND_GPU group lists every GPU when it names
  // none, and without a GPU it fails the load.
  const build = native().buildInfo();
  config.instanceGroup = placeInstanceGroups(dir.name, config.instanceGroup, build.cudaDeviceCount, build.cuda).map((p) => p.group);
  const js = await loadJsModel(found.file, config, dir);
  let model: BoundModel;
  try {
    model = new BoundModel(config, { kind: 'js', funcs: js.funcs, strict: false }, options.rateLimiter);
  } catch (err) {
    await js.finalize();
    throw err;
  }
  return warmedUp({ model, finalize: js.finalize }, options.logVerbose);
}

/**
 * The BoundModel serving loaded ONNX sessions: the config auto-completed from the model and
 * normalized, each instance group shown where it runs.
 */
function onnxModel(
  dir: ModelDirectory, raw: RawModelConfig, version: number, engine: OnnxEngine, instances: OnnxPlacement, options: LoadOptions,
): BoundModel {
  const completed = autoCompleteOnnxConfig(dir.name, { backend: 'onnxruntime', ...raw }, engine.inputs, engine.outputs);
  const config = normalize(completed, dir, version, options);
  markScalarTensors(config, engine.inputs, engine.outputs);
  const onCpu = engine.providers.map((p) => p === 'CPU');
  const cast = castTensors(completed, engine.inputs, engine.outputs);
  if (cast.length > 0) {
    const where = onCpu.every(Boolean) ? 'host' : onCpu.some(Boolean) ? 'host (CPU instances) and the GPU (GPU instances)' : 'GPU';
    (options.log ?? ((line: string) => console.log(line)))(`infernode: model '${dir.name}' serves FP32 for ${cast.join(', ')}: converted on the ${where}`);
  }
  // The served config tells where each group runs (Triton prints the resolved kind), with the
  // GPUs of a group on the GPU (Triton lists every GPU when a group names none).
  config.instanceGroup = config.instanceGroup.map((g, i) => (onCpu[i]
    ? { ...g, kind: 'KIND_CPU', gpus: [] }
    : { ...g, kind: 'KIND_GPU', gpus: [...instances.placed[i].group.gpus] }));
  return new BoundModel(config, { kind: 'onnx', handles: engine.handles }, options.rateLimiter);
}

/** Runs the config's model_warmup (ts/warmup.ts); a failure fails the load. */
async function warmedUp(loaded: LoadedVersion, log?: WarmupLog): Promise<LoadedVersion> {
  try {
    await warmUp(loaded.model, log);
  } catch (err) {
    await loaded.model.stop(0);
    await loaded.finalize().catch(() => undefined);
    throw err;
  }
  return loaded;
}

function normalizeOptions(dir: ModelDirectory, version: number, options: LoadOptions) {
  return {
    name: dir.name, version, source: path.join(dir.dir, 'config.pbtxt'), maxQueueSizeHardLimit: options.maxQueueSizeHardLimit,
  };
}

function normalize(raw: RawModelConfig, dir: ModelDirectory, version: number, options: LoadOptions): NormalizedModelConfig {
  return normalizeRawConfig(raw, normalizeOptions(dir, version, options));
}

/** The error of a model directory without a version directory. */
export function noVersionDirectory(dir: ModelDirectory): InferenceServerError {
  return new InferenceServerError('INVALID_ARG', `model '${dir.name}' has no version directory (e.g. ${dir.name}/1/) in ${dir.repository}`);
}

/** Whether a model directory has at least one version directory. */
export function hasVersionDirectory(modelDir: string): boolean {
  try {
    return versionsOnDisk(modelDir).length > 0;
  } catch {
    return false;
  }
}

/** An ensemble version (its version directory holds no file): its DAG is checked against the serving step models. */
function loadEnsemble(dir: ModelDirectory, raw: RawModelConfig, version: number, options: LoadOptions): LoadedVersion {
  if (!options.stepModels) throw new InferenceServerError('UNAVAILABLE', `ensemble '${dir.name}': no step models can be resolved here`);
  const config = normalize(raw, dir, version, options);
  return { model: loadEnsembleVersion(config, options.stepModels), finalize: async () => {} };
}

/**
 * Loads every version the policy selects, or takes it from `options.keep`; on any failure, what
 * was loaded is stopped again.
 */
export async function loadModel(dir: ModelDirectory, options: LoadOptions = {}): Promise<Map<number, LoadedVersion>> {
  // A model directory that is a link must stay inside the repository too: the files a config
  // names are checked against the model directory only.
  checkFileInside(dir.dir, dir.repository, `model '${dir.name}': the model directory`);
  const raw = options.configOverride ?? readRawConfig(dir);
  // The config is checked as a whole before versions are chosen or any model file is read.
  const { backend, platform, versionPolicy } = precheckModelConfig(raw, normalizeOptions(dir, 1, options));
  const ensemble = platform === 'ensemble';
  const engine = ensemble ? undefined : configuredEngine(dir.name, backend, platform);
  const versions = selectVersions(versionsOnDisk(dir.dir), versionPolicy, dir.name, options.logError ?? options.log);
  if (versions.length === 0) throw noVersionDirectory(dir);
  const loaded = new Map<number, LoadedVersion>();
  const fresh: LoadedVersion[] = [];
  try {
    for (const version of versions) {
      const kept = options.keep?.get(version);
      const started = performance.now();
      const next = kept ?? (ensemble ? loadEnsemble(dir, raw, version, options) : await loadVersion(dir, raw, version, engine, options));
      if (!kept) {
        // Triton's nv_model_load_duration_secs: from the version's load to ready (warm-up included).
        next.model.loadDurationSeconds = (performance.now() - started) / 1000;
        fresh.push(next);
      }
      loaded.set(version, next);
    }
  } catch (err) {
    // Versions kept serve on: only what this load created stops.
    await Promise.all(fresh.map(async (v) => {
      await v.model.stop(0);
      await v.finalize().catch(() => undefined);
    }));
    throw err;
  }
  return loaded;
}
