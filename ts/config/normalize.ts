/**
 * The one normalized model config. `bind()` and a repository's `config.pbtxt` both end
 * here; it is what native code receives and what the frontends print. Validation errors are
 * INVALID_ARG with the model name and the offending field.
 */
import { InferenceServerError, invalidArg } from '../errors';
import { parseDataType, type DataType } from '../tensor';
import type { ProtoJsonObject } from './proto-schema';
import { readFileSync } from 'node:fs';
import { fromBindSequenceBatcher, normalizeSequenceBatching } from './sequence-batching';
import { normalizeRateLimiter } from './rate-limiter';
import { DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT } from './defaults';
import { describeValue } from '../describe-value';
import { checkUint64, sortedUint64Keys, type Uint64 } from './int64-fields';
import {
  TimeoutAction, type DynamicBatcher, type ModelConfig, type ModelWarmup, type QueuePolicy, type Tensor,
} from './types';

export interface NormalizedTensor {
  name: string;
  dtype: DataType;
  /** Dims without the batch axis; -1 is dynamic. */
  dims: number[];
  optional: boolean;
  allowRaggedBatch: boolean;
  // The fields below come from a repository config only; bind() leaves them unset. They are
  // carried so the model's config prints back complete (GET /v2/models/{m}/config).
  /** Inputs only: `FORMAT_NONE` (default), `FORMAT_NHWC` or `FORMAT_NCHW`. */
  format?: 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';
  /** The shape the backend sees (`reshape { shape }`); absent when the config has no reshape. */
  reshape?: number[];
  /**
   * An ONNX scalar (rank 0) served with dims of 1s by a model that does not batch: `reshape` is
   * [] for the engine only, and the served config prints no reshape (as Triton's backend does it).
   */
  scalar?: boolean;
  /** Always false when set: shape tensors belong to TensorRT, which infernode does not serve. */
  isShapeTensor?: boolean;
  isNonLinearFormatIo?: boolean;
  /** Outputs only: the classification label file, relative to the model directory. */
  labelFilename?: string;
  /** Outputs only: the label file's lines (label i names class i), read when the model loads. */
  labels?: string[];
}

// The uint64 fields below are exact (`Uint64`: a number up to 2^53 - 1, a bigint beyond, up to
// 2^64 - 1), as the config gives them; int64-fields.ts says what each means at run time.

export interface NormalizedQueuePolicy {
  timeoutAction: TimeoutAction;
  defaultTimeoutMicroseconds: Uint64;
  allowTimeoutOverride: boolean;
  maxQueueSize: number;
}

export interface NormalizedDynamicBatching {
  /** Never empty: Triton's "full batch" default ([maxBatchSize]) is filled in. */
  preferredBatchSize: number[];
  maxQueueDelayMicroseconds: Uint64;
  preserveOrdering: boolean;
  priorityLevels: Uint64;
  defaultPriorityLevel: Uint64;
  defaultQueuePolicy: NormalizedQueuePolicy;
  /** Keyed by level (decimal digits, 1..priorityLevels), in level order. */
  priorityQueuePolicy: Record<string, NormalizedQueuePolicy>;
}

/** A control input the sequence batcher synthesizes (Triton's `ModelSequenceBatching.ControlInput`). */
export interface NormalizedSequenceControl {
  kind: 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_CORRID';
  /** The model input it is delivered as. */
  name: string;
  /**
   * START/END/READY: INT32, FP32 or BOOL (from `int32_false_true`, `fp32_false_true`,
   * `bool_false_true`); CORRID: its `data_type` (UINT64, INT64, UINT32, INT32 or STRING → BYTES).
   */
  dtype: DataType;
  /** START/END/READY: the [false, true] values (BOOL as 0/1); absent for CORRID. */
  falseTrue?: [number, number];
}

/** One implicit state tensor (Triton's `ModelSequenceBatching.State`). */
export interface NormalizedSequenceState {
  inputName: string;
  outputName: string;
  dtype: DataType;
  /** Without the batch axis; -1 is dynamic (the state takes the shape of the output that replaces it). */
  dims: number[];
  /**
   * What a sequence's state holds at START: the bytes of `initial_state` (zeros, or the
   * contents of its `data_file` as read at load) with its dims; absent = zeros of `dims`
   * (which then must be fully known) — or, for dynamic dims, an empty state.
   */
  initialState?: { name: string; dims: number[]; data: Uint8Array; dataFile?: string };
  useSameBufferForInputOutput: boolean;
  useGrowableMemory: boolean;
}

/** Sequence batcher settings (Triton's `ModelSequenceBatching`), Triton's defaults filled in. */
export interface NormalizedSequenceBatching {
  strategy: 'direct' | 'oldest';
  /** Default 1,000,000 (Triton: 0 means the default). */
  maxSequenceIdleMicroseconds: Uint64;
  /** Both strategies: how long a batch may wait to fill (default 0). */
  maxQueueDelayMicroseconds: Uint64;
  /** direct only (default 0). */
  minimumSlotUtilization: number;
  /**
   * oldest only: candidate sequences per instance (default 0 → max(1, maxBatchSize): Triton's
   * sequence_batch_scheduler.cc uses the slot count when it is 0).
   */
  maxCandidateSequences: number;
  /** oldest only: never empty (default [max(1, maxBatchSize)]). */
  preferredBatchSize: number[];
  /** oldest only. */
  preserveOrdering: boolean;
  controls: NormalizedSequenceControl[];
  states: NormalizedSequenceState[];
  iterativeSequence: boolean;
}

export interface NormalizedInstanceGroup {
  /** Instances of this group (Triton: per listed GPU for KIND_GPU). */
  count: number;
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_AUTO';
  /** Triton's group name; when absent, printers use `<model>_<index>`. */
  name?: string;
  /** GPU ids the group asks for (KIND_GPU / KIND_AUTO only). */
  gpus?: number[];
  // Tuning hints that do not change results, carried as written (protobuf-JSON form).
  rateLimiter?: ProtoJsonObject;
  secondaryDevices?: ProtoJsonObject[];
  profile?: string[];
  passive?: boolean;
  hostPolicy?: string;
}

/** Which versions of a repository model are served (Triton's `version_policy`). */
export type NormalizedVersionPolicy =
  | { kind: 'latest'; numVersions: number }
  | { kind: 'all' }
  | { kind: 'specific'; versions: number[] };

export interface NormalizedModelConfig {
  name: string;
  version: number;
  backend: string;
  /** 0 = the model does not batch; shapes are exactly `dims`. */
  maxBatchSize: number;
  inputs: NormalizedTensor[];
  outputs: NormalizedTensor[];
  /** null = the default scheduler: one request per execution, FIFO. */
  dynamicBatching: NormalizedDynamicBatching | null;
  /** The sequence batcher (stateful models); when set, dynamicBatching is null. */
  sequenceBatching?: NormalizedSequenceBatching | null;
  instanceGroup: NormalizedInstanceGroup[];
  responseCache: boolean;
  decoupled: boolean;
  modelWarmup: ModelWarmup[];
  /** Hard cap on queued requests, so no queue is unbounded. */
  maxQueueSizeHardLimit: number;
  // The fields below come from a repository config only (bind() leaves them unset); native code
  // ignores them. They let the served config print back complete.
  platform?: string;
  runtime?: string;
  /** Default `latest` with 1 version. */
  versionPolicy?: NormalizedVersionPolicy;
  defaultModelFilename?: string;
  /** `parameters { key: "k" value { string_value: "v" } }` as `{ k: "v" }`. */
  parameters?: Record<string, string>;
  ccModelFilenames?: Record<string, string>;
  metricTags?: Record<string, string>;
  /** Tuning hints carried as written (protobuf-JSON form). */
  optimization?: ProtoJsonObject;
  modelOperations?: ProtoJsonObject;
  modelRepositoryAgents?: ProtoJsonObject;
  modelMetrics?: ProtoJsonObject;
  /** The model's directory in its repository (warm-up files and label files live under it). */
  modelDirectory?: string;
  /** Ensembles only (platform 'ensemble'): the steps; native code never sees such a config. */
  ensembleScheduling?: NormalizedEnsembleScheduling;
}

/** An ensemble step; `modelVersion` -1 = the latest version when a request runs. */
export interface NormalizedEnsembleStep {
  modelName: string;
  modelVersion: number;
  inputMap: Record<string, string>;
  outputMap: Record<string, string>;
}

export interface NormalizedEnsembleScheduling {
  steps: NormalizedEnsembleStep[];
  /** 0 = unbounded. */
  maxInflightRequests: number;
}

export const MODEL_NAME_PATTERN = /^[a-zA-Z0-9._-]+$/;

/**
 * How validation messages name config fields: bind()'s camelCase names (`batcher.priorityLevels`)
 * or config.pbtxt's proto names (`dynamic_batching.priority_levels`), so each user reads the
 * names they wrote.
 */
export type FieldNaming = 'camel' | 'proto';

/** A dynamic batcher field path in the naming's style; `camelPath` is bind()'s spelling. */
export function batcherFieldPath(naming: FieldNaming, camelPath: string): string {
  if (naming === 'camel') return camelPath;
  const snake = camelPath.replace(/^batcher\./, '').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return `dynamic_batching.${snake}`;
}

function isNonNegativeInt(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

/** A non-negative safe integer ≥ `min` (absent = 0), else INVALID_ARG naming the model and field. */
export function checkInt(model: string, field: string, value: number | undefined, min = 0): number {
  const v = value ?? 0;
  if (!isNonNegativeInt(v) || v < min) {
    throw invalidArg(`model '${model}': ${field} must be an integer >= ${min}, got ${String(value)}`);
  }
  return v;
}

/** Validates inputs or outputs (unique names, dims of ints ≥ -1, no optional outputs). */
export function normalizeTensors(model: string, tensors: Tensor[], kind: 'input' | 'output'): NormalizedTensor[] {
  const seen = new Set<string>();
  return tensors.map((t, i) => {
    const name = t.name ?? `${kind.toUpperCase()}_${i + 1}`;
    if (seen.has(name)) throw invalidArg(`model '${model}': duplicate ${kind} name '${name}'`);
    seen.add(name);
    if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isSafeInteger(d) || d < -1)) {
      throw invalidArg(`model '${model}': ${kind} '${name}' has invalid shape ${describeValue(t.shape)}`);
    }
    if (kind === 'output' && t.optional) {
      throw invalidArg(`model '${model}': output '${name}' cannot be optional`);
    }
    return {
      name,
      dtype: parseDataType(t.dtype),
      dims: [...t.shape],
      optional: Boolean(t.optional),
      allowRaggedBatch: Boolean(t.allowRaggedBatch),
    };
  });
}

/** Validates one queue policy; `where` is its camelCase path (`defaultQueuePolicy`, `priorityQueuePolicy[2]`). */
export function normalizeQueuePolicy(
  model: string, p: QueuePolicy | undefined, where: string, naming: FieldNaming = 'camel',
): NormalizedQueuePolicy {
  const name = (field: string): string => batcherFieldPath(naming, `${where}.${field}`);
  const action = p?.timeoutAction ?? TimeoutAction.REJECT;
  if (action !== TimeoutAction.REJECT && action !== TimeoutAction.DELAY) {
    throw invalidArg(`model '${model}': ${name('timeoutAction')} must be REJECT or DELAY, got ${String(action)}`);
  }
  return {
    timeoutAction: action,
    defaultTimeoutMicroseconds: checkUint64(model, name('defaultTimeoutMicroseconds'), p?.defaultTimeoutMicroseconds),
    allowTimeoutOverride: Boolean(p?.allowTimeoutOverride),
    maxQueueSize: checkInt(model, name('maxQueueSize'), p?.maxQueueSize),
  };
}

/**
 * Validates dynamic batcher settings against the model's max batch size and fills Triton's
 * defaults (preferred size [maxBatchSize], default queue policy).
 */
export function normalizeBatcher(
  model: string, b: DynamicBatcher, maxBatchSize: number, naming: FieldNaming = 'camel',
): NormalizedDynamicBatching {
  const name = (field: string): string => batcherFieldPath(naming, field);
  const preferred = (b.preferredBatchSize ?? []).map((s) => {
    if (!Number.isSafeInteger(s) || s < 1 || s > maxBatchSize) {
      throw invalidArg(`model '${model}': preferred batch size ${s} must be in 1..${maxBatchSize}`);
    }
    return s;
  });
  const levels = checkUint64(model, name('batcher.priorityLevels'), b.priorityLevels);
  const defaultLevel = checkUint64(model, name('batcher.defaultPriorityLevel'), b.defaultPriorityLevel);
  if (defaultLevel > levels) {
    throw invalidArg(`model '${model}': ${name('defaultPriorityLevel')} ${defaultLevel} exceeds ${name('priorityLevels')} ${levels}`);
  }
  if (levels > 0 && defaultLevel === 0) {
    throw invalidArg(`model '${model}': ${name('defaultPriorityLevel')} must be in 1..${levels} when ${name('priorityLevels')} is set`);
  }
  const perLevel: Record<string, NormalizedQueuePolicy> = {};
  const policies = b.priorityQueuePolicy ?? {};
  const keys = Object.keys(policies);
  for (const key of keys) {
    // Levels are uint64, read exactly from the key's digits (an object's keys are strings).
    if (!/^[0-9]+$/.test(key) || BigInt(key) < 1n || BigInt(key) > BigInt(levels)) {
      throw invalidArg(`model '${model}': ${name('priorityQueuePolicy')} level ${key} must be in 1..${levels}`);
    }
  }
  for (const key of sortedUint64Keys(keys)) {
    const level = BigInt(key).toString();
    perLevel[level] = normalizeQueuePolicy(model, policies[key], `priorityQueuePolicy[${level}]`, naming);
  }
  return {
    preferredBatchSize: preferred.length > 0 ? [...new Set(preferred)].sort((x, y) => x - y) : [maxBatchSize],
    maxQueueDelayMicroseconds: checkUint64(model, name('batcher.maxQueueDelayMicroseconds'), b.maxQueueDelayMicroseconds),
    preserveOrdering: Boolean(b.preserveOrdering),
    priorityLevels: levels,
    defaultPriorityLevel: defaultLevel,
    defaultQueuePolicy: normalizeQueuePolicy(model, b.defaultQueuePolicy, 'defaultQueuePolicy', naming),
    priorityQueuePolicy: perLevel,
  };
}

/**
 * Triton's refusal of a response cache for a model whose answers it cannot cache
 * (model_config_utils.cc): decoupled models (0..N responses) and the sequence batcher (answers
 * depend on the sequence's state). `what` names the setting as the user wrote it.
 */
export function responseCacheRefused(model: string, kind: 'decoupled' | 'sequence', what: string): InferenceServerError {
  const why = kind === 'decoupled'
    ? `with 'decoupled' transaction policy (${what}): a decoupled model sends 0..N responses per request`
    : `with sequence batching scheduler (${what}): its answers depend on the sequence's state`;
  return invalidArg(`Response Cache does not currently support model ${model} ${why}. Please disable the response ` +
    'cache.');
}

export interface BindSpec {
  modelName: string;
  modelVersion?: number;
  inputs: Tensor[];
  outputs: Tensor[];
  config?: ModelConfig;
  instanceCount: number;
  maxQueueSizeHardLimit?: number;
}

/** Validates a bind() call's configuration and returns the normalized config. */
export function normalizeBindConfig(spec: BindSpec): NormalizedModelConfig {
  const name = spec.modelName;
  if (typeof name !== 'string' || !MODEL_NAME_PATTERN.test(name)) {
    throw invalidArg(`invalid model name '${String(name)}': must match ${MODEL_NAME_PATTERN}`);
  }
  const version = checkInt(name, 'modelVersion', spec.modelVersion ?? 1, 1);
  const cfg = spec.config ?? {};
  const batching = cfg.batching ?? true;
  const maxBatchSize = batching ? checkInt(name, 'maxBatchSize', cfg.maxBatchSize ?? 4, 1) : 0;
  if (cfg.responseCache && cfg.decoupled) throw responseCacheRefused(name, 'decoupled', 'config.decoupled');
  if (cfg.responseCache && cfg.sequenceBatcher) throw responseCacheRefused(name, 'sequence', 'config.sequenceBatcher');
  if (cfg.sequenceBatcher && cfg.batcher) {
    throw invalidArg(`model '${name}': config.batcher (the dynamic batcher) and config.sequenceBatcher cannot both be ` +
      'given: the sequence batcher replaces the dynamic batcher for a stateful model (its batching settings are ' +
      'sequenceBatcher.maxQueueDelayMicroseconds, and preferredBatchSize with strategy \'oldest\'); remove config.batcher');
  }
  const inputs = normalizeTensors(name, spec.inputs, 'input');
  const sequenceBatching = cfg.sequenceBatcher ? normalizeSequenceBatching({
    model: name, maxBatchSize, inputs, decoupled: Boolean(cfg.decoupled), instanceKinds: ['KIND_CPU'], naming: 'camel',
    readDataFile: (file, where) => readDataFileOrThrow(file, where),
  }, fromBindSequenceBatcher(name, cfg.sequenceBatcher)) : null;
  return {
    name,
    version,
    backend: 'js',
    maxBatchSize,
    inputs,
    outputs: normalizeTensors(name, spec.outputs, 'output'),
    dynamicBatching: batching && !sequenceBatching ? normalizeBatcher(name, cfg.batcher ?? {}, maxBatchSize) : null,
    // Absent (not null) without one, so configs without a sequence batcher look as they did.
    ...(sequenceBatching ? { sequenceBatching } : {}),
    instanceGroup: [{
      count: spec.instanceCount, kind: 'KIND_CPU',
      ...(cfg.rateLimiter !== undefined ? { rateLimiter: { ...normalizeRateLimiter(name, cfg.rateLimiter, 'camel') } } : {}),
    }],
    responseCache: Boolean(cfg.responseCache),
    decoupled: Boolean(cfg.decoupled),
    modelWarmup: cfg.modelWarmup ?? [],
    maxQueueSizeHardLimit: checkInt(
      name, 'maxQueueSizeHardLimit', spec.maxQueueSizeHardLimit ?? DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT, 1),
  };
}

/** bind()'s initial state `dataFile`: the path as given, read now; a missing file is INVALID_ARG. */
function readDataFileOrThrow(file: string, where: string): Uint8Array {
  try {
    return readFileSync(file);
  } catch (err) {
    throw invalidArg(`${where} '${file}' cannot be read: ${(err as Error).message}`);
  }
}
