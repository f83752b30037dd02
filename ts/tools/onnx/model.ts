/**
 * Builders for the ONNX protobuf messages (onnx/onnx.proto): ModelProto, GraphProto,
 * NodeProto, AttributeProto, TensorProto, ValueInfoProto with TypeProto.Tensor shapes.
 * Field numbers are those of onnx.proto (stable since IR version 3); see {@link FIELD}.
 */
import { ProtoWriter, littleEndianBytes } from './protobuf';

/** ONNX `TensorProto.DataType` values. */
export const ElemType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  BFLOAT16: 16,
} as const;

/** An ONNX tensor element type value (a `TensorProto.DataType`). */
export type ElemTypeValue = (typeof ElemType)[keyof typeof ElemType];

/** ONNX `AttributeProto.AttributeType` values (the `type` discriminator). */
export const AttributeType = {
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
} as const;

/** Field numbers of the onnx.proto messages this module writes. */
export const FIELD = {
  model: { irVersion: 1, producerName: 2, producerVersion: 3, domain: 4, modelVersion: 5, docString: 6, graph: 7, opsetImport: 8, metadataProps: 14 },
  opset: { domain: 1, version: 2 },
  entry: { key: 1, value: 2 },
  graph: { node: 1, name: 2, initializer: 5, docString: 10, input: 11, output: 12, valueInfo: 13 },
  node: { input: 1, output: 2, name: 3, opType: 4, attribute: 5, docString: 6, domain: 7 },
  attribute: { name: 1, f: 2, i: 3, s: 4, t: 5, floats: 7, ints: 8, strings: 9, type: 20 },
  valueInfo: { name: 1, type: 2, docString: 3 },
  type: { tensorType: 1 },
  tensorType: { elemType: 1, shape: 2 },
  shape: { dim: 1 },
  dim: { dimValue: 1, dimParam: 2 },
  tensor: { dims: 1, dataType: 2, stringData: 6, name: 8, rawData: 9 },
} as const;

/** A dimension: a fixed size, a symbolic name (`dim_param`, e.g. "batch"), or null for unknown. */
export type Dim = number | string | null;

/** A graph input, output or intermediate value: name, element type and shape. */
export interface ValueInfo {
  name: string;
  elemType: ElemTypeValue;
  /** Omit for a value of unknown rank. */
  dims?: readonly Dim[];
  docString?: string;
}

/** A constant tensor (an initializer or a tensor attribute). */
export interface Tensor {
  name?: string;
  elemType: ElemTypeValue;
  dims: readonly number[];
  /** Little-endian element bytes (`raw_data`); for STRING use `strings` instead. */
  raw?: Uint8Array | ArrayBufferView;
  /** Elements of a STRING tensor (`string_data`). */
  strings?: readonly (string | Uint8Array)[];
}

/** A node attribute; exactly one value field is set. */
export type Attribute = { name: string } & (
  | { f: number } | { i: number | bigint } | { s: string | Uint8Array } | { t: Tensor }
  | { floats: readonly number[] } | { ints: readonly (number | bigint)[] } | { strings: readonly (string | Uint8Array)[] }
);

/** An operator application. */
export interface Node {
  opType: string;
  inputs: readonly string[];
  outputs: readonly string[];
  name?: string;
  /** Operator set domain; "" (the default) is the ONNX domain. */
  domain?: string;
  attributes?: readonly Attribute[];
  docString?: string;
}

/** A computation graph: nodes in topological order, constants, inputs and outputs. */
export interface Graph {
  name: string;
  nodes: readonly Node[];
  inputs: readonly ValueInfo[];
  outputs: readonly ValueInfo[];
  initializers?: readonly Tensor[];
  valueInfo?: readonly ValueInfo[];
  docString?: string;
}

/** A whole model. Defaults: IR version 9, ONNX opset 17, producer "infernode". */
export interface Model {
  graph: Graph;
  irVersion?: number;
  /** Operator sets; defaults to `[{ domain: '', version: 17 }]`. */
  opsets?: readonly { domain: string; version: number }[];
  producerName?: string;
  producerVersion?: string;
  domain?: string;
  modelVersion?: number;
  docString?: string;
  metadata?: Readonly<Record<string, string>>;
}

/** IR version written when a model names none (ONNX 1.14+, ONNX Runtime 1.15+). */
export const DEFAULT_IR_VERSION = 9;
/** ONNX operator set version written when a model names none. */
export const DEFAULT_OPSET = 17;

/** Encodes a ModelProto: the bytes of a `.onnx` file. */
export function encodeModel(model: Model): Buffer {
  const F = FIELD.model;
  const w = new ProtoWriter();
  w.varint(F.irVersion, model.irVersion ?? DEFAULT_IR_VERSION);
  w.string(F.producerName, model.producerName ?? 'infernode');
  if (model.producerVersion !== undefined) w.string(F.producerVersion, model.producerVersion);
  if (model.domain !== undefined) w.string(F.domain, model.domain);
  if (model.modelVersion !== undefined) w.varint(F.modelVersion, model.modelVersion);
  if (model.docString !== undefined) w.string(F.docString, model.docString);
  w.message(F.graph, graphWriter(model.graph));
  for (const opset of model.opsets ?? [{ domain: '', version: DEFAULT_OPSET }]) {
    const o = new ProtoWriter();
    o.string(FIELD.opset.domain, opset.domain).varint(FIELD.opset.version, opset.version);
    w.message(F.opsetImport, o);
  }
  for (const [key, value] of Object.entries(model.metadata ?? {})) {
    w.message(F.metadataProps, new ProtoWriter().string(FIELD.entry.key, key).string(FIELD.entry.value, value));
  }
  return w.finish();
}

/** Encodes a GraphProto on its own. */
export function encodeGraph(graph: Graph): Buffer {
  return graphWriter(graph).finish();
}

/** Encodes a TensorProto on its own. */
export function encodeTensor(tensor: Tensor): Buffer {
  return tensorWriter(tensor).finish();
}

/** Encodes a ValueInfoProto on its own. */
export function encodeValueInfo(info: ValueInfo): Buffer {
  return valueInfoWriter(info).finish();
}

/** Encodes a NodeProto on its own. */
export function encodeNode(node: Node): Buffer {
  return nodeWriter(node).finish();
}

function graphWriter(graph: Graph): ProtoWriter {
  const F = FIELD.graph;
  const w = new ProtoWriter();
  for (const node of graph.nodes) w.message(F.node, nodeWriter(node));
  w.string(F.name, graph.name);
  for (const t of graph.initializers ?? []) {
    if (!t.name) throw new Error('an initializer needs a name');
    w.message(F.initializer, tensorWriter(t));
  }
  if (graph.docString !== undefined) w.string(F.docString, graph.docString);
  for (const v of graph.inputs) w.message(F.input, valueInfoWriter(v));
  for (const v of graph.outputs) w.message(F.output, valueInfoWriter(v));
  for (const v of graph.valueInfo ?? []) w.message(F.valueInfo, valueInfoWriter(v));
  return w;
}

function nodeWriter(node: Node): ProtoWriter {
  const F = FIELD.node;
  const w = new ProtoWriter();
  w.repeatedStrings(F.input, node.inputs).repeatedStrings(F.output, node.outputs);
  if (node.name !== undefined) w.string(F.name, node.name);
  w.string(F.opType, node.opType);
  for (const a of node.attributes ?? []) w.message(F.attribute, attributeWriter(a));
  if (node.docString !== undefined) w.string(F.docString, node.docString);
  if (node.domain) w.string(F.domain, node.domain);
  return w;
}

function attributeWriter(a: Attribute): ProtoWriter {
  const F = FIELD.attribute;
  const w = new ProtoWriter().string(F.name, a.name);
  let type: number;
  if ('f' in a) {
    w.float(F.f, a.f); type = AttributeType.FLOAT;
  } else if ('i' in a) {
    w.varint(F.i, a.i); type = AttributeType.INT;
  } else if ('s' in a) {
    w.bytes(F.s, toBytes(a.s)); type = AttributeType.STRING;
  } else if ('t' in a) {
    w.message(F.t, tensorWriter(a.t)); type = AttributeType.TENSOR;
  } else if ('floats' in a) {
    w.repeatedFloats(F.floats, a.floats); type = AttributeType.FLOATS;
  } else if ('ints' in a) {
    w.repeatedVarints(F.ints, a.ints); type = AttributeType.INTS;
  } else {
    w.repeatedBytes(F.strings, a.strings.map(toBytes)); type = AttributeType.STRINGS;
  }
  return w.varint(F.type, type);
}

function tensorWriter(t: Tensor): ProtoWriter {
  const F = FIELD.tensor;
  const w = new ProtoWriter();
  w.repeatedVarints(F.dims, t.dims);
  w.varint(F.dataType, t.elemType);
  if (t.elemType === ElemType.STRING) {
    if (t.raw !== undefined) throw new Error('a STRING tensor takes strings, not raw bytes');
    w.repeatedBytes(F.stringData, (t.strings ?? []).map(toBytes));
  }
  if (t.name !== undefined) w.string(F.name, t.name);
  if (t.elemType !== ElemType.STRING) {
    if (t.strings !== undefined) throw new Error('only a STRING tensor takes strings');
    const raw = t.raw === undefined ? new Uint8Array(0) : littleEndianBytes(t.raw);
    const count = t.dims.reduce((n, d) => n * d, 1);
    const size = ELEM_SIZE[t.elemType];
    if (raw.byteLength !== count * size) {
      throw new Error(`tensor ${t.name ?? ''} has ${raw.byteLength} bytes, expected ${count} × ${size}`);
    }
    w.bytes(F.rawData, raw);
  }
  return w;
}

function valueInfoWriter(v: ValueInfo): ProtoWriter {
  const tensorType = new ProtoWriter().varint(FIELD.tensorType.elemType, v.elemType);
  if (v.dims !== undefined) {
    const shape = new ProtoWriter();
    for (const d of v.dims) {
      const dim = new ProtoWriter();
      if (typeof d === 'number') {
        if (!Number.isInteger(d) || d < 0) throw new Error(`dimension ${d} of ${v.name} must be a non-negative integer`);
        dim.varint(FIELD.dim.dimValue, d);
      } else if (typeof d === 'string') {
        dim.string(FIELD.dim.dimParam, d);
      }
      shape.message(FIELD.shape.dim, dim);
    }
    tensorType.message(FIELD.tensorType.shape, shape);
  }
  const w = new ProtoWriter().string(FIELD.valueInfo.name, v.name);
  w.message(FIELD.valueInfo.type, new ProtoWriter().message(FIELD.type.tensorType, tensorType));
  if (v.docString !== undefined) w.string(FIELD.valueInfo.docString, v.docString);
  return w;
}

/** Bytes per element of each non-string element type. */
const ELEM_SIZE: Record<ElemTypeValue, number> = {
  1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 8: 0, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2,
};

function toBytes(s: string | Uint8Array): Uint8Array {
  return typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
}
