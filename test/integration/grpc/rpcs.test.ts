/**
 * Every RPC besides inference, over a real grpc-js client built from the project's .proto with
 * proto-loader: health, metadata, config, statistics, repository, shared-memory (disabled here),
 * trace and log settings, and the standard health service.
 */
import { Client, Metadata, credentials, status, type ServiceError } from '@grpc/grpc-js';
import { toModelConfigJson } from '../../../ts/config/model-config-json';
import { modelConfigJson } from '../../../ts/client/grpc-convert';
import { EXTENSIONS } from '../../../ts/server/metadata';
import { bindStandardModels, fails, fp32Bytes, identity, ok, rawStub, serve, type Served } from './helpers';

let s: Served;

beforeAll(async () => {
  s = await serve((t) => {
    bindStandardModels(t);
    for (const modelVersion of [1, 3]) {
      t.bind({
        modelName: 'versioned', modelVersion, inferFunc: identity,
        inputs: [{ name: 'IN', dtype: 'INT32', shape: [2] }], outputs: [{ name: 'OUT', dtype: 'INT32', shape: [2] }],
        config: { batching: false },
      });
    }
  });
});

afterAll(() => s.close());

describe('health', () => {
  test('ServerLive and ServerReady', async () => {
    expect(await ok(s.stub, 'ServerLive', {})).toEqual({ live: true });
    expect(await ok(s.stub, 'ServerReady', {})).toEqual({ ready: true });
  });

  test('ModelReady: known model and version true; unknown model, version or bad version false, status OK', async () => {
    expect((await ok(s.stub, 'ModelReady', { name: 'identity' })).ready).toBe(true);
    expect((await ok(s.stub, 'ModelReady', { name: 'versioned', version: '3' })).ready).toBe(true);
    expect((await ok(s.stub, 'ModelReady', { name: 'versioned', version: '2' })).ready).toBe(false);
    expect((await ok(s.stub, 'ModelReady', { name: 'nope' })).ready).toBe(false);
    expect((await ok(s.stub, 'ModelReady', { name: 'versioned', version: 'x1' })).ready).toBe(false);
  });

  test('grpc.health.v1.Health/Check answers SERVING; Watch is not implemented', async () => {
    const health = rawStub(s.port, 'grpc.health.v1.Health');
    try {
      expect(await ok(health, 'Check', { service: '' })).toEqual({ status: 'SERVING' });
      expect(await ok(health, 'Check', { service: 'inference.GRPCInferenceService' })).toEqual({ status: 'SERVING' });
      const watchRpc = health.Watch as unknown as (request: object) => NodeJS.EventEmitter;
      const watch = watchRpc.call(health, { service: '' });
      const error = await new Promise<{ code: number }>((resolve) => watch.on('error', resolve));
      expect(error.code).toBe(status.UNIMPLEMENTED);
    } finally {
      health.close();
    }
  });
});

describe('metadata', () => {
  test('ServerMetadata names the server, its version and extensions', async () => {
    const r = await ok(s.stub, 'ServerMetadata', {});
    expect(r.name).toBe('triton');
    expect(r.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(r.extensions).toEqual(EXTENSIONS);
  });

  test('ModelMetadata: every version, the batch dim as -1', async () => {
    expect(await ok(s.stub, 'ModelMetadata', { name: 'identity' })).toEqual({
      name: 'identity', versions: ['1'], platform: expect.any(String),
      inputs: [{ name: 'IN', datatype: 'FP32', shape: ['-1', '-1'] }],
      outputs: [{ name: 'OUT', datatype: 'FP32', shape: ['-1', '-1'] }],
    });
    const versioned = await ok(s.stub, 'ModelMetadata', { name: 'versioned' });
    expect(versioned.versions).toEqual(['1', '3']);
    expect((versioned.inputs as { shape: string[] }[])[0].shape).toEqual(['2']);
    expect((await ok(s.stub, 'ModelMetadata', { name: 'versioned', version: '3' })).versions).toEqual(['3']);
  });

  test('unknown model or version: NOT_FOUND naming it; a non-numeric version: INVALID_ARGUMENT', async () => {
    await fails(s.stub, 'ModelMetadata', { name: 'nope' }, status.NOT_FOUND, "Request for unknown model: 'nope' is not found");
    await fails(s.stub, 'ModelMetadata', { name: 'versioned', version: '2' }, status.NOT_FOUND, "'versioned' version 2 is not found");
    await fails(s.stub, 'ModelMetadata', { name: 'versioned', version: 'v1' }, status.INVALID_ARGUMENT, "invalid version 'v1'");
  });
});

describe('ModelConfig', () => {
  test('the normalized config, field for field the JSON form /config serves', async () => {
    const r = await ok(s.stub, 'ModelConfig', { name: 'identity' });
    const config = r.config as Record<string, unknown>;
    expect(config.name).toBe('identity');
    expect(config.max_batch_size).toBe(64);
    expect(config.scheduling_choice).toBe('dynamic_batching');
    expect(modelConfigJson(config)).toEqual(toModelConfigJson(s.triton.model('identity').config));
  });

  test('a model without batching has no dynamic_batching, and its version can be named', async () => {
    const config = (await ok(s.stub, 'ModelConfig', { name: 'versioned', version: '1' })).config as Record<string, unknown>;
    expect(config.max_batch_size).toBe(0);
    expect(config.dynamic_batching ?? null).toBeNull();
    expect(modelConfigJson(config)).toEqual(toModelConfigJson(s.triton.model('versioned', 1).config));
  });

  test('unknown model: NOT_FOUND', async () => {
    await fails(s.stub, 'ModelConfig', { name: 'nope' }, status.NOT_FOUND, "'nope' is not found");
  });

  test("uint64 fields at 2^64 - 1 travel exactly (Triton's qa/L0_config_json max_priority_level values)", async () => {
    const max = 2n ** 64n - 1n;
    const big = await serve((t) => t.bind({
      modelName: 'max_priority_level', inferFunc: identity,
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
      config: {
        maxBatchSize: 1,
        batcher: {
          priorityLevels: max, defaultPriorityLevel: 4294967295, maxQueueDelayMicroseconds: max,
          priorityQueuePolicy: { 4294967296: { defaultTimeoutMicroseconds: max, allowTimeoutOverride: true, maxQueueSize: 10 } },
        },
      },
    }));
    try {
      const config = (await ok(big.stub, 'ModelConfig', { name: 'max_priority_level' })).config as Record<string, unknown>;
      const batching = config.dynamic_batching as Record<string, unknown>;
      // The raw stub reads 64-bit fields as strings (exact digits), and a 64-bit map key as
      // protobufjs's 8-character hash of it (its little-endian bytes).
      const mapKey = (hash: string): string => [...hash].reduceRight((n, c) => n * 256n + BigInt(c.charCodeAt(0)), 0n).toString();
      const policies = Object.entries(batching.priority_queue_policy as Record<string, unknown>).map(([k, v]) => [mapKey(k), v]);
      expect({ ...batching, priority_queue_policy: Object.fromEntries(policies) }).toMatchObject({
        priority_levels: '18446744073709551615', default_priority_level: '4294967295', max_queue_delay_microseconds: '18446744073709551615',
        priority_queue_policy: {
          4294967296: { timeout_action: 'REJECT', default_timeout_microseconds: '18446744073709551615', allow_timeout_override: true, max_queue_size: 10 },
        },
      });
    } finally {
      await big.close();
    }
  });
});

describe('ModelStatistics', () => {
  test('counts inferences per model; all models without a name; INVALID_ARGUMENT for unknown ones, as Triton', async () => {
    for (let i = 0; i < 2; i++) {
      await ok(s.stub, 'ModelInfer', {
        model_name: 'nobatch', inputs: [{ name: 'IN', datatype: 'INT32', shape: [4] }],
        raw_input_contents: [Buffer.from(new Int32Array([1, 2, 3, 4]).buffer)],
      });
    }
    const one = await ok(s.stub, 'ModelStatistics', { name: 'nobatch' });
    const stats = (one.model_stats as Record<string, unknown>[])[0];
    expect(stats).toMatchObject({ name: 'nobatch', version: '1', inference_count: '2', execution_count: '2' });
    expect((stats.inference_stats as Record<string, { count: string }>).success.count).toBe('2');
    expect(Number(stats.last_inference)).toBeGreaterThan(0);
    const all = await ok(s.stub, 'ModelStatistics', {});
    expect((all.model_stats as { name: string }[]).map((m) => m.name).sort())
      .toEqual(['identity', 'nobatch', 'strings', 'versioned', 'versioned']);
    // Triton's status and texts (core src/tritonserver.cc TRITONSERVER_ServerModelStatistics;
    // qa/L0_server_status/server_status_test.py), not the NOT_FOUND of the other model RPCs.
    await fails(s.stub, 'ModelStatistics', { name: 'nope' }, status.INVALID_ARGUMENT, "requested model 'nope' is not available");
    await fails(s.stub, 'ModelStatistics', { name: 'nobatch', version: '7' }, status.INVALID_ARGUMENT,
      "requested model version is not available for model 'nobatch'");
    await fails(s.stub, 'ModelMetadata', { name: 'nope' }, status.NOT_FOUND, "'nope' is not found");
  });
});

describe('repository', () => {
  test('RepositoryIndex lists the bound models as READY', async () => {
    const r = await ok(s.stub, 'RepositoryIndex', { ready: true });
    expect(r.models).toContainEqual({ name: 'identity', version: '1', state: 'READY', reason: '' });
    expect((r.models as unknown[]).length).toBe(5);
  });

  test('load and unload without a repository: UNAVAILABLE', async () => {
    await fails(s.stub, 'RepositoryModelLoad', { model_name: 'x' }, status.UNAVAILABLE, 'explicit model load / unload is not allowed');
    await fails(s.stub, 'RepositoryModelUnload', { model_name: 'x' }, status.UNAVAILABLE, 'explicit model load / unload is not allowed');
  });
});

describe('shared memory disabled (the default)', () => {
  test.each([
    ['SystemSharedMemoryRegister', { name: 'r', key: '/k', byte_size: 4 }], ['SystemSharedMemoryUnregister', {}],
    ['CudaSharedMemoryRegister', { name: 'r', raw_handle: Buffer.alloc(64), byte_size: 4 }], ['CudaSharedMemoryUnregister', {}],
  ])('%s: UNIMPLEMENTED, saying how to enable it (as Triton)', async (rpc, request) => {
    await fails(s.stub, rpc, request, status.UNIMPLEMENTED, "Client shared memory is disabled. Start the server with '--allow-client-shm=true'");
  });

  test.each(['SystemSharedMemoryStatus', 'CudaSharedMemoryStatus'])('%s answers (no regions)', async (rpc) => {
    const reply = await ok(s.stub, rpc, {});
    expect(reply.regions).toEqual({});
  });
});

describe('TraceSetting', () => {
  test('reads, updates globally and per model, clears a model override', async () => {
    const initial = (await ok(s.stub, 'TraceSetting', {})).settings as Record<string, { value: string[] }>;
    expect(initial.trace_level).toEqual({ value: ['OFF'] });
    expect(initial.trace_rate).toEqual({ value: ['1000'] });
    const updated = await ok(s.stub, 'TraceSetting', { settings: { trace_rate: { value: ['10'] } } });
    expect((updated.settings as Record<string, { value: string[] }>).trace_rate).toEqual({ value: ['10'] });
    const model = await ok(s.stub, 'TraceSetting', { model_name: 'identity', settings: { trace_count: { value: ['5'] } } });
    expect((model.settings as Record<string, { value: string[] }>).trace_count).toEqual({ value: ['5'] });
    expect((model.settings as Record<string, { value: string[] }>).trace_rate).toEqual({ value: ['10'] });
    const cleared = await ok(s.stub, 'TraceSetting', { model_name: 'identity', settings: { trace_count: { value: [] } } });
    expect((cleared.settings as Record<string, { value: string[] }>).trace_count).toEqual({ value: ['-1'] });
    await ok(s.stub, 'TraceSetting', { settings: { trace_rate: { value: ['1000'] } } });
  });

  test('bad settings: INVALID_ARGUMENT naming them; the file cannot be set over the network', async () => {
    await fails(s.stub, 'TraceSetting', { settings: { nope: { value: ['1'] } } }, status.INVALID_ARGUMENT, "unknown trace setting 'nope'");
    await fails(s.stub, 'TraceSetting', { settings: { trace_rate: { value: ['x'] } } }, status.INVALID_ARGUMENT, "Unable to parse 'trace_rate', got: x");
    await fails(s.stub, 'TraceSetting', { settings: { trace_level: { value: ['OFF', 'TENSORS'] } } }, status.INVALID_ARGUMENT,
      "Expect only one trace level 'OFF' is specified");
    await fails(s.stub, 'TraceSetting', { settings: { trace_file: { value: ['/tmp/x'] } } }, status.INVALID_ARGUMENT, "'trace_file' cannot be changed over the network");
  });
});

describe('LogSettings', () => {
  test('reads every setting with its oneof member, and updates', async () => {
    const r = await ok(s.stub, 'LogSettings', {});
    expect(r.settings).toMatchObject({
      log_info: { bool_param: false, parameter_choice: 'bool_param' },
      log_warning: { bool_param: true },
      log_verbose_level: { uint32_param: 0, parameter_choice: 'uint32_param' },
      log_format: { string_param: 'default', parameter_choice: 'string_param' },
      log_file: { string_param: '' },
    });
    const updated = await ok(s.stub, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 2 }, log_format: { string_param: 'ISO8601' } } });
    expect(updated.settings).toMatchObject({ log_verbose_level: { uint32_param: 2 }, log_format: { string_param: 'ISO8601' } });
    await ok(s.stub, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 0 }, log_format: { string_param: 'default' } } });
  });

  test('bad settings: INVALID_ARGUMENT naming them', async () => {
    await fails(s.stub, 'LogSettings', { settings: { log_info: { uint32_param: 1 } } }, status.INVALID_ARGUMENT, "log setting 'log_info' must be a boolean");
    await fails(s.stub, 'LogSettings', { settings: { log_info: {} } }, status.INVALID_ARGUMENT, "log setting 'log_info' has no value");
    await fails(s.stub, 'LogSettings', { settings: { log_file: { string_param: '/tmp/x' } } }, status.INVALID_ARGUMENT, "'log_file' cannot be changed over the network");
  });
});

test('an unknown method: UNIMPLEMENTED, and the server still serves', async () => {
  const client = new Client(`127.0.0.1:${s.port}`, credentials.createInsecure());
  const same = (b: Buffer): Buffer => b;
  const error = await new Promise<ServiceError | null>((resolve) => {
    client.makeUnaryRequest('/inference.GRPCInferenceService/Nope', same, same, Buffer.alloc(0), new Metadata(), {}, (err) => resolve(err));
  });
  client.close();
  expect(error?.code).toBe(status.UNIMPLEMENTED);
  const res = await ok(s.stub, 'ModelInfer', {
    model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32Bytes([1, 2])],
  });
  expect(res.raw_output_contents).toEqual([fp32Bytes([1, 2])]);
});
