/**
 * The two ways to ask the clients for an inference, brought to one form the encoders read:
 * infernode's object (`infer({ modelName, inputs: { IN: ndarray } })`) and tritonclient's
 * positional shape (`infer('model', [new InferInput(...)], { outputs, requestId, ... })`).
 * Shared by the HTTP client (http-infer.ts) and the gRPC client (grpc-convert.ts).
 */
import type { DataType, NDArray } from '../tensor';
import type { Parameters } from '../request';
import { ClientValueError } from './errors';
import { InferInput, InferRequestedOutput, type SharedMemoryRef } from './infer-io';
import type { SequenceOptions } from './sequence';
import type { CallOptions, ClientInferRequest } from './types';

/** Options of tritonclient's `infer(model_name, inputs, ...)`, camelCased; the call's own options too. */
export interface InferOptions extends CallOptions, SequenceOptions {
  /** Default: the version the server picks. */
  modelVersion?: string;
  /** Outputs to return and how; all outputs (binary) when absent. */
  outputs?: InferRequestedOutput[];
  /** The request's id, echoed in the response. */
  requestId?: string;
  /** Scheduling priority; 0 (the default) is the model's default. */
  priority?: number;
  /** Server-side timeout in MICROseconds (Triton's `timeout` parameter); `timeoutMs` is the client's deadline. */
  timeout?: number;
  /** Custom request parameters; Triton's reserved names (sequence_*, priority, timeout, triton_*) are refused. */
  parameters?: Parameters;
  /** HTTP: compress the request body. */
  requestCompressionAlgorithm?: 'gzip' | 'deflate';
  /** HTTP: ask the server to compress the response. */
  responseCompressionAlgorithm?: 'gzip' | 'deflate';
}

export interface WireInput {
  name: string;
  datatype: DataType;
  shape: number[];
  /** Null for a shared-memory input. */
  data: NDArray | null;
  binary: boolean;
  sharedMemory: SharedMemoryRef | null;
}

export interface WireOutput {
  name: string;
  binary: boolean;
  classCount: number;
  sharedMemory: SharedMemoryRef | null;
}

/** One request in the encoders' terms. */
export interface WireInferRequest extends SequenceOptions {
  modelName: string;
  modelVersion?: string;
  id?: string;
  inputs: WireInput[];
  /** Null: every output, binary unless the client says otherwise. */
  outputs: WireOutput[] | null;
  parameters: Record<string, unknown>;
  headers?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  requestCompression?: 'gzip' | 'deflate';
  responseCompression?: 'gzip' | 'deflate';
}

/** tritonclient's TRITON_RESERVED_REQUEST_PARAMS (and its `triton_` prefix). */
const RESERVED_PARAMETERS = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output']);

/** infernode's request object: inputs by name, outputs by name. */
export function wireFromRequest(request: ClientInferRequest, binaryInputs: boolean, binaryOutputs: boolean): WireInferRequest {
  const { inputs, outputs, parameters, ...rest } = request;
  return {
    ...rest,
    inputs: Object.entries(inputs).map(([name, arr]) => ({
      name, datatype: arr.dtype, shape: arr.shape, data: arr, binary: binaryInputs, sharedMemory: null,
    })),
    outputs: outputs ? outputs.map((name) => ({ name, binary: binaryOutputs, classCount: 0, sharedMemory: null })) : null,
    parameters: { ...parameters },
  };
}

/** tritonclient's shape: InferInputs, InferRequestedOutputs and options. */
export function wireFromInferInputs(modelName: string, inputs: readonly InferInput[], options: InferOptions = {}): WireInferRequest {
  const what = `infer of model '${modelName}'`;
  if (typeof modelName !== 'string' || modelName === '') throw new ClientValueError('infer: the model name must be a non-empty string');
  if (!Array.isArray(inputs)) throw new ClientValueError(`${what}: inputs must be an array of InferInput`);
  const wireInputs = inputs.map((input, i): WireInput => {
    if (!(input instanceof InferInput)) throw new ClientValueError(`${what}: inputs[${i}] is not an InferInput`);
    const data = input.data();
    const sharedMemory = input.sharedMemory();
    if (!data && !sharedMemory) {
      throw new ClientValueError(`${what}: InferInput '${input.name()}' has no data: call setData() or setSharedMemory()`);
    }
    return { name: input.name(), datatype: input.datatype(), shape: input.shape(), data, binary: input.binaryData(), sharedMemory };
  });
  const outputs = options.outputs?.map((output, i): WireOutput => {
    if (!(output instanceof InferRequestedOutput)) throw new ClientValueError(`${what}: outputs[${i}] is not an InferRequestedOutput`);
    return { name: output.name(), binary: output.binaryData(), classCount: output.classCount(), sharedMemory: output.sharedMemory() };
  });
  const parameters: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options.parameters ?? {})) {
    if (RESERVED_PARAMETERS.has(key) || key.startsWith('triton_')) {
      throw new ClientValueError(`${what}: parameter '${key}' is reserved: use the option that sets it (sequenceId, priority, timeout, ...)`);
    }
    parameters[key] = value;
  }
  if (options.priority) parameters.priority = options.priority;
  if (options.timeout !== undefined) parameters.timeout = options.timeout;
  return {
    modelName, modelVersion: options.modelVersion || undefined, id: options.requestId || undefined,
    sequenceId: options.sequenceId, sequenceStart: options.sequenceStart, sequenceEnd: options.sequenceEnd,
    inputs: wireInputs, outputs: outputs && outputs.length > 0 ? outputs : null, parameters,
    headers: options.headers, timeoutMs: options.timeoutMs, signal: options.signal,
    requestCompression: options.requestCompressionAlgorithm, responseCompression: options.responseCompressionAlgorithm,
  };
}
