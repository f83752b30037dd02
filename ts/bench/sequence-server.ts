/**
 * A server of the sequence bench, run as a child process so each has its own event loop, CPU
 * time and event-loop delay (as onnx-server.ts does for the headline bench).
 *
 * Modes (argv[2]):
 * - 'infernode': the RNN repository (config.pbtxt with `sequence_batching`, implicit state
 *   STATE_IN/STATE_OUT) over gRPC; the native sequence batcher keeps each sequence's state and
 *   batches the steps of concurrent sequences.
 * - 'naive': what a Node developer writes today: a grpc-js ModelStreamInfer service (the same
 *   proto and message codec as infernode's frontend, so the wire costs are the same) that keeps
 *   each sequence's state in a Map and calls onnxruntime-node's `session.run()` once per request.
 * - 'ceiling': the naive server's service with no model and no state, answering every step at
 *   once with zeros: the transport's own cost, the most any server on it could reach.
 *
 * IPC: the child sends {port} once listening (or exits non-zero with the reason on stderr); the
 * parent sends 'reset' (clear the delay histogram), 'report' (→ ServerReport) and 'stop'.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { Triton } from '../triton';
import type { InferRequestMessage, ParamMap } from '../server/grpc/infer-codec';
import type { InferResponseFields } from '../server/grpc/infer-encode';
import { SERVER_OPTIONS, forServer, inferenceServiceDefinition, isDecodeFailure, type DecodeFailure } from '../server/grpc/protos';
import { grpcServerOptions } from '../server/grpc/server';

/** Name of the bench model in both servers. */
export const SEQUENCE_MODEL = 'rnn_step';

export interface ServerReport {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Process CPU time (user + system) since start, µs. */
  cpuUs: number;
  /** Rows, executions and compute input / infer time (ns, all runs) so far (infernode only: the naive server runs one row per run). */
  executions: Executions | null;
}

interface Executions { rows: number; executions: number; inputNs: number; inferNs: number }

interface BenchServer {
  port: number;
  executions(): Executions | null;
  stop(): Promise<unknown>;
}

async function startInfernode(repository: string): Promise<BenchServer> {
  const triton = new Triton({ config: {
    grpcAddress: '127.0.0.1', grpcPort: 0, allowHttp: false, allowMetrics: false, logInfo: false,
  } });
  triton.useRepository({ repositories: [repository] });
  await triton.run();  // throws UNAVAILABLE with the reason when the model does not load
  return {
    port: triton.ports.grpc!,
    executions: () => {
      const s = triton.model(SEQUENCE_MODEL).stats();
      let inputNs = 0;
      let inferNs = 0;
      for (const b of s.batchStats) {
        inputNs += b.computeInput.ns;
        inferNs += b.computeInfer.ns;
      }
      return { rows: s.inferenceCount, executions: s.executionCount, inputNs, inferNs };
    },
    stop: () => triton.stop(),
  };
}

interface OrtTensor { data: Float32Array; dims: readonly number[] }
interface OrtModule {
  InferenceSession: { create(path: string, options?: object): Promise<OrtSession> };
  Tensor: new (type: string, data: Float32Array, dims: number[]) => OrtTensor;
}
interface OrtSession {
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
}

type StreamCall = ServerDuplexStream<InferRequestMessage | DecodeFailure, { errorMessage?: string; inferResponse?: InferResponseFields }>;

/** A request parameter's value, or undefined. */
function param(parameters: ParamMap | null, key: string): boolean | number | bigint | string | undefined {
  return parameters?.get(key)?.value;
}

/**
 * The naive server: one Map entry of state per live sequence, one session.run() per request.
 * START (or a first request) begins from zeros, END drops the entry after the step; a request
 * of an unknown sequence without START gets Triton's error text.
 */
async function startNaive(modelPath: string, hidden: number): Promise<BenchServer> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ort = require('onnxruntime-node') as OrtModule;
  const session = await ort.InferenceSession.create(modelPath);
  const states = new Map<string, Float32Array>();

  const step = async (m: InferRequestMessage): Promise<InferResponseFields> => {
    const idValue = param(m.parameters, 'sequence_id');
    if (idValue === undefined || idValue === 0 || idValue === 0n || idValue === '') {
      throw new Error(`inference request to model '${m.modelName}' must specify a non-zero or non-empty correlation ID`);
    }
    const id = String(idValue);
    const start = param(m.parameters, 'sequence_start') === true;
    const end = param(m.parameters, 'sequence_end') === true;
    let state = states.get(id);
    if (start || !state) {
      if (!start) throw new Error(`inference request for sequence ${id} to model '${m.modelName}' must specify the START flag on the first request of the sequence`);
      state = new Float32Array(hidden);
    }
    const input = m.inputs.findIndex((t) => t.name === 'INPUT');
    const raw = m.rawInputContents[input];
    if (input < 0 || !raw) throw new Error(`expected input 'INPUT' as raw FP32 contents for model '${m.modelName}'`);
    const x = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const out = await session.run({
      INPUT: new ort.Tensor('float32', x, [1, x.length]),
      STATE_IN: new ort.Tensor('float32', state, [1, hidden]),
    });
    if (end) states.delete(id);
    else states.set(id, out.STATE_OUT!.data);
    const output = out.OUTPUT!.data;
    return {
      modelName: m.modelName, modelVersion: '1', id: m.id,
      outputs: [{ name: 'OUTPUT', datatype: 'FP32', shape: [1, hidden] }],
      rawOutputContents: [new Uint8Array(output.buffer, output.byteOffset, output.byteLength)],
    };
  };

  return serveSteps(step);
}

/**
 * A grpc-js ModelStreamInfer service on loopback (the same proto, codec and server options as
 * infernode's frontend) that answers each request with `step`'s response, or its error.
 */
async function serveSteps(step: (m: InferRequestMessage) => Promise<InferResponseFields> | InferResponseFields): Promise<BenchServer> {
  const server = new Server(grpcServerOptions({}));
  const definition = forServer(inferenceServiceDefinition(SERVER_OPTIONS));
  server.addService({ ModelStreamInfer: definition.ModelStreamInfer }, {
    ModelStreamInfer: (call: StreamCall) => {
      call.on('data', (m: InferRequestMessage | DecodeFailure) => {
        if (isDecodeFailure(m)) {
          call.write({ errorMessage: m.decodeError.message });
          return;
        }
        const answer = step(m);
        if (answer instanceof Promise) {
          answer.then((inferResponse) => call.write({ inferResponse }), (err: Error) => call.write({ errorMessage: err.message }));
        } else {
          call.write({ inferResponse: answer });
        }
      });
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return {
    port, executions: () => null,
    stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

/**
 * The transport ceiling: serveSteps with no model and no state, every step answered at once
 * (in the callback that decoded it) with an OUTPUT of zeros.
 */
function startCeiling(hidden: number): Promise<BenchServer> {
  const zeros = new Uint8Array(hidden * 4);
  return serveSteps((m) => ({
    modelName: m.modelName, modelVersion: '1', id: m.id,
    outputs: [{ name: 'OUTPUT', datatype: 'FP32', shape: [1, hidden] }], rawOutputContents: [zeros],
  }));
}

async function main(): Promise<void> {
  const [mode, repository, modelPath, hidden] = process.argv.slice(2);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const server = mode === 'infernode' ? await startInfernode(repository!)
    : mode === 'ceiling' ? await startCeiling(Number(hidden)) : await startNaive(modelPath!, Number(hidden));
  process.on('message', (message: string) => {
    if (message === 'reset') delay.reset();
    else if (message === 'report') {
      const cpu = process.cpuUsage();
      const report: ServerReport = {
        p50Ms: delay.percentile(50) / 1e6, p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6,
        cpuUs: cpu.user + cpu.system, executions: server.executions(),
      };
      process.send!(report);
    } else if (message === 'stop') {
      void server.stop().then(() => process.exit(0));
    }
  });
  process.send!({ port: server.port });
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`sequence bench server (${process.argv[2]}) failed to start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
