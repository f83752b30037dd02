/**
 * A repository model's config: read from `<model>/config.pbtxt` (protobuf text format) and, with
 * whatever auto-complete or the load API supplied, normalized into the one config type bind()
 * also produces. The config is checked against Triton's `inference.ModelConfig` schema first, so
 * a load API JSON config gets the same field and type checks as a file.
 *
 * Choices (Triton's where it has one):
 * - no `instance_group` → one group named after the model, count 1; KIND_AUTO (the engine
 *   resolves it), or KIND_CPU for JS models, which always run on the CPU. Triton's "2 CPU
 *   instances for ONNX Runtime" default is not applied: each ORT session already spreads one
 *   request over the cores with its own intra-op thread pool, so two would oversubscribe them.
 * - a group's count < 1 means 1 (Triton's normalization).
 * - features infernode does not implement fail the load with UNSUPPORTED; tuning hints that do
 *   not change results (optimization, model_operations, rate_limiter, profile, passive,
 *   host_policy, model_repository_agents, cc_model_filenames, runtime) are accepted and
 *   carried so the config prints back complete.
 * - metric_tags and model_metrics are checked here (ts/config/metric-settings.ts) and used by
 *   the metrics frontend.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { InferenceServerError, invalidArg } from '../errors';
import { DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT } from '../config/defaults';
import {
  checkInt, normalizeBatcher, responseCacheRefused,
  type NormalizedDynamicBatching, type NormalizedInstanceGroup, type NormalizedSequenceBatching, type NormalizedTensor,
  type NormalizedModelConfig, type NormalizedVersionPolicy,
} from '../config/normalize';
import { parsePbtxt, validateModelConfigJson } from '../config/pbtxt';
import { TimeoutAction, type QueuePolicy } from '../config/types';
import type {
  ProtoDynamicBatching, ProtoInstanceGroup, ProtoModelConfig, ProtoQueuePolicy, ProtoVersionPolicy,
} from '../config/model-config-proto';
import type { RawModelConfig } from './autocomplete';
import { normalizeRawTensors } from './config-tensors';
import { normalizeRawWarmups, sequenceInputNames } from './config-warmup';
import { readConfigText, type ModelDirectory } from './layout';
import { resolveFileInside } from './model-files';
import { fromProtoSequenceBatching, normalizeSequenceBatching } from '../config/sequence-batching';
import { checkRawEnsemble, isEnsembleConfig } from '../ensemble/repository';
import { normalizeRawEnsembleScheduling } from '../ensemble/validate';
import { normalizeRateLimiter } from '../config/rate-limiter';
import { refuseUnservableInt64 } from '../config/int64-fields';
import { checkMetricTags, checkModelMetrics } from '../config/metric-settings';
import type { ProtoJsonObject } from '../config/proto-schema';

/** What `normalizeRawConfig` needs besides the config. */
export interface NormalizeRawOptions {
  /** The model's name (its directory name). */
  name: string;
  version: number;
  /** The config file's path (or where it would be): named in errors; its directory is the model directory. */
  source: string;
  maxQueueSizeHardLimit?: number;
}

/** Platforms whose backend Triton knows, to fill one from the other and refuse mismatched pairs. */
const PLATFORM_BACKEND: Record<string, string> = {
  onnxruntime_onnx: 'onnxruntime',
  tensorrt_plan: 'tensorrt',
  pytorch_libtorch: 'pytorch',
  tensorflow_graphdef: 'tensorflow',
  tensorflow_savedmodel: 'tensorflow',
};

function checkName(name: string | undefined, expected: string, source: string): void {
  // An empty name counts as absent: Triton fills it in from the directory.
  if (name !== undefined && name !== '' && name !== expected) {
    throw invalidArg(`${source}: the config names the model '${name}', but its directory is '${expected}' (they must match)`);
  }
}

/**
 * The raw config of a model directory: `<dir>/config.pbtxt` parsed to protobuf-JSON form, or `{}`
 * when there is none (auto-complete fills it). A `name` other than the directory's is INVALID_ARG.
 */
export function readRawConfig(dir: ModelDirectory): RawModelConfig {
  const text = readConfigText(dir);
  if (text === null) return {};
  const file = path.join(dir.dir, 'config.pbtxt');
  const config = parsePbtxt(text, file);
  checkName(config.name as string | undefined, dir.name, file);
  return config as unknown as RawModelConfig;
}

function unsupported(model: string, what: string): InferenceServerError {
  return new InferenceServerError('UNSUPPORTED', `model '${model}': ${what} is not supported by infernode yet`);
}

function rejectUnsupported(model: string, cfg: ProtoModelConfig): void {
  // Triton's own refusals come first: they hold whatever else infernode supports.
  if (cfg.response_cache?.enable && cfg.model_transaction_policy?.decoupled) {
    throw responseCacheRefused(model, 'decoupled', 'model_transaction_policy { decoupled: true }');
  }
  if (cfg.response_cache?.enable && cfg.sequence_batching) throw responseCacheRefused(model, 'sequence', 'sequence_batching');
  if (cfg.batch_input?.length) throw unsupported(model, 'batch_input');
  if (cfg.batch_output?.length) throw unsupported(model, 'batch_output');
  if (cfg.instance_group?.some((g) => g.kind === 'KIND_MODEL')) throw unsupported(model, 'instance_group kind KIND_MODEL');
}

/**
 * ONNX Runtime answers every request exactly once, so an ONNX model cannot be decoupled: refused
 * at load with what to do instead.
 */
function rejectDecoupledOnnx(model: string, cfg: ProtoModelConfig, backend: string): void {
  if (!cfg.model_transaction_policy?.decoupled || backend !== 'onnxruntime') return;
  throw new InferenceServerError('INVALID_ARG', `model '${model}': model_transaction_policy { decoupled: true } cannot be ` +
    'served by the onnxruntime backend, which produces exactly one response per request; remove it, or stream from a JS ' +
    'model (model.js) that calls this model');
}

function backendAndPlatform(model: string, cfg: ProtoModelConfig): { backend: string; platform: string } {
  let backend = cfg.backend ?? '';
  let platform = cfg.platform ?? '';
  const implied = PLATFORM_BACKEND[platform];
  if (implied && backend !== '' && backend !== implied) {
    throw invalidArg(`model '${model}': platform '${platform}' and backend '${backend}' do not go together (platform '${platform}' is backend '${implied}')`);
  }
  if (backend === '' && implied) backend = implied;
  if (platform === '' && backend === 'onnxruntime') platform = 'onnxruntime_onnx';
  return { backend, platform };
}

function queuePolicy(p: ProtoQueuePolicy | undefined): QueuePolicy | undefined {
  if (!p) return undefined;
  return {
    timeoutAction: p.timeout_action === 'DELAY' ? TimeoutAction.DELAY : TimeoutAction.REJECT,
    defaultTimeoutMicroseconds: p.default_timeout_microseconds,
    allowTimeoutOverride: p.allow_timeout_override,
    maxQueueSize: p.max_queue_size,
  };
}

/** Triton's checks of preserve_ordering: one priority level, no DELAY of timed-out requests. */
function checkPreserveOrdering(model: string, db: ProtoDynamicBatching): void {
  if (!db.preserve_ordering) return;
  if ((db.priority_levels ?? 0) > 1) {
    throw invalidArg(`model '${model}': dynamic_batching.preserve_ordering allows only one priority level, but priority_levels is ${db.priority_levels}`);
  }
  const policies = [db.default_queue_policy, ...Object.values(db.priority_queue_policy ?? {})];
  if (policies.some((p) => p?.timeout_action === 'DELAY' && (p.default_timeout_microseconds ?? 0) !== 0)) {
    throw invalidArg(`model '${model}': a queue policy cannot DELAY timed-out requests when dynamic_batching.preserve_ordering is true`);
  }
}

function normalizeRawBatching(model: string, db: ProtoDynamicBatching | undefined, maxBatchSize: number): NormalizedDynamicBatching | null {
  if (!db) return null;
  if (maxBatchSize === 0) {
    throw invalidArg(`model '${model}': dynamic_batching needs max_batch_size >= 1, but max_batch_size is 0 (the model does not batch)`);
  }
  checkPreserveOrdering(model, db);
  const perLevel: Record<string, QueuePolicy> = {};
  for (const [level, policy] of Object.entries(db.priority_queue_policy ?? {})) perLevel[level] = queuePolicy(policy)!;
  return normalizeBatcher(model, {
    preferredBatchSize: db.preferred_batch_size,
    maxQueueDelayMicroseconds: db.max_queue_delay_microseconds,
    preserveOrdering: db.preserve_ordering,
    priorityLevels: db.priority_levels,
    defaultPriorityLevel: db.default_priority_level,
    defaultQueuePolicy: queuePolicy(db.default_queue_policy),
    priorityQueuePolicy: perLevel,
  }, maxBatchSize, 'proto');
}

/**
 * `sequence_batching` → the sequence batcher's settings (null when absent). Initial state data
 * files are read from `<model>/initial_state/`; a path leaving it is refused.
 */
function normalizeRawSequenceBatching(
  model: string, sb: ProtoModelConfig['sequence_batching'],
  m: { maxBatchSize: number; inputs: NormalizedTensor[]; decoupled: boolean; instanceKinds: string[]; modelDirectory: string },
): NormalizedSequenceBatching | null {
  if (!sb) return null;
  const initialStateDir = path.join(m.modelDirectory, 'initial_state');
  return normalizeSequenceBatching({
    model, maxBatchSize: m.maxBatchSize, inputs: m.inputs, decoupled: m.decoupled, instanceKinds: m.instanceKinds,
    naming: 'proto',
    readDataFile: (file, where) => readFileSync(resolveFileInside(initialStateDir, file, where)),
  }, fromProtoSequenceBatching(sb));
}

/** The config's `sequenceBatching` entry: absent (not null) without a sequence batcher. */
function sequenceBatchingField(sb: NormalizedSequenceBatching | null): { sequenceBatching?: NormalizedSequenceBatching } {
  return sb ? { sequenceBatching: sb } : {};
}

function normalizeInstanceGroups(model: string, groups: ProtoInstanceGroup[] | undefined, backend: string): NormalizedInstanceGroup[] {
  const jsModel = backend === 'js';
  if (!groups || groups.length === 0) return [{ name: model, kind: jsModel ? 'KIND_CPU' : 'KIND_AUTO', count: 1, gpus: [] }];
  return groups.map((g, i) => {
    const name = g.name || `${model}_${i}`;
    const gpus = g.gpus ?? [];
    const kind = g.kind ?? 'KIND_AUTO';
    if (kind === 'KIND_CPU' && gpus.length > 0) {
      throw invalidArg(`instance group ${name} of model ${model} has kind KIND_CPU but specifies one or more GPUs ` +
        `([${gpus.join(', ')}]); remove gpus, or use kind KIND_GPU`);
    }
    if (gpus.some((id) => id < 0)) throw invalidArg(`model '${model}': instance group '${name}' lists a negative GPU id`);
    // Validated here; carried as written, so the served config prints back what was given.
    if (g.rate_limiter !== undefined) normalizeRateLimiter(model, g.rate_limiter, 'proto', `instance_group '${name}' `);
    return {
      name,
      // A JS model's instances run on the CPU; KIND_AUTO says so unless GPUs are asked for.
      kind: kind === 'KIND_AUTO' && jsModel && gpus.length === 0 ? 'KIND_CPU' : (kind as NormalizedInstanceGroup['kind']),
      count: (g.count ?? 0) >= 1 ? g.count! : 1,
      gpus: [...gpus],
      rateLimiter: g.rate_limiter,
      secondaryDevices: g.secondary_devices,
      profile: g.profile,
      passive: g.passive,
      hostPolicy: g.host_policy,
    };
  });
}

function normalizeVersionPolicy(model: string, policy: ProtoVersionPolicy | undefined): NormalizedVersionPolicy {
  if (policy?.all) return { kind: 'all' };
  if (policy?.specific) {
    const versions = policy.specific.versions ?? [];
    if (versions.length === 0 || versions.some((v) => v < 1)) {
      throw invalidArg(`model '${model}': version_policy.specific.versions must list versions >= 1, got [${versions.join(', ')}]`);
    }
    return { kind: 'specific', versions: [...new Set(versions)].sort((a, b) => a - b) };
  }
  if (policy?.latest) {
    const n = policy.latest.num_versions ?? 0;
    if (n < 1) throw invalidArg(`model '${model}': version_policy.latest.num_versions must be >= 1, got ${n}`);
    return { kind: 'latest', numVersions: n };
  }
  return { kind: 'latest', numVersions: 1 };
}

function stringParameters(params: ProtoModelConfig['parameters']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params ?? {})) out[key] = value.string_value ?? '';
  return out;
}

/**
 * The config checked against Triton's schema (64-bit integers exact), naming this model, with
 * no 64-bit value infernode cannot serve (a dimension or version beyond 2^53 - 1).
 */
function checkedConfig(raw: RawModelConfig, options: NormalizeRawOptions): ProtoModelConfig {
  const cfg = validateModelConfigJson(raw, `model '${options.name}' config (${options.source})`);
  checkName(cfg.name as string | undefined, options.name, options.source);
  refuseUnservableInt64(options.name, cfg as ProtoJsonObject);
  return cfg as ProtoModelConfig;
}

/** What a model's config says before any version loads. */
export interface ModelPrecheck {
  backend: string;
  platform: string;
  versionPolicy: NormalizedVersionPolicy;
}

/**
 * The model-level checks, run before versions are chosen or any file is read: the config is
 * well-formed, names this model, asks for nothing unsupported, and has a valid version policy.
 */
export function precheckModelConfig(raw: RawModelConfig, options: NormalizeRawOptions): ModelPrecheck {
  const model = options.name;
  const cfg = checkedConfig(raw, options);
  rejectUnsupported(model, cfg);
  checkRawEnsemble(model, cfg);
  return { ...backendAndPlatform(model, cfg), versionPolicy: normalizeVersionPolicy(model, cfg.version_policy) };
}

/**
 * The checks that need no model file, run before an engine loads anything: the config is
 * well-formed, names this model and asks for nothing unsupported. Returns the instance groups
 * the engine must create.
 */
export function precheckRawConfig(raw: RawModelConfig, options: NormalizeRawOptions): NormalizedInstanceGroup[] {
  const model = options.name;
  const cfg = checkedConfig(raw, options);
  rejectUnsupported(model, cfg);
  const { backend } = backendAndPlatform(model, cfg);
  rejectDecoupledOnnx(model, cfg, backend);
  const groups = normalizeInstanceGroups(model, cfg.instance_group, backend);
  // The sequence batcher's own rules need no model file either: checked before sessions load.
  // max_batch_size may still be auto-completed, so preferred sizes are checked later.
  normalizeRawSequenceBatching(model, cfg.sequence_batching, {
    maxBatchSize: cfg.max_batch_size ?? Number.MAX_SAFE_INTEGER,
    inputs: (cfg.input ?? []).map((t) => ({ name: t.name ?? '' }) as NormalizedTensor),
    decoupled: Boolean(cfg.model_transaction_policy?.decoupled),
    instanceKinds: groups.map((g) => g.kind),
    modelDirectory: path.dirname(options.source),
  });
  return groups;
}

/**
 * Normalizes a protobuf-JSON model config (from config.pbtxt, the load API, or auto-complete)
 * into the config native code receives. Errors: INVALID_ARG for a malformed or inconsistent
 * config, UNSUPPORTED for features infernode does not implement yet.
 */
export function normalizeRawConfig(raw: RawModelConfig, options: NormalizeRawOptions): NormalizedModelConfig {
  const model = options.name;
  const cfg = checkedConfig(raw, options);
  rejectUnsupported(model, cfg);
  checkMetricTags(model, cfg.metric_tags);
  checkModelMetrics(model, cfg.model_metrics);
  const maxBatchSize = cfg.max_batch_size ?? 0;
  if (maxBatchSize < 0) throw invalidArg(`model '${model}': max_batch_size must be >= 0, got ${maxBatchSize}`);
  const { backend, platform } = backendAndPlatform(model, cfg);
  rejectDecoupledOnnx(model, cfg, backend);
  checkRawEnsemble(model, cfg);
  const ensemble = isEnsembleConfig(cfg);
  const modelDirectory = path.dirname(options.source);
  const inputs = normalizeRawTensors(model, cfg.input, 'input', maxBatchSize, modelDirectory);
  const instanceGroup = ensemble ? [] : normalizeInstanceGroups(model, cfg.instance_group, backend);
  const decoupled = Boolean(cfg.model_transaction_policy?.decoupled);
  return {
    name: model,
    version: checkInt(model, 'version', options.version, 1),
    backend,
    maxBatchSize,
    inputs,
    outputs: normalizeRawTensors(model, cfg.output, 'output', maxBatchSize, modelDirectory),
    dynamicBatching: normalizeRawBatching(model, cfg.dynamic_batching, maxBatchSize),
    ...sequenceBatchingField(normalizeRawSequenceBatching(model, cfg.sequence_batching, {
      maxBatchSize, inputs, decoupled, instanceKinds: instanceGroup.map((g) => g.kind), modelDirectory,
    })),
    // An ensemble has no instances: its steps run on their own models'.
    instanceGroup,
    responseCache: cfg.response_cache?.enable ?? false,
    decoupled,
    modelWarmup: normalizeRawWarmups({
      model, maxBatchSize, inputs, modelDirectory, sequenceInputs: sequenceInputNames(cfg.sequence_batching),
    }, cfg.model_warmup),
    maxQueueSizeHardLimit: checkInt(
      model, 'maxQueueSizeHardLimit', options.maxQueueSizeHardLimit ?? DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT, 1),
    platform,
    runtime: cfg.runtime ?? '',
    versionPolicy: normalizeVersionPolicy(model, cfg.version_policy),
    defaultModelFilename: cfg.default_model_filename ?? '',
    parameters: stringParameters(cfg.parameters),
    ccModelFilenames: { ...(cfg.cc_model_filenames ?? {}) },
    metricTags: { ...(cfg.metric_tags ?? {}) },
    optimization: cfg.optimization,
    modelOperations: cfg.model_operations,
    modelRepositoryAgents: cfg.model_repository_agents,
    modelMetrics: cfg.model_metrics,
    modelDirectory,
    ensembleScheduling: ensemble ? normalizeRawEnsembleScheduling(model, cfg.ensemble_scheduling) : undefined,
  };
}
