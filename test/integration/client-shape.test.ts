/**
 * tritonclient's shape (issue 13): the public method set of NVIDIA's tritonclient (http and
 * grpc), written down below as data, must exist on infernode's clients and helpers under its
 * camelCase names, and every one of them is called against a real server on loopback (HTTP and
 * gRPC frontends of one Triton, a model repository in explicit mode, POSIX shared memory).
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { InferenceServerError } from '../../ts/errors';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import type { Request } from '../../ts/request';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { GrpcInferenceServerClient } from '../../ts/client/grpc';
import { InferInput, InferRequestedOutput, InferResult } from '../../ts/client/infer-io';
import { ClientValueError } from '../../ts/client/errors';
import type { ClientStreamResult } from '../../ts/client/types';
import { expectRejects, expectThrows } from './helpers';
import { echo } from './http/http-helpers';

/**
 * tritonclient's public methods, from triton-inference-server/client at 58a44caa
 * (src/python/library/tritonclient/{http,grpc}/_client.py, _infer_input.py,
 * _requested_output.py, _infer_result.py, and _client.py's InferenceServerClientBase plugins).
 * Left out: Python's protocol methods (__init__, __enter__, __exit__, __del__; `close()` is
 * there), underscore-private helpers, and the nested InferAsyncRequest/CallContext handles
 * (async_infer returns a Promise here).
 */
const CLIENT_COMMON = [
  'close', 'is_server_live', 'is_server_ready', 'is_model_ready', 'get_server_metadata', 'get_model_metadata',
  'get_model_config', 'get_model_repository_index', 'load_model', 'unload_model', 'get_inference_statistics',
  'update_trace_settings', 'get_trace_settings', 'update_log_settings', 'get_log_settings',
  'get_system_shared_memory_status', 'register_system_shared_memory', 'unregister_system_shared_memory',
  'get_cuda_shared_memory_status', 'register_cuda_shared_memory', 'unregister_cuda_shared_memory',
  'infer', 'async_infer', 'register_plugin', 'plugin', 'unregister_plugin',
];
const TRITONCLIENT = {
  httpClient: CLIENT_COMMON,
  /** Static methods of tritonclient.http.InferenceServerClient. */
  httpClientStatic: ['generate_request_body', 'parse_response_body'],
  grpcClient: [...CLIENT_COMMON, 'start_stream', 'stop_stream', 'async_stream_infer'],
  InferInput: ['name', 'datatype', 'shape', 'set_shape', 'set_data_from_numpy', 'set_shared_memory'],
  InferRequestedOutput: ['name', 'set_shared_memory', 'unset_shared_memory'],
  InferResult: ['as_numpy', 'get_output', 'get_response'],
};

/** The short names infernode had before it followed tritonclient, and the names they alias. */
const ALIASES: Record<string, string> = {
  serverLive: 'isServerLive', serverReady: 'isServerReady', modelReady: 'isModelReady', serverMetadata: 'getServerMetadata',
  modelMetadata: 'getModelMetadata', modelConfig: 'getModelConfig', modelStatistics: 'getInferenceStatistics',
  repositoryIndex: 'getModelRepositoryIndex',
};

const camel = (name: string): string => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

const methodsOf = (target: any, names: string[]): string[] => names.map(camel).filter((n) => typeof target[n] !== 'function');

describe("tritonclient's method set", () => {
  test('every tritonclient name exists, camelCased, on the clients and helpers', () => {
    expect(methodsOf(HttpInferenceServerClient.prototype, TRITONCLIENT.httpClient)).toEqual([]);
    expect(methodsOf(HttpInferenceServerClient, TRITONCLIENT.httpClientStatic)).toEqual([]);
    expect(methodsOf(GrpcInferenceServerClient.prototype, TRITONCLIENT.grpcClient)).toEqual([]);
    expect(methodsOf(InferInput.prototype, TRITONCLIENT.InferInput)).toEqual([]);
    expect(methodsOf(InferRequestedOutput.prototype, TRITONCLIENT.InferRequestedOutput)).toEqual([]);
    expect(methodsOf(InferResult.prototype, TRITONCLIENT.InferResult)).toEqual([]);
    // The NDArray names beside the NumPy ones, and the short names kept as aliases.
    expect(methodsOf(InferInput.prototype, ['set_data_from_n_d_array', 'set_data'])).toEqual([]);
    expect(methodsOf(InferResult.prototype, ['as_n_d_array'])).toEqual([]);
    for (const client of [HttpInferenceServerClient.prototype, GrpcInferenceServerClient.prototype]) {
      expect(methodsOf(client, Object.keys(ALIASES))).toEqual([]);
    }
  });
});

describe('InferInput, InferRequestedOutput (no server)', () => {
  test('name, shape, datatype; setData from a TypedArray, nested arrays, strings; setShape; errors name the input', () => {
    const input = new InferInput('IN', [2, 2], 'FP32');
    expect([input.name(), input.shape(), input.datatype()]).toEqual(['IN', [2, 2], 'FP32']);
    expect(input.setData([[1, 2], [3, 4]]).data()).toEqual(new NDArray('FP32', [2, 2], new Float32Array([1, 2, 3, 4])));
    expect(input.setData(new Float32Array([5, 6, 7, 8])).data()?.data).toEqual(new Float32Array([5, 6, 7, 8]));
    expect(new InferInput('S', [2], 'BYTES').setData(['a', Buffer.from('b')]).data()?.data).toEqual([Buffer.from('a'), Buffer.from('b')]);
    expect(new InferInput('L', [2], 'INT64').setData([1, 2n]).data()?.data).toEqual(new BigInt64Array([1n, 2n]));
    expect(input.setShape([4]).shape()).toEqual([4]);
    expectThrows(() => input.setData(new Float32Array(3)), 'INVALID_ARG', "InferInput 'IN': FP32 tensor of shape [4] needs 4 elements, got 3");
    expectThrows(() => input.setData(new Int32Array(4)), 'INVALID_ARG', "InferInput 'IN': FP32 data must be a Float32Array");
    expectThrows(() => input.setDataFromNDArray(new NDArray('FP32', [2, 2], new Float32Array(4))), 'INVALID_ARG',
      "InferInput 'IN': got unexpected NDArray shape [2, 2], expected [4]");
    expectThrows(() => input.setDataFromNumpy(new NDArray('INT32', [4], new Int32Array(4))), 'INVALID_ARG',
      "InferInput 'IN': got unexpected datatype INT32 from the NDArray, expected FP32");
    expectThrows(() => new InferInput('H', [1], 'FP16').setData(new Uint16Array(1), false), 'INVALID_ARG', 'FP16 inputs must be sent as binary data');
    expect(() => input.setData([1, 'x', 3, 4])).toThrow(ClientValueError);
  });

  test("generateRequestBody: tritonclient's request JSON (sequence, priority, timeout, outputs), binary data after it", () => {
    const input = new InferInput('IN', [2], 'FP32').setData([1, 2]);
    const json = new InferInput('J', [1], 'INT32').setData([3], false);
    const { body, jsonSize } = HttpInferenceServerClient.generateRequestBody([input, json], {
      requestId: 'q', sequenceId: 7, sequenceStart: true, priority: 2, timeout: 1000, parameters: { custom: 'x' },
      outputs: [new InferRequestedOutput('OUT', false, 3), new InferRequestedOutput('O2').setSharedMemory('r', 8, 4)],
    });
    expect(jsonSize).toBe(body.length - 8);
    expect(JSON.parse(body.subarray(0, jsonSize ?? 0).toString())).toEqual({
      id: 'q',
      inputs: [
        { name: 'IN', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 8 } },
        { name: 'J', datatype: 'INT32', shape: [1], data: [3] },
      ],
      outputs: [
        { name: 'OUT', parameters: { classification: 3, binary_data: false } },
        { name: 'O2', parameters: { shared_memory_region: 'r', shared_memory_byte_size: 8, shared_memory_offset: 4 } },
      ],
      parameters: { custom: 'x', priority: 2, timeout: 1000, sequence_id: 7, sequence_start: true, sequence_end: false },
    });
    expectThrows(() => HttpInferenceServerClient.generateRequestBody([input], { parameters: { triton_x: 1 } }), 'INVALID_ARG',
      "parameter 'triton_x' is reserved");
  });

  test('InferRequestedOutput: tritonclient.http positional form and the options form', () => {
    const positional = new InferRequestedOutput('OUT', false, 3);
    expect([positional.name(), positional.binaryData(), positional.classCount()]).toEqual(['OUT', false, 3]);
    const options = new InferRequestedOutput('OUT', { classCount: 2 });
    expect([options.binaryData(), options.classCount(), options.sharedMemory()]).toEqual([true, 2, null]);
    expect(options.setSharedMemory('r', 16, 8).sharedMemory()).toEqual({ regionName: 'r', byteSize: 16, offset: 8 });
    expect(options.unsetSharedMemory().sharedMemory()).toBeNull();
    expectThrows(() => new InferRequestedOutput('OUT', { classCount: -1 }), 'INVALID_ARG', 'classCount must be a non-negative integer');
  });
});

const SHM_KEY = `/infernode-client-shape-${process.pid}`;
const SHM_FILE = `/dev/shm${SHM_KEY}`;
const RESTRICTION_KEY = 'shape-key';

let triton: Triton;
let repo: string;

function bindModels(t: Triton): void {
  t.bind({
    modelName: 'echo', inferFunc: echo({ OUT: 'IN', OUT_S: 'IN_S' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }, { name: 'IN_S', dtype: 'BYTES', shape: [-1], optional: true }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }, { name: 'OUT_S', dtype: 'BYTES', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  t.bind({
    modelName: 'params',
    inferFunc: (requests: Request[]) => requests.map((r) => ({ P: new NDArray('BYTES', [1, 1], [Buffer.from(JSON.stringify(r.parameters))]) })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'P', dtype: 'BYTES', shape: [1] }],
    config: { maxBatchSize: 4 },
  });
  t.useRepository({ repositories: [repo], controlMode: 'explicit' });
}

beforeAll(async () => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-client-shape-'));
  mkdirSync(path.join(repo, 'loadable', '1'), { recursive: true });
  writeFileSync(path.join(repo, 'loadable', '1', 'model.js'), 'exports.execute = (rs) => rs.map((r) => ({ OUT: r.data.IN }));');
  writeFileSync(path.join(repo, 'loadable', 'config.pbtxt'), 'backend: "js"\nmax_batch_size: 2\n' +
    'input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]\noutput [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]\n');
  writeFileSync(SHM_FILE, Buffer.alloc(64));
  triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false,
      logInfo: false, logWarning: false, allowClientShm: true,
      // The model-config group needs a header: proves that headers and plugins reach the server.
      httpRestrictedApi: `model-config:${RESTRICTION_KEY}=yes`, grpcRestrictedProtocol: `model-config:${RESTRICTION_KEY}=yes`,
    },
  });
  bindModels(triton);
  await triton.run();
});

afterAll(async () => {
  await triton.stop();
  rmSync(repo, { recursive: true, force: true });
  rmSync(SHM_FILE, { force: true });
});

type AnyClient = HttpInferenceServerClient | GrpcInferenceServerClient;

const PROTOCOLS = [
  {
    protocol: 'http', methods: [...TRITONCLIENT.httpClient],
    make: () => new HttpInferenceServerClient(`127.0.0.1:${triton.ports.http}`),
    restrictionHeader: RESTRICTION_KEY,
    /** HTTP 403 stands for no Triton code. */
    restrictedCode: 'UNKNOWN',
  },
  {
    protocol: 'grpc', methods: [...TRITONCLIENT.grpcClient],
    make: () => new GrpcInferenceServerClient(`127.0.0.1:${triton.ports.grpc}`),
    restrictionHeader: `triton-grpc-protocol-${RESTRICTION_KEY}`,
    /** PERMISSION_DENIED. */
    restrictedCode: 'UNAVAILABLE',
  },
] as const;

describe.each(PROTOCOLS)('$protocol: every tritonclient method against a real server', ({ protocol, methods, make, restrictionHeader, restrictedCode }) => {
  let raw: AnyClient;
  /** The client seen through a proxy that records which methods the tests call. */
  let client: AnyClient;
  const called = new Set<string>();
  const restricted = { headers: { [restrictionHeader]: 'yes' } };

  beforeAll(() => {
    raw = make();
    client = new Proxy(raw, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        called.add(String(prop));
        return (value as (...args: unknown[]) => unknown).bind(target);
      },
    });
  });
  afterAll(() => raw.close());

  test('health, metadata, config (a header), statistics', async () => {
    expect(await client.isServerLive()).toBe(true);
    expect(await client.isServerReady()).toBe(true);
    expect(await client.isModelReady('echo')).toBe(true);
    expect(await client.isModelReady('nope')).toBe(false);
    expect(await client.getServerMetadata()).toEqual(expect.objectContaining({ name: 'triton', extensions: expect.any(Array) }));
    const metadata = await client.getModelMetadata('echo', '1');
    expect(metadata.inputs.map((i) => i.name)).toEqual(['IN', 'IN_S']);
    await expectRejects(client.getModelConfig('echo'), restrictedCode, RESTRICTION_KEY);
    expect(await client.getModelConfig('echo', '', restricted)).toEqual(expect.objectContaining({ name: 'echo', max_batch_size: 8 }));
    const stats = await client.getInferenceStatistics('echo');
    expect(stats.model_stats).toEqual([expect.objectContaining({ name: 'echo' })]);
    expect((await client.getInferenceStatistics()).model_stats.map((m) => m.name)).toEqual(expect.arrayContaining(['echo', 'params']));
  });

  test('plugins see every call and may add headers', async () => {
    const seen: string[] = [];
    const plugin = (request: { headers: Record<string, string> }): void => {
      seen.push(Object.keys(request.headers).join(','));
      request.headers[restrictionHeader] = 'yes';
    };
    client.registerPlugin(plugin);
    expect(client.plugin()).toBe(plugin);
    try {
      expect(await client.getModelConfig('echo')).toEqual(expect.objectContaining({ name: 'echo' }));
      expect(seen).toEqual(['']);
    } finally {
      client.unregisterPlugin();
    }
    expect(client.plugin()).toBeNull();
    await expectRejects(client.getModelConfig('echo'), restrictedCode);
  });

  test('repository: index, load, unload (unloadDependents)', async () => {
    expect(await client.getModelRepositoryIndex()).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'loadable' })]));
    await client.loadModel('loadable');
    expect(await client.isModelReady('loadable')).toBe(true);
    expect(await client.getModelRepositoryIndex({ readyOnly: true })).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: 'loadable', state: 'READY' }),
    ]));
    await client.unloadModel('loadable', { unloadDependents: true });
    expect(await client.isModelReady('loadable')).toBe(false);
  });

  test('infer with InferInput / InferRequestedOutput; InferResult; asyncInfer; request options', async () => {
    const input = new InferInput('IN', [1, 3], 'FP32').setData(new Float32Array([0.5, 2.5, 1.5]));
    const strings = new InferInput('IN_S', [1, 2], 'BYTES').setData([['a', 'b']], false);
    const result = await client.infer('echo', [input, strings], {
      requestId: 'r-1', outputs: [new InferRequestedOutput('OUT', false), new InferRequestedOutput('OUT_S')],
    });
    expect(result).toBeInstanceOf(InferResult);
    expect(result.id).toBe('r-1');
    expect(result.asNDArray('OUT')).toEqual(new NDArray('FP32', [1, 3], new Float32Array([0.5, 2.5, 1.5])));
    expect(result.asNumpy('OUT_S')?.data).toEqual([Buffer.from('a'), Buffer.from('b')]);
    expect(result.asNDArray('missing')).toBeNull();
    expect(result.getOutput('OUT')).toEqual(expect.objectContaining({ name: 'OUT', datatype: 'FP32', shape: [1, 3] }));
    expect(result.getOutput('missing')).toBeNull();
    expect(result.getResponse()).toEqual(expect.objectContaining({ model_name: 'echo', model_version: '1', id: 'r-1' }));

    // Classification: the top classes as "value:index" strings.
    const top = await client.asyncInfer('echo', [input], { outputs: [new InferRequestedOutput('OUT', { classCount: 2 })] });
    expect((top.asNDArray('OUT')?.data as Uint8Array[]).map(String)).toEqual(['2.500000:1', '1.500000:2']);

    // Custom parameters reach the model (the server takes Triton's own: priority, timeout, ...).
    const p = await client.infer('params', [new InferInput('IN', [1, 1], 'FP32').setData([[1]])], {
      priority: 1, timeout: 5_000_000, parameters: { custom: 'x' },
    });
    expect(JSON.parse(String(p.asNDArray('P')?.data[0]))).toEqual({ custom: 'x' });
    await expectRejects(client.infer('params', [input], { parameters: { priority: 2 } }), 'INVALID_ARG', "parameter 'priority' is reserved");
    await expectRejects(client.infer('echo', [new InferInput('IN', [1], 'FP32')]), 'INVALID_ARG', "InferInput 'IN' has no data");
    // infernode's request object still works, and also resolves with an InferResult.
    const legacy = await client.infer({ modelName: 'echo', inputs: { IN: new NDArray('FP32', [1, 1], new Float32Array([9])) } });
    expect(legacy.asNDArray('OUT')?.data).toEqual(new Float32Array([9]));
  });

  test('an AbortSignal cancels a call; a server error keeps its code', async () => {
    const input = new InferInput('IN', [1, 1], 'FP32').setData([[1]]);
    await expectRejects(client.infer('echo', [input], { signal: AbortSignal.abort() }), 'CANCELLED');
    await expectRejects(client.isServerLive({ signal: AbortSignal.abort() }), 'CANCELLED');
    await expectRejects(client.infer('nope', [input]), 'NOT_FOUND', "'nope'");
  });

  test('log and trace settings', async () => {
    expect(await client.updateLogSettings({ log_verbose_level: 1 })).toEqual(expect.objectContaining({ log_verbose_level: 1 }));
    expect(await client.getLogSettings()).toEqual(expect.objectContaining({ log_verbose_level: 1, log_info: false }));
    await client.updateLogSettings({ log_verbose_level: 0 });
    expect(await client.updateTraceSettings('echo', { trace_rate: '5' })).toEqual(expect.objectContaining({ trace_rate: '5' }));
    expect(await client.getTraceSettings('echo')).toEqual(expect.objectContaining({ trace_rate: '5', trace_level: ['OFF'] }));
    expect(await client.updateTraceSettings('echo', { trace_rate: null })).toEqual(expect.objectContaining({ trace_rate: '1000' }));
    expect(await client.getTraceSettings()).toEqual(expect.objectContaining({ trace_rate: '1000', trace_level: ['OFF'] }));
  });

  test('system shared memory: register, status, inputs and outputs in a region, unregister', async () => {
    const region = `shape-${protocol}`;
    await client.registerSystemSharedMemory(region, SHM_KEY, 64);
    try {
      expect(await client.getSystemSharedMemoryStatus()).toEqual([{ name: region, key: SHM_KEY, offset: 0, byte_size: 64 }]);
      expect(await client.getSystemSharedMemoryStatus(region)).toHaveLength(1);
      const fd = openSync(SHM_FILE, 'r+');
      try {
        writeSync(fd, Buffer.from(new Float32Array([1.5, 2.5]).buffer), 0, 8, 0);
        const input = new InferInput('IN', [1, 2], 'FP32').setSharedMemory(region, 8);
        const output = new InferRequestedOutput('OUT').setSharedMemory(region, 8, 32);
        const result = await client.infer('echo', [input], { outputs: [output] });
        expect(result.asNDArray('OUT')).toBeNull();
        expect(result.getOutput('OUT')).toEqual(expect.objectContaining({ name: 'OUT', shape: [1, 2] }));
        const out = Buffer.alloc(8);
        readSync(fd, out, 0, 8, 32);
        expect(new Float32Array(out.buffer, out.byteOffset, 2)).toEqual(new Float32Array([1.5, 2.5]));
      } finally {
        closeSync(fd);
      }
    } finally {
      await client.unregisterSystemSharedMemory(region);
    }
    expect(await client.getSystemSharedMemoryStatus()).toEqual([]);
    await client.unregisterSystemSharedMemory();
  });

  test('CUDA shared memory: status, a handle the server cannot open is refused, unregister', async () => {
    expect(await client.getCudaSharedMemoryStatus()).toEqual([]);
    await expect(client.registerCudaSharedMemory('cuda-r', new Uint8Array(64), 0, 16)).rejects.toBeInstanceOf(InferenceServerError);
    await expect(client.registerCudaSharedMemory('cuda-r', Buffer.alloc(64).toString('base64'), 0, 16)).rejects.toBeInstanceOf(InferenceServerError);
    expect(await client.getCudaSharedMemoryStatus()).toEqual([]);
    await client.unregisterCudaSharedMemory('cuda-r');
    await client.unregisterCudaSharedMemory();
  });

  if (protocol === 'grpc') {
    test('startStream(callback) / asyncStreamInfer(modelName, inputs, options) / stopStream(): InferResults by request id', async () => {
      const grpc = client as GrpcInferenceServerClient;
      const results: ClientStreamResult[] = [];
      grpc.startStream((result, error) => {
        if (error) throw error;
        if (result) results.push(result);
      });
      const input = (v: number): InferInput => new InferInput('IN', [1, 1], 'FP32').setData([[v]]);
      grpc.asyncStreamInfer('echo', [input(1)], { requestId: 'a' });
      grpc.asyncStreamInfer('echo', [input(2)], { requestId: 'b', outputs: [new InferRequestedOutput('OUT')] });
      await grpc.stopStream(false);
      expect(results.map((r) => r.id).sort()).toEqual(['a', 'b']);
      const b = results.find((r) => r.id === 'b') as unknown as InferResult;
      expect(b).toBeInstanceOf(InferResult);
      expect(b.asNDArray('OUT')?.data).toEqual(new Float32Array([2]));
    });
  } else {
    test('generateRequestBody / parseResponseBody: the body infer sends, a response body read back', async () => {
      const input = new InferInput('IN', [1, 2], 'FP32').setData(new Float32Array([3, 4]));
      const { body, jsonSize } = HttpInferenceServerClient.generateRequestBody([input], { requestId: 'g' });
      expect(jsonSize).toBe(body.length - 8);
      const res = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/echo/infer`, {
        method: 'POST', body, headers: { 'Inference-Header-Content-Length': String(jsonSize) },
      });
      expect(res.status).toBe(200);
      const headerLength = Number(res.headers.get('inference-header-content-length'));
      const result = HttpInferenceServerClient.parseResponseBody(new Uint8Array(await res.arrayBuffer()), { headerLength });
      expect(result.id).toBe('g');
      expect(result.asNDArray('OUT')?.data).toEqual(new Float32Array([3, 4]));
    });
  }

  test('the short names are aliases of tritonclient\'s', async () => {
    expect(await raw.serverLive()).toBe(await raw.isServerLive());
    expect(await raw.serverReady()).toBe(true);
    expect(await raw.modelReady('echo')).toBe(true);
    expect(await raw.serverMetadata()).toEqual(await raw.getServerMetadata());
    expect(await raw.modelMetadata('echo')).toEqual(await raw.getModelMetadata('echo'));
    expect((await raw.modelStatistics('echo')).model_stats[0].name).toBe('echo');
    expect(await raw.repositoryIndex()).toEqual(await raw.getModelRepositoryIndex());
    raw.registerPlugin((r) => { r.headers[restrictionHeader] = 'yes'; });
    expect(await raw.modelConfig('echo')).toEqual(await raw.getModelConfig('echo'));
    raw.unregisterPlugin();
  });

  test('close; then every tritonclient method was called above', async () => {
    await client.close();
    await expectRejects(client.isServerLive(), 'UNAVAILABLE', 'closed');
    expect(methods.map(camel).filter((name) => !called.has(name))).toEqual([]);
  });
});
