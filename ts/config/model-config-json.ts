/**
 * Triton's JSON form of a model's config, as `GET /v2/models/{m}/config` returns it (protobuf's
 * MessageToJson with proto field names and every primitive field printed, then Triton's fix-up of
 * the listed 64-bit fields to JSON numbers; triton-protocol.md §2.5). Bound (bind()) and repository
 * models both go through it. Field names are exactly the proto's, so the same object can be
 * encoded as the gRPC `ModelConfig` message.
 */
import * as path from 'node:path';
import { parseDataType, type DataType } from '../tensor';
import { MODEL_CONFIG } from './model-config-schema';
import { defaultValue, is64BitKind, type FieldSpec, type MessageSpec, type ProtoJsonObject, type ProtoJsonValue } from './proto-schema';
import type {
  NormalizedDynamicBatching, NormalizedModelConfig, NormalizedQueuePolicy, NormalizedSequenceBatching, NormalizedSequenceState,
  NormalizedTensor, NormalizedVersionPolicy,
} from './normalize';
import type { ModelWarmup } from './types';

/** Triton's `TYPE_*` name of a datatype (`BYTES` ↔ `TYPE_STRING`). */
export function tritonDataType(dtype: DataType): string {
  return dtype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${dtype}`;
}

function inputJson(t: NormalizedTensor): ProtoJsonObject {
  const out: ProtoJsonObject = {
    name: t.name,
    data_type: tritonDataType(t.dtype),
    format: t.format ?? 'FORMAT_NONE',
    dims: [...t.dims],
    is_shape_tensor: t.isShapeTensor ?? false,
    allow_ragged_batch: t.allowRaggedBatch,
    optional: t.optional,
    is_non_linear_format_io: t.isNonLinearFormatIo ?? false,
  };
  if (t.reshape && !t.scalar) out.reshape = { shape: [...t.reshape] };
  return out;
}

function outputJson(t: NormalizedTensor): ProtoJsonObject {
  const out: ProtoJsonObject = {
    name: t.name,
    data_type: tritonDataType(t.dtype),
    dims: [...t.dims],
    label_filename: t.labelFilename ?? '',
    is_shape_tensor: t.isShapeTensor ?? false,
    is_non_linear_format_io: t.isNonLinearFormatIo ?? false,
  };
  if (t.reshape && !t.scalar) out.reshape = { shape: [...t.reshape] };
  return out;
}

function queuePolicyJson(p: NormalizedQueuePolicy): ProtoJsonObject {
  return {
    timeout_action: p.timeoutAction,
    default_timeout_microseconds: p.defaultTimeoutMicroseconds,
    allow_timeout_override: p.allowTimeoutOverride,
    max_queue_size: p.maxQueueSize,
  };
}

function dynamicBatchingJson(b: NormalizedDynamicBatching): ProtoJsonObject {
  const perLevel: ProtoJsonObject = {};
  for (const [level, policy] of Object.entries(b.priorityQueuePolicy)) perLevel[level] = queuePolicyJson(policy);
  return {
    preferred_batch_size: [...b.preferredBatchSize],
    max_queue_delay_microseconds: b.maxQueueDelayMicroseconds,
    preserve_ordering: b.preserveOrdering,
    priority_levels: b.priorityLevels,
    default_priority_level: b.defaultPriorityLevel,
    default_queue_policy: queuePolicyJson(b.defaultQueuePolicy),
    priority_queue_policy: perLevel,
  };
}

function initialStateJson(s: NormalizedSequenceState): ProtoJsonObject[] {
  const init = s.initialState;
  if (!init) return [];
  const out: ProtoJsonObject = { data_type: tritonDataType(s.dtype), dims: [...init.dims], name: init.name };
  if (init.dataFile !== undefined) out.data_file = init.dataFile;
  // bind()'s in-memory data has no config spelling; zeros print as Triton's zero_data.
  else if (init.data.every((b) => b === 0)) out.zero_data = true;
  return [out];
}

function sequenceBatchingJson(b: NormalizedSequenceBatching): ProtoJsonObject {
  const out: ProtoJsonObject = {
    max_sequence_idle_microseconds: b.maxSequenceIdleMicroseconds,
    control_input: b.controls.map((c) => {
      const control: ProtoJsonObject = { kind: c.kind };
      if (c.kind === 'CONTROL_SEQUENCE_CORRID') control.data_type = tritonDataType(c.dtype);
      else if (c.dtype === 'INT32') control.int32_false_true = [...c.falseTrue!];
      else if (c.dtype === 'FP32') control.fp32_false_true = [...c.falseTrue!];
      else control.bool_false_true = c.falseTrue!.map((v) => v !== 0);
      return { name: c.name, control: [control] };
    }),
    state: b.states.map((s) => ({
      input_name: s.inputName,
      output_name: s.outputName,
      data_type: tritonDataType(s.dtype),
      dims: [...s.dims],
      initial_state: initialStateJson(s),
      use_same_buffer_for_input_output: s.useSameBufferForInputOutput,
      use_growable_memory: s.useGrowableMemory,
    })),
    iterative_sequence: b.iterativeSequence,
  };
  if (b.strategy === 'oldest') {
    out.oldest = {
      max_candidate_sequences: b.maxCandidateSequences,
      preferred_batch_size: [...b.preferredBatchSize],
      max_queue_delay_microseconds: b.maxQueueDelayMicroseconds,
      preserve_ordering: b.preserveOrdering,
    };
  } else {
    out.direct = { max_queue_delay_microseconds: b.maxQueueDelayMicroseconds, minimum_slot_utilization: b.minimumSlotUtilization };
  }
  return out;
}

function versionPolicyJson(policy: NormalizedVersionPolicy | undefined): ProtoJsonObject {
  if (!policy) return { latest: { num_versions: 1 } };
  if (policy.kind === 'all') return { all: {} };
  if (policy.kind === 'specific') return { specific: { versions: [...policy.versions] } };
  return { latest: { num_versions: policy.numVersions } };
}

function instanceGroupJson(config: NormalizedModelConfig): ProtoJsonObject[] {
  return config.instanceGroup.map((g, i) => {
    const out: ProtoJsonObject = {
      // Triton names an unnamed group `<model>_<index>`.
      name: g.name ?? `${config.name}_${i}`,
      kind: g.kind,
      count: g.count,
      gpus: [...(g.gpus ?? [])],
      secondary_devices: g.secondaryDevices ?? [],
      profile: g.profile ?? [],
      passive: g.passive ?? false,
      host_policy: g.hostPolicy ?? '',
    };
    if (g.rateLimiter) out.rate_limiter = g.rateLimiter;
    return out;
  });
}

/** A warm-up file as the config names it: relative to `<model>/warmup/` when it lies there. */
function warmupFileName(file: string, modelDirectory: string | undefined): string {
  if (!modelDirectory) return file;
  const relative = path.relative(path.join(modelDirectory, 'warmup'), file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative.split(path.sep).join('/');
}

function warmupJson(warmup: ModelWarmup, modelDirectory: string | undefined): ProtoJsonObject {
  const inputs: ProtoJsonObject = {};
  for (const [name, input] of Object.entries(warmup.inputs)) {
    const out: ProtoJsonObject = { data_type: tritonDataType(parseDataType(input.dtype)), dims: [...input.shape] };
    if (input.zeroData) out.zero_data = true;
    else if (input.randomData) out.random_data = true;
    else if (input.inputDataFile !== undefined) out.input_data_file = warmupFileName(input.inputDataFile, modelDirectory);
    inputs[name] = out;
  }
  return { name: warmup.name, batch_size: warmup.batchSize, inputs, count: warmup.count };
}

const stringMap = (map: Record<string, string> | undefined): ProtoJsonObject => ({ ...(map ?? {}) });

/** The config in protobuf-JSON form, before defaults are filled and 64-bit fields formatted. */
function configJson(config: NormalizedModelConfig): ProtoJsonObject {
  const optimization: ProtoJsonObject = { ...(config.optimization ?? {}) };
  // Triton's normalization turns pinned-memory buffers on unless the config says otherwise.
  optimization.input_pinned_memory ??= { enable: true };
  optimization.output_pinned_memory ??= { enable: true };
  const parameters: ProtoJsonObject = {};
  for (const [key, value] of Object.entries(config.parameters ?? {})) parameters[key] = { string_value: value };
  const out: ProtoJsonObject = {
    name: config.name,
    platform: config.platform ?? '',
    backend: config.backend,
    runtime: config.runtime ?? '',
    version_policy: versionPolicyJson(config.versionPolicy),
    max_batch_size: config.maxBatchSize,
    input: config.inputs.map(inputJson),
    output: config.outputs.map(outputJson),
    optimization,
    instance_group: instanceGroupJson(config),
    default_model_filename: config.defaultModelFilename ?? '',
    cc_model_filenames: stringMap(config.ccModelFilenames),
    metric_tags: stringMap(config.metricTags),
    parameters,
    model_warmup: config.modelWarmup.map((w) => warmupJson(w, config.modelDirectory)),
    model_transaction_policy: { decoupled: config.decoupled },
    response_cache: { enable: config.responseCache },
  };
  if (config.dynamicBatching) out.dynamic_batching = dynamicBatchingJson(config.dynamicBatching);
  if (config.sequenceBatching) out.sequence_batching = sequenceBatchingJson(config.sequenceBatching);
  if (config.modelOperations) out.model_operations = config.modelOperations;
  if (config.modelRepositoryAgents) out.model_repository_agents = config.modelRepositoryAgents;
  if (config.modelMetrics) out.model_metrics = config.modelMetrics;
  if (config.ensembleScheduling) {
    out.ensemble_scheduling = {
      step: config.ensembleScheduling.steps.map((s) => ({
        model_name: s.modelName, model_version: s.modelVersion, input_map: { ...s.inputMap }, output_map: { ...s.outputMap },
      })),
      // Field 2 has both names in the schema (see model-config-schema.ts): both print the value.
      max_inflight_responses: config.ensembleScheduling.maxInflightRequests,
      max_inflight_requests: config.ensembleScheduling.maxInflightRequests,
    };
  }
  return out;
}

/**
 * One value as protobuf's JSON printer writes it, with Triton's 64-bit fix-up. A fixed-up value
 * beyond 2^53 stays a bigint: the HTTP frontend writes it as its exact digits
 * (`stringifyExactJson`, ts/exact-json.ts), as Triton's JSON does (`"priority_levels":18446744073709551615`).
 */
function formatValue(field: FieldSpec, value: ProtoJsonValue): ProtoJsonValue {
  const type = field.type;
  if (type.kind === 'message') return withAllFields(type.message, value as ProtoJsonObject);
  if (type.kind !== 'scalar' || (typeof value !== 'number' && typeof value !== 'bigint')) return value;
  if (is64BitKind(type.scalar) && !field.jsonNumber) return String(value);
  if (typeof value === 'bigint') return value;
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  return value;
}

/**
 * protobuf's `always_print_primitive_fields`: every scalar, enum, repeated and map field appears
 * (with its default when unset); unset sub-messages and unset oneof members do not.
 */
function withAllFields(spec: MessageSpec, message: ProtoJsonObject): ProtoJsonObject {
  const out: ProtoJsonObject = {};
  for (const field of spec.fields) {
    const value = message[field.name];
    if (value === undefined) {
      if (field.oneof || (field.label === 'singular' && field.type.kind === 'message')) continue;
      if (field.label === 'repeated') out[field.name] = [];
      else if (field.label === 'map') out[field.name] = {};
      else out[field.name] = formatValue(field, defaultValue(field.type));
    } else if (field.label === 'repeated') {
      out[field.name] = (value as ProtoJsonValue[]).map((v) => formatValue(field, v));
    } else if (field.label === 'map') {
      const map: ProtoJsonObject = {};
      for (const [key, v] of Object.entries(value as ProtoJsonObject)) map[key] = formatValue(field, v);
      out[field.name] = map;
    } else {
      out[field.name] = formatValue(field, value);
    }
  }
  return out;
}

/**
 * Triton's JSON form of a normalized config (`GET /v2/models/{m}/config`): snake_case proto
 * names, all primitive fields present, enums by name, `dynamic_batching` only when the model
 * batches dynamically, `model_transaction_policy` and `response_cache` always present. 64-bit
 * values beyond 2^53 are bigints (JSON.stringify refuses them: write it with
 * `stringifyExactJson`, or `toModelConfigMessage` for gRPC).
 */
export function toModelConfigJson(config: NormalizedModelConfig): ProtoJsonObject {
  return withAllFields(MODEL_CONFIG, configJson(config));
}

/** A value with its bigints as decimal strings (protobufjs encodes a 64-bit field from a string exactly). */
function bigintsAsStrings(value: ProtoJsonValue): ProtoJsonValue {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(bigintsAsStrings);
  if (value !== null && typeof value === 'object') {
    const out: ProtoJsonObject = {};
    for (const [key, v] of Object.entries(value)) out[key] = bigintsAsStrings(v);
    return out;
  }
  return value;
}

/** The config as gRPC's `ModelConfig` message object: `toModelConfigJson` with every bigint as its digits. */
export function toModelConfigMessage(config: NormalizedModelConfig): ProtoJsonObject {
  return bigintsAsStrings(toModelConfigJson(config)) as ProtoJsonObject;
}
