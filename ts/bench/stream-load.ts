/**
 * The streaming bench's load generator, run as a child process so clients never share the
 * server's event loop: `concurrency` closed-loop workers each open one stream request at a time
 * and read all of its responses before the next. Kinds:
 *   grpc — one ModelStreamInfer call per worker (node:http2 directly, as the gRPC bench does),
 *          each request asking for the empty final response that tells where it ends;
 *   sse  — one POST per request whose body streams server-sent events (`data: ...\n\n`) until the
 *          response ends (infernode's generate_stream, or the peer's plain SSE endpoint).
 * Measured per request: the time to its first response; counted: responses and requests.
 *
 * Protocol with the parent (bench/stream.ts): argv = kind, port, path-or-model, concurrency; the
 * child warms up and sends {type:'ready'}; on {type:'go', durationMs} it measures and sends
 * {type:'result'}.
 */
import * as http from 'node:http';
import { connect, type ClientHttp2Stream } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { decodeStreamResponse } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';

export interface StreamChildResult {
  type: 'result';
  requests: number;
  responses: number;
  errors: number;
  seconds: number;
  firstResponseUs: number[];
}

/** One request's outcome: how many responses, and when the first came (ms after sending). */
interface Streamed {
  responses: number;
  firstMs: number;
  ok: boolean;
}

/** Splits a gRPC stream's bytes into messages (5-byte prefix: flag, big-endian length). */
export class Deframer {
  #pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer, onMessage: (message: Buffer) => void): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (this.#pending.length >= 5) {
      const length = this.#pending.readUInt32BE(1);
      if (this.#pending.length < 5 + length) return;
      onMessage(this.#pending.subarray(5, 5 + length));
      this.#pending = this.#pending.subarray(5 + length);
    }
  }
}

/** A worker's ModelStreamInfer call: requests go one after another, each read to its final response. */
function grpcWorker(port: number, model: string): () => Promise<Streamed> {
  const session = connect(`http://127.0.0.1:${port}`);
  const stream: ClientHttp2Stream = session.request({
    ':method': 'POST', ':path': '/inference.GRPCInferenceService/ModelStreamInfer', 'content-type': 'application/grpc', te: 'trailers',
  });
  const body = encodeInferRequest({
    modelName: model, id: 'bench',
    parameters: new Map([['triton_enable_empty_final_response', { kind: 'bool', value: true }]]),
    inputs: [{ name: 'N', datatype: 'INT32', shape: [1, 1] }], outputs: [],
    rawInputContents: [Buffer.from(new Int32Array([32]).buffer)],
  });
  const framed = Buffer.alloc(5 + body.length);
  framed.writeUInt32BE(body.length, 1);
  body.copy(framed, 5);
  const deframer = new Deframer();
  let current: { resolve: (s: Streamed) => void; t0: number; result: Streamed } | null = null;
  stream.on('data', (chunk: Buffer) => deframer.push(chunk, (message) => {
    if (!current) return;
    const response = decodeStreamResponse(message);
    const r = current.result;
    if (response.errorMessage) r.ok = false;
    const final = response.inferResponse?.parameters?.get('triton_final_response')?.value === true;
    if (!final && !response.errorMessage) {
      if (r.responses === 0) r.firstMs = performance.now() - current.t0;
      r.responses++;
      return;
    }
    const done = current;
    current = null;
    done.resolve(done.result);
  }));
  const fail = (): void => {
    const done = current;
    current = null;
    done?.resolve({ ...done.result, ok: false });
  };
  stream.on('error', fail);
  stream.on('close', fail);
  return () => new Promise((resolve) => {
    current = { resolve, t0: performance.now(), result: { responses: 0, firstMs: 0, ok: true } };
    stream.write(framed);
  });
}

/** One POST whose response streams server-sent events; each `data:` event is one response. */
function sseWorker(port: number, path: string): () => Promise<Streamed> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ N: 32 });
  return () => new Promise((resolve) => {
    const t0 = performance.now();
    const result: Streamed = { responses: 0, firstMs: 0, ok: true };
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: {
      'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
    } }, (res) => {
      if (res.statusCode !== 200) result.ok = false;
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        pending += text;
        let end: number;
        while ((end = pending.indexOf('\n\n')) >= 0) {
          const event = pending.slice(0, end);
          pending = pending.slice(end + 2);
          if (!event.startsWith('data:')) continue;
          if (event.includes('"error"')) result.ok = false;
          if (result.responses === 0) result.firstMs = performance.now() - t0;
          result.responses++;
        }
      });
      res.on('end', () => resolve(result));
      res.on('error', () => resolve({ ...result, ok: false }));
    });
    req.on('error', () => resolve({ ...result, ok: false }));
    req.end(body);
  });
}

function main(): void {
  const [kind, port, target, concurrency] = [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
  const workers = Array.from({ length: concurrency }, () => (kind === 'grpc' ? grpcWorker(port, target) : sseWorker(port, target)));
  let phase: 'warmup' | 'measure' | 'done' = 'warmup';
  let measureEnd = 0;
  const first: number[] = [];
  let requests = 0;
  let responses = 0;
  let errors = 0;
  const run = async (call: () => Promise<Streamed>): Promise<void> => {
    while (phase !== 'done') {
      const r = await call();
      if (phase !== 'measure') continue;
      if (performance.now() > measureEnd) {
        phase = 'done';
        break;
      }
      if (!r.ok) {
        errors++;
        continue;
      }
      requests++;
      responses += r.responses;
      first.push(r.firstMs * 1000);
    }
  };
  const running = Promise.all(workers.map(run));
  setTimeout(() => process.send!({ type: 'ready' }), 500);
  process.on('message', (m: { type: string; durationMs: number }) => {
    if (m.type !== 'go') return;
    const start = performance.now();
    measureEnd = start + m.durationMs;
    phase = 'measure';
    void running.then(() => {
      const result: StreamChildResult = {
        type: 'result', requests, responses, errors, seconds: (performance.now() - start) / 1000, firstResponseUs: first,
      };
      process.send!(result, () => process.exit(0));
    });
  });
}

if (require.main === module) main();
