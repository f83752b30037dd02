/**
 * A decoded ModelInferRequest → the InferenceCall the shared inference service runs, and its
 * answer → ModelInferResponse fields. Input data come from raw_input_contents (views of the
 * received message), typed contents, or a shared-memory region; the raw index advances only for
 * inputs that use it, as Triton's does. Parameter types are checked as Triton's gRPC frontend
 * checks them.
 */
import type { Metadata } from '@grpc/grpc-js';
import { clip, invalidArg } from '../../errors';
import type { CancelSignal } from '../../model';
import type { InferenceAnswer, InferenceCall, OutputRequest } from '../inference-service';
import { checkForwardedHeader, splitRequestParameters, type RequestParameters } from '../parameters';
import type { ServerContext } from '../context';
import { shmRefFromParameters } from '../shared-memory';
import { tensorFromBytes, tensorToBytes, wireDataType, wireShape } from '../tensor-codec';
import { paramRecord, type InferRequestMessage, type ParamKind, type ParamMap, type TensorMessage } from './infer-codec';
import type { InferResponseFields, TensorHeader } from './infer-encode';
import { tensorFromContents } from './typed-contents';

/**
 * Reserved request parameters and the InferParameter members Triton accepts for each. A Map, so
 * that a client's key such as `__proto__` or `constructor` finds nothing (it found
 * Object.prototype's members, and the request failed with a TypeError: INTERNAL instead of a
 * custom parameter).
 */
const PARAM_KINDS = new Map<string, { kinds: ParamKind[]; expected: string }>(Object.entries({
  sequence_id: { kinds: ['int64', 'uint64', 'string'], expected: 'int64_param or string_param' },
  sequence_start: { kinds: ['bool'], expected: 'bool_param' },
  sequence_end: { kinds: ['bool'], expected: 'bool_param' },
  priority: { kinds: ['int64', 'uint64'], expected: 'int64_param or uint64_param' },
  timeout: { kinds: ['int64'], expected: 'int64_param' },
  triton_enable_empty_final_response: { kinds: ['bool'], expected: 'bool_param' },
}));

/** Streaming-only: it shapes which responses a decoupled stream sends; models never see it. */
const STREAM_ONLY = 'triton_enable_empty_final_response';

function checkParamKinds(params: ParamMap | null): void {
  if (!params) return;
  for (const [key, p] of params) {
    const rule = PARAM_KINDS.get(key);
    if (rule && !rule.kinds.includes(p.kind)) {
      throw invalidArg(`invalid value type for '${key}' parameter, expected ${rule.expected}.`);
    }
  }
}

/** What a request brings besides its message: metadata to forward, deadline, cancellation. */
export interface CallEnvironment {
  metadata: Metadata;
  /** Metadata keys matching it become request parameters (--grpc-header-forward-pattern). */
  forwardPattern: RegExp | null;
  /** Absolute deadline in ms since the epoch (Infinity: none). */
  deadline: number;
  signal: CancelSignal;
}

function forwardedHeaders(env: CallEnvironment, into: Record<string, unknown>): void {
  if (!env.forwardPattern) return;
  for (const [key, values] of Object.entries(env.metadata.getMap())) {
    // Binary (-bin) metadata is not text; a request's own parameters win over headers.
    if (key.endsWith('-bin') || typeof values !== 'string' || key in into) continue;
    if (!env.forwardPattern.test(key)) continue;
    checkForwardedHeader(key);
    into[key] = values;
  }
}

/** One input: its tensor, and the shared-memory region it was read from (which the request holds until it settles). */
function inputOf(
  ctx: ServerContext, msg: InferRequestMessage, input: TensorMessage, raw: { next: number },
): InferenceCall['inputs'][number] {
  const what = `input '${clip(input.name)}' for model '${clip(msg.modelName)}'`;
  const dtype = wireDataType(input.datatype, what);
  const shape = wireShape(input.shape, what, true, dtype);
  const shm = shmRefFromParameters(input.parameters ? paramRecord(input.parameters) : undefined, what);
  if (shm) {
    if (input.contents) {
      throw invalidArg(`unexpected 'content' provided when using shared memory for input tensor '${clip(input.name)}' ` +
        `for model '${clip(msg.modelName)}'`);
    }
    return { name: input.name, tensor: ctx.inference.inputFromSharedMemory(what, dtype, shape, shm), region: shm.region };
  }
  if (input.contents) {
    if (msg.rawInputContents.length > 0) {
      throw invalidArg(`contents field must not be specified when using raw_input_contents for '${clip(input.name)}' ` +
        `for model '${clip(msg.modelName)}'`);
    }
    return { name: input.name, tensor: tensorFromContents(what, dtype, shape, input.contents) };
  }
  if (raw.next < msg.rawInputContents.length) {
    return { name: input.name, tensor: tensorFromBytes(what, dtype, shape, msg.rawInputContents[raw.next++]) };
  }
  throw invalidArg(`unable to find data for input tensor '${clip(input.name)}' for model '${clip(msg.modelName)}' in request.`);
}

function outputRequest(msg: InferRequestMessage, name: string, params: ParamMap | null): OutputRequest {
  const what = `output '${clip(name)}' for model '${clip(msg.modelName)}'`;
  const out: OutputRequest = { name };
  const classification = params?.get('classification');
  if (classification) {
    const n = classification.value;
    if (classification.kind !== 'int64' || typeof n !== 'number' || n < 1) {
      throw invalidArg(`${what}: parameter 'classification' must be a positive int64_param`);
    }
    out.classification = n;
  }
  out.shm = shmRefFromParameters(params ? paramRecord(params) : undefined, what);
  return out;
}

/** The InferenceCall a ModelInferRequest asks for. Throws INVALID_ARG naming what is wrong. */
export function inferenceCall(ctx: ServerContext, msg: InferRequestMessage, env: CallEnvironment): InferenceCall {
  let parameters: RequestParameters;
  if (msg.parameters || env.forwardPattern) {
    checkParamKinds(msg.parameters);
    const record: Record<string, unknown> = paramRecord(msg.parameters);
    delete record[STREAM_ONLY];
    forwardedHeaders(env, record);
    parameters = splitRequestParameters(record);
  } else {
    parameters = splitRequestParameters(undefined);  // the common case: no parameters at all
  }
  if (parameters.timeoutMicroseconds === 0 && Number.isFinite(env.deadline)) {
    // The call's deadline bounds the request's queue time too (where the queue policy lets a
    // request shorten its timeout); a request past its deadline is cancelled regardless.
    parameters.timeoutMicroseconds = Math.max(1, Math.round((env.deadline - Date.now()) * 1000));
  }
  const raw = { next: 0 };
  const inputs = msg.inputs.map((input) => inputOf(ctx, msg, input, raw));
  if (raw.next !== msg.rawInputContents.length) {
    throw invalidArg(`request for model '${msg.modelName}' has ${msg.rawInputContents.length} raw_input_contents ` +
      `but ${raw.next} of its inputs take their data from them`);
  }
  return {
    modelName: msg.modelName,
    modelVersion: msg.modelVersion,
    id: msg.id,
    inputs,
    outputs: msg.outputs.length ? msg.outputs.map((o) => outputRequest(msg, o.name, o.parameters)) : null,
    parameters,
    signal: env.signal,
  };
}

const EMPTY = Buffer.alloc(0);

/** The ModelInferResponse of an answer: raw contents for every output (empty when in shared memory). */
export function inferResponse(answer: InferenceAnswer): InferResponseFields {
  const outputs: TensorHeader[] = [];
  const raw: Uint8Array[] = [];
  for (const o of answer.outputs) {
    outputs.push({ name: o.name, datatype: o.datatype, shape: o.shape });
    raw.push(o.data ? tensorToBytes(o.data) : EMPTY);
  }
  return { modelName: answer.modelName, modelVersion: answer.modelVersion, id: answer.id, outputs, rawOutputContents: raw };
}
