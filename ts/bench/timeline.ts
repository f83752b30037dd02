/**
 * Scenario "timeline": where one request's time goes at concurrency 1 on the headline model
 * (the MLP of scenario "onnx"), in process (`triton.infer()`) and over HTTP. Every figure is a
 * mean over the run, all on the one monotonic clock (process.hrtime and the native core's
 * steady_clock are both CLOCK_MONOTONIC):
 * - JS, measured around the call: the synchronous part of `infer()` (inputs converted and
 *   validated, the native Enqueue) and the whole call until its promise continuation runs;
 * - the scheduler's statistics (Triton's): queue (enqueued → handed to the instance, i.e. the
 *   Pump microtask), compute input (the instance thread waking and gathering the inputs),
 *   compute infer (ONNX Runtime's run), compute output (the split per request), and success
 *   (enqueued → completion recorded on the instance thread);
 * - the rest by difference: completion → JS (the thread-safe function's hop to the event loop,
 *   settling, the promise continuation), and over HTTP everything outside the scheduler.
 * The engine alone (onnx-ceiling.ts, batch 1, same session settings) is measured last, in a
 * process of its own. docs/architecture.md explains the result.
 */
import { Triton } from '../triton';
import { BENCH_MODELS, ceiling, load, modelFileOf, prepareRepository, repositoryOf, requestBytes } from './onnx';
import type { NativeModelStats } from '../native';

const MODEL = 'mlp_bench';
const STEADY_STATE_MS = 6000;
const MEASURE_MS = 5000;
/** Unmeasured HTTP load before the HTTP column: the frontend's code paths and the load generator
 * warm up (V8 compiles on background threads, which take cores from ONNX Runtime's run). */
const HTTP_WARMUP_MS = 8000;

export interface TimelineColumn {
  requests: number;
  /** Means in µs; undefined where a phase does not apply to this path. */
  clientUs: number;
  jsSyncUs?: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  successUs: number;
}

export interface TimelineResult {
  model: string;
  inProcess: TimelineColumn;
  http: TimelineColumn;
  engineAloneUs: number;
}

type Stats = Pick<NativeModelStats, 'success' | 'queue' | 'computeInput' | 'computeInfer' | 'computeOutput'>;

function phases(before: Stats, after: Stats): Omit<TimelineColumn, 'clientUs' | 'jsSyncUs'> {
  const mean = (k: keyof Stats): number => {
    const count = after[k].count - before[k].count;
    return count > 0 ? (after[k].ns - before[k].ns) / count / 1000 : 0;
  };
  return {
    requests: after.success.count - before.success.count,
    queueUs: mean('queue'), computeInputUs: mean('computeInput'), computeInferUs: mean('computeInfer'),
    computeOutputUs: mean('computeOutput'), successUs: mean('success'),
  };
}

async function inProcess(triton: Triton, ms: number, concurrency: number): Promise<{ syncUs: number; totalUs: number; requests: number }> {
  const input = { data: new Float32Array(256).map((_, i) => Math.sin(i) * 0.5), shape: [1, 256] };
  const stopAt = performance.now() + ms;
  let sync = 0n;
  let total = 0n;
  let requests = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < stopAt) {
      const t0 = process.hrtime.bigint();
      const answer = triton.infer(MODEL, { input });
      const t1 = process.hrtime.bigint();
      await answer;
      const t2 = process.hrtime.bigint();
      sync += t1 - t0;
      total += t2 - t0;
      ++requests;
    }
  }));
  return { syncUs: Number(sync) / requests / 1000, totalUs: Number(total) / requests / 1000, requests };
}

export async function runTimelineBench(): Promise<TimelineResult> {
  const m = BENCH_MODELS[0];
  prepareRepository(m);
  const triton = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  triton.useRepository({ repositories: [repositoryOf(m)] });
  await triton.run();
  let inProcessColumn: TimelineColumn;
  let httpColumn: TimelineColumn;
  try {
    await inProcess(triton, STEADY_STATE_MS, 4);
    const stats = (): Stats => triton.model(MODEL).stats();
    let before = stats();
    const js = await inProcess(triton, MEASURE_MS, 1);
    inProcessColumn = { ...phases(before, stats()), clientUs: js.totalUs, jsSyncUs: js.syncUs };
    const request = requestBytes().toString('base64');
    await load({ port: triton.ports.http!, request, concurrency: 1, warmupMs: 0, durationMs: HTTP_WARMUP_MS });
    // The server's statistics and the client's latencies cover the same requests.
    before = stats();
    const report = await load({ port: triton.ports.http!, request, concurrency: 1, warmupMs: 0, durationMs: MEASURE_MS });
    if (report.errors > 0) throw new Error(`timeline: ${report.errors} HTTP requests failed`);
    httpColumn = { ...phases(before, stats()), clientUs: report.meanUs };
  } finally {
    await triton.stop();
  }
  const engine = await ceiling({ modelFile: modelFileOf(m), batches: [1], durationMs: 2000 });
  return { model: m.label, inProcess: inProcessColumn, http: httpColumn, engineAloneUs: engine.rows[0].meanRunUs };
}

const fmt = (n: number | undefined): string => (n === undefined ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: 0 }));

export function timelineMarkdown(r: TimelineResult, machine: string): string {
  const i = r.inProcess;
  const h = r.http;
  const scheduled = (c: TimelineColumn): number => c.queueUs + c.computeInputUs + c.computeInferUs + c.computeOutputUs;
  // In process: JS before the enqueue is the synchronous part (less the enqueue's own share,
  // which success already counts: a microsecond or two); after the completion, the rest.
  const afterCompletion = i.clientUs - i.jsSyncUs! - i.successUs;
  const rows: [string, number | undefined, number | undefined][] = [
    ['HTTP: loopback both ways, load generator, request parse and decode, response encode and write', undefined, h.clientUs - h.successUs],
    ['JS: `infer()` converts and validates the inputs, native Enqueue (synchronous part)', i.jsSyncUs, undefined],
    ['queue: enqueued → the Pump microtask hands the batch to the idle instance', i.queueUs, h.queueUs],
    ['compute input: the instance thread wakes, gathers the inputs', i.computeInputUs, h.computeInputUs],
    ['compute infer: ONNX Runtime runs the model', i.computeInferUs, h.computeInferUs],
    ['compute output: outputs split per request', i.computeOutputUs, h.computeOutputUs],
    ['completion bookkeeping (statistics, ordering, handing to the sink)', i.successUs - scheduled(i), h.successUs - scheduled(h)],
    ['completion → JS: thread-safe function hop to the event loop, settle, promise continuation', afterCompletion, undefined],
    ['**total, as the caller sees it**', i.clientUs, h.clientUs],
  ];
  return [
    `# Timeline of one request at concurrency 1 — ${r.model}`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `${STEADY_STATE_MS / 1000} s of load (concurrency 4) first, then ${MEASURE_MS / 1000} s in process (${fmt(i.requests)} requests) and ` +
    `${MEASURE_MS / 1000} s over HTTP after ${HTTP_WARMUP_MS / 1000} s unmeasured (${fmt(h.requests)} requests, KServe binary, the load generator in a child process); ` +
    'means in µs. Scheduler phases are Triton\'s statistics; JS phases are timed around the call; "—": measured only as part of ' +
    'another row (over HTTP, the completion → JS hop is inside the HTTP row). One infernode process, one instance, infernode\'s ' +
    'default session settings.',
    '',
    '| phase | in process µs | over HTTP µs |',
    '| --- | ---: | ---: |',
    ...rows.map(([phase, a, b]) => `| ${phase} | ${fmt(a)} | ${fmt(b)} |`),
    '',
    `The engine alone (onnxruntime-node in a loop, batch 1, same threads, a process of its own): **${fmt(r.engineAloneUs)} µs** a run; ` +
    `infernode adds ${fmt(i.clientUs - r.engineAloneUs)} µs to it in process and ${fmt(h.clientUs - r.engineAloneUs)} µs over HTTP ` +
    '(the HTTP figure includes the load generator\'s own time).',
    '',
  ].join('\n');
}
