/**
 * The gRPC bench's load generator, run as a child process so the client does not share the
 * server's event loop: `concurrency` closed-loop workers send the same pre-encoded
 * ModelInferRequest over one channel. Responses are not decoded (the client's cost stays out of
 * the measurement; a response of zero bytes counts as an error).
 *
 * Protocol with the parent (bench/grpc.ts): argv = port, concurrency; the child warms up and
 * sends {type:'ready'}; on {type:'go', durationMs} it measures and sends {type:'result'}.
 */
import { Client, Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
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

function main(): void {
  const [port, concurrency, model] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] ?? 'identity'];
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), { 'grpc.enable_channelz': 0 });
  const body = benchRequest(model);
  const metadata = new Metadata();
  const same = (b: Buffer): Buffer => b;
  const call = (): Promise<boolean> => new Promise((resolve) => {
    client.makeUnaryRequest(PATH, same, same, body, metadata, {}, (err: ServiceError | null, res?: Buffer) => {
      resolve(!err && res !== undefined && res.length > 0);
    });
  });

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
      client.close();
      process.exit(0);
    });
  });
}

if (require.main === module) main();
