/**
 * Scenario "grpc": ModelInfer on an identity JS model (FP32 [1,4], dynamic batching) served by
 * infernode's gRPC frontend, against a bare grpc-js echo server that decodes and encodes the same
 * messages with the same service definition and codec (the transport ceiling), at concurrency
 * 1, 16 and 64. The load comes from child processes (grpc-load.ts), so clients never share the
 * server's event loop; the server's CPU use over each window is reported beside the rates.
 */
import { fork } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { Triton } from '../triton';
import type { Request } from '../request';
import type { InferRequestMessage } from '../server/grpc/infer-codec';
import type { InferResponseFields } from '../server/grpc/infer-encode';
import { SERVER_OPTIONS, forServer, inferenceServiceDefinition } from '../server/grpc/protos';
import { grpcServerOptions } from '../server/grpc/server';
import type { LoadChildResult } from './grpc-load';

export interface GrpcRow {
  server: 'infernode' | 'grpc-js echo';
  concurrency: number;
  clientProcesses: number;
  requestsPerSecond: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  errors: number;
  /** Server process CPU time over the window / wall time (1.0 = one core busy). */
  serverCpu: number;
  /** Server process CPU time per answered request (µs). */
  serverCpuUsPerRequest: number;
  /** infernode: inferences per model execution over the window (0 for the echo server). */
  meanBatch: number;
}

type Counts = () => { executions: number; inferences: number };

export interface GrpcResult {
  scenario: 'grpc';
  durationMs: number;
  rounds: number;
  /** The median round of each server and concurrency (by requests/s). */
  rows: GrpcRow[];
  /** infernode requests/s ÷ echo requests/s, by concurrency (medians). */
  ratios: Record<string, number>;
  /**
   * echo CPU µs per request ÷ infernode CPU µs per request, by concurrency (medians): the
   * throughput ratio the two reach when the server process, not the client, is the bottleneck.
   */
  cpuRatios: Record<string, number>;
}

export const CONCURRENCIES = [1, 16, 64];

/** The ceiling: ModelInfer that answers each request's inputs as its outputs. */
async function startEchoServer(): Promise<{ port: number; stop: () => void }> {
  const server = new Server(grpcServerOptions({}));
  const definition = forServer(inferenceServiceDefinition(SERVER_OPTIONS));
  server.addService({ ModelInfer: definition.ModelInfer }, {
    ModelInfer: (call: ServerUnaryCall<InferRequestMessage, InferResponseFields>, callback: sendUnaryData<InferResponseFields>) => {
      const m = call.request;
      callback(null, {
        modelName: m.modelName, modelVersion: '1', id: m.id,
        outputs: m.inputs.map((t) => ({ name: t.name.replace(/^IN/, 'OUT'), datatype: t.datatype, shape: t.shape as number[] })),
        rawOutputContents: m.rawInputContents,
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return { port, stop: () => server.forceShutdown() };
}

const identity = (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN }));

async function startInfernode(): Promise<{ port: number; stop: () => Promise<void>; counts: Counts }> {
  const triton = new Triton({ config: { allowHttp: false, allowMetrics: false, grpcAddress: '127.0.0.1', grpcPort: 0, logInfo: false } });
  triton.bind({
    modelName: 'identity', inferFunc: identity,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [4] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
    config: { maxBatchSize: 256, batcher: { maxQueueDelayMicroseconds: 0 } },
  });
  await triton.run();
  const counts: Counts = () => {
    const st = triton.model('identity').stats();
    return { executions: st.executionCount, inferences: st.inferenceCount };
  };
  return { port: triton.ports.grpc!, stop: async () => { await triton.stop(); }, counts };
}

/** Client processes for a concurrency: enough to keep the server busy, leaving it a core. */
function clientProcesses(concurrency: number): number {
  const spare = Math.max(1, os.cpus().length - 2);
  return Math.max(1, Math.min(concurrency, spare, Math.ceil(concurrency / 16)));
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

/** Runs the load children against `port` and merges their results. */
async function measure(port: number, concurrency: number, durationMs: number, counts?: Counts): Promise<Omit<GrpcRow, 'server'>> {
  const n = clientProcesses(concurrency);
  const script = path.join(__dirname, 'grpc-load.js');
  const children = Array.from({ length: n }, (_, i) => {
    const share = Math.floor(concurrency / n) + (i < concurrency % n ? 1 : 0);
    return fork(script, [String(port), String(share)], { stdio: 'inherit' });
  });
  const ready = children.map((c) => new Promise<void>((resolve) => c.once('message', () => resolve())));
  const results = children.map((c) => new Promise<LoadChildResult>((resolve, reject) => {
    c.on('message', (m: { type: string }) => { if (m.type === 'result') resolve(m as LoadChildResult); });
    c.once('exit', (code) => { if (code !== 0) reject(new Error(`load process exited with ${code}`)); });
  }));
  await Promise.all(ready);
  const before = counts?.();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (const c of children) c.send({ type: 'go', durationMs });
  const done = await Promise.all(results);
  const cpu = process.cpuUsage(cpu0);
  const after = counts?.();
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  const latencies = Float64Array.from(done.flatMap((r) => r.latenciesUs)).sort();
  const sum = latencies.reduce((a, b) => a + b, 0);
  return {
    concurrency,
    clientProcesses: n,
    requestsPerSecond: done.reduce((a, r) => a + r.requests / r.seconds, 0),
    meanUs: latencies.length ? sum / latencies.length : 0,
    p50Us: percentile(latencies, 50),
    p99Us: percentile(latencies, 99),
    errors: done.reduce((a, r) => a + r.errors, 0),
    serverCpu: (cpu.user + cpu.system) / wallUs,
    serverCpuUsPerRequest: latencies.length ? (cpu.user + cpu.system) / latencies.length : 0,
    meanBatch: before && after && after.executions > before.executions
      ? (after.inferences - before.inferences) / (after.executions - before.executions) : 0,
  };
}

function median<T>(items: T[], key: (t: T) => number): T {
  return [...items].sort((a, b) => key(a) - key(b))[Math.floor(items.length / 2)];
}

/**
 * Measures both servers at each concurrency, `rounds` times, interleaved (echo, infernode, echo,
 * ...) so drift in the machine's load affects both alike; reports the median round of each.
 */
export async function runGrpcBench(durationMs = 3000, rounds = 3): Promise<GrpcResult> {
  const all: GrpcRow[] = [];
  const echo = await startEchoServer();
  const infernode = await startInfernode();
  for (let round = 0; round < rounds; round++) {
    for (const c of CONCURRENCIES) {
      all.push({ server: 'grpc-js echo', ...(await measure(echo.port, c, durationMs)) });
      all.push({ server: 'infernode', ...(await measure(infernode.port, c, durationMs, infernode.counts)) });
    }
  }
  echo.stop();
  await infernode.stop();
  const rows: GrpcRow[] = [];
  const ratios: Record<string, number> = {};
  const cpuRatios: Record<string, number> = {};
  for (const c of CONCURRENCIES) {
    const of = (server: GrpcRow['server']): GrpcRow[] => all.filter((r) => r.server === server && r.concurrency === c);
    const a = median(of('infernode'), (r) => r.requestsPerSecond);
    const b = median(of('grpc-js echo'), (r) => r.requestsPerSecond);
    rows.push(b, a);
    ratios[String(c)] = b.requestsPerSecond ? a.requestsPerSecond / b.requestsPerSecond : 0;
    const cpuA = median(of('infernode'), (r) => r.serverCpuUsPerRequest).serverCpuUsPerRequest;
    const cpuB = median(of('grpc-js echo'), (r) => r.serverCpuUsPerRequest).serverCpuUsPerRequest;
    cpuRatios[String(c)] = cpuA ? cpuB / cpuA : 0;
  }
  return { scenario: 'grpc', durationMs, rounds, rows, ratios, cpuRatios };
}

const fmt = (n: number, digits = 1): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const pct = (v: number): string => `**${fmt(v * 100, 0)}%**`;

/** The results table (bench/results/grpc.md). */
export function grpcMarkdown(r: GrpcResult, machine: string): string {
  return [
    '# gRPC `ModelInfer` — identity JS model, FP32 [1,4], raw contents',
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Window: ${r.durationMs} ms per row after a 500 ms warm-up, ${r.rounds} interleaved rounds, median round shown; ` +
      'load from separate client processes (gRPC calls over node:http2 directly, one connection each).',
    '',
    'The ceiling is a bare grpc-js server decoding and encoding the same ModelInferRequest/Response with the',
    'same service definition and codec and echoing the inputs; infernode runs the full path (checks, native',
    'dynamic batcher, JS callable, response). Server CPU = server process CPU time / wall time; CPU µs/req =',
    'server process CPU time per answered request; mean batch = inferences per model execution (infernode).',
    '',
    '| concurrency | server | requests/s | mean µs | p50 µs | p99 µs | server CPU | CPU µs/req | mean batch | client procs | errors |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map((row) => `| ${row.concurrency} | ${row.server} | ${fmt(row.requestsPerSecond, 0)} | ${fmt(row.meanUs)} | ` +
      `${fmt(row.p50Us)} | ${fmt(row.p99Us)} | ${fmt(row.serverCpu, 2)} | ${fmt(row.serverCpuUsPerRequest)} | ` +
      `${row.meanBatch ? fmt(row.meanBatch) : '—'} | ${row.clientProcesses} | ${row.errors} |`),
    '',
    '**infernode ÷ ceiling, requests/s:** ' +
      CONCURRENCIES.map((c) => `concurrency ${c}: ${pct(r.ratios[String(c)])}`).join(', ') + ' (target ≥ 85% at 16 and 64).  ',
    '**Ceiling CPU µs/req ÷ infernode CPU µs/req** (the ratio when the server is the bottleneck): ' +
      CONCURRENCIES.map((c) => `concurrency ${c}: ${pct(r.cpuRatios[String(c)])}`).join(', ') + '.',
    '',
  ].join('\n');
}
