/**
 * Datatypes and the NDArray value that carries tensor data through the JS API.
 *
 * Numeric tensors hold a TypedArray in row-major order. BYTES tensors hold one Uint8Array
 * (usually a Buffer) per element. FP16 and BF16 hold their raw 16-bit patterns in a
 * Uint16Array; BOOL holds one byte per element (0 or 1) in a Uint8Array.
 */
import { invalidArg } from './errors';
import {
  PackedBytes, checkedPackedBytes, serializeBytes, slicePackedBytes, splitPackedBytes, walkBytes,
} from './packed-bytes';

export { serializeBytes };

/** Triton's datatype names, in the order of Triton's `TYPE_*` enum (values 1..14). */
export const DATA_TYPES = [
  'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
  'FP16', 'FP32', 'FP64', 'BYTES', 'BF16',
] as const;

export type DataType = (typeof DATA_TYPES)[number];

const DATA_TYPE_CODES = new Map<string, number>(DATA_TYPES.map((name, i) => [name, i + 1]));

/** Triton's `TYPE_*` enum value for a datatype (shared with `cpp/core/datatype.h`); 0 for an unknown name. */
export function dataTypeCode(dtype: DataType): number {
  return DATA_TYPE_CODES.get(dtype) ?? 0;
}

export type TypedArray =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | BigUint64Array | BigInt64Array | Float32Array | Float64Array;

export type TypedArrayConstructor =
  | Uint8ArrayConstructor | Int8ArrayConstructor | Uint16ArrayConstructor | Int16ArrayConstructor
  | Uint32ArrayConstructor | Int32ArrayConstructor | BigUint64ArrayConstructor
  | BigInt64ArrayConstructor | Float32ArrayConstructor | Float64ArrayConstructor;

/** Data of a tensor: a TypedArray, or one byte string per element for BYTES. */
export type TensorData = TypedArray | Uint8Array[];

/**
 * The data each datatype's tensors hold, as the runtime gives it to callables and callers (the
 * table of `typedArrayFor`, plus BYTES): BOOL is one byte per element (0 or 1), FP16/BF16 their
 * raw 16-bit patterns, BYTES one Uint8Array (usually a Buffer) per element.
 */
export interface DataTypeArrays {
  BOOL: Uint8Array;
  UINT8: Uint8Array;
  UINT16: Uint16Array;
  UINT32: Uint32Array;
  UINT64: BigUint64Array;
  INT8: Int8Array;
  INT16: Int16Array;
  INT32: Int32Array;
  INT64: BigInt64Array;
  FP16: Uint16Array;
  FP32: Float32Array;
  FP64: Float64Array;
  BYTES: Uint8Array[];
  BF16: Uint16Array;
}

/**
 * The data of a tensor declared with `dtype` (a datatype name or a TypedArray constructor, as
 * `Tensor.dtype` takes it): `ArrayOfDataType<'FP32'>` is Float32Array. Any other type (a
 * `string`, a union) gives `TensorData`.
 */
export type ArrayOfDataType<D> =
  [D] extends [DataType] ? (DataType extends D ? TensorData : DataTypeArrays[D])
    : [D] extends [TypedArrayConstructor] ? (TypedArrayConstructor extends D ? TensorData : ArrayOfConstructor<D>)
      : TensorData;

/** The array a TypedArray constructor makes, without the ArrayBuffer parameter TypeScript 5.7 added. */
type ArrayOfConstructor<C> =
  C extends Float32ArrayConstructor ? Float32Array
    : C extends Float64ArrayConstructor ? Float64Array
      : C extends Int32ArrayConstructor ? Int32Array
        : C extends BigInt64ArrayConstructor ? BigInt64Array
          : C extends BigUint64ArrayConstructor ? BigUint64Array
            : C extends Uint8ArrayConstructor ? Uint8Array
              : C extends Int8ArrayConstructor ? Int8Array
                : C extends Int16ArrayConstructor ? Int16Array
                  : C extends Uint16ArrayConstructor ? Uint16Array
                    : C extends Uint32ArrayConstructor ? Uint32Array
                      : TensorData;

const ARRAY_TYPE: Record<Exclude<DataType, 'BYTES'>, TypedArrayConstructor> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BF16: Uint16Array,
};

/** Bytes per element; 0 for BYTES (variable length). */
export function dataTypeByteSize(dtype: DataType): number {
  return dtype === 'BYTES' ? 0 : ARRAY_TYPE[dtype].BYTES_PER_ELEMENT;
}

/** The TypedArray constructor that holds a numeric datatype. */
export function typedArrayFor(dtype: Exclude<DataType, 'BYTES'>): TypedArrayConstructor {
  return ARRAY_TYPE[dtype];
}

/** Datatype implied by a TypedArray (Uint8Array → UINT8, Uint16Array → UINT16). */
export function dataTypeOfArray(data: TypedArray): DataType {
  if (data instanceof Float32Array) return 'FP32';
  if (data instanceof Float64Array) return 'FP64';
  if (data instanceof Int32Array) return 'INT32';
  if (data instanceof BigInt64Array) return 'INT64';
  if (data instanceof Uint8Array) return 'UINT8';
  if (data instanceof Int8Array) return 'INT8';
  if (data instanceof Int16Array) return 'INT16';
  if (data instanceof Uint16Array) return 'UINT16';
  if (data instanceof Uint32Array) return 'UINT32';
  if (data instanceof BigUint64Array) return 'UINT64';
  throw invalidArg('unsupported TypedArray');
}

/** Accepts a datatype name (`'FP32'`, `'TYPE_FP32'`, `'TYPE_STRING'`) or a TypedArray constructor. */
export function parseDataType(value: DataType | string | TypedArrayConstructor): DataType {
  if (typeof value === 'function') {
    const match = (Object.keys(ARRAY_TYPE) as Exclude<DataType, 'BYTES'>[]).find(
      (dt) => ARRAY_TYPE[dt] === value && dt !== 'BOOL' && dt !== 'FP16' && dt !== 'BF16',
    );
    if (!match) throw invalidArg(`unsupported dtype constructor ${value.name}`);
    return match;
  }
  const upper = String(value).toUpperCase();
  const name = upper === 'TYPE_STRING' ? 'BYTES' : upper.replace(/^TYPE_/, '');
  if (!(DATA_TYPES as readonly string[]).includes(name)) {
    throw invalidArg(`unknown datatype '${value}', expected one of ${DATA_TYPES.join(', ')}`);
  }
  return name as DataType;
}

/** Product of dims, checked: every dim must be a non-negative safe integer. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) {
    if (!Number.isSafeInteger(dim) || dim < 0) {
      throw invalidArg(`invalid dimension ${dim} in shape [${shape.join(',')}]`);
    }
    count *= dim;
    if (!Number.isSafeInteger(count)) throw invalidArg(`shape [${shape.join(',')}] is too large`);
  }
  return count;
}

/** What a value is, for messages: its constructor's name, or its typeof. */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}

/** "what: " for a refusal's message; '' without a label. Request paths pass a function, read only when refusing. */
function labelPrefix(what: string | (() => string) | undefined): string {
  const label = typeof what === 'function' ? what() : what;
  return label ? `${label}: ` : '';
}

/**
 * Checks that `data` can hold a `dtype` tensor of `shape` as it is, without reinterpreting
 * bits: the TypedArray must be the datatype's own kind (an Int32Array is not FP32 data, even
 * though its byte size fits), BYTES must be an array of Uint8Arrays, and the element count must
 * match the shape (a buffer transferred or detached since has length 0). `what` names the
 * tensor in the INVALID_ARG message ("input 'x' for model 'm'"; a function is called only to
 * refuse); without it the message names the datatype alone.
 */
export function checkTensorData(
  dtype: DataType, shape: readonly number[], data: unknown, what?: string | (() => string),
): void {
  if (dtype === 'BYTES') {
    if (!Array.isArray(data)) throw invalidArg(`${labelPrefix(what)}BYTES data must be an array of Uint8Arrays, got ${kindOf(data)}`);
    for (const item of data) {
      if (!(item instanceof Uint8Array)) {
        throw invalidArg(`${labelPrefix(what)}BYTES elements must be Uint8Arrays (or Buffers), got ${kindOf(item)}`);
      }
    }
  } else {
    const Ctor = ARRAY_TYPE[dtype];
    if (Ctor === undefined) throw invalidArg(`${labelPrefix(what)}unknown datatype '${dtype}', expected one of ${DATA_TYPES.join(', ')}`);
    if (!(data instanceof Ctor)) {
      throw invalidArg(`${labelPrefix(what)}${dtype} data must be a ${Ctor.name}, got ${kindOf(data)}; ` +
        `convert it (e.g. ${Ctor.name}.from(data)) or declare the datatype that matches the array`);
    }
  }
  const expected = elementCount(shape);
  const length = (data as TensorData).length;
  if (length !== expected) {
    throw invalidArg(`${labelPrefix(what)}${dtype} tensor of shape [${shape.join(',')}] needs ${expected} elements, got ${length}` +
      (length === 0 ? ' (was its buffer transferred or detached?)' : ''));
  }
}

/** The wire-form BYTES of an NDArray not split yet (NDArray.#packed); undefined otherwise. */
let packedOf: (arr: NDArray) => PackedBytes | undefined;
/** Splits a packed NDArray's BYTES (its `data` accessor): `data` becomes an ordinary property holding the elements. */
let unpack: (arr: NDArray) => Uint8Array[];

/**
 * A packed BYTES NDArray's `data` until first read: one descriptor and one getter for every such
 * array, so they share their hidden class. (A getter closed over each array's bytes, kept in a
 * WeakMap, cost ~3 µs per received BYTES tensor: defining a distinct accessor put each array in
 * dictionary mode, and a WeakMap entry per short-lived key is dear. A 1-element BYTES input
 * decoded and handed to a native engine took 3.8 µs against 0.7 µs when it was split.)
 */
const PACKED_DATA: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: NDArray): Uint8Array[] {
    return unpack(this);
  },
};

/** A typed n-dimensional array: the value inference callables receive and return. */
export class NDArray<D extends TensorData = TensorData> {
  /**
   * BYTES received in wire form and not split into elements yet (ts/packed-bytes.ts). While set,
   * `data` is an own accessor (PACKED_DATA) that splits them on first read and then becomes the array.
   */
  #packed: PackedBytes | undefined = undefined;

  declare readonly data: D;

  static {
    packedOf = (arr) => (typeof arr === 'object' && arr !== null && #packed in arr ? arr.#packed : undefined);
    unpack = (receiver) => {
      // The receiver may inherit from the packed array (Object.create(arr)): split the one that holds the bytes.
      let arr: NDArray | null = receiver;
      while (arr !== null && !(#packed in arr && arr.#packed)) arr = Object.getPrototypeOf(arr) as NDArray | null;
      if (arr === null) return [];
      const items = splitPackedBytes(arr.#packed!);
      arr.#packed = undefined;
      Object.defineProperty(arr, 'data', { value: items, enumerable: true, writable: true, configurable: true });
      return items;
    };
  }

  constructor(
    readonly dtype: DataType,
    readonly shape: number[],
    data: D,
  ) {
    if (dtype === 'BYTES' && (data as unknown) instanceof PackedBytes) {
      this.#packed = data as unknown as PackedBytes;
      Object.defineProperty(this, 'data', PACKED_DATA);
      return;
    }
    (this as { data: D }).data = data;
    checkTensorData(dtype, shape, data);
  }

  /** Number of elements. */
  get size(): number {
    return this.#packed?.count ?? this.data.length;
  }

  /** Length of the first axis (1 for a scalar). */
  get rows(): number {
    return this.shape.length === 0 ? 1 : this.shape[0];
  }

  /** Rows [start, end) along axis 0, sharing memory with this array. */
  sliceRows(start: number, end: number): NDArray<D> {
    const rowSize = this.rows === 0 ? 0 : this.size / this.rows;
    const shape = [end - start, ...this.shape.slice(1)];
    const packed = this.#packed;
    if (packed) return new NDArray(this.dtype, shape, slicePackedBytes(packed, start * rowSize, end * rowSize) as unknown as D);
    const data = Array.isArray(this.data)
      ? this.data.slice(start * rowSize, end * rowSize)
      : (this.data as TypedArray).subarray(start * rowSize, end * rowSize);
    return new NDArray(this.dtype, shape, data as D);
  }

  /** Same data, another shape with the same element count. */
  reshape(shape: number[]): NDArray<D> {
    const packed = this.#packed;
    if (packed) {
      if (elementCount(shape) !== packed.count) {
        throw invalidArg(`BYTES tensor of shape [${shape.join(',')}] needs ${elementCount(shape)} elements, got ${packed.count}`);
      }
      return new NDArray(this.dtype, shape, packed as unknown as D);
    }
    return new NDArray(this.dtype, shape, this.data);
  }

  /** Element i as a JS value (number, bigint, boolean or byte string). */
  at(i: number): number | bigint | boolean | Uint8Array {
    const v = (this.data as ArrayLike<number | bigint | Uint8Array>)[i];
    return this.dtype === 'BOOL' ? v !== 0 : v;
  }
}

/**
 * A BYTES tensor of `shape` over wire-form bytes, checked now (Triton's texts, naming `what`)
 * and split into elements only if JS reads `data`.
 */
export function packedBytesTensor(shape: number[], bytes: Uint8Array, what: string): NDArray<Uint8Array[]> {
  const packed = checkedPackedBytes(bytes, elementCount(shape), what);
  return new NDArray('BYTES', shape, packed as unknown as Uint8Array[]);
}

/**
 * A BYTES tensor's elements in wire form: the bytes it arrived in while JS has not split them,
 * otherwise its elements serialized.
 */
export function bytesOfTensor(arr: NDArray): Uint8Array {
  return packedOf(arr)?.bytes ?? serializeBytes(arr.data as Uint8Array[]);
}

/** Wire size of a BYTES tensor, without splitting it. */
export function bytesTensorSize(arr: NDArray): number {
  const packed = packedOf(arr);
  if (packed) return packed.bytes.byteLength;
  let total = 0;
  for (const item of arr.data as Uint8Array[]) total += 4 + item.length;
  return total;
}

/**
 * Calls `visit` with each element of a BYTES tensor as a byte range of one buffer, without making
 * an object per element when the tensor is still packed.
 */
export function forEachBytesElement(arr: NDArray, visit: (buf: Buffer, start: number, end: number, index: number) => void): void {
  const packed = packedOf(arr);
  if (packed) {
    const buf = Buffer.from(packed.bytes.buffer, packed.bytes.byteOffset, packed.bytes.byteLength);
    walkBytes(packed.bytes, packed.count, packed.what, (start, end, i) => visit(buf, start, end, i));
    return;
  }
  const items = arr.data as Uint8Array[];
  for (let i = 0; i < items.length; i++) {
    const b = items[i];
    visit(Buffer.from(b.buffer, b.byteOffset, b.byteLength), 0, b.byteLength, i);
  }
}

/** Whether a BYTES tensor is still in wire form (its elements not made). */
export function isPackedBytes(arr: NDArray): boolean {
  return packedOf(arr) !== undefined;
}

/** Builds an NDArray from a TypedArray or byte strings; the datatype is inferred when not given. */
export function ndarray(data: TensorData | string[], shape?: number[], dtype?: DataType): NDArray {
  if (Array.isArray(data)) {
    const items = (data as (string | Uint8Array)[]).map((s) => (typeof s === 'string' ? Buffer.from(s) : s));
    return new NDArray('BYTES', shape ?? [items.length], items);
  }
  return new NDArray(dtype ?? dataTypeOfArray(data), shape ?? [data.length], data);
}

/**
 * Small copies are views carved out of a shared slab: a new ArrayBuffer per copy costs V8 a
 * backing store (allocation, registration, sweeping), which at a few bytes per request was a
 * quarter of the in-process throughput. A slab lives as long as any view of it.
 *
 * The smallest copies are typed arrays of their own instead: V8 keeps a typed array of at most
 * 64 bytes inside its heap, with no ArrayBuffer, and such a copy is the cheapest to make and to
 * collect. Slab views of tiny tensors made the young generation promote ~15 times more (an
 * identity model at concurrency 256: 70-145 MB promoted in 2 s against 5 MB) and halved the
 * in-process throughput. (Native code does not read a JS engine's inputs, and copies a native
 * engine's itself; where it reads a heap copy in place, an ensemble step on a native engine, V8
 * moves that copy out of its heap once, at the first read.)
 */
const ON_HEAP_COPY_MAX_BYTES = 64;
const SLAB_BYTES = 1 << 20;
const SLAB_COPY_MAX_BYTES = 16 << 10;
let slab = new ArrayBuffer(SLAB_BYTES);
let slabUsed = 0;

function slabView(Ctor: TypedArrayConstructor, length: number): TypedArray {
  const bytes = length * Ctor.BYTES_PER_ELEMENT;
  let offset = (slabUsed + 7) & ~7;  // 8-byte aligned for every element type
  if (offset + bytes > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    offset = 0;
  }
  slabUsed = offset + bytes;
  return new Ctor(slab, offset, length);
}

/**
 * A copy that shares no memory with `arr` (shape included). BYTES elements become views of one
 * new serialized buffer: one allocation, whatever the element count.
 */
export function copyNDArray(arr: NDArray): NDArray {
  if (arr.dtype === 'BYTES') {
    // One new buffer, whatever the element count; the copy stays packed.
    return packedBytesTensor(arr.shape.slice(), Buffer.from(bytesOfTensor(arr)), 'BYTES copy');
  }
  const data = arr.data as TypedArray;
  const Ctor = typedArrayFor(arr.dtype as Exclude<DataType, 'BYTES'>);
  const copy = data.byteLength > ON_HEAP_COPY_MAX_BYTES && data.byteLength <= SLAB_COPY_MAX_BYTES
    ? slabView(Ctor, data.length) : new Ctor(data.length);
  (copy as Float64Array).set(data as Float64Array);
  return new NDArray(arr.dtype, arr.shape.slice(), copy);
}

/** Concatenates arrays along axis 0 (their other dims must agree). */
export function concatRows(arrays: NDArray[]): NDArray {
  if (arrays.length === 1) return arrays[0];
  const first = arrays[0];
  const tail = first.shape.slice(1).join(',');
  let rows = 0;
  let total = 0;
  for (const a of arrays) {
    if (a.dtype !== first.dtype || a.shape.slice(1).join(',') !== tail) {
      throw invalidArg(
        `cannot concatenate ${a.dtype}[${a.shape.join(',')}] with ${first.dtype}[${first.shape.join(',')}]`,
      );
    }
    rows += a.rows;
    total += a.size;
  }
  const shape = [rows, ...first.shape.slice(1)];
  if (first.dtype === 'BYTES') {
    if (arrays.every(isPackedBytes)) return packedBytesTensor(shape, Buffer.concat(arrays.map(bytesOfTensor)), 'BYTES rows');
    return new NDArray('BYTES', shape, arrays.flatMap((a) => a.data as Uint8Array[]));
  }
  const out = new (typedArrayFor(first.dtype as Exclude<DataType, 'BYTES'>))(total);
  let offset = 0;
  for (const a of arrays) {
    (out as Float64Array).set(a.data as Float64Array, offset);
    offset += a.size;
  }
  return new NDArray(first.dtype, shape, out);
}

/**
 * Inverse of serializeBytes: one Buffer view per element. Throws INVALID_ARG naming `what` when
 * the encoding is broken or holds other than `count` elements (ts/packed-bytes.ts `walkBytes`),
 * and RESOURCE_EXHAUSTED when the elements would not fit in the heap. Where the elements need
 * not be JS objects, `packedBytesTensor` keeps them as they are.
 */
export function deserializeBytes(buf: Uint8Array, count: number, what: string): Buffer[] {
  return splitPackedBytes(checkedPackedBytes(buf, count, what));
}
