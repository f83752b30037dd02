/**
 * The metrics frontend: Triton's metric names and labels with exact values after real
 * requests (successes, each failure reason, counts, queue depth), CPU and process metrics, the
 * opt-in summaries and histogram, and one registry per Triton.
 */
import { Recorder, waitFor } from './helpers';
import { native } from '../../ts/native';
import { Triton } from '../../ts/triton';
import { TimeoutAction, type TritonConfig } from '../../ts/config/types';
import { closeAgent, echo, get, post, RawConnection, rawPost, serve, type Served } from './http/http-helpers';

let s: Served;
let held: Recorder;

function bindModels(t: Triton): void {
  t.bind({
    modelName: 'm', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [2] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [2] }],
    config: { maxBatchSize: 8 },
  });
  t.bind({
    modelName: 'fails', inferFunc: () => { throw new Error('model exploded'); },
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [2] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [2] }],
    config: { maxBatchSize: 8 },
  });
  held = new Recorder();
  t.bind({
    modelName: 'held', modelVersion: 2, inferFunc: held.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: {
      maxBatchSize: 1,
      batcher: {
        defaultQueuePolicy: { maxQueueSize: 2, defaultTimeoutMicroseconds: 60_000_000, timeoutAction: TimeoutAction.REJECT, allowTimeoutOverride: true },
      },
    },
  });
}

async function scrape(port: number, path = '/metrics'): Promise<string> {
  const r = await get(port, path);
  expect(r.status).toBe(200);
  return r.body.toString();
}

/** The value of `name{labels}` in Prometheus text; undefined when absent. */
function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.startsWith(`${name}{`) ? line.slice(name.length + 1, line.indexOf('}')) : '';
    const have = labelText ? labelText.split(',') : [];
    if (have.length === want.length && want.every((w) => have.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const body = (rows: number, tag = 1): object => ({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [rows, 2], data: new Array(rows * 2).fill(tag) }] });
const M = { model: 'm', version: '1' };

beforeAll(async () => {
  s = await serve(bindModels);
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

test('GET /metrics (trailing slash too) is Prometheus text; other paths 404, other methods 405', async () => {
  const r = await get(s.metricsPort, '/metrics');
  expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
  expect(r.body.toString()).toContain('# TYPE nv_inference_request_success counter');
  expect(await scrape(s.metricsPort, '/metrics/?x=1')).toContain('nv_inference_count');
  expect((await get(s.metricsPort, '/metricsx')).status).toBe(404);
  expect((await post(s.metricsPort, '/metrics')).status).toBe(405);
});

test('request counters follow requests exactly', async () => {
  const before = await scrape(s.metricsPort);
  expect(value(before, 'nv_inference_request_success', M)).toBe(0);
  for (let i = 0; i < 3; i++) expect((await post(s.port, '/v2/models/m/infer', body(2))).status).toBe(200);
  const after = await scrape(s.metricsPort);
  expect(value(after, 'nv_inference_request_success', M)).toBe(3);
  expect(value(after, 'nv_inference_count', M)).toBe(6);
  expect(value(after, 'nv_inference_exec_count', M)).toBe(3);
  for (const reason of ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER']) {
    expect(value(after, 'nv_inference_request_failure', { ...M, reason })).toBe(0);
  }
  const stats = s.triton.model('m').stats();
  for (const [metric, ns] of [['nv_inference_request_duration_us', stats.success.ns], ['nv_inference_queue_duration_us', stats.queue.ns],
    ['nv_inference_compute_input_duration_us', stats.computeInput.ns], ['nv_inference_compute_infer_duration_us', stats.computeInfer.ns],
    ['nv_inference_compute_output_duration_us', stats.computeOutput.ns]] as const) {
    expect(value(after, metric, M)).toBe(Math.floor(ns / 1000));
  }
  expect(value(after, 'nv_inference_request_duration_us', M)).toBeGreaterThan(0);
});

test("nv_model_load_duration_secs: each model's load time (bind to warmed up), a gauge as Triton's", async () => {
  const text = await scrape(s.metricsPort);
  expect(text).toContain('# TYPE nv_model_load_duration_secs gauge');
  expect(text).toContain('# HELP nv_model_load_duration_secs Model load time in seconds');
  const seconds = value(text, 'nv_model_load_duration_secs', M)!;
  expect(seconds).toBeGreaterThan(0);
  expect(seconds).toBeLessThan(60);
});

test('failures by reason: BACKEND, REJECTED, CANCELED; the pending gauge is the queue depth', async () => {
  const failed = await post(s.port, '/v2/models/fails/infer', body(1));
  expect(failed.status).toBe(500);
  expect(failed.error).toContain('model exploded');
  let text = await scrape(s.metricsPort);
  expect(value(text, 'nv_inference_request_failure', { model: 'fails', version: '1', reason: 'BACKEND' })).toBe(1);

  const H = { model: 'held', version: '2' };
  const gate = held.hold();
  const tagged = (t: number): object => ({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [t] }] });
  const first = post(s.port, '/v2/models/held/infer', tagged(1));
  await waitFor(() => held.active === 1, 'the first request to execute');
  const queued = post(s.port, '/v2/models/held/infer', tagged(2));
  const conn = new RawConnection(s.port);
  conn.write(rawPost('/v2/models/held/infer', JSON.stringify(tagged(3))));
  await waitFor(() => s.triton.model('held').stats().queued === 2, 'two queued requests');
  text = await scrape(s.metricsPort);
  expect(value(text, 'nv_inference_pending_request_count', H)).toBe(2);
  // A full queue refuses before queueing: counted nowhere, as in Triton.
  const refused = await post(s.port, '/v2/models/held/infer', tagged(4));
  expect(refused.status).toBe(503);
  expect(refused.error).toContain('Exceeds maximum queue size');
  conn.destroy();
  await waitFor(() => s.triton.model('held').stats().failures.CANCELED === 1, 'the cancellation');
  // A queued request whose timeout passes is a REJECTED failure.
  const expired = await post(s.port, '/v2/models/held/infer', { ...tagged(5), parameters: { timeout: 1000 } });
  expect(expired.status).toBe(503);
  expect(expired.error).toContain('Request timeout expired');
  gate.open();
  expect((await first).status).toBe(200);
  expect((await queued).status).toBe(200);
  text = await scrape(s.metricsPort);
  expect(value(text, 'nv_inference_request_failure', { ...H, reason: 'REJECTED' })).toBe(1);
  expect(value(text, 'nv_inference_request_failure', { ...H, reason: 'CANCELED' })).toBe(1);
  expect(value(text, 'nv_inference_request_success', H)).toBe(2);
  expect(value(text, 'nv_inference_pending_request_count', H)).toBe(0);
});

test('CPU and process metrics are there', async () => {
  const text = await scrape(s.metricsPort);
  const util = value(text, 'nv_cpu_utilization')!;
  expect(util).toBeGreaterThanOrEqual(0);
  expect(util).toBeLessThanOrEqual(1);
  const total = value(text, 'nv_cpu_memory_total_bytes')!;
  const used = value(text, 'nv_cpu_memory_used_bytes')!;
  expect(total).toBeGreaterThan(used);
  expect(used).toBeGreaterThan(0);
  expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
  expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  expect(text).not.toContain('_summary_us');
});

describe('GPU metrics (the GPU suite checks their values: test/gpu/gpu-metrics.test.ts)', () => {
  test('are there exactly when NVML reports a GPU: without one the families are absent, not zero', async () => {
    const gpus = await native().readGpuMetrics();
    const text = await scrape(s.metricsPort);
    if (gpus === null || gpus.length === 0) {
      // The CPU machines npm test runs on: no NVIDIA driver.
      if (gpus === null) expect(native().gpuMetricsUnavailable()).toContain('libnvidia-ml.so.1');
      expect(text).not.toContain('nv_gpu_');
      expect(text).not.toContain('nv_energy_consumption');
      expect((await post(s.port, '/v2/models/m/infer', body(1))).status).toBe(200);
    } else {
      expect(text).toMatch(/^nv_gpu_memory_total_bytes\{gpu_uuid="GPU-[^"]+"\} \d/m);
    }
  });

  test('the pinned pool gauges are there exactly when a CUDA device is (nothing is pinned without one)', async () => {
    const text = await scrape(s.metricsPort);
    if (native().buildInfo().cudaDeviceCount === 0) {
      expect(text).not.toContain('nv_pinned_memory_pool');
      expect(native().pinnedMemory()).toEqual({ totalBytes: 0, usedBytes: 0, pageableFallbacks: 0 });
    } else {
      expect(text).toMatch(/^nv_pinned_memory_pool_total_bytes \d/m);
      expect(text).toMatch(/^nv_pinned_memory_pool_used_bytes \d/m);
    }
  });

  test('pinnedMemoryPoolByteSize must be a non-negative integer', () => {
    expect(() => new Triton({ config: { pinnedMemoryPoolByteSize: -1 } }))
      .toThrow('pinnedMemoryPoolByteSize must be a non-negative integer (bytes), got -1');
  });

  test('allowGpuMetrics: false leaves them out on any machine', async () => {
    const x = await serve(bindModels, { allowGpuMetrics: false, metricsIntervalMs: 500 });
    try {
      const text = await scrape(x.metricsPort);
      expect(text).not.toContain('nv_gpu_');
      expect(text).not.toContain('nv_energy_consumption');
      expect(text).toContain('# TYPE nv_cpu_utilization gauge');
    } finally {
      await x.triton.stop();
    }
  });
});

describe('opt-in latency metrics and configuration', () => {
  async function withServer(config: TritonConfig, run: (x: Served) => Promise<void>): Promise<void> {
    const x = await serve(bindModels, config);
    try {
      await run(x);
    } finally {
      await x.triton.stop();
    }
  }

  test('summary_latencies and histogram_latencies observe every successful request', async () => {
    await withServer({ metricsConfig: ['summary_latencies=true', 'histogram_latencies=true', 'summary_quantiles=0.5:0.05,0.99:0.001'] }, async (x) => {
      for (let i = 0; i < 2; i++) await post(x.port, '/v2/models/m/infer', body(1));
      await post(x.port, '/v2/models/fails/infer', body(1));
      const text = await scrape(x.metricsPort);
      expect(value(text, 'nv_inference_request_summary_us_count', M)).toBe(2);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.5' })).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.99' })).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.9' })).toBeUndefined();
      expect(value(text, 'nv_inference_first_response_histogram_ms_count', M)).toBe(2);
      expect(value(text, 'nv_inference_first_response_histogram_ms_bucket', { ...M, le: '5000' })).toBe(2);
      expect(value(text, 'nv_inference_request_summary_us_count', { model: 'fails', version: '1' })).toBeUndefined();
    });
  });

  test("summary_quantiles as Triton reads them: '0.0.1' is 0.0, an unreadable pair is skipped, start-up goes on (qa/L0_metrics' value)", async () => {
    await withServer({ metricsConfig: ['summary_latencies=true', 'summary_quantiles=0.1:0.0.1,0.7:0.01,0.75:0.01,x:y'] }, async (x) => {
      await post(x.port, '/v2/models/m/infer', body(1));
      const text = await scrape(x.metricsPort);
      for (const q of ['0.1', '0.7', '0.75']) expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: q })).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.5' })).toBeUndefined();
    });
  });

  test('counter_latencies=false drops the duration counters', async () => {
    await withServer({ metricsConfig: ['counter_latencies=false'] }, async (x) => {
      const text = await scrape(x.metricsPort);
      expect(text).not.toContain('nv_inference_request_duration_us');
      expect(text).toContain('nv_inference_request_success');
    });
  });

  test('an unknown metrics setting fails start-up with a clear message', async () => {
    const t = new Triton({ config: { httpPort: 0, metricsPort: 0, allowGrpc: false, metricsConfig: ['gpu_flux=true'] } });
    await expect(t.run()).rejects.toThrow("unknown metrics config 'gpu_flux'");
  });

  test('each Triton has its own registry', async () => {
    const other = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, metricsPort: 0, allowGrpc: false } });
    other.bind({
      modelName: 'only_here', inferFunc: echo({ OUT: 'IN' }),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    });
    await other.run();
    try {
      const mine = await scrape(s.metricsPort);
      const theirs = await scrape(other.ports.metrics!);
      expect(mine).not.toContain('only_here');
      expect(theirs).toContain('model="only_here"');
      expect(theirs).not.toContain('model="m"');
    } finally {
      await other.stop();
    }
  });
});
