/**
 * The ONNX writer (ts/tools/onnx): wire encoding, the structure of the encoded messages (read
 * back with a tiny decoder below), and the generated models run through onnxruntime-node with
 * outputs compared to values computed here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startOrtChild, type OrtChild } from './ort-child';
import {
  BATCH_DIM, CLASSIFIER_LAYERS, CLASSIFIER_SEED, ElemType, FIELD, ModelDatatype, ProtoWriter,
  addSubModel, classifierModel, encodeModel, encodeTensor, identityModel, mlpModel, mlpWeights,
  preprocess, preprocessModel, preprocessParams, varintSize,
} from '../../ts/tools/onnx';

// ---- a minimal protobuf reader, independent of the writer ----

interface Field { field: number; wire: number; value: bigint | Buffer }

function decode(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[pos++];
      if (b === undefined) throw new Error('truncated varint');
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
    }
  };
  const take = (n: number): Buffer => {
    if (pos + n > buf.length) throw new Error('truncated field');
    pos += n;
    return buf.subarray(pos - n, pos);
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const wire = tag & 7;
    const field = tag >>> 3;
    if (wire === 0) out.push({ field, wire, value: varint() });
    else if (wire === 1) out.push({ field, wire, value: take(8) });
    else if (wire === 2) out.push({ field, wire, value: take(Number(varint())) });
    else if (wire === 5) out.push({ field, wire, value: take(4) });
    else throw new Error(`wire type ${wire}`);
  }
  return out;
}
const all = (fields: Field[], n: number): Field[] => fields.filter((f) => f.field === n);
const one = (fields: Field[], n: number): Field => {
  const found = all(fields, n);
  if (found.length !== 1) throw new Error(`field ${n} occurs ${found.length} times`);
  return found[0]!;
};
const bytes = (f: Field): Buffer => f.value as Buffer;
const str = (f: Field): string => bytes(f).toString('utf8');
const num = (f: Field): number => Number(f.value as bigint);
const sub = (f: Field): Field[] => decode(bytes(f));

/** Dims of a ValueInfoProto as numbers, dim_param strings or null. */
function valueInfoShape(info: Field[]): { name: string; elemType: number; dims: (number | string | null)[] } {
  const tensorType = sub(one(sub(one(info, FIELD.valueInfo.type)), FIELD.type.tensorType));
  const dims = all(sub(one(tensorType, FIELD.tensorType.shape)), FIELD.shape.dim).map((d) => {
    const dim = sub(d);
    if (all(dim, FIELD.dim.dimValue).length) return num(one(dim, FIELD.dim.dimValue));
    if (all(dim, FIELD.dim.dimParam).length) return str(one(dim, FIELD.dim.dimParam));
    return null;
  });
  return { name: str(one(info, FIELD.valueInfo.name)), elemType: num(one(tensorType, FIELD.tensorType.elemType)), dims };
}

describe('protobuf writer', () => {
  it('encodes varints, including 64-bit and negative values', () => {
    const w = new ProtoWriter().varint(1, 1).varint(2, 300).varint(3, -1).varint(4, 2n ** 63n);
    expect(w.finish().toString('hex')).toBe(
      '0801' + '10ac02' + '18' + 'ff'.repeat(9) + '01' + '20' + '80'.repeat(9) + '01');
    expect([0, 127, 128, 16383, 16384, -1].map(varintSize)).toEqual([1, 1, 2, 2, 3, 10]);
    expect(() => new ProtoWriter().varint(1, 2 ** 60)).toThrow(/safe integer/);
  });

  it('encodes fixed-width, length-delimited, packed and nested fields', () => {
    const w = new ProtoWriter().float(1, 1).double(2, -2).fixed32(3, 7).fixed64(4, 5n).string(5, 'hé');
    expect(w.finish().toString('hex')).toBe(
      '0d0000803f' + '11' + '00000000000000c0' + '1d07000000' + '210500000000000000' + '2a0368c3a9');
    expect(new ProtoWriter().packedVarints(4, [3, 270, 86942]).finish().toString('hex')).toBe('2206038e029ea705');
    expect(new ProtoWriter().packedFloats(1, [1, 2]).finish().toString('hex')).toBe('0a080000803f00000040');
    expect(new ProtoWriter().packedDoubles(1, []).length).toBe(0);
    const inner = new ProtoWriter().varint(1, 150);
    expect(new ProtoWriter().message(3, inner).finish().toString('hex')).toBe('1a03089601');
  });

  it('keeps big payloads whole and in order', () => {
    const big = Buffer.alloc(100_000, 7);
    const inner = new ProtoWriter().varint(1, 1).bytes(2, big).varint(3, 3);
    const out = new ProtoWriter().message(1, inner).string(2, 'end').finish();
    const [msg, end] = decode(out);
    expect(str(end!)).toBe('end');
    const fields = sub(msg!);
    expect(fields.map((f) => f.field)).toEqual([1, 2, 3]);
    expect(bytes(fields[1]!).equals(big)).toBe(true);
  });
});

describe('ONNX messages', () => {
  it('starts a model with ir_version then producer_name "infernode"', () => {
    const model = identityModel('FP32', [4]);
    const head = Buffer.from([0x08, 9, 0x12, 9, ...Buffer.from('infernode')]);
    expect(model.subarray(0, head.length).equals(head)).toBe(true);
    const top = decode(model);
    expect(top.map((f) => f.field)).toEqual([1, 2, 6, 7, 8]);
    const opset = sub(one(top, FIELD.model.opsetImport));
    expect(str(one(opset, FIELD.opset.domain))).toBe('');
    expect(num(one(opset, FIELD.opset.version))).toBe(17);
  });

  it('encodes graph, node, value info with a symbolic batch dimension', () => {
    const graph = sub(one(decode(identityModel('INT64', [3, 'n', null])), FIELD.model.graph));
    expect(str(one(graph, FIELD.graph.name))).toBe('identity_int64');
    const node = sub(one(graph, FIELD.graph.node));
    expect(str(one(node, FIELD.node.opType))).toBe('Identity');
    expect(all(node, FIELD.node.input).map(str)).toEqual(['INPUT0']);
    expect(all(node, FIELD.node.output).map(str)).toEqual(['OUTPUT0']);
    const want = { elemType: ElemType.INT64, dims: [BATCH_DIM, 3, 'n', null] };
    expect(valueInfoShape(sub(one(graph, FIELD.graph.input)))).toEqual({ name: 'INPUT0', ...want });
    expect(valueInfoShape(sub(one(graph, FIELD.graph.output)))).toEqual({ name: 'OUTPUT0', ...want });
  });

  it('encodes attributes with their type discriminator', () => {
    const model = encodeModel({
      graph: {
        name: 'g',
        nodes: [{ opType: 'Softmax', inputs: ['x'], outputs: ['y'], attributes: [{ name: 'axis', i: -1 }, { name: 'fs', floats: [0.5] }] }],
        inputs: [{ name: 'x', elemType: ElemType.FLOAT, dims: [2] }],
        outputs: [{ name: 'y', elemType: ElemType.FLOAT, dims: [2] }],
      },
    });
    const node = sub(one(sub(one(decode(model), FIELD.model.graph)), FIELD.graph.node));
    const [axis, fs] = all(node, FIELD.node.attribute).map(sub);
    expect(str(one(axis!, FIELD.attribute.name))).toBe('axis');
    expect(BigInt.asIntN(64, one(axis!, FIELD.attribute.i).value as bigint)).toBe(-1n);
    expect(num(one(axis!, FIELD.attribute.type))).toBe(2);
    expect(bytes(one(fs!, FIELD.attribute.floats)).readFloatLE(0)).toBe(0.5);
    expect(num(one(fs!, FIELD.attribute.type))).toBe(6);
  });

  it('encodes tensors with raw_data or string_data and checks sizes', () => {
    const t = decode(encodeTensor({ name: 'w', elemType: ElemType.FLOAT, dims: [2, 3], raw: new Float32Array([1, 2, 3, 4, 5, 6]) }));
    expect(all(t, FIELD.tensor.dims).map(num)).toEqual([2, 3]);
    expect(num(one(t, FIELD.tensor.dataType))).toBe(1);
    expect(str(one(t, FIELD.tensor.name))).toBe('w');
    expect(Array.from(new Float32Array(Uint8Array.from(bytes(one(t, FIELD.tensor.rawData))).buffer))).toEqual([1, 2, 3, 4, 5, 6]);
    const s = decode(encodeTensor({ elemType: ElemType.STRING, dims: [2], strings: ['a', 'bc'] }));
    expect(all(s, FIELD.tensor.stringData).map(str)).toEqual(['a', 'bc']);
    expect(() => encodeTensor({ name: 'x', elemType: ElemType.FLOAT, dims: [3], raw: new Float32Array(2) })).toThrow(/expected 3/);
  });

  it('is deterministic for a seed', () => {
    expect(mlpModel([8, 4], 3).equals(mlpModel([8, 4], 3))).toBe(true);
    expect(mlpModel([8, 4], 3).equals(mlpModel([8, 4], 4))).toBe(false);
    const { weights } = mlpWeights([64, 16], 1);
    expect(Math.max(...weights[0]!.map(Math.abs))).toBeLessThanOrEqual(1 / 8);
  });

  it('matches the committed example models', () => {
    const root = path.join(__dirname, '..', '..', 'examples', 'models');
    expect(readFileSync(path.join(root, 'mlp_classifier', '1', 'model.onnx')).equals(classifierModel())).toBe(true);
    expect(readFileSync(path.join(root, 'identity_fp32', '1', 'model.onnx')).equals(identityModel('FP32', ['length']))).toBe(true);
  });
});

// ---- the models through onnxruntime-node ----
//
// onnxruntime-node runs in a child process: its ONNX Runtime library must not share a process
// with the one infernode's addon loaded (when the suites run in band, two ONNX Runtimes in one
// process deadlock), and under Jest's sandbox its native outputs would be typed arrays of the
// outer realm, failing onnxruntime-common's `instanceof` checks. Data crosses by structured
// clone (IPC with advanced serialization), so results are compared as plain lists.

type OrtType = 'float32' | 'float16' | 'float64' | 'int8' | 'int16' | 'int32' | 'int64'
  | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'bool' | 'string';
type OrtData = ArrayLike<unknown>;
interface Feed { type: OrtType; data: OrtData; dims: number[] }
interface RunResult { inputNames: string[]; outputNames: string[]; outputs: Record<string, Feed> }

const ORT_TYPE: Partial<Record<ModelDatatype, OrtType>> = {
  FP32: 'float32', FP16: 'float16', FP64: 'float64', INT8: 'int8', INT16: 'int16', INT32: 'int32',
  INT64: 'int64', UINT8: 'uint8', UINT16: 'uint16', UINT32: 'uint32', UINT64: 'uint64', BOOL: 'bool', STRING: 'string',
};

const ORT_CHILD = `
const ort = require(process.argv[1]);
process.on('message', async ({ id, model, feeds }) => {
  try {
    const session = await ort.InferenceSession.create(model);
    const inputs = {};
    for (const [name, f] of Object.entries(feeds)) inputs[name] = new ort.Tensor(f.type, f.data, f.dims);
    const results = await session.run(inputs);
    const outputs = {};
    for (const [name, t] of Object.entries(results)) outputs[name] = { type: t.type, dims: t.dims, data: t.data };
    process.send({ id, result: { inputNames: session.inputNames, outputNames: session.outputNames, outputs } });
    await session.release();
  } catch (e) {
    process.send({ id, error: String((e && e.stack) || e) });
  }
});
process.on('disconnect', () => process.exit(0));`;

let ort: OrtChild<{ model: Buffer; feeds: Record<string, Feed> }, RunResult>;

beforeAll(() => {
  ort = startOrtChild(ORT_CHILD);
});
afterAll(() => ort.close());

/** Loads `model` in onnxruntime-node and runs it once on `feeds`. */
function runOrt(model: Buffer, feeds: Record<string, Feed>): Promise<RunResult> {
  return ort.run({ model, feeds });
}

/** Deterministic test data of `n` elements, with negatives and large magnitudes where the type has them. */
function sample(dtype: ModelDatatype, n: number, salt: number): OrtData {
  const k = (i: number): number => ((i + 1) * 2654435761 + salt * 40503) >>> 0;
  switch (dtype) {
    case 'FP32': return Float32Array.from({ length: n }, (_, i) => (k(i) % 20001 - 10000) / 64);
    case 'FP64': return Float64Array.from({ length: n }, (_, i) => (k(i) - 2 ** 31) / 3);
    case 'FP16': return Uint16Array.from({ length: n }, (_, i) => toHalf((k(i) % 201) - 100));
    case 'INT8': return Int8Array.from({ length: n }, (_, i) => k(i));
    case 'INT16': return Int16Array.from({ length: n }, (_, i) => k(i));
    case 'INT32': return Int32Array.from({ length: n }, (_, i) => k(i));
    case 'UINT8': return Uint8Array.from({ length: n }, (_, i) => k(i));
    case 'UINT16': return Uint16Array.from({ length: n }, (_, i) => k(i));
    case 'UINT32': return Uint32Array.from({ length: n }, (_, i) => k(i));
    case 'INT64': return BigInt64Array.from({ length: n }, (_, i) => BigInt(k(i)) * 3_000_000_017n - 2n ** 62n);
    case 'UINT64': return BigUint64Array.from({ length: n }, (_, i) => BigInt(k(i)) * 4_000_000_007n);
    case 'BOOL': return Uint8Array.from({ length: n }, (_, i) => k(i) & 1);
    case 'STRING': return Array.from({ length: n }, (_, i) => `s${k(i).toString(36)}${i % 3 ? 'é' : ''}`);
    default: throw new Error(`no sample for ${dtype}`);
  }
}

/** FP16 bits of a small integer (exact for |v| <= 2048). */
function toHalf(v: number): number {
  if (v === 0) return 0;
  const a = Math.abs(v);
  const e = Math.floor(Math.log2(a));
  return (v < 0 ? 0x8000 : 0) | ((e + 15) << 10) | Math.round((a / 2 ** e - 1) * 1024);
}

/** Value of normal or subnormal FP16 bits. */
function fromHalf(h: number): number {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

/** Elementwise a ± b with the element type's rounding and wrap-around. */
function elementwise(dtype: ModelDatatype, a: OrtData, b: OrtData, sign: 1 | -1): unknown[] {
  const n = a.length;
  if (dtype === 'FP16') {
    return Array.from({ length: n }, (_, i) => toHalf(fromHalf(a[i] as number) + sign * fromHalf(b[i] as number)));
  }
  if (dtype === 'INT64' || dtype === 'UINT64') {
    const wrap = dtype === 'INT64' ? BigInt.asIntN : BigInt.asUintN;
    return Array.from({ length: n }, (_, i) => wrap(64, (a[i] as bigint) + BigInt(sign) * (b[i] as bigint)));
  }
  // A typed array of the input's own kind rounds (FP32) and wraps (integers) as ONNX does.
  const out = new (a.constructor as new (n: number) => { [i: number]: number; length: number })(n);
  for (let i = 0; i < n; i++) out[i] = (a[i] as number) + sign * (b[i] as number);
  return Array.from(out as ArrayLike<unknown>);
}

/** The MLP's forward pass in float64 from the same float32 weights. */
function forward(layers: readonly number[], seed: number, input: Float32Array, batch: number): Float64Array {
  const { weights, biases } = mlpWeights(layers, seed);
  let x: ArrayLike<number> = input;
  for (let l = 0; l + 1 < layers.length; l++) {
    const [n, m, w, b] = [layers[l]!, layers[l + 1]!, weights[l]!, biases[l]!];
    const y = new Float64Array(batch * m);
    for (let r = 0; r < batch; r++) {
      for (let j = 0; j < m; j++) {
        let s = b[j]!;
        for (let i = 0; i < n; i++) s += x[r * n + i]! * w[i * m + j]!;
        y[r * m + j] = l + 2 < layers.length ? Math.max(0, s) : s;
      }
    }
    x = y;
  }
  return x as Float64Array;
}

describe('generated models in onnxruntime-node', () => {
  const dtypes = Object.keys(ORT_TYPE) as ModelDatatype[];

  it.each(dtypes)('identity %s returns its input', async (dtype) => {
    const type = ORT_TYPE[dtype]!;
    const data = sample(dtype, 12, 1);
    const run = await runOrt(identityModel(dtype, [4]), { INPUT0: { type, data, dims: [3, 4] } });
    expect(run.inputNames).toEqual(['INPUT0']);
    expect(run.outputNames).toEqual(['OUTPUT0']);
    const out = run.outputs.OUTPUT0!;
    expect(out.type).toBe(type);
    expect(out.dims).toEqual([3, 4]);
    expect(Array.from(out.data)).toEqual(Array.from(data));
  });

  it.each(dtypes.filter((d) => d !== 'BOOL' && d !== 'STRING'))('add_sub %s adds and subtracts', async (dtype) => {
    const type = ORT_TYPE[dtype]!;
    const a = sample(dtype, 32, 2);
    const b = sample(dtype, 32, 3);
    const run = await runOrt(addSubModel(dtype), { INPUT0: { type, data: a, dims: [2, 16] }, INPUT1: { type, data: b, dims: [2, 16] } });
    expect(run.outputNames).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(run.outputs.OUTPUT0!.dims).toEqual([2, 16]);
    expect(Array.from(run.outputs.OUTPUT0!.data)).toEqual(elementwise(dtype, a, b, 1));
    expect(Array.from(run.outputs.OUTPUT1!.data)).toEqual(elementwise(dtype, a, b, -1));
  });

  it.each([
    ['classifier', CLASSIFIER_LAYERS, CLASSIFIER_SEED, () => classifierModel()],
    ['medium', [64, 128, 10], 11, () => mlpModel([64, 128, 10], 11)],
    ['deeper', [32, 48, 48, 5], 5, () => mlpModel([32, 48, 48, 5], 5)],
  ] as const)('mlp %s matches a JS forward pass', async (_name, layers, seed, make) => {
    const batch = 5;
    const input = Float32Array.from(sample('FP32', batch * layers[0]!, 9) as Float32Array, (v) => v / 100);
    const run = await runOrt(make(), { input: { type: 'float32', data: input, dims: [batch, layers[0]!] } });
    expect(run.inputNames).toEqual(['input']);
    expect(run.outputNames).toEqual(['logits']);
    const logits = run.outputs.logits!;
    expect(logits.dims).toEqual([batch, layers[layers.length - 1]!]);
    const want = forward(layers, seed, input, batch);
    const got = Array.from(logits.data as ArrayLike<number>);
    expect(got).toHaveLength(want.length);
    // Relative to each value, floored at 10% of the largest output: float32 sums that cancel to
    // near zero carry the rounding of their large terms (observed worst: a few 1e-6).
    const floor = 0.1 * Math.max(...Array.from(want, Math.abs));
    const worst = Math.max(...got.map((g, i) => Math.abs(g - want[i]!) / Math.max(Math.abs(want[i]!), floor)));
    expect(worst).toBeLessThanOrEqual(1e-5);
  });

  it('preprocess standardizes each feature bit for bit like its JS reference', async () => {
    const features = 24;
    const batch = 3;
    const input = Float32Array.from(sample('FP32', batch * features, 4) as Float32Array, (v) => v / 50);
    const run = await runOrt(preprocessModel(features, 2), { raw: { type: 'float32', data: input, dims: [batch, features] } });
    expect(run.inputNames).toEqual(['raw']);
    expect(run.outputNames).toEqual(['features']);
    expect(run.outputs.features!.dims).toEqual([batch, features]);
    const want = preprocess(preprocessParams(features, 2), input);
    expect(Array.from(run.outputs.features!.data as ArrayLike<number>)).toEqual(Array.from(want));
    // The constants vary per feature (else a broadcast over the wrong axis would pass).
    expect(new Set(preprocessParams(features, 2).mean).size).toBe(features);
  });
});
