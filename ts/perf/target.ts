/**
 * What `infernode perf` measures: a model over HTTP, over gRPC (unary or ModelStreamInfer), or
 * `triton.infer()` in this process. Each target answers the model's metadata, config and
 * statistics in Triton's JSON form and runs one inference; the load generator does not know
 * which it has. Everything runs on the event loop thread.
 *
 * Each target also keeps perf_analyzer's client timers (client-times.ts): per completed request,
 * its whole time, its send time and its receive time. What they cover, per transport:
 * - plain HTTP (raw-http.ts): send from the start of the request to its pre-encoded bytes written
 *   to the socket; receive from the answer's first bytes to the answer framed and its status
 *   checked (perf_analyzer: the body handed to curl, the answer body's first to last byte);
 * - HTTPS: send from the start to the request encoded and handed to node:https; receive from the
 *   answer's head to its body read and decoded into an InferResult;
 * - gRPC, gRPC streaming (grpc-timed.ts): send is marshalling the request, receive unmarshalling
 *   the response(s), as perf_analyzer's gRPC client;
 * - in process: send is the triton.infer() (or inferStream()) call itself, which checks, copies
 *   and queues the inputs before it returns (perf_analyzer's C API mode: its
 *   TRITONSERVER_ServerInferAsync call); receive is 0, as there: the outputs arrive as NDArrays.
 */
import * as http from 'node:http';
import { performance } from 'node:perf_hooks';
import * as path from 'node:path';
import { GrpcInferenceServerClient } from '../client/grpc';
import { HttpInferenceServerClient, modelPath } from '../client/http';
import { decodeInferResponse, encodeInferRequest } from '../client/http-infer';
import { errorFromResponse, HttpTransport } from '../client/http-transport';
import type { InferenceServerClient, ModelMetadata } from '../client/types';
import { toModelConfigJson } from '../config/model-config-json';
import { InferenceServerError } from '../errors';
import type { NDArray } from '../tensor';
import { Triton } from '../triton';
import { modelMetadata, statistics } from '../server/metadata';
import { countRequest, zeroClientTimes, type ClientTimes, type StreamAnswer } from './client-times';
import { TimedGrpcInfer } from './grpc-timed';
import { serverUrl, type PerfOptions } from './options';
import { RawHttpPool, postRequest } from './raw-http';

export type { StreamAnswer } from './client-times';

export interface PerfTarget {
  /** How the report names it: "HTTP", "gRPC", "gRPC streaming", "in-process". */
  readonly kind: string;
  /** Where: the server URL or the repository directory. */
  readonly where: string;
  /** perf_analyzer's client timers, summed since the target opened; infer() adds to them. */
  readonly clientTimes: ClientTimes;
  modelMetadata(): Promise<ModelMetadata>;
  /** The config in Triton's JSON form (snake_case fields). */
  modelConfig(): Promise<Record<string, unknown>>;
  /** Another model's config (an ensemble's step model), in the same form. */
  configOf(name: string, version: string | undefined): Promise<Record<string, unknown>>;
  /** Triton's statistics of the model (every version). */
  modelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }>;
  /** Triton's statistics of every model (perf_analyzer reads these for an ensemble). */
  allModelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }>;
  /** One inference; resolves when its (final) response arrived, with what a stream brought. */
  infer(inputs: Record<string, NDArray>): Promise<void | StreamAnswer>;
  close(): Promise<void>;
}

/** How a ClientTarget runs its inferences (timed into its clientTimes), and what it holds for them. */
interface InferTransport {
  send: (inputs: Record<string, NDArray>) => Promise<void | StreamAnswer>;
  close: () => void;
}

/** A model behind a server: metadata, config and statistics through one of the project's clients, inference through `transport`. */
class ClientTarget implements PerfTarget {
  constructor(
    readonly kind: string,
    readonly where: string,
    private readonly client: InferenceServerClient,
    private readonly model: string,
    private readonly version: string | undefined,
    private readonly transport: InferTransport,
    readonly clientTimes: ClientTimes,
  ) {}

  modelMetadata(): Promise<ModelMetadata> {
    return this.client.modelMetadata(this.model, this.version);
  }

  modelConfig(): Promise<Record<string, unknown>> {
    return this.client.modelConfig(this.model, this.version);
  }

  configOf(name: string, version: string | undefined): Promise<Record<string, unknown>> {
    return this.client.modelConfig(name, version);
  }

  modelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.client.modelStatistics(this.model, this.version);
  }

  allModelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.client.modelStatistics();
  }

  infer(inputs: Record<string, NDArray>): Promise<void | StreamAnswer> {
    return this.transport.send(inputs);
  }

  close(): Promise<void> {
    this.transport.close();
    return this.client.close();
  }
}

/** The whole body of an answer whose head has arrived. */
function readBody(res: http.IncomingMessage, origin: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    res.on('error', (err) => reject(new InferenceServerError('UNAVAILABLE',
      `the connection to ${origin} closed before the whole answer arrived: ${err.message}`)));
  });
}

/**
 * Inference over https://: the HTTP client's own transport and codec, called step by step (as
 * its infer() calls them) so that the steps can be timed apart: the request encoded each time,
 * handed to node:https, the answer's head, its body, its decoding into an InferResult.
 */
function clientHttpTransport(o: PerfOptions, url: string, times: ClientTimes): InferTransport {
  const transport = new HttpTransport(url);
  const requestPath = `${modelPath(o.modelName, o.modelVersion)}/infer`;
  const send = async (inputs: Record<string, NDArray>): Promise<void> => {
    const start = performance.now();
    const { body, headers } = encodeInferRequest({ modelName: o.modelName, modelVersion: o.modelVersion, inputs }, true, true);
    // open() hands the body to node:https before it returns; it resolves at the answer's head.
    const answering = transport.open({ method: 'POST', path: requestPath, body, headers, timeoutMs: 60_000 });
    const sent = performance.now();
    const head = await answering;
    const received = performance.now();
    const answer = { status: head.status, headers: head.headers, body: await readBody(head.body, transport.url.origin) };
    if (answer.status !== 200) throw errorFromResponse(answer);
    decodeInferResponse(answer);
    const end = performance.now();
    countRequest(times, start, sent, end - received, end);
  };
  return { send, close: () => transport.close() };
}

function httpTarget(o: PerfOptions): PerfTarget {
  const url = serverUrl(o);
  const client = new HttpInferenceServerClient(url.replace(/^http:\/\//, ''));
  const parsed = new URL(url);
  const times = zeroClientTimes();
  if (parsed.protocol !== 'http:') {
    return new ClientTarget('HTTP', url, client, o.modelName, o.modelVersion, clientHttpTransport(o, url, times), times);
  }
  const pool = new RawHttpPool(parsed.hostname.replace(/^\[|\]$/g, ''), Number(parsed.port || 80));
  const requestPath = parsed.pathname.replace(/\/+$/, '') + `${modelPath(o.modelName, o.modelVersion)}/infer`;
  // Each input set is encoded once, as the client would encode it (binary tensors both ways).
  const encoded = new WeakMap<Record<string, NDArray>, Buffer>();
  const bytesOf = (inputs: Record<string, NDArray>): Buffer => {
    let bytes = encoded.get(inputs);
    if (!bytes) {
      const { body, headers } = encodeInferRequest({ modelName: o.modelName, modelVersion: o.modelVersion, inputs }, true, true);
      bytes = postRequest(parsed.host, requestPath, headers, body);
      encoded.set(inputs, bytes);
    }
    return bytes;
  };
  const send = async (inputs: Record<string, NDArray>): Promise<void> => {
    const start = performance.now();
    const answer = await pool.send(bytesOf(inputs));
    if (answer.status !== 200) throw errorFromResponse(answer);
    const end = performance.now();
    countRequest(times, start, answer.sentAt, end - answer.firstByteAt, end);
  };
  return new ClientTarget('HTTP', url, client, o.modelName, o.modelVersion, { send, close: () => pool.close() }, times);
}

function grpcTarget(o: PerfOptions): PerfTarget {
  const url = serverUrl(o);
  const client = new GrpcInferenceServerClient(url);
  const times = zeroClientTimes();
  const calls = new TimedGrpcInfer(client.address, o.modelName, o.modelVersion, times);
  // Streaming: each request on a ModelStreamInfer call of its own (HTTP/2 streams of one
  // connection), done at its final response: a decoupled model's 0..N responses all count.
  const send = o.streaming ? (inputs: Record<string, NDArray>): Promise<StreamAnswer> => calls.streamInfer(inputs)
    : (inputs: Record<string, NDArray>): Promise<void> => calls.infer(inputs);
  return new ClientTarget(o.streaming ? 'gRPC streaming' : 'gRPC', url, client, o.modelName, o.modelVersion, { send, close: () => calls.close() }, times);
}

/** `triton.infer()` on a repository loaded in this process (or on a Triton the caller runs): no listener, no socket. */
export class InProcessTarget implements PerfTarget {
  readonly kind = 'in-process';
  readonly clientTimes = zeroClientTimes();

  constructor(readonly where: string, private readonly triton: Triton, private readonly o: PerfOptions) {}

  async modelMetadata(): Promise<ModelMetadata> {
    return modelMetadata(this.triton, this.o.modelName, this.o.modelVersion);
  }

  async modelConfig(): Promise<Record<string, unknown>> {
    return toModelConfigJson(this.#model().config) as Record<string, unknown>;
  }

  async configOf(name: string, version: string | undefined): Promise<Record<string, unknown>> {
    return toModelConfigJson(this.triton.model(name, version === undefined ? undefined : Number(version)).config) as Record<string, unknown>;
  }

  async modelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }> {
    return statistics(this.triton, this.o.modelName, this.o.modelVersion);
  }

  async allModelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }> {
    return statistics(this.triton);
  }

  async infer(inputs: Record<string, NDArray>): Promise<void | StreamAnswer> {
    const start = performance.now();
    const options = { modelVersion: this.#version() };
    let sent: number;
    let stream: StreamAnswer | undefined;
    // Both calls check, copy and queue the request before they return: that is the send time.
    // A decoupled model answers 0..N times: the request is done at the stream's end.
    if (this.#model().config.decoupled) {
      const responses = this.triton.inferStream(this.o.modelName, inputs, options);
      sent = performance.now();
      stream = { responses: 0, lastResponseMs: sent };
      for await (const _response of responses) {
        stream.responses++;
        stream.lastResponseMs = performance.now();
      }
    } else {
      const answered = this.triton.infer(this.o.modelName, inputs, options);
      sent = performance.now();
      await answered;
    }
    const end = performance.now();
    // Nothing to receive: the outputs come as NDArrays, built by the model's completion (in the wait).
    countRequest(this.clientTimes, start, sent, 0, end);
    return stream;
  }

  close(): Promise<void> {
    return this.triton.stop().then(() => undefined);
  }

  #version(): number | undefined {
    return this.o.modelVersion === undefined ? undefined : Number(this.o.modelVersion);
  }

  #model() {
    return this.triton.model(this.o.modelName, this.#version());
  }
}

/** Runs the --bind-module's export on `triton` (it binds models with triton.bind()). */
async function bindFromModule(triton: Triton, file: string): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const exported = require(path.resolve(file)) as { default?: unknown } | ((t: Triton) => unknown);
  const bind = typeof exported === 'function' ? exported : exported.default;
  if (typeof bind !== 'function') {
    throw new Error(`--bind-module ${file} must export a function (triton) => void that binds models, got ${typeof bind}`);
  }
  await bind(triton);
}

async function inProcessTarget(o: PerfOptions): Promise<PerfTarget> {
  const triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  const where = [o.modelRepository, o.bindModule].filter((x) => x !== undefined).join(', ');
  const loadLog: string[] = [];
  try {
    if (o.bindModule) await bindFromModule(triton, o.bindModule);
    // Only the model perf measures is loaded; the repository's log lines are kept for a failure.
    if (o.modelRepository) {
      triton.useRepository({
        repositories: [o.modelRepository], controlMode: 'explicit', loadModels: [], pollSecs: 0, log: (line) => loadLog.push(line),
      });
    }
    await triton.run();
    if (o.modelRepository && !triton.models().some((m) => m.name === o.modelName)) await triton.loadModel(o.modelName);
  } catch (err) {
    await triton.stop();
    const e = err as Error;
    e.message = `cannot load model '${o.modelName}' from ${where}: ${e.message}` + (loadLog.length ? `\n${loadLog.join('\n')}` : '');
    throw e;
  }
  return new InProcessTarget(where, triton, o);
}

/** The target the options name. */
export function openTarget(o: PerfOptions): Promise<PerfTarget> {
  if (o.inProcess) return inProcessTarget(o);
  return Promise.resolve(o.protocol === 'grpc' ? grpcTarget(o) : httpTarget(o));
}
