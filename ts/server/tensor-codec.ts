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

/** Triton's HTTP_MAX_JSON_NESTING_DEPTH for tensor data, with its error text. */
export const MAX_JSON_NESTING_DEPTH = 100;

export function tooDeep(what: string): InferenceServerError {
  return invalidArg(`JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_NESTING_DEPTH}) (data of ${what})`);
}

/**
 * Data that do not fill the shape exactly: Triton's text (its L0_http looks for it), then which
 * input and by how much.
 */
function shapeMismatch(what: string, detail: string): InferenceServerError {
  return invalidArg(`Unable to parse 'data': Shape does not match true shape of 'data' field (${what}: ${detail})`);
}

export function tooManyElements(what: string, limit: number): InferenceServerError {
  return shapeMismatch(what, `more data elements than its shape holds (${limit})`);
}

export function elementCountMismatch(what: string, shape: number[], count: number, found: number): InferenceServerError {
  return shapeMismatch(what, `shape ${clipShape(shape)} holds ${count} elements, data has ${found}`);
}

/** Flattens nested JSON arrays row-major, refusing more than `limit` elements. */
function flatten(data: unknown, limit: number, what: string): unknown[] {
  if (!Array.isArray(data)) throw invalidArg(`data of ${what} must be a list`);
  let nested = false;
  for (let i = 0; i < data.length && !nested; i++) nested = Array.isArray(data[i]);
  if (!nested) {
    if (data.length > limit) throw tooManyElements(what, limit);
    return data;
  }
  const out: unknown[] = [];
  const walk = (value: unknown[], depth: number): void => {
    if (depth >= MAX_JSON_NESTING_DEPTH) throw tooDeep(what);
    for (const v of value) {
      if (Array.isArray(v)) walk(v, depth + 1);
      else if (out.push(v) > limit) throw tooManyElements(what, limit);
    }
  };
  walk(data, 0);
  return out;
}

function numberAt(v: unknown, i: number, what: string, dtype: DataType): number {
  if (typeof v !== 'number') {
    throw invalidArg(`${what}: element ${i} is ${describeValue(v)}, expected a number for datatype ${dtype}`);
  }
  return v;
}

function integerAt(v: unknown, i: number, what: string, dtype: DataType): number {
  const n = numberAt(v, i, what, dtype);
  if (!Number.isSafeInteger(n)) {
    throw invalidArg(`${what}: element ${i} (${n}) is not an exact integer for datatype ${dtype}` +
      (Number.isInteger(n) ? '; send 64-bit values beyond 2^53 with the binary extension' : ''));
  }
  return n;
}

/** `v` a plain number again if the HTTP parser marked it (ts/server/big-integers.ts). */
function unmarked(v: unknown): unknown {
  if (typeof v !== 'string') return v;  // most values: no call through the module's re-export
  const literal = markedInteger(v);
  return literal !== null ? Number(literal) : v;
}

const INT64_RANGE: Record<string, [bigint, bigint]> = {
  INT64: [-(1n << 63n), (1n << 63n) - 1n],
  UINT64: [0n, (1n << 64n) - 1n],
};

/**
 * An INT64/UINT64 element exactly: a safe integer, or a long literal the HTTP parser kept exact.
 * Both are checked against the range: a BigUint64Array stores -1n as 2^64 - 1, so UINT64 data
 * of -1 became 18446744073709551615 while -12345678901234567 was refused (Triton refuses both).
 */
function int64At(v: unknown, i: number, what: string, dtype: DataType): bigint {
  const literal = markedInteger(v);
  const n = literal === null ? BigInt(integerAt(v, i, what, dtype)) : BigInt(literal);
  const [min, max] = INT64_RANGE[dtype];
  if (n < min || n > max) throw invalidArg(`${what}: element ${i} (${literal ?? n}) is out of range for datatype ${dtype}`);
  return n;
}

/** INVALID_ARG for the datatypes JSON cannot carry in a request. */
export function checkJsonDataType(what: string, dtype: DataType): void {
  if (dtype === 'FP16' || dtype === 'BF16') {
    throw invalidArg(`${what}: sending ${dtype} data via JSON is not supported, use the binary tensor data extension`);
  }
}

/**
 * Stores `values[0, n)`, JSON values of a numeric or BOOL tensor (a mark for a long integer), as
 * its elements `first` on, each checked as the datatype needs: one call per batch of values, the
 * loop inside it per datatype.
 */
export type ElementWriter = (values: readonly unknown[], n: number, first: number) => void;

/**
 * The array a numeric or BOOL tensor of `count` elements is read into, and the writer that
 * fills it (every JSON reader of tensor data uses it).
 */
export function jsonElementWriter(what: string, dtype: Exclude<DataType, 'BYTES'>, count: number): { out: TypedArray; write: ElementWriter } {
  if (dtype === 'BOOL') {
    const out = new Uint8Array(count);
    return {
      out,
      write: (values, n, first) => {
        for (let k = 0; k < n; k++) {
          const b = unmarked(values[k]);
          if (typeof b !== 'boolean') throw invalidArg(`${what}: element ${first + k} is ${describeValue(b)}, expected true or false for BOOL`);
          out[first + k] = b ? 1 : 0;
        }
      },
    };
  }
  const out = new (typedArrayFor(dtype))(count);
  if (out instanceof BigInt64Array || out instanceof BigUint64Array) {
    return { out, write: (values, n, first) => { for (let k = 0; k < n; k++) out[first + k] = int64At(values[k], first + k, what, dtype); } };
  }
  const numbers = out as Exclude<TypedArray, BigInt64Array | BigUint64Array>;
  if (dtype === 'FP32' || dtype === 'FP64') {
    return { out, write: (values, n, first) => { for (let k = 0; k < n; k++) numbers[first + k] = numberAt(unmarked(values[k]), first + k, what, dtype); } };
  }
  const probe = new (typedArrayFor(dtype))(1) as typeof numbers;
  return {
    out,
    write: (values, n, first) => {
      for (let k = 0; k < n; k++) {
        const v = integerAt(unmarked(values[k]), first + k, what, dtype);
        probe[0] = v;
        if (probe[0] !== v) throw invalidArg(`${what}: element ${first + k} (${v}) is out of range for datatype ${dtype}`);
        numbers[first + k] = v;
      }
    },
  };
}

/** A BYTES tensor of the (flattened, counted) JSON values, each of which must be a string. */
export function bytesTensorFromJson(what: string, shape: number[], values: unknown[]): NDArray {
  for (let i = 0; i < values.length; i++) {
    const v = unmarked(values[i]);
    if (typeof v !== 'string') throw invalidArg(`${what}: element ${i} is ${describeValue(v)}, expected a string for BYTES`);
  }
  // Written into one buffer: no Buffer per element (ts/packed-bytes.ts).
  return packedBytesTensor(shape, packStrings(values as string[]), what);
}

/** The tensor whose data are JSON values (flat or nested); FP16/BF16 need the binary form. */
export function tensorFromJson(what: string, dtype: DataType, shape: number[], data: unknown): NDArray {
  checkJsonDataType(what, dtype);
  const count = elementCount(shape);
  const values = flatten(data, count, what);
  if (values.length !== count) throw elementCountMismatch(what, shape, count, values.length);
  if (dtype === 'BYTES') return bytesTensorFromJson(what, shape, values);
  const { out, write } = jsonElementWriter(what, dtype, count);
  write(values, count, 0);
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
