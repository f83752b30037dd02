/**
 * Decoding of the inference messages (ModelInferRequest on the server, ModelInferResponse and
 * ModelStreamInferResponse in the client), written by hand for the hot path: `raw_*_contents`
 * and BYTES elements stay views of the received message, packed fixed-width typed contents
 * become typed arrays over it, shapes are plain numbers (no Long objects), unknown fields are
 * skipped as proto3 requires, and malformed input is an INVALID_ARG naming the problem. Nothing
 * is made per element before it is counted: a message may be 2^31 - 1 bytes, and one JS value
 * per wire byte exhausts the heap long before that.
 * Field numbers are Triton's (proto/grpc_service.proto; triton-protocol.md §2.2).
 */
import { clip, invalidArg } from '../../errors';
import { PackedBytes } from '../../packed-bytes';
import { WireReader, WT_BYTES, WT_FIXED32, WT_FIXED64, WT_VARINT, asInt32, asInt64 } from './wire';

export type ParamKind = 'bool' | 'int64' | 'string' | 'double' | 'uint64';

/** One `InferParameter`: which member of its oneof is set, and the value. */
export interface InferParam {
  kind: ParamKind;
  value: boolean | number | bigint | string;
}

/** A `map<string, InferParameter>`; a Map so no key can reach Object.prototype. */
export type ParamMap = Map<string, InferParam>;

/**
 * A typed contents field whose element count is not the one its tensor's shape declares: the
 * request fails on the count (typed-contents.ts names both), so only the count is kept.
 */
export interface Miscounted {
  readonly miscounted: true;
  readonly length: number;
}

/**
 * `InferTensorContents`: the typed fields that carried data (empty fields stay absent). A field
 * holds its values only when their count is the shape's; otherwise it is {@link Miscounted}.
 */
export interface TensorContents {
  bool_contents?: Uint8Array | Miscounted;
  int_contents?: Int32Array | Miscounted;
  int64_contents?: BigInt64Array | Miscounted;
  uint_contents?: Uint32Array | Miscounted;
  uint64_contents?: BigUint64Array | Miscounted;
  fp32_contents?: Float32Array | Miscounted;
  fp64_contents?: Float64Array | Miscounted;
  /** In wire form (a 4-byte little-endian length before each element), not a Buffer per element. */
  bytes_contents?: PackedBytes | Miscounted;
}

/** `InferInputTensor` / `InferOutputTensor` (same fields and numbers). */
export interface TensorMessage {
  name: string;
  datatype: string;
  /** Dimensions; values beyond a safe integer (or negative int64s) kept as decimal strings for the validator. */
  shape: (number | string)[];
  parameters: ParamMap | null;
  /** null when the `contents` field is absent. */
  contents: TensorContents | null;
}

/** `InferRequestedOutputTensor`. */
export interface RequestedOutputMessage {
  name: string;
  parameters: ParamMap | null;
}

export interface InferRequestMessage {
  modelName: string;
  modelVersion: string;
  id: string;
  parameters: ParamMap | null;
  inputs: TensorMessage[];
  outputs: RequestedOutputMessage[];
  rawInputContents: Buffer[];
}

export interface InferResponseMessage {
  modelName: string;
  modelVersion: string;
  id: string;
  parameters: ParamMap | null;
  outputs: TensorMessage[];
  rawOutputContents: Buffer[];
}

export interface StreamResponseMessage {
  errorMessage: string;
  inferResponse: InferResponseMessage | null;
}

function decodeParam(r: WireReader, end: number): InferParam {
  let param: InferParam = { kind: 'bool', value: false };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    switch (field) {
      case 1: r.expect(field, wt, WT_VARINT); param = { kind: 'bool', value: r.bool() }; break;
      case 2: r.expect(field, wt, WT_VARINT); param = { kind: 'int64', value: asInt64(r.varint()) }; break;
      case 3: r.expect(field, wt, WT_BYTES); param = { kind: 'string', value: r.string() }; break;
      case 4: r.expect(field, wt, WT_FIXED64); param = { kind: 'double', value: r.double() }; break;
      case 5: r.expect(field, wt, WT_VARINT); param = { kind: 'uint64', value: r.varint() }; break;
      default: r.skip(wt);
    }
  }
  return param;
}

/**
 * The most repeated entries one message may hold, tensors, requested outputs, raw contents and
 * parameters together. Each becomes a JS object however few bytes it takes on the wire (2 for an
 * empty one), so without a cap a 64 MiB message of empty entries would fill the heap (Triton, in
 * C++, has none to copy); no real request comes near it. Counted per message: each decode entry
 * point resets it (decoding is synchronous, so one count serves them all).
 */
export const MAX_MESSAGE_ENTRIES = 65_536;
let entriesLeft = MAX_MESSAGE_ENTRIES;

/** One more repeated entry in the message `r` reads; INVALID_ARG past MAX_MESSAGE_ENTRIES. */
function spendEntry(r: WireReader): void {
  if (--entriesLeft >= 0) return;
  throw invalidArg(`the ${r.what} holds more than ${MAX_MESSAGE_ENTRIES} tensors, requested outputs, raw contents and ` +
    `parameters together; at most ${MAX_MESSAGE_ENTRIES} are supported`);
}

/** One `map<string, InferParameter>` entry (key = 1, value = 2), added to `map`. */
function decodeParamEntry(r: WireReader, map: ParamMap): ParamMap {
  spendEntry(r);
  const [start, end] = r.range();
  r.pos = start;
  let key = '';
  let value: InferParam = { kind: 'bool', value: false };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field === 1) {
      r.expect(field, wt, WT_BYTES);
      key = r.string();
    } else if (field === 2) {
      r.expect(field, wt, WT_BYTES);
      const [s, e] = r.range();
      r.pos = s;
      value = decodeParam(r, e);
    } else {
      r.skip(wt);
    }
  }
  map.set(key, value);
  return map;
}

/**
 * Most dimensions a shape may have (numpy's limit since 2.0). Every dimension becomes a JS
 * value, and a message may be 2^31 - 1 bytes of one-byte dims.
 */
export const MAX_SHAPE_DIMS = 64;

/** Elements in the packed varint run [start, end): its bytes without the continuation bit. */
function countVarints(r: WireReader, start: number, end: number): number {
  if (start < end && r.buf[end - 1] >= 0x80) r.fail('truncated varint');
  let n = 0;
  for (let i = start; i < end; i++) if (r.buf[i] < 0x80) n++;
  return n;
}

function shapeDim(v: number | bigint): number | string {
  const d = asInt64(v);
  return typeof d === 'number' ? d : d.toString();
}

/**
 * A shape field (packed or not) appended to `shape`, up to {@link MAX_SHAPE_DIMS} dims in all;
 * the rest are only counted. Returns how many dims the field holds.
 */
function pushShape(r: WireReader, wt: number, shape: (number | string)[]): number {
  if (wt === WT_VARINT) {
    const d = shapeDim(r.varint());
    if (shape.length < MAX_SHAPE_DIMS) shape.push(d);
    return 1;
  }
  if (wt !== WT_BYTES) r.fail(`repeated varint field has wire type ${wt}`);
  const [start, end] = r.range();
  const saved = r.pos;
  r.pos = start;
  let n = 0;
  for (; r.pos < end && shape.length < MAX_SHAPE_DIMS; n++) shape.push(shapeDim(r.varint()));
  n += countVarints(r, r.pos, end);
  r.pos = saved;
  return n;
}

/** Elements a shape declares; -1 for no valid shape (the request then fails on the shape). */
function declaredCount(shape: readonly (number | string)[]): number {
  let n = 1;
  for (const d of shape) {
    if (typeof d !== 'number' || d < 0) return -1;
    n *= d;
  }
  return Number.isSafeInteger(n) ? n : -1;
}

/** The contents fields by number (1-8). */
const CONTENTS_FIELDS = ['', 'bool_contents', 'int_contents', 'int64_contents', 'uint_contents', 'uint64_contents',
  'fp32_contents', 'fp64_contents', 'bytes_contents'] as const;

type ContentsArray = Uint8Array | Int32Array | BigInt64Array | Uint32Array | BigUint64Array | Float32Array | Float64Array;

const WIDTH = [0, 0, 0, 0, 0, 0, 4, 8, 0];

/** What the counting pass learns of one field. */
interface FieldCount {
  count: number;
  /** Fixed-width fields: the one packed run that holds every element, if so (kept as a view when aligned). */
  only: Buffer | null;
  /** bytes_contents: the bytes of its elements together. */
  bytes: number;
}

/**
 * First pass over an `InferTensorContents`: each field's element count, checked for malformed
 * bytes but with nothing materialised (packed varints are counted by their last bytes).
 */
function countContents(r: WireReader, end: number): FieldCount[] {
  const counts: FieldCount[] = CONTENTS_FIELDS.map(() => ({ count: 0, only: null, bytes: 0 }));
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field < 1 || field > 8) {
      r.skip(wt);
      continue;
    }
    const c = counts[field];
    if (field === 8) {
      r.expect(field, wt, WT_BYTES);
      const [s, e] = r.range();
      c.bytes += e - s;
      c.count++;
    } else if (wt === WT_BYTES) {
      const [s, e] = r.range();
      const width = WIDTH[field];
      if (width === 0) {
        c.count += countVarints(r, s, e);
        continue;
      }
      if ((e - s) % width !== 0) r.fail(`packed ${width * 8}-bit field of ${e - s} bytes`);
      if (e > s) c.only = c.count === 0 ? r.buf.subarray(s, e) : null;
      c.count += (e - s) / width;
    } else if (field <= 5) {
      if (wt !== WT_VARINT) r.fail(`repeated varint field has wire type ${wt}`);
      r.varint();
      c.count++;
      c.only = null;
    } else {
      r.expect(field, wt, field === 6 ? WT_FIXED32 : WT_FIXED64);
      if (field === 6) r.float();
      else r.double();
      c.count++;
      c.only = null;
    }
  }
  return counts;
}

/** Decodes varints from r.pos into `a` from index `at`, at least one, until `end`; returns the next index. */
function fillVarints(r: WireReader, field: number, a: ContentsArray, at: number, end: number): number {
  switch (field) {
    case 1: { const o = a as Uint8Array; do o[at++] = r.varint() !== 0 ? 1 : 0; while (r.pos < end); break; }
    case 2: { const o = a as Int32Array; do o[at++] = asInt32(r.varint()); while (r.pos < end); break; }
    case 3: { const o = a as BigInt64Array; do o[at++] = BigInt.asIntN(64, BigInt(r.varint())); while (r.pos < end); break; }
    case 4: {
      const o = a as Uint32Array;
      do {
        const v = r.varint();
        o[at++] = typeof v === 'number' ? v >>> 0 : Number(BigInt.asUintN(32, v));
      } while (r.pos < end);
      break;
    }
    default: { const o = a as BigUint64Array; do o[at++] = BigInt(r.varint()); while (r.pos < end); }
  }
  return at;
}

function newContentsArray(field: number, n: number): ContentsArray {
  switch (field) {
    case 1: return new Uint8Array(n);
    case 2: return new Int32Array(n);
    case 3: return new BigInt64Array(n);
    case 4: return new Uint32Array(n);
    case 5: return new BigUint64Array(n);
    case 6: return new Float32Array(n);
    default: return new Float64Array(n);
  }
}

/**
 * Second pass: the values of the fields in `out` (the others are skipped), written into arrays
 * sized by the first pass, so nothing grows element by element.
 */
function fillContents(r: WireReader, end: number, out: (ContentsArray | Buffer | null)[]): void {
  const at = out.map(() => 0);
  while (r.pos < end) {
    const [field, wt] = r.tag();
    const a = field >= 1 && field <= 8 ? out[field] : null;
    if (!a) {
      r.skip(wt);
    } else if (field === 8) {
      // Wire form: the length, then the element's bytes.
      const [s, e] = r.range();
      const packed = a as Buffer;
      packed.writeUInt32LE(e - s, at[8]);
      r.buf.copy(packed, at[8] + 4, s, e);
      at[8] += 4 + e - s;
    } else if (field >= 6) {
      const width = WIDTH[field];
      const dest = a as Float32Array | Float64Array;
      if (wt === WT_BYTES) {
        const run = r.bytes();
        new Uint8Array(dest.buffer, dest.byteOffset + at[field] * width, run.length).set(run);
        at[field] += run.length / width;
      } else {
        dest[at[field]++] = field === 6 ? r.float() : r.double();
      }
    } else if (wt === WT_BYTES) {
      const [s, e] = r.range();
      if (s < e) {
        r.pos = s;
        at[field] = fillVarints(r, field, a as ContentsArray, at[field], e);
      }
    } else {
      at[field] = fillVarints(r, field, a as ContentsArray, at[field], r.pos);
    }
  }
}

/**
 * An `InferTensorContents` in [start, end), for a tensor whose shape declares `declared`
 * elements (-1: none). Only a field holding exactly that many is materialised: the others fail
 * the request on their count, so counting them is enough. Before, every element became a JS
 * value first, and one message of one-byte varints (1 byte each on the wire, 8+ in a JS array)
 * or empty bytes_contents (2 bytes each, a Buffer object each) exhausted the heap. bytes_contents
 * that do match the shape are copied into one buffer in wire form (ts/packed-bytes.ts): as a
 * Buffer each, the 30M empty elements of a 57 MiB message took 3.9 GB of RSS and 48 s, and 60M
 * (114 MiB; gRPC allows 2 GiB) ended the process with V8 out of memory.
 */
function decodeContents(r: WireReader, start: number, end: number, declared: number): TensorContents {
  const saved = r.pos;
  r.pos = start;
  const counts = countContents(r, end);
  const c: Record<string, unknown> = {};
  const out: (ContentsArray | Buffer | null)[] = counts.map(() => null);
  let fill = false;
  for (let field = 1; field <= 8; field++) {
    const { count, only } = counts[field];
    if (count === 0) continue;
    const name = CONTENTS_FIELDS[field];
    if (count !== declared) {
      c[name] = { miscounted: true, length: count } satisfies Miscounted;
    } else if (only && only.byteOffset % WIDTH[field] === 0) {
      // One aligned packed run: a view of the message, no copy.
      c[name] = field === 6 ? new Float32Array(only.buffer, only.byteOffset, count) : new Float64Array(only.buffer, only.byteOffset, count);
    } else if (field === 8) {
      const packed = Buffer.allocUnsafe(4 * count + counts[field].bytes);
      out[field] = packed;
      c[name] = new PackedBytes(packed, count, 'bytes_contents');
      fill = true;
    } else {
      c[name] = out[field] = newContentsArray(field, count);
      fill = true;
    }
  }
  if (fill) {
    r.pos = start;
    fillContents(r, end, out);
  }
  r.pos = saved;
  return c as TensorContents;
}

/**
 * An InferInputTensor or InferOutputTensor (`kind`, for messages). Its contents are decoded
 * once the whole tensor is read: protobuf fields may come in any order, and the shape bounds
 * what the contents may materialise.
 */
function decodeTensor(r: WireReader, kind: 'input' | 'output'): TensorMessage {
  spendEntry(r);
  const [start, end] = r.range();
  const saved = r.pos;
  r.pos = start;
  const t: TensorMessage = { name: '', datatype: '', shape: [], parameters: null, contents: null };
  let dims = 0;
  let contents: [number, number] | null = null;
  while (r.pos < end) {
    const [field, wt] = r.tag();
    switch (field) {
      case 1: r.expect(field, wt, WT_BYTES); t.name = r.string(); break;
      case 2: r.expect(field, wt, WT_BYTES); t.datatype = r.string(); break;
      case 3: dims += pushShape(r, wt, t.shape); break;
      case 4: r.expect(field, wt, WT_BYTES); t.parameters = decodeParamEntry(r, t.parameters ?? new Map()); break;
      case 5: r.expect(field, wt, WT_BYTES); contents = r.range(); break;
      default: r.skip(wt);
    }
  }
  if (dims > MAX_SHAPE_DIMS) {
    throw invalidArg(`the shape of ${kind} '${clip(t.name)}' has ${dims} dimensions; at most ${MAX_SHAPE_DIMS} are supported`);
  }
  if (contents) t.contents = decodeContents(r, contents[0], contents[1], declaredCount(t.shape));
  r.pos = saved;
  return t;
}

function decodeRequestedOutput(r: WireReader): RequestedOutputMessage {
  spendEntry(r);
  const [start, end] = r.range();
  const saved = r.pos;
  r.pos = start;
  const o: RequestedOutputMessage = { name: '', parameters: null };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field === 1) {
      r.expect(field, wt, WT_BYTES);
      o.name = r.string();
    } else if (field === 2) {
      r.expect(field, wt, WT_BYTES);
      o.parameters = decodeParamEntry(r, o.parameters ?? new Map());
    } else r.skip(wt);
  }
  r.pos = saved;
  return o;
}

/** ModelInferRequest (server side). */
export function decodeInferRequest(buf: Buffer): InferRequestMessage {
  const r = new WireReader(buf, 0, buf.length, 'ModelInferRequest');
  entriesLeft = MAX_MESSAGE_ENTRIES;
  const m: InferRequestMessage = {
    modelName: '', modelVersion: '', id: '', parameters: null, inputs: [], outputs: [], rawInputContents: [],
  };
  while (!r.done) {
    const [field, wt] = r.tag();
    if (field <= 7 && wt !== WT_BYTES) r.expect(field, wt, WT_BYTES);
    switch (field) {
      case 1: m.modelName = r.string(); break;
      case 2: m.modelVersion = r.string(); break;
      case 3: m.id = r.string(); break;
      case 4: m.parameters = decodeParamEntry(r, m.parameters ?? new Map()); break;
      case 5: m.inputs.push(decodeTensor(r, 'input')); break;
      case 6: m.outputs.push(decodeRequestedOutput(r)); break;
      case 7: spendEntry(r); m.rawInputContents.push(r.bytes()); break;
      default: r.skip(wt);
    }
  }
  return m;
}

function decodeResponseBody(r: WireReader, end: number): InferResponseMessage {
  const m: InferResponseMessage = {
    modelName: '', modelVersion: '', id: '', parameters: null, outputs: [], rawOutputContents: [],
  };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field <= 6 && wt !== WT_BYTES) r.expect(field, wt, WT_BYTES);
    switch (field) {
      case 1: m.modelName = r.string(); break;
      case 2: m.modelVersion = r.string(); break;
      case 3: m.id = r.string(); break;
      case 4: m.parameters = decodeParamEntry(r, m.parameters ?? new Map()); break;
      case 5: m.outputs.push(decodeTensor(r, 'output')); break;
      case 6: spendEntry(r); m.rawOutputContents.push(r.bytes()); break;
      default: r.skip(wt);
    }
  }
  return m;
}

/** ModelInferResponse (client side). */
export function decodeInferResponse(buf: Buffer): InferResponseMessage {
  entriesLeft = MAX_MESSAGE_ENTRIES;
  return decodeResponseBody(new WireReader(buf, 0, buf.length, 'ModelInferResponse'), buf.length);
}

/** ModelStreamInferResponse (client side). */
export function decodeStreamResponse(buf: Buffer): StreamResponseMessage {
  const r = new WireReader(buf, 0, buf.length, 'ModelStreamInferResponse');
  entriesLeft = MAX_MESSAGE_ENTRIES;
  const m: StreamResponseMessage = { errorMessage: '', inferResponse: null };
  while (!r.done) {
    const [field, wt] = r.tag();
    if (field === 1) {
      r.expect(field, wt, WT_BYTES);
      m.errorMessage = r.string();
    } else if (field === 2) {
      r.expect(field, wt, WT_BYTES);
      const [start, end] = r.range();
      r.pos = start;
      m.inferResponse = decodeResponseBody(r, end);
    } else r.skip(wt);
  }
  return m;
}

/** A parameter map as a plain record (for the shared request code), keys made safe. */
export function paramRecord(map: ParamMap | null): Record<string, boolean | number | bigint | string> {
  const out: Record<string, boolean | number | bigint | string> = Object.create(null) as Record<string, never>;
  if (map) for (const [key, p] of map) out[key] = p.value;
  return out;
}
