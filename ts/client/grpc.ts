/**
 * `GrpcInferenceServerClient`: a client of Triton's gRPC protocol (GRPCInferenceService) that
 * works against any Triton-compatible server, Triton itself or infernode. Inputs travel as raw
 * contents (as tritonclient.grpc sends them), messages up to 2^31 - 1 bytes both ways (grpc-js
 * would stop at 4 MiB received), a deadline on every call, and every failure an
 * InferenceServerError with the server's message and the Triton code its gRPC status stands for.
 *
 * ```ts
 * const client = new GrpcInferenceServerClient('localhost:8001');
 * const { outputs } = await client.infer({ modelName: 'add_sub', inputs: { INPUT0: a, INPUT1: b } });
 * await client.close();
 * ```
 */
import {
  Client, Metadata, credentials, type CallOptions, type ChannelOptions, type ServiceError,
} from '@grpc/grpc-js';
import { InferenceServerError } from '../errors';
import { CLIENT_OPTIONS, inferenceServiceDefinition } from '../server/grpc/protos';
import type { InferResponseMessage } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';
import { ClientClosedError, ClientInvalidUrlError, ClientValueError } from './errors';
import { errorFromStatus, inferRequestFields, inferResult, modelConfigJson } from './grpc-convert';
import type {
  ClientInferRequest, ClientInferResult, InferenceServerClient, LoadModelOptions, ModelMetadata,
  RepositoryIndexEntry, ServerMetadata,
} from './types';

export interface GrpcClientOptions {
  /** Deadline of every call, in ms, unless a call sets its own. Default 60000. */
  timeoutMs?: number;
  /** Metadata sent with every call (e.g. `triton-grpc-protocol-<key>` for restricted protocols). */
  headers?: Record<string, string>;
  /** Largest message sent or received. Default 2^31 - 1 bytes, as tritonclient. */
  maxMessageSize?: number;
  /** Extra grpc-js channel options (keepalive, ...). */
  channelOptions?: ChannelOptions;
}

type Req = Record<string, unknown>;
type Method = { path: string; requestSerialize: (value: unknown) => Buffer; responseDeserialize: (buf: Buffer) => unknown };

/** `host:port`, or `grpc://host:port` (default port 8001). */
function target(url: string): string {
  const m = /^(?:grpc:\/\/)?(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/i.exec(url);
  if (!m) throw new ClientInvalidUrlError(`invalid gRPC server address '${url}': expected [grpc://]host[:port]`);
  return `${m[1]}:${m[2] ?? '8001'}`;
}

export class GrpcInferenceServerClient implements InferenceServerClient {
  readonly #client: Client;
  readonly #methods: Record<string, Method>;
  readonly #options: GrpcClientOptions;
  #closed = false;
  /** The server address (`host:port`). */
  readonly address: string;

  constructor(url: string, options: GrpcClientOptions = {}) {
    this.#options = options;
    this.address = target(url);
    const max = options.maxMessageSize ?? 2 ** 31 - 1;
    this.#client = new Client(this.address, credentials.createInsecure(), {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      'grpc.enable_channelz': 0,
      ...options.channelOptions,
    });
    this.#methods = inferenceServiceDefinition(CLIENT_OPTIONS) as unknown as Record<string, Method>;
  }

  #metadata(extra?: Record<string, string>): Metadata {
    const metadata = new Metadata();
    for (const [key, value] of Object.entries({ ...this.#options.headers, ...extra })) {
      try {
        metadata.set(key.toLowerCase(), value);
      } catch (err) {
        throw new ClientValueError(`invalid gRPC metadata '${key}': ${(err as Error).message}`);
      }
    }
    return metadata;
  }

  /** One unary call; `request` is what the method's serializer takes. */
  #call<T>(rpc: string, request: unknown, opts: { headers?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    if (this.#closed) return Promise.reject(new ClientClosedError());
    const method = this.#methods[rpc];
    const callOptions: CallOptions = { deadline: Date.now() + (opts.timeoutMs ?? this.#options.timeoutMs ?? 60_000) };
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = this.#client.makeUnaryRequest(
        method.path, method.requestSerialize, method.responseDeserialize, request, this.#metadata(opts.headers), callOptions,
        (err: ServiceError | null, value?: unknown) => {
          opts.signal?.removeEventListener('abort', onAbort);
          if (!err) resolve(value as T);
          else if (opts.signal?.aborted) reject(new InferenceServerError('CANCELLED', `${rpc} was cancelled`));
          else reject(this.#closed ? new ClientClosedError() : errorFromStatus(err, rpc));
        },
      );
      if (opts.signal?.aborted) onAbort();
      else opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async serverLive(): Promise<boolean> {
    return (await this.#call<Req>('ServerLive', {})).live === true;
  }

  async serverReady(): Promise<boolean> {
    return (await this.#call<Req>('ServerReady', {})).ready === true;
  }

  async modelReady(modelName: string, modelVersion = ''): Promise<boolean> {
    return (await this.#call<Req>('ModelReady', { name: modelName, version: modelVersion })).ready === true;
  }

  serverMetadata(): Promise<ServerMetadata> {
    return this.#call('ServerMetadata', {});
  }

  modelMetadata(modelName: string, modelVersion = ''): Promise<ModelMetadata> {
    return this.#call('ModelMetadata', { name: modelName, version: modelVersion });
  }

  /** The config in Triton's JSON form, as the HTTP client returns it. */
  async modelConfig(modelName: string, modelVersion = ''): Promise<Record<string, unknown>> {
    const res = await this.#call<{ config: Req }>('ModelConfig', { name: modelName, version: modelVersion });
    return modelConfigJson(res.config);
  }

  modelStatistics(modelName = '', modelVersion = ''): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.#call('ModelStatistics', { name: modelName, version: modelVersion });
  }

  async repositoryIndex(readyOnly = false): Promise<RepositoryIndexEntry[]> {
    return (await this.#call<{ models: RepositoryIndexEntry[] }>('RepositoryIndex', { ready: readyOnly })).models;
  }

  async loadModel(modelName: string, options: LoadModelOptions = {}): Promise<void> {
    const parameters: Record<string, Req> = {};
    if (options.config !== undefined) parameters.config = { string_param: options.config };
    for (const [key, content] of Object.entries(options.files ?? {})) {
      parameters[key.startsWith('file:') ? key : `file:${key}`] = { bytes_param: Buffer.from(content.buffer, content.byteOffset, content.byteLength) };
    }
    await this.#call('RepositoryModelLoad', { model_name: modelName, parameters });
  }

  async unloadModel(modelName: string): Promise<void> {
    await this.#call('RepositoryModelUnload', { model_name: modelName });
  }

  async infer(request: ClientInferRequest): Promise<ClientInferResult> {
    const body = encodeInferRequest(inferRequestFields(request));
    const response = await this.#call<InferResponseMessage>('ModelInfer', body, request);
    return inferResult(response);
  }

  /** Closes the channel; later calls reject with ClientClosedError. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#client.close();
  }
}
