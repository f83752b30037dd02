/**
 * The metrics frontend: Triton's metric names and labels with exact values after real
 * requests (successes, each failure reason, counts, queue depth), CPU and process metrics, the
 * opt-in summaries and histogram, and one registry per Triton.
 */
import { readFileSync } from 'node:fs';
import { gate, Recorder, waitFor, type Gate } from './helpers';
import { TempRepo, startRepoTriton } from './repository/repo-helpers';
import { NDArray } from '../../ts/tensor';
import type { Request } from '../../ts/request';
import { native } from '../../ts/native';
import { Triton } from '../../ts/triton';
import { TimeoutAction, type TritonConfig } from '../../ts/config/types';
import { DEFAULT_QUANTILES, parseMetricsConfig } from '../../ts/server/metrics/config';
import { closeAgent, echo, get, post, RawConnection, rawPost, serve, type Served } from './http/http-helpers';

declare global {
  /** What holds the reload test's in-flight request: its repository model runs in this realm. */
  var __metricsReloadHold: Gate | undefined;
}

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

/** The `le` values of a histogram's bucket lines whose labels include `labels`, in order. */
function bucketBounds(text: string, name: string, labels: Record<string, string>): string[] {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return text.split('\n').filter((line) => line.startsWith(`${name}_bucket{`) && want.every((w) => line.includes(w)))
    .map((line) => /le="([^"]*)"/.exec(line)![1]);
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? (\S+)$/;

/**
 * Checks Prometheus text as a text-format parser reads it: one HELP and one TYPE per family,
 * each before its samples; every sample well formed, in the family declared last (with the
 * `_bucket`/`_sum`/`_count` suffixes of a histogram or summary), with a number as its value.
 */
function checkExposition(text: string): void {
  const declared = new Map<string, string>();
  const helped = new Set<string>();
  let family = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      const seen = kind === 'HELP' ? helped : declared;
      if (seen.has(name)) throw new Error(`second # ${kind} for ${name}`);
      if (kind === 'HELP') helped.add(name);
      else declared.set(name, rest);
      family = name;
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const suffixes = ['histogram', 'summary'].includes(declared.get(family) ?? '') ? ['', '_bucket', '_sum', '_count'] : [''];
    if (!suffixes.some((x) => sample[1] === family + x)) throw new Error(`${sample[1]} is not in family ${family}: ${line}`);
    // Prometheus reads values with Go's ParseFloat: NaN in any case (prom-client writes Nan).
    if (Number.isNaN(Number(sample[3].replace(/^\+Inf$/, 'Infinity').replace(/^-Inf$/, '-Infinity'))) && !/^nan$/i.test(sample[3])) {
      throw new Error(`not a value: ${line}`);
    }
  }
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
  // Each request's duration in whole microseconds, added up (as Triton adds duration_ns / 1000
  // per request): under the total's whole microseconds by less than one per request. (The
  // summary test checks the per-request rounding itself.)
  const stats = s.triton.model('m').stats();
  for (const [metric, d] of [['nv_inference_request_duration_us', stats.success], ['nv_inference_queue_duration_us', stats.queue],
    ['nv_inference_compute_input_duration_us', stats.computeInput], ['nv_inference_compute_infer_duration_us', stats.computeInfer],
    ['nv_inference_compute_output_duration_us', stats.computeOutput]] as const) {
    expect(value(after, metric, M)).toBe(d.us);
    expect(d.us).toBeLessThanOrEqual(Math.floor(d.ns / 1000));
    expect(d.us).toBeGreaterThan(Math.floor(d.ns / 1000) - d.count);
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

  test("allowCpuMetrics: false (tritonserver's --allow-cpu-metrics=false) leaves the CPU gauges out", async () => {
    const x = await serve(bindModels, { allowCpuMetrics: false });
    try {
      const text = await scrape(x.metricsPort);
      expect(text).not.toContain('nv_cpu_');
      expect(text).toContain('nv_inference_request_success{');
    } finally {
      await x.triton.stop();
    }
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

  test('summary_latencies observe every successful request; histogram_latencies every accepted one, a failure ' +
    "included (Triton's error response is a first response), and no request refused on arrival", async () => {
    await withServer({ metricsConfig: ['summary_latencies=true', 'histogram_latencies=true', 'summary_quantiles=0.5:0.05,0.99:0.001'] }, async (x) => {
      for (let i = 0; i < 2; i++) await post(x.port, '/v2/models/m/infer', body(1));
      expect((await post(x.port, '/v2/models/fails/infer', body(1))).status).toBe(500);
      // Refused on arrival (no such input): never accepted, so neither a failure nor a response.
      const refused = { inputs: [{ name: 'NOPE', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] };
      expect((await post(x.port, '/v2/models/fails/infer', JSON.stringify(refused))).status).toBe(400);
      expect((await post(x.port, '/v2/models/m/infer', JSON.stringify(refused))).status).toBe(400);
      const text = await scrape(x.metricsPort);
      const F = { model: 'fails', version: '1' };
      expect(value(text, 'nv_inference_request_failure', { ...F, reason: 'BACKEND' })).toBe(1);
      expect(value(text, 'nv_inference_first_response_histogram_ms_count', F)).toBe(1);
      expect(value(text, 'nv_inference_request_summary_us_count', M)).toBe(2);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.5' })).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.99' })).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.9' })).toBeUndefined();
      expect(value(text, 'nv_inference_first_response_histogram_ms_count', M)).toBe(2);
      expect(value(text, 'nv_inference_first_response_histogram_ms_bucket', { ...M, le: '5000' })).toBe(2);
      // Triton makes a model's series when it loads: a model with no success has them, at 0.
      expect(value(text, 'nv_inference_request_summary_us_count', { model: 'fails', version: '1' })).toBe(0);
    });
  });

  test("summary_latencies: Triton's five summaries per model, each successful request observed once in whole " +
    'microseconds: _count is the successes, _sum the duration counter, the quantiles within the statistics', async () => {
    await withServer({ metricsConfig: ['summary_latencies=true'] }, async (x) => {
      const N = 12;
      for (let i = 0; i < N; i++) expect((await post(x.port, '/v2/models/m/infer', body(1))).status).toBe(200);
      expect((await post(x.port, '/v2/models/fails/infer', body(1))).status).toBe(500);
      const text = await scrape(x.metricsPort);
      checkExposition(text);
      const stats = x.triton.model('m').stats();
      expect(value(text, 'nv_inference_request_success', M)).toBe(N);
      for (const [phase, counted] of [['request', stats.success], ['queue', stats.queue], ['compute_input', stats.computeInput],
        ['compute_infer', stats.computeInfer], ['compute_output', stats.computeOutput]] as const) {
        const summary = `nv_inference_${phase}_summary_us`;
        expect(text).toContain(`# TYPE ${summary} summary`);
        expect(value(text, `${summary}_count`, M)).toBe(N);
        expect(value(text, `${summary}_count`, { model: 'fails', version: '1' })).toBe(0);
        // Each request's whole microseconds, observed: their sum is exactly what the counter
        // added (a counter of the total's whole microseconds would be more by the remainders).
        const sum = value(text, `${summary}_sum`, M)!;
        expect(sum).toBe(value(text, `nv_inference_${phase}_duration_us`, M));
        expect(sum).toBe(counted.us);
        // Triton's default quantiles, in order; the median at most twice the mean (as any
        // median of non-negative durations), the 99.9th at least the mean, both at most the sum
        // (give or take the summary's 0.4 %).
        const quantiles = ['0.5', '0.9', '0.95', '0.99', '0.999'].map((quantile) => value(text, summary, { ...M, quantile })!);
        for (let i = 1; i < quantiles.length; i++) expect(quantiles[i]).toBeGreaterThanOrEqual(quantiles[i - 1]);
        const mean = counted.ns / counted.count / 1000;
        expect(quantiles[0]).toBeLessThanOrEqual((2 * mean + 1) * 1.004);
        expect(quantiles[4]).toBeGreaterThanOrEqual((Math.floor(mean) - 1) / 1.004);
        expect(quantiles[4]).toBeLessThanOrEqual(sum * 1.004);
      }
      expect(value(text, 'nv_inference_request_summary_us', { ...M, quantile: '0.5' })).toBeGreaterThan(0);
      // The response cache's summaries belong to models that enable it (cache-frontends.test.ts).
      expect(text).not.toContain('nv_cache_hit_summary_per_model');
    });
  });

  test("histogram_latencies: a decoupled model's request is observed when its first response is sent, once", async () => {
    const t = new Triton({ config: { allowHttp: false, allowGrpc: false, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['histogram_latencies=true'] } });
    const release = gate();
    t.bind({
      modelName: 'streamer', inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
      config: { decoupled: true, maxBatchSize: 8 },
      inferFunc: (async function* (requests: Request[]) {
        yield requests.map((r) => ({ OUT: r.data.IN }));
        await release.promise;
        yield requests.map((r) => ({ OUT: r.data.IN }));
      }) as never,
    });
    await t.run();
    try {
      const S = { model: 'streamer', version: '1' };
      const stream = t.inferStream('streamer', { IN: new NDArray('FP32', [1, 1], new Float32Array([1])) });
      expect((await stream.next()).done).toBe(false);
      // The request is still running: its first response was observed when it was sent.
      expect(value(await scrape(t.ports.metrics!), 'nv_inference_first_response_histogram_ms_count', S)).toBe(1);
      release.open();
      for await (const _ of stream) { /* the second response, then the end */ }
      expect(value(await scrape(t.ports.metrics!), 'nv_inference_first_response_histogram_ms_count', S)).toBe(1);
    } finally {
      await t.stop();
    }
  });

  test('histogram_latencies: a decoupled request that fails before its first response is observed at its error; one ' +
    'that fails after it, once (at its first response)', async () => {
    const t = new Triton({ config: { allowHttp: false, allowGrpc: false, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['histogram_latencies=true'] } });
    t.bind({
      modelName: 'breaks', inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
      config: { decoupled: true, maxBatchSize: 8 },
      inferFunc: (async function* (requests: Request[]) {
        // IN > 0: one response, then the failure; otherwise the failure first.
        if (Number(requests[0].data.IN.data[0]) > 0) yield requests.map((r) => ({ OUT: r.data.IN }));
        throw new Error('stream broke');
      }) as never,
    });
    await t.run();
    try {
      const B = { model: 'breaks', version: '1' };
      const run = async (v: number): Promise<number> => {
        let responses = 0;
        await expect((async () => {
          for await (const _ of t.inferStream('breaks', { IN: new NDArray('FP32', [1, 1], new Float32Array([v])) })) responses++;
        })()).rejects.toThrow('stream broke');
        return responses;
      };
      expect(await run(0)).toBe(0);
      expect(value(await scrape(t.ports.metrics!), 'nv_inference_first_response_histogram_ms_count', B)).toBe(1);
      expect(await run(1)).toBe(1);
      expect(value(await scrape(t.ports.metrics!), 'nv_inference_first_response_histogram_ms_count', B)).toBe(2);
      expect(value(await scrape(t.ports.metrics!), 'nv_inference_request_failure', { ...B, reason: 'BACKEND' })).toBe(2);
    } finally {
      await t.stop();
    }
  });

  test("histogram_latencies: an ensemble's failed request is observed at its error, as its successes are", async () => {
    const t = new Triton({ config: { allowHttp: false, allowGrpc: false, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['histogram_latencies=true'] } });
    bindModels(t);
    for (const [name, step] of [['via_m', 'm'], ['via_fails', 'fails']]) {
      t.bind({
        modelName: name, inputs: [{ name: 'X', dtype: 'FP32', shape: [2] }], outputs: [{ name: 'Y', dtype: 'FP32', shape: [2] }],
        config: { maxBatchSize: 8, ensembleScheduling: { step: [{ modelName: step, inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }] } },
      });
    }
    await t.run();
    try {
      const X = { X: new NDArray('FP32', [1, 2], new Float32Array([1, 2])) };
      await t.infer('via_m', X);
      await expect(t.infer('via_fails', X)).rejects.toThrow('model exploded');
      // Refused at its checks: not accepted, not observed.
      await expect(t.infer('via_fails', { Z: X.X })).rejects.toThrow("unexpected inference input 'Z' for model 'via_fails'");
      const text = await scrape(t.ports.metrics!);
      for (const model of ['via_m', 'via_fails', 'm', 'fails']) {
        expect(value(text, 'nv_inference_first_response_histogram_ms_count', { model, version: '1' })).toBe(1);
      }
    } finally {
      await t.stop();
    }
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

  test("what tritonserver refuses in --metrics-config (no '=', an empty setting or value, a ',' before the '=') is refused " +
    'with its text', () => {
    // Were "must look like <setting>=<value>", "unknown metrics config 'a,b'", "must be true or false, got ''", and
    // an empty summary_quantiles was taken (the defaults, after an error line).
    for (const entry of ['summary_latencies', '=true', 'summary_latencies=', 'summary_quantiles=', 'a,summary_latencies=true']) {
      expect(() => parseMetricsConfig([entry])).toThrow(`--metrics-config option format is <setting>=<value>. Got ${entry}`);
    }
    // A ',' after the '=' belongs to the value.
    expect(parseMetricsConfig(['summary_quantiles=0.5:0.05,0.9:0.01']).summaryQuantiles).toEqual([[0.5, 0.05], [0.9, 0.01]]);
    expect(parseMetricsConfig([]).summaryQuantiles).toEqual(DEFAULT_QUANTILES);
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

describe("a model config's metric_tags and model_metrics (repository models)", () => {
  let repo: TempRepo;

  beforeEach(() => {
    repo = new TempRepo('metrics');
  });

  afterEach(() => {
    repo.cleanup();
  });

  const ECHO = 'exports.execute = async (requests) => requests.map((r) => ({ OUT: r.data.IN.data }));';

  function writeModel(name: string, extra = ''): void {
    repo.config(name, `
      backend: "js"
      max_batch_size: 4
      input [ { name: "IN", data_type: TYPE_FP32, dims: [ 2 ] } ]
      output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 2 ] } ]
      ${extra}`);
    repo.write(`${name}/1/model.js`, ECHO);
  }

  const buckets = (family: string, list: string): string =>
    `metric_control [ { metric_identifier { family: "${family}" } histogram_options { buckets: [ ${list} ] } } ]`;

  test("each model's own buckets for the first-response histogram (one family, valid text), and its tags as " +
    "'_<key>' labels on every per-model series, in Triton's label order", async () => {
    writeModel('tagged', `metric_tags { key: "team" value: "a \\"b\\"" } metric_tags { key: "tier" value: "gold" }
      model_metrics { ${buckets('nv_inference_first_response_histogram_ms', '-1, 0.0, 2.5, 10000')} }`);
    writeModel('plain');
    const logFile = repo.path('server.log');
    const served = await startRepoTriton(repo.root, {
      config: {
        allowMetrics: true, metricsAddress: '127.0.0.1', metricsPort: 0, logFile,
        metricsConfig: ['histogram_latencies=true', 'summary_latencies=true'],
      },
    });
    try {
      const input = { IN: new NDArray('FP32', [1, 2], new Float32Array([1, 2])) };
      for (let i = 0; i < 3; i++) await served.triton.infer('tagged', input);
      await served.triton.infer('plain', input);
      const text = await scrape(served.triton.ports.metrics!);
      checkExposition(text);
      const T = { _team: 'a \\"b\\"', _tier: 'gold', model: 'tagged', version: '1' };
      const P = { model: 'plain', version: '1' };
      const H = 'nv_inference_first_response_histogram_ms';
      expect(bucketBounds(text, H, T)).toEqual(['-1', '0', '2.5', '10000', '+Inf']);
      expect(bucketBounds(text, H, P)).toEqual(['100', '500', '2000', '5000', '+Inf']);
      expect(value(text, `${H}_bucket`, { ...T, le: '10000' })).toBe(3);
      expect(value(text, `${H}_count`, T)).toBe(3);
      expect(value(text, `${H}_count`, P)).toBe(1);
      // Whole milliseconds, as Triton's (now - start) / NANOS_PER_MILLIS.
      expect(Number.isInteger(value(text, `${H}_sum`, T))).toBe(true);
      // Labels sorted by name as Triton's std::map writes them; `le`/`quantile` last.
      expect(text).toContain('nv_inference_request_failure{_team="a \\"b\\"",_tier="gold",model="tagged",reason="BACKEND",version="1"} 0\n');
      expect(text).toContain('nv_inference_request_failure{model="plain",reason="BACKEND",version="1"} 0\n');
      expect(text).toContain(`${H}_bucket{_team="a \\"b\\"",_tier="gold",model="tagged",version="1",le="2.5"} `);
      const tagged = text.split('\n').filter((line) => line.includes('model="tagged"'));
      expect(tagged.length).toBeGreaterThan(20);
      for (const line of tagged) expect(line).toContain('_team="a \\"b\\"",_tier="gold",');
      expect(value(text, 'nv_inference_request_success', T)).toBe(3);
      expect(value(text, 'nv_inference_queue_summary_us_count', T)).toBe(3);
    } finally {
      await served.triton.stop();
    }
  });

  test("a family model_metrics cannot set loads with Triton's warning; invalid model_metrics or metric_tags " +
    "fail the load naming the model and field, with Triton's texts", async () => {
    writeModel('other_family', `model_metrics { ${buckets('nv_inference_request_success', '1, 2')} }`);
    const refused: [string, string, string][] = [
      ['no_identifier', 'model_metrics { metric_control [ { histogram_options { buckets: [ 1 ] } } ] }',
        "model 'no_identifier': model_metrics.metric_control[0]: metric control must specify 'metric_identifier'"],
      ['no_family', 'model_metrics { metric_control [ { metric_identifier { } histogram_options { buckets: [ 1 ] } } ] }',
        "metric identifier must specify non-empty 'family'"],
      ['empty_family', `model_metrics { ${buckets('', '1')} }`, "metric identifier must specify non-empty 'family'"],
      ['no_options', 'model_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" } } ] }',
        "metric control must specify 'histogram_options'"],
      ['no_buckets', 'model_metrics { metric_control [ { metric_identifier { family: "f" } histogram_options { } } ] }',
        "histogram options must specify non-empty 'buckets'"],
      ['unordered', `model_metrics { ${buckets('nv_inference_first_response_histogram_ms', '1, 5, 5')} }`,
        "model 'unordered': model_metrics.metric_control[0]: histogram_options.buckets must be finite numbers in strictly " +
        'increasing order, got [1, 5, 5]'],
      ['bad_tag', 'metric_tags { key: "team-a" value: "x" }',
        "model 'bad_tag': metric_tags key 'team-a' makes the label '_team-a', which is not a valid Prometheus label name"],
      ['reserved_tag', 'metric_tags { key: "_x" value: "x" }', "metric_tags key '_x' makes the label '__x'"],
    ];
    for (const [name, extra] of refused) writeModel(name, extra);
    const logFile = repo.path('server.log');
    const served = await startRepoTriton(repo.root, {
      controlMode: 'explicit', config: { allowMetrics: true, metricsAddress: '127.0.0.1', metricsPort: 0, logFile },
    });
    try {
      await served.triton.loadModel('other_family');
      const warning = "Metric family 'nv_inference_request_success' in 'metric_identifier' is not a customizable metric in Triton core.";
      await waitFor(() => readFileSync(logFile, 'utf8').includes(warning), 'the warning in the log');
      for (const [name, , text] of refused) await expect(served.triton.loadModel(name)).rejects.toThrow(text);
    } finally {
      await served.triton.stop();
    }
  });

  test("a reload that keeps a model's labels keeps its counters counting (Triton's new version shares the reporter its old " +
    'one holds), its request in flight at the reload included', async () => {
    // IN < 0: the request waits until the test opens the gate, once it has read the counters
    // during the reload: a fixed wait could end first on a loaded machine, and count the request.
    const slow = 'exports.execute = async (requests) => { if (requests[0].data.IN.data[0] < 0) await globalThis.__metricsReloadHold.promise; ' +
      'return requests.map((r) => ({ OUT: r.data.IN.data })); };';
    const io = 'input [ { name: "IN", data_type: TYPE_FP32, dims: [ 2 ] } ] output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 2 ] } ]';
    repo.config('r', `backend: "js"\nmax_batch_size: 4\n${io}`);
    repo.write('r/1/model.js', slow);
    const served = await startRepoTriton(repo.root, {
      controlMode: 'explicit',
      config: { allowMetrics: true, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['histogram_latencies=true', 'summary_latencies=true'] },
    });
    const hold = gate();
    globalThis.__metricsReloadHold = hold;
    try {
      const R = { model: 'r', version: '1' };
      const input = (v: number): Record<string, NDArray> => ({ IN: new NDArray('FP32', [1, 2], new Float32Array([v, v])) });
      const read = async (): Promise<Record<string, number | undefined>> => {
        const text = await scrape(served.triton.ports.metrics!);
        checkExposition(text);
        return {
          success: value(text, 'nv_inference_request_success', R), count: value(text, 'nv_inference_count', R),
          durationUs: value(text, 'nv_inference_request_duration_us', R), summary: value(text, 'nv_inference_request_summary_us_count', R),
          summaryUs: value(text, 'nv_inference_request_summary_us_sum', R), histogram: value(text, 'nv_inference_first_response_histogram_ms_count', R),
        };
      };
      await served.triton.loadModel('r');
      for (let i = 0; i < 3; i++) await served.triton.infer('r', input(1));
      const before = await read();
      expect(before).toMatchObject({ success: 3, count: 3, summary: 3, histogram: 3 });
      const old = served.triton.model('r');
      const inFlight = served.triton.infer('r', input(-1));
      await waitFor(() => old.pendingCount === 1, 'the slow request to run');
      repo.config('r', `backend: "js"\nmax_batch_size: 4\n${io}\nparameters { key: "x" value: { string_value: "y" } }`);
      const reload = served.triton.loadModel('r');
      await waitFor(() => served.triton.model('r') !== old, 'the new version to serve');
      // Was 0: the counters were the new version's statistics alone, while the summaries went on.
      const during = await read();
      expect(during).toMatchObject({ success: 3, count: 3, summary: 3, histogram: 3 });
      expect(during.durationUs).toBe(before.durationUs);
      // The old version's request was still in flight while `during` was read.
      expect(old.pendingCount).toBe(1);
      hold.open();
      await served.triton.infer('r', input(1));
      await inFlight;
      await reload;
      const after = await read();
      expect(after).toMatchObject({ success: 5, count: 5, summary: 5, histogram: 5 });
      // Each counter equals its summary's sum, as documented (docs/http.md).
      expect(after.durationUs).toBe(after.summaryUs);
    } finally {
      // Opened whatever failed, so that stop() does not wait on the held request.
      hold.open();
      await served.triton.stop();
      delete globalThis.__metricsReloadHold;
    }
  });

  test('an unload, then a load, starts every series of the model at zero, with no scrape between too', async () => {
    writeModel('u');
    const served = await startRepoTriton(repo.root, {
      controlMode: 'explicit',
      config: { allowMetrics: true, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['histogram_latencies=true', 'summary_latencies=true'] },
    });
    try {
      const U = { model: 'u', version: '1' };
      const input = { IN: new NDArray('FP32', [1, 2], new Float32Array([1, 2])) };
      const counts = async (): Promise<(number | undefined)[]> => {
        const text = await scrape(served.triton.ports.metrics!);
        return ['nv_inference_request_success', 'nv_inference_request_summary_us_count', 'nv_inference_first_response_histogram_ms_count']
          .map((name) => value(text, name, U));
      };
      await served.triton.loadModel('u');
      for (let i = 0; i < 2; i++) await served.triton.infer('u', input);
      expect(await counts()).toEqual([2, 2, 2]);
      await served.triton.unloadModel('u');
      await served.triton.loadModel('u');
      // Was [0, 2, 2]: the unloaded model's series was reused, as no scrape saw it go.
      expect(await counts()).toEqual([0, 0, 0]);
      await served.triton.infer('u', input);
      await served.triton.unloadModel('u');
      expect(await counts()).toEqual([undefined, undefined, undefined]);
      await served.triton.loadModel('u');
      expect(await counts()).toEqual([0, 0, 0]);
    } finally {
      await served.triton.stop();
    }
  });

  test("a reload that makes a model decoupled keeps its label set's series, and observes each request's first " +
    'response once (Triton observes the first response of any request, decoupled or not)', async () => {
    const io = 'input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ] output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]';
    repo.config('flip', `backend: "js"\nmax_batch_size: 4\n${io}`);
    // Two responses when decoupled, one answer otherwise: the same file serves both configs.
    repo.write('flip/1/model.js', 'exports.execute = (requests, context) => { const out = requests.map((r) => ({ OUT: r.data.IN.data })); ' +
      'return context.modelConfig.decoupled ? [out, out][Symbol.iterator]() : out; };');
    const served = await startRepoTriton(repo.root, {
      controlMode: 'explicit',
      config: { allowMetrics: true, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['histogram_latencies=true'] },
    });
    try {
      const F = { model: 'flip', version: '1' };
      const count = async (): Promise<number | undefined> =>
        value(await scrape(served.triton.ports.metrics!), 'nv_inference_first_response_histogram_ms_count', F);
      const input = { IN: new NDArray('FP32', [1, 1], new Float32Array([1])) };
      await served.triton.loadModel('flip');
      await served.triton.infer('flip', input);
      expect(await count()).toBe(1);
      repo.config('flip', `backend: "js"\nmax_batch_size: 4\n${io}\nmodel_transaction_policy { decoupled: true }`);
      await served.triton.loadModel('flip');
      expect(served.triton.model('flip').config.decoupled).toBe(true);
      let responses = 0;
      for await (const _ of served.triton.inferStream('flip', input)) responses++;
      expect(responses).toBe(2);
      // Was 3: the series, made for the plain model, also observed the decoupled request at its end.
      expect(await count()).toBe(2);
      repo.config('flip', `backend: "js"\nmax_batch_size: 4\n${io}`);
      await served.triton.loadModel('flip');
      await served.triton.infer('flip', input);
      expect(await count()).toBe(3);
    } finally {
      await served.triton.stop();
    }
  });
});
