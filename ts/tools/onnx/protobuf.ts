/**
 * A small protobuf wire-format writer: just enough of the encoding to produce ONNX models
 * without a protobuf library (https://protobuf.dev/programming-guides/encoding/).
 *
 * A message is built as a list of byte chunks. Scalars go into a small scratch buffer;
 * large payloads (tensor `raw_data`) are kept by reference and copied exactly once, when
 * {@link ProtoWriter.finish} concatenates everything, so a 36 MB model costs one copy.
 */

/** Protobuf wire types (the low three bits of a field tag). */
export const WireType = {
  /** int32, int64, uint64, bool, enum. */
  VARINT: 0,
  /** fixed64, sfixed64, double. */
  FIXED64: 1,
  /** string, bytes, embedded messages, packed repeated fields. */
  LENGTH_DELIMITED: 2,
  /** fixed32, sfixed32, float. */
  FIXED32: 5,
} as const;

/** Values a varint field accepts: a safe integer or a bigint (negative ones are 64-bit two's complement). */
export type VarintValue = number | bigint;

const SCRATCH_SIZE = 4096;
/** Payloads at least this big are kept by reference instead of copied into the scratch buffer. */
const BY_REFERENCE = 1024;

/** Number of bytes of the varint encoding of `value`. */
export function varintSize(value: VarintValue): number {
  let v = toUint64(value);
  let n = 1;
  while (v >= 0x80n) {
    v >>= 7n;
    n++;
  }
  return n;
}

function toUint64(value: VarintValue): bigint {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`varint value ${value} is not a safe integer`);
    value = BigInt(value);
  }
  if (value < -(1n << 63n) || value >= 1n << 64n) throw new RangeError(`varint value ${value} does not fit 64 bits`);
  return BigInt.asUintN(64, value);
}

/**
 * Accumulates the encoding of one protobuf message. Methods take the field number and
 * append tag + value; nested messages are written by {@link ProtoWriter.message} from
 * another writer. Fields are emitted in call order (protobuf accepts any order; callers
 * use ascending field numbers, as protoc does).
 */
export class ProtoWriter {
  private readonly chunks: Uint8Array[] = [];
  private scratch = Buffer.allocUnsafe(SCRATCH_SIZE);
  private used = 0;
  private flushed = 0;

  /** Total number of bytes written so far. */
  get length(): number {
    return this.flushed + this.used;
  }

  /** Appends a field tag: `(field << 3) | wireType`. */
  tag(field: number, wireType: number): this {
    if (!Number.isInteger(field) || field < 1 || field > 0x1fffffff) throw new RangeError(`bad field number ${field}`);
    return this.rawVarint(field * 8 + wireType);
  }

  /** Appends a bare varint (no tag). Fast path for non-negative safe integers. */
  rawVarint(value: VarintValue): this {
    this.reserve(10);
    if (typeof value === 'number' && value >= 0 && Number.isSafeInteger(value)) {
      while (value >= 0x80) {
        this.scratch[this.used++] = (value % 0x80) | 0x80;
        value = Math.floor(value / 0x80);
      }
      this.scratch[this.used++] = value;
      return this;
    }
    let v = toUint64(value);
    while (v >= 0x80n) {
      this.scratch[this.used++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.scratch[this.used++] = Number(v);
    return this;
  }

  /** Appends a varint field (int32, int64, uint64, enum). */
  varint(field: number, value: VarintValue): this {
    return this.tag(field, WireType.VARINT).rawVarint(value);
  }

  /** Appends a bool field as varint 0 or 1. */
  bool(field: number, value: boolean): this {
    return this.varint(field, value ? 1 : 0);
  }

  /** Appends a `float` field (fixed32, IEEE 754 single, little-endian). */
  float(field: number, value: number): this {
    this.tag(field, WireType.FIXED32).reserve(4);
    this.used = this.scratch.writeFloatLE(value, this.used);
    return this;
  }

  /** Appends a `fixed32` field (unsigned 32-bit little-endian). */
  fixed32(field: number, value: number): this {
    this.tag(field, WireType.FIXED32).reserve(4);
    this.used = this.scratch.writeUInt32LE(value >>> 0, this.used);
    return this;
  }

  /** Appends a `double` field (fixed64, IEEE 754 double, little-endian). */
  double(field: number, value: number): this {
    this.tag(field, WireType.FIXED64).reserve(8);
    this.used = this.scratch.writeDoubleLE(value, this.used);
    return this;
  }

  /** Appends a `fixed64` field (64-bit little-endian; negative values as two's complement). */
  fixed64(field: number, value: VarintValue): this {
    this.tag(field, WireType.FIXED64).reserve(8);
    this.used = this.scratch.writeBigUInt64LE(toUint64(value), this.used);
    return this;
  }

  /** Appends a length-delimited `bytes` field. Big payloads are referenced, not copied. */
  bytes(field: number, data: Uint8Array): this {
    this.tag(field, WireType.LENGTH_DELIMITED).rawVarint(data.byteLength);
    return this.raw(data);
  }

  /** Appends a length-delimited `string` field, UTF-8 encoded. */
  string(field: number, value: string): this {
    return this.bytes(field, Buffer.from(value, 'utf8'));
  }

  /** Appends an embedded message field holding everything `message` has written. */
  message(field: number, message: ProtoWriter): this {
    this.tag(field, WireType.LENGTH_DELIMITED).rawVarint(message.length);
    message.flush();
    for (const chunk of message.chunks) this.raw(chunk);
    return this;
  }

  /** Appends a packed repeated varint field (`[packed = true]` int32/int64/uint64). Nothing when empty. */
  packedVarints(field: number, values: ArrayLike<VarintValue>): this {
    if (values.length === 0) return this;
    const body = new ProtoWriter();
    for (let i = 0; i < values.length; i++) body.rawVarint(values[i]!);
    return this.message(field, body);
  }

  /** Appends a packed repeated `float` field. Nothing when empty. */
  packedFloats(field: number, values: ArrayLike<number>): this {
    if (values.length === 0) return this;
    const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
    return this.bytes(field, littleEndianBytes(f32));
  }

  /** Appends a packed repeated `double` field. Nothing when empty. */
  packedDoubles(field: number, values: ArrayLike<number>): this {
    if (values.length === 0) return this;
    const f64 = values instanceof Float64Array ? values : Float64Array.from(values);
    return this.bytes(field, littleEndianBytes(f64));
  }

  /** Appends an unpacked repeated varint field: one tag + value per element (proto2's default). */
  repeatedVarints(field: number, values: ArrayLike<VarintValue>): this {
    for (let i = 0; i < values.length; i++) this.varint(field, values[i]!);
    return this;
  }

  /** Appends an unpacked repeated `float` field: one tag + value per element. */
  repeatedFloats(field: number, values: ArrayLike<number>): this {
    for (let i = 0; i < values.length; i++) this.float(field, values[i]!);
    return this;
  }

  /** Appends an unpacked repeated `bytes` field: one length-delimited entry per element. */
  repeatedBytes(field: number, values: readonly Uint8Array[]): this {
    for (const v of values) this.bytes(field, v);
    return this;
  }

  /** Appends an unpacked repeated `string` field. */
  repeatedStrings(field: number, values: readonly string[]): this {
    for (const v of values) this.string(field, v);
    return this;
  }

  /** Returns the encoded message as one Buffer (the only copy of referenced payloads). */
  finish(): Buffer {
    this.flush();
    return Buffer.concat(this.chunks, this.flushed);
  }

  /** Appends bytes with no tag: copied when small, referenced when big. */
  private raw(data: Uint8Array): this {
    if (data.byteLength >= BY_REFERENCE) {
      this.flush();
      this.chunks.push(data);
      this.flushed += data.byteLength;
    } else {
      this.reserve(data.byteLength);
      this.scratch.set(data, this.used);
      this.used += data.byteLength;
    }
    return this;
  }

  private reserve(n: number): this {
    if (this.used + n > this.scratch.length) {
      this.flush();
      if (n > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(SCRATCH_SIZE, n));
    }
    return this;
  }

  private flush(): void {
    if (this.used === 0) return;
    this.chunks.push(this.scratch.subarray(0, this.used));
    this.flushed += this.used;
    this.scratch = this.scratch.subarray(this.used);
    if (this.scratch.length < 64) this.scratch = Buffer.allocUnsafe(SCRATCH_SIZE);
    this.used = 0;
  }
}

/** Little-endian bytes of a typed array (a view when the host is little-endian, as Node's hosts are). */
export function littleEndianBytes(array: ArrayBufferView): Uint8Array {
  const view = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  if (IS_LITTLE_ENDIAN) return view;
  const size = (array as unknown as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
  const out = Buffer.from(view);
  if (size === 2) out.swap16();
  else if (size === 4) out.swap32();
  else if (size === 8) out.swap64();
  return out;
}

const IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
