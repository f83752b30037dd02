/**
 * The HTTP client's side of the binary tensor data extension: requests carry their inputs as
 * raw bytes after the JSON header (or as JSON `data` when asked), and outputs are asked for in
 * binary; answers are split at `Inference-Header-Content-Length` and binary outputs become
 * views of the response body. The same tensor codec as the server's is used both ways.
 */
import { invalidArg } from '../errors';
import type { NDArray } from '../tensor';
import { tensorFromBytes, tensorFromJson, tensorToBytes, tensorToJsonText, wireDataType, wireShape } from '../server/tensor-codec';
import type { ClientInferRequest, ClientInferResult } from './types';
import type { HttpResponse } from './http-transport';
import { sequenceParameters, type SequenceParameters } from './sequence';
import { parseTritonJson } from './triton-json';

export interface EncodedRequest {
  body: Buffer;
  headers: Record<string, string | number>;
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

/** Encodes a request; `binaryInputs`/`binaryOutputs` choose the binary extension (default both). */
export function encodeInferRequest(request: ClientInferRequest, binaryInputs: boolean, binaryOutputs: boolean): EncodedRequest {
  const parameters: Record<string, unknown> = { ...request.parameters };
  let json = '{';
  if (request.id !== undefined) json += `"id":${quote(request.id)},`;
  json += '"inputs":[';
  const binaries: Buffer[] = [];
  let first = true;
  for (const name of Object.keys(request.inputs)) {
    const arr = request.inputs[name];
    json += `${first ? '' : ','}{"name":${quote(name)},"datatype":"${arr.dtype}","shape":[${arr.shape.join(',')}]`;
    first = false;
    // FP16/BF16 cannot travel as JSON: they always use the binary extension.
    if (binaryInputs || arr.dtype === 'FP16' || arr.dtype === 'BF16') {
      const bytes = tensorToBytes(arr);
      binaries.push(bytes);
      json += `,"parameters":{"binary_data_size":${bytes.length}}}`;
    } else {
      json += `,"data":${tensorToJsonText(arr, `input '${name}'`)}}`;
    }
  }
  json += ']';
  if (request.outputs) {
    json += `,"outputs":[${request.outputs.map((o) => `{"name":${quote(o)},"parameters":{"binary_data":${binaryOutputs}}}`).join(',')}]`;
  } else {
    parameters.binary_data_output = binaryOutputs;
  }
  json += `,"parameters":${parametersJson(parameters, sequenceParameters(request))}}`;
  const header = Buffer.from(json, 'utf8');
  if (binaries.length === 0) return { body: header, headers: { 'Content-Type': 'application/json' } };
  return {
    body: Buffer.concat([header, ...binaries]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': header.length },
  };
}

interface WireOutput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: { binary_data_size?: number };
  data?: unknown;
}

/** Decodes a 200 answer. Outputs written to shared memory carry no data and are left out. */
export function decodeInferResponse(res: HttpResponse): ClientInferResult {
  const headerValue = res.headers['inference-header-content-length'];
  const jsonLength = headerValue === undefined ? res.body.length : Number(headerValue);
  if (!Number.isSafeInteger(jsonLength) || jsonLength < 0 || jsonLength > res.body.length) {
    throw invalidArg(`the server's Inference-Header-Content-Length '${String(headerValue)}' does not fit its ${res.body.length}-byte answer`);
  }
  const header = parseTritonJson(res.body.toString('utf8', 0, jsonLength)) as {
    model_name: string; model_version: string; id?: string; outputs?: WireOutput[];
  };
  const outputs: Record<string, NDArray> = {};
  let offset = jsonLength;
  for (const out of header.outputs ?? []) {
    const what = `output '${out.name}'`;
    const dtype = wireDataType(out.datatype, what);
    const shape = wireShape(out.shape, what);
    const size = out.parameters?.binary_data_size;
    if (size !== undefined) {
      if (!Number.isSafeInteger(size) || size < 0 || offset + size > res.body.length) {
        throw invalidArg(`${what}: binary_data_size ${size} runs past the server's answer`);
      }
      outputs[out.name] = tensorFromBytes(what, dtype, shape, res.body.subarray(offset, offset + size));
      offset += size;
    } else if (out.data !== undefined) {
      outputs[out.name] = tensorFromJson(what, dtype, shape, out.data);
    }
  }
  return { modelName: header.model_name, modelVersion: header.model_version, id: header.id, outputs };
}
