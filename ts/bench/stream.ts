/**
 * Scenario "stream": a decoupled JS model that yields 32 small responses per request, served by
 * infernode over gRPC ModelStreamInfer and HTTP generate_stream, against the same generator behind
 * a plain node:http server-sent-events endpoint (the transport's ceiling), at 1, 16 and 64
 * concurrent streams: responses/s, time to first response p50/p99, and the server process's
 * event-loop delay. Clients run in child processes (stream-load.ts). gRPC's own ceiling: the same
 * generator behind a plain grpc-js ModelStreamInfer service (the same messages, one
 * `call.write()` per response, no batching, no model), what a Node developer writes with grpc-js.
 */
import { fork } from 'node:child_process';
import * as http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import type { Request } from '../request';
import { Triton } from '../triton';
import type { InferRequestMessage, ParamMap } from '../server/grpc/infer-codec';
import type { InferResponseFields } from '../server/grpc/infer-encode';
import { SERVER_OPTIONS, forServer, inferenceServiceDefinition, isDecodeFailure, type DecodeFailure } from '../server/grpc/protos';
import { grpcServerOptions } from '../server/grpc/server';
import type { StreamChildResult } from './stream-load';

export const STREAM_CONCURRENCIES = [1, 16, 64];
const RESPONSES = 32;
const MODEL = 'stream32';

export type StreamServer = 'infernode gRPC stream' | 'infernode HTTP generate_stream' | 'node:http SSE' | 'grpc-js stream';

export interface StreamRow {
  server: StreamServer;
  concurrency: number;
  responsesPerSecond: number;
  requestsPerSecond: number;
  firstResponseP50Us: number;
  firstResponseP99Us: number;
  errors: number;
  /** The server process's event-loop delay over the window, p99 (ms). */
  eventLoopDelayP99Ms: number;
  /** Server process CPU time over the window / wall time (1.0 = one core busy). */
  serverCpu: number;
  /** Server process CPU time per response (µs): what the server spends, whatever limits the rate. */
  serverCpuUsPerResponse: number;
}

export interface StreamResult {
  scenario: 'stream';
  durationMs: number;
  responsesPerRequest: number;
  rows: StreamRow[];
  /** infernode responses/s ÷ the SSE peer's, by transport and concurrency. */
  ratios: Record<string, number>;
}

/** The step outputs both servers stream: one small FP32 row per response. */
function* countdown(count: number): Generator<Float32Array> {
  for (let k = 0; k < count; k++) yield new Float32Array([k, k + 1, k + 2, k + 3]);
}

/** PyTriton's form: one list per step, an entry per request of the batch. */
function* streamer(requests: Request[]): Generator<({ OUT: Float32Array } | null)[]> {
  const counts = requests.map((r) => (r.data.N.data as Int32Array)[0]);
  const steps = counts.map((n) => countdown(n));
  for (let k = 0; k < Math.max(...counts); k++) {
    yield steps.map((s, i) => (k < counts[i] ? { OUT: s.next().value as Float32Array } : null));
  }
}

async function startInfernode(): Promise<{ grpc: number; http: number; stop: () => Promise<void> }> {
  const triton = new Triton({ config: {
    grpcAddress: '127.0.0.1', grpcPort: 0, httpAddress: '127.0.0.1', httpPort: 0, allowMetrics: false, logInfo: false,
  } });
  triton.bind({
    modelName: MODEL, inferFunc: streamer as never,
    inputs: [{ name: 'N', dtype: 'INT32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
    config: { decoupled: true, maxBatchSize: 64 },
  });
  await triton.run();
  return { grpc: triton.ports.grpc!, http: triton.ports.http!, stop: async () => { await triton.stop(); } };
}

/** The ceiling: the same generator behind node:http, one `data:` event per response. */
async function startPeer(): Promise<{ port: number; stop: () => void }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = Number((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { N: number }).N);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const out of countdown(n)) res.write(`data: ${JSON.stringify({ model_name: MODEL, OUT: Array.from(out) })}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, stop: () => server.close() };
}

const NOT_FINAL: ParamMap = new Map([['triton_final_response', { kind: 'bool', value: false }]]);
const FINAL: ParamMap = new Map([['triton_final_response', { kind: 'bool', value: true }]]);
type PeerCall = ServerDuplexStream<InferRequestMessage | DecodeFailure, { errorMessage?: string; inferResponse?: InferResponseFields }>;

/**
 * gRPC's ceiling: the same generator behind a plain grpc-js ModelStreamInfer service (the
 * project's message codec, so the wire bytes are infernode's), one `call.write()` per response
 * and the empty final response the client asks for.
 */
async function startGrpcPeer(): Promise<{ port: number; stop: () => Promise<void> }> {
  const server = new Server(grpcServerOptions({}));
  const definition = forServer(inferenceServiceDefinition(SERVER_OPTIONS));
  server.addService({ ModelStreamInfer: definition.ModelStreamInfer }, {
    ModelStreamInfer: (call: PeerCall) => {
      call.on('data', (m: InferRequestMessage | DecodeFailure) => {
        if (isDecodeFailure(m)) {
          call.write({ errorMessage: m.decodeError.message });
          return;
        }
        const raw = m.rawInputContents[0]!;
        const n = new Int32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + 4))[0];
        for (const out of countdown(n)) {
          call.write({ inferResponse: {
            modelName: MODEL, modelVersion: '1', id: m.id, parameters: NOT_FINAL,
            outputs: [{ name: 'OUT', datatype: 'FP32', shape: [1, 4] }], rawOutputContents: [new Uint8Array(out.buffer)],
          } });
        }
        call.write({ inferResponse: { modelName: MODEL, modelVersion: '1', id: m.id, parameters: FINAL, outputs: [], rawOutputContents: [] } });
      });
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return { port, stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** One cell: `concurrency` streams from child processes for `durationMs`. */
async function measure(kind: 'grpc' | 'sse', port: number, target: string, concurrency: number, durationMs: number)
  : Promise<Omit<StreamRow, 'server'>> {
  const script = path.join(__dirname, 'stream-load.js');
  const processes = Math.min(2, concurrency);
  const children = Array.from({ length: processes }, (_, i) => {
    const share = Math.floor(concurrency / processes) + (i < concurrency % processes ? 1 : 0);
    return fork(script, [kind, String(port), target, String(share)], { stdio: 'inherit' });
  });
  await Promise.all(children.map((c) => new Promise<void>((resolve) => c.once('message', () => resolve()))));
  const results = children.map((c) => new Promise<StreamChildResult>((resolve) => {
    c.on('message', (m: { type: string }) => { if (m.type === 'result') resolve(m as StreamChildResult); });
  }));
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpu0 = process.cpuUsage();
  for (const c of children) c.send({ type: 'go', durationMs });
  const done = await Promise.all(results);
  const cpu = process.cpuUsage(cpu0);
  delay.disable();
  const seconds = Math.max(...done.map((r) => r.seconds));
  const first = done.flatMap((r) => r.firstResponseUs);
  const responses = done.reduce((n, r) => n + r.responses, 0);
  const cpuUs = cpu.user + cpu.system;
  return {
    concurrency,
    serverCpu: cpuUs / 1e6 / seconds,
    serverCpuUsPerResponse: responses > 0 ? cpuUs / responses : 0,
    responsesPerSecond: responses / seconds,
    requestsPerSecond: done.reduce((n, r) => n + r.requests, 0) / seconds,
    firstResponseP50Us: percentile(first, 50),
    firstResponseP99Us: percentile(first, 99),
    errors: done.reduce((n, r) => n + r.errors, 0),
    eventLoopDelayP99Ms: delay.percentile(99) / 1e6,
  };
}

export async function runStreamBench(durationMs = 3000): Promise<StreamResult> {
  const infernode = await startInfernode();
  const peer = await startPeer();
  const grpcPeer = await startGrpcPeer();
  const rows: StreamRow[] = [];
  try {
    for (const concurrency of STREAM_CONCURRENCIES) {
      rows.push({ server: 'infernode gRPC stream', ...await measure('grpc', infernode.grpc, MODEL, concurrency, durationMs) });
      rows.push({ server: 'infernode HTTP generate_stream',
        ...await measure('sse', infernode.http, `/v2/models/${MODEL}/generate_stream`, concurrency, durationMs) });
      rows.push({ server: 'node:http SSE', ...await measure('sse', peer.port, '/stream', concurrency, durationMs) });
      rows.push({ server: 'grpc-js stream', ...await measure('grpc', grpcPeer.port, MODEL, concurrency, durationMs) });
    }
  } finally {
    peer.stop();
    await grpcPeer.stop();
    await infernode.stop();
  }
  const ratios: Record<string, number> = {};
  for (const concurrency of STREAM_CONCURRENCIES) {
    const of = (server: StreamServer) => rows.find((r) => r.server === server && r.concurrency === concurrency)!.responsesPerSecond;
    const ceiling = of('node:http SSE');
    ratios[`grpc@${concurrency}`] = ceiling > 0 ? of('infernode gRPC stream') / ceiling : 0;
    ratios[`http@${concurrency}`] = ceiling > 0 ? of('infernode HTTP generate_stream') / ceiling : 0;
    const grpcCeiling = of('grpc-js stream');
    ratios[`grpc-js@${concurrency}`] = grpcCeiling > 0 ? of('infernode gRPC stream') / grpcCeiling : 0;
  }
  return { scenario: 'stream', durationMs, responsesPerRequest: RESPONSES, rows, ratios };
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function streamMarkdown(r: StreamResult, machine: string): string {
  return [
    `# Streaming — a decoupled JS model yielding ${r.responsesPerRequest} small responses per request`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}`,
    '',
    'infernode serves the model over gRPC `ModelStreamInfer` and HTTP `generate_stream`; the ceiling is the',
    'same generator behind a plain `node:http` server-sent-events endpoint (no batching, no model, no',
    'protocol beyond SSE). Clients run in child processes on the same machine. Target: ≥ 80% of the',
    "ceiling's responses/s at 64 streams. gRPC's own ceiling: the same generator behind a plain grpc-js",
    'ModelStreamInfer service (same messages, one `call.write()` per response, no model).',
    '',
    '| server | streams | responses/s | requests/s | first response p50 µs | p99 µs | event-loop delay p99 ms | server CPU | server CPU µs/response | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map((row) => `| ${row.server} | ${row.concurrency} | ${fmt(row.responsesPerSecond)} | ${fmt(row.requestsPerSecond)} | ` +
      `${fmt(row.firstResponseP50Us)} | ${fmt(row.firstResponseP99Us)} | ${fmt(row.eventLoopDelayP99Ms, 1)} | ` +
      `${fmt(row.serverCpu, 2)} | ${fmt(row.serverCpuUsPerResponse, 1)} | ${row.errors} |`),
    '',
    '| ratio to the SSE ceiling (responses/s) | 1 | 16 | 64 |',
    '| --- | ---: | ---: | ---: |',
    `| gRPC ModelStreamInfer | ${STREAM_CONCURRENCIES.map((c) => fmt(r.ratios[`grpc@${c}`], 2)).join(' | ')} |`,
    `| HTTP generate_stream | ${STREAM_CONCURRENCIES.map((c) => fmt(r.ratios[`http@${c}`], 2)).join(' | ')} |`,
    '',
    '| ratio to the grpc-js ceiling (responses/s) | 1 | 16 | 64 |',
    '| --- | ---: | ---: | ---: |',
    `| gRPC ModelStreamInfer | ${STREAM_CONCURRENCIES.map((c) => fmt(r.ratios[`grpc-js@${c}`], 2)).join(' | ')} |`,
    '',
  ].join('\n');
}
