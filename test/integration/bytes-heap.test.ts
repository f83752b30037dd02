/**
 * BYTES tensors make no JS object per element on their way through the server to a native
 * engine and back (ts/packed-bytes.ts), and a JS model whose elements would not fit in the heap
 * gets a 503 for that request instead of V8 ending the process. The server runs as a child
 * process with a 128 MiB heap: the 2M elements sent here took ~230 MiB of heap as Buffers, which
 * is what every BYTES request cost before (64 MiB bodies of empty strings ended a default server;
 * so did one 114 MiB gRPC message of typed bytes_contents, which the codec made into Buffers).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { status } from '@grpc/grpc-js';
import { ServeProcess, LOOPBACK_ANY_PORTS, ensureLib, type Ports } from '../deploy/helpers';
import { fails, ok, rawStub, type Stub } from './grpc/helpers';
import { TempRepo } from './repository/repo-helpers';
import { identityModel } from '../../ts/tools/onnx/factories';

const ELEMENTS = 2_000_000;
/** Mostly empty elements, a marked one every 100,000 (so order and content are checked too). */
const strings = Array.from({ length: ELEMENTS }, (_, i) => (i % 100_000 === 7 ? `element ${i} ✓` : ''));
/** The same in wire form: a 4-byte little-endian length before each element's UTF-8 bytes. */
const wire = Buffer.alloc(strings.reduce((n, s) => n + 4 + Buffer.byteLength(s), 0));
for (let i = 0, at = 0; i < ELEMENTS; i++) {
  const length = wire.write(strings[i], at + 4);
  wire.writeUInt32LE(length, at);
  at += 4 + length;
}

let repo: TempRepo;
let server: ServeProcess;
let ports: Ports;
let stub: Stub;

beforeAll(async () => {
  ensureLib();
  repo = new TempRepo('bytesheap');
  repo.onnx('ident', 1, identityModel('BYTES', ['length']));
  mkdirSync(repo.path('count', '1'), { recursive: true });
  repo.config('count', `
    backend: "js"
    max_batch_size: 0
    input [ { name: "IN", data_type: TYPE_STRING, dims: [ -1 ] } ]
    output [ { name: "COUNT", data_type: TYPE_INT32, dims: [ 1 ] } ]`);
  writeFileSync(repo.path('count', '1', 'model.js'),
    'exports.execute = async (requests) => requests.map((r) => ({ COUNT: new Int32Array([r.data.IN.data.length]) }));\n');
  server = new ServeProcess(['serve', `--model-repository=${repo.root}`, ...LOOPBACK_ANY_PORTS], ['--max-old-space-size=128']);
  ports = await server.serving();
  stub = rawStub(ports.grpc!);
}, 120_000);

afterAll(async () => {
  (stub as unknown as { close(): void } | undefined)?.close();
  await server?.kill();
  repo?.cleanup();
});

afterEach(() => {
  // Whatever a test sent, the process must still be there.
  expect(server.hasExited).toBe(false);
});

/** POSTs `/v2/models/<model>/infer` with a JSON header and binary data; resolves status, head and binary part. */
function post(model: string, header: object, data?: Buffer): Promise<{ status: number; json: Record<string, unknown>; binary: Buffer }> {
  const head = Buffer.from(JSON.stringify(header));
  const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'application/octet-stream' };
  if (data) headers['Inference-Header-Content-Length'] = head.length;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: ports.http, path: `/v2/models/${model}/infer`, method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const jsonSize = Number(res.headers['inference-header-content-length'] ?? body.length);
        resolve({ status: res.statusCode!, json: JSON.parse(body.subarray(0, jsonSize).toString()), binary: body.subarray(jsonSize) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data ? Buffer.concat([head, data]) : head);
  });
}

describe('BYTES to a native engine and back keep their wire form', () => {
  test('HTTP binary: 2M elements through the ONNX identity come back byte for byte', async () => {
    const r = await post('ident', {
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, ELEMENTS], parameters: { binary_data_size: wire.length } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }, wire);
    expect(r.status).toBe(200);
    expect(r.json.outputs).toEqual([expect.objectContaining({ name: 'OUTPUT0', datatype: 'BYTES', shape: [1, ELEMENTS] })]);
    expect(r.binary.equals(wire)).toBe(true);
  }, 60_000);

  test('HTTP JSON: 2M strings in and out, in order', async () => {
    const r = await post('ident', { inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, ELEMENTS], data: strings }] });
    expect(r.status).toBe(200);
    const [out] = r.json.outputs as { name: string; shape: number[]; data: string[] }[];
    expect(out.shape).toEqual([1, ELEMENTS]);
    expect(out.data.length).toBe(ELEMENTS);
    expect(out.data[7]).toBe('element 7 ✓');
    expect(out.data[1_900_007]).toBe('element 1900007 ✓');
    expect(out.data.every((s, i) => s === strings[i])).toBe(true);
  }, 60_000);

  test('gRPC raw contents: 2M elements through the ONNX identity come back byte for byte', async () => {
    const r = await ok(stub, 'ModelInfer', {
      model_name: 'ident', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, ELEMENTS] }], raw_input_contents: [wire],
    });
    expect((r.raw_output_contents as Buffer[])[0].equals(wire)).toBe(true);
  }, 60_000);

  test('gRPC typed bytes_contents: 2M elements through the ONNX identity come back byte for byte', async () => {
    // The codec packs them into wire form as it decodes; a Buffer each took 3.9 GB for 30M.
    const r = await ok(stub, 'ModelInfer', {
      model_name: 'ident', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, ELEMENTS], contents: { bytes_contents: strings.map((x) => Buffer.from(x)) } }],
    });
    expect((r.raw_output_contents as Buffer[])[0].equals(wire)).toBe(true);
  }, 60_000);
});

describe('a JS model whose elements do not fit in the heap', () => {
  const TEXT = new RegExp(`input 'IN' for model 'count': ${ELEMENTS} BYTES elements need about \\d+ MiB of JavaScript heap ` +
    'as separate Buffers, and \\d+ MiB is free; send fewer elements per request, or start Node with a larger --max-old-space-size');

  test('HTTP: 503 naming the input, and the model still serves smaller requests', async () => {
    const r = await post('count', {
      inputs: [{ name: 'IN', datatype: 'BYTES', shape: [ELEMENTS], parameters: { binary_data_size: wire.length } }],
    }, wire);
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(TEXT);
    const small = await post('count', { inputs: [{ name: 'IN', datatype: 'BYTES', shape: [3], data: ['a', '', 'c'] }] });
    expect(small.status).toBe(200);
    expect(small.json.outputs).toEqual([expect.objectContaining({ name: 'COUNT', data: [3] })]);
  }, 60_000);

  test('gRPC: UNAVAILABLE naming the input', async () => {
    await fails(stub, 'ModelInfer', {
      model_name: 'count', inputs: [{ name: 'IN', datatype: 'BYTES', shape: [ELEMENTS] }], raw_input_contents: [wire],
    }, status.UNAVAILABLE, TEXT);
  }, 60_000);
});
