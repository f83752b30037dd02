/**
 * Wire compatibility. The field numbers below are written down from Triton's grpc_service.proto
 * (triton-protocol.md §2.2) independently of ts/server/grpc/proto: requests are encoded and
 * responses decoded here by hand, so a renumbered field in infernode's .proto or codec fails this
 * suite. It also checks that the .proto's ModelConfig and the config parser's description
 * (model-config-schema.ts) agree field by field, and that infernode's hot-path codec and
 * protobufjs (through the .proto) read each other's bytes.
 */
import { Client, Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
import { MODEL_CONFIG } from '../../../ts/config/model-config-schema';
import type { FieldSpec, MessageSpec } from '../../../ts/config/proto-schema';
import { decodeInferRequest, decodeInferResponse } from '../../../ts/server/grpc/infer-codec';
import { encodeInferRequest, encodeInferResponse } from '../../../ts/server/grpc/infer-encode';
import { ProtoWriter } from '../../../ts/tools/onnx/protobuf';
import { bindStandardModels, fp32Bytes, loadProto, serve, type Served } from './helpers';

/** Triton's numbers, from its grpc_service.proto. */
const F = {
  request: { model_name: 1, model_version: 2, id: 3, parameters: 4, inputs: 5, outputs: 6, raw_input_contents: 7 },
  inputTensor: { name: 1, datatype: 2, shape: 3, parameters: 4, contents: 5 },
  requestedOutput: { name: 1, parameters: 2 },
  mapEntry: { key: 1, value: 2 },
  param: { bool_param: 1, int64_param: 2, string_param: 3, double_param: 4, uint64_param: 5 },
  contents: { bool: 1, int: 2, int64: 3, uint: 4, uint64: 5, fp32: 6, fp64: 7, bytes: 8 },
  response: { model_name: 1, model_version: 2, id: 3, parameters: 4, outputs: 5, raw_output_contents: 6 },
  outputTensor: { name: 1, datatype: 2, shape: 3, parameters: 4, contents: 5 },
  streamResponse: { error_message: 1, infer_response: 2 },
  modelReadyRequest: { name: 1, version: 2 },
  modelReadyResponse: { ready: 1 },
} as const;

/** A minimal independent protobuf reader: field number → values (varints as bigint, the rest as bytes). */
function fields(buf: Buffer): Map<number, (bigint | Buffer)[]> {
  const out = new Map<number, (bigint | Buffer)[]>();
  let pos = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const [field, wt] = [tag >>> 3, tag & 7];
    let value: bigint | Buffer;
    if (wt === 0) value = varint();
    else if (wt === 2) {
      const len = Number(varint());
      value = buf.subarray(pos, pos + len);
      pos += len;
    } else if (wt === 1) {
      value = buf.subarray(pos, pos + 8);
      pos += 8;
    } else if (wt === 5) {
      value = buf.subarray(pos, pos + 4);
      pos += 4;
    } else throw new Error(`wire type ${wt}`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}
const str = (v: bigint | Buffer | undefined): string => (v as Buffer | undefined)?.toString('utf8') ?? '';

function paramEntry(key: string, write: (p: ProtoWriter) => void): ProtoWriter {
  const p = new ProtoWriter();
  write(p);
  return new ProtoWriter().string(F.mapEntry.key, key).message(F.mapEntry.value, p);
}

let s: Served;
let client: Client;
beforeAll(async () => {
  s = await serve(bindStandardModels);
  client = new Client(`127.0.0.1:${s.port}`, credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await s.close();
});

function call(method: string, body: Buffer): Promise<Buffer> {
  const same = (b: Buffer): Buffer => b;
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(`/inference.GRPCInferenceService/${method}`, same, same, body, new Metadata(), {},
      (err: ServiceError | null, res?: Buffer) => (err ? reject(err) : resolve(res!)));
  });
}

test('ModelInferRequest encoded from Triton\'s field numbers; ModelInferResponse decoded the same way', async () => {
  const input = new ProtoWriter()
    .string(F.inputTensor.name, 'IN').string(F.inputTensor.datatype, 'FP32').packedVarints(F.inputTensor.shape, [2, 2]);
  const body = new ProtoWriter()
    .string(F.request.model_name, 'identity')
    .string(F.request.model_version, '1')
    .string(F.request.id, 'compat-1')
    .message(F.request.parameters, paramEntry('priority', (p) => p.varint(F.param.int64_param, 1)))
    .message(F.request.inputs, input)
    .message(F.request.outputs, new ProtoWriter().string(F.requestedOutput.name, 'OUT'))
    .bytes(F.request.raw_input_contents, fp32Bytes([1, 2, 3, 4]))
    .finish();
  const res = fields(await call('ModelInfer', body));
  expect(str(res.get(F.response.model_name)?.[0])).toBe('identity');
  expect(str(res.get(F.response.model_version)?.[0])).toBe('1');
  expect(str(res.get(F.response.id)?.[0])).toBe('compat-1');
  const out = fields(res.get(F.response.outputs)![0] as Buffer);
  expect(str(out.get(F.outputTensor.name)?.[0])).toBe('OUT');
  expect(str(out.get(F.outputTensor.datatype)?.[0])).toBe('FP32');
  const packedShape = out.get(F.outputTensor.shape)![0] as Buffer;
  expect([...packedShape]).toEqual([2, 2]);
  expect(out.has(F.outputTensor.contents)).toBe(false);
  expect(res.get(F.response.raw_output_contents)).toEqual([fp32Bytes([1, 2, 3, 4])]);
});

test('typed contents, packed and unpacked, by Triton\'s numbers', async () => {
  const floats = new ProtoWriter().packedFloats(F.contents.fp32, [0.5, 1.5]);
  const unpackedInts = new ProtoWriter().repeatedVarints(F.contents.int, [1, -2, 3, -4]);
  const req = (model: string, dtype: string, shape: number[], contents: ProtoWriter): Buffer => new ProtoWriter()
    .string(F.request.model_name, model)
    .message(F.request.inputs, new ProtoWriter().string(F.inputTensor.name, 'IN').string(F.inputTensor.datatype, dtype)
      .packedVarints(F.inputTensor.shape, shape).message(F.inputTensor.contents, contents))
    .finish();
  const a = fields(await call('ModelInfer', req('identity', 'FP32', [1, 2], floats)));
  expect(a.get(F.response.raw_output_contents)).toEqual([fp32Bytes([0.5, 1.5])]);
  const b = fields(await call('ModelInfer', req('nobatch', 'INT32', [4], unpackedInts)));
  expect(b.get(F.response.raw_output_contents)).toEqual([Buffer.from(new Int32Array([1, -2, 3, -4]).buffer)]);
});

test('ModelReady by Triton\'s numbers', async () => {
  const res = fields(await call('ModelReady', new ProtoWriter().string(F.modelReadyRequest.name, 'identity').finish()));
  expect(res.get(F.modelReadyResponse.ready)).toEqual([1n]);
});

test('ModelStreamInferResponse by Triton\'s numbers: error_message and infer_response', async () => {
  const same = (b: Buffer): Buffer => b;
  const stream = client.makeBidiStreamRequest('/inference.GRPCInferenceService/ModelStreamInfer', same, same, new Metadata());
  const answers: Buffer[] = [];
  stream.on('data', (b: Buffer) => answers.push(b));
  const done = new Promise((resolve) => stream.on('status', resolve));
  stream.write(new ProtoWriter().string(F.request.model_name, 'nope').string(F.request.id, 'x').finish());
  stream.end();
  await done;
  const res = fields(answers[0]);
  expect(str(res.get(F.streamResponse.error_message)?.[0])).toBe("Request for unknown model: 'nope' is not found");
  expect(str(fields(res.get(F.streamResponse.infer_response)![0] as Buffer).get(F.response.id)?.[0])).toBe('x');
});

describe('the codec and the .proto agree', () => {
  const def = loadProto();
  type Method = { requestSerialize(v: unknown): Buffer; requestDeserialize(b: Buffer): Record<string, unknown>;
    responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): Record<string, unknown> };
  const infer = (def['inference.GRPCInferenceService'] as unknown as Record<string, Method>).ModelInfer;

  test('a protobufjs-encoded request decodes to the same values', () => {
    const bytes = infer.requestSerialize({
      model_name: 'm', model_version: '2', id: 'i',
      parameters: { a: { int64_param: '-5' }, b: { double_param: 0.5 }, c: { uint64_param: '18446744073709551615' }, d: { bool_param: true } },
      inputs: [{ name: 'X', datatype: 'INT64', shape: [3], contents: { int64_contents: ['-1', '0', '9007199254740993'] },
        parameters: { shared_memory_region: { string_param: 'r' } } }],
      outputs: [{ name: 'Y', parameters: { classification: { int64_param: 3 } } }],
      raw_input_contents: [Buffer.from([1, 2, 3])],
    });
    const m = decodeInferRequest(bytes);
    expect(m).toMatchObject({ modelName: 'm', modelVersion: '2', id: 'i', rawInputContents: [Buffer.from([1, 2, 3])] });
    expect([...m.parameters!]).toEqual([
      ['a', { kind: 'int64', value: -5 }], ['b', { kind: 'double', value: 0.5 }],
      ['c', { kind: 'uint64', value: 2n ** 64n - 1n }], ['d', { kind: 'bool', value: true }],
    ]);
    expect(m.inputs[0]).toMatchObject({ name: 'X', datatype: 'INT64', shape: [3] });
    expect([...m.inputs[0].contents!.int64_contents as BigInt64Array]).toEqual([-1n, 0n, 9007199254740993n]);
    expect(m.inputs[0].parameters!.get('shared_memory_region')).toEqual({ kind: 'string', value: 'r' });
    expect(m.outputs[0].parameters!.get('classification')).toEqual({ kind: 'int64', value: 3 });
  });

  test('infernode-encoded messages decode with protobufjs, and back', () => {
    const response = encodeInferResponse({
      modelName: 'm', modelVersion: '1', id: 'i',
      outputs: [{ name: 'A', datatype: 'FP32', shape: [1, 300] }, { name: 'B', datatype: 'BYTES', shape: [0] }],
      rawOutputContents: [Buffer.alloc(1200, 1), Buffer.alloc(0)],
    });
    expect(infer.responseDeserialize(response)).toMatchObject({
      model_name: 'm', model_version: '1', id: 'i',
      outputs: [{ name: 'A', datatype: 'FP32', shape: ['1', '300'] }, { name: 'B', datatype: 'BYTES', shape: ['0'] }],
      raw_output_contents: [Buffer.alloc(1200, 1), Buffer.alloc(0)],
    });
    const request = encodeInferRequest({
      modelName: 'm', inputs: [{ name: 'X', datatype: 'FP32', shape: [2], parameters: new Map([['k', { kind: 'int64', value: -3 }]]) }],
      outputs: [{ name: 'Y' }], rawInputContents: [fp32Bytes([1, 2])],
    });
    expect(infer.requestDeserialize(request)).toMatchObject({
      model_name: 'm', inputs: [{ name: 'X', datatype: 'FP32', shape: ['2'], parameters: { k: { int64_param: '-3' } } }],
      outputs: [{ name: 'Y' }], raw_input_contents: [fp32Bytes([1, 2])],
    });
    const back = decodeInferResponse(infer.responseSerialize({
      model_name: 'm', outputs: [{ name: 'A', datatype: 'FP32', shape: [2], contents: { fp32_contents: [1, 2] } }],
    }));
    expect([...back.outputs[0].contents!.fp32_contents as Float32Array]).toEqual([1, 2]);
  });
});

describe('the .proto\'s ModelConfig matches the config parser\'s description', () => {
  type Descriptor = { field: DescField[]; nestedType: (Descriptor & { name: string; options?: { mapEntry?: boolean } | null })[];
    enumType: { name: string; value: { name: string; number: number }[] }[] };
  type DescField = { name: string; number: number; label: string; type: string; typeName: string };
  const def = loadProto() as unknown as Record<string, { type: Descriptor }>;
  const SCALAR: Record<string, string> = {
    string: 'TYPE_STRING', bool: 'TYPE_BOOL', int32: 'TYPE_INT32', int64: 'TYPE_INT64', uint32: 'TYPE_UINT32',
    uint64: 'TYPE_UINT64', float: 'TYPE_FLOAT', double: 'TYPE_DOUBLE',
  };

  /**
   * The descriptor a (possibly dotted) relative type name refers to: its first part looked up in
   * the enclosing scopes, innermost first, then in the package; the rest inside that one.
   */
  function resolveMessage(typeName: string, scopes: Descriptor[]): Descriptor {
    const [first, ...rest] = typeName.split('.');
    let found: Descriptor | undefined;
    for (const scope of [...scopes].reverse()) {
      found = scope.nestedType.find((x) => x.name === first);
      if (found) break;
    }
    found ??= def[`inference.${first}`].type;
    for (const part of rest) found = found.nestedType.find((x) => x.name === part)!;
    return found;
  }

  function resolveEnum(typeName: string, scopes: Descriptor[]): Descriptor['enumType'][number] {
    const parts = typeName.split('.');
    const name = parts.pop()!;
    const holders = parts.length ? [resolveMessage(parts.join('.'), scopes)] : [...scopes].reverse();
    for (const holder of holders) {
      const found = holder.enumType.find((x) => x.name === name);
      if (found) return found;
    }
    return (def[`inference.${name}`] as unknown as { type: Descriptor['enumType'][number] }).type;
  }

  function compareType(spec: FieldSpec['type'], field: DescField, scopes: Descriptor[], path: string): void {
    if (spec.kind === 'scalar') {
      expect(`${path}: ${field.type}`).toBe(`${path}: ${SCALAR[spec.scalar]}`);
    } else if (spec.kind === 'enum') {
      expect(`${path}: ${field.type}`).toBe(`${path}: TYPE_ENUM`);
      const e = resolveEnum(field.typeName, scopes);
      expect(e.value.map((v) => [v.name, v.number])).toEqual(spec.enumSpec.values.map((v, i) => [v, i]));
    } else {
      expect(`${path}: ${field.type}`).toBe(`${path}: TYPE_MESSAGE`);
      const nested = resolveMessage(field.typeName, scopes);
      compareMessage(spec.message, nested, [...scopes, nested], path);
    }
  }

  function compareMessage(spec: MessageSpec, desc: Descriptor, scopes: Descriptor[], path: string): void {
    const numbers = new Set(spec.fields.map((f) => f.number));
    expect(desc.field.map((f) => `${path}.${f.name}`).filter((_, i) => !numbers.has(desc.field[i].number))).toEqual([]);
    for (const f of spec.fields) {
      const field = desc.field.find((d) => d.name === f.name) ?? desc.field.find((d) => d.number === f.number)!;
      const where = `${path}.${f.name}`;
      expect(`${where} = ${field?.number}`).toBe(`${where} = ${f.number}`);
      if (f.label === 'map') {
        const entry = desc.nestedType.find((n) => n.name === field.typeName)!;
        expect(`${where} is a map: ${entry?.options?.mapEntry}`).toBe(`${where} is a map: true`);
        compareType({ kind: 'scalar', scalar: f.mapKey! }, entry.field[0], scopes, `${where}.key`);
        compareType(f.type, entry.field[1], scopes, `${where}.value`);
      } else {
        expect(`${where}: ${field.label}`).toBe(`${where}: ${f.label === 'repeated' ? 'LABEL_REPEATED' : 'LABEL_OPTIONAL'}`);
        compareType(f.type, field, scopes, where);
      }
    }
  }

  test('every message, field number, label, type and enum value', () => {
    const root = def['inference.ModelConfig'].type;
    compareMessage(MODEL_CONFIG, root, [root], 'ModelConfig');
  });
});
