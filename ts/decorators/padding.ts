/**
 * Array construction for the decorators: padding to a larger shape (`ConstantPadder`),
 * repeating the last row (`padBatch`) and tiling along a new batch axis (`fillOptionals`).
 */
import { NDArray, elementCount, type DataType, type TypedArray } from '../tensor';
import { EMPTY_BYTES, rowSizeOf, sameKind } from './util';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half-precision bits of `value` (round to nearest). */
export function float16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    if ((m >>> (shift - 1)) & 1) half++;
    return sign | half;
  }
  let half = sign | (e << 10) | (mant >>> 13);
  if (mant & 0x1000) half++;
  return half;
}

/** bfloat16 bits of `value` (round to nearest even). */
export function bfloat16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0];
  if (Number.isNaN(value)) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** `value` as an element of a `dtype` array. */
function elementOf(dtype: DataType, value: number | bigint): number | bigint {
  switch (dtype) {
    case 'INT64':
    case 'UINT64':
      return typeof value === 'bigint' ? value : BigInt(Math.trunc(value));
    case 'FP16':
      return float16Bits(Number(value));
    case 'BF16':
      return bfloat16Bits(Number(value));
    case 'BOOL':
      return Number(value) !== 0 ? 1 : 0;
    default:
      return Number(value);
  }
}

/** An array of `dtype` and `shape` filled with `value` (empty byte strings for BYTES). */
function filled(dtype: DataType, like: NDArray, shape: number[], value: number | bigint): NDArray {
  const count = elementCount(shape);
  const data = sameKind(like, count);
  if (Array.isArray(data)) data.fill(EMPTY_BYTES);
  else (data as Float64Array).fill(elementOf(dtype, value) as number);
  return new NDArray(dtype, shape, data);
}

/**
 * `arr` (shape `[rows, ...dims]`) padded at the end of every non-batch axis to
 * `[rows, ...target]` with `value`; `arr` itself when it already has that shape.
 */
export function padArray(arr: NDArray, target: readonly number[], value: number | bigint): NDArray {
  const dims = arr.shape.slice(1);
  if (dims.every((d, i) => d === target[i])) return arr;
  const shape = [arr.rows, ...target];
  const out = filled(arr.dtype, arr, shape, value);
  // Copy the source's innermost runs: walk its indices without the last axis (an odometer).
  const srcShape = arr.shape;
  const last = srcShape[srcShape.length - 1];
  if (last === 0 || arr.size === 0) return out;
  const strides = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) strides[i] = strides[i + 1] * shape[i + 1];
  const index = new Array<number>(srcShape.length - 1).fill(0);
  const runs = arr.size / last;
  for (let run = 0; run < runs; run++) {
    let offset = 0;
    for (let i = 0; i < index.length; i++) offset += index[i] * strides[i];
    if (Array.isArray(arr.data)) {
      const dst = out.data as Uint8Array[];
      for (let k = 0; k < last; k++) dst[offset + k] = arr.data[run * last + k];
    } else {
      (out.data as Float64Array).set((arr.data as TypedArray).subarray(run * last, (run + 1) * last) as Float64Array, offset);
    }
    for (let i = index.length - 1; i >= 0; i--) {
      if (++index[i] < srcShape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

/** `arr` with its last row repeated until it has `rows` rows (PyTriton's `pad_batch`). */
export function repeatLastRow(arr: NDArray, rows: number): NDArray {
  const n = arr.rows;
  if (n === 0 || n >= rows || arr.shape.length === 0) return arr;
  const rowSize = rowSizeOf(arr);
  const data = sameKind(arr, rows * rowSize);
  if (Array.isArray(data)) {
    const src = arr.data as Uint8Array[];
    for (let i = 0; i < n * rowSize; i++) data[i] = src[i];
    for (let r = n; r < rows; r++) {
      for (let k = 0; k < rowSize; k++) data[r * rowSize + k] = src[(n - 1) * rowSize + k];
    }
  } else {
    const src = arr.data as TypedArray;
    (data as Float64Array).set(src as Float64Array);
    for (let r = n; r < rows; r++) (data as Float64Array).copyWithin(r * rowSize, (n - 1) * rowSize, n * rowSize);
  }
  return new NDArray(arr.dtype, [rows, ...arr.shape.slice(1)], data);
}

/** `value` (no batch axis) repeated `rows` times along a new batch axis (`np.tile`). */
export function tileRows(value: NDArray, rows: number): NDArray {
  const size = value.size;
  const data = sameKind(value, rows * size);
  if (Array.isArray(data)) {
    const src = value.data as Uint8Array[];
    for (let i = 0; i < rows * size; i++) data[i] = src[i % size];
  } else {
    for (let r = 0; r < rows; r++) (data as Float64Array).set(value.data as Float64Array, r * size);
  }
  return new NDArray(value.dtype, [rows, ...value.shape], data);
}
