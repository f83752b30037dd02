/**
 * Scenario "onnx" (the headline): the MLP 256→2048→2048→2048→10 (~36 MB of FP32 weights, more
 * than the caches hold, so every execution streams them from memory and batching pays) served
 * by infernode (native ONNX Runtime engine, dynamic batching) vs a plain node:http server that
 * calls onnxruntime-node once per request. Both get the same KServe binary requests from the
 * same load generator (a child process), at concurrency 1 to 64; each server runs in its own
 * child process with its event-loop delay measured. Writes bench/results/onnx.{md,json,svg}.
 */
import { fork } from 'node:child_process';
import { ServerProcess } from './server-process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadInChild, type LoadJob, type LoadReport } from './http-load';
import type { CeilingJob, CeilingReport } from './onnx-ceiling';

const ROOT = path.join(__dirname, '..', '..');
const CONCURRENCY = [1, 4, 16, 32, 64];
/** Load each server takes before its first measured row. */
const STEADY_STATE_MS = 6000;

/**
 * The bench models: the issue's MLP (hidden width 2048, ~36 MB of weights) and a wide one
 * (8192, ~545 MB) whose weights exceed even a large shared L3 (260 MiB on the CI machine, where
 * the 36 MB model stays cache-resident and an unbatched run costs little).
 */
export interface BenchModel {
  scenario: 'onnx' | 'onnx-large';
  hidden: number;
  label: string;
}
export const BENCH_MODELS: readonly BenchModel[] = [
  { scenario: 'onnx', hidden: 2048, label: 'MLP 256→2048→2048→2048→10 (FP32, ~36 MB)' },
  { scenario: 'onnx-large', hidden: 8192, label: 'MLP 256→8192→8192→8192→10 (FP32, ~545 MB)' },
];

export const repositoryOf = (m: BenchModel): string => path.join(ROOT, '.tmp', `bench-models-${m.hidden}`);
export const modelFileOf = (m: BenchModel): string => path.join(repositoryOf(m), 'mlp_bench', '1', 'model.onnx');

/** The bench model's config (the model is generated once, ~36 MB, not committed); the ensemble bench serves it too. */
export const MLP_BENCH_CONFIG = `name: "mlp_bench"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "input", data_type: TYPE_FP32, dims: [ 256 ] } ]
output [ { name: "logits", data_type: TYPE_FP32, dims: [ 10 ] } ]
# No queue delay: a batch leaves as soon as the instance is free, holding whatever queued
# while the previous one ran. One instance; infernode's defaults spread each run over the
# cores (docs/repository.md).
dynamic_batching { }
instance_group [ { count: 1, kind: KIND_CPU } ]
`;

export function prepareRepository(m: BenchModel): void {
  const file = modelFileOf(m);
  if (!existsSync(file)) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const onnx = require('../tools/onnx') as { benchMlpModel(hidden: number): Buffer; writeModelFile(file: string, bytes: Buffer): number };
    onnx.writeModelFile(file, onnx.benchMlpModel(m.hidden));
  }
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(path.join(repositoryOf(m), 'mlp_bench', 'config.pbtxt'), MLP_BENCH_CONFIG);
}

/** One KServe binary request for one row of 256 features. */
export function requestBytes(): Buffer {
  const input = new Float32Array(256).map((_, i) => Math.sin(i) * 0.5);
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 256], parameters: { binary_data_size: input.byteLength } }],
    outputs: [{ name: 'logits', parameters: { binary_data: true } }],
  }));
  const body = Buffer.concat([header, Buffer.from(input.buffer)]);
  const head = `POST /v2/models/mlp_bench/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n` +
    `Inference-Header-Content-Length: ${header.length}\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

interface EventLoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

interface ServerReport extends EventLoopDelay {
  executions: { rows: number; executions: number; inferNs: number } | null;
  cpu: { processNs: number; jsThreadNs: number | null };
}

/** Runs one job of the load generator (http-load.js) in a child process of its own. */
export function load(job: LoadJob): Promise<LoadReport> {
  return loadInChild(job);
}

export interface OnnxBenchRow {
  server: 'infernode' | 'naive';
  concurrency: number;
  requestsPerSecond: number;
  p50Us: number;
  p99Us: number;
  errors: number;
  eventLoopDelay: EventLoopDelay;
  /** Rows per ONNX Runtime run (1 for the naive server). */
  meanBatch: number;
  /** infernode: its requests/s ÷ the engine's rows/s at its mean batch (rounded), run directly. */
  fractionOfCeiling?: number;
  /** infernode: ONNX Runtime's mean run time inside the server (µs), to set against the ceiling's. */
  serverRunUs?: number;
  /** The server process's CPU time per request over the window (µs, every thread, user and system). */
  cpuUs: number;
  /** The part of `cpuUs` its JS thread ran (undefined where /proc cannot be read). */
  jsThreadCpuUs?: number;
  /** Every round's requests/s, in the order measured (the row is the median one). */
  roundsPerSecond?: number[];
}

export interface OnnxBenchResult {
  scenario: BenchModel['scenario'];
  model: string;
  durationMs: number;
  /** Rounds per concurrency; each row is its server's median round. */
  rounds: number;
  rows: OnnxBenchRow[];
  /** infernode ÷ naive requests/s at concurrency 64. */
  speedupAt64: number;
  /** ONNX Runtime run directly at the batch sizes infernode formed. */
  ceiling: CeilingReport;
}

type ServerName = OnnxBenchRow['server'];

/** One window of `concurrency` against one server, with what the server saw meanwhile. */
async function measureWindow(proc: ServerProcess, server: ServerName, concurrency: number, durationMs: number): Promise<OnnxBenchRow> {
  const request = requestBytes().toString('base64');
  proc.reset();
  // The server's counters at the end of the warm-up, so every figure covers the measured window.
  let measuring: Promise<ServerReport> | undefined;
  const report = await loadInChild({ port: proc.port, request, concurrency, warmupMs: 1000, durationMs }, () => {
    measuring = proc.ask<ServerReport>('report');
  });
  const before = await measuring!;
  const { executions, cpu, ...eventLoopDelay } = await proc.ask<ServerReport>('report');
  const runs = executions && before.executions ? executions.executions - before.executions.executions : 0;
  const perRequestUs = (ns: number): number => (report.requests > 0 ? ns / report.requests / 1000 : 0);
  return {
    server, concurrency, requestsPerSecond: report.seconds > 0 ? report.requests / report.seconds : 0,
    p50Us: report.p50Us, p99Us: report.p99Us, errors: report.errors, eventLoopDelay,
    meanBatch: runs > 0 ? (executions!.rows - before.executions!.rows) / runs : 1,
    serverRunUs: runs > 0 ? (executions!.inferNs - before.executions!.inferNs) / runs / 1000 : undefined,
    cpuUs: perRequestUs(cpu.processNs - before.cpu.processNs),
    jsThreadCpuUs: cpu.jsThreadNs !== null && before.cpu.jsThreadNs !== null ? perRequestUs(cpu.jsThreadNs - before.cpu.jsThreadNs) : undefined,
  };
}

/** The round with the median requests/s, carrying every round's requests/s. */
function medianRound(windows: OnnxBenchRow[]): OnnxBenchRow {
  const sorted = [...windows].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
  return { ...sorted[Math.floor((sorted.length - 1) / 2)], roundsPerSecond: windows.map((w) => w.requestsPerSecond) };
}

/**
 * Both servers run side by side (each in a process of its own, the one not measured idle), and
 * every concurrency is measured in `rounds` rounds that alternate which server goes first: this
 * VM's speed drifts by tens of percent within minutes, and measuring one server's whole sweep
 * before the other's put that drift into the ratios.
 */
async function measure(m: BenchModel, durationMs: number, rounds: number): Promise<OnnxBenchRow[]> {
  const servers: ServerName[] = ['infernode', 'naive'];
  const procs = new Map<ServerName, ServerProcess>();
  try {
    for (const server of servers) {
      procs.set(server, await ServerProcess.start(path.join(__dirname, 'onnx-server.js'), [server, repositoryOf(m), modelFileOf(m)], `${server} server`));
    }
    // A fresh process runs this model slower for its first seconds (seen as ~2× at
    // concurrency 1 in both servers, native run time included): steady state first.
    const request = requestBytes().toString('base64');
    for (const server of servers) {
      await load({ port: procs.get(server)!.port, request, concurrency: 4, warmupMs: 0, durationMs: STEADY_STATE_MS });
    }
    const rows: OnnxBenchRow[] = [];
    for (const concurrency of CONCURRENCY) {
      const windows = new Map<ServerName, OnnxBenchRow[]>(servers.map((s) => [s, []]));
      for (let round = 0; round < rounds; round++) {
        for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
          windows.get(server)!.push(await measureWindow(procs.get(server)!, server, concurrency, durationMs));
        }
      }
      for (const server of servers) rows.push(medianRound(windows.get(server)!));
    }
    return [...rows.filter((r) => r.server === 'infernode'), ...rows.filter((r) => r.server === 'naive')];
  } finally {
    for (const proc of procs.values()) await proc.stop();
  }
}

/** Runs the engine ceiling (onnx-ceiling.js) in a child process of its own. */
export function ceiling(job: CeilingJob): Promise<CeilingReport> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'onnx-ceiling.js'), [], { stdio: 'inherit' });
    child.once('message', (report: CeilingReport) => resolve(report));
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`engine ceiling exited with ${code}`));
    });
    child.send(job);
  });
}

const batchOf = (row: OnnxBenchRow): number => Math.max(1, Math.round(row.meanBatch));

export async function runOnnxBench(m: BenchModel, durationMs = 5000, rounds = 3): Promise<OnnxBenchResult> {
  prepareRepository(m);
  const rows = await measure(m, durationMs, rounds);
  const formed = [...new Set(rows.filter((r) => r.server === 'infernode').map(batchOf))].sort((a, b) => a - b);
  const engine = await ceiling({ modelFile: modelFileOf(m), batches: formed, durationMs: Math.min(durationMs, 2000) });
  for (const row of rows.filter((r) => r.server === 'infernode')) {
    const at = engine.rows.find((c) => c.batch === batchOf(row));
    if (at) row.fractionOfCeiling = row.requestsPerSecond / at.rowsPerSecond;
  }
  const at64 = (s: string): number => rows.find((r) => r.server === s && r.concurrency === 64)?.requestsPerSecond ?? 0;
  return {
    scenario: m.scenario, model: m.label, durationMs, rounds, rows, ceiling: engine,
    speedupAt64: at64('naive') > 0 ? at64('infernode') / at64('naive') : 0,
  };
}

/** The issue's low- and high-load targets, each with what this run measured. */
function targetLines(r: OnnxBenchResult): string[] {
  const row = (server: string, c: number): OnnxBenchRow | undefined => r.rows.find((x) => x.server === server && x.concurrency === c);
  const lines: string[] = [];
  const verdict = (ok: boolean): string => (ok ? 'met' : '**not met**');
  const ratio = (c: number): number => (row('naive', c)?.requestsPerSecond ? row('infernode', c)!.requestsPerSecond / row('naive', c)!.requestsPerSecond : 0);
  const i1 = row('infernode', 1);
  const n1 = row('naive', 1);
  if (i1 && n1) {
    lines.push(`- concurrency 1: ${fmt(ratio(1), 2)}× the naive requests/s (target ≥ 0.95×, ${verdict(ratio(1) >= 0.95)}); ` +
      `p50 ${fmt(i1.p50Us / 1000, 2)} vs ${fmt(n1.p50Us / 1000, 2)} ms (target ≤ naive + 0.1 ms, ${verdict(i1.p50Us <= n1.p50Us + 100)})`);
  }
  if (row('infernode', 4) && row('naive', 4)) lines.push(`- concurrency 4: ${fmt(ratio(4), 2)}× (target ≥ 1.3×, ${verdict(ratio(4) >= 1.3)})`);
  const i64 = row('infernode', 64);
  const n64 = row('naive', 64);
  if (i64 && n64) {
    lines.push(`- concurrency 64: ${fmt(ratio(64), 2)}× (target ≥ 7×, ${verdict(ratio(64) >= 7)}); p99 ${fmt(i64.p99Us / 1000, 1)} vs ` +
      `${fmt(n64.p99Us / 1000, 1)} ms (${verdict(i64.p99Us < n64.p99Us)}); event-loop delay p99 ${fmt(i64.eventLoopDelay.p99Ms, 2)} ms ` +
      `(target < 5 ms, ${verdict(i64.eventLoopDelay.p99Ms < 5)})`);
  }
  return lines;
}

function ceilingLines(r: OnnxBenchResult): string[] {
  const c = r.ceiling;
  return [
    `Engine ceiling: ONNX Runtime (onnxruntime-node) called directly in a loop in a process of its own, at each batch size infernode formed, ` +
    `with infernode's session settings (${c.intraOpThreads} intra-op threads, spinning ${c.spinning ? 'on' : 'off'}); "of ceiling" is infernode's requests/s ÷ ` +
    `those rows/s at its mean batch. "Run µs in server" is ONNX Runtime's mean run inside infernode (its statistics): ` +
    'against the ceiling\'s run time at the same batch it shows how much of the gap is the run slowed by the cores it shares ' +
    '(event loop, load generator) and how much is the instance waiting for work (closed loop: at concurrency 1 every request ' +
    'waits for the previous answer to travel back and the next request to arrive).',
    '',
    '| rows per run | runs/s | rows/s | mean run µs |',
    '| ---: | ---: | ---: | ---: |',
    ...c.rows.map((x) => `| ${x.batch} | ${fmt(x.runsPerSecond)} | ${fmt(x.rowsPerSecond)} | ${fmt(x.meanRunUs)} |`),
  ];
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function onnxMarkdown(r: OnnxBenchResult, machine: string): string {
  const row = (x: OnnxBenchRow): string => `| ${x.server} | ${x.concurrency} | ${fmt(x.requestsPerSecond)} | ` +
    `${fmt(x.p50Us / 1000, 2)} | ${fmt(x.p99Us / 1000, 1)} | ${fmt(x.meanBatch, 1)} | ` +
    `${x.fractionOfCeiling === undefined ? '' : `${fmt(x.fractionOfCeiling * 100)} %`} | ` +
    `${x.serverRunUs === undefined ? '' : fmt(x.serverRunUs)} | ${fmt(x.eventLoopDelay.p99Ms, 2)} | ` +
    `${fmt(x.eventLoopDelay.maxMs, 1)} | ${fmt(x.cpuUs)} | ${x.jsThreadCpuUs === undefined ? '' : fmt(x.jsThreadCpuUs)} | ` +
    `${x.errors} | ${(x.roundsPerSecond ?? []).map((v) => fmt(v)).join(' / ')} |`;
  return [
    `# Headline: ${r.model} over HTTP — infernode vs node:http + onnxruntime-node`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Both servers run side by side, each in a process of its own (the one not measured idles), and each first takes ${STEADY_STATE_MS / 1000} s ` +
    `of load (concurrency 4) to reach steady state. Each concurrency is then measured in ${r.rounds} rounds that alternate which server goes first ` +
    `(this VM's speed drifts by tens of percent within minutes); a round is ${r.durationMs / 1000} s after 1 s of warm-up, closed loop, ` +
    'KServe binary requests of one row, the load generator in a process of its own. Each row is its server\'s median round; the last ' +
    'column lists every round\'s requests/s in the order measured. ' +
    'Both servers use their defaults: onnxruntime-node picks its own intra-op threads (ONNX Runtime counts physical cores, ' +
    'half the logical CPUs where it cannot read them) with spinning on; infernode gives one instance all the CPUs, with ONNX Runtime\'s ' +
    'spinning on as well and its compute threads at nice 19 (docs/repository.md).',
    '',
    '"CPU µs/req" is the server process\'s CPU time (every thread, user and system) over the measured window per request; ' +
    '"on JS thread" is the part its JS thread ran. onnxruntime-node\'s `run()` calls ONNX Runtime synchronously on the JS thread ' +
    '(from a setImmediate), so the naive server\'s model runs there: no thread hop per request, which pays at concurrency 1 on an ' +
    'idle machine, and an event loop that serves nothing else while a run lasts. infernode\'s JS thread only parses, enqueues and ' +
    'answers; its runs are on the instance thread and ONNX Runtime\'s pool (docs/architecture.md, "Where the time goes at low load").',
    '',
    `**infernode ÷ naive at concurrency 64: ${fmt(r.speedupAt64, 2)}×**`,
    '',
    ...targetLines(r),
    '',
    `![requests/s by concurrency](${r.scenario}.svg)`,
    '',
    '| server | concurrency | req/s | p50 ms | p99 ms | rows per run | of ceiling | run µs in server | event-loop delay p99 ms | max ms | CPU µs/req | on JS thread | errors | rounds req/s |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map(row),
    '',
    ...ceilingLines(r),
    '',
  ].join('\n');
}

/** A small line chart of requests/s by concurrency, one line per server. */
export function onnxChart(r: OnnxBenchResult): string {
  const width = 640;
  const height = 360;
  const pad = { left: 70, right: 20, top: 30, bottom: 50 };
  const max = Math.max(...r.rows.map((x) => x.requestsPerSecond)) * 1.1 || 1;
  const xAt = (i: number): number => pad.left + (i * (width - pad.left - pad.right)) / (CONCURRENCY.length - 1);
  const yAt = (v: number): number => height - pad.bottom - (v / max) * (height - pad.top - pad.bottom);
  const colors: Record<string, string> = { infernode: '#2a7', naive: '#c44' };
  const lines = (['infernode', 'naive'] as const).map((server) => {
    const pts = CONCURRENCY.map((c, i) => `${xAt(i).toFixed(1)},${yAt(r.rows.find((x) => x.server === server && x.concurrency === c)?.requestsPerSecond ?? 0).toFixed(1)}`);
    return `<polyline fill="none" stroke="${colors[server]}" stroke-width="2.5" points="${pts.join(' ')}"/>`;
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = (max / 1.1) * f;
    return `<text x="${pad.left - 8}" y="${yAt(v) + 4}" text-anchor="end" font-size="11">${fmt(v)}</text>` +
      `<line x1="${pad.left}" x2="${width - pad.right}" y1="${yAt(v)}" y2="${yAt(v)}" stroke="#ddd"/>`;
  });
  const xs = CONCURRENCY.map((c, i) => `<text x="${xAt(i)}" y="${height - pad.bottom + 18}" text-anchor="middle" font-size="11">${c}</text>`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="13">requests/s by concurrency — ${r.model}</text>`,
    ...ticks, ...xs, ...lines,
    `<text x="${width / 2}" y="${height - 10}" text-anchor="middle" font-size="12">concurrency</text>`,
    `<text x="${width - pad.right - 150}" y="${pad.top + 14}" font-size="12" fill="${colors.infernode}">■ infernode (batching)</text>`,
    `<text x="${width - pad.right - 150}" y="${pad.top + 30}" font-size="12" fill="${colors.naive}">■ node:http + onnxruntime-node</text>`,
    '</svg>',
    '',
  ].join('\n');
}
