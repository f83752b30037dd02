/**
 * The contract of infernode's KServe v2 clients. `HttpInferenceServerClient` and
 * `GrpcInferenceServerClient` implement it against any Triton-compatible server (Triton itself
 * or infernode); `ModelClient` (PyTriton's surface) is built on whichever the URL names.
 */
import type { NDArray } from '../tensor';
import type { Parameters } from '../request';
import type { SequenceOptions } from './sequence';

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface RepositoryIndexEntry {
  name: string;
  version: string;
  state: string;
  reason: string;
}

/**
 * One inference request, in client terms. `sequenceId` / `sequenceStart` / `sequenceEnd` mark a
 * request of a stateful model's sequence (sent as Triton's `sequence_*` parameters).
 */
export interface ClientInferRequest extends SequenceOptions {
  modelName: string;
  /** Default: the latest version. */
  modelVersion?: string;
  id?: string;
  /** Inputs by name; their datatype and shape come from the NDArray. */
  inputs: Record<string, NDArray>;
  /** Outputs to return; all when absent. */
  outputs?: string[];
  /** Request parameters (custom, and Triton's priority/timeout). */
  parameters?: Parameters;
  /** Extra headers (HTTP) or metadata (gRPC). */
  headers?: Record<string, string>;
  /** Client-side deadline for this call (ms). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ClientInferResult {
  modelName: string;
  modelVersion: string;
  id?: string;
  outputs: Record<string, NDArray>;
}

/**
 * One response of a streamed request (ModelStreamInfer). `final` says whether it completes its
 * request: Triton's `triton_final_response` parameter, or true when the response has none (a
 * non-decoupled model answers each request once).
 */
export interface ClientStreamResult extends ClientInferResult {
  final: boolean;
  /** The response's parameters (`triton_final_response`, ...). */
  parameters: Record<string, boolean | number | bigint | string>;
}

/** Options of `GrpcInferenceServerClient.streamInfer`. */
export interface StreamInferOptions {
  /** Aborting cancels the call, and so the request on the server (the model's generator stops). */
  signal?: AbortSignal;
  /**
   * The longest wait for the next response (ms); past it the call is cancelled and the iterator
   * throws ClientTimeoutError. Default: no bound (`request.timeoutMs` bounds the whole call).
   */
  responseTimeoutMs?: number;
}

/**
 * What every call takes last (tritonclient's `headers` and `client_timeout`, plus cancellation).
 */
export interface CallOptions {
  /** Extra headers (HTTP) or metadata (gRPC) for this call. */
  headers?: Record<string, string>;
  /** This call's client-side deadline (ms); default the client's `timeoutMs`. */
  timeoutMs?: number;
  /** Aborting it cancels the call (CANCELLED). */
  signal?: AbortSignal;
  /** HTTP only: query parameters added to the URL (tritonclient.http's `query_params`). */
  queryParams?: Record<string, string | number | boolean | (string | number | boolean)[]>;
}

/** What the load API may carry: a config (JSON text) and file overrides ("file:<path>", e.g. "file:1/model.onnx"). */
export interface LoadModelOptions extends CallOptions {
  config?: string;
  files?: Record<string, Uint8Array>;
}

/** Options of `unloadModel`. */
export interface UnloadModelOptions extends CallOptions {
  /** Unload the models that depend on it too (ensembles; tritonclient's unload_dependents). */
  unloadDependents?: boolean;
}

/** Options of `getModelRepositoryIndex`. */
export interface RepositoryIndexOptions extends CallOptions {
  /** List only the models that are ready. Default false. */
  readyOnly?: boolean;
}

/** One region in `get{System,Cuda}SharedMemoryStatus` (Triton's HTTP JSON form, over gRPC too). */
export interface SharedMemoryRegionStatus {
  name: string;
  byte_size: number;
  /** System regions. */
  key?: string;
  offset?: number;
  /** CUDA regions. */
  device_id?: number;
}

/** Trace settings as Triton's HTTP API writes them (`trace_level` a list, the others strings). */
export type TraceSettingsJson = Record<string, string | string[]>;
/** Log settings as Triton's HTTP API writes them. */
export type LogSettingsJson = Record<string, string | number | boolean>;

/**
 * A KServe v2 / Triton client over one transport. Every failure rejects with InferenceServerError.
 * tritonclient's names come first; the short names after them are aliases kept for existing code.
 */
export interface InferenceServerClient {
  isServerLive(options?: CallOptions): Promise<boolean>;
  isServerReady(options?: CallOptions): Promise<boolean>;
  isModelReady(modelName: string, modelVersion?: string, options?: CallOptions): Promise<boolean>;
  getServerMetadata(options?: CallOptions): Promise<ServerMetadata>;
  getModelMetadata(modelName: string, modelVersion?: string, options?: CallOptions): Promise<ModelMetadata>;
  /** The model configuration in Triton's JSON form (snake_case fields). */
  getModelConfig(modelName: string, modelVersion?: string, options?: CallOptions): Promise<Record<string, unknown>>;
  getModelRepositoryIndex(options?: RepositoryIndexOptions): Promise<RepositoryIndexEntry[]>;
  getInferenceStatistics(modelName?: string, modelVersion?: string, options?: CallOptions): Promise<{ model_stats: Record<string, unknown>[] }>;
  loadModel(modelName: string, options?: LoadModelOptions): Promise<void>;
  unloadModel(modelName: string, options?: UnloadModelOptions): Promise<void>;
  getTraceSettings(modelName?: string, options?: CallOptions): Promise<TraceSettingsJson>;
  updateTraceSettings(modelName?: string, settings?: Record<string, string | number | string[] | null>, options?: CallOptions): Promise<TraceSettingsJson>;
  getLogSettings(options?: CallOptions): Promise<LogSettingsJson>;
  updateLogSettings(settings: LogSettingsJson, options?: CallOptions): Promise<LogSettingsJson>;
  getSystemSharedMemoryStatus(regionName?: string, options?: CallOptions): Promise<SharedMemoryRegionStatus[]>;
  registerSystemSharedMemory(name: string, key: string, byteSize: number, offset?: number, options?: CallOptions): Promise<void>;
  unregisterSystemSharedMemory(name?: string, options?: CallOptions): Promise<void>;
  getCudaSharedMemoryStatus(regionName?: string, options?: CallOptions): Promise<SharedMemoryRegionStatus[]>;
  registerCudaSharedMemory(name: string, rawHandle: Uint8Array | string, deviceId: number, byteSize: number, options?: CallOptions): Promise<void>;
  unregisterCudaSharedMemory(name?: string, options?: CallOptions): Promise<void>;
  /** Also `infer(modelName, inputs: InferInput[], options)` (tritonclient's shape); both resolve with an InferResult. */
  infer(request: ClientInferRequest): Promise<ClientInferResult>;
  close(): Promise<void>;
  // The short names, kept as aliases of tritonclient's (documented before it was followed).
  serverLive(): Promise<boolean>;
  serverReady(): Promise<boolean>;
  modelReady(modelName: string, modelVersion?: string): Promise<boolean>;
  serverMetadata(): Promise<ServerMetadata>;
  modelMetadata(modelName: string, modelVersion?: string): Promise<ModelMetadata>;
  modelConfig(modelName: string, modelVersion?: string): Promise<Record<string, unknown>>;
  modelStatistics(modelName?: string, modelVersion?: string): Promise<{ model_stats: Record<string, unknown>[] }>;
  repositoryIndex(readyOnly?: boolean): Promise<RepositoryIndexEntry[]>;
}
