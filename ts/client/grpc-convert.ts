/**
 * Conversions of the gRPC client: ClientInferRequest → ModelInferRequest fields, decoded
 * ModelInferResponse → NDArrays, gRPC statuses → InferenceServerErrors, and ModelConfig messages
 * → Triton's JSON form (the object the HTTP client's modelConfig returns).
 */
import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { InferenceServerError, type StatusCodeName } from '../errors';
import { MODEL_CONFIG } from '../config/model-config-schema';
import { is64BitKind, type FieldSpec, type MessageSpec, type ProtoJsonObject, type ProtoJsonValue } from '../config/proto-schema';
import type { InferRequestFields, TensorHeader } from '../server/grpc/infer-encode';
import { paramRecord, type InferParam, type InferResponseMessage, type ParamMap } from '../server/grpc/infer-codec';
import { tensorFromContents } from '../server/grpc/typed-contents';
import { tensorFromBytes, tensorToBytes, wireDataType, wireShape } from '../server/tensor-codec';
import type { NDArray } from '../tensor';
import type { Parameters } from '../request';
import { ClientTimeoutError, ClientValueError } from './errors';
import type { ClientInferRequest, ClientInferResult, ClientStreamResult } from './types';
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

/** The request fields; every input's data as raw contents (as tritonclient always sends). */
export function inferRequestFields(request: ClientInferRequest): InferRequestFields {
  const inputs: TensorHeader[] = [];
  const raw: Uint8Array[] = [];
  for (const [name, arr] of Object.entries(request.inputs)) {
    inputs.push({ name, datatype: arr.dtype, shape: arr.shape });
    raw.push(tensorToBytes(arr));
  }
  return {
    modelName: request.modelName,
    modelVersion: request.modelVersion,
    id: request.id,
    parameters: withSequence(paramMap(request.parameters), sequenceParameters(request)),
    inputs,
    outputs: (request.outputs ?? []).map((name) => ({ name })),
    rawInputContents: raw,
  };
}

/** The outputs of a response: views of its raw contents (or its typed contents). */
export function inferResult(response: InferResponseMessage): ClientInferResult {
  const outputs: Record<string, NDArray> = {};
  response.outputs.forEach((o, i) => {
    const what = `output '${o.name}' of model '${response.modelName}'`;
    const dtype = wireDataType(o.datatype, what);
    const shape = wireShape(o.shape, what, true);
    outputs[o.name] = o.contents && !response.rawOutputContents.length
      ? tensorFromContents(what, dtype, shape, o.contents)
      : tensorFromBytes(what, dtype, shape, response.rawOutputContents[i] ?? Buffer.alloc(0));
  });
  return { modelName: response.modelName, modelVersion: response.modelVersion, id: response.id || undefined, outputs };
}

/** The request parameter asking for a flag-only final response to be sent (empty) rather than dropped. */
export const EMPTY_FINAL_RESPONSE_PARAM = 'triton_enable_empty_final_response';
/** The response parameter saying whether a decoupled model's response completes its request. */
export const FINAL_RESPONSE_PARAM = 'triton_final_response';

/**
 * One response of a stream. A response without `triton_final_response` is final: servers flag
 * decoupled models' responses only, and a non-decoupled model answers each request once.
 */
export function streamResult(response: InferResponseMessage): ClientStreamResult {
  const flag = response.parameters?.get(FINAL_RESPONSE_PARAM);
  return {
    ...inferResult(response),
    final: flag === undefined || flag.value === true,
    parameters: { ...paramRecord(response.parameters) },
  };
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
  // Decoders may hand 64-bit values over as numbers or as strings; Triton prints some as numbers.
  if (type.kind === 'scalar' && is64BitKind(type.scalar)) return field.jsonNumber ? Number(value) : String(value);
  if (typeof value === 'number' && !Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  return value as ProtoJsonValue;
}

/**
 * A decoded message (defaults filled, unset sub-messages null) in Triton's JSON form: proto
 * field names, every primitive field, 64-bit fields as strings except those Triton prints as
 * numbers, unset sub-messages and oneof members left out.
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
