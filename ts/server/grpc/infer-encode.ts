/**
 * Encoding of the inference messages: ModelInferResponse and ModelStreamInferResponse (server)
 * and ModelInferRequest (client). Each message is sized first and then written into one buffer,
 * so a tensor's bytes are copied once (grpc-js adds its frame header with a second copy).
 * Tensor data always travel as `raw_*_contents`, one entry per tensor in order (an empty entry
 * for shared-memory tensors), as Triton and tritonclient do.
 */
import type { InferParam, ParamMap } from './infer-codec';
import { WireWriter, WT_VARINT, lenFieldSize, varintSize } from './wire';

/** A tensor's header as the messages carry it (InferInputTensor / InferOutputTensor). */
export interface TensorHeader {
  name: string;
  datatype: string;
  shape: readonly number[];
  parameters?: ParamMap | null;
}

export interface InferResponseFields {
  modelName: string;
  modelVersion: string;
  id?: string;
  parameters?: ParamMap | null;
  outputs: TensorHeader[];
  rawOutputContents: Uint8Array[];
}

export interface InferRequestFields {
  modelName: string;
  modelVersion?: string;
  id?: string;
  parameters?: ParamMap | null;
  inputs: TensorHeader[];
  outputs: { name: string; parameters?: ParamMap | null }[];
  rawInputContents: Uint8Array[];
}

function varint64Size(v: bigint): number {
  let u = BigInt.asUintN(64, v);
  let n = 1;
  while (u >= 0x80n) {
    u >>= 7n;
    n++;
  }
  return n;
}

/** Integer parameter values: non-negative safe numbers take the fast path. */
function intSize(v: number | bigint): number {
  return typeof v === 'number' && v >= 0 ? varintSize(v) : varint64Size(BigInt(v));
}

function strSize(field: number, s: string): number {
  return s === '' ? 0 : lenFieldSize(field, Buffer.byteLength(s));
}

function paramBodySize(p: InferParam): number {
  switch (p.kind) {
    case 'bool': return 2;
    case 'int64':
    case 'uint64': return 1 + intSize(p.value as number | bigint);
    case 'double': return 9;
    case 'string': return lenFieldSize(3, Buffer.byteLength(p.value as string));
  }
}

function entrySize(key: string, p: InferParam): number {
  return strSize(1, key) + lenFieldSize(2, paramBodySize(p));
}

function mapSize(field: number, map: ParamMap | null | undefined): number {
  if (!map) return 0;
  let n = 0;
  for (const [key, p] of map) n += lenFieldSize(field, entrySize(key, p));
  return n;
}

function shapeBodySize(shape: readonly number[]): number {
  let n = 0;
  for (const d of shape) n += varintSize(d);
  return n;
}

function tensorBodySize(t: TensorHeader): number {
  const shape = t.shape.length ? lenFieldSize(3, shapeBodySize(t.shape)) : 0;
  return strSize(1, t.name) + strSize(2, t.datatype) + shape + mapSize(4, t.parameters);
}

function rawSize(field: number, raw: readonly Uint8Array[]): number {
  let n = 0;
  for (const r of raw) n += lenFieldSize(field, r.byteLength);
  return n;
}

function writeStr(w: WireWriter, field: number, s: string): void {
  if (s !== '') w.string(field, s, Buffer.byteLength(s));
}

function writeInt(w: WireWriter, v: number | bigint): void {
  if (typeof v === 'number' && v >= 0) w.varint(v);
  else w.varint64(BigInt(v));
}

function writeMap(w: WireWriter, field: number, map: ParamMap | null | undefined): void {
  if (!map) return;
  for (const [key, p] of map) {
    w.header(field, entrySize(key, p));
    writeStr(w, 1, key);
    w.header(2, paramBodySize(p));
    switch (p.kind) {
      case 'bool': w.tag(1, WT_VARINT); w.varint(p.value ? 1 : 0); break;
      case 'int64': w.tag(2, WT_VARINT); writeInt(w, p.value as number | bigint); break;
      case 'string': w.string(3, p.value as string, Buffer.byteLength(p.value as string)); break;
      case 'double': w.double(4, p.value as number); break;
      case 'uint64': w.tag(5, WT_VARINT); writeInt(w, p.value as number | bigint); break;
    }
  }
}

function writeTensor(w: WireWriter, field: number, t: TensorHeader): void {
  w.header(field, tensorBodySize(t));
  writeStr(w, 1, t.name);
  writeStr(w, 2, t.datatype);
  if (t.shape.length) {
    w.header(3, shapeBodySize(t.shape));
    for (const d of t.shape) w.varint(d);
  }
  writeMap(w, 4, t.parameters);
}

function responseBodySize(m: InferResponseFields): number {
  let n = strSize(1, m.modelName) + strSize(2, m.modelVersion) + strSize(3, m.id ?? '') + mapSize(4, m.parameters);
  for (const t of m.outputs) n += lenFieldSize(5, tensorBodySize(t));
  return n + rawSize(6, m.rawOutputContents);
}

function writeResponseBody(w: WireWriter, m: InferResponseFields): void {
  writeStr(w, 1, m.modelName);
  writeStr(w, 2, m.modelVersion);
  writeStr(w, 3, m.id ?? '');
  writeMap(w, 4, m.parameters);
  for (const t of m.outputs) writeTensor(w, 5, t);
  for (const raw of m.rawOutputContents) w.bytes(6, raw);
}

/** ModelInferResponse. */
export function encodeInferResponse(m: InferResponseFields): Buffer {
  const w = new WireWriter(responseBodySize(m));
  writeResponseBody(w, m);
  return w.finish();
}

/** ModelStreamInferResponse: an in-band error, or a response. */
export function encodeStreamResponse(m: { errorMessage?: string; inferResponse?: InferResponseFields | null }): Buffer {
  const body = m.inferResponse ? responseBodySize(m.inferResponse) : -1;
  const w = new WireWriter(strSize(1, m.errorMessage ?? '') + (body >= 0 ? lenFieldSize(2, body) : 0));
  writeStr(w, 1, m.errorMessage ?? '');
  if (m.inferResponse) {
    w.header(2, body);
    writeResponseBody(w, m.inferResponse);
  }
  return w.finish();
}

/** ModelInferRequest (client side); inputs in `inputs` order, data in `rawInputContents`. */
export function encodeInferRequest(m: InferRequestFields): Buffer {
  let size = strSize(1, m.modelName) + strSize(2, m.modelVersion ?? '') + strSize(3, m.id ?? '') + mapSize(4, m.parameters);
  for (const t of m.inputs) size += lenFieldSize(5, tensorBodySize(t));
  const outputSizes = m.outputs.map((o) => strSize(1, o.name) + mapSize(2, o.parameters));
  for (const n of outputSizes) size += lenFieldSize(6, n);
  size += rawSize(7, m.rawInputContents);
  const w = new WireWriter(size);
  writeStr(w, 1, m.modelName);
  writeStr(w, 2, m.modelVersion ?? '');
  writeStr(w, 3, m.id ?? '');
  writeMap(w, 4, m.parameters);
  for (const t of m.inputs) writeTensor(w, 5, t);
  m.outputs.forEach((o, i) => {
    w.header(6, outputSizes[i]);
    writeStr(w, 1, o.name);
    writeMap(w, 2, o.parameters);
  });
  for (const raw of m.rawInputContents) w.bytes(7, raw);
  return w.finish();
}
