/**
 * Triton's `inference.ModelConfig` (common/protobuf/model_config.proto), every message, field,
 * number and enum, as data for the config.pbtxt parser, printer and JSON validator. Fields are in
 * the proto's declaration order. `jsonNumber` marks the 64-bit fields Triton's `/config` prints as
 * JSON numbers (triton-protocol.md §2.5); every other 64-bit field prints as a string.
 */
import {
  BOOL, DOUBLE, FLOAT, INT32, INT64, STRING, UINT32, UINT64, enumType, field, mapField, message, messageType,
  type MessageSpec,
} from './proto-schema';

const DATA_TYPE = enumType('inference.DataType', [
  'TYPE_INVALID', 'TYPE_BOOL', 'TYPE_UINT8', 'TYPE_UINT16', 'TYPE_UINT32', 'TYPE_UINT64', 'TYPE_INT8',
  'TYPE_INT16', 'TYPE_INT32', 'TYPE_INT64', 'TYPE_FP16', 'TYPE_FP32', 'TYPE_FP64', 'TYPE_STRING', 'TYPE_BF16',
]);

// ---- instance groups ----

const RESOURCE = message('inference.ModelRateLimiter.Resource', [
  field('name', 1, STRING),
  field('global', 2, BOOL),
  field('count', 3, UINT32),
]);

const RATE_LIMITER = message('inference.ModelRateLimiter', [
  field('resources', 1, messageType(RESOURCE), { repeated: true }),
  field('priority', 2, UINT32),
]);

const SECONDARY_DEVICE = message('inference.ModelInstanceGroup.SecondaryDevice', [
  field('kind', 1, enumType('inference.ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind', ['KIND_NVDLA'])),
  field('device_id', 2, INT64),
]);

const INSTANCE_GROUP = message('inference.ModelInstanceGroup', [
  field('name', 1, STRING),
  field('kind', 4, enumType('inference.ModelInstanceGroup.Kind', ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'])),
  field('count', 2, INT32),
  field('rate_limiter', 6, messageType(RATE_LIMITER)),
  field('gpus', 3, INT32, { repeated: true }),
  field('secondary_devices', 8, messageType(SECONDARY_DEVICE), { repeated: true }),
  field('profile', 5, STRING, { repeated: true }),
  field('passive', 7, BOOL),
  field('host_policy', 9, STRING),
]);

// ---- tensors ----

const RESHAPE = message('inference.ModelTensorReshape', [
  field('shape', 1, INT64, { repeated: true, jsonNumber: true }),
]);

const MODEL_INPUT = message('inference.ModelInput', [
  field('name', 1, STRING),
  field('data_type', 2, DATA_TYPE),
  field('format', 3, enumType('inference.ModelInput.Format', ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'])),
  field('dims', 4, INT64, { repeated: true, jsonNumber: true }),
  field('reshape', 5, messageType(RESHAPE)),
  field('is_shape_tensor', 6, BOOL),
  field('allow_ragged_batch', 7, BOOL),
  field('optional', 8, BOOL),
  field('is_non_linear_format_io', 9, BOOL),
]);

const MODEL_OUTPUT = message('inference.ModelOutput', [
  field('name', 1, STRING),
  field('data_type', 2, DATA_TYPE),
  field('dims', 3, INT64, { repeated: true, jsonNumber: true }),
  field('reshape', 5, messageType(RESHAPE)),
  field('label_filename', 4, STRING),
  field('is_shape_tensor', 6, BOOL),
  field('is_non_linear_format_io', 7, BOOL),
]);

const BATCH_INPUT = message('inference.BatchInput', [
  field('kind', 1, enumType('inference.BatchInput.Kind', [
    'BATCH_ELEMENT_COUNT', 'BATCH_ACCUMULATED_ELEMENT_COUNT', 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
    'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE', 'BATCH_ITEM_SHAPE', 'BATCH_ITEM_SHAPE_FLATTEN',
  ])),
  field('target_name', 2, STRING, { repeated: true }),
  field('data_type', 3, DATA_TYPE),
  field('source_input', 4, STRING, { repeated: true }),
]);

const BATCH_OUTPUT = message('inference.BatchOutput', [
  field('target_name', 1, STRING, { repeated: true }),
  field('kind', 2, enumType('inference.BatchOutput.Kind', ['BATCH_SCATTER_WITH_INPUT_SHAPE'])),
  field('source_input', 3, STRING, { repeated: true }),
]);

// ---- version policy ----

const VERSION_POLICY = message('inference.ModelVersionPolicy', [
  field('latest', 1, messageType(message('inference.ModelVersionPolicy.Latest', [field('num_versions', 1, UINT32)])),
    { oneof: 'policy_choice' }),
  field('all', 2, messageType(message('inference.ModelVersionPolicy.All', [])), { oneof: 'policy_choice' }),
  field('specific', 3, messageType(message('inference.ModelVersionPolicy.Specific', [
    field('versions', 1, INT64, { repeated: true, jsonNumber: true }),
  ])), { oneof: 'policy_choice' }),
]);

// ---- optimization ----

const GRAPH_SHAPE = message('inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape', [
  field('dim', 1, INT64, { repeated: true }),
]);

const GRAPH_SPEC = message('inference.ModelOptimizationPolicy.Cuda.GraphSpec', [
  field('batch_size', 1, INT32),
  mapField('input', 2, 'string', messageType(GRAPH_SHAPE)),
  field('graph_lower_bound', 3, messageType(message('inference.ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound', [
    field('batch_size', 1, INT32),
    mapField('input', 2, 'string', messageType(GRAPH_SHAPE)),
  ]))),
]);

const CUDA = message('inference.ModelOptimizationPolicy.Cuda', [
  field('graphs', 1, BOOL),
  field('busy_wait_events', 2, BOOL),
  field('graph_spec', 3, messageType(GRAPH_SPEC), { repeated: true }),
  field('output_copy_stream', 4, BOOL),
]);

const ACCELERATOR = message('inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', [
  field('name', 1, STRING),
  mapField('parameters', 2, 'string', STRING),
]);

const PINNED_MEMORY = message('inference.ModelOptimizationPolicy.PinnedMemoryBuffer', [field('enable', 1, BOOL)]);

const OPTIMIZATION = message('inference.ModelOptimizationPolicy', [
  field('graph', 1, messageType(message('inference.ModelOptimizationPolicy.Graph', [field('level', 1, INT32)]))),
  field('priority', 2, enumType('inference.ModelOptimizationPolicy.ModelPriority',
    ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN'])),
  field('cuda', 3, messageType(CUDA)),
  field('execution_accelerators', 4, messageType(message('inference.ModelOptimizationPolicy.ExecutionAccelerators', [
    field('gpu_execution_accelerator', 1, messageType(ACCELERATOR), { repeated: true }),
    field('cpu_execution_accelerator', 2, messageType(ACCELERATOR), { repeated: true }),
  ]))),
  field('input_pinned_memory', 5, messageType(PINNED_MEMORY)),
  field('output_pinned_memory', 6, messageType(PINNED_MEMORY)),
  field('gather_kernel_buffer_threshold', 7, UINT32),
  field('eager_batching', 8, BOOL),
]);

// ---- scheduling ----

const QUEUE_POLICY = message('inference.ModelQueuePolicy', [
  field('timeout_action', 1, enumType('inference.ModelQueuePolicy.TimeoutAction', ['REJECT', 'DELAY'])),
  field('default_timeout_microseconds', 2, UINT64, { jsonNumber: true }),
  field('allow_timeout_override', 3, BOOL),
  field('max_queue_size', 4, UINT32),
]);

const DYNAMIC_BATCHING = message('inference.ModelDynamicBatching', [
  field('preferred_batch_size', 1, INT32, { repeated: true }),
  field('max_queue_delay_microseconds', 2, UINT64, { jsonNumber: true }),
  field('preserve_ordering', 3, BOOL),
  field('priority_levels', 4, UINT64, { jsonNumber: true }),
  field('default_priority_level', 5, UINT64, { jsonNumber: true }),
  field('default_queue_policy', 6, messageType(QUEUE_POLICY)),
  mapField('priority_queue_policy', 7, 'uint64', messageType(QUEUE_POLICY)),
]);

const CONTROL = message('inference.ModelSequenceBatching.Control', [
  field('kind', 1, enumType('inference.ModelSequenceBatching.Control.Kind', [
    'CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID',
  ])),
  field('int32_false_true', 2, INT32, { repeated: true }),
  field('fp32_false_true', 3, FLOAT, { repeated: true }),
  field('bool_false_true', 5, BOOL, { repeated: true }),
  field('data_type', 4, DATA_TYPE),
]);

const INITIAL_STATE = message('inference.ModelSequenceBatching.InitialState', [
  field('data_type', 1, DATA_TYPE),
  field('dims', 2, INT64, { repeated: true }),
  field('zero_data', 3, BOOL, { oneof: 'state_data' }),
  field('data_file', 4, STRING, { oneof: 'state_data' }),
  field('name', 5, STRING),
]);

const SEQUENCE_BATCHING = message('inference.ModelSequenceBatching', [
  field('direct', 3, messageType(message('inference.ModelSequenceBatching.StrategyDirect', [
    field('max_queue_delay_microseconds', 1, UINT64, { jsonNumber: true }),
    field('minimum_slot_utilization', 2, FLOAT),
  ])), { oneof: 'strategy_choice' }),
  field('oldest', 4, messageType(message('inference.ModelSequenceBatching.StrategyOldest', [
    field('max_candidate_sequences', 1, INT32),
    field('preferred_batch_size', 2, INT32, { repeated: true }),
    field('max_queue_delay_microseconds', 3, UINT64, { jsonNumber: true }),
    field('preserve_ordering', 4, BOOL),
  ])), { oneof: 'strategy_choice' }),
  field('max_sequence_idle_microseconds', 1, UINT64, { jsonNumber: true }),
  field('control_input', 2, messageType(message('inference.ModelSequenceBatching.ControlInput', [
    field('name', 1, STRING),
    field('control', 2, messageType(CONTROL), { repeated: true }),
  ])), { repeated: true }),
  field('state', 5, messageType(message('inference.ModelSequenceBatching.State', [
    field('input_name', 1, STRING),
    field('output_name', 2, STRING),
    field('data_type', 3, DATA_TYPE),
    field('dims', 4, INT64, { repeated: true, jsonNumber: true }),
    field('initial_state', 5, messageType(INITIAL_STATE), { repeated: true }),
    field('use_same_buffer_for_input_output', 6, BOOL),
    field('use_growable_memory', 7, BOOL),
  ])), { repeated: true }),
  field('iterative_sequence', 6, BOOL),
]);

const ENSEMBLING = message('inference.ModelEnsembling', [
  field('step', 1, messageType(message('inference.ModelEnsembling.Step', [
    field('model_name', 1, STRING),
    field('model_version', 2, INT64, { jsonNumber: true }),
    mapField('input_map', 3, 'string', STRING),
    mapField('output_map', 4, 'string', STRING),
    field('model_namespace', 5, STRING),
  ])), { repeated: true }),
  // Field 2 is `max_inflight_responses` in today's proto and `max_inflight_requests` in the
  // release the reference describes; both spellings parse, so such a file reaches the clear
  // "ensembles are not supported" error instead of an unknown-field one.
  field('max_inflight_responses', 2, UINT32),
  field('max_inflight_requests', 2, UINT32),
]);

// ---- the rest ----

const WARMUP = message('inference.ModelWarmup', [
  field('name', 1, STRING),
  field('batch_size', 2, UINT32),
  mapField('inputs', 3, 'string', messageType(message('inference.ModelWarmup.Input', [
    field('data_type', 1, DATA_TYPE),
    field('dims', 2, INT64, { repeated: true, jsonNumber: true }),
    field('zero_data', 3, BOOL, { oneof: 'input_data_type' }),
    field('random_data', 4, BOOL, { oneof: 'input_data_type' }),
    field('input_data_file', 5, STRING, { oneof: 'input_data_type' }),
  ]))),
  field('count', 4, UINT32),
]);

const REPOSITORY_AGENTS = message('inference.ModelRepositoryAgents', [
  field('agents', 1, messageType(message('inference.ModelRepositoryAgents.Agent', [
    field('name', 1, STRING),
    mapField('parameters', 2, 'string', STRING),
  ])), { repeated: true }),
]);

const METRIC_CONTROL = message('inference.ModelMetrics.MetricControl', [
  field('metric_identifier', 1, messageType(message('inference.ModelMetrics.MetricControl.MetricIdentifier', [
    field('family', 1, STRING),
  ]))),
  field('histogram_options', 2, messageType(message('inference.ModelMetrics.MetricControl.HistogramOptions', [
    field('buckets', 1, DOUBLE, { repeated: true }),
  ])), { oneof: 'metric_options' }),
]);

/** `inference.ModelConfig`, the message a config.pbtxt holds. */
export const MODEL_CONFIG: MessageSpec = message('inference.ModelConfig', [
  field('name', 1, STRING),
  field('platform', 2, STRING),
  field('backend', 17, STRING),
  field('runtime', 25, STRING),
  field('version_policy', 3, messageType(VERSION_POLICY)),
  field('max_batch_size', 4, INT32),
  field('input', 5, messageType(MODEL_INPUT), { repeated: true }),
  field('output', 6, messageType(MODEL_OUTPUT), { repeated: true }),
  field('batch_input', 20, messageType(BATCH_INPUT), { repeated: true }),
  field('batch_output', 21, messageType(BATCH_OUTPUT), { repeated: true }),
  field('optimization', 12, messageType(OPTIMIZATION)),
  field('dynamic_batching', 11, messageType(DYNAMIC_BATCHING), { oneof: 'scheduling_choice' }),
  field('sequence_batching', 13, messageType(SEQUENCE_BATCHING), { oneof: 'scheduling_choice' }),
  field('ensemble_scheduling', 15, messageType(ENSEMBLING), { oneof: 'scheduling_choice' }),
  field('instance_group', 7, messageType(INSTANCE_GROUP), { repeated: true }),
  field('default_model_filename', 8, STRING),
  mapField('cc_model_filenames', 9, 'string', STRING),
  mapField('metric_tags', 10, 'string', STRING),
  mapField('parameters', 14, 'string', messageType(message('inference.ModelParameter', [field('string_value', 1, STRING)]))),
  field('model_warmup', 16, messageType(WARMUP), { repeated: true }),
  field('model_operations', 18, messageType(message('inference.ModelOperations', [
    field('op_library_filename', 1, STRING, { repeated: true }),
  ]))),
  field('model_transaction_policy', 19, messageType(message('inference.ModelTransactionPolicy', [
    field('decoupled', 1, BOOL),
  ]))),
  field('model_repository_agents', 23, messageType(REPOSITORY_AGENTS)),
  field('response_cache', 24, messageType(message('inference.ModelResponseCache', [field('enable', 1, BOOL)]))),
  field('model_metrics', 26, messageType(message('inference.ModelMetrics', [
    field('metric_control', 1, messageType(METRIC_CONTROL), { repeated: true }),
  ]))),
]);
