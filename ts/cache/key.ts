/**
 * The response cache key of one request: a 128-bit hash of everything that can change the answer
 * — the model's name, version and load, every input (sorted by name) with its datatype, shape and
 * bytes, the outputs the request asks for, and its custom parameters (the ones the model sees;
 * priority and timeout are the scheduler's and do not change results).
 *
 * Triton's own key (a 64-bit hash of model, version and each input's name and bytes) leaves
 * the datatype, shape, parameters and requested outputs out, so two requests with the same
 * bytes read as FP32[4] and INT32[2,2] share an answer there; here they do not.
 *
 * The hash is XXH3-128 (cpp/core/hash128.h, native `hash128`, reading the inputs in place): the
 * key of a 256 KiB input costs about 13 µs (20 GB/s) where SHA-256 cost about 175 µs, more than
 * the identity model's whole round trip (bench/results/cache.md). It is NOT cryptographic:
 *  - Accidental collisions (two different requests, one key, so one gets the other's answer)
 *    are as unlikely as for any 128-bit hash: about n²/2¹²⁹ for n distinct requests, nil in
 *    practice (Triton's 64-bit key is 2⁶⁴ times likelier to collide).
 *  - Crafted collisions are the risk: a client that can choose a request with the same key as
 *    another client's could read that client's cached answer (its request arriving second) or
 *    poison it (arriving first: its answer is then served for the other's request). With a
 *    known secret, XXH3 collisions are easy to construct (its long-input rounds are nearly
 *    linear in the data). So the hash is keyed with a 192-byte secret drawn from the OS's
 *    random source once per process, never logged or sent: a client cannot compute keys, and
 *    no way to craft a collision without the secret is known. That is weaker than a MAC or a
 *    collision-resistant hash (XXH3 was not designed or analysed against adversaries); a
 *    deployment whose clients must be isolated from each other should not share a cached model
 *    between them (or verify inputs on a hit).
 * Keys therefore differ between processes (the cache is in-process; nothing persists them).
 */
import type { Parameters } from '../request';
import { native } from '../native';
import { NDArray, bytesOfTensor } from '../tensor';

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

/** The bytes an input contributes: the view itself (read in place by native code), BYTES serialized. */
function bytesOf(arr: NDArray): ArrayBufferView {
  if (arr.dtype === 'BYTES') return bytesOfTensor(arr);
  return arr.data as ArrayBufferView;
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
  // parts[0] is the header, then each input's bytes in the header's order.
  const parts: (string | ArrayBufferView)[] = [''];
  for (const name of names) {
    const arr = request.inputs[name];
    if (!(arr instanceof NDArray)) throw new TypeError(`input '${name}' is not an NDArray`);
    const bytes = bytesOf(arr);
    parts.push(bytes);
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
  parts[0] = header;
  return native().hash128(parts);
}
