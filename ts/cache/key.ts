/**
 * The response cache key of one request: a 128-bit hash (SHA-256, truncated) of everything that
 * can change the answer — the model's name, version and load, every input (sorted by name) with its
 * datatype, shape and bytes, the outputs the request asks for, and its custom parameters (the
 * ones the model sees; priority and timeout are the scheduler's and do not change results).
 *
 * Triton's own key (a 64-bit hash of model, version and each input's name and bytes) leaves
 * the datatype, shape, parameters and requested outputs out, so two requests with the same
 * bytes read as FP32[4] and INT32[2,2] share an answer there; here they do not.
 */
import { createHash, hash } from 'node:crypto';
import type { Parameters } from '../request';
import { NDArray, serializeBytes } from '../tensor';

/** What a request brings to the key. */
export interface KeyedRequest {
  model: string;
  version: number;
  /** Which load of the model (a reloaded model never answers from an earlier load's entries). */
  generation: number;
  inputs: Record<string, NDArray>;
  /** null = every output of the model. */
  outputs: readonly string[] | null;
  parameters: Parameters;
}

/** Requests with at most this many input bytes are hashed in one call (cheaper than a Hash object). */
const ONE_SHOT_BYTES = 4096;

function bytesOf(arr: NDArray): Uint8Array {
  if (arr.dtype === 'BYTES') return serializeBytes(arr.data as Uint8Array[]);
  const view = arr.data as ArrayBufferView;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** A string with its length before it: a sequence of these reads back one way only. */
const field = (text: string): string => `${text.length}:${text}`;

/**
 * The key as a 32-character hex string. Throws (TypeError) when an input is not an NDArray:
 * such a request is not cached, and the model's own checks report what is wrong with it.
 */
export function responseCacheKey(request: KeyedRequest): string {
  const names = Object.keys(request.inputs);
  if (names.length > 1) names.sort();
  // The structure as text, every part length-prefixed (unambiguous); each input's byte length
  // in it delimits the raw bytes hashed after it. A parameter's value carries its type.
  let header = `${field(request.model)}${request.version};${request.generation};${names.length};`;
  const data: Uint8Array[] = [];
  let dataBytes = 0;
  for (const name of names) {
    const arr = request.inputs[name];
    if (!(arr instanceof NDArray)) throw new TypeError(`input '${name}' is not an NDArray`);
    const bytes = bytesOf(arr);
    data.push(bytes);
    dataBytes += bytes.byteLength;
    header += `${field(name)}${arr.dtype};${arr.shape.join(',')};${bytes.byteLength};`;
  }
  header += request.outputs ? `${request.outputs.length};${request.outputs.map(field).join('')}` : '*;';
  const keys = Object.keys(request.parameters);
  if (keys.length > 1) keys.sort();
  header += `${keys.length};`;
  for (const k of keys) {
    const v = request.parameters[k];
    header += `${field(k)}${(typeof v)[0]}${field(String(v))}`;
  }
  if (dataBytes <= ONE_SHOT_BYTES) {
    const all = Buffer.allocUnsafe(Buffer.byteLength(header) + dataBytes);
    let at = all.write(header);
    for (const bytes of data) {
      all.set(bytes, at);
      at += bytes.byteLength;
    }
    return hash('sha256', all, 'hex').slice(0, 32);
  }
  const h = createHash('sha256').update(header);
  for (const bytes of data) h.update(bytes);
  return h.digest('hex').slice(0, 32);
}
