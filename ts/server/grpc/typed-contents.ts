/**
 * Typed `InferTensorContents` → tensors (request inputs; response outputs of servers that send them). Each datatype has exactly one contents field (Triton's
 * rule: INT8/INT16/INT32 in int_contents, UINT8/UINT16/UINT32 in uint_contents, BYTES in
 * bytes_contents, FP16/BF16 in none); data in any other field is refused with a message naming
 * both. Narrow integer types are range-checked rather than silently truncated, as the HTTP
 * frontend's JSON path does.
 */
import { clipShape, invalidArg } from '../../errors';
import { PackedBytes } from '../../packed-bytes';
import { NDArray, elementCount, packedBytesTensor, type DataType, type TypedArray } from '../../tensor';
import type { TensorContents } from './infer-codec';

type ContentsField = keyof TensorContents;

/** The contents field that carries each datatype (none for FP16/BF16). */
export const CONTENTS_FIELD: Record<DataType, ContentsField | null> = {
  BOOL: 'bool_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  FP16: null,
  BF16: null,
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
};

const NARROW: Partial<Record<DataType, { Ctor: new (n: number) => TypedArray; min: number; max: number }>> = {
  INT8: { Ctor: Int8Array, min: -128, max: 127 },
  INT16: { Ctor: Int16Array, min: -32768, max: 32767 },
  UINT8: { Ctor: Uint8Array, min: 0, max: 255 },
  UINT16: { Ctor: Uint16Array, min: 0, max: 65535 },
};

function narrow(values: Int32Array | Uint32Array, dtype: DataType, what: string): TypedArray {
  const spec = NARROW[dtype];
  if (!spec) return values;
  const out = new spec.Ctor(values.length) as Int8Array;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v < spec.min || v > spec.max) throw invalidArg(`${what}: element ${i} (${v}) is out of range for datatype ${dtype}`);
    out[i] = v;
  }
  return out;
}

/** The tensor typed contents describe, after checking field, element count and ranges. */
export function tensorFromContents(what: string, dtype: DataType, shape: number[], contents: TensorContents): NDArray {
  const expected = CONTENTS_FIELD[dtype];
  for (const field of Object.keys(contents) as ContentsField[]) {
    if (field === expected) continue;
    throw invalidArg(`unexpected explicit tensor data for ${what}: got ${field}, but datatype ${dtype} ` +
      (expected ? `takes its typed contents in ${expected}` : 'has no typed contents field; send it in raw_input_contents'));
  }
  const count = elementCount(shape);
  if (expected === null) {
    if (count === 0) return new NDArray(dtype, shape, new Uint16Array(0));
    throw invalidArg(`${what}: datatype ${dtype} has no typed contents field; send it in raw_input_contents`);
  }
  const values = contents[expected];
  const got = values instanceof PackedBytes ? values.count : values?.length ?? 0;
  // The codec keeps only the count of a field that does not match the shape (Miscounted).
  if (got !== count || (values !== undefined && 'miscounted' in values)) {
    throw invalidArg(`${what}: shape ${clipShape(shape)} holds ${count} elements, ${expected} has ${got}`);
  }
  // bytes_contents arrive in wire form (the codec packs them): no Buffer per element.
  if (dtype === 'BYTES') return values instanceof PackedBytes ? packedBytesTensor(shape, values.bytes, what) : new NDArray('BYTES', shape, []);
  if (!values) return new NDArray(dtype, shape, new (NARROW[dtype]?.Ctor ?? emptyCtor(dtype))(0));
  if (dtype === 'BOOL') return new NDArray('BOOL', shape, values as Uint8Array);
  return new NDArray(dtype, shape, narrow(values as Int32Array, dtype, what));
}

function emptyCtor(dtype: DataType): new (n: number) => TypedArray {
  switch (dtype) {
    case 'INT32': return Int32Array;
    case 'UINT32': return Uint32Array;
    case 'INT64': return BigInt64Array;
    case 'UINT64': return BigUint64Array;
    case 'FP32': return Float32Array;
    case 'FP64': return Float64Array;
    default: return Uint8Array;
  }
}
