/**
 * Scenario "sequence": a stateful model — one step of a GRU-like RNN (input 64, state 256, FP32,
 * made by the project's ONNX writer) — driven by N concurrent sequences (1, 16, 64) over gRPC
 * ModelStreamInfer, each sequence sending its next step when the previous step's response has
 * come, STEPS steps per sequence. infernode keeps the state natively (sequence_batching, oldest
 * strategy, implicit state STATE_IN/STATE_OUT) and batches the steps of concurrent sequences;
 * the naive peer keeps it in a JS Map and calls onnxruntime-node once per request. Reported:
 * steps/s and per-step p50/p99, each server's event-loop delay and CPU, rows per execution, and
 * the ratios. Servers and load generators run in their own processes (sequence-server.ts,
 * sequence-load.ts). Target: ≥ 5× the naive steps/s at 64 sequences, with a lower p99.
 *
 * A third server, the transport ceiling, answers every step at once with zeros through the same
 * grpc-js service and codec (no model, no state): the most any server on this transport could
 * reach beside the same load generators, which bounds the ratio the machine can show.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { ServerProcess } from './server-process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { RNN_BENCH_HIDDEN, RNN_BENCH_INPUT_SIZE, RNN_BENCH_SEED, rnnStepModel } from '../tools/onnx/factories';
import { writeModelFile } from '../tools/onnx';
import type { SequenceChildResult } from './sequence-load';
import { SEQUENCE_MODEL, type ServerReport } from './sequence-server';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The model sizes: `sequence` (input 64, state 256: weights of 0.8 MB, so a step costs little
 * compute and the transport dominates) and `sequence-large` (input 256, state 1024: 15.7 MB of
 * weights, a streaming speech model's layer, where reading the weights once per batch instead
 * of once per step is what batching sequences buys).
 */
export interface SequenceSize {
  scenario: 'sequence' | 'sequence-large';
  inputSize: number;
  hidden: number;
}

export const SEQUENCE_SIZES: readonly SequenceSize[] = [
  { scenario: 'sequence', inputSize: RNN_BENCH_INPUT_SIZE, hidden: RNN_BENCH_HIDDEN },
  { scenario: 'sequence-large', inputSize: 256, hidden: 1024 },
];

const repositoryOf = (size: SequenceSize): string => path.join(ROOT, '.tmp', `bench-${size.scenario}`);
const modelFileOf = (size: SequenceSize): string => path.join(repositoryOf(size), SEQUENCE_MODEL, '1', 'model.onnx');

export const SEQUENCE_CONCURRENCIES = [1, 16, 64];
/** Steps per sequence: a sequence starts (START), runs, ends (END) and the worker starts the next. */
export const STEPS = 100;

export type SequenceServer = 'infernode' | 'naive' | 'ceiling';

/**
 * The model's config: the oldest strategy batches the next step of every sequence that has one
 * (up to 64 candidates), the state lives in the server between steps (zeros at START), and a
 * sequence idle for 5 s is released. The model needs no control inputs: its state input is the
 * whole recurrence, so no row depends on a batch slot. Why not `direct`: as in Triton, a direct
 * batch runs every slot up to the highest ready one, with null rows for the slots whose sequence
 * has no step queued; with 64 live sequences that is ~64 rows computed for the ~20 ready ones.
 */
export const sequenceConfig = (size: SequenceSize): string => `name: "${SEQUENCE_MODEL}"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "INPUT", data_type: TYPE_FP32, dims: [ ${size.inputSize} ] } ]
output [ { name: "OUTPUT", data_type: TYPE_FP32, dims: [ ${size.hidden} ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  oldest { max_candidate_sequences: 64 }
  state [
    {
      input_name: "STATE_IN"
      output_name: "STATE_OUT"
      data_type: TYPE_FP32
      dims: [ ${size.hidden} ]
      initial_state: { data_type: TYPE_FP32 dims: [ ${size.hidden} ] zero_data: true name: "zeros" }
    }
  ]
}
instance_group [ { count: 1, kind: KIND_CPU } ]
# The load generators share this machine's cores: compute threads at the JS thread's priority
# (infernode's default lowers them, for the event loop's sake) so that the peer's ONNX Runtime,
# at normal priority, is not favoured over ours by the clients' processes; and, at that
# priority, no spinning (a spinning worker would take the event loop's core: docs/repository.md).
parameters { key: "compute_thread_nice" value { string_value: "0" } }
parameters { key: "session.intra_op.allow_spinning" value { string_value: "0" } }
`;

/** Writes the RNN model (once) and its config under .tmp/ (not committed). */
export function prepareSequenceRepository(size: SequenceSize): string {
  const modelFile = modelFileOf(size);
  if (!existsSync(modelFile)) {
    writeModelFile(modelFile, rnnStepModel({ inputSize: size.inputSize, hidden: size.hidden, seed: RNN_BENCH_SEED }));
  }
  mkdirSync(path.dirname(modelFile), { recursive: true });
  writeFileSync(path.join(repositoryOf(size), SEQUENCE_MODEL, 'config.pbtxt'), sequenceConfig(size));
  return repositoryOf(size);
}

export interface SequenceRow {
  server: SequenceServer;
  sequences: number;
  stepsPerSecond: number;
  /** Whole sequences (START … END) finished in the window, per second. */
  sequencesPerSecond: number;
  p50Us: number;
  p99Us: number;
  errors: number;
  firstError: string;
  /** Rows per ONNX Runtime run (1 for the naive server). */
  meanBatch: number;
  /** infernode: mean µs per run of compute input (instance wake, gathering rows and state) and compute infer (ONNX Runtime). */
  runUs: { input: number; infer: number } | null;
  eventLoopDelayP99Ms: number;
  /** Server process CPU time over the window / wall time (1.0 = one core busy). */
  serverCpu: number;
  /** Warm-up sequences checked step by step against rnnStep, and how many differed. */
  verified: number;
  mismatches: number;
}

export interface SequenceResult {
  scenario: SequenceSize['scenario'];
  model: string;
  stepsPerSequence: number;
  durationMs: number;
  rows: SequenceRow[];
  /** infernode ÷ naive steps/s, by sequences. */
  ratios: Record<string, number>;
  /** naive p99 ÷ infernode p99, by sequences (> 1: infernode's tail is lower). */
  p99Ratios: Record<string, number>;
  /** ceiling ÷ naive steps/s, by sequences: the most any server on this transport could show here. */
  ceilingRatios: Record<string, number>;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** How long a cell's warm-up, and a measurement's last step, may take before the bench gives up. */
const WARMUP_LIMIT_MS = 180_000;
const STEP_LIMIT_MS = 60_000;

/**
 * `work`, or an error saying what stalled once `limitMs` passes (the load generators are killed):
 * a bench must end, and a lost answer must be reported, not waited for.
 */
async function withinTime<T>(work: Promise<T>, limitMs: number, stalled: string, children: readonly ChildProcess[]): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      for (const c of children) c.kill('SIGKILL');
      reject(new Error(`${stalled} after ${limitMs / 1000} s`));
    }, limitMs);
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** One cell: `sequences` concurrent sequences from up to two load processes for `durationMs`. */
async function measureCell(
  proc: ServerProcess, server: SequenceServer, sequences: number, durationMs: number, size: SequenceSize,
): Promise<SequenceRow> {
  const script = path.join(__dirname, 'sequence-load.js');
  const processes = Math.min(2, sequences);
  const children = Array.from({ length: processes }, (_, i) => {
    const share = Math.floor(sequences / processes) + (i < sequences % processes ? 1 : 0);
    // Ids never repeat across children or cells: a high base per child and cell (uint64).
    const idBase = (BigInt(sequences) << 40n) + (BigInt(i + 1) << 32n);
    return fork(script, [String(proc.port), SEQUENCE_MODEL, String(share), String(STEPS), String(size.inputSize),
      String(size.hidden), String(idBase)], { stdio: 'inherit', serialization: 'advanced' });
  });
  const results = children.map((c) => new Promise<SequenceChildResult>((resolve, reject) => {
    c.on('message', (m: { type: string }) => { if (m.type === 'result') resolve(m as SequenceChildResult); });
    c.once('exit', (code) => { if (code !== 0) reject(new Error(`a sequence load generator exited with ${code}`)); });
  }));
  // Handled here too: when withinTime kills the children, their exits must not surface as an
  // unhandled rejection before the bench reports what stalled.
  for (const r of results) r.catch(() => undefined);
  const cell = `bench ${size.scenario}: ${server} server, ${sequences} sequence(s)`;
  const ready = Promise.all(children.map((c) => new Promise<void>((resolve) => c.once('message', () => resolve()))));
  await withinTime(ready, WARMUP_LIMIT_MS, `${cell}: the load generators did not finish warming up`, children);
  const before = await proc.ask<ServerReport>('report');
  proc.reset();
  process.stderr.write(`${cell}: measuring ${durationMs / 1000} s\n`);
  for (const c of children) c.send({ type: 'go', durationMs });
  const done = await withinTime(Promise.all(results), durationMs + STEP_LIMIT_MS,
    `${cell}: a step got no answer (the load generators are still waiting)`, children);
  const after = await proc.ask<ServerReport>('report');
  const seconds = durationMs / 1000;
  const latencies = Float64Array.from(done.flatMap((r) => Array.from(r.stepUs))).sort();
  process.stderr.write(`${cell}: ${Math.round(done.reduce((n, r) => n + r.steps, 0) / (durationMs / 1000))} steps/s, ` +
    `p50 ${(percentile(latencies, 50) / 1000).toFixed(2)} ms, p99 ${(percentile(latencies, 99) / 1000).toFixed(2)} ms\n`);
  const runs = after.executions && before.executions ? after.executions.executions - before.executions.executions : 0;
  const perRun = (ns: number, was: number): number => (runs > 0 ? (ns - was) / runs / 1000 : 0);
  return {
    server, sequences,
    stepsPerSecond: done.reduce((n, r) => n + r.steps, 0) / seconds,
    sequencesPerSecond: done.reduce((n, r) => n + r.sequences, 0) / seconds,
    p50Us: percentile(latencies, 50),
    p99Us: percentile(latencies, 99),
    errors: done.reduce((n, r) => n + r.errors, 0),
    firstError: done.map((r) => r.firstError).find((e) => e) ?? '',
    meanBatch: runs > 0 ? (after.executions!.rows - before.executions!.rows) / runs : 1,
    runUs: runs > 0 ? {
      input: perRun(after.executions!.inputNs, before.executions!.inputNs),
      infer: perRun(after.executions!.inferNs, before.executions!.inferNs),
    } : null,
    eventLoopDelayP99Ms: after.p99Ms,
    serverCpu: (after.cpuUs - before.cpuUs) / 1e6 / seconds,
    verified: done.reduce((n, r) => n + r.verified, 0),
    mismatches: done.reduce((n, r) => n + r.mismatches, 0),
  };
}

async function measureServer(server: SequenceServer, durationMs: number, size: SequenceSize): Promise<SequenceRow[]> {
  const proc = await ServerProcess.start(path.join(__dirname, 'sequence-server.js'),
    [server, repositoryOf(size), modelFileOf(size), String(size.hidden)], `the ${server} sequence server`);
  const rows: SequenceRow[] = [];
  try {
    for (const sequences of SEQUENCE_CONCURRENCIES) rows.push(await measureCell(proc, server, sequences, durationMs, size));
  } finally {
    await proc.stop();
  }
  return rows;
}

/** Runs the scenario; `servers` limits it to one side (the results are then not comparable). */
export async function runSequenceBench(
  size: SequenceSize = SEQUENCE_SIZES[0], durationMs = 5000,
  servers: readonly SequenceServer[] = ['infernode', 'naive', 'ceiling'],
): Promise<SequenceResult> {
  prepareSequenceRepository(size);
  const rows: SequenceRow[] = [];
  for (const server of servers) rows.push(...await measureServer(server, durationMs, size));
  const ratios: Record<string, number> = {};
  const p99Ratios: Record<string, number> = {};
  const ceilingRatios: Record<string, number> = {};
  for (const sequences of SEQUENCE_CONCURRENCIES) {
    const of = (server: SequenceServer) => rows.find((r) => r.server === server && r.sequences === sequences);
    const [ours, naive, ceiling] = [of('infernode'), of('naive'), of('ceiling')];
    if (!naive) continue;
    const key = String(sequences);
    if (ceiling) ceilingRatios[key] = naive.stepsPerSecond > 0 ? ceiling.stepsPerSecond / naive.stepsPerSecond : 0;
    if (!ours) continue;
    ratios[key] = naive.stepsPerSecond > 0 ? ours.stepsPerSecond / naive.stepsPerSecond : 0;
    p99Ratios[key] = ours.p99Us > 0 ? naive.p99Us / ours.p99Us : 0;
  }
  return {
    scenario: size.scenario,
    model: `GRU-like RNN step, input ${size.inputSize}, state ${size.hidden} (FP32)`,
    stepsPerSequence: STEPS, durationMs, rows, ratios, p99Ratios, ceilingRatios,
  };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function sequenceMarkdown(r: SequenceResult, machine: string): string {
  const errors = r.rows.filter((x) => x.errors > 0).map((x) => `- ${x.server} at ${x.sequences} sequences: ${x.errors} errors, first: ${x.firstError}`);
  const ratio = (key: string): string => (r.ratios[key] === undefined ? '–' : `${fmt(r.ratios[key], 2)}×`);
  const p99 = (key: string): string => (r.p99Ratios[key] === undefined ? '–' : `${fmt(r.p99Ratios[key], 2)}×`);
  const ceiling = (key: string): string => (r.ceilingRatios[key] === undefined ? '–' : `${fmt(r.ceilingRatios[key], 2)}×`);
  const ceilingOf = (sequences: number): SequenceRow | undefined => r.rows.find((x) => x.server === 'ceiling' && x.sequences === sequences);
  const oursOf = (sequences: number): SequenceRow | undefined => r.rows.find((x) => x.server === 'infernode' && x.sequences === sequences);
  const ofCeiling = (sequences: number): string => {
    const [c, o] = [ceilingOf(sequences), oursOf(sequences)];
    return c && o && c.stepsPerSecond > 0 ? `${fmt((100 * o.stepsPerSecond) / c.stepsPerSecond)} %` : '–';
  };
  return [
    `# Sequences: ${r.model} over gRPC ModelStreamInfer — infernode's sequence batcher vs a Map + onnxruntime-node`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Each row: ${r.durationMs / 1000} s after warm-up; each sequence sends its next step when the previous step's response ` +
      `has come, ${r.stepsPerSequence} steps per sequence (START … END), then the next sequence; load generators and each ` +
      'server in their own processes. infernode keeps the state natively (oldest strategy: each run takes the next step of ' +
      'every sequence that has one; implicit state); the naive server keeps it in a JS Map and runs onnxruntime-node once ' +
      'per request. "Run µs": infernode\'s statistics per run, compute input (the instance thread\'s wake and gathering ' +
      'the rows and their state) / compute infer (ONNX Runtime). **ceiling**: the naive server\'s grpc-js service and ' +
      'message codec answering every step at once with zeros (no model, no state; its answers are not the RNN\'s, so ' +
      'its warm-up check does not apply): what any server on this transport could reach beside the same load generators.',
    '',
    `**infernode ÷ naive steps/s at 64 sequences: ${ratio('64')}**, naive p99 ÷ infernode p99: ${p99('64')} ` +
      '(target ≥ 5× with a lower p99).',
    `**Transport ceiling ÷ naive at 64 sequences: ${ceiling('64')}**; infernode reaches ${ofCeiling(64)} of the ceiling. ` +
      'A ceiling below 5× means no server on this transport could meet the target on this machine.',
    '',
    '| server | sequences | steps/s | sequences/s | p50 ms | p99 ms | rows per run | run µs input / infer | event-loop delay p99 ms | server CPU | verified (mismatched) | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map((x) => `| ${x.server} | ${x.sequences} | ${fmt(x.stepsPerSecond)} | ${fmt(x.sequencesPerSecond, 1)} | ` +
      `${fmt(x.p50Us / 1000, 2)} | ${fmt(x.p99Us / 1000, 2)} | ${fmt(x.meanBatch, 1)} | ` +
      `${x.runUs ? `${fmt(x.runUs.input)} / ${fmt(x.runUs.infer)}` : ''} | ${fmt(x.eventLoopDelayP99Ms, 2)} | ` +
      `${fmt(x.serverCpu, 2)} | ${x.server === 'ceiling' ? '–' : `${x.verified} (${x.mismatches})`} | ${x.errors} |`),
    '',
    '| sequences | 1 | 16 | 64 |',
    '| --- | ---: | ---: | ---: |',
    `| infernode ÷ naive steps/s | ${SEQUENCE_CONCURRENCIES.map((c) => ratio(String(c))).join(' | ')} |`,
    `| naive p99 ÷ infernode p99 | ${SEQUENCE_CONCURRENCIES.map((c) => p99(String(c))).join(' | ')} |`,
    `| ceiling ÷ naive steps/s | ${SEQUENCE_CONCURRENCIES.map((c) => ceiling(String(c))).join(' | ')} |`,
    `| infernode ÷ ceiling steps/s | ${SEQUENCE_CONCURRENCIES.map((c) => ofCeiling(c)).join(' | ')} |`,
    '',
    ...(errors.length > 0 ? ['Errors:', '', ...errors, ''] : []),
  ].join('\n');
}

/**
 * `node lib/bench/sequence.js [infernode|naive|ceiling] [durationMs] [sequence|sequence-large]`: one side only, printed, not written
 * to bench/results (npm run bench -- sequence runs both and writes them).
 */
if (require.main === module) {
  const side = process.argv[2] as SequenceServer | undefined;
  const durationMs = Number(process.argv[3] ?? 3000);
  const size = SEQUENCE_SIZES.find((s) => s.scenario === process.argv[4]) ?? SEQUENCE_SIZES[0];
  runSequenceBench(size, durationMs, side ? [side] : undefined)
    .then((r) => console.log(sequenceMarkdown(r, 'this machine (one side only; not written to bench/results)')))
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
}
