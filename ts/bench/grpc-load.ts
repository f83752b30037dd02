/**
 * The gRPC bench's load generator, run as a child process so the client does not share the
 * server's event loop: `concurrency` closed-loop workers send the same pre-encoded, pre-framed
 * ModelInferRequest as gRPC calls over one HTTP/2 connection (node:http2 directly, as h2load or
 * ghz would: a grpc-js client costs the client several times what the server spends per call,
 * and the bench measures servers). Responses are not decoded; a call counts when it ends with
 * grpc-status 0 and a non-empty message.
 *
 * Protocol with the parent (bench/grpc.ts): argv = port, concurrency; the child warms up and
 * sends {type:'ready'}; on {type:'go', durationMs} it measures and sends {type:'result'}.
 */
import { connect, type ClientHttp2Session } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { encodeInferRequest } from '../server/grpc/infer-encode';

export interface LoadChildResult {
  type: 'result';
  requests: number;
  errors: number;
  seconds: number;
  latenciesUs: number[];
}

const PATH = '/inference.GRPCInferenceService/ModelInfer';

/** The request every worker sends: identity model, one FP32 row of 4. */
export function benchRequest(model: string): Buffer {
  return encodeInferRequest({
    modelName: model,
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4] }],
    outputs: [],
    rawInputContents: [Buffer.from(new Float32Array([1, 2, 3, 4]).buffer)],
  });
}

const HEADERS = { ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc', te: 'trailers' };

/** One unary gRPC call: the length-prefixed message out, true when it ended OK with a message. */
function grpcCall(session: ClientHttp2Session, framed: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const stream = session.request(HEADERS);
    let received = 0;
    let status: unknown;
    stream.on('response', (headers) => { status = headers['grpc-status'] ?? status; });
    stream.on('trailers', (trailers) => { status = trailers['grpc-status']; });
    stream.on('data', (chunk: Buffer) => { received += chunk.length; });
    stream.on('close', () => resolve(status === '0' && received > 5));
    stream.on('error', () => resolve(false));
    stream.end(framed);
  });
}

function main(): void {
  const [port, concurrency, model] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] ?? 'identity'];
  const session = connect(`http://127.0.0.1:${port}`);
  const body = benchRequest(model);
  const framed = Buffer.alloc(5 + body.length);
  framed.writeUInt32BE(body.length, 1);
  body.copy(framed, 5);
  const call = (): Promise<boolean> => grpcCall(session, framed);

  let phase: 'warmup' | 'measure' | 'done' = 'warmup';
  let measureEnd = 0;
  const latencies: number[] = [];
  let requests = 0;
  let errors = 0;
  const worker = async (): Promise<void> => {
    while (phase !== 'done') {
      const t0 = performance.now();
      const fine = await call();
      if (phase !== 'measure') continue;
      if (performance.now() > measureEnd) {
        phase = 'done';
        break;
      }
      if (fine) {
        requests++;
        latencies.push((performance.now() - t0) * 1000);
      } else {
        errors++;
      }
    }
  };

  let started = 0;
  process.on('message', (msg: { type: string; durationMs: number }) => {
    if (msg.type !== 'go') return;
    started = performance.now();
    measureEnd = started + msg.durationMs;
    phase = 'measure';
  });
  const workers = Array.from({ length: concurrency }, worker);
  // Warm the channel and the server's paths before the parent starts the clock.
  setTimeout(() => process.send?.({ type: 'ready' }), 500);
  void Promise.all(workers).then(() => {
    const result: LoadChildResult = {
      type: 'result', requests, errors, seconds: (measureEnd - started) / 1000, latenciesUs: latencies,
    };
    process.send?.(result, () => {
      session.close();
      process.exit(0);
    });
  });
}

if (require.main === module) main();
