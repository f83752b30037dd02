/**
 * Tensors on the wire, shared by the HTTP and gRPC frontends: raw little-endian bytes (the
 * binary extension, gRPC raw contents, shared memory) and JSON values. Every size is checked
 * before anything is allocated; raw bytes become views, never decoded element by element
 * (a copy happens only when the bytes are not aligned for their TypedArray).
 */
import { clipShape, invalidArg, type InferenceServerError } from '../errors';
import { markedInteger } from './big-integers';
import { describeText, describeValue } from '../describe-value';
import {
  DATA_TYPES, NDArray, bytesOfTensor, bytesTensorSize, dataTypeByteSize, elementCount, forEachBytesElement,
  packedBytesTensor, typedArrayFor, type DataType, type TypedArray,
} from '../tensor';
import { packStrings } from '../packed-bytes';

/** A datatype name exactly as the protocol spells it ('FP32', 'BYTES', ...). */
export function wireDataType(value: unknown, what: string): DataType {
  if (typeof value !== 'string' || !(DATA_TYPES as readonly string[]).includes(value)) {
    throw invalidArg(`invalid datatype '${describeText(value)}' for ${what}: expected one of ${DATA_TYPES.join(', ')}`);
  }
  return value as DataType;
}

/** Triton counts elements and bytes in int64; beyond this its overflow texts apply. */
const INT64_MAX = (1n << 63n) - 1n;

/**
 * A shape as the protocol carries it: a list of non-negative integers whose element count
 * JavaScript holds exactly. Given the datatype, a shape whose element count or byte size passes
 * int64 is refused with Triton's texts (a JSON dim past 2^53 arrives rounded to a double, which
 * still decides that); one within int64 but past 2^53 elements is refused with our own limit.
 */
export function wireShape(value: unknown, what: string, int64Strings = false, dtype?: DataType): number[] {
  if (!Array.isArray(value)) throw invalidArg(`shape of ${what} must be a list of integers`);
  // gRPC's int64 dims arrive as decimal strings; in JSON a dim must be a number (as Triton).
  const shape = int64Strings ? value.map((d) => (typeof d === 'string' && /^[0-9]+$/.test(d) ? Number(d) : d)) : value;
  for (const d of shape) {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0) {
      // Triton's HTTP text names its JSON reader's complaint; ours follows it.
      const triton = int64Strings ? '' : "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer: ";
      throw invalidArg(`${triton}invalid dimension ${describeValue(d)} in the shape of ${what}`);
    }
  }
  const dims = shape as number[];
  const exactCount = dims.reduce((a, d) => a * BigInt(d), 1n);
  if (exactCount > INT64_MAX) {
    throw invalidArg(`invalid shape for ${what}: shape ${clipShape(dims)} causes total element count to exceed ` +
      `maximum size of ${INT64_MAX}`);
  }
  const typeSize = dtype === undefined || dtype === 'BYTES' ? 0 : dataTypeByteSize(dtype);
  if (typeSize > 1 && exactCount > INT64_MAX / BigInt(typeSize)) {
    throw invalidArg(`byte size overflow for ${what}: element count (${exactCount}) * data type size (${typeSize}) ` +
      `exceeds maximum allowed size (${INT64_MAX})`);
  }
  if (!dims.every(Number.isSafeInteger) || exactCount > BigInt(Number.MAX_SAFE_INTEGER)) {
    // Triton's text, with the limit of what JavaScript counts exactly.
    throw invalidArg(`invalid shape for ${what}: shape ${clipShape(dims)} causes total element count to exceed ` +
      `maximum size of ${Number.MAX_SAFE_INTEGER}`);
  }
  return dims;
}

/**
 * The tensor whose data are `bytes` (row-major, little-endian; BYTES length-prefixed, kept in
 * that form: ts/packed-bytes.ts).
 */
export function tensorFromBytes(what: string, dtype: DataType, shape: number[], bytes: Uint8Array): NDArray {
  if (dtype === 'BYTES') return packedBytesTensor(shape, bytes, what);
  const count = elementCount(shape);
  const size = dataTypeByteSize(dtype);
  checkByteSize(what, dtype, shape, bytes.byteLength);
  const Ctor = typedArrayFor(dtype);
  if (bytes.byteOffset % size === 0) return new NDArray(dtype, shape, new Ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset, count));
  const aligned = new Ctor(count);
  new Uint8Array(aligned.buffer).set(bytes);
  return new NDArray(dtype, shape, aligned);
}

/** INVALID_ARG unless `byteSize` is what a `dtype` tensor of `shape` holds (not BYTES). */
export function checkByteSize(what: string, dtype: DataType, shape: number[], byteSize: number): void {
  const needed = elementCount(shape) * dataTypeByteSize(dtype);
  if (byteSize !== needed) {
    throw invalidArg(`unexpected byte size for ${what}: ${dtype} tensor of shape ${clipShape(shape)} needs ` +
      `${needed} bytes, got ${byteSize}`);
  }
}

/** The bytes of a tensor as the wire carries them: a view for numeric data, serialized BYTES. */
export function tensorToBytes(arr: NDArray): Buffer {
  if (arr.dtype === 'BYTES') {
    const bytes = bytesOfTensor(arr);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  const data = arr.data as TypedArray;
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** Byte size of a tensor on the wire. */
export function wireByteSize(arr: NDArray): number {
  return arr.dtype === 'BYTES' ? bytesTensorSize(arr) : (arr.data as TypedArray).byteLength;
}

/** Flattens nested JSON arrays row-major, refusing more than `limit` elements. */
/** Triton's HTTP_MAX_JSON_NESTING_DEPTH for tensor data, with its error text. */
const MAX_JSON_NESTING_DEPTH = 100;

/**
 * Data that do not fill the shape exactly: Triton's text (its L0_http looks for it), then which
 * input and by how much.
 */
function shapeMismatch(what: string, detail: string): InferenceServerError {
  return invalidArg(`Unable to parse 'data': Shape does not match true shape of 'data' field (${what}: ${detail})`);
}

function flatten(data: unknown, limit: number, what: string): unknown[] {
  if (!Array.isArray(data)) throw invalidArg(`data of ${what} must be a list`);
  if (!data.some(Array.isArray)) {
    if (data.length > limit) throw shapeMismatch(what, `more data elements than its shape holds (${limit})`);
    return data;
  }
  const out: unknown[] = [];
  const walk = (value: unknown[], depth: number): void => {
    if (depth >= MAX_JSON_NESTING_DEPTH) {
      throw invalidArg(`JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_NESTING_DEPTH}) (data of ${what})`);
    }
    for (const v of value) {
      if (Array.isArray(v)) walk(v, depth + 1);
      else if (out.push(v) > limit) throw shapeMismatch(what, `more data elements than its shape holds (${limit})`);
    }
  };
  walk(data, 0);
  return out;
}

function numberAt(values: unknown[], i: number, what: string, dtype: DataType): number {
  const v = values[i];
  if (typeof v !== 'number') {
    throw invalidArg(`${what}: element ${i} is ${describeValue(v)}, expected a number for datatype ${dtype}`);
  }
  return v;
}

function integerAt(values: unknown[], i: number, what: string, dtype: DataType): number {
  const v = numberAt(values, i, what, dtype);
  if (!Number.isSafeInteger(v)) {
    throw invalidArg(`${what}: element ${i} (${v}) is not an exact integer for datatype ${dtype}` +
      (Number.isInteger(v) ? '; send 64-bit values beyond 2^53 with the binary extension' : ''));
  }
  return v;
}

/** `values` with element i a plain number again if the HTTP parser marked it (ts/server/big-integers.ts). */
function unmarked(values: unknown[], i: number): unknown[] {
  const literal = markedInteger(values[i]);
  if (literal !== null) values[i] = Number(literal);
  return values;
}

const INT64_RANGE: Record<string, [bigint, bigint]> = {
  INT64: [-(1n << 63n), (1n << 63n) - 1n],
  UINT64: [0n, (1n << 64n) - 1n],
};

/** An INT64/UINT64 element exactly: a safe integer, or a long literal the HTTP parser kept exact. */
function int64At(values: unknown[], i: number, what: string, dtype: DataType): bigint {
  const literal = markedInteger(values[i]);
  if (literal === null) return BigInt(integerAt(values, i, what, dtype));
  const v = BigInt(literal);
  const [min, max] = INT64_RANGE[dtype];
  if (v < min || v > max) throw invalidArg(`${what}: element ${i} (${literal}) is out of range for datatype ${dtype}`);
  return v;
}

/** The tensor whose data are JSON values (flat or nested); FP16/BF16 need the binary form. */
export function tensorFromJson(what: string, dtype: DataType, shape: number[], data: unknown): NDArray {
  if (dtype === 'FP16' || dtype === 'BF16') {
    throw invalidArg(`${what}: sending ${dtype} data via JSON is not supported, use the binary tensor data extension`);
  }
  const count = elementCount(shape);
  const values = flatten(data, count, what);
  if (values.length !== count) {
    throw shapeMismatch(what, `shape ${clipShape(shape)} holds ${count} elements, data has ${values.length}`);
  }
  if (dtype === 'BYTES') {
    for (let i = 0; i < count; i++) {
      const v = markedInteger(values[i]) !== null ? unmarked(values, i)[i] : values[i];
      if (typeof v !== 'string') throw invalidArg(`${what}: element ${i} is ${describeValue(v)}, expected a string for BYTES`);
    }
    // Written into one buffer: no Buffer per element (ts/packed-bytes.ts).
    return packedBytesTensor(shape, packStrings(values as string[]), what);
  }
  if (dtype === 'BOOL') {
    const out = new Uint8Array(count);
    for (let i = 0; i < count; i++) {
      const v = unmarked(values, i)[i];
      if (typeof v !== 'boolean') throw invalidArg(`${what}: element ${i} is ${describeValue(v)}, expected true or false for BOOL`);
      out[i] = v ? 1 : 0;
    }
    return new NDArray('BOOL', shape, out);
  }
  const out = new (typedArrayFor(dtype))(count);
  if (out instanceof BigInt64Array || out instanceof BigUint64Array) {
    for (let i = 0; i < count; i++) out[i] = int64At(values, i, what, dtype);
  } else if (dtype === 'FP32' || dtype === 'FP64') {
    for (let i = 0; i < count; i++) out[i] = numberAt(unmarked(values, i), i, what, dtype);
  } else {
    const probe = new (typedArrayFor(dtype))(1) as Exclude<TypedArray, BigInt64Array | BigUint64Array>;
    for (let i = 0; i < count; i++) {
      const v = integerAt(unmarked(values, i), i, what, dtype);
      probe[0] = v;
      if (probe[0] !== v) throw invalidArg(`${what}: element ${i} (${v}) is out of range for datatype ${dtype}`);
      (out as typeof probe)[i] = v;
    }
  }
  return new NDArray(dtype, shape, out);
}

/**
 * A JSON number. JSON has no NaN or Infinity: as Triton (RapidJSON's kWriteNanAndInfFlag) they are
 * written as the bare tokens NaN, Infinity and -Infinity, which Python's json and tritonclient
 * read, and so does infernode's client (ts/client/triton-json.ts).
 */
function jsonNumber(v: number): string {
  return Number.isFinite(v) ? String(v) : Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
}

/**
 * The tensor's data as a flat JSON array (text), written directly: BOOL as true/false, BYTES as
 * UTF-8 strings, 64-bit integers exactly. FP16/BF16 cannot travel as JSON.
 */
export function tensorToJsonText(arr: NDArray, what: string): string {
  switch (arr.dtype) {
    case 'FP16':
    case 'BF16':
      throw invalidArg(`${what}: receiving ${arr.dtype} data via JSON is not supported, request it as binary data`);
    case 'BYTES':
      return bytesToJsonText(arr);
    case 'BOOL': {
      const parts = new Array<string>(arr.size);
      for (let i = 0; i < arr.size; i++) parts[i] = (arr.data as Uint8Array)[i] ? 'true' : 'false';
      return `[${parts.join(',')}]`;
    }
    case 'FP32':
    case 'FP64': {
      const data = arr.data as Float32Array | Float64Array;
      const parts = new Array<string>(data.length);
      for (let i = 0; i < data.length; i++) parts[i] = jsonNumber(data[i]);
      return `[${parts.join(',')}]`;
    }
    default:
      return `[${Array.prototype.join.call(arr.data, ',')}]`;
  }
}

/** Elements per piece of a BYTES tensor's JSON text: the strings of one piece are garbage once it is written. */
const JSON_PIECE_ELEMENTS = 1 << 16;

/** A BYTES tensor as a JSON array of UTF-8 strings, made piece by piece without a Buffer per element. */
function bytesToJsonText(arr: NDArray): string {
  const pieces: string[] = [];
  let piece: string[] = [];
  forEachBytesElement(arr, (buf, start, end) => {
    piece.push(buf.toString('utf8', start, end));
    if (piece.length === JSON_PIECE_ELEMENTS) {
      pieces.push(JSON.stringify(piece).slice(1, -1));
      piece = [];
    }
  });
  if (piece.length > 0) pieces.push(JSON.stringify(piece).slice(1, -1));
  return `[${pieces.join(',')}]`;
}

/** The tensor's data as JS values (for typed gRPC contents and the generic clients). */
export function tensorToValues(arr: NDArray): (number | bigint | boolean | Buffer)[] {
  if (arr.dtype === 'BYTES') return (arr.data as Uint8Array[]).map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength));
  if (arr.dtype === 'BOOL') return Array.from(arr.data as Uint8Array, (v) => v !== 0);
  return Array.from(arr.data as ArrayLike<number | bigint>);
}
