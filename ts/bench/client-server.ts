/**
 * The server of the client bench (client.ts), in a child process of its own so that the bench
 * process's CPU time is the clients' alone: infernode serving an identity JS model over HTTP.
 * IPC as server-process.ts: `{ port }` once listening, 'stop' → exit.
 */
import { Triton } from '../triton';
import type { Request } from '../request';

export const CLIENT_BENCH_MODEL = 'identity';
export const CLIENT_BENCH_ELEMENTS = 16;

async function main(): Promise<void> {
  const triton = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  triton.bind({
    modelName: CLIENT_BENCH_MODEL,
    inferFunc: (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [CLIENT_BENCH_ELEMENTS] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [CLIENT_BENCH_ELEMENTS] }],
    config: { maxBatchSize: 64, batcher: { maxQueueDelayMicroseconds: 0 } },
  });
  await triton.run();
  process.on('message', (message: string) => {
    if (message === 'stop') void triton.stop().then(() => process.exit(0));
  });
  process.send!({ port: triton.ports.http });
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.send!({ error: (err as Error).message ?? String(err) }, () => process.exit(1));
  });
}
