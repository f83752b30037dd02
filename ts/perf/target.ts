/**
 * What `infernode perf` measures: a model behind the HTTP client, the gRPC client (unary or
 * ModelStreamInfer), or `triton.infer()` in this process. Each target answers the model's
 * metadata, config and statistics in Triton's JSON form and runs one inference; the load
 * generator does not know which it has. Everything runs on the event loop thread.
 */
import * as path from 'node:path';
import { GrpcInferenceServerClient } from '../client/grpc';
import { HttpInferenceServerClient, modelPath } from '../client/http';
import { encodeInferRequest } from '../client/http-infer';
import { errorFromResponse } from '../client/http-transport';
import type { InferenceServerClient, ModelMetadata } from '../client/types';
import { toModelConfigJson } from '../config/model-config-json';
import type { NDArray } from '../tensor';
import { Triton } from '../triton';
import { modelMetadata, statistics } from '../server/metadata';
import { serverUrl, type PerfOptions } from './options';
import { RawHttpPool, postRequest } from './raw-http';

export interface PerfTarget {
  /** How the report names it: "HTTP", "gRPC", "gRPC streaming", "in-process". */
  readonly kind: string;
  /** Where: the server URL or the repository directory. */
  readonly where: string;
  modelMetadata(): Promise<ModelMetadata>;
  /** The config in Triton's JSON form (snake_case fields). */
  modelConfig(): Promise<Record<string, unknown>>;
  /** Triton's statistics of the model (every version). */
  modelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }>;
  /** One inference; resolves when its (final) response arrived. */
  infer(inputs: Record<string, NDArray>): Promise<void>;
  close(): Promise<void>;
}

/** A model behind one of the project's clients. */
class ClientTarget implements PerfTarget {
  constructor(
    readonly kind: string,
    readonly where: string,
    private readonly client: InferenceServerClient,
    private readonly model: string,
    private readonly version: string | undefined,
    private readonly send: (inputs: Record<string, NDArray>) => Promise<void>,
    /** Closes what `send` holds besides the client. */
    private readonly release: () => void = () => undefined,
  ) {}

  modelMetadata(): Promise<ModelMetadata> {
    return this.client.modelMetadata(this.model, this.version);
  }

  modelConfig(): Promise<Record<string, unknown>> {
    return this.client.modelConfig(this.model, this.version);
  }

  modelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.client.modelStatistics(this.model, this.version);
  }

  infer(inputs: Record<string, NDArray>): Promise<void> {
    return this.send(inputs);
  }

  close(): Promise<void> {
    this.release();
    return this.client.close();
  }
}

function httpTarget(o: PerfOptions): PerfTarget {
  const url = serverUrl(o);
  const client = new HttpInferenceServerClient(url.replace(/^http:\/\//, ''));
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:') {
    const send = async (inputs: Record<string, NDArray>): Promise<void> => {
      await client.infer({ modelName: o.modelName, modelVersion: o.modelVersion, inputs });
    };
    return new ClientTarget('HTTP', url, client, o.modelName, o.modelVersion, send);
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
    const answer = await pool.send(bytesOf(inputs));
    if (answer.status !== 200) throw errorFromResponse(answer);
  };
  return new ClientTarget('HTTP', url, client, o.modelName, o.modelVersion, send, () => pool.close());
}

function grpcTarget(o: PerfOptions): PerfTarget {
  const url = serverUrl(o);
  const client = new GrpcInferenceServerClient(url);
  const request = (inputs: Record<string, NDArray>) => ({ modelName: o.modelName, modelVersion: o.modelVersion, inputs });
  // Streaming: each request on a ModelStreamInfer call of its own (HTTP/2 streams of one
  // connection), done at its final response: a decoupled model's 0..N responses all count.
  const send = o.streaming
    ? async (inputs: Record<string, NDArray>): Promise<void> => {
      for await (const _response of client.streamInfer(request(inputs))) { /* drained */ }
    }
    : async (inputs: Record<string, NDArray>): Promise<void> => {
      await client.infer(request(inputs));
    };
  return new ClientTarget(o.streaming ? 'gRPC streaming' : 'gRPC', url, client, o.modelName, o.modelVersion, send);
}

/** `triton.infer()` on a repository loaded in this process: no listener, no socket. */
class InProcessTarget implements PerfTarget {
  readonly kind = 'in-process';

  constructor(readonly where: string, private readonly triton: Triton, private readonly o: PerfOptions) {}

  async modelMetadata(): Promise<ModelMetadata> {
    return modelMetadata(this.triton, this.o.modelName, this.o.modelVersion);
  }

  async modelConfig(): Promise<Record<string, unknown>> {
    return toModelConfigJson(this.#model().config) as Record<string, unknown>;
  }

  async modelStatistics(): Promise<{ model_stats: Record<string, unknown>[] }> {
    return statistics(this.triton, this.o.modelName, this.o.modelVersion);
  }

  async infer(inputs: Record<string, NDArray>): Promise<void> {
    const options = { modelVersion: this.#version() };
    // A decoupled model answers 0..N times: the request is done at the stream's end.
    if (this.#model().config.decoupled) {
      for await (const _response of this.triton.inferStream(this.o.modelName, inputs, options)) { /* drained */ }
    } else {
      await this.triton.infer(this.o.modelName, inputs, options);
    }
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
