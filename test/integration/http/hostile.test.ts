/**
 * Hostile and broken requests, over node:http and raw sockets: each gets Triton's status code
 * and a message naming the problem, and the server keeps serving the next request.
 */
import * as zlib from 'node:zlib';
import {
  binaryBody, closeAgent, get, post, rawExchange, rawPost, serve, type Reply, type Served,
} from './http-helpers';
import { bindInferModels } from './models';
import { MAX_JSON_ARRAYS, MAX_JSON_OBJECT_ENTRIES } from '../../../ts/json-bounds';

const MAX = 1 << 20;  // a small --http-max-input-size keeps the limit cases cheap
let s: Served;

beforeAll(async () => {
  s = await serve(bindInferModels, { httpMaxInputSize: MAX });
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

const FP32 = '/v2/models/echo_FP32/infer';
const PAIR = '/v2/models/pair/infer';
const fp32Input = (extra: object = {}): object => ({ name: 'IN', datatype: 'FP32', shape: [1, 2], data: [1, 2], ...extra });
const json = (path: string, body: unknown): Promise<Reply> => post(s.port, path, JSON.stringify(body), { 'Content-Type': 'application/json' });
const binary = (path: string, header: object, ...tensors: ArrayBufferView[]): Promise<Reply> => {
  const { body, headers } = binaryBody(header, ...tensors);
  return post(s.port, path, body, headers);
};
const withHeaderLength = (value: string, body = '{}'): Promise<Reply | null> =>
  rawExchange(s.port, rawPost(FP32, body, { 'Inference-Header-Content-Length': value }));

/** A request that must succeed: the server still serves after each hostile one. */
async function stillServing(): Promise<void> {
  const r = await json(FP32, { inputs: [fp32Input()] });
  expect(r.status).toBe(200);
  expect((r.json().outputs as { data: number[] }[])[0].data).toEqual([1, 2]);
}

/** An infer body for echo_FP32 with `n` distinct request parameters. */
function manyParameters(n: number): string {
  const parameters = Array.from({ length: n }, (_, i) => `"p${i}":1`).join(',');
  return `{"inputs":[${JSON.stringify(fp32Input())}],"parameters":{${parameters}}}`;
}

/** `n` one-element arrays in an array: `[[1],[1],...]` (`last` in place of the last row). */
const rows = (n: number, last = '[1]'): string => `[${'[1],'.repeat(n - 1)}${last}]`;

/** An infer body for echo_<dtype> of the given shape whose data is the JSON text `data`. */
const withData = (dtype: string, shape: number[], data: string): string =>
  `{"inputs":[{"name":"IN","datatype":"${dtype}","shape":${JSON.stringify(shape)},"data":${data}}]}`;

interface Case {
  name: string;
  send: () => Promise<Reply | null>;
  status: number;
  message: string | RegExp;
}

const CASES: Case[] = [
  { name: 'malformed JSON', send: () => post(s.port, FP32, '{"inputs": [', {}), status: 400, message: 'failed to parse the request JSON buffer' },
  { name: 'JSON array instead of an object', send: () => json(FP32, [1, 2]), status: 400, message: 'must be a JSON object' },
  { name: 'no inputs list', send: () => json(FP32, { outputs: [] }), status: 400, message: "must have an 'inputs' list" },
  { name: 'inputs is an object', send: () => json(FP32, { inputs: { IN: [1] } }), status: 400, message: "must have an 'inputs' list" },
  { name: 'input without a name', send: () => json(FP32, { inputs: [{ datatype: 'FP32', shape: [1, 1], data: [1] }] }), status: 400, message: "string 'name'" },
  { name: 'shape/data count mismatch', send: () => json(FP32, { inputs: [fp32Input({ shape: [1, 3] })] }), status: 400, message: 'holds 3 elements, data has 2' },
  { name: 'more data than the shape holds', send: () => json(FP32, { inputs: [fp32Input({ shape: [1, 1], data: new Array(5000).fill(1) })] }), status: 400, message: 'more data elements than its shape holds' },
  { name: 'unknown datatype', send: () => json(FP32, { inputs: [fp32Input({ datatype: 'FP128' })] }), status: 400, message: "invalid datatype 'FP128' for input 'IN'" },
  { name: 'datatype the model does not declare', send: () => json(FP32, { inputs: [fp32Input({ datatype: 'INT32' })] }), status: 400, message: /IN[\s\S]*(INT32|FP32)|(INT32|FP32)[\s\S]*IN/ },
  { name: 'BYTES in a numeric tensor', send: () => json(FP32, { inputs: [fp32Input({ data: ['a', 'b'] })] }), status: 400, message: 'expected a number for datatype FP32' },
  { name: 'numbers in a BYTES tensor', send: () => json('/v2/models/echo_BYTES/infer', { inputs: [{ name: 'IN', datatype: 'BYTES', shape: [1, 1], data: [5] }] }), status: 400, message: 'expected a string for BYTES' },
  { name: 'value out of range for UINT8', send: () => json('/v2/models/echo_UINT8/infer', { inputs: [{ name: 'IN', datatype: 'UINT8', shape: [1, 1], data: [300] }] }), status: 400, message: 'out of range for datatype UINT8' },
  { name: 'fraction in an INT32 tensor', send: () => json('/v2/models/echo_INT32/infer', { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [1.5] }] }), status: 400, message: 'not an exact integer' },
  { name: 'negative dimension', send: () => json(FP32, { inputs: [fp32Input({ shape: [1, -2] })] }), status: 400, message: 'invalid dimension -2' },
  // JSON dims are numbers (as Triton); only gRPC carries int64 dims as strings.
  { name: 'a dimension given as a string', send: () => json(FP32, { inputs: [fp32Input({ shape: ['1', 4] })] }), status: 400, message: 'invalid dimension "1"' },
  { name: 'shape whose element count overflows', send: () => json(FP32, { inputs: [fp32Input({ shape: [4294967296, 4294967296] })] }), status: 400, message: "invalid shape for input 'IN' for model 'echo_FP32': shape [4294967296,4294967296] causes total element count to exceed maximum size of 9223372036854775807" },
  // Triton counts in int64: the byte size (4 × 2^62) passes it though the element count does not.
  { name: 'shape whose byte size overflows int64', send: () => json(FP32, { inputs: [fp32Input({ shape: [4, 2 ** 60] })] }), status: 400, message: "byte size overflow for input 'IN' for model 'echo_FP32': element count (4611686018427387904) * data type size (4) exceeds maximum allowed size (9223372036854775807)" },
  { name: 'shape within int64 but past what JavaScript counts', send: () => json(FP32, { inputs: [fp32Input({ shape: [2 ** 27, 2 ** 27] })] }), status: 400, message: 'causes total element count to exceed maximum size of 9007199254740991' },
  { name: 'data nested too deeply', send: () => json(FP32, { inputs: [fp32Input({ shape: [1, 1], data: JSON.parse('['.repeat(200) + '1' + ']'.repeat(200)) })] }), status: 400, message: 'JSON nesting depth exceeds maximum allowed limit (100)' },
  { name: 'Inference-Header-Content-Length beyond the body', send: () => withHeaderLength('500'), status: 400, message: 'larger than the request body' },
  { name: 'Inference-Header-Content-Length not a number', send: () => withHeaderLength('abc'), status: 400, message: 'Unable to parse Inference-Header-Content-Length' },
  { name: 'Inference-Header-Content-Length overflowing int32', send: () => withHeaderLength('99999999999'), status: 400, message: 'Unable to parse Inference-Header-Content-Length' },
  { name: 'negative Inference-Header-Content-Length', send: () => withHeaderLength('-1'), status: 400, message: 'Unable to parse Inference-Header-Content-Length' },
  { name: 'negative binary_data_size', send: () => binary(FP32, { inputs: [fp32Input({ data: undefined, parameters: { binary_data_size: -8 } })] }, new Float32Array(2)), status: 400, message: "'binary_data_size' must be a non-negative integer" },
  { name: 'overflowing binary_data_size', send: () => binary(FP32, { inputs: [fp32Input({ data: undefined, parameters: { binary_data_size: 1.8e19 } })] }, new Float32Array(2)), status: 400, message: "'binary_data_size' must be a non-negative integer" },
  { name: 'binary_data_size beyond the binary data', send: () => binary(FP32, { inputs: [fp32Input({ data: undefined, parameters: { binary_data_size: 800 } })] }, new Float32Array(2)), status: 400, message: 'binary_data_size 800 exceeds the 8 bytes' },
  { name: 'binary_data_size not matching the shape', send: () => binary(FP32, { inputs: [fp32Input({ data: undefined, parameters: { binary_data_size: 4 } })] }, new Float32Array(1)), status: 400, message: 'unexpected byte size' },
  { name: 'binary data left over', send: () => binary(FP32, { inputs: [fp32Input({ data: undefined, parameters: { binary_data_size: 8 } })] }, new Float32Array(4)), status: 400, message: 'add up to 8' },
  { name: 'data and binary_data_size together', send: () => binary(FP32, { inputs: [fp32Input({ parameters: { binary_data_size: 8 } })] }, new Float32Array(2)), status: 400, message: 'Input must set only one of the following fields' },
  // 256 KiB of zeros is 65,536 empty elements: the walk stops at the second, as Triton's does.
  { name: 'BYTES data holding more elements than the shape', send: () => binary('/v2/models/echo_BYTES/infer', { inputs: [{ name: 'IN', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: 1 << 18 } }] }, new Uint8Array(1 << 18)), status: 400, message: "unexpected number of string elements 2 for input 'IN' for model 'echo_BYTES', expecting 1" },
  { name: 'an input without any data', send: () => json(FP32, { inputs: [fp32Input({ data: undefined })] }), status: 400, message: 'no tensor data' },
  { name: 'unknown model', send: () => json('/v2/models/ghost/infer', { inputs: [fp32Input()] }), status: 404, message: "Request for unknown model: 'ghost' is not found" },
  { name: 'unknown version', send: () => json('/v2/models/echo_FP32/versions/7/infer', { inputs: [fp32Input()] }), status: 404, message: 'version 7 is not found' },
  { name: 'version that is not digits', send: () => json('/v2/models/echo_FP32/versions/-1/infer', { inputs: [fp32Input()] }), status: 404, message: 'Not Found' },
  { name: "model name with '..'", send: () => rawExchange(s.port, rawPost('/v2/models/../../etc/infer', '{}')), status: 404, message: 'Not Found' },
  { name: "model name with an encoded '/'", send: () => json('/v2/models/..%2F..%2Fetc/infer', { inputs: [fp32Input()] }), status: 404, message: "'../../etc'" },
  { name: 'bad percent-encoding in a model name', send: () => json('/v2/models/%zz/infer', { inputs: [fp32Input()] }), status: 404, message: 'Not Found' },
  { name: 'unknown requested output', send: () => json(FP32, { inputs: [fp32Input()], outputs: [{ name: 'NOPE' }] }), status: 400, message: "unexpected inference output 'NOPE'" },
  { name: 'output requested twice', send: () => json(FP32, { inputs: [fp32Input()], outputs: [{ name: 'OUT' }, { name: 'OUT' }] }), status: 400, message: "output 'OUT' already exists in request" },
  { name: 'outputs is not a list', send: () => json(FP32, { inputs: [fp32Input()], outputs: { name: 'OUT' } }), status: 400, message: "'outputs'" },
  { name: 'duplicate input names', send: () => json(FP32, { inputs: [fp32Input(), fp32Input()] }), status: 400, message: "input 'IN' already exists" },
  { name: 'missing input', send: () => json(PAIR, { inputs: [{ name: 'A', datatype: 'FP32', shape: [3], data: [1, 2, 3] }] }), status: 400, message: /input|B/ },
  { name: 'batch larger than max_batch_size', send: () => json(FP32, { inputs: [fp32Input({ shape: [9, 1], data: new Array(9).fill(0) })] }), status: 400, message: /batch-size must be <= 8|batch/ },
  { name: "'id' that is not a string", send: () => json(FP32, { id: 5, inputs: [fp32Input()] }), status: 400, message: "'id' of the inference request" },
  { name: 'parameters that are not an object', send: () => json(FP32, { parameters: [1], inputs: [fp32Input()] }), status: 400, message: 'request parameters must be an object' },
  { name: 'classification of a BYTES output', send: () => json('/v2/models/echo_BYTES/infer', { inputs: [{ name: 'IN', datatype: 'BYTES', shape: [1, 1], data: ['x'] }], outputs: [{ name: 'OUT', parameters: { classification: 1 } }] }), status: 400, message: 'classification is not supported for BYTES' },
  { name: 'FP16 output requested as JSON', send: () => binary('/v2/models/echo_FP16/infer', { inputs: [{ name: 'IN', datatype: 'FP16', shape: [1, 1], parameters: { binary_data_size: 2 } }] }, new Uint16Array([1])), status: 400, message: 'receiving FP16 data via JSON is not supported' },
  { name: 'huge Content-Length, refused unread', send: () => rawExchange(s.port, rawPost(FP32, '{', { 'Content-Length': '10737418240' })), status: 400, message: `exceeds the maximum allowed input size of ${MAX} bytes. Use --http-max-input-size to increase the limit.` },
  { name: 'chunked body beyond the maximum', send: () => rawExchange(s.port, rawPost(FP32, `${(MAX + 10).toString(16)}\r\n${'x'.repeat(MAX + 10)}\r\n0\r\n\r\n`, { 'Transfer-Encoding': 'chunked' })), status: 400, message: `exceeds the maximum allowed input size of ${MAX} bytes. Use --http-max-input-size to increase the limit.` },
  { name: 'gzip bomb', send: () => post(s.port, FP32, zlib.gzipSync(Buffer.alloc(MAX * 4)), { 'Content-Encoding': 'gzip' }), status: 400, message: `Decompressed data size exceeds the maximum allowed value of ${MAX} bytes` },
  { name: 'corrupt gzip body', send: () => post(s.port, FP32, Buffer.from('not gzip at all'), { 'Content-Encoding': 'gzip' }), status: 400, message: 'unable to decompress the request body (gzip)' },
  { name: 'unknown Content-Encoding', send: () => post(s.port, FP32, '{}', { 'Content-Encoding': 'br' }), status: 400, message: "unsupported Content-Encoding 'br'" },
  // JSON objects cost V8 300-700 ns and tens of bytes each: a body may hold 65,536 objects and members (ts/json-bounds.ts).
  { name: 'more than 65,536 JSON objects and members: request parameters', send: () => post(s.port, FP32, manyParameters(70_000), {}), status: 400, message: `the inference request for model 'echo_FP32' holds more than ${MAX_JSON_OBJECT_ENTRIES} JSON objects and object members together` },
  { name: 'more than 65,536 JSON objects: empty objects in a field the server ignores', send: () => post(s.port, FP32, `{"inputs":[${JSON.stringify(fp32Input())}],"x":[${new Array(70_000).fill('{}').join(',')}]}`, {}), status: 400, message: `holds more than ${MAX_JSON_OBJECT_ENTRIES} JSON objects` },
  { name: 'more than 65,536 JSON objects and members: a generate request', send: () => post(s.port, '/v2/models/echo_FP32/generate', manyParameters(70_000), {}), status: 400, message: `the generate request for model 'echo_FP32' holds more than ${MAX_JSON_OBJECT_ENTRIES}` },
  { name: 'more than 65,536 JSON objects: a management body', send: () => post(s.port, '/v2/repository/index', `{"x":[${new Array(70_000).fill('{}').join(',')}]}`, {}), status: 400, message: `the request holds more than ${MAX_JSON_OBJECT_ENTRIES} JSON objects` },
  // JSON arrays cost V8 ~1 µs and ~80 bytes each: outside tensor data a body may hold 65,536 (ts/json-bounds.ts).
  { name: 'more than 65,536 JSON arrays outside tensor data: in a field the server ignores', send: () => post(s.port, FP32, `{"inputs":[${JSON.stringify(fp32Input())}],"x":${rows(70_000)}}`, {}), status: 400, message: `the inference request for model 'echo_FP32' holds more than ${MAX_JSON_ARRAYS} JSON arrays outside its inputs' 'data'` },
  { name: 'more than 65,536 JSON arrays outside tensor data: in an input\'s parameters', send: () => post(s.port, FP32, `{"inputs":[{"name":"IN","datatype":"FP32","shape":[1,2],"data":[1,2],"parameters":{"p":${rows(70_000)}}}]}`, {}), status: 400, message: `holds more than ${MAX_JSON_ARRAYS} JSON arrays outside its inputs' 'data'` },
  { name: 'more than 65,536 JSON arrays: a generate request', send: () => post(s.port, '/v2/models/echo_FP32/generate', `{"IN":[1,2],"x":${rows(70_000)}}`, {}), status: 400, message: `the generate request for model 'echo_FP32' holds more than ${MAX_JSON_ARRAYS} JSON arrays; at most ${MAX_JSON_ARRAYS} are supported` },
  // Management bodies may hold 1,048,576 (Triton's qa sends 250,000 nested arrays as `ready`):
  // past that bound in json-arrays.test.ts, whose server takes 64 MiB bodies.
  { name: 'a management body of 250,000 nested arrays gets the field\'s own error, as in Triton\'s qa', send: () => post(s.port, '/v2/repository/index', `{"ready":${'['.repeat(250_000)}true${']'.repeat(250_000)}}`, {}), status: 400, message: "Invalid value for 'ready': expected a boolean" },
  // Nested data of more arrays than that are read by the linear reader (json-scan.ts), with JSON.parse's errors.
  { name: 'nested data of 70,000 rows, one short of the shape', send: () => post(s.port, FP32, withData('FP32', [1, 70_001], rows(70_000)), {}), status: 400, message: "Unable to parse 'data': Shape does not match true shape of 'data' field (input 'IN' for model 'echo_FP32': shape [1,70001] holds 70001 elements, data has 70000)" },
  { name: 'nested data of 70,000 rows, more than the shape holds', send: () => post(s.port, FP32, withData('FP32', [1, 5], rows(70_000)), {}), status: 400, message: "Unable to parse 'data': Shape does not match true shape of 'data' field (input 'IN' for model 'echo_FP32': more data elements than its shape holds (5))" },
  { name: 'nested data of 70,000 rows, the last nested too deeply', send: () => post(s.port, FP32, withData('FP32', [1, 70_000], rows(70_000, `${'['.repeat(100)}1${']'.repeat(100)}`)), {}), status: 400, message: "JSON nesting depth exceeds maximum allowed limit (100) (data of input 'IN' for model 'echo_FP32')" },
  { name: 'nested data of 70,000 rows, the last a string', send: () => post(s.port, FP32, withData('FP32', [1, 70_000], rows(70_000, '["x"]')), {}), status: 400, message: `input 'IN' for model 'echo_FP32': element 69999 is "x", expected a number for datatype FP32` },
  { name: 'nested data of 70,000 rows, the last out of range', send: () => post(s.port, '/v2/models/echo_UINT8/infer', withData('UINT8', [1, 70_000], rows(70_000, '[256]')), {}), status: 400, message: "input 'IN' for model 'echo_UINT8': element 69999 (256) is out of range for datatype UINT8" },
  { name: 'nested data of 70,000 rows, the last beyond INT64', send: () => post(s.port, '/v2/models/echo_INT64/infer', withData('INT64', [1, 70_000], rows(70_000, '[9223372036854775808]')), {}), status: 400, message: "input 'IN' for model 'echo_INT64': element 69999 (9223372036854775808) is out of range for datatype INT64" },
  { name: 'nested data of 70,000 rows, malformed JSON', send: () => post(s.port, FP32, withData('FP32', [1, 70_000], rows(70_000, '[1')), {}), status: 400, message: "failed to parse the request JSON buffer for model 'echo_FP32'" },
  { name: 'malformed HTTP request line', send: () => rawExchange(s.port, 'BREW /coffee HTCPCP/1.0\r\n\r\n'), status: 400, message: 'malformed HTTP request' },
  { name: 'invalid Content-Length header', send: () => rawExchange(s.port, rawPost(FP32, '{}', { 'Content-Length': '12abc' })), status: 400, message: 'malformed HTTP request' },
];

describe('hostile inputs', () => {
  test('there are at least 30 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  test.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const r = await c.send();
    expect(r).not.toBeNull();
    expect(r!.status).toBe(c.status);
    if (typeof c.message === 'string') expect(r!.error).toContain(c.message);
    else expect(r!.error).toMatch(c.message);
    await stillServing();
  });

  test('60,000 request parameters, under the bound on JSON objects and members, are still served', async () => {
    const r = await post(s.port, FP32, manyParameters(60_000), {});
    expect(r.status).toBe(200);
  });

  // Ragged and mixed nesting are taken as JSON.parse's flatten takes them: only the element count must match the shape.
  test.each([
    ['FP32', `[[[1],1.5],[-2,[2e-3]],${'[3,3],'.repeat(69_997)}[0.30000001192092896]]`],
    ['INT64', `[[9223372036854775807],[[-9223372036854775808]],${'[1,1],'.repeat(69_997)}[9007199254740993]]`],
    ['BOOL', `[[true],[[false]],${'[true,false],'.repeat(69_997)}[true]]`],
    ['BYTES', `[["a"],[["\\u00e9"]],${'["x","y"],'.repeat(69_997)}["\\\\"]]`],
  ])('%s data of 70,000 nested arrays, ragged, are the same tensor as the flat form', async (dtype, data) => {
    const flat = `[${data.replace(/[[\]]/g, '')}]`;
    const count = (JSON.parse(flat) as unknown[]).length;
    const nested = await post(s.port, `/v2/models/echo_${dtype}/infer`, withData(dtype, [1, count], data), {});
    const flattened = await post(s.port, `/v2/models/echo_${dtype}/infer`, withData(dtype, [1, count], flat), {});
    expect({ nested: nested.status, flat: flattened.status }).toEqual({ nested: 200, flat: 200 });
    expect(nested.body.equals(flattened.body)).toBe(true);
    await stillServing();
  });

  test('nested data under escaped member names ("\\u0069nputs", "d\\u0061ta") are still tensor data, not arrays to refuse', async () => {
    const body = `{"\\u0069nputs":[{"name":"IN","datatype":"FP32","shape":[1,70000],"d\\u0061ta":${rows(70_000)}}]}`;
    const r = await post(s.port, FP32, body, {});
    expect(r.status).toBe(200);
    expect((r.json().outputs as { data: number[] }[])[0].data).toEqual(new Array(70_000).fill(1));
  });

  test('a refused oversized upload closes its connection instead of reading it', async () => {
    const r = await rawExchange(s.port, rawPost(FP32, '{', { 'Content-Length': String(MAX + 1) }));
    expect(r!.status).toBe(400);
    expect(r!.headers.connection).toBe('close');
  });

  // Triton's http_request_many_chunks.py, over a raw socket: one-byte chunks ("1\r\n \r\n").
  test("a chunked body of more than 65,536 non-empty chunks is refused with Triton's text and its connection closed", async () => {
    const chunked = (body: string): Buffer => rawPost(FP32, `${[...body].map((c) => `1\r\n${c}\r\n`).join('')}0\r\n\r\n`,
      { 'Transfer-Encoding': 'chunked', 'Content-Type': 'application/json' });
    // Exactly 65,536 chunks: a valid request, one byte per chunk, padded with JSON whitespace.
    const request = JSON.stringify({ inputs: [fp32Input()] });
    const atLimit = await rawExchange(s.port, chunked(request.padEnd(65_536, ' ')));
    expect(atLimit!.status).toBe(200);
    const over = await rawExchange(s.port, chunked(request.padEnd(65_537, ' ')));
    expect(over!.status).toBe(400);
    expect(over!.error).toBe('Chunked request body exceeds maximum of 65536 non-empty chunks. Send fewer or larger HTTP chunks.');
    expect(over!.headers.connection).toBe('close');
    await stillServing();
  });

  // Error bodies echo what the request named; a request can name things with megabytes.
  test('client text echoed in errors is clipped: a 512 KiB input name, a 100,000-dim shape', async () => {
    const name = 'n'.repeat(512 * 1024);
    const named = await json(FP32, { inputs: [fp32Input({ name })] });
    expect(named.status).toBe(400);
    expect(named.error).toMatch(/input 'n{200,}… \(524288 (characters|bytes)\)'/);
    expect(named.body.length).toBeLessThan(4096);
    const shaped = await json(FP32, { inputs: [fp32Input({ shape: new Array(100_000).fill(1), data: [1] })] });
    expect(shaped.status).toBe(400);
    expect(shaped.error).toContain('(100000 dims)');
    expect(shaped.body.length).toBeLessThan(4096);
    await stillServing();
  });

  test('the server stays healthy after all of that', async () => {
    expect((await get(s.port, '/v2/health/ready')).status).toBe(200);
  });
});
