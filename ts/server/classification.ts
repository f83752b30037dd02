/**
 * Triton's classification extension: an output requested with `classification: N` comes back
 * as a BYTES tensor of the top N classes of each batch row, each "value:index" or
 * "value:index:label" (labels from the output's label file), values compared in the output's
 * datatype and printed as Triton prints them (6 decimals for floating point).
 */
import { describeValue } from '../describe-value';
import { invalidArg } from '../errors';
import { NDArray, type DataType, type TypedArray } from '../tensor';

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
  const results: Buffer[] = [];
  const order = Array.from({ length: perRow }, (_, i) => i);
  for (let row = 0; row < rows; row++) {
    const base = row * perRow;
    order.sort((a, b) => {
      const va = at(base + a);
      const vb = at(base + b);
      return va > vb ? -1 : va < vb ? 1 : a - b;
    });
    for (let j = 0; j < k; j++) {
      const index = order[j];
      const label = labels?.[index];
      results.push(Buffer.from(`${print(at(base + index))}:${index}${label ? `:${label}` : ''}`));
    }
    for (let i = 0; i < perRow; i++) order[i] = i;
  }
  return new NDArray('BYTES', batched ? [rows, k] : [k], results);
}
