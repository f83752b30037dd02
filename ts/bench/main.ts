/**
 * `npm run bench`: runs every scenario side by side with its peer and writes
 * bench/results/<scenario>.json and .md, with the machine it ran on.
 * Usage: node lib/bench/main.js [scenario...]   (default: all)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { native } from '../native';
import { runInProcessBench, type InProcessResult } from './inprocess';
import { grpcMarkdown, runGrpcBench } from './grpc';
import { httpMarkdown, runHttpBench } from './http';
import { clientMarkdown, runClientBench } from './client';
import { BENCH_MODELS, onnxChart, onnxMarkdown, runOnnxBench } from './onnx';
import { runStreamBench, streamMarkdown } from './stream';
import { cacheMarkdown, runCacheBench } from './cache';
import { SEQUENCE_SIZES, runSequenceBench, sequenceMarkdown } from './sequence';
import { ensembleMarkdown, runEnsembleBench } from './ensemble';
import { gpuMarkdown, runGpuBench } from './gpu';
import { runTimelineBench, timelineMarkdown } from './timeline';
import { startStealMeter, stealText } from './steal';

const RESULTS_DIR = path.join(__dirname, '..', '..', 'bench', 'results');

/** The machine, and (`stolen`: a fraction) how much of its CPU time the hypervisor took during the run. */
export function machineDescription(stolen: number | null = null): string {
  const cpus = os.cpus();
  const info = native().buildInfo();
  return `${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ` +
    `Node ${process.version}, ${os.platform()} ${os.release()}, CUDA devices: ${info.cudaDeviceCount}${stealText(stolen)}`;
}

function fmt(n: number, digits = 1): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function inProcessMarkdown(r: InProcessResult, machine: string): string {
  const c256 = r.rows.find((row) => row.batching && row.concurrency === 256)!;
  const lines = [
    '# In-process `triton.infer()` — identity JS model, FP32[4]',
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}`,
    '',
    `Direct call of the callable (floor): ${fmt(r.directCallMeanUs, 2)} µs mean.  `,
    `**Added per request at concurrency 1 without batching: ${fmt(r.overheadUsAtConcurrency1, 2)} µs** (target ≤ 6 µs).`,
    '',
    `**Batching on, concurrency 256: ${fmt(c256.requestsPerSecond, 0)} requests/s** (target ≥ 300,000).`,
    '',
    'The Triton serves no frontend (allowHttp, allowGrpc and allowMetrics false): a service that embeds infernode ' +
    'and calls `triton.infer()`. Latencies are kept in a log-scale histogram (1 % buckets), not a list of every ' +
    'sample: a list of hundreds of thousands of numbers made the load generator\'s own garbage-collector work a ' +
    'large share of what this scenario measured.',
    '',
    '| batching | concurrency | requests/s | mean µs | p50 µs | p99 µs | mean batch | GC pauses | GC ms in all | longest GC ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map((row) => `| ${row.batching ? 'on' : 'off'} | ${row.concurrency} | ${fmt(row.requestsPerSecond, 0)} | ` +
      `${fmt(row.meanUs)} | ${fmt(row.p50Us)} | ${fmt(row.p99Us)} | ${fmt(row.meanBatchSize)} | ${row.gc.count} | ` +
      `${fmt(row.gc.totalMs)} | ${fmt(row.gc.maxMs)} |`),
    '',
    `Why the p99 at concurrency 256 is ${fmt(c256.p99Us / c256.meanUs, 1)}× its mean: the 256 workers form one closed loop, ` +
    'so a request waits for a whole round (the batch before it, the callable, 256 settlements and the 256 calls that ' +
    'follow); the mean is that round. A garbage-collection pause stops the round for everyone at once ' +
    `(the GC columns: ${c256.gc.count} pauses, ${fmt(c256.gc.totalMs)} ms in all, the longest ${fmt(c256.gc.maxMs)} ms, ` +
    `during ${fmt(c256.seconds, 1)} s), so the slowest 1 % are the requests whose round held a pause. Every in-flight ` +
    'request keeps its promise, its pending entry and its input views alive, which is what a young-generation ' +
    'collection copies. Those pauses were ten times longer (about 700 ms of GC in 2 s, the longest 15-18 ms, half the ' +
    'throughput) while a model kept its requests in a Map: under steady churn V8 rehashes a Map into a new table every ' +
    'few hundred operations and links the old table to the new one, so once one table had been promoted, every later ' +
    'table and every request it held survived its scavenge (4.4 MB per scavenge instead of 0.1 MB) and was promoted in ' +
    'turn. The table in ts/pending-table.ts is written in place.',
    '',
    `**The same row in a Triton that also serves HTTP, gRPC and metrics: ${fmt(r.withFrontends.requestsPerSecond, 0)} requests/s**, ` +
    `p99 ${fmt(r.withFrontends.p99Us)} µs, ${r.withFrontends.gc.count} GC pauses, ${fmt(r.withFrontends.gc.totalMs)} ms in all ` +
    `(against ${fmt(c256.gc.totalMs)} ms above). No request goes through a frontend: serving them beside costs the ` +
    'in-process path nothing. This row runs last, in a fresh Triton, after every other row has warmed the code; on this ' +
    '2-core machine, where the load generator and V8\'s GC helper threads share the cores, rows of 2 s vary by ±20 % ' +
    'between runs.',
    '',
  ];
  return lines.join('\n');
}

function write(name: string, json: unknown, markdown: string, machine: string): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(path.join(RESULTS_DIR, `${name}.json`), JSON.stringify({ machine, result: json }, null, 2) + '\n');
  writeFileSync(path.join(RESULTS_DIR, `${name}.md`), markdown);
  console.log(markdown);
}

/**
 * Runs one scenario and writes its results, the machine described with the CPU time stolen
 * while it ran. `run` resolves null when the scenario cannot run here (it says why).
 */
async function scenario<R>(
  name: string, run: () => Promise<R | null>, markdown: (r: R, machine: string) => string, chart?: (r: R) => string,
): Promise<void> {
  const stolen = startStealMeter();
  const result = await run();
  if (result === null) return;
  const machine = machineDescription(stolen());
  write(name, result, markdown(result, machine), machine);
  if (chart) writeFileSync(path.join(RESULTS_DIR, `${name}.svg`), chart(result));
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const scenarios = [
    'inprocess', 'http', 'client', 'grpc', 'stream', 'cache', 'ensemble', 'gpu', 'timeline',
    ...SEQUENCE_SIZES.map((s) => s.scenario), ...BENCH_MODELS.map((m) => m.scenario),
  ];
  const unknown = wanted.filter((name) => !scenarios.includes(name));
  if (unknown.length > 0) {
    console.error(`bench: unknown scenario${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `'${n}'`).join(', ')}; ` +
      `the scenarios are: ${scenarios.join(', ')} (none named: all of them)`);
    process.exit(2);
  }
  const want = (name: string): boolean => wanted.length === 0 || wanted.includes(name);
  if (want('inprocess')) await scenario('inprocess', () => runInProcessBench(), inProcessMarkdown);
  if (want('http')) await scenario('http', () => runHttpBench(), httpMarkdown);
  if (want('client')) await scenario('client', () => runClientBench(), clientMarkdown);
  if (want('grpc')) await scenario('grpc', () => runGrpcBench(), grpcMarkdown);
  if (want('stream')) await scenario('stream', () => runStreamBench(), streamMarkdown);
  if (want('cache')) await scenario('cache', () => runCacheBench(), cacheMarkdown);
  if (want('ensemble')) await scenario('ensemble', () => runEnsembleBench(), ensembleMarkdown);
  // null without a CUDA device (it says so)
  if (want('gpu')) await scenario('gpu', () => runGpuBench(), gpuMarkdown);
  if (want('timeline')) await scenario('timeline', () => runTimelineBench(), timelineMarkdown);
  for (const size of SEQUENCE_SIZES) {
    if (want(size.scenario)) await scenario(size.scenario, () => runSequenceBench(size), sequenceMarkdown);
  }
  for (const model of BENCH_MODELS) {
    if (want(model.scenario)) await scenario(model.scenario, () => runOnnxBench(model), onnxMarkdown, onnxChart);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
