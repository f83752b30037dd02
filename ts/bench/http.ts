/**
 * Scenario "http": infernode's HTTP frontend serving an identity JS model (FP32[1,16], dynamic
 * batching on, no queue delay) next to the transport ceiling: a bare node:http server that
 * reads, decodes and encodes with the same codec functions (body reader, infer decoder and
 * encoder) and answers the identity itself, with no routing, no model and no queue — inline, and
 * once per event-loop turn as infernode's frontend answers. All are driven by the same load
 * generator in a child process (http-load.ts) at concurrency 1, 16 and 64, with JSON and with
 * binary tensors; the ratio of requests/s is the figure of merit.
 */
import * as http from 'node:http';
import { Triton } from '../triton';
import type { Request } from '../request';
import type { NDArray } from '../tensor';
import type { InferenceAnswer } from '../server/inference-service';
import { readBody, DEFAULT_MAX_INPUT_SIZE } from '../server/http/body';
import { decodeInferRequest, parseHeaderLength, type InferSources } from '../server/http/infer-request';
import { encodeInferResponse } from '../server/http/infer-response';
import { sendBody, sendError } from '../server/http/respond';
import { TurnQueue } from '../server/turn';
import { Logger } from '../log';
import { postRequest } from '../perf/raw-http';
import { loadInChild, type LoadJob, type LoadReport } from './http-load';

export type WireFormat = 'json' | 'binary';

export interface HttpBenchRow {
  format: WireFormat;
  concurrency: number;
  infernode: MeasuredLoad & { requestsPerSecond: number; meanBatchSize: number };
  /** The bare server answering inline, in the callback that read the request. */
  ceiling: MeasuredLoad & { requestsPerSecond: number };
  /** The bare server answering once per event-loop turn, as infernode's frontend does (turn.ts). */
  ceilingPerTurn: MeasuredLoad & { requestsPerSecond: number };
  /** infernode requests/s ÷ inline ceiling requests/s. */
  ratio: number;
  /** infernode requests/s ÷ per-turn ceiling requests/s. */
  ratioPerTurn: number;
}

export interface HttpBenchResult {
  scenario: 'http';
  tensor: string;
  durationMs: number;
  rounds: number;
  rows: HttpBenchRow[];
}

const ELEMENTS = 16;
const MODEL = 'identity';

function bodyFor(format: WireFormat): { body: Buffer; headers: Record<string, string | number> } {
  const values = Array.from({ length: ELEMENTS }, (_, i) => i * 0.5);
  if (format === 'json') {
    return { body: Buffer.from(JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, ELEMENTS], data: values }] })), headers: { 'Content-Type': 'application/json' } };
  }
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, ELEMENTS], parameters: { binary_data_size: ELEMENTS * 4 } }],
    outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
  }));
  return {
    body: Buffer.concat([header, Buffer.from(new Float32Array(values).buffer)]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': header.length },
  };
}

/** The complete request bytes the load generator replays. */
function requestBytes(format: WireFormat): Buffer {
  const { body, headers } = bodyFor(format);
  return postRequest('127.0.0.1', `/v2/models/${MODEL}/infer`, headers, body);
}

/** The ceiling has no shared memory and knows its one model. */
const CEILING_SOURCES: InferSources = {
  sharedMemoryInput: null,
  rawInput: () => ({ name: 'IN', dtype: 'FP32', dims: [ELEMENTS], batching: true, inputCount: 1 }),
  forwardHeaders: null,
};

/**
 * The ceiling: the same body reading, decoding and encoding, the identity answered by the
 * server itself — inline, or (`perTurn`) once per event-loop turn like infernode's frontend.
 */
function startCeiling(perTurn: boolean): Promise<http.Server> {
  const logger = new Logger({ logInfo: false });
  const turn = new TurnQueue();
  const server = http.createServer({ noDelay: true, keepAliveTimeout: 65_000 }, (req, res) => {
    const run = async (): Promise<void> => {
      const headerLength = parseHeaderLength(req.headers['inference-header-content-length']);
      const body = await readBody(req, DEFAULT_MAX_INPUT_SIZE, headerLength ?? 0);
      const { call, binaryByDefault } = decodeInferRequest(body, headerLength, {
        modelName: MODEL, sources: CEILING_SOURCES,
      });
      const input = call.inputs[0].tensor as NDArray;  // CEILING_SOURCES serve no shared memory
      const request = call.outputs?.find((o) => o.name === 'OUT');
      const answer: InferenceAnswer = {
        modelName: MODEL, modelVersion: '1', id: call.id,
        outputs: [{ name: 'OUT', datatype: input.dtype, shape: input.shape, data: input, request }],
      };
      const { headers, body: out } = encodeInferResponse(perTurn ? await turn.run(async () => answer) : answer, binaryByDefault);
      sendBody(req, res, 200, headers, out);
    };
    run().catch((err: unknown) => sendError(req, res, err, logger));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A load job's report with the CPU time this process (the servers) spent per measured request. */
type MeasuredLoad = LoadReport & { serverCpuUs: number };

/**
 * Runs one load job against a server of this process; `serverCpuUs` is this process's CPU time
 * (user + system, every thread) from the end of the warm-up to the report, per request
 * measured. Unlike requests/s it does not move with CPU time the hypervisor gives other guests.
 */
async function load(job: LoadJob): Promise<MeasuredLoad> {
  let from: NodeJS.CpuUsage | undefined;
  const report = await loadInChild(job, () => { from = process.cpuUsage(); });
  const used = process.cpuUsage(from);
  return { ...report, serverCpuUs: report.requests > 0 ? (used.user + used.system) / report.requests : 0 };
}

const rate = (r: LoadReport): number => (r.seconds > 0 ? r.requests / r.seconds : 0);

/**
 * Runs every (format, concurrency) pair against both servers, alternating them, `rounds`
 * times; each side keeps its best round (the machine is shared, so the best round is the one
 * least disturbed by other work).
 */
export async function runHttpBench(
  durationMs = 1500, rounds = 5, formats: readonly WireFormat[] = ['json', 'binary'], concurrencies: readonly number[] = [1, 16, 64],
): Promise<HttpBenchResult> {
  const triton = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  triton.bind({
    modelName: MODEL,
    inferFunc: (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [ELEMENTS] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [ELEMENTS] }],
    config: { maxBatchSize: 64, batcher: { maxQueueDelayMicroseconds: 0 } },
  });
  await triton.run();
  const ceiling = await startCeiling(false);
  const ceilingPerTurn = await startCeiling(true);
  const portOf = (server: http.Server): number => (server.address() as { port: number }).port;
  const ports = { infernode: triton.ports.http!, ceiling: portOf(ceiling), ceilingPerTurn: portOf(ceilingPerTurn) };
  const rows: HttpBenchRow[] = [];
  try {
    for (const format of formats) {
      const request = requestBytes(format).toString('base64');
      for (const concurrency of concurrencies) {
        const job = (port: number): LoadJob => ({ port, request, concurrency, warmupMs: 500, durationMs });
        let ours: HttpBenchRow['infernode'] | null = null;
        let bare: HttpBenchRow['ceiling'] | null = null;
        let bareTurn: HttpBenchRow['ceiling'] | null = null;
        for (let round = 0; round < rounds; round++) {
          const before = triton.model(MODEL).stats();
          const a = await load(job(ports.infernode));
          const after = triton.model(MODEL).stats();
          const b = await load(job(ports.ceiling));
          const c = await load(job(ports.ceilingPerTurn));
          const executions = after.executionCount - before.executionCount;
          const meanBatchSize = executions ? (after.inferenceCount - before.inferenceCount) / executions : 0;
          if (!ours || rate(a) > ours.requestsPerSecond) ours = { ...a, requestsPerSecond: rate(a), meanBatchSize };
          if (!bare || rate(b) > bare.requestsPerSecond) bare = { ...b, requestsPerSecond: rate(b) };
          if (!bareTurn || rate(c) > bareTurn.requestsPerSecond) bareTurn = { ...c, requestsPerSecond: rate(c) };
        }
        rows.push({
          format, concurrency, infernode: ours!, ceiling: bare!, ceilingPerTurn: bareTurn!,
          ratio: ours!.requestsPerSecond / bare!.requestsPerSecond, ratioPerTurn: ours!.requestsPerSecond / bareTurn!.requestsPerSecond,
        });
      }
    }
  } finally {
    await new Promise((resolve) => ceiling.close(resolve));
    await new Promise((resolve) => ceilingPerTurn.close(resolve));
    await triton.stop();
  }
  return { scenario: 'http', tensor: `FP32[1,${ELEMENTS}]`, durationMs, rounds, rows };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The markdown table of bench/results/http.md. */
export function httpMarkdown(r: HttpBenchResult, machine: string): string {
  return [
    `# HTTP frontend — identity JS model, ${r.tensor}, keep-alive, closed loop`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Each cell: best of ${r.rounds} rounds of ${r.durationMs / 1000} s after 0.5 s of warm-up, the three servers alternated; ` +
      'the load generator (one child process, pre-serialized requests, one request in flight per keep-alive connection) shares the machine.',
    '',
    'Ceilings: a bare node:http server doing the same body reading, decoding and encoding with infernode\'s codec functions and ' +
      'answering the identity itself (no routing, model, queue or batcher) — **inline** in the callback that read the request, and ' +
      '**per turn** (answers of one event-loop turn written together, as infernode\'s frontend starts the inferences of a turn together ' +
      'so the dynamic batcher sees them queued together). The per-turn ceiling isolates what the model path costs.',
    '',
    '| format | concurrency | infernode req/s | p50 µs | p99 µs | mean batch | CPU µs/req | ceiling inline req/s | p50 µs | p99 µs | CPU µs/req | ratio | ceiling per turn req/s | CPU µs/req | ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map((row) => `| ${row.format} | ${row.concurrency} | ${fmt(row.infernode.requestsPerSecond)} | ${fmt(row.infernode.p50Us)} | ` +
      `${fmt(row.infernode.p99Us)} | ${fmt(row.infernode.meanBatchSize, 1)} | ${fmt(row.infernode.serverCpuUs, 1)} | ` +
      `${fmt(row.ceiling.requestsPerSecond)} | ${fmt(row.ceiling.p50Us)} | ${fmt(row.ceiling.p99Us)} | ${fmt(row.ceiling.serverCpuUs, 1)} | ` +
      `**${fmt(row.ratio * 100, 1)} %** | ${fmt(row.ceilingPerTurn.requestsPerSecond)} | ${fmt(row.ceilingPerTurn.serverCpuUs, 1)} | ` +
      `**${fmt(row.ratioPerTurn * 100, 1)} %** |`),
    '',
    'What separates infernode from the ceilings is the model path (the native enqueue per request; per batch the dispatch, ' +
      'the callable, output collection and the native completion) and the garbage it makes; the frontend itself (routing, ' +
      'restrictions, cancellation signal, per-turn start) is a few percent. On a 2-core machine shared with the load generator ' +
      'and other work, cells vary by ±15 % between runs. See docs/http.md.',
    '',
    '"CPU µs/req": the server process\'s CPU time (every thread, user and system) over the measured window, per request. ' +
      'Requests/s at concurrency 1 is a latency and moves with the CPU time the hypervisor takes (the machine line above); ' +
      'CPU per request is what the server itself spends, and is the steadier figure for comparing the servers on a shared VM.',
    '',
  ].join('\n');
}
