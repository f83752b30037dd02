/**
 * The one normalized model config. `bind()` and (later) a repository's `config.pbtxt` both end
 * here; it is what native code receives and what the frontends print. Validation errors are
 * INVALID_ARG with the model name and the offending field.
 */
import { InferenceServerError, invalidArg } from '../errors';
import { parseDataType, type DataType } from '../tensor';
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
}

export interface NormalizedQueuePolicy {
  timeoutAction: TimeoutAction;
  defaultTimeoutMicroseconds: number;
  allowTimeoutOverride: boolean;
  maxQueueSize: number;
}

export interface NormalizedDynamicBatching {
  /** Never empty: Triton's "full batch" default ([maxBatchSize]) is filled in. */
  preferredBatchSize: number[];
  maxQueueDelayMicroseconds: number;
  preserveOrdering: boolean;
  priorityLevels: number;
  defaultPriorityLevel: number;
  defaultQueuePolicy: NormalizedQueuePolicy;
  priorityQueuePolicy: Record<number, NormalizedQueuePolicy>;
}

export interface NormalizedInstanceGroup {
  count: number;
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_AUTO';
}

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
  instanceGroup: NormalizedInstanceGroup[];
  responseCache: boolean;
  decoupled: boolean;
  modelWarmup: ModelWarmup[];
  /** Hard cap on queued requests, so no queue is unbounded. */
  maxQueueSizeHardLimit: number;
}

export const MODEL_NAME_PATTERN = /^[a-zA-Z0-9._-]+$/;
export const DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT = 65536;

function isNonNegativeInt(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

function checkInt(model: string, field: string, value: number | undefined, min = 0): number {
  const v = value ?? 0;
  if (!isNonNegativeInt(v) || v < min) {
    throw invalidArg(`model '${model}': ${field} must be an integer >= ${min}, got ${String(value)}`);
  }
  return v;
}

function normalizeTensors(model: string, tensors: Tensor[], kind: 'input' | 'output'): NormalizedTensor[] {
  const seen = new Set<string>();
  return tensors.map((t, i) => {
    const name = t.name ?? `${kind.toUpperCase()}_${i + 1}`;
    if (seen.has(name)) throw invalidArg(`model '${model}': duplicate ${kind} name '${name}'`);
    seen.add(name);
    if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isSafeInteger(d) || d < -1)) {
      throw invalidArg(`model '${model}': ${kind} '${name}' has invalid shape ${JSON.stringify(t.shape)}`);
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

function normalizeQueuePolicy(model: string, p: QueuePolicy | undefined, where: string): NormalizedQueuePolicy {
  const action = p?.timeoutAction ?? TimeoutAction.REJECT;
  if (action !== TimeoutAction.REJECT && action !== TimeoutAction.DELAY) {
    throw invalidArg(`model '${model}': ${where}.timeoutAction must be REJECT or DELAY, got ${String(action)}`);
  }
  return {
    timeoutAction: action,
    defaultTimeoutMicroseconds: checkInt(model, `${where}.defaultTimeoutMicroseconds`, p?.defaultTimeoutMicroseconds),
    allowTimeoutOverride: Boolean(p?.allowTimeoutOverride),
    maxQueueSize: checkInt(model, `${where}.maxQueueSize`, p?.maxQueueSize),
  };
}

function normalizeBatcher(model: string, b: DynamicBatcher, maxBatchSize: number): NormalizedDynamicBatching {
  const preferred = (b.preferredBatchSize ?? []).map((s) => {
    if (!Number.isSafeInteger(s) || s < 1 || s > maxBatchSize) {
      throw invalidArg(`model '${model}': preferred batch size ${s} must be in 1..${maxBatchSize}`);
    }
    return s;
  });
  const levels = checkInt(model, 'batcher.priorityLevels', b.priorityLevels);
  const defaultLevel = checkInt(model, 'batcher.defaultPriorityLevel', b.defaultPriorityLevel);
  if (defaultLevel > levels) {
    throw invalidArg(`model '${model}': defaultPriorityLevel ${defaultLevel} exceeds priorityLevels ${levels}`);
  }
  if (levels > 0 && defaultLevel === 0) {
    throw invalidArg(`model '${model}': defaultPriorityLevel must be in 1..${levels} when priorityLevels is set`);
  }
  const perLevel: Record<number, NormalizedQueuePolicy> = {};
  for (const [key, policy] of Object.entries(b.priorityQueuePolicy ?? {})) {
    const level = Number(key);
    if (!Number.isSafeInteger(level) || level < 1 || level > levels) {
      throw invalidArg(`model '${model}': priorityQueuePolicy level ${key} must be in 1..${levels}`);
    }
    perLevel[level] = normalizeQueuePolicy(model, policy, `priorityQueuePolicy[${level}]`);
  }
  return {
    preferredBatchSize: preferred.length > 0 ? [...new Set(preferred)].sort((x, y) => x - y) : [maxBatchSize],
    maxQueueDelayMicroseconds: checkInt(model, 'batcher.maxQueueDelayMicroseconds', b.maxQueueDelayMicroseconds),
    preserveOrdering: Boolean(b.preserveOrdering),
    priorityLevels: levels,
    defaultPriorityLevel: defaultLevel,
    defaultQueuePolicy: normalizeQueuePolicy(model, b.defaultQueuePolicy, 'defaultQueuePolicy'),
    priorityQueuePolicy: perLevel,
  };
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
  // Decoupled models need the streaming frontends and the response cache needs a cache
  // implementation; neither exists yet, so refusing is honest (UNSUPPORTED), not silent.
  if (cfg.decoupled) {
    throw new InferenceServerError('UNSUPPORTED', `model '${name}': decoupled models are not supported yet`);
  }
  if (cfg.responseCache) {
    throw new InferenceServerError('UNSUPPORTED', `model '${name}': the response cache is not supported yet`);
  }
  return {
    name,
    version,
    backend: 'js',
    maxBatchSize,
    inputs: normalizeTensors(name, spec.inputs, 'input'),
    outputs: normalizeTensors(name, spec.outputs, 'output'),
    dynamicBatching: batching ? normalizeBatcher(name, cfg.batcher ?? {}, maxBatchSize) : null,
    instanceGroup: [{ count: spec.instanceCount, kind: 'KIND_CPU' }],
    responseCache: Boolean(cfg.responseCache),
    decoupled: Boolean(cfg.decoupled),
    modelWarmup: cfg.modelWarmup ?? [],
    maxQueueSizeHardLimit: checkInt(
      name, 'maxQueueSizeHardLimit', spec.maxQueueSizeHardLimit ?? DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT, 1),
  };
}
