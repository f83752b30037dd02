/**
 * The JSON answers both frontends share: server and model metadata, readiness and statistics,
 * in Triton's field names (the gRPC messages use the same names, so the gRPC frontend encodes
 * these objects directly).
 */
import type { BoundModel } from '../model';
import type { NativeDuration } from '../native';
import type { NormalizedTensor } from '../config/normalize';
import type { ServedTriton } from './served-triton';
import { resolveModel } from './inference-service';
import { InferenceServerError, clip, invalidArg } from '../errors';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const PACKAGE_VERSION = (require('../../package.json') as { version: string }).version;

/** The protocol extensions infernode implements (GET /v2, ServerMetadata), in Triton's order. */
export const EXTENSIONS = [
  'classification', 'sequence', 'model_repository', 'model_repository(unload_dependents)', 'schedule_policy',
  'model_configuration', 'system_shared_memory', 'cuda_shared_memory', 'binary_tensor_data', 'parameters',
  'statistics', 'trace', 'logging',
];

export function serverMetadata(triton: ServedTriton): { name: string; version: string; extensions: string[] } {
  return { name: triton.config.id ?? 'triton', version: PACKAGE_VERSION, extensions: EXTENSIONS };
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

function tensorMetadata(t: NormalizedTensor, batching: boolean): TensorMetadata {
  return { name: t.name, datatype: t.dtype, shape: batching ? [-1, ...t.dims] : [...t.dims] };
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

/** Model metadata: the requested version, or every serving version when none is requested. */
export function modelMetadata(triton: ServedTriton, name: string, version?: string): ModelMetadata {
  const model = resolveModel(triton, name, version);
  const versions = version ? [String(model.version)] : triton.modelVersions(name).map((m) => String(m.version));
  const c = model.config;
  const batching = c.maxBatchSize > 0;
  return {
    name: model.name,
    versions,
    platform: c.platform || c.backend,
    inputs: c.inputs.map((t) => tensorMetadata(t, batching)),
    outputs: c.outputs.map((t) => tensorMetadata(t, batching)),
  };
}

/** Whether the model (version) is ready; false for unknown models (never throws). */
export function modelReady(triton: ServedTriton, name: string, version?: string): boolean {
  try {
    resolveModel(triton, name, version);
    return triton.isConnected();
  } catch {
    return false;
  }
}

const duration = (d: NativeDuration): { count: number; ns: number } => ({ count: d.count, ns: d.ns });

/** Triton's ModelStatistics of one model version (every field perf_analyzer reads). */
export function modelStatistics(model: BoundModel): Record<string, unknown> {
  const s = model.stats();
  return {
    name: model.name,
    version: String(model.version),
    last_inference: s.lastInferenceMs,
    inference_count: s.inferenceCount,
    execution_count: s.executionCount,
    inference_stats: {
      success: duration(s.success),
      fail: duration(s.fail),
      queue: duration(s.queue),
      compute_input: duration(s.computeInput),
      compute_infer: duration(s.computeInfer),
      compute_output: duration(s.computeOutput),
      cache_hit: duration(s.cacheHit),
      cache_miss: duration(s.cacheMiss),
    },
    response_stats: {},
    batch_stats: s.batchStats.map((b) => ({
      batch_size: b.batchSize,
      compute_input: duration(b.computeInput),
      compute_infer: duration(b.computeInfer),
      compute_output: duration(b.computeOutput),
    })),
    memory_usage: [],
  };
}

/**
 * Statistics of every version, of one model (all its versions), or of one version. A model or
 * version not served is INVALID_ARG with Triton's texts (core src/tritonserver.cc
 * TRITONSERVER_ServerModelStatistics), not the NOT_FOUND the other model routes answer.
 */
export function statistics(triton: ServedTriton, name?: string, version?: string): { model_stats: Record<string, unknown>[] } {
  let models: BoundModel[];
  if (!name) {
    models = triton.models();
  } else {
    models = asInvalidArg(() => triton.modelVersions(name), `requested model '${clip(name)}' is not available`);
    if (version) {
      models = [asInvalidArg(() => resolveModel(triton, name, version), `requested model version is not available for model '${clip(name)}'`)];
    }
  }
  return { model_stats: models.map(modelStatistics) };
}

/** `lookup`'s answer; its NOT_FOUND as INVALID_ARG `text` (other errors, such as UNAVAILABLE, as they are). */
function asInvalidArg<T>(lookup: () => T, text: string): T {
  try {
    return lookup();
  } catch (err) {
    if (err instanceof InferenceServerError && err.code === 'NOT_FOUND') throw invalidArg(text);
    throw err;
  }
}
