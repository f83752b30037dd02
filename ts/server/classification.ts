/**
 * Triton's classification extension: an output requested with `classification: N` comes back
 * as a BYTES tensor of the top N classes of each batch row, each "value:index" or
 * "value:index:label" (labels from the output's label file), values compared in the output's
 * datatype and printed as Triton prints them (6 decimals for floating point).
 */
import { describeValue } from '../describe-value';
import { invalidArg } from '../errors';
import { packStrings } from '../packed-bytes';
import { packedBytesTensor, type DataType, type NDArray, type TypedArray } from '../tensor';

/** Triton's cap on classification results per response. */
export const MAX_CLASSIFICATION_ELEMENTS = 1_000_000;

function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function bf16ToFloat(bits: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, bits << 16);
  return view.getFloat32(0);
}

/** The values as numbers or bigints, and how Triton prints them. */
function readable(dtype: DataType, data: TypedArray): { at: (i: number) => number | bigint; print: (v: number | bigint) => string } {
  const floating = dtype === 'FP16' || dtype === 'BF16' || dtype === 'FP32' || dtype === 'FP64';
  const print = floating ? (v: number | bigint) => Number(v).toFixed(6) : (v: number | bigint) => String(v);
  if (dtype === 'FP16') return { at: (i) => halfToFloat((data as Uint16Array)[i]), print };
  if (dtype === 'BF16') return { at: (i) => bf16ToFloat((data as Uint16Array)[i]), print };
  return { at: (i) => (data as ArrayLike<number | bigint>)[i], print };
}

/** One row's values: numbers as doubles (exact for every datatype but the 64-bit integers), or 64-bit integers as they are. */
type RowValues = Float64Array | BigInt64Array | BigUint64Array;

/**
 * The `k` best indices of one row, best first: larger values first, equal values by lower index,
 * NaN after every number. A heap of the k best seen so far, on typed arrays: O(n log k) steps,
 * not a sort of the whole row. Sorting every row with a comparator was 34.5 s of event-loop time
 * for one 16M-element FP32 output asked for `classification: 1` (0.8 s without).
 */
function topIndices(vals: RowValues, k: number): Int32Array {
  /** Whether value va at index a ranks before value vb at index b. */
  const before = (va: number | bigint, a: number, vb: number | bigint, b: number): boolean => {
    if (va > vb) return true;
    if (va < vb) return false;
    const aNaN = va !== va;  // NaN is the only value unequal to itself
    const bNaN = vb !== vb;
    return aNaN === bNaN ? a < b : bNaN;
  };
  // The k best so far, indices and their values side by side (no random reads of the row):
  // entry 0 is the worst of them, every other entry ranks before its parent's... children rank after.
  const index = new Int32Array(k);
  const value = new (vals.constructor as new (n: number) => RowValues)(k);
  let size = 0;
  const set = (i: number, idx: number, v: number | bigint): void => {
    index[i] = idx;
    value[i] = v as never;
  };
  /** Moves the entry (idx, v) down from slot `from` to where both its children rank before it. */
  const siftDown = (from: number, idx: number, v: number | bigint): void => {
    let i = from;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      const r = l + 1;
      const c = r < size && before(value[l], index[l], value[r], index[r]) ? r : l;
      if (!before(v, idx, value[c], index[c])) break;
      set(i, index[c], value[c]);
      i = c;
    }
    set(i, idx, v);
  };
  for (let idx = 0; idx < vals.length; idx++) {
    const v = vals[idx];
    if (size < k) {
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!before(value[parent], index[parent], v, idx)) break;
        set(i, index[parent], value[parent]);
        i = parent;
      }
      set(i, idx, v);
    } else if (before(v, idx, value[0], index[0])) {
      siftDown(0, idx, v);
    }
  }
  // Taking the worst off k times fills the answer from its end.
  const out = new Int32Array(size);
  while (size > 0) {
    out[size - 1] = index[0];
    size--;
    if (size > 0) siftDown(0, index[size], value[size]);
  }
  return out;
}

/**
 * Top `count` classes of each row of `output` (`batched`: the first dim is the batch).
 * `labels[i]` names class i when the output has a label file.
 */
export function classify(output: NDArray, count: unknown, batched: boolean, labels: readonly string[] | undefined, what: string): NDArray {
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count <= 0) {
    throw invalidArg(`${what}: classification must be a positive integer, got ${describeValue(count)}`);
  }
  if (output.dtype === 'BYTES') throw invalidArg(`${what}: classification is not supported for BYTES outputs`);
  const rows = batched ? output.rows : 1;
  const perRow = rows === 0 ? 0 : output.size / rows;
  const k = Math.min(count, perRow);
  if (rows * k > MAX_CLASSIFICATION_ELEMENTS) {
    throw invalidArg(`${what}: classification would return ${rows * k} elements, more than ${MAX_CLASSIFICATION_ELEMENTS}`);
  }
  const { at, print } = readable(output.dtype, output.data as TypedArray);
  const data = output.data as TypedArray;
  const wide = data instanceof BigInt64Array || data instanceof BigUint64Array;
  const results: string[] = [];
  for (let row = 0; row < rows; row++) {
    const base = row * perRow;
    let vals: RowValues;
    if (wide) vals = data.subarray(base, base + perRow);
    else if (output.dtype === 'FP16' || output.dtype === 'BF16') vals = Float64Array.from({ length: perRow }, (_, i) => at(base + i) as number);
    else vals = new Float64Array((data as Exclude<TypedArray, BigInt64Array | BigUint64Array>).subarray(base, base + perRow));
    for (const index of topIndices(vals, k)) {
      const label = labels?.[index];
      results.push(`${print(at(base + index))}:${index}${label ? `:${label}` : ''}`);
    }
  }
  // Written straight into wire form: no Buffer per result (ts/packed-bytes.ts).
  const shape = batched ? [rows, k] : [k];
  return packedBytesTensor(shape, packStrings(results), what);
}
