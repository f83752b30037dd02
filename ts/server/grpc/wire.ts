/**
 * Protobuf wire format (https://protobuf.dev/programming-guides/encoding/) for the inference hot
 * path: a reader that hands out `bytes` fields as views of the received message (never copies),
 * and a writer that fills one pre-sized buffer (callers size the message first, so each payload
 * is copied exactly once). Everything else goes through @grpc/proto-loader.
 */
import { invalidArg } from '../../errors';

/** Protobuf wire types. */
export const WT_VARINT = 0;
export const WT_FIXED64 = 1;
export const WT_BYTES = 2;
export const WT_FIXED32 = 5;

const TWO_32 = 2 ** 32;

/**
 * Reads one message (or a nested one). Malformed input throws INVALID_ARG naming `what`, so a
 * hostile message is a client error, never a crash.
 */
export class WireReader {
  pos: number;

  constructor(readonly buf: Buffer, start = 0, readonly end = buf.length, readonly what = 'message') {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  fail(problem: string): never {
    throw invalidArg(`malformed ${this.what}: ${problem}`);
  }

  /** A field tag: [field number, wire type]. */
  tag(): [number, number] {
    const t = this.uint32();
    if (t < 8) this.fail(`invalid field tag ${t} at byte ${this.pos}`);
    return [t >>> 3, t & 7];
  }

  /** A varint that must fit 32 bits unsigned (tags, lengths). */
  uint32(): number {
    const v = this.varint();
    if (typeof v !== 'number' || v >= TWO_32) this.fail(`value at byte ${this.pos} does not fit 32 bits`);
    return v;
  }

  /**
   * A varint as an unsigned 64-bit value: a number when it is a safe integer, else a bigint
   * (callers that need a signed value use {@link asInt64}).
   */
  varint(): number | bigint {
    const buf = this.buf;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = buf[this.pos++];
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    // Beyond 49 bits: finish exactly with BigInt (rare: big uint64s, negative int64s).
    let big = BigInt(value);
    let shift = 49n;
    for (let i = 7; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = buf[this.pos++];
      big |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) {
        big = BigInt.asUintN(64, big);
        return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
      }
      shift += 7n;
    }
    return this.fail('varint longer than 10 bytes');
  }

  /** A bool field's value. */
  bool(): boolean {
    return this.varint() !== 0;
  }

  /** The bytes of a length-delimited field: a view of the message, not a copy. */
  bytes(): Buffer {
    const len = this.uint32();
    const start = this.pos;
    if (len > this.end - start) this.fail(`length ${len} at byte ${start} runs past the end`);
    this.pos = start + len;
    return this.buf.subarray(start, start + len);
  }

  /** [start, end) of a length-delimited field, for nested messages. */
  range(): [number, number] {
    const len = this.uint32();
    const start = this.pos;
    if (len > this.end - start) this.fail(`length ${len} at byte ${start} runs past the end`);
    this.pos = start + len;
    return [start, start + len];
  }

  string(): string {
    const [start, end] = this.range();
    return this.buf.toString('utf8', start, end);
  }

  double(): number {
    if (this.end - this.pos < 8) this.fail('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  float(): number {
    if (this.end - this.pos < 4) this.fail('truncated float');
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Skips a field of an unknown number (proto3 ignores unknown fields). */
  skip(wireType: number): void {
    switch (wireType) {
      case WT_VARINT: this.varint(); break;
      case WT_FIXED64: this.advance(8); break;
      case WT_BYTES: this.range(); break;
      case WT_FIXED32: this.advance(4); break;
      default: this.fail(`unsupported wire type ${wireType}`);
    }
  }

  /** Fails unless a known field arrived with the wire type its declaration implies. */
  expect(field: number, wireType: number, expected: number): void {
    if (wireType !== expected) this.fail(`field ${field} has wire type ${wireType}, expected ${expected}`);
  }

  private advance(n: number): void {
    if (this.end - this.pos < n) this.fail('truncated fixed-width field');
    this.pos += n;
  }
}

/** An unsigned varint value as signed 64-bit (int64 fields). */
export function asInt64(v: number | bigint): number | bigint {
  if (typeof v === 'number') return v;
  const signed = BigInt.asIntN(64, v);
  return signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(signed) : signed;
}

/** An unsigned varint value as signed 32-bit (int32 fields: negatives travel as 10 bytes). */
export function asInt32(v: number | bigint): number {
  // ToInt32 keeps the low 32 bits of any safe integer exactly.
  return typeof v === 'number' ? v | 0 : Number(BigInt.asIntN(32, v));
}

/** Encoded size of a varint of a non-negative safe integer. */
export function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Size of a length-delimited field (tag + length + payload); field numbers < 16 have 1-byte tags. */
export function lenFieldSize(field: number, len: number): number {
  return varintSize(field << 3) + varintSize(len) + len;
}

/**
 * Writes into one buffer allocated at the size the caller computed. Writing past that size is
 * a bug in the size computation, caught by {@link WireWriter.finish}.
 */
export class WireWriter {
  readonly buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** A non-negative safe integer as a varint. */
  varint(v: number): void {
    const buf = this.buf;
    while (v >= 0x80) {
      buf[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    buf[this.pos++] = v;
  }

  /** A 64-bit two's complement varint (negative int64 values: always 10 bytes). */
  varint64(v: bigint): void {
    let u = BigInt.asUintN(64, v);
    while (u >= 0x80n) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  /** Tag, length and bytes. */
  bytes(field: number, data: Uint8Array): void {
    this.tag(field, WT_BYTES);
    this.varint(data.byteLength);
    this.buf.set(data, this.pos);
    this.pos += data.byteLength;
  }

  /** Tag, length and the UTF-8 of `s` (`len` = its byte length, known from the sizing pass). */
  string(field: number, s: string, len: number): void {
    this.tag(field, WT_BYTES);
    this.varint(len);
    this.pos += this.buf.write(s, this.pos, len, 'utf8');
  }

  /** Tag and length of a nested message whose `len` bytes follow. */
  header(field: number, len: number): void {
    this.tag(field, WT_BYTES);
    this.varint(len);
  }

  double(field: number, v: number): void {
    this.tag(field, WT_FIXED64);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }

  /** The message; throws if the sizing pass and the writing pass disagree. */
  finish(): Buffer {
    if (this.pos !== this.buf.length) {
      throw new Error(`protobuf writer: wrote ${this.pos} bytes into a message sized ${this.buf.length}`);
    }
    return this.buf;
  }
}
