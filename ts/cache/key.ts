/**
 * The response cache key of one request: a 128-bit hash (SHA-256, truncated) of everything that
 * can change the answer — the model's name and version, every input (sorted by name) with its
 * datatype, shape and bytes, the outputs the request asks for, and its custom parameters (the
 * ones the model sees; priority and timeout are the scheduler's and do not change results).
 *
 * Triton's own key (a 64-bit hash of model, version and each input's name and bytes) leaves
 * the datatype, shape, parameters and requested outputs out, so two requests with the same
 * bytes read as FP32[4] and INT32[2,2] share an answer there; here they do not.
 */
import { createHash } from 'node:crypto';
import type { Parameters } from '../request';
import { NDArray, serializeBytes } from '../tensor';

/** What a request brings to the key. */
export interface KeyedRequest {
  model: string;
  version: number;
  inputs: Record<string, NDArray>;
  /** null = every output of the model. */
  outputs: readonly string[] | null;
  parameters: Parameters;
}

function bytesOf(arr: NDArray): Uint8Array {
  if (arr.dtype === 'BYTES') return serializeBytes(arr.data as Uint8Array[]);
  const view = arr.data as ArrayBufferView;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/**
 * The key as a 32-character hex string. Throws (TypeError) when an input is not an NDArray:
 * such a request is not cached, and the model's own checks report what is wrong with it.
 */
export function responseCacheKey(request: KeyedRequest): string {
  const names = Object.keys(request.inputs).sort();
  const data = names.map((name) => {
    const arr = request.inputs[name];
    if (!(arr instanceof NDArray)) throw new TypeError(`input '${name}' is not an NDArray`);
    return bytesOf(arr);
  });
  // JSON of the structure is unambiguous (strings quoted, numbers and booleans typed), and
  // each input's byte length in it delimits the raw bytes hashed after it.
  const header = JSON.stringify([
    request.model,
    request.version,
    names.map((name, i) => [name, request.inputs[name].dtype, request.inputs[name].shape, data[i].byteLength]),
    request.outputs,
    Object.keys(request.parameters).sort().map((k) => [k, request.parameters[k]]),
  ]);
  const hash = createHash('sha256').update(header);
  for (const bytes of data) hash.update(bytes);
  return hash.digest('hex').slice(0, 32);
}
