/**
 * The binary tensor data extension over HTTP: byte-exact round trips of every datatype (FP16,
 * BF16, BOOL, BYTES included), Triton's binary/JSON output rules, raw binary requests, the
 * response headers, and gzip/deflate both ways.
 */
import * as zlib from 'node:zlib';
import { binaryBody, bytesTensor, closeAgent, post, serve, splitBinary, type Reply, type Served } from './http-helpers';
import { bindInferModels } from './models';

let s: Served;

beforeAll(async () => {
  s = await serve(bindInferModels);
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

/** Three elements of each datatype as raw little-endian bytes, extremes included. */
const RAW: Record<string, Buffer> = {
  BOOL: Buffer.from([1, 0, 1]),
  UINT8: Buffer.from([0, 128, 255]),
  UINT16: Buffer.from(new Uint16Array([0, 1, 65535]).buffer),
  UINT32: Buffer.from(new Uint32Array([0, 1, 4294967295]).buffer),
  UINT64: Buffer.from(new BigUint64Array([0n, 1n, 2n ** 64n - 1n]).buffer),
  INT8: Buffer.from(new Int8Array([-128, 0, 127]).buffer),
  INT16: Buffer.from(new Int16Array([-32768, 0, 32767]).buffer),
  INT32: Buffer.from(new Int32Array([-2147483648, 0, 2147483647]).buffer),
  INT64: Buffer.from(new BigInt64Array([-(2n ** 63n), 0n, 2n ** 63n - 1n]).buffer),
  FP16: Buffer.from(new Uint16Array([0x3c00, 0xc000, 0x7bff]).buffer),
  FP32: Buffer.from(new Float32Array([1.5, -0, 3.4e38]).buffer),
  FP64: Buffer.from(new Float64Array([Math.PI, -1e-300, 1e300]).buffer),
  BYTES: bytesTensor(['', 'héllo', Buffer.from([0, 255, 10])]),
  BF16: Buffer.from(new Uint16Array([0x3f80, 0xc000, 0x7f7f]).buffer),
};

function infer(dtype: string, outputs?: object[], parameters?: object): Promise<import('./http-helpers').Reply> {
  const { body, headers } = binaryBody({
    inputs: [{ name: 'IN', datatype: dtype, shape: [1, 3], parameters: { binary_data_size: RAW[dtype].length } }],
    ...(outputs ? { outputs } : {}), ...(parameters ? { parameters } : {}),
  }, RAW[dtype]);
  return post(s.port, `/v2/models/echo_${dtype}/infer`, body, headers);
}

describe('binary round trips', () => {
  test.each(Object.keys(RAW))('%s comes back byte for byte', async (dtype) => {
    const r = await infer(dtype, [{ name: 'OUT', parameters: { binary_data: true } }]);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/octet-stream');
    const { header, binary } = splitBinary(r);
    expect(Number(r.headers['inference-header-content-length'])).toBe(Buffer.byteLength(JSON.stringify(header)));
    expect(header.outputs).toEqual([{ name: 'OUT', datatype: dtype, shape: [1, 3], parameters: { binary_data_size: RAW[dtype].length } }]);
    expect(binary.equals(RAW[dtype])).toBe(true);
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
  });

  test('a large tensor (1 MB) comes back byte for byte, plain and gzip-compressed', async () => {
    const data = Buffer.from(Float64Array.from({ length: 131072 }, (_, i) => i / 7).buffer);
    const { body, headers } = binaryBody({
      inputs: [{ name: 'IN', datatype: 'FP64', shape: [1, 131072], parameters: { binary_data_size: data.length } }],
      outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
    }, data);
    const plain = await post(s.port, '/v2/models/echo_FP64/infer', body, headers);
    expect(Number(plain.headers['content-length'])).toBe(plain.body.length);
    expect(splitBinary(plain).binary.equals(data)).toBe(true);
    const gz = await post(s.port, '/v2/models/echo_FP64/infer', body, { ...headers, 'Accept-Encoding': 'gzip' });
    const unzipped = zlib.gunzipSync(gz.body);
    expect(unzipped.subarray(Number(gz.headers['inference-header-content-length'])).equals(data)).toBe(true);
  });

  test('64-bit integers sent binary come back exact in JSON', async () => {
    const r = await infer('INT64', [{ name: 'OUT' }]);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body.toString()).toContain('"data":[-9223372036854775808,0,9223372036854775807]');
    const u = await infer('UINT64', [{ name: 'OUT' }]);
    expect(u.body.toString()).toContain('"data":[0,1,18446744073709551615]');
  });

  test('JSON and binary inputs mix in one request', async () => {
    const { body, headers } = binaryBody({
      inputs: [
        { name: 'A', datatype: 'FP32', shape: [3], data: [1, 2, 3] },
        { name: 'B', datatype: 'INT32', shape: [3], parameters: { binary_data_size: 12 } },
      ],
      outputs: [{ name: 'OA' }, { name: 'OB', parameters: { binary_data: true } }],
    }, new Int32Array([7, 8, 9]));
    const r = await post(s.port, '/v2/models/pair/infer', body, headers);
    const { header, binary } = splitBinary(r);
    expect(header.outputs[0]).toEqual({ name: 'OA', datatype: 'FP32', shape: [3], data: [1, 2, 3] });
    expect(header.outputs[1]).toEqual({ name: 'OB', datatype: 'INT32', shape: [3], parameters: { binary_data_size: 12 } });
    expect([...new Int32Array(binary.buffer.slice(binary.byteOffset, binary.byteOffset + 12))]).toEqual([7, 8, 9]);
  });
});

describe("Triton's output rules (code, not docs)", () => {
  test('no outputs listed: binary_data_output decides; default JSON', async () => {
    const json = await infer('FP32');
    expect(json.headers['content-type']).toBe('application/json');
    const bin = await infer('FP32', undefined, { binary_data_output: true });
    expect(bin.headers['content-type']).toBe('application/octet-stream');
    expect(splitBinary(bin).binary.equals(RAW.FP32)).toBe(true);
  });

  test('a listed output is binary only with its own binary_data, whatever binary_data_output says', async () => {
    const r = await infer('FP32', [{ name: 'OUT' }], { binary_data_output: true });
    expect(r.headers['content-type']).toBe('application/json');
    const off = await infer('FP32', [{ name: 'OUT', parameters: { binary_data: false } }], { binary_data_output: true });
    expect(off.headers['content-type']).toBe('application/json');
  });

  test('classification output in binary is length-prefixed BYTES', async () => {
    const { body, headers } = binaryBody({
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 5], parameters: { binary_data_size: 20 } }],
      outputs: [{ name: 'OUT', parameters: { classification: 1, binary_data: true } }],
    }, new Float32Array([3, 1, 4, 1, 5]));
    const r = await post(s.port, '/v2/models/scores/infer', body, headers);
    const { header, binary } = splitBinary(r);
    expect(header.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: [1, 1] });
    expect(binary.equals(bytesTensor(['5.000000:4']))).toBe(true);
  });

  test('classification of a 12M-element output takes the top classes without sorting the row (was ~20 s of event loop)', async () => {
    const n = 12_000_000;
    const scores = new Float32Array(n);
    for (let i = 0; i < n; i++) scores[i] = Math.random() * 0.9;
    scores[42] = 1;
    scores[5_000_000] = 3;
    scores[123] = 2;
    scores[11_999_999] = 2;  // ties rank by lower index
    const timed = async (parameters: object): Promise<{ ms: number; r: Reply }> => {
      const { body, headers } = binaryBody({
        inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, n], parameters: { binary_data_size: n * 4 } }],
        outputs: [{ name: 'OUT', parameters: { binary_data: true, ...parameters } }],
      }, scores);
      const started = Date.now();
      const r = await post(s.port, '/v2/models/echo_FP32/infer', body, headers);
      return { ms: Date.now() - started, r };
    };
    const plain = await timed({});
    expect(plain.r.status).toBe(200);
    const top = await timed({ classification: 4 });
    const { header, binary } = splitBinary(top.r);
    expect(header.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: [1, 4] });
    expect(binary.equals(bytesTensor(['3.000000:5000000', '2.000000:123', '2.000000:11999999', '1.000000:42']))).toBe(true);
    // The same request without classification is the yardstick (it carries the 48 MB back):
    // the top 4 cost well under a second more here; sorting the row with a comparator cost 16-24 s more.
    expect(top.ms - plain.ms).toBeLessThan(10_000);
  }, 90_000);
});

describe('raw binary requests (Inference-Header-Content-Length: 0)', () => {
  test('the body is the only input; outputs come back binary with batch 1', async () => {
    const data = new Float32Array([1, 2, 3, 4]);
    const r = await post(s.port, '/v2/models/echo_FP32/infer', Buffer.from(data.buffer), { 'Inference-Header-Content-Length': 0 });
    expect(r.status).toBe(200);
    const { header, binary } = splitBinary(r);
    expect(header.outputs).toEqual([{ name: 'OUT', datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } }]);
    expect(binary.equals(Buffer.from(data.buffer))).toBe(true);
  });

  test('a BYTES model of shape [1] takes the whole body as one element', async () => {
    const r = await post(s.port, '/v2/models/raw_bytes/infer', Buffer.from('whole body'), { 'Inference-Header-Content-Length': 0 });
    expect(splitBinary(r).binary.equals(bytesTensor(['whole body']))).toBe(true);
  });

  test('a model with two inputs cannot take a raw request', async () => {
    const r = await post(s.port, '/v2/models/pair/infer', Buffer.alloc(24), { 'Inference-Header-Content-Length': 0 });
    expect(r.status).toBe(400);
    expect(r.error).toContain('Raw request must only have 1 input');
  });

  test('bytes that do not make whole elements are refused', async () => {
    const r = await post(s.port, '/v2/models/echo_FP32/infer', Buffer.alloc(6), { 'Inference-Header-Content-Length': 0 });
    expect(r.status).toBe(400);
    expect(r.error).toContain('do not make whole elements');
  });
});

describe('compression', () => {
  const { body, headers } = binaryBody({
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 3], parameters: { binary_data_size: 12 } }],
    outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
  }, RAW.FP32);

  test.each([['gzip', zlib.gzipSync, zlib.gunzipSync], ['deflate', zlib.deflateSync, zlib.inflateSync]] as const)(
    '%s request and response', async (encoding, compress, decompress) => {
      const r = await post(s.port, '/v2/models/echo_FP32/infer', compress(body), {
        ...headers, 'Content-Encoding': encoding, 'Accept-Encoding': encoding,
      });
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBe(encoding);
      const plain = decompress(r.body);
      const length = Number(r.headers['inference-header-content-length']);
      expect(JSON.parse(plain.subarray(0, length).toString()).outputs[0].parameters).toEqual({ binary_data_size: 12 });
      expect(plain.subarray(length).equals(RAW.FP32)).toBe(true);
    });

  test('Accept-Encoding picks gzip over deflate and skips q=0', async () => {
    const both = await post(s.port, '/v2/models/echo_FP32/infer', body, { ...headers, 'Accept-Encoding': 'deflate, gzip;q=0.5' });
    expect(both.headers['content-encoding']).toBe('gzip');
    const none = await post(s.port, '/v2/models/echo_FP32/infer', body, { ...headers, 'Accept-Encoding': 'gzip;q=0, br' });
    expect(none.headers['content-encoding']).toBeUndefined();
    expect(splitBinary(none).binary.equals(RAW.FP32)).toBe(true);
  });
});
