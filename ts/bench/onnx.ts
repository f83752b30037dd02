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
import type { LoadJob, LoadReport } from './http-load';

const ROOT = path.join(__dirname, '..', '..');
const CONCURRENCY = [1, 4, 16, 32, 64];

/**
 * The bench models: the MLP (hidden width 2048, ~36 MB of weights) and a wide one
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

const repositoryOf = (m: BenchModel): string => path.join(ROOT, '.tmp', `bench-models-${m.hidden}`);
const modelFileOf = (m: BenchModel): string => path.join(repositoryOf(m), 'mlp_bench', '1', 'model.onnx');

/** The bench model's config (the model is generated once, ~36 MB, not committed); the ensemble bench serves it too. */
export const MLP_BENCH_CONFIG = `name: "mlp_bench"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "input", data_type: TYPE_FP32, dims: [ 256 ] } ]
output [ { name: "logits", data_type: TYPE_FP32, dims: [ 10 ] } ]
# No queue delay: a batch leaves as soon as the instance is free, holding whatever queued
# while the previous one ran. One instance; ONNX Runtime spreads each run over the cores.
dynamic_batching { }
instance_group [ { count: 1, kind: KIND_CPU } ]
# ONNX Runtime's workers spin between parallel sections by default: CPU the event loop needs.
parameters { key: "session.intra_op.allow_spinning" value { string_value: "0" } }
`;

function prepareRepository(m: BenchModel): void {
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
function requestBytes(): Buffer {
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
  executions: { rows: number; executions: number } | null;
}

/** Runs one job of the load generator (http-load.js) in a child process of its own. */
export function load(job: LoadJob): Promise<LoadReport> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'http-load.js'), [], { stdio: 'inherit' });
    child.once('message', (report: LoadReport) => resolve(report));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
    });
    child.send(job);
  });
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
}

export interface OnnxBenchResult {
  scenario: BenchModel['scenario'];
  model: string;
  durationMs: number;
  rows: OnnxBenchRow[];
  /** infernode ÷ naive requests/s at concurrency 64. */
  speedupAt64: number;
}

async function measure(server: 'infernode' | 'naive', m: BenchModel, durationMs: number): Promise<OnnxBenchRow[]> {
  const proc = await ServerProcess.start(path.join(__dirname, 'onnx-server.js'), [server, repositoryOf(m), modelFileOf(m)], `${server} server`);
  const request = requestBytes().toString('base64');
  const rows: OnnxBenchRow[] = [];
  try {
    for (const concurrency of CONCURRENCY) {
      const before = await proc.ask<ServerReport>('report');
      proc.reset();
      const report = await load({ port: proc.port, request, concurrency, warmupMs: 1000, durationMs });
      const { executions, ...eventLoopDelay } = await proc.ask<ServerReport>('report');
      const runs = executions && before.executions ? executions.executions - before.executions.executions : 0;
      rows.push({
        server, concurrency, requestsPerSecond: report.seconds > 0 ? report.requests / report.seconds : 0,
        p50Us: report.p50Us, p99Us: report.p99Us, errors: report.errors, eventLoopDelay,
        meanBatch: runs > 0 ? (executions!.rows - before.executions!.rows) / runs : 1,
      });
    }
  } finally {
    await proc.stop();
  }
  return rows;
}

export async function runOnnxBench(m: BenchModel, durationMs = 5000): Promise<OnnxBenchResult> {
  prepareRepository(m);
  const rows = [...await measure('infernode', m, durationMs), ...await measure('naive', m, durationMs)];
  const at64 = (s: string): number => rows.find((r) => r.server === s && r.concurrency === 64)?.requestsPerSecond ?? 0;
  return {
    scenario: m.scenario, model: m.label, durationMs, rows,
    speedupAt64: at64('naive') > 0 ? at64('infernode') / at64('naive') : 0,
  };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function onnxMarkdown(r: OnnxBenchResult, machine: string): string {
  const row = (x: OnnxBenchRow): string => `| ${x.server} | ${x.concurrency} | ${fmt(x.requestsPerSecond)} | ` +
    `${fmt(x.p50Us / 1000, 1)} | ${fmt(x.p99Us / 1000, 1)} | ${fmt(x.meanBatch, 1)} | ${fmt(x.eventLoopDelay.p99Ms, 2)} | ` +
    `${fmt(x.eventLoopDelay.maxMs, 1)} | ${x.errors} |`;
  return [
    `# Headline: ${r.model} over HTTP — infernode vs node:http + onnxruntime-node`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Each row: ${r.durationMs / 1000} s after 1 s of warm-up, closed loop, KServe binary requests of one row; load generator and each server in their own processes.`,
    '',
    `**infernode ÷ naive at concurrency 64: ${fmt(r.speedupAt64, 2)}×** (target ≥ 5×).`,
    '',
    `![requests/s by concurrency](${r.scenario}.svg)`,
    '',
    '| server | concurrency | req/s | p50 ms | p99 ms | rows per run | event-loop delay p99 ms | max ms | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map(row),
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
