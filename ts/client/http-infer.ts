/**
 * The HTTP client's side of the binary tensor data extension: requests carry their inputs as
 * raw bytes after the JSON header (or as JSON `data` when asked), and outputs are asked for in
 * binary; answers are split at `Inference-Header-Content-Length` and binary outputs become
 * views of the response body. The same tensor codec as the server's is used both ways.
 */
import { InferenceServerError, invalidArg } from '../errors';
import type { NDArray } from '../tensor';
import { tensorFromBytes, tensorFromJson, tensorToBytes, tensorToJsonText, wireDataType, wireShape } from '../server/tensor-codec';
import { InferResult, type InferResponseJson, type SharedMemoryRef } from './infer-io';
import { wireFromRequest, type WireInferRequest, type WireOutput } from './infer-request';
import type { ClientInferRequest } from './types';
import type { HttpResponse } from './http-transport';
import { sequenceParameters, type SequenceParameters } from './sequence';
import { parseTritonJson } from './triton-json';

export interface EncodedRequest {
  body: Buffer;
  headers: Record<string, string | number>;
  /** The JSON header's length when binary data follows it; null when the body is JSON only. */
  jsonSize: number | null;
}

const quote = JSON.stringify;

/**
 * The request's `parameters` object with the sequence parameters; an id above 2^53 - 1 is
 * written as its exact digits (JSON.stringify cannot write a bigint).
 */
function parametersJson(parameters: Record<string, unknown>, sequence: SequenceParameters | null): string {
  if (!sequence) return quote(parameters);
  const exact = typeof sequence.id === 'bigint';
  const out: Record<string, unknown> = { ...parameters, sequence_start: sequence.start, sequence_end: sequence.end };
  if (!exact) return quote({ ...out, sequence_id: sequence.id });
  delete out.sequence_id;
  const text = quote(out);
  return `${text.slice(0, -1)}${text === '{}' ? '' : ','}"sequence_id":${sequence.id.toString()}}`;
}

/** An input's or output's shared-memory parameters (Triton's names). */
function sharedMemoryJson(ref: SharedMemoryRef): string {
  return `"shared_memory_region":${quote(ref.regionName)},"shared_memory_byte_size":${ref.byteSize}` +
    (ref.offset === 0 ? '' : `,"shared_memory_offset":${ref.offset}`);
}

function outputJson(output: WireOutput): string {
  const params: string[] = [];
  if (output.classCount > 0) params.push(`"classification":${output.classCount}`);
  if (output.sharedMemory) params.push(sharedMemoryJson(output.sharedMemory));
  else params.push(`"binary_data":${output.binary}`);
  return `{"name":${quote(output.name)},"parameters":{${params.join(',')}}}`;
}

/**
 * Encodes a request: the JSON header, then the binary inputs in order (tritonclient's layout).
 * `binaryOutputs` is what a request naming no outputs asks for (`binary_data_output`).
 */
export function encodeWireRequest(request: WireInferRequest, binaryOutputs: boolean): EncodedRequest {
  const parameters: Record<string, unknown> = { ...request.parameters };
  let json = '{';
  if (request.id !== undefined) json += `"id":${quote(request.id)},`;
  json += '"inputs":[';
  const binaries: Buffer[] = [];
  let first = true;
  for (const input of request.inputs) {
    json += `${first ? '' : ','}{"name":${quote(input.name)},"datatype":"${input.datatype}","shape":[${input.shape.join(',')}]`;
    first = false;
    const arr = input.data;
    if (input.sharedMemory || !arr) {
      json += `,"parameters":{${input.sharedMemory ? sharedMemoryJson(input.sharedMemory) : ''}}}`;
    } else if (input.binary || arr.dtype === 'FP16' || arr.dtype === 'BF16') {
      // FP16/BF16 cannot travel as JSON: they always use the binary extension.
      const bytes = tensorToBytes(arr);
      binaries.push(bytes);
      json += `,"parameters":{"binary_data_size":${bytes.length}}}`;
    } else {
      json += `,"data":${tensorToJsonText(arr, `input '${input.name}'`)}}`;
    }
  }
  json += ']';
  if (request.outputs) json += `,"outputs":[${request.outputs.map(outputJson).join(',')}]`;
  else parameters.binary_data_output = binaryOutputs;
  json += `,"parameters":${parametersJson(parameters, sequenceParameters(request))}}`;
  const header = Buffer.from(json, 'utf8');
  if (binaries.length === 0) return { body: header, headers: { 'Content-Type': 'application/json' }, jsonSize: null };
  return {
    body: Buffer.concat([header, ...binaries]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': header.length },
    jsonSize: header.length,
  };
}

/** Encodes infernode's request object; `binaryInputs`/`binaryOutputs` choose the binary extension (default both). */
export function encodeInferRequest(request: ClientInferRequest, binaryInputs: boolean, binaryOutputs: boolean): EncodedRequest {
  return encodeWireRequest(wireFromRequest(request, binaryInputs, binaryOutputs), binaryOutputs);
}

interface ResponseOutput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: { binary_data_size?: number; [key: string]: unknown };
  data?: unknown;
}

/** Decodes a 200 answer. Outputs written to shared memory carry no data and are left out. */
export function decodeInferResponse(res: HttpResponse): InferResult {
  const headerValue = res.headers['inference-header-content-length'];
  const jsonLength = headerValue === undefined ? res.body.length : Number(headerValue);
  if (!Number.isSafeInteger(jsonLength) || jsonLength < 0 || jsonLength > res.body.length) {
    throw invalidArg(`the server's Inference-Header-Content-Length '${String(headerValue)}' does not fit its ${res.body.length}-byte answer`);
  }
  let header: {
    model_name: string; model_version: string; id?: string; parameters?: Record<string, unknown>; outputs?: ResponseOutput[];
  };
  try {
    header = parseTritonJson(res.body.toString('utf8', 0, jsonLength)) as typeof header;
  } catch (err) {
    throw new InferenceServerError('INTERNAL', `the server's inference response is not JSON: ${(err as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header) ||
    (header.outputs !== undefined && (!Array.isArray(header.outputs) ||
      header.outputs.some((o) => typeof o !== 'object' || o === null || typeof o.name !== 'string')))) {
    throw new InferenceServerError('INTERNAL', "the server's inference response is not an inference response: " +
      'expected an object whose outputs (when present) are a list of named outputs');
  }
  const outputs: Record<string, NDArray> = {};
  let offset = jsonLength;
  for (const out of header.outputs ?? []) {
    const what = `output '${out.name}'`;
    const dtype = wireDataType(out.datatype, what);
    const shape = wireShape(out.shape, what);
    const size = out.parameters?.binary_data_size;
    if (size !== undefined) {
      if (!Number.isSafeInteger(size) || size < 0) {
        throw invalidArg(`${what}: binary_data_size ${JSON.stringify(size)} is not a non-negative integer`);
      }
      if (offset + size > res.body.length) {
        throw invalidArg(`${what}: binary_data_size ${size} runs past the server's answer`);
      }
      outputs[out.name] = tensorFromBytes(what, dtype, shape, res.body.subarray(offset, offset + size));
      offset += size;
    } else if (out.data !== undefined) {
      outputs[out.name] = tensorFromJson(what, dtype, shape, out.data);
    }
  }
  const response: InferResponseJson = {
    ...header, outputs: (header.outputs ?? []).map(({ data: _data, ...described }) => described),
  };
  return new InferResult({ modelName: header.model_name, modelVersion: header.model_version, id: header.id, outputs }, response);
}
