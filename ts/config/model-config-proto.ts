/**
 * TypeScript view of the canonical protobuf-JSON `inference.ModelConfig` (what `parsePbtxt` and
 * `validateModelConfigJson` return): proto field names, enums as names, integers as numbers
 * (uint64 fields beyond 2^53 - 1 as bigints; int64 ones are numbers once `refuseUnservableInt64`
 * has checked them), maps as objects keyed by string. Only the parts infernode reads are typed in detail; tuning
 * messages it carries untouched stay `ProtoJsonObject`.
 */
import type { ProtoJsonObject } from './proto-schema';

/** `inference.ModelInput` / `inference.ModelOutput` (the output-only and input-only fields together). */
export interface ProtoTensor {
  name?: string;
  data_type?: string;
  format?: 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';
  dims?: number[];
  reshape?: { shape?: number[] };
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
  label_filename?: string;
}

/** `inference.ModelQueuePolicy`. */
export interface ProtoQueuePolicy {
  timeout_action?: 'REJECT' | 'DELAY';
  default_timeout_microseconds?: number | bigint;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

/** `inference.ModelDynamicBatching`; `priority_queue_policy` keys are decimal strings. */
export interface ProtoDynamicBatching {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number | bigint;
  preserve_ordering?: boolean;
  priority_levels?: number | bigint;
  default_priority_level?: number | bigint;
  default_queue_policy?: ProtoQueuePolicy;
  priority_queue_policy?: Record<string, ProtoQueuePolicy>;
}

/** `inference.ModelInstanceGroup`. */
export interface ProtoInstanceGroup {
  name?: string;
  kind?: 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';
  count?: number;
  rate_limiter?: ProtoJsonObject;
  gpus?: number[];
  secondary_devices?: ProtoJsonObject[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
}

/** `inference.ModelVersionPolicy` (one of latest, all, specific). */
export interface ProtoVersionPolicy {
  latest?: { num_versions?: number };
  all?: ProtoJsonObject;
  specific?: { versions?: number[] };
}

/** `inference.ModelWarmup.Input` (one of zero_data, random_data, input_data_file). */
export interface ProtoWarmupInput {
  data_type?: string;
  dims?: number[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

/** `inference.ModelWarmup`. */
export interface ProtoWarmup {
  name?: string;
  batch_size?: number;
  inputs?: Record<string, ProtoWarmupInput>;
  count?: number;
}

/** `inference.ModelConfig`. */
export interface ProtoModelConfig {
  name?: string;
  platform?: string;
  backend?: string;
  runtime?: string;
  version_policy?: ProtoVersionPolicy;
  max_batch_size?: number;
  input?: ProtoTensor[];
  output?: ProtoTensor[];
  batch_input?: ProtoJsonObject[];
  batch_output?: ProtoJsonObject[];
  optimization?: ProtoJsonObject;
  dynamic_batching?: ProtoDynamicBatching;
  sequence_batching?: ProtoJsonObject;
  ensemble_scheduling?: ProtoJsonObject;
  instance_group?: ProtoInstanceGroup[];
  default_model_filename?: string;
  cc_model_filenames?: Record<string, string>;
  metric_tags?: Record<string, string>;
  parameters?: Record<string, { string_value?: string }>;
  model_warmup?: ProtoWarmup[];
  model_operations?: ProtoJsonObject;
  model_transaction_policy?: { decoupled?: boolean };
  model_repository_agents?: ProtoJsonObject;
  response_cache?: { enable?: boolean };
  model_metrics?: ProtoJsonObject;
}
