/** infernode's public API. */
export {
  Triton, type BindOptions, type BoundInferFunc, type InferInput as TritonInferInput, type TritonInferOptions, type TritonStreamOptions,
} from './triton';
export {
  defineModel, type ModelSpec, type TensorSpecs, type InputsOf, type OutputsOf, type OutputValueOf, type CheckedOutputs,
  type InferInputsOf, type InferResultOf,
} from './typed-model';
export {
  TimeoutAction, DeviceKind,
  type TritonConfig, type ModelConfig, type Tensor, type DynamicBatcher, type QueuePolicy,
  type ModelWarmup, type WarmupInput, type SequenceBatcher, type SequenceControlInput, type SequenceControlKind,
  type SequenceState, type SequenceInitialState, type RateLimiterConfig, type RateLimiterResource,
} from './config/types';
export type { SequenceOptions } from './client/sequence';
export type { NormalizedModelConfig, NormalizedTensor } from './config/normalize';
export { InferenceServerError, StatusCode, type StatusCodeName } from './errors';
export { Request, type InferFunc, type InferFuncResult, type Parameters, type ResponseOutputs, type TritonContext } from './request';
export {
  NDArray, ndarray, concatRows, DATA_TYPES, type DataType, type TypedArray, type TensorData, type DataTypeArrays,
  type ArrayOfDataType,
} from './tensor';
export type { InferOptions, StreamOptions } from './model';
export * from './decorators';
export { HttpInferenceServerClient, type HttpClientOptions, type HttpSslOptions } from './client/http';
export type { ClientPlugin } from './client/client-base';
export {
  InferInput, InferRequestedOutput, InferResult, StreamInferResult,
  type InferInputData, type InferRequestedOutputOptions, type InferResponseJson, type SharedMemoryRef,
} from './client/infer-io';
export type { InferOptions as ClientInferOptions } from './client/infer-request';
export type { PemSource } from './client/tls';
export {
  GrpcInferenceServerClient, type GrpcClientOptions, type StartStreamOptions, type StreamCallback, type StreamInferRequest,
  type StreamInferInputsOptions,
} from './client/grpc';
export {
  ModelClient, type ModelClientOptions, type ModelClientConfig, type ModelTensorSpec, type ModelInput, type ModelInputs,
  type InferCallOptions, type StreamCallOptions,
} from './client/model-client';
export { clientForUrl, parseTritonUrl, type ClientOptions, type TritonUrl } from './client/connect';
export {
  ClientError, ClientValueError, ClientInvalidUrlError, ClientTimeoutError, ClientClosedError, ModelDoesntSupportBatchingError, ModelUnavailableError,
  StreamResponseError,
} from './client/errors';
export type {
  InferenceServerClient, ClientInferRequest, ClientInferResult, ServerMetadata, ModelMetadata, TensorMetadata,
  RepositoryIndexEntry, LoadModelOptions, ClientStreamResult, StreamInferOptions, CallOptions, UnloadModelOptions,
  RepositoryIndexOptions, SharedMemoryRegionStatus, TraceSettingsJson, LogSettingsJson,
} from './client/types';
