/**
 * The HTTP clients against a real server: HttpInferenceServerClient (the generic KServe v2
 * client: every call, binary and JSON tensors, compression, errors, timeouts, cancellation)
 * and ModelClient (PyTriton's surface: samples and batches, waiting, config, load/unload,
 * closing), plus PyTriton's URL rules.
 */
import * as net from 'node:net';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { InferenceServerError } from '../../ts/errors';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import type { Request } from '../../ts/request';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { ModelClient } from '../../ts/client/model-client';
import { parseTritonUrl } from '../../ts/client/connect';
import {
  ClientClosedError, ClientInvalidUrlError, ClientTimeoutError, ClientValueError, ModelDoesntSupportBatchingError,
} from '../../ts/client/errors';
import { gate, type Gate } from './helpers';
import { echo, serve, type Served } from './http/http-helpers';

let s: Served;
let repo: string;
let hold: Gate | null = null;

function bindModels(t: Triton): void {
  t.bind({
    modelName: 'echo', inferFunc: echo({ OUT: 'IN', OUT_B: 'IN_B' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }, { name: 'IN_B', dtype: 'BYTES', shape: [-1], optional: true }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }, { name: 'OUT_B', dtype: 'BYTES', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  for (const dtype of ['FP16', 'INT64', 'BOOL'] as const) {
    t.bind({
      modelName: `echo_${dtype}`, inferFunc: echo({ OUT: 'IN' }),
      inputs: [{ name: 'IN', dtype, shape: [-1] }], outputs: [{ name: 'OUT', dtype, shape: [-1] }], config: { maxBatchSize: 8 },
    });
  }
  t.bind({
    modelName: 'unbatched', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'INT32', shape: [3] }], outputs: [{ name: 'OUT', dtype: 'INT32', shape: [3] }],
    config: { batching: false },
  });
  t.bind({
    modelName: 'params',
    inferFunc: (requests: Request[]) => requests.map((r) => ({ P: new NDArray('BYTES', [1, 1], [Buffer.from(JSON.stringify(r.parameters))]) })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'P', dtype: 'BYTES', shape: [1] }],
    config: { maxBatchSize: 4 },
  });
  t.bind({
    modelName: 'slow',
    inferFunc: async (requests: Request[]) => {
      await hold?.promise;
      return requests.map((r) => ({ OUT: r.data.IN }));
    },
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { maxBatchSize: 4 },
  });
  t.useRepository({ repositories: [repo], controlMode: 'explicit' });
}

beforeAll(async () => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-client-repo-'));
  mkdirSync(path.join(repo, 'loadable', '1'), { recursive: true });
  writeFileSync(path.join(repo, 'loadable', '1', 'model.js'), 'exports.execute = (rs) => rs.map((r) => ({ OUT: r.data.IN }));');
  writeFileSync(path.join(repo, 'loadable', 'config.pbtxt'), 'backend: "js"\nmax_batch_size: 2\n' +
    'input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]\noutput [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]\n');
  s = await serve(bindModels, { httpHeaderForwardPattern: '^(authorization|x-)' });
});

afterAll(async () => {
  hold?.open();
  await s.triton.stop();
  rmSync(repo, { recursive: true, force: true });
});

const url = (): string => `http://127.0.0.1:${s.port}`;

async function rejection(promise: Promise<unknown>): Promise<InferenceServerError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(InferenceServerError);
    return err as InferenceServerError;
  }
  throw new Error('expected a rejection');
}

describe('HttpInferenceServerClient', () => {
  let client: HttpInferenceServerClient;
  beforeAll(() => { client = new HttpInferenceServerClient(`127.0.0.1:${s.port}`); });
  afterAll(() => client.close());

  test('health, metadata, config, statistics, repository index', async () => {
    expect(await client.serverLive()).toBe(true);
    expect(await client.serverReady()).toBe(true);
    expect(await client.modelReady('echo')).toBe(true);
    expect(await client.modelReady('echo', '9')).toBe(false);
    expect(await client.modelReady('ghost')).toBe(false);
    expect((await client.serverMetadata()).extensions).toContain('binary_tensor_data');
    expect((await client.modelMetadata('echo')).inputs[0]).toEqual({ name: 'IN', datatype: 'FP32', shape: [-1, -1] });
    expect((await client.modelConfig('unbatched', '1')).max_batch_size).toBe(0);
    expect((await client.modelStatistics('echo')).model_stats[0].name).toBe('echo');
    expect((await client.modelStatistics()).model_stats.length).toBeGreaterThan(3);
    expect((await client.repositoryIndex()).map((e) => e.name)).toContain('loadable');
    expect((await client.repositoryIndex(true)).map((e) => e.name)).not.toContain('loadable');
  });

  test('binary infer round trip (FP32 and BYTES), requested outputs, id', async () => {
    const result = await client.infer({
      modelName: 'echo', id: 'abc',
      inputs: { IN: new NDArray('FP32', [2, 2], new Float32Array([1, 2, 3, 4])), IN_B: new NDArray('BYTES', [2, 1], [Buffer.from('x'), Buffer.from('')]) },
    });
    expect(result).toMatchObject({ modelName: 'echo', modelVersion: '1', id: 'abc' });
    expect([...result.outputs.OUT.data as Float32Array]).toEqual([1, 2, 3, 4]);
    expect(result.outputs.OUT.shape).toEqual([2, 2]);
    expect((result.outputs.OUT_B.data as Buffer[]).map(String)).toEqual(['x', '']);
    const only = await client.infer({ modelName: 'echo', inputs: { IN: new NDArray('FP32', [1, 1], new Float32Array([5])) }, outputs: ['OUT'] });
    expect(Object.keys(only.outputs)).toEqual(['OUT']);
  });

  test('FP16, INT64 and BOOL survive both ways', async () => {
    const cases = [
      new NDArray('FP16', [1, 2], new Uint16Array([0x3c00, 0xc000])),
      new NDArray('INT64', [1, 2], new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n])),
      new NDArray('BOOL', [1, 3], new Uint8Array([1, 0, 1])),
    ];
    for (const arr of cases) {
      const out = (await client.infer({ modelName: `echo_${arr.dtype}`, inputs: { IN: arr } })).outputs.OUT;
      expect(out.dtype).toBe(arr.dtype);
      expect([...(out.data as ArrayLike<unknown> & Iterable<unknown>)]).toEqual([...(arr.data as ArrayLike<unknown> & Iterable<unknown>)]);
    }
  });

  test('JSON tensors and gzip/deflate compression when asked', async () => {
    for (const options of [{ binaryInputs: false, binaryOutputs: false }, { requestCompression: 'gzip', responseCompression: 'gzip' },
      { requestCompression: 'deflate', responseCompression: 'deflate', binaryOutputs: false }] as const) {
      const c = new HttpInferenceServerClient(url(), options);
      const out = await c.infer({ modelName: 'echo_INT64', inputs: { IN: new NDArray('INT64', [1, 2], new BigInt64Array([3n, -4n])) } });
      expect([...out.outputs.OUT.data as BigInt64Array]).toEqual([3n, -4n]);
      await c.close();
    }
  });

  test('parameters and headers reach the model', async () => {
    const out = await client.infer({
      modelName: 'params', inputs: { IN: new NDArray('FP32', [1, 1], new Float32Array([0])) },
      parameters: { mode: 'x', k: 2 }, headers: { 'x-tenant': 'acme' },
    });
    expect(JSON.parse(String((out.outputs.P.data as Buffer[])[0]))).toEqual({ mode: 'x', k: 2, 'x-tenant': 'acme' });
  });

  test("server errors carry the server's message and a code from the status", async () => {
    const unknown = await rejection(client.infer({ modelName: 'ghost', inputs: { IN: new NDArray('FP32', [1, 1], new Float32Array(1)) } }));
    expect(unknown.code).toBe('NOT_FOUND');
    expect(unknown.httpStatus).toBe(404);
    expect(unknown.message).toBe("Request for unknown model: 'ghost' is not found");
    const bad = await rejection(client.infer({ modelName: 'unbatched', inputs: { IN: new NDArray('INT32', [4], new Int32Array(4)) } }));
    expect(bad.code).toBe('INVALID_ARG');
    expect(bad.message).toContain('IN');
    const load = await rejection(client.loadModel('ghost'));
    expect(load.code).toBe('NOT_FOUND');
  });

  test('a call past its deadline rejects with ClientTimeoutError; an aborted one with CANCELLED', async () => {
    hold = gate();
    const input = { IN: new NDArray('FP32', [1, 1], new Float32Array([1])) };
    const late = await rejection(client.infer({ modelName: 'slow', inputs: input, timeoutMs: 100 }));
    expect(late).toBeInstanceOf(ClientTimeoutError);
    expect(late.message).toContain('timed out after 100 ms');
    const controller = new AbortController();
    const pending = client.infer({ modelName: 'slow', inputs: input, signal: controller.signal });
    controller.abort();
    expect((await rejection(pending)).code).toBe('CANCELLED');
    hold.open();
    hold = null;
    expect((await client.infer({ modelName: 'slow', inputs: input })).outputs.OUT.data[0]).toBe(1);
  });

  test('an unreachable server is UNAVAILABLE; a closed client ClientClosedError', async () => {
    const port = await freePort();
    const nowhere = new HttpInferenceServerClient(`127.0.0.1:${port}`);
    const err = await rejection(nowhere.serverLive());
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain('cannot reach the server');
    await nowhere.close();
    expect(await rejection(nowhere.serverLive())).toBeInstanceOf(ClientClosedError);
  });

  test('load and unload through the repository API', async () => {
    await client.loadModel('loadable');
    expect(await client.modelReady('loadable')).toBe(true);
    await client.unloadModel('loadable');
    expect(await client.modelReady('loadable')).toBe(false);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

describe('Triton URLs (PyTriton rules)', () => {
  test('no scheme means http, default ports 8000 and 8001', () => {
    expect(parseTritonUrl('localhost')).toMatchObject({ scheme: 'http', hostname: 'localhost', port: 8000, url: 'http://localhost:8000' });
    expect(parseTritonUrl('http://h:9000/x')).toMatchObject({ scheme: 'http', port: 9000, url: 'http://h:9000' });
    expect(parseTritonUrl('grpc://h')).toMatchObject({ scheme: 'grpc', port: 8001, url: 'grpc://h:8001' });
    // Port 80, http's default, is kept as written (URL would drop it).
    expect(parseTritonUrl('http://h:80')).toMatchObject({ port: 80, url: 'http://h:80' });
    expect(parseTritonUrl('grpc://h:80/')).toMatchObject({ port: 80, url: 'grpc://h:80' });
    expect(parseTritonUrl('h:80')).toMatchObject({ port: 80, url: 'http://h:80' });
    expect(parseTritonUrl('http://[::1]:80')).toMatchObject({ hostname: '[::1]', port: 80 });
    expect(parseTritonUrl('http://[::1]')).toMatchObject({ port: 8000 });
  });

  test('other schemes are refused', () => {
    expect(() => parseTritonUrl('ftp://h')).toThrow(ClientInvalidUrlError);
    expect(() => new ModelClient('https://h', 'm')).toThrow("the scheme must be http or grpc, got 'https'");
  });
});

describe('ModelClient', () => {
  test('inferSample adds and strips the batch axis; named and positional inputs', async () => {
    const client = new ModelClient(url(), 'echo');
    const named = await client.inferSample({ IN: new Float32Array([1, 2, 3]), IN_B: ['a', 'b', 'c'] });
    expect(named.OUT.shape).toEqual([3]);
    expect([...named.OUT.data as Float32Array]).toEqual([1, 2, 3]);
    expect((named.OUT_B.data as Buffer[]).map(String)).toEqual(['a', 'b', 'c']);
    const positional = await client.inferSample([new Float32Array([9])]);
    expect(positional.OUT.shape).toEqual([1]);
    await client.close();
  });

  test('inferBatch keeps the batch axis; a model without batching refuses it', async () => {
    const client = new ModelClient(url(), 'echo');
    const out = await client.inferBatch({ IN: new NDArray('FP32', [2, 1], new Float32Array([1, 2])) });
    expect(out.OUT.shape).toEqual([2, 1]);
    await client.close();
    const unbatched = new ModelClient(url(), 'unbatched');
    expect(await unbatched.isBatchingSupported).toBe(false);
    await expect(unbatched.inferBatch({ IN: new Int32Array([1, 2, 3]) })).rejects.toBeInstanceOf(ModelDoesntSupportBatchingError);
    expect((await unbatched.inferSample({ IN: new Int32Array([1, 2, 3]) })).OUT.shape).toEqual([3]);
    await unbatched.close();
  });

  test('modelConfig is read once, in ModelClient form', async () => {
    const client = new ModelClient(url(), 'echo', '1');
    const config = await client.modelConfig;
    expect(config).toMatchObject({ modelName: 'echo', maxBatchSize: 8, batching: true, decoupled: false });
    expect(config.inputs).toEqual([
      { name: 'IN', dtype: 'FP32', shape: [-1], optional: false }, { name: 'IN_B', dtype: 'BYTES', shape: [-1], optional: true },
    ]);
    expect(await client.isBatchingSupported).toBe(true);
    const copy = ModelClient.fromExistingClient(client);
    expect(await copy.modelConfig).toEqual(config);
    await copy.close();
    await client.close();
  });

  test('parameters, headers and the access token reach the server; bad values are refused', async () => {
    const client = new ModelClient(url(), 'params', undefined, { accessToken: 't0k' });
    const out = await client.inferSample({ IN: new Float32Array([0]) }, { parameters: { a: 1, b: true }, headers: { 'x-trace': 7 } });
    expect(JSON.parse(String((out.P.data as Buffer[])[0]))).toEqual({ a: 1, b: true, 'x-trace': '7', authorization: 'Bearer t0k' });
    await expect(client.inferSample({ IN: new Float32Array([0]) }, { parameters: { a: {} as unknown as string } })).rejects.toBeInstanceOf(ClientValueError);
    await expect(client.inferSample({})).rejects.toThrow('no inputs given');
    await client.close();
  });

  test('waitForModel waits for a server that starts later', async () => {
    const port = await freePort();
    const client = new ModelClient(`127.0.0.1:${port}`, 'echo');
    const waiting = client.waitForModel(10);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const late = await serve(bindModelsLate, { httpPort: port });
    try {
      await waiting;
      expect((await client.inferSample({ IN: new Float32Array([4]) })).OUT.data[0]).toBe(4);
    } finally {
      await client.close();
      await late.triton.stop();
    }
  });

  test('a model the server does not list is waited for until initTimeoutS, as PyTriton does; the timeout names the models it has', async () => {
    // 1 s: the reason needs one whole check (four calls, each bounded by initTimeoutS too) in time.
    const client = new ModelClient(url(), 'ehco', undefined, { initTimeoutS: 1 });
    const err = await client.inferSample({ IN: new Float32Array([1]) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientTimeoutError);
    expect((err as Error).message).toMatch(/^waiting for model 'ehco' at .* to be ready took longer than 1 s: the server's model repository does not list it: it has only /);
    expect((err as Error).message).toContain("'echo'");
    await client.close();
  });

  test('TypedArray inputs take the declared datatype when they are its kind: Uint8Array for BOOL, Uint16Array for FP16', async () => {
    s.triton.bind({
      modelName: 'kinds', inferFunc: (rs: Request[]) => rs.map((r) => ({ B: r.data.B, H: r.data.H })),
      inputs: [{ name: 'B', dtype: 'BOOL', shape: [2] }, { name: 'H', dtype: 'FP16', shape: [1] }],
      outputs: [{ name: 'B', dtype: 'BOOL', shape: [2] }, { name: 'H', dtype: 'FP16', shape: [1] }],
    });
    const client = new ModelClient(url(), 'kinds');
    const out = await client.inferSample({ B: Uint8Array.of(1, 0), H: Uint16Array.of(0x3c00) });
    expect([out.B.dtype, Array.from(out.B.data as Uint8Array)]).toEqual(['BOOL', [1, 0]]);
    expect([out.H.dtype, Array.from(out.H.data as Uint16Array)]).toEqual(['FP16', [0x3c00]]);
    await client.close();
  });

  test('a model bound after the client started waiting is waited for (a start-up race)', async () => {
    const client = new ModelClient(url(), 'later', undefined, { initTimeoutS: 30 });
    const waiting = client.waitForModel(30);
    await new Promise((resolve) => setTimeout(resolve, 200));
    s.triton.bind({
      modelName: 'later', inferFunc: (rs: Request[]) => rs.map((r) => ({ OUT: r.data.IN })),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    });
    await waiting;
    expect((await client.inferSample({ IN: new Float32Array([6]) })).OUT.data[0]).toBe(6);
    await client.close();
  });

  test('waitForServer and eager init time out with ClientTimeoutError', async () => {
    const port = await freePort();
    const client = new ModelClient(`127.0.0.1:${port}`, 'echo', undefined, { lazyInit: false, initTimeoutS: 0.3 });
    await expect(client.waitForServer(0.2)).rejects.toBeInstanceOf(ClientTimeoutError);
    await expect(client.inferSample({ IN: new Float32Array([1]) })).rejects.toThrow('took longer than 0.3 s');
    await client.close();
  });

  test('an inference past inferenceTimeoutS fails with ClientTimeoutError', async () => {
    hold = gate();
    const client = new ModelClient(url(), 'slow', undefined, { inferenceTimeoutS: 0.1 });
    await expect(client.inferSample({ IN: new Float32Array([1]) })).rejects.toBeInstanceOf(ClientTimeoutError);
    hold.open();
    hold = null;
    await client.close();
  });

  test('loadModel and unloadModel; a closed client refuses every call', async () => {
    const client = new ModelClient(url(), 'loadable', undefined, { initTimeoutS: 5 });
    await client.loadModel();
    expect((await client.inferSample({ IN: new Float32Array([2]) })).OUT.data[0]).toBe(2);
    await client.unloadModel();
    await client.close();
    await client.close();
    await expect(client.inferSample({ IN: new Float32Array([2]) })).rejects.toBeInstanceOf(ClientClosedError);
    await expect(client.modelConfig).rejects.toBeInstanceOf(ClientClosedError);
    await expect(client.waitForModel(1)).rejects.toBeInstanceOf(ClientClosedError);
  });
});

function bindModelsLate(t: Triton): void {
  t.bind({
    modelName: 'echo', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
}
