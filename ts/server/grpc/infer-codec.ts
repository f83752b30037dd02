/**
 * Decoding of the inference messages (ModelInferRequest on the server, ModelInferResponse and
 * ModelStreamInferResponse in the client), written by hand for the hot path: `raw_*_contents`
 * and BYTES elements stay views of the received message, packed fixed-width typed contents
 * become typed arrays over it, shapes are plain numbers (no Long objects), unknown fields are
 * skipped as proto3 requires, and malformed input is an INVALID_ARG naming the problem.
 * Field numbers are Triton's (proto/grpc_service.proto; triton-protocol.md §2.2).
 */
import { WireReader, WT_BYTES, WT_FIXED32, WT_FIXED64, WT_VARINT, asInt32, asInt64 } from './wire';

export type ParamKind = 'bool' | 'int64' | 'string' | 'double' | 'uint64';

/** One `InferParameter`: which member of its oneof is set, and the value. */
export interface InferParam {
  kind: ParamKind;
  value: boolean | number | bigint | string;
}

/** A `map<string, InferParameter>`; a Map so no key can reach Object.prototype. */
export type ParamMap = Map<string, InferParam>;

/** `InferTensorContents`: the typed fields that carried data (empty fields stay absent). */
export interface TensorContents {
  bool_contents?: Uint8Array;
  int_contents?: Int32Array;
  int64_contents?: BigInt64Array;
  uint_contents?: Uint32Array;
  uint64_contents?: BigUint64Array;
  fp32_contents?: Float32Array;
  fp64_contents?: Float64Array;
  bytes_contents?: Buffer[];
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

/** One `map<string, InferParameter>` entry (key = 1, value = 2), added to `map`. */
function decodeParamEntry(r: WireReader, map: ParamMap): ParamMap {
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

/** Repeated varints, packed (one length-delimited run) or not (one tag per element). */
function pushVarints(r: WireReader, wt: number, out: (number | bigint)[]): void {
  if (wt === WT_VARINT) {
    out.push(r.varint());
    return;
  }
  if (wt !== WT_BYTES) r.fail(`repeated varint field has wire type ${wt}`);
  const [start, end] = r.range();
  const saved = r.pos;
  r.pos = start;
  while (r.pos < end) out.push(r.varint());
  r.pos = saved;
}

/** Repeated fixed-width values: packed runs are kept as byte views; unpacked ones are collected. */
function pushFixed(r: WireReader, field: number, wt: number, width: 4 | 8, out: Buffer[]): void {
  if (wt === WT_BYTES) {
    const bytes = r.bytes();
    if (bytes.length % width !== 0) r.fail(`packed ${width * 8}-bit field of ${bytes.length} bytes`);
    out.push(bytes);
    return;
  }
  r.expect(field, wt, width === 4 ? WT_FIXED32 : WT_FIXED64);
  const start = r.pos;
  if (width === 4) r.float();
  else r.double();
  out.push(r.buf.subarray(start, start + width));
}

/** Fixed-width chunks as one typed array (a view of the message when there is one aligned chunk). */
type FloatArrayConstructor<T> = { new (b: ArrayBuffer, o: number, n: number): T; new (n: number): T; BYTES_PER_ELEMENT: number };

function fixedArray<T extends Float32Array | Float64Array>(chunks: Buffer[], Ctor: FloatArrayConstructor<T>): T {
  const width = Ctor.BYTES_PER_ELEMENT;
  if (chunks.length === 1 && chunks[0].byteOffset % width === 0) {
    return new Ctor(chunks[0].buffer as ArrayBuffer, chunks[0].byteOffset, chunks[0].length / width);
  }
  const joined = Buffer.concat(chunks);
  const out = new Ctor(joined.length / width);
  new Uint8Array(out.buffer).set(joined);
  return out;
}

function decodeContents(r: WireReader): TensorContents {
  const [start, end] = r.range();
  const saved = r.pos;
  r.pos = start;
  const varints: (number | bigint)[][] = [[], [], [], [], [], []];
  const fp32: Buffer[] = [];
  const fp64: Buffer[] = [];
  const bytes: Buffer[] = [];
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field >= 1 && field <= 5) pushVarints(r, wt, varints[field]);
    else if (field === 6) pushFixed(r, field, wt, 4, fp32);
    else if (field === 7) pushFixed(r, field, wt, 8, fp64);
    else if (field === 8) {
      r.expect(field, wt, WT_BYTES);
      bytes.push(r.bytes());
    } else r.skip(wt);
  }
  r.pos = saved;
  const c: TensorContents = {};
  const [, bools, ints, int64s, uints, uint64s] = varints;
  if (bools.length) c.bool_contents = Uint8Array.from(bools, (v) => (v !== 0 ? 1 : 0));
  if (ints.length) c.int_contents = Int32Array.from(ints, asInt32);
  if (int64s.length) c.int64_contents = BigInt64Array.from(int64s, (v) => BigInt.asIntN(64, BigInt(v)));
  if (uints.length) c.uint_contents = Uint32Array.from(uints, (v) => (typeof v === 'number' ? v >>> 0 : Number(BigInt.asUintN(32, v))));
  if (uint64s.length) c.uint64_contents = BigUint64Array.from(uint64s, (v) => BigInt(v));
  if (fp32.length) c.fp32_contents = fixedArray(fp32, Float32Array);
  if (fp64.length) c.fp64_contents = fixedArray(fp64, Float64Array);
  if (bytes.length) c.bytes_contents = bytes;
  return c;
}

function pushShape(r: WireReader, wt: number, shape: (number | string)[]): void {
  const dims: (number | bigint)[] = [];
  pushVarints(r, wt, dims);
  for (const d of dims) {
    const v = asInt64(d);
    shape.push(typeof v === 'number' ? v : v.toString());
  }
}

/** An InferInputTensor or InferOutputTensor. */
function decodeTensor(r: WireReader): TensorMessage {
  const [start, end] = r.range();
  const saved = r.pos;
  r.pos = start;
  const t: TensorMessage = { name: '', datatype: '', shape: [], parameters: null, contents: null };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    switch (field) {
      case 1: r.expect(field, wt, WT_BYTES); t.name = r.string(); break;
      case 2: r.expect(field, wt, WT_BYTES); t.datatype = r.string(); break;
      case 3: pushShape(r, wt, t.shape); break;
      case 4: r.expect(field, wt, WT_BYTES); t.parameters = decodeParamEntry(r, t.parameters ?? new Map()); break;
      case 5: r.expect(field, wt, WT_BYTES); t.contents = decodeContents(r); break;
      default: r.skip(wt);
    }
  }
  r.pos = saved;
  return t;
}

function decodeRequestedOutput(r: WireReader): RequestedOutputMessage {
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
      case 5: m.inputs.push(decodeTensor(r)); break;
      case 6: m.outputs.push(decodeRequestedOutput(r)); break;
      case 7: m.rawInputContents.push(r.bytes()); break;
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
      case 5: m.outputs.push(decodeTensor(r)); break;
      case 6: m.rawOutputContents.push(r.bytes()); break;
      default: r.skip(wt);
    }
  }
  return m;
}

/** ModelInferResponse (client side). */
export function decodeInferResponse(buf: Buffer): InferResponseMessage {
  return decodeResponseBody(new WireReader(buf, 0, buf.length, 'ModelInferResponse'), buf.length);
}

/** ModelStreamInferResponse (client side). */
export function decodeStreamResponse(buf: Buffer): StreamResponseMessage {
  const r = new WireReader(buf, 0, buf.length, 'ModelStreamInferResponse');
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
