/**
 * Scenario "ensemble": a two-step pipeline — a preprocessing ONNX model (standardization,
 * (x − mean) · inv_std over 256 features) then the headline MLP 256→2048→2048→2048→10 — served
 * by one infernode process, both step models with dynamic batching, and the ensemble `pipeline`
 * over them. Two clients against that same server, at concurrency 16 and 64:
 *  - one HTTP request per answer to the ensemble (the intermediate tensor stays in the server);
 *  - the two-call client: an HTTP request to the preprocessing model, then one to the MLP with
 *    the first answer's output (binary tensor extension both ways).
 * Reported: end-to-end answers/s, p50/p99, server and client CPU, rows per run of each step
 * model, the ensemble ÷ two-call ratio (target ≥ 1.5×), and a check that the first answers to a
 * set of input rows are the same in both modes and match a JS reference of the pipeline.
 * Server and load generators run in their own processes (ensemble-server.ts, ensemble-load.ts).
 * The two modes alternate in short windows (ROUNDS per concurrency) and each mode's windows are
 * merged, so background load on a shared machine does not favour one of them.
 */
import { fork } from 'node:child_process';
import { ServerProcess } from './server-process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  BENCH_MLP_LAYERS, BENCH_MLP_SEED, PREPROCESS_BENCH_SEED, benchMlpModel, mlpWeights, preprocess, preprocessModel,
  preprocessParams,
} from '../tools/onnx/factories';
import { writeModelFile } from '../tools/onnx';
import { MLP_BENCH_CONFIG } from './onnx';
import type { ClientMode, EnsembleLoadJob, EnsembleLoadReport, PipelineNames } from './ensemble-load';
import { ENSEMBLE_MODEL, MLP_MODEL, PREPROCESS_MODEL, type EnsembleServerReport, type Executions } from './ensemble-server';

const ROOT = path.join(__dirname, '..', '..');
const REPOSITORY = path.join(ROOT, '.tmp', 'bench-ensemble');
const FEATURES = BENCH_MLP_LAYERS[0]!;
const CLASSES = BENCH_MLP_LAYERS[BENCH_MLP_LAYERS.length - 1]!;
export const ENSEMBLE_CONCURRENCIES = [16, 64];
const MODES: readonly ClientMode[] = ['ensemble', 'two-call', 'mlp-only'];
/**
 * Rounds per concurrency: the two modes alternate in short windows, so what else runs on a
 * shared machine weighs on both alike; each mode's windows are then merged into one row.
 */
const ROUNDS = 3;
/** Distinct input rows the clients rotate over; the first answer to each is checked. */
const SAMPLE_ROWS = 8;

const NAMES: PipelineNames = {
  ensemble: ENSEMBLE_MODEL, preprocess: PREPROCESS_MODEL, mlp: MLP_MODEL,
  rawInput: 'raw', features: 'features', mlpInput: 'input', logits: 'logits',
};

/** The preprocessing step: batches like the MLP (no queue delay, one instance). */
const PREPROCESS_CONFIG = `name: "${PREPROCESS_MODEL}"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "raw", data_type: TYPE_FP32, dims: [ ${FEATURES} ] } ]
output [ { name: "features", data_type: TYPE_FP32, dims: [ ${FEATURES} ] } ]
dynamic_batching { }
instance_group [ { count: 1, kind: KIND_CPU } ]
`;

/** The ensemble: raw → preprocess → features → mlp_bench → logits (it batches on its steps). */
const ENSEMBLE_CONFIG = `name: "${ENSEMBLE_MODEL}"
platform: "ensemble"
max_batch_size: 64
input [ { name: "raw", data_type: TYPE_FP32, dims: [ ${FEATURES} ] } ]
output [ { name: "logits", data_type: TYPE_FP32, dims: [ ${CLASSES} ] } ]
ensemble_scheduling {
  step [
    { model_name: "${PREPROCESS_MODEL}" model_version: -1
      input_map { key: "raw" value: "raw" }
      output_map { key: "features" value: "features" } },
    { model_name: "${MLP_MODEL}" model_version: -1
      input_map { key: "input" value: "features" }
      output_map { key: "logits" value: "logits" } }
  ]
}
`;

/** Writes the repository under .tmp/ (the MLP, ~36 MB, once; not committed). */
function prepareRepository(): void {
  const mlpFile = path.join(REPOSITORY, MLP_MODEL, '1', 'model.onnx');
  if (!existsSync(mlpFile)) writeModelFile(mlpFile, benchMlpModel());
  writeFileSync(path.join(REPOSITORY, MLP_MODEL, 'config.pbtxt'), MLP_BENCH_CONFIG);
  writeModelFile(path.join(REPOSITORY, PREPROCESS_MODEL, '1', 'model.onnx'), preprocessModel(FEATURES, PREPROCESS_BENCH_SEED));
  writeFileSync(path.join(REPOSITORY, PREPROCESS_MODEL, 'config.pbtxt'), PREPROCESS_CONFIG);
  mkdirSync(path.join(REPOSITORY, ENSEMBLE_MODEL, '1'), { recursive: true });
  writeFileSync(path.join(REPOSITORY, ENSEMBLE_MODEL, 'config.pbtxt'), ENSEMBLE_CONFIG);
}

/** The input rows: raw features around the preprocessing means, different per row. */
function sampleRows(): Float32Array[] {
  return Array.from({ length: SAMPLE_ROWS }, (_, k) => Float32Array.from({ length: FEATURES }, (_, i) => Math.sin(i * (k + 1) * 0.37 + k)));
}

/** The pipeline in JS: preprocess (bit-exact FP32), then the MLP in float64 from its FP32 weights. */
function referenceLogits(rows: Float32Array[]): Float64Array[] {
  const params = preprocessParams(FEATURES, PREPROCESS_BENCH_SEED);
  const { weights, biases } = mlpWeights(BENCH_MLP_LAYERS, BENCH_MLP_SEED);
  return rows.map((row) => {
    let x: ArrayLike<number> = preprocess(params, row);
    for (let l = 0; l + 1 < BENCH_MLP_LAYERS.length; l++) {
      const [n, m, w, b] = [BENCH_MLP_LAYERS[l]!, BENCH_MLP_LAYERS[l + 1]!, weights[l]!, biases[l]!];
      const y = new Float64Array(m);
      for (let i = 0; i < n; i++) {
        const xi = x[i]!;
        for (let j = 0; j < m; j++) y[j] += xi * w[i * m + j]!;
      }
      for (let j = 0; j < m; j++) y[j] = l + 2 < BENCH_MLP_LAYERS.length ? Math.max(0, y[j]! + b[j]!) : y[j]! + b[j]!;
      x = y;
    }
    return x as Float64Array;
  });
}

function load(job: EnsembleLoadJob): Promise<EnsembleLoadReport> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'ensemble-load.js'), [], { stdio: 'inherit' });
    child.once('message', (report: EnsembleLoadReport) => resolve(report));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the ensemble load generator exited with ${code}`));
    });
    child.send(job);
  });
}

export interface EnsembleRow {
  mode: ClientMode;
  concurrency: number;
  /** End-to-end answers per second over all rounds. */
  requestsPerSecond: number;
  /** The same in each round, in order. */
  roundRequestsPerSecond: number[];
  p50Us: number;
  p99Us: number;
  errors: number;
  firstError: string;
  /** Server CPU over the windows (warm-up included), in cores (CPU seconds per second). */
  serverCpu: number;
  /** Load generator CPU over the measured windows, in cores. */
  clientCpu: number;
  /** The server's event-loop delay p99, the worst window's. */
  eventLoopDelayP99Ms: number;
  /** Rows per run of each step model over the windows (its direct and ensemble requests alike). */
  preprocessBatch: number;
  mlpBatch: number;
}

export interface EnsembleVerification {
  /** Rows whose first answer came in both modes and was compared. */
  rowsCompared: number;
  /** Largest |ensemble − two-call| over the compared logits. */
  maxModeDifference: number;
  /** Two-call preprocessing answers that differ from the JS reference's bits. */
  preprocessMismatches: number;
  /** Largest error of either mode's logits against the JS reference, relative to each value floored at 10% of the row's largest. */
  maxReferenceError: number;
  ok: boolean;
}

export interface EnsembleBenchResult {
  scenario: 'ensemble';
  pipeline: string;
  rounds: number;
  windowMs: number;
  rows: EnsembleRow[];
  /** Per concurrency: ensemble ÷ two-call answers/s. */
  ratio: Record<number, number>;
  /** Per concurrency: mlp-only ÷ two-call answers/s, the most any one-round-trip answer could show here. */
  ceilingRatio: Record<number, number>;
  verification: EnsembleVerification;
}

/** Tolerances of the check: batching changes ONNX Runtime's summation order, not the result beyond FP32 rounding. */
const MODE_TOLERANCE = 1e-4;
const REFERENCE_TOLERANCE = 1e-4;

function verify(rows: Float32Array[], reports: { mode: ClientMode; report: EnsembleLoadReport }[]): EnsembleVerification {
  const floats = (b64: string): Float32Array => {
    const bytes = Buffer.from(b64, 'base64');
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  };
  const reference = referenceLogits(rows);
  const params = preprocessParams(FEATURES, PREPROCESS_BENCH_SEED);
  const ensemble = reports.filter((r) => r.mode === 'ensemble').map((r) => r.report);
  const twoCall = reports.filter((r) => r.mode === 'two-call').map((r) => r.report);
  const first = (from: EnsembleLoadReport[], pick: (r: EnsembleLoadReport) => (string | null)[], k: number): Float32Array | null => {
    const found = from.map((r) => pick(r)[k]).find((x) => x !== null && x !== undefined);
    return found ? floats(found) : null;
  };
  let rowsCompared = 0;
  let maxModeDifference = 0;
  let preprocessMismatches = 0;
  let maxReferenceError = 0;
  rows.forEach((row, k) => {
    const want = reference[k]!;
    const floor = 0.1 * Math.max(...Array.from(want, Math.abs));
    const a = first(ensemble, (r) => r.logits, k);
    const b = first(twoCall, (r) => r.logits, k);
    for (const got of [a, b]) {
      if (!got) continue;
      got.forEach((g, j) => { maxReferenceError = Math.max(maxReferenceError, Math.abs(g - want[j]!) / Math.max(Math.abs(want[j]!), floor)); });
    }
    if (a && b) {
      rowsCompared++;
      a.forEach((v, j) => { maxModeDifference = Math.max(maxModeDifference, Math.abs(v - b[j]!)); });
    }
    const features = first(twoCall, (r) => r.features, k);
    if (features) {
      const expected = preprocess(params, row);
      if (!features.every((v, j) => Object.is(v, expected[j]))) preprocessMismatches++;
    }
  });
  return {
    rowsCompared, maxModeDifference, preprocessMismatches, maxReferenceError,
    ok: rowsCompared === rows.length && maxModeDifference <= MODE_TOLERANCE && preprocessMismatches === 0 &&
      maxReferenceError <= REFERENCE_TOLERANCE,
  };
}

/** One measured window: one client mode at one concurrency, and what the server did meanwhile. */
interface Window {
  mode: ClientMode;
  concurrency: number;
  report: EnsembleLoadReport;
  serverCpuUs: number;
  /** The window's wall time, warm-up included (the span of the server's CPU figure). */
  wallSeconds: number;
  preprocess: Executions;
  mlp: Executions;
  eventLoopDelayP99Ms: number;
}

const delta = (before: Executions, after: Executions): Executions =>
  ({ rows: after.rows - before.rows, executions: after.executions - before.executions });

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The windows of one mode at one concurrency as one row: answers, CPU and rows per run summed, latencies merged. */
function rowOf(windows: Window[]): EnsembleRow {
  const sum = (f: (w: Window) => number): number => windows.reduce((a, w) => a + f(w), 0);
  const seconds = sum((w) => w.report.seconds);
  const sorted = Float64Array.from(windows.flatMap((w) => w.report.latenciesUs)).sort();
  const perRun = (f: (w: Window) => Executions): number => {
    const runs = sum((w) => f(w).executions);
    return runs > 0 ? sum((w) => f(w).rows) / runs : 0;
  };
  return {
    mode: windows[0]!.mode, concurrency: windows[0]!.concurrency,
    requestsPerSecond: seconds > 0 ? sum((w) => w.report.requests) / seconds : 0,
    roundRequestsPerSecond: windows.map((w) => (w.report.seconds > 0 ? w.report.requests / w.report.seconds : 0)),
    p50Us: percentile(sorted, 50), p99Us: percentile(sorted, 99),
    errors: sum((w) => w.report.errors), firstError: windows.find((w) => w.report.firstError !== '')?.report.firstError ?? '',
    serverCpu: sum((w) => w.serverCpuUs) / 1e6 / sum((w) => w.wallSeconds),
    clientCpu: seconds > 0 ? sum((w) => w.report.clientCpuUs) / 1e6 / seconds : 0,
    eventLoopDelayP99Ms: Math.max(...windows.map((w) => w.eventLoopDelayP99Ms)),
    preprocessBatch: perRun((w) => w.preprocess), mlpBatch: perRun((w) => w.mlp),
  };
}

/**
 * Runs the scenario: per concurrency, ROUNDS rounds of (ensemble window, two-call window), each
 * window `windowMs` measured after 500 ms of warm-up.
 */
export async function runEnsembleBench(windowMs = 2000): Promise<EnsembleBenchResult> {
  prepareRepository();
  const inputRows = sampleRows();
  const encodedRows = inputRows.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength).toString('base64'));
  const server = await ServerProcess.start(path.join(__dirname, 'ensemble-server.js'), [REPOSITORY], 'the ensemble bench server');
  const windows: Window[] = [];
  try {
    for (const concurrency of ENSEMBLE_CONCURRENCIES) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of MODES) {
          const before = await server.ask<EnsembleServerReport>('report');
          const startedAt = performance.now();
          server.reset();
          const report = await load({
            port: server.port, mode, names: NAMES, rows: encodedRows, concurrency, warmupMs: 500, durationMs: windowMs,
          });
          const after = await server.ask<EnsembleServerReport>('report');
          windows.push({
            mode, concurrency, report, serverCpuUs: after.cpuUs - before.cpuUs, wallSeconds: (performance.now() - startedAt) / 1000,
            preprocess: delta(before.preprocess, after.preprocess), mlp: delta(before.mlp, after.mlp), eventLoopDelayP99Ms: after.p99Ms,
          });
        }
      }
    }
  } finally {
    await server.stop();
  }
  const rows = ENSEMBLE_CONCURRENCIES.flatMap((c) => MODES.map((mode) => rowOf(windows.filter((w) => w.mode === mode && w.concurrency === c))));
  const ratio: Record<number, number> = {};
  const ceilingRatio: Record<number, number> = {};
  for (const c of ENSEMBLE_CONCURRENCIES) {
    const at = (mode: ClientMode): number => rows.find((r) => r.mode === mode && r.concurrency === c)?.requestsPerSecond ?? 0;
    ratio[c] = at('two-call') > 0 ? at('ensemble') / at('two-call') : 0;
    ceilingRatio[c] = at('two-call') > 0 ? at('mlp-only') / at('two-call') : 0;
  }
  return {
    scenario: 'ensemble', pipeline: `preprocess (x − mean) · inv_std [${FEATURES}] → MLP ${BENCH_MLP_LAYERS.join('→')} (FP32)`,
    rounds: ROUNDS, windowMs, rows, ratio, ceilingRatio, verification: verify(inputRows, windows),
  };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** `mode` ÷ two-call answers/s in each round at concurrency `c`. */
function roundRatios(r: EnsembleBenchResult, c: number, mode: ClientMode = 'ensemble'): number[] {
  const of = (m: ClientMode): number[] => r.rows.find((x) => x.mode === m && x.concurrency === c)?.roundRequestsPerSecond ?? [];
  const twoCall = of('two-call');
  return of(mode).map((e, i) => (twoCall[i] ? e / twoCall[i]! : 0));
}

export function ensembleMarkdown(r: EnsembleBenchResult, machine: string): string {
  const v = r.verification;
  const row = (x: EnsembleRow): string => `| ${x.mode} | ${x.concurrency} | ${fmt(x.requestsPerSecond)} | ${fmt(x.p50Us / 1000, 1)} | ` +
    `${fmt(x.p99Us / 1000, 1)} | ${fmt(x.serverCpu, 2)} | ${fmt(x.clientCpu, 2)} | ${fmt(x.preprocessBatch, 1)} | ${fmt(x.mlpBatch, 1)} | ` +
    `${fmt(x.eventLoopDelayP99Ms, 1)} | ${x.errors} |`;
  const errors = r.rows.filter((x) => x.firstError !== '').map((x) => `- ${x.mode} at ${x.concurrency}: ${x.firstError.slice(0, 300)}`);
  return [
    `# Ensemble vs two calls: ${r.pipeline} over HTTP`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Each row: ${r.rounds} windows of ${r.windowMs / 1000} s (after 0.5 s of warm-up each), alternating with the other clients', merged;`,
    'closed loop; one infernode process (both step models with dynamic batching, one instance each) serving both',
    'client modes; the load generator in its own process.',
    '**ensemble**: one KServe binary request per answer to the ensemble `pipeline`. **two-call**: a binary',
    'request to `preprocess`, then one to `mlp_bench` with the first answer\'s output — what a client does',
    'without ensembles. req/s counts end-to-end answers (logits), so a two-call answer is two HTTP round trips.',
    '**mlp-only**, the ceiling: one binary request straight to `mlp_bench` with the raw row, no preprocessing',
    'anywhere (its logits are not the pipeline\'s and are not checked): the most any server answering in one round',
    'trip could reach here. A ceiling ratio below 1.5× means no ensemble could meet the target on this machine.',
    '',
    ...ENSEMBLE_CONCURRENCIES.map((c) => `**ensemble ÷ two-call at concurrency ${c}: ${fmt(r.ratio[c] ?? 0, 2)}×** (target ≥ 1.5×; ` +
      `per round: ${roundRatios(r, c).map((x) => `${fmt(x, 2)}×`).join(', ')}); ceiling (mlp-only ÷ two-call): ` +
      `${fmt(r.ceilingRatio[c] ?? 0, 2)}× (per round: ${roundRatios(r, c, 'mlp-only').map((x) => `${fmt(x, 2)}×`).join(', ')})  `),
    '',
    '| client | concurrency | answers/s | p50 ms | p99 ms | server CPU (cores) | client CPU (cores) | preprocess rows/run | MLP rows/run | event-loop delay p99 ms | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map(row),
    '',
    `Answers checked (${v.ok ? 'OK' : 'FAILED'}): the first answer to each of ${v.rowsCompared} input rows in both modes differs by at most ` +
      `${v.maxModeDifference.toExponential(1)} (tolerance ${MODE_TOLERANCE}: a row's result may depend on the batch it ran in); the ` +
      `two-call client's preprocessing ` +
      `answers match the JS reference bit for bit (${v.preprocessMismatches} mismatches); logits match a float64 JS reference of the ` +
      `pipeline within ${v.maxReferenceError.toExponential(1)} relative.`,
    ...(errors.length ? ['', 'First errors:', ...errors] : []),
    '',
    'What limits the ratio: the MLP (9 M multiply-adds per row) keeps the server\'s cores busy in every mode,',
    'and an ensemble can save only the second HTTP round trip (parsing, encoding, one more request per answer).',
    'The mlp-only rows show the most that saving is worth here: one round trip to the MLP and nothing else. Where',
    'compute per answer is far above a round trip\'s cost, as on a CPU-only machine, that ceiling itself is near',
    'or below 1.5×, so the ratio measures the machine as much as the ensemble; on a GPU, where the MLP costs',
    'little, the round trip is most of an answer and the saving shows.',
    'The load generator shares this 2-core machine; per-round ratios show the spread.',
    '',
  ].join('\n');
}

if (require.main === module) {
  runEnsembleBench(Number(process.argv[2] ?? 2000)).then((r) => console.log(ensembleMarkdown(r, 'this machine')), (err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
