/**
 * The response cache through the frontends (issue 10): HTTP JSON and binary answers, and gRPC
 * ModelInfer answers, byte-identical between the computed answer and the hit; Triton's
 * statistics over HTTP /stats and gRPC ModelStatistics (InferStatistics fields 7 and 8,
 * cache_hit and cache_miss) and the nv_cache_* metrics after a known sequence. Real server on
 * loopback, real HTTP and gRPC clients, real bound models.
 */
import { NDArray } from '../../ts/tensor';
import type { Request } from '../../ts/request';
import { Triton } from '../../ts/triton';
import { closeAgent, get, post, binaryBody, splitBinary } from './http/http-helpers';
import { ok, rawStub, fp32Bytes, type Stub } from './grpc/helpers';

let triton: Triton;
let stub: Stub;
let httpPort: number;
let metricsPort: number;
/** How many requests each model's callable computed. */
const runs: Record<string, number> = {};

/** OUT = IN, RUN = the model's computed-request count: a hit repeats the RUN of the answer it cached. */
function stamping(model: string) {
  return (requests: Request[]): Record<string, NDArray>[] => requests.map((r) => {
    runs[model] = (runs[model] ?? 0) + 1;
    return { OUT: r.data.IN, RUN: new NDArray('INT32', [r.data.IN.rows, 1], new Int32Array(r.data.IN.rows).fill(runs[model])) };
  });
}

function bind(t: Triton, name: string, responseCache = true): void {
  t.bind({
    modelName: name, inferFunc: stamping(name),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }, { name: 'RUN', dtype: 'INT32', shape: [1] }],
    config: { maxBatchSize: 8, responseCache },
  });
}

beforeAll(async () => {
  triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, metricsPort: 0,
      logInfo: false, logWarning: false, cacheConfig: ['local,size=65536'],
    },
  });
  for (const name of ['http_m', 'grpc_m', 'metered']) bind(triton, name);
  bind(triton, 'plain', false);
  await triton.run();
  httpPort = triton.ports.http!;
  metricsPort = triton.ports.metrics!;
  stub = rawStub(triton.ports.grpc!);
});

afterAll(async () => {
  stub.close();
  await triton.stop();
  closeAgent();
});

const jsonBody = (values: number[]): object => ({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, values.length], data: values }] });

test('HTTP: JSON and binary hits are byte-identical to the computed answers; /stats counts them as Triton does', async () => {
  const a1 = await post(httpPort, '/v2/models/http_m/infer', jsonBody([1, 2, 3]));
  const a2 = await post(httpPort, '/v2/models/http_m/infer', jsonBody([1, 2, 3]));
  expect(a1.status).toBe(200);
  expect(a2.body.equals(a1.body)).toBe(true);
  const header = {
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } }],
    outputs: [{ name: 'OUT', parameters: { binary_data: true } }, { name: 'RUN', parameters: { binary_data: true } }],
  };
  const send = () => {
    const { body, headers } = binaryBody(header, new Float32Array([4, 3, 2, 1]));
    return post(httpPort, '/v2/models/http_m/infer', body, headers);
  };
  const b1 = await send();
  const b2 = await send();
  expect(b1.status).toBe(200);
  expect(b2.headers['inference-header-content-length']).toBe(b1.headers['inference-header-content-length']);
  expect(b2.body.equals(b1.body)).toBe(true);
  expect(splitBinary(b2).binary.equals(Buffer.concat([fp32Bytes([4, 3, 2, 1]), Buffer.from(new Int32Array([2]).buffer)]))).toBe(true);
  expect(runs.http_m).toBe(2);

  const r = await get(httpPort, '/v2/models/http_m/stats');
  const [s] = r.json<{ model_stats: Record<string, any>[] }>().model_stats;
  expect(s).toMatchObject({ inference_count: 2, execution_count: 2 });
  expect(s.inference_stats).toMatchObject({
    success: { count: 4 }, queue: { count: 4 }, compute_infer: { count: 2 }, cache_hit: { count: 2 }, cache_miss: { count: 2 },
  });
  expect(s.inference_stats.cache_hit.ns).toBeGreaterThan(0);
  expect(s.inference_stats.cache_miss.ns).toBeGreaterThan(0);
});

test('gRPC: a ModelInfer hit is identical to the computed answer; other parameters miss; ModelStatistics fields 7 and 8', async () => {
  const request = (parameters: object = {}) => ({
    model_name: 'grpc_m', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32Bytes([5, 6])], parameters,
  });
  const first = await ok(stub, 'ModelInfer', request());
  const hit = await ok(stub, 'ModelInfer', request({ priority: { int64_param: 1 } }));
  expect(hit.raw_output_contents).toEqual(first.raw_output_contents);
  expect(hit.outputs).toEqual(first.outputs);
  expect(runs.grpc_m).toBe(1);
  await ok(stub, 'ModelInfer', request({ scale: { int64_param: 2 } }));
  expect(runs.grpc_m).toBe(2);

  const stats = await ok(stub, 'ModelStatistics', { name: 'grpc_m' });
  const [s] = stats.model_stats as Record<string, any>[];
  expect(s).toMatchObject({ inference_count: '2', execution_count: '2' });
  expect(s.inference_stats).toMatchObject({ success: { count: '3' }, cache_hit: { count: '1' }, cache_miss: { count: '2' } });
  expect(Number(s.inference_stats.cache_hit.ns)).toBeGreaterThan(0);
  expect(Number(s.inference_stats.cache_miss.ns)).toBeGreaterThan(0);
});

/** The value of `name{model="<model>",version="1"}` in Prometheus text; undefined when absent. */
function metric(text: string, name: string, model: string): number | undefined {
  const prefix = `${name}{model="${model}",version="1"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

test("metrics: nv_cache_* per model with Triton's names and values; hits count as successes, not inferences", async () => {
  for (const values of [[1], [1], [1], [2]]) {
    expect((await post(httpPort, '/v2/models/metered/infer', jsonBody(values))).status).toBe(200);
  }
  await post(httpPort, '/v2/models/plain/infer', jsonBody([1]));
  const text = (await get(metricsPort, '/metrics')).body.toString();
  expect(metric(text, 'nv_cache_num_hits_per_model', 'metered')).toBe(2);
  expect(metric(text, 'nv_cache_num_misses_per_model', 'metered')).toBe(2);
  expect(metric(text, 'nv_cache_hit_duration_per_model', 'metered')).toBeGreaterThanOrEqual(0);
  expect(metric(text, 'nv_cache_miss_duration_per_model', 'metered')).toBeGreaterThanOrEqual(0);
  expect(metric(text, 'nv_inference_request_success', 'metered')).toBe(4);
  expect(metric(text, 'nv_inference_count', 'metered')).toBe(2);
  expect(metric(text, 'nv_inference_exec_count', 'metered')).toBe(2);
  expect(text).toContain('# HELP nv_cache_miss_duration_per_model Total cache miss (insert+lookup) duration per model, in microseconds');
  // Triton reports the cache families only for models whose config enables the cache.
  expect(metric(text, 'nv_inference_count', 'plain')).toBe(1);
  expect(metric(text, 'nv_cache_num_hits_per_model', 'plain')).toBeUndefined();
});

test('with summary_latencies, a model that enables the cache gets no request summary but cache hit and miss ' +
  'summaries; hits observe their queue time, misses their compute (as Triton)', async () => {
  const t = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, metricsPort: 0, logInfo: false,
      cacheConfig: ['local,size=65536'], metricsConfig: ['summary_latencies=true'],
    },
  });
  bind(t, 'sum_cached');
  bind(t, 'sum_plain', false);
  await t.run();
  try {
    for (const values of [[1], [1], [1], [2]]) {
      expect((await post(t.ports.http!, '/v2/models/sum_cached/infer', jsonBody(values))).status).toBe(200);
    }
    expect((await post(t.ports.http!, '/v2/models/sum_plain/infer', jsonBody([1]))).status).toBe(200);
    const text = (await get(t.ports.metrics!, '/metrics')).body.toString();
    expect(metric(text, 'nv_inference_request_summary_us_count', 'sum_plain')).toBe(1);
    expect(metric(text, 'nv_cache_hit_summary_per_model_count', 'sum_plain')).toBeUndefined();
    expect(metric(text, 'nv_inference_request_summary_us_count', 'sum_cached')).toBeUndefined();
    // 2 misses (computed), 2 hits: each summary's sum is what its counter added.
    for (const [summary, count, counter] of [
      ['nv_cache_hit_summary_per_model', 2, 'nv_cache_hit_duration_per_model'],
      ['nv_cache_miss_summary_per_model', 2, 'nv_cache_miss_duration_per_model'],
      ['nv_inference_queue_summary_us', 4, 'nv_inference_queue_duration_us'],
      ['nv_inference_compute_infer_summary_us', 2, 'nv_inference_compute_infer_duration_us'],
    ] as const) {
      expect(metric(text, `${summary}_count`, 'sum_cached')).toBe(count);
      expect(metric(text, `${summary}_sum`, 'sum_cached')).toBe(metric(text, counter, 'sum_cached'));
    }
    expect(text).toContain('# TYPE nv_cache_miss_summary_per_model summary');
  } finally {
    await t.stop();
  }
});
