/**
 * Conversions of the gRPC client: ClientInferRequest → ModelInferRequest fields, decoded
 * ModelInferResponse → NDArrays, gRPC statuses → InferenceServerErrors, and ModelConfig messages
 * → Triton's JSON form (the object the HTTP client's modelConfig returns).
 */
import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { InferenceServerError, type StatusCodeName } from '../errors';
import { MODEL_CONFIG } from '../config/model-config-schema';
import { exactInteger, is64BitKind, type FieldSpec, type MessageSpec, type ProtoJsonObject, type ProtoJsonValue } from '../config/proto-schema';
import type { InferRequestFields, TensorHeader } from '../server/grpc/infer-encode';
import { paramRecord, type InferParam, type InferResponseMessage, type ParamMap } from '../server/grpc/infer-codec';
import { tensorFromContents } from '../server/grpc/typed-contents';
import { tensorFromBytes, tensorToBytes, wireDataType, wireShape } from '../server/tensor-codec';
import type { NDArray } from '../tensor';
import type { Parameters } from '../request';
import { ClientTimeoutError, ClientValueError } from './errors';
import type { ClientInferRequest, ClientInferResult, ClientStreamResult } from './types';
import { InferResult, StreamInferResult, type InferResponseJson, type SharedMemoryRef } from './infer-io';
import { wireFromRequest, type WireInferRequest, type WireOutput } from './infer-request';
import { sequenceParameters, type SequenceParameters } from './sequence';

/** A JS parameter value as Triton's clients send it: bool, int64 (integers), double, string. */
export function toParam(key: string, value: unknown): InferParam {
  if (typeof value === 'boolean') return { kind: 'bool', value };
  if (typeof value === 'string') return { kind: 'string', value };
  if (typeof value === 'bigint') return { kind: 'int64', value };
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { kind: 'int64', value } : { kind: 'double', value };
  throw new ClientValueError(`parameter '${key}' must be a string, number or boolean`);
}

export function paramMap(params: Parameters | Record<string, unknown> | undefined): ParamMap | null {
  if (!params) return null;
  const keys = Object.keys(params);
  if (keys.length === 0) return null;
  return new Map(keys.map((key) => [key, toParam(key, params[key])]));
}

const INT64_MAX = (1n << 63n) - 1n;

/**
 * Adds the sequence parameters: a string id as string_param; an integer id as int64_param (what
 * tritonclient sends and Triton's gRPC frontend reads), or uint64_param above 2^63 - 1, which
 * int64 cannot hold.
 */
function withSequence(params: ParamMap | null, sequence: SequenceParameters | null): ParamMap | null {
  if (!sequence) return params;
  const out: ParamMap = params ?? new Map();
  const { id } = sequence;
  if (typeof id === 'string') out.set('sequence_id', { kind: 'string', value: id });
  else out.set('sequence_id', { kind: typeof id === 'bigint' && id > INT64_MAX ? 'uint64' : 'int64', value: id });
  out.set('sequence_start', { kind: 'bool', value: sequence.start });
  out.set('sequence_end', { kind: 'bool', value: sequence.end });
  return out;
}

/** An input's or output's shared-memory parameters (Triton's names and types). */
function sharedMemoryParams(ref: SharedMemoryRef, into: ParamMap | null = null): ParamMap {
  const out: ParamMap = into ?? new Map();
  out.set('shared_memory_region', { kind: 'string', value: ref.regionName });
  out.set('shared_memory_byte_size', { kind: 'int64', value: ref.byteSize });
  if (ref.offset !== 0) out.set('shared_memory_offset', { kind: 'int64', value: ref.offset });
  return out;
}

function outputParams(output: WireOutput): ParamMap | null {
  let params: ParamMap | null = null;
  if (output.classCount > 0) params = new Map([['classification', { kind: 'int64', value: output.classCount }]]);
  if (output.sharedMemory) params = sharedMemoryParams(output.sharedMemory, params);
  return params;
}

/**
 * The request fields; every input's data as raw contents (as tritonclient always sends), in
 * input order, skipping shared-memory inputs (the server matches raw contents to the inputs
 * that carry no region, in order).
 */
export function wireRequestFields(request: WireInferRequest): InferRequestFields {
  const inputs: TensorHeader[] = [];
  const raw: Uint8Array[] = [];
  for (const input of request.inputs) {
    inputs.push({
      name: input.name, datatype: input.datatype, shape: input.shape,
      parameters: input.sharedMemory ? sharedMemoryParams(input.sharedMemory) : null,
    });
    if (!input.sharedMemory && input.data) raw.push(tensorToBytes(input.data));
  }
  return {
    modelName: request.modelName,
    modelVersion: request.modelVersion,
    id: request.id,
    parameters: withSequence(paramMap(request.parameters), sequenceParameters(request)),
    inputs,
    outputs: (request.outputs ?? []).map((output) => ({ name: output.name, parameters: outputParams(output) })),
    rawInputContents: raw,
  };
}

/** The fields of infernode's request object (inputs by name, outputs by name). */
export function inferRequestFields(request: ClientInferRequest): InferRequestFields {
  return wireRequestFields(wireFromRequest(request, true, true));
}

/** The response's description (InferResult.getResponse): the HTTP JSON form's fields. */
function responseJson(response: InferResponseMessage): InferResponseJson {
  const described = (params: ParamMap | null): { parameters?: Record<string, unknown> } =>
    (params && params.size > 0 ? { parameters: { ...paramRecord(params) } } : {});
  return {
    model_name: response.modelName,
    model_version: response.modelVersion,
    ...(response.id ? { id: response.id } : {}),
    ...described(response.parameters),
    outputs: response.outputs.map((o) => ({
      name: o.name, datatype: o.datatype, shape: o.shape.map(Number), ...described(o.parameters),
    })),
  };
}

/**
 * The outputs of a response: views of its raw contents (or its typed contents). Outputs the
 * request asked to be written to shared memory (`inSharedMemory`) arrive with empty contents
 * and no marker (Triton's gRPC frontend echoes no parameters): they are left out.
 */
function inferOutputs(response: InferResponseMessage, inSharedMemory?: ReadonlySet<string>): ClientInferResult {
  const outputs: Record<string, NDArray> = {};
  response.outputs.forEach((o, i) => {
    if (inSharedMemory?.has(o.name)) return;
    const what = `output '${o.name}' of model '${response.modelName}'`;
    const dtype = wireDataType(o.datatype, what);
    const shape = wireShape(o.shape, what, true);
    outputs[o.name] = o.contents && !response.rawOutputContents.length
      ? tensorFromContents(what, dtype, shape, o.contents)
      : tensorFromBytes(what, dtype, shape, response.rawOutputContents[i] ?? Buffer.alloc(0));
  });
  return { modelName: response.modelName, modelVersion: response.modelVersion, id: response.id || undefined, outputs };
}

/** A ModelInferResponse as an InferResult; `inSharedMemory`: the outputs requested in shared memory. */
export function inferResult(response: InferResponseMessage, inSharedMemory?: ReadonlySet<string>): InferResult {
  return new InferResult(inferOutputs(response, inSharedMemory), responseJson(response));
}

/** The names of the outputs a request asks to be written to shared memory. */
export function sharedMemoryOutputs(request: WireInferRequest): Set<string> {
  return new Set((request.outputs ?? []).filter((o) => o.sharedMemory).map((o) => o.name));
}

/** The request parameter asking for a flag-only final response to be sent (empty) rather than dropped. */
export const EMPTY_FINAL_RESPONSE_PARAM = 'triton_enable_empty_final_response';
/** The response parameter saying whether a decoupled model's response completes its request. */
export const FINAL_RESPONSE_PARAM = 'triton_final_response';

/**
 * One response of a stream. A response without `triton_final_response` is final: servers flag
 * decoupled models' responses only, and a non-decoupled model answers each request once.
 */
export function streamResult(response: InferResponseMessage): StreamInferResult {
  const flag = response.parameters?.get(FINAL_RESPONSE_PARAM);
  return new StreamInferResult(inferOutputs(response), responseJson(response),
    flag === undefined || flag.value === true, { ...paramRecord(response.parameters) });
}

/** Whether a response is the flag-only end of its request (asked for with EMPTY_FINAL_RESPONSE_PARAM). */
export function isEmptyFinal(result: ClientStreamResult): boolean {
  return result.final && result.parameters[FINAL_RESPONSE_PARAM] === true && Object.keys(result.outputs).length === 0;
}

const CODE_OF_STATUS: Partial<Record<Status, StatusCodeName>> = {
  [Status.UNKNOWN]: 'UNKNOWN',
  [Status.INTERNAL]: 'INTERNAL',
  [Status.NOT_FOUND]: 'NOT_FOUND',
  [Status.INVALID_ARGUMENT]: 'INVALID_ARG',
  [Status.UNAVAILABLE]: 'UNAVAILABLE',
  [Status.UNIMPLEMENTED]: 'UNSUPPORTED',
  [Status.ALREADY_EXISTS]: 'ALREADY_EXISTS',
  [Status.CANCELLED]: 'CANCELLED',
  // Not Triton core codes; the closest ones: a message over a size limit is the request's
  // fault, a refused or aborted call is worth retrying.
  [Status.RESOURCE_EXHAUSTED]: 'INVALID_ARG',
  [Status.FAILED_PRECONDITION]: 'INVALID_ARG',
  [Status.OUT_OF_RANGE]: 'INVALID_ARG',
  [Status.PERMISSION_DENIED]: 'UNAVAILABLE',
  [Status.UNAUTHENTICATED]: 'UNAVAILABLE',
  [Status.ABORTED]: 'UNAVAILABLE',
  [Status.DATA_LOSS]: 'INTERNAL',
};

/** The InferenceServerError of a failed call, with the server's message. */
export function errorFromStatus(err: ServiceError, what: string): InferenceServerError {
  if (err.code === Status.DEADLINE_EXCEEDED) return new ClientTimeoutError(`${what}: ${err.details}`);
  return new InferenceServerError(CODE_OF_STATUS[err.code as Status] ?? 'UNKNOWN', err.details || err.message);
}

/**
 * protobufjs decodes 64-bit map keys to an 8-character "hash" (the key's little-endian bytes as
 * char codes); this turns one back into the decimal key.
 */
function longMapKey(key: string): string {
  if (key.length !== 8) return key;
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < 4; i++) {
    lo += key.charCodeAt(i) * 2 ** (8 * i);
    hi += key.charCodeAt(i + 4) * 2 ** (8 * i);
  }
  return (BigInt(hi) * 2n ** 32n + BigInt(lo)).toString();
}

function jsonValue(field: FieldSpec, value: unknown): ProtoJsonValue {
  const type = field.type;
  if (type.kind === 'message') return tritonJson(type.message, value as Record<string, unknown>);
  // 64-bit values arrive as exact digit strings (clientServiceDefinition; a number from another
  // decoder is taken as it is). Triton prints the listed ones as JSON numbers: a number, or a
  // bigint where a number would round, as the HTTP client's parseJsonExact reads them.
  if (type.kind === 'scalar' && is64BitKind(type.scalar)) {
    if (!field.jsonNumber) return String(value);
    return typeof value === 'number' ? value : exactInteger(BigInt(String(value)));
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  return value as ProtoJsonValue;
}

/**
 * A decoded message (defaults filled, unset sub-messages null) in Triton's JSON form: proto
 * field names, every primitive field, 64-bit fields as strings except those Triton prints as
 * numbers (bigints beyond 2^53 - 1), unset sub-messages and oneof members left out.
 */
export function tritonJson(spec: MessageSpec, message: Record<string, unknown>): ProtoJsonObject {
  const out: ProtoJsonObject = {};
  for (const field of spec.fields) {
    const value = message[field.name];
    if (value === null || value === undefined) continue;
    if (field.label === 'repeated') {
      out[field.name] = (value as unknown[]).map((v) => jsonValue(field, v));
    } else if (field.label === 'map') {
      const map: ProtoJsonObject = {};
      const longKeys = field.mapKey !== undefined && is64BitKind(field.mapKey);
      for (const [key, v] of Object.entries(value as Record<string, unknown>)) map[longKeys ? longMapKey(key) : key] = jsonValue(field, v);
      out[field.name] = map;
    } else {
      out[field.name] = jsonValue(field, value);
    }
  }
  return out;
}

/** A decoded ModelConfig in Triton's JSON form. */
export function modelConfigJson(config: Record<string, unknown>): ProtoJsonObject {
  return tritonJson(MODEL_CONFIG, config);
}
