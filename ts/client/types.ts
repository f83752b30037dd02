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

/** What the load API may carry: a config (JSON text) and file overrides ("file:<version>/<name>"). */
export interface LoadModelOptions {
  config?: string;
  files?: Record<string, Uint8Array>;
}

/** A KServe v2 / Triton client over one transport. Every failure rejects with InferenceServerError. */
export interface InferenceServerClient {
  serverLive(): Promise<boolean>;
  serverReady(): Promise<boolean>;
  modelReady(modelName: string, modelVersion?: string): Promise<boolean>;
  serverMetadata(): Promise<ServerMetadata>;
  modelMetadata(modelName: string, modelVersion?: string): Promise<ModelMetadata>;
  /** The model configuration in Triton's JSON form (snake_case fields). */
  modelConfig(modelName: string, modelVersion?: string): Promise<Record<string, unknown>>;
  modelStatistics(modelName?: string, modelVersion?: string): Promise<{ model_stats: Record<string, unknown>[] }>;
  repositoryIndex(readyOnly?: boolean): Promise<RepositoryIndexEntry[]>;
  loadModel(modelName: string, options?: LoadModelOptions): Promise<void>;
  unloadModel(modelName: string): Promise<void>;
  infer(request: ClientInferRequest): Promise<ClientInferResult>;
  close(): Promise<void>;
}
