/**
 * 64-bit integers in JSON tensor data, read exactly as Triton reads them: JSON.parse turns
 * integers beyond 2^53 into the nearest double, so before parsing, integer literals of 16 digits
 * or more (outside strings) are wrapped as marked strings; the tensor decoder turns marks into
 * BigInts for INT64/UINT64 data, shared-memory offsets and byte sizes read them exactly (as
 * Triton's size_t), and every mark elsewhere goes back to the number JSON.parse would have
 * made. Text without such a literal is parsed as is (a regex test, nothing more). The marking
 * itself lives in ts/exact-json.ts, which model configs use too.
 */

import { markedInteger } from '../exact-json';

export { markBigIntegers, markedInteger } from '../exact-json';

/**
 * Marks outside `keep` (the tensors' data arrays, which the decoder reads, and single values
 * such as a shared-memory offset) turned back into numbers, so every other field sees what
 * JSON.parse gives.
 */
export function unmarkOutside(value: unknown, keep: (path: readonly (string | number)[]) => boolean,
  path: (string | number)[] = []): unknown {
  const literal = markedInteger(value);
  if (literal !== null) return keep(path) ? value : Number(literal);
  if (value === null || typeof value !== 'object' || keep(path)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unmarkOutside(value[i], keep, [...path, i]);
  } else {
    for (const key of Object.keys(value)) {
      (value as Record<string, unknown>)[key] = unmarkOutside((value as Record<string, unknown>)[key], keep, [...path, key]);
    }
  }
  return value;
}
