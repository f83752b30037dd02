/**
 * Health, metadata, config and statistics routes of the HTTP frontend, and the router's
 * 404/405 answers, against a real server on loopback.
 */
import { closeAgent, echo, get, post, request, serve, type Served } from './http-helpers';

let s: Served;

beforeAll(async () => {
  s = await serve((t) => {
    t.bind({
      modelName: 'identity', inferFunc: echo({ OUT: 'IN' }),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
    for (const modelVersion of [1, 3]) {
      t.bind({
        modelName: 'versioned', modelVersion, inferFunc: echo({ OUT: 'IN' }),
        inputs: [{ name: 'IN', dtype: 'INT32', shape: [2] }], outputs: [{ name: 'OUT', dtype: 'INT32', shape: [2] }],
        config: { batching: false },
      });
    }
  });
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

describe('health', () => {
  test('live and ready answer 200 with an empty body', async () => {
    for (const path of ['/v2/health/live', '/v2/health/ready']) {
      const r = await get(s.port, path);
      expect(r.status).toBe(200);
      expect(r.body.length).toBe(0);
    }
  });

  test('model readiness, with and without a version', async () => {
    expect((await get(s.port, '/v2/models/identity/ready')).status).toBe(200);
    expect((await get(s.port, '/v2/models/versioned/versions/3/ready')).status).toBe(200);
    const missing = await get(s.port, '/v2/models/versioned/versions/2/ready');
    expect(missing.status).toBe(400);
    expect(missing.error).toBe('Model version not ready');
    const unknown = await get(s.port, '/v2/models/nope/ready');
    expect(unknown.status).toBe(400);
    expect(unknown.error).toBe('Model version not ready');
  });
});

describe('metadata', () => {
  test('GET /v2: name, version, extensions', async () => {
    const r = await get(s.port, '/v2');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    const m = r.json<{ name: string; version: string; extensions: string[] }>();
    expect(m.name).toBe('triton');
    expect(m.version).toMatch(/^\d+\.\d+\.\d+/);
    // Triton's list (core server.cc), in its order: every one of them infernode implements.
    expect(m.extensions).toEqual([
      'classification', 'sequence', 'model_repository', 'model_repository(unload_dependents)', 'schedule_policy',
      'model_configuration', 'system_shared_memory', 'cuda_shared_memory', 'binary_tensor_data', 'parameters',
      'statistics', 'trace', 'logging',
    ]);
  });

  test('model metadata has the leading -1 batch dim and every version', async () => {
    const r = await get(s.port, '/v2/models/identity');
    expect(r.json()).toEqual({
      name: 'identity', versions: ['1'], platform: 'js',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [-1, -1] }], outputs: [{ name: 'OUT', datatype: 'FP32', shape: [-1, -1] }],
    });
    expect((await get(s.port, '/v2/models/versioned')).json().versions).toEqual(['1', '3']);
    const v1 = (await get(s.port, '/v2/models/versioned/versions/1')).json();
    expect(v1.versions).toEqual(['1']);
    expect(v1.inputs).toEqual([{ name: 'IN', datatype: 'INT32', shape: [2] }]);
  });

  test('config is Triton JSON: snake_case, enum names, numeric dims', async () => {
    const r = await get(s.port, '/v2/models/identity/config');
    expect(r.status).toBe(200);
    const c = r.json<Record<string, any>>();
    expect(c.name).toBe('identity');
    expect(c.max_batch_size).toBe(8);
    expect(c.input[0]).toMatchObject({ name: 'IN', data_type: 'TYPE_FP32', dims: [-1], optional: false, is_shape_tensor: false });
    expect(c.model_transaction_policy).toEqual({ decoupled: false });
    expect(c.dynamic_batching).toBeDefined();
    expect((await get(s.port, '/v2/models/versioned/versions/3/config')).json().max_batch_size).toBe(0);
  });

  test('unknown model and version are 404 with a message naming them', async () => {
    const r = await get(s.port, '/v2/models/ghost');
    expect(r.status).toBe(404);
    expect(r.error).toContain("'ghost'");
    const v = await get(s.port, '/v2/models/versioned/versions/9/config');
    expect(v.status).toBe(404);
    expect(v.error).toContain('version 9');
  });
});

describe('statistics', () => {
  test('every field perf_analyzer reads is present, counts follow requests', async () => {
    const body = { inputs: [{ name: 'IN', datatype: 'FP32', shape: [2, 3], data: [1, 2, 3, 4, 5, 6] }] };
    for (let i = 0; i < 3; i++) expect((await post(s.port, '/v2/models/identity/infer', body)).status).toBe(200);
    const r = await get(s.port, '/v2/models/identity/stats');
    expect(r.status).toBe(200);
    const [m] = r.json<{ model_stats: Record<string, any>[] }>().model_stats;
    expect(m.name).toBe('identity');
    expect(m.version).toBe('1');
    expect(m.inference_count).toBe(6);
    expect(m.execution_count).toBe(3);
    expect(typeof m.last_inference).toBe('number');
    for (const key of ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss']) {
      expect(typeof m.inference_stats[key].count).toBe('number');
      expect(typeof m.inference_stats[key].ns).toBe('number');
    }
    expect(m.inference_stats.success.count).toBe(3);
    expect(m.inference_stats.queue.count).toBe(3);
    expect(m.inference_stats.success.ns).toBeGreaterThan(0);
    expect(m.batch_stats).toEqual([expect.objectContaining({ batch_size: 2, compute_infer: expect.objectContaining({ count: 3 }) })]);
  });

  test('all models, one model (every version), one version', async () => {
    const all = (await get(s.port, '/v2/models/stats')).json<{ model_stats: { name: string; version: string }[] }>().model_stats;
    expect(all.map((m) => `${m.name}/${m.version}`).sort()).toEqual(['identity/1', 'versioned/1', 'versioned/3']);
    const versions = (await get(s.port, '/v2/models/versioned/stats')).json<{ model_stats: { version: string }[] }>().model_stats;
    expect(versions.map((m) => m.version)).toEqual(['1', '3']);
    const one = (await get(s.port, '/v2/models/versioned/versions/3/stats')).json<{ model_stats: { version: string }[] }>().model_stats;
    expect(one.map((m) => m.version)).toEqual(['3']);
    // As Triton (core src/tritonserver.cc TRITONSERVER_ServerModelStatistics; qa L0_server_status):
    // 400 INVALID_ARG, not the 404 of the other model routes.
    const ghost = await get(s.port, '/v2/models/ghost/stats');
    expect([ghost.status, ghost.error]).toEqual([400, "requested model 'ghost' is not available"]);
    const seven = await get(s.port, '/v2/models/versioned/versions/7/stats');
    expect([seven.status, seven.error]).toEqual([400, "requested model version is not available for model 'versioned'"]);
    expect((await get(s.port, '/v2/models/versioned/versions/7')).status).toBe(404);  // metadata keeps its answer
  });
});

describe('routing', () => {
  test('unknown paths are 404 Not Found', async () => {
    for (const path of ['/', '/v1/models', '/v2/', '/v2/models/identity/versions/abc', '/v2/models/identity/versions/1/trace/setting',
      '/v2/models/identity/explode', '/v2/health', '/v2/models//infer']) {
      const r = await get(s.port, path);
      expect({ path, status: r.status, error: r.error }).toEqual({ path, status: 404, error: 'Not Found' });
    }
  });

  test('a wrong method on a known path is 405 Method Not Allowed', async () => {
    for (const [method, path] of [['POST', '/v2/health/live'], ['GET', '/v2/models/identity/infer'], ['DELETE', '/v2'],
      ['GET', '/v2/repository/index'], ['PUT', '/v2/logging']]) {
      const r = await request(s.port, method, path);
      expect({ path, status: r.status, error: r.error }).toEqual({ path, status: 405, error: 'Method Not Allowed' });
    }
  });

  test('query strings are ignored and names are percent-decoded', async () => {
    expect((await get(s.port, '/v2/health/ready?verbose=1')).status).toBe(200);
    expect((await get(s.port, '/v2/models/%69dentity?x=y')).json().name).toBe('identity');
  });
});
