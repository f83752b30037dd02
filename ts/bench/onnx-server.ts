/**
 * A server of the headline ONNX bench, run as a child process so each server has its own event
 * loop and its event-loop delay can be measured in isolation (perf_hooks, 1 ms resolution).
 *
 * Modes (argv[2]):
 * - 'infernode': `infernode` serving the bench model repository over HTTP (native ONNX
 *   Runtime engine, dynamic batching).
 * - 'naive': what a Node developer writes today: node:http, onnxruntime-node, one
 *   `session.run()` per request.
 * Both read the same KServe v2 binary request (JSON header + FP32 bytes) and answer with the
 * output as binary data, so the wire costs are the same.
 *
 * argv: mode, repository, model file (naive), model name (infernode's executions; default
 * mlp_bench, the gpu scenario serves others), and the naive server's execution provider
 * (default 'cpu'; the gpu scenario asks for 'cuda', and a session that cannot get it fails the
 * start with ONNX Runtime's reason instead of running on the CPU).
 *
 * IPC: the child sends {port} once listening; the parent sends 'reset' (clear the delay
 * histogram), 'report' (→ {p50Ms, p99Ms, maxMs, executions, cpu}) and 'stop'.
 */
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Triton } from '../triton';

const INPUT = 'input';
const OUTPUT = 'logits';
const FEATURES = 256;

interface BenchServer {
  port: number;
  /** Rows, executions and ONNX Runtime's run time (ns, all runs) so far (infernode only: the naive server does not batch). */
  executions(): { rows: number; executions: number; inferNs: number } | null;
  stop(): Promise<unknown>;
}

async function startInfernode(repository: string, model: string): Promise<BenchServer> {
  const triton = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  triton.useRepository({ repositories: [repository] });
  await triton.run();
  return {
    port: triton.ports.http!,
    executions: () => {
      const s = triton.model(model).stats();
      const inferNs = s.batchStats.reduce((sum, b) => sum + b.computeInfer.ns, 0);
      return { rows: s.inferenceCount, executions: s.executionCount, inferNs };
    },
    stop: () => triton.stop(),
  };
}

interface OrtModule {
  InferenceSession: { create(path: string, options?: object): Promise<OrtSession> };
  Tensor: new (type: string, data: Float32Array, dims: number[]) => unknown;
}
interface OrtSession {
  run(feeds: Record<string, unknown>): Promise<Record<string, { data: Float32Array; dims: readonly number[] }>>;
}

/** Reads a KServe binary request: JSON header of `headerLength` bytes, then the input's floats. */
function inputOf(body: Buffer, headerLength: number): Float32Array {
  const header = JSON.parse(body.toString('utf8', 0, headerLength)) as { inputs: { shape: number[] }[] };
  const count = header.inputs[0].shape.reduce((a, b) => a * b, 1);
  const floats = new Float32Array(count);
  new Uint8Array(floats.buffer).set(body.subarray(headerLength, headerLength + count * 4));
  return floats;
}

async function startNaive(modelPath: string, provider: string): Promise<BenchServer> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ort = require('onnxruntime-node') as OrtModule;
  const session = await ort.InferenceSession.create(modelPath, provider === 'cpu' ? {} : { executionProviders: [provider] });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const input = inputOf(body, Number(req.headers['inference-header-content-length']));
      session.run({ [INPUT]: new ort.Tensor('float32', input, [input.length / FEATURES, FEATURES]) }).then((out) => {
        const logits = out[OUTPUT];
        const data = Buffer.from(logits.data.buffer, logits.data.byteOffset, logits.data.byteLength);
        const header = Buffer.from(JSON.stringify({
          model_name: 'mlp_bench', model_version: '1',
          outputs: [{ name: OUTPUT, datatype: 'FP32', shape: logits.dims, parameters: { binary_data_size: data.length } }],
        }));
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': header.length,
          'Content-Length': header.length + data.length,
        });
        res.end(Buffer.concat([header, data]));
      }, (err: Error) => {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: err.message }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port, executions: () => null, stop: () => new Promise((r) => server.close(r)),
  };
}

/**
 * CPU time this process has used so far (ns, every thread) and, where Linux's schedstat can be
 * read, the part of it its JS thread ran (null elsewhere): the naive server's model runs on that
 * thread (onnxruntime-node's `run()` calls ONNX Runtime synchronously from a setImmediate), so
 * this shows where each server's time goes.
 */
function cpuSoFar(): { processNs: number; jsThreadNs: number | null } {
  const used = process.cpuUsage();
  let jsThreadNs: number | null = null;
  try {
    jsThreadNs = Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    // not Linux: the column stays empty
  }
  return { processNs: (used.user + used.system) * 1000, jsThreadNs };
}

async function main(): Promise<void> {
  const [mode, repository, modelPath, model = 'mlp_bench', provider = 'cpu'] = process.argv.slice(2);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const server = mode === 'infernode' ? await startInfernode(repository, model) : await startNaive(modelPath, provider);
  process.on('message', (message: string) => {
    if (message === 'reset') delay.reset();
    else if (message === 'report') {
      process.send!({
        p50Ms: delay.percentile(50) / 1e6, p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6,
        executions: server.executions(), cpu: cpuSoFar(),
      });
    } else if (message === 'stop') {
      void server.stop().then(() => process.exit(0));
    }
  });
  process.send!({ port: server.port });
}

main().catch((err: unknown) => {
  console.error(err);
  // The parent reports why this server did not start (the gpu scenario's "Not run").
  process.send!({ error: (err as Error).message ?? String(err) }, () => process.exit(1));
});
