/**
 * ModelInfer over a real grpc-js client whose requests protobufjs encodes from the project's
 * .proto: raw and typed contents of every datatype, raw outputs, requested outputs,
 * classification, parameters, header forwarding, versions and messages past grpc-js's 4 MiB
 * default.
 */
import * as grpc from '@grpc/grpc-js';
import { serializeBytes } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import { bindInferModels } from '../http/models';
import { fails, fp32Bytes, identity, ok, rawStub, serve, type Served } from './helpers';

/** The HTTP infer suites' models (echo per datatype, pair, params, ...), plus two versions. */
function bindModels(t: Triton): void {
  bindInferModels(t);
  for (const modelVersion of [1, 3]) {
    t.bind({
      modelName: 'versioned', modelVersion, inferFunc: identity,
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
      config: { batching: false },
    });
  }
}

let s: Served;
beforeAll(async () => {
  s = await serve(bindModels, { grpcHeaderForwardPattern: '^x-fwd-' });
});
afterAll(() => s.close());

const ONE_FP32 = { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1] }], raw_input_contents: [fp32Bytes([7])] };

test('raw contents in, raw contents out: one entry per output, shape and id echoed, no typed contents', async () => {
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: 'echo_FP32', id: 'req-1',
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [2, 3] }], raw_input_contents: [fp32Bytes([1, 2, 3, 4, 5, 6])],
  });
  expect(r).toMatchObject({
    model_name: 'echo_FP32', model_version: '1', id: 'req-1',
    outputs: [{ name: 'OUT', datatype: 'FP32', shape: ['2', '3'], contents: null }],
    raw_output_contents: [fp32Bytes([1, 2, 3, 4, 5, 6])],
  });
});

test('BYTES and FP16 travel as raw contents (BYTES length-prefixed)', async () => {
  const strings = serializeBytes([Buffer.from('héllo'), Buffer.alloc(0), Buffer.from([0, 255])]);
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: 'echo_BYTES', inputs: [{ name: 'IN', datatype: 'BYTES', shape: [1, 3] }], raw_input_contents: [strings],
  });
  expect(r.raw_output_contents).toEqual([strings]);
  const half = Buffer.from(new Uint16Array([0x3c00, 0xc000]).buffer);
  const h = await ok(s.stub, 'ModelInfer', {
    model_name: 'echo_FP16', inputs: [{ name: 'IN', datatype: 'FP16', shape: [1, 2] }], raw_input_contents: [half],
  });
  expect(h.raw_output_contents).toEqual([half]);
});

const le = (Ctor: { from(v: ArrayLike<unknown>): ArrayBufferView }, values: unknown[]): Buffer => {
  const a = Ctor.from(values as never);
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
};

test.each([
  ['BOOL', 'bool_contents', [true, false, true], Buffer.from([1, 0, 1])],
  ['INT8', 'int_contents', [-128, 0, 127], le(Int8Array, [-128, 0, 127])],
  ['INT16', 'int_contents', [-32768, 5, 32767], le(Int16Array, [-32768, 5, 32767])],
  ['INT32', 'int_contents', [-2147483648, 0, 2147483647], le(Int32Array, [-2147483648, 0, 2147483647])],
  ['INT64', 'int64_contents', ['-9223372036854775808', '-1', '9007199254740993'], le(BigInt64Array, [-(2n ** 63n), -1n, 9007199254740993n])],
  ['UINT8', 'uint_contents', [0, 1, 255], Buffer.from([0, 1, 255])],
  ['UINT16', 'uint_contents', [0, 65535, 7], le(Uint16Array, [0, 65535, 7])],
  ['UINT32', 'uint_contents', [0, 4294967295, 7], le(Uint32Array, [0, 4294967295, 7])],
  ['UINT64', 'uint64_contents', ['0', '18446744073709551615', '7'], le(BigUint64Array, [0n, 2n ** 64n - 1n, 7n])],
  ['FP32', 'fp32_contents', [1.5, -2, 1e30], le(Float32Array, [1.5, -2, 1e30])],
  ['FP64', 'fp64_contents', [1e300, -0.5, 3], le(Float64Array, [1e300, -0.5, 3])],
  ['BYTES', 'bytes_contents', [Buffer.from('a'), Buffer.alloc(0), Buffer.from('xyz')],
    serializeBytes([Buffer.from('a'), Buffer.alloc(0), Buffer.from('xyz')])],
])('typed contents: %s in %s, answered as raw contents', async (dtype, field, values, expected) => {
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: `echo_${dtype}`, inputs: [{ name: 'IN', datatype: dtype, shape: [1, 3], contents: { [field]: values } }],
  });
  expect(r.outputs).toEqual([expect.objectContaining({ name: 'OUT', datatype: dtype, shape: ['1', '3'], contents: null })]);
  expect(r.raw_output_contents).toEqual([expected]);
});

test('requested outputs: only those, in the order asked', async () => {
  const request = {
    model_name: 'pair',
    inputs: [{ name: 'A', datatype: 'FP32', shape: [3] }, { name: 'B', datatype: 'INT32', shape: [3] }],
    raw_input_contents: [fp32Bytes([1, 2, 3]), Buffer.from(new Int32Array([4, 5, 6]).buffer)],
  };
  const one = await ok(s.stub, 'ModelInfer', { ...request, outputs: [{ name: 'OB' }] });
  expect((one.outputs as { name: string }[]).map((o) => o.name)).toEqual(['OB']);
  expect(one.raw_output_contents).toEqual([Buffer.from(new Int32Array([4, 5, 6]).buffer)]);
  const both = await ok(s.stub, 'ModelInfer', { ...request, outputs: [{ name: 'OB' }, { name: 'OA' }] });
  expect((both.outputs as { name: string }[]).map((o) => o.name)).toEqual(['OB', 'OA']);
  const all = await ok(s.stub, 'ModelInfer', request);
  expect((all.outputs as { name: string }[]).map((o) => o.name)).toEqual(['OA', 'OB']);
});

test('classification: the top N classes as BYTES "value:index"', async () => {
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: 'echo_FP32', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4] }],
    raw_input_contents: [fp32Bytes([0.1, 0.7, 0.05, 0.15])],
    outputs: [{ name: 'OUT', parameters: { classification: { int64_param: 2 } } }],
  });
  expect(r.outputs).toEqual([expect.objectContaining({ name: 'OUT', datatype: 'BYTES', shape: ['1', '2'] })]);
  expect(r.raw_output_contents).toEqual([serializeBytes([Buffer.from('0.700000:1'), Buffer.from('0.150000:3')])]);
});

test('custom parameters reach the model with their types; priority and timeout are the server\'s', async () => {
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: 'params', ...ONE_FP32,
    parameters: {
      s: { string_param: 'text' }, i: { int64_param: 42 }, b: { bool_param: true }, d: { double_param: 0.25 },
      u: { uint64_param: '7' }, big: { int64_param: '9007199254740993' },
      priority: { int64_param: 1 }, timeout: { int64_param: 1000000 }, sequence_id: { string_param: 'seq' },
    },
  });
  const seen = JSON.parse(serializedString(r.raw_output_contents as Buffer[]));
  expect(seen).toEqual({ s: 'text', i: 42, b: true, d: 0.25, u: 7, big: '9007199254740993' });
});

function serializedString(raw: Buffer[]): string {
  const b = raw[0];
  return b.subarray(4, 4 + b.readUInt32LE(0)).toString('utf8');
}

test('metadata matching grpcHeaderForwardPattern becomes request parameters; request parameters win', async () => {
  const { Metadata } = await import('@grpc/grpc-js');
  const md = new Metadata();
  md.set('x-fwd-user', 'alice');
  md.set('x-fwd-s', 'from-header');
  md.set('x-other', 'no');
  const r = await new Promise<Record<string, unknown>>((resolve, reject) => {
    s.stub.ModelInfer({ model_name: 'params', ...ONE_FP32, parameters: { 'x-fwd-s': { string_param: 'from-request' } } }, md, {},
      (err, value) => (err ? reject(err) : resolve(value!)));
  });
  expect(JSON.parse(serializedString(r.raw_output_contents as Buffer[]))).toEqual({ 'x-fwd-user': 'alice', 'x-fwd-s': 'from-request' });
});

test('RE2 inline flags compile; metadata named like a reserved parameter is refused with Triton\'s text', async () => {
  const own = await serve(bindModels, { grpcHeaderForwardPattern: '(?i)^(x-fwd-|triton_|sequence_id)' });
  try {
    await fails(own.stub, 'ModelInfer', { model_name: 'params', ...ONE_FP32 }, grpc.status.INVALID_ARGUMENT,
      "Header 'triton_trace' is reserved for Triton usage and cannot be forwarded.", { triton_trace: '1' });
    await fails(own.stub, 'ModelInfer', { model_name: 'params', ...ONE_FP32 }, grpc.status.INVALID_ARGUMENT,
      "Header 'sequence_id' is reserved for Triton usage and cannot be forwarded.", { sequence_id: '7' });
    const r = await ok(own.stub, 'ModelInfer', { model_name: 'params', ...ONE_FP32 }, { 'x-fwd-user': 'bob' });
    expect(JSON.parse(serializedString(r.raw_output_contents as Buffer[]))).toEqual({ 'x-fwd-user': 'bob' });
  } finally {
    await own.triton.stop();
  }
});

test('model versions: latest by default, or the one named', async () => {
  expect((await ok(s.stub, 'ModelInfer', { model_name: 'versioned', ...ONE_FP32 })).model_version).toBe('3');
  expect((await ok(s.stub, 'ModelInfer', { model_name: 'versioned', model_version: '1', ...ONE_FP32 })).model_version).toBe('1');
});

test('messages far beyond grpc-js\'s 4 MiB default go through both ways', async () => {
  const values = new Float32Array(3 * 1024 * 1024).map((_, i) => i % 1000);  // 12 MiB
  const raw = Buffer.from(values.buffer);
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: 'echo_FP32', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, values.length] }], raw_input_contents: [raw],
  });
  expect((r.raw_output_contents as Buffer[])[0].equals(raw)).toBe(true);
});

test('gzip- and deflate-compressed requests are accepted', async () => {
  for (const algorithm of [1, 2]) {  // grpc-js: 1 = deflate, 2 = gzip
    const stub = rawStub(s.port, 'inference.GRPCInferenceService', { 'grpc.default_compression_algorithm': algorithm });
    try {
      const values = new Array(1000).fill(3);
      const r = await ok(stub, 'ModelInfer', {
        model_name: 'echo_FP32', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, values.length] }], raw_input_contents: [fp32Bytes(values)],
      });
      expect(r.raw_output_contents).toEqual([fp32Bytes(values)]);
    } finally {
      stub.close();
    }
  }
});
