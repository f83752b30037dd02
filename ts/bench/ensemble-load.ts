/**
 * The load generator of the ensemble bench, run as a child process so its CPU is not the
 * server's. It keeps `concurrency` keep-alive connections, each with one end-to-end request in
 * flight (closed loop), in one of three client modes against the same server:
 * - 'ensemble': one KServe binary request to the ensemble (raw row → logits);
 * - 'two-call': what a client does without ensembles: a binary request to the preprocessing
 *   model, then, once its answer has come, a second binary request to the MLP carrying the
 *   first answer's output (its shape and bytes read from the answer's JSON header and binary
 *   part) — two round trips per answer;
 * - 'mlp-only': the ceiling, one binary request straight to the MLP with the raw row (no
 *   preprocessing anywhere): what any single round trip per answer could reach on this machine.
 * Requests rotate over the job's input rows; the first answer to each row is sent back so the
 * parent can check both modes compute the same thing. Like http-load.ts it works on raw sockets
 * and parses only what it must (status, lengths, the small JSON header), so it stays cheap.
 *
 * Protocol: the parent forks this file and sends one EnsembleLoadJob; the child answers with one
 * EnsembleLoadReport and exits.
 */
import * as net from 'node:net';

export type ClientMode = 'ensemble' | 'two-call' | 'mlp-only';

/** Names of the models and tensors the client addresses (the bench repository's). */
export interface PipelineNames {
  ensemble: string;
  preprocess: string;
  mlp: string;
  /** Input of the ensemble and of the preprocessing model. */
  rawInput: string;
  /** Output of the preprocessing model. */
  features: string;
  /** Input of the MLP (the two-call client sends it the preprocessing output). */
  mlpInput: string;
  /** Output of the MLP and of the ensemble. */
  logits: string;
}

export interface EnsembleLoadJob {
  port: number;
  mode: ClientMode;
  names: PipelineNames;
  /** Input rows (FP32 bytes of one row each), base64. */
  rows: string[];
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

export interface EnsembleLoadReport {
  /** End-to-end answers (one per ensemble request, one per pair of calls) in the measured window. */
  requests: number;
  errors: number;
  /** The first failed answer's status and body, '' when none failed. */
  firstError: string;
  seconds: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
  /** Every answer's latency in the measured window, µs (the parent merges windows of one mode). */
  latenciesUs: number[];
  /** This process's CPU time (user + system) in the measured window, µs. */
  clientCpuUs: number;
  /** Per input row: the first answer's logits (FP32 bytes, base64), null when none came. */
  logits: (string | null)[];
  /** Per input row (two-call mode only): the first preprocessing answer's output, base64. */
  features: (string | null)[];
}

const HEADER_END = Buffer.from('\r\n\r\n');

interface Response {
  status: number;
  /** The response body (JSON header, then binary outputs). */
  body: Buffer;
  /** Length of the JSON header within the body (the whole body when absent). */
  jsonLength: number;
  /** Where the response ends in the buffer it was read from. */
  end: number;
}

/** The first complete response in `buf`; null while incomplete. */
function readResponse(buf: Buffer): Response | null {
  const head = buf.indexOf(HEADER_END);
  if (head < 0) return null;
  const text = buf.toString('latin1', 0, head);
  const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1] ?? 0);
  const end = head + 4 + length;
  if (buf.length < end) return null;
  const json = /\r\ninference-header-content-length:\s*(\d+)/i.exec(text);
  return { status: Number(text.slice(9, 12)), body: buf.subarray(head + 4, end), jsonLength: json ? Number(json[1]) : length, end };
}

/** One HTTP/1.1 request carrying a KServe binary inference request of one FP32 input. */
export function inferRequest(model: string, input: string, shape: readonly number[], data: Buffer, output: string): Buffer {
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: input, datatype: 'FP32', shape, parameters: { binary_data_size: data.length } }],
    outputs: [{ name: output, parameters: { binary_data: true } }],
  }));
  const head = `POST /v2/models/${model}/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n` +
    `Inference-Header-Content-Length: ${header.length}\r\nContent-Length: ${header.length + data.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), header, data]);
}

/** The single binary output of an answer: its shape and bytes (a view of the body). */
function binaryOutput(r: Response): { shape: number[]; data: Buffer } {
  const header = JSON.parse(r.body.toString('utf8', 0, r.jsonLength)) as {
    outputs: { shape: number[]; parameters?: { binary_data_size?: number } }[];
  };
  const out = header.outputs[0]!;
  const size = out.parameters?.binary_data_size ?? 0;
  return { shape: out.shape, data: r.body.subarray(r.jsonLength, r.jsonLength + size) };
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs one job against 127.0.0.1:`port`. */
export function runEnsembleJob(job: EnsembleLoadJob): Promise<EnsembleLoadReport> {
  const { names } = job;
  const rows = job.rows.map((r) => Buffer.from(r, 'base64'));
  const shapeOf = (row: Buffer): number[] => [1, row.length / 4];
  const firstRequests = rows.map((row) => {
    if (job.mode === 'ensemble') return inferRequest(names.ensemble, names.rawInput, shapeOf(row), row, names.logits);
    if (job.mode === 'mlp-only') return inferRequest(names.mlp, names.mlpInput, shapeOf(row), row, names.logits);
    return inferRequest(names.preprocess, names.rawInput, shapeOf(row), row, names.features);
  });
  const logits: (string | null)[] = rows.map(() => null);
  const features: (string | null)[] = rows.map(() => null);
  const latencies: number[] = [];
  let errors = 0;
  let firstError = '';
  let next = 0;
  const start = performance.now();
  const measureFrom = start + job.warmupMs;
  const stopAt = measureFrom + job.durationMs;
  let cpuAtStart = process.cpuUsage();
  const cpuTimer = setTimeout(() => { cpuAtStart = process.cpuUsage(); }, job.warmupMs);
  let open = job.concurrency;
  return new Promise((resolve, reject) => {
    const finish = (): void => {
      clearTimeout(cpuTimer);
      const cpu = process.cpuUsage(cpuAtStart);
      const seconds = (performance.now() - measureFrom) / 1000;
      const sorted = Float64Array.from(latencies).sort();
      const sum = latencies.reduce((a, b) => a + b, 0);
      resolve({
        requests: latencies.length, errors, firstError, seconds,
        p50Us: percentile(sorted, 50), p99Us: percentile(sorted, 99), meanUs: latencies.length ? sum / latencies.length : 0,
        latenciesUs: latencies, clientCpuUs: cpu.user + cpu.system, logits, features,
      });
    };
    for (let i = 0; i < job.concurrency; i++) {
      const socket = net.connect(job.port, '127.0.0.1');
      socket.setNoDelay(true);
      let pending: Buffer = Buffer.alloc(0);
      let startedAt = 0;
      let row = 0;
      /** 1: waiting for the first (or only) answer; 2: for the MLP's answer (two-call). */
      let stage: 1 | 2 = 1;
      const begin = (): void => {
        row = next++ % rows.length;
        stage = 1;
        startedAt = performance.now();
        socket.write(firstRequests[row]!);
      };
      /** The end-to-end answer (or failure) of the request begun at `startedAt`. */
      const settle = (r: Response): void => {
        const now = performance.now();
        if (startedAt >= measureFrom) {
          if (r.status === 200) latencies.push((now - startedAt) * 1000);
          else errors++;
        }
        if (r.status !== 200 && firstError === '') firstError = `${r.status} ${r.body.toString('utf8')}`;
        if (r.status === 200 && logits[row] === null) logits[row] = Buffer.from(binaryOutput(r).data).toString('base64');
        if (now < stopAt) begin();
        else socket.end();
      };
      socket.on('connect', begin);
      socket.on('error', reject);
      socket.on('close', () => {
        if (--open === 0) finish();
      });
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        const r = readResponse(pending);
        if (!r) return;
        pending = pending.subarray(r.end);
        if (job.mode !== 'two-call' || stage === 2 || r.status !== 200) {
          settle(r);
          return;
        }
        // Two-call: the preprocessing answer's output becomes the MLP's input.
        const out = binaryOutput(r);
        if (features[row] === null) features[row] = Buffer.from(out.data).toString('base64');
        stage = 2;
        socket.write(inferRequest(names.mlp, names.mlpInput, out.shape, out.data, names.logits));
      });
    }
  });
}

if (require.main === module && process.send) {
  process.once('message', (job: EnsembleLoadJob) => {
    runEnsembleJob(job).then((report) => {
      process.send!(report, () => process.exit(0));
    }, (err: unknown) => {
      console.error(err);
      process.exit(1);
    });
  });
}
