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
 *
 * Streaming (ModelStreamInfer), for decoupled models (0..N responses per request) and any other:
 * `streamInfer(request, { signal })` is an async iterator of one request's responses on a call of
 * its own; `startStream` / `asyncStreamInfer` / `stopStream` are tritonclient's shape (one open
 * stream, every response and in-band error to one callback).
 */
import {
  Client, Metadata, credentials, status as Status,
  type CallOptions, type ChannelCredentials, type ChannelOptions, type ClientDuplexStream, type ServiceError,
} from '@grpc/grpc-js';
import { InferenceServerError } from '../errors';
import { clientServiceDefinition } from '../server/grpc/protos';
import type { InferResponseMessage, StreamResponseMessage } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';
import { ClientClosedError, ClientInvalidUrlError, ClientTimeoutError, ClientValueError, StreamResponseError } from './errors';
import {
  EMPTY_FINAL_RESPONSE_PARAM, errorFromStatus, inferRequestFields, inferResult, isEmptyFinal, modelConfigJson, sharedMemoryOutputs, streamResult,
  wireRequestFields,
} from './grpc-convert';
import { TritonClientBase } from './client-base';
import type { InferInput, InferResult } from './infer-io';
import { wireFromInferInputs, wireFromRequest, type InferOptions } from './infer-request';
import { StreamReader, TIMED_OUT } from './grpc-stream';
import { readOptionalPem, type PemSource } from './tls';
import type {
  CallOptions as ClientCallOptions, ClientInferRequest, ClientStreamResult, InferenceServerClient, LoadModelOptions, LogSettingsJson, ModelMetadata,
  RepositoryIndexEntry, RepositoryIndexOptions, ServerMetadata, SharedMemoryRegionStatus, StreamInferOptions, TraceSettingsJson,
  UnloadModelOptions,
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
  /** tritonclient's `ssl`: connect over TLS. Default false. */
  ssl?: boolean;
  /**
   * tritonclient's `root_certificates`: the CA(s) the server's certificate must be signed by (a PEM
   * file's path or its contents). Default: grpc-js's bundled public CAs.
   */
  rootCertificates?: PemSource;
  /** tritonclient's `private_key`: the client certificate's key, for servers that require client certificates. */
  privateKey?: PemSource;
  /** tritonclient's `certificate_chain`: the client certificate (chain). */
  certificateChain?: PemSource;
}

/** TLS (`ssl`) or plaintext channel credentials; the certificate options need `ssl`. */
function channelCredentials(options: GrpcClientOptions): ChannelCredentials {
  const given = (['rootCertificates', 'privateKey', 'certificateChain'] as const).filter((k) => options[k] !== undefined);
  if (!options.ssl) {
    if (given.length > 0) throw new ClientValueError(`${given.join(', ')} given without ssl: set ssl: true to connect over TLS`);
    return credentials.createInsecure();
  }
  if ((options.privateKey === undefined) !== (options.certificateChain === undefined)) {
    throw new ClientValueError('privateKey and certificateChain go together: give both (client certificate) or neither');
  }
  return credentials.createSsl(
    readOptionalPem(options.rootCertificates, 'rootCertificates') ?? null,
    readOptionalPem(options.privateKey, 'privateKey') ?? null,
    readOptionalPem(options.certificateChain, 'certificateChain') ?? null,
  );
}

/**
 * What an open stream (startStream) hands its callback: a response (`error` null), or an error
 * (`result` null): a request's in-band error (StreamResponseError, with the request's id; the
 * stream stays open) or the call's end with a non-OK status (the stream is unusable then).
 */
export type StreamCallback = (result: ClientStreamResult | null, error: InferenceServerError | null) => void;

export interface StartStreamOptions {
  /** Receives every response and error of the stream, in arrival order. Without it they are dropped. */
  onResponse?: StreamCallback;
  /** Metadata of the call (e.g. `triton_grpc_error: 'true'` to end the stream at the first error). */
  headers?: Record<string, string>;
  /** Deadline of the whole stream (ms); default none (tritonclient's stream_timeout). */
  timeoutMs?: number;
}

/** Options of `asyncStreamInfer(modelName, inputs, options)`: infer's, less the per-call ones a stream cannot have. */
export interface StreamInferInputsOptions extends Omit<InferOptions, keyof ClientCallOptions | 'requestCompressionAlgorithm' | 'responseCompressionAlgorithm'> {
  /** See StreamInferRequest.enableEmptyFinalResponse. */
  enableEmptyFinalResponse?: boolean;
}

/** TraceSettingResponse.settings in the HTTP API's JSON form: `trace_level` a list, the others their one value. */
function traceSettingsJson(settings: Record<string, { value: string[] }>): TraceSettingsJson {
  const out: TraceSettingsJson = {};
  for (const [key, { value }] of Object.entries(settings ?? {})) out[key] = key === 'trace_level' ? value : (value[0] ?? '');
  return out;
}

/** LogSettingsResponse.settings as plain values (the HTTP API's JSON form). */
function logSettingsJson(settings: Record<string, Req>): LogSettingsJson {
  const out: LogSettingsJson = {};
  for (const [key, v] of Object.entries(settings ?? {})) {
    const choice = v.parameter_choice as string | undefined;
    if (choice) out[key] = v[choice] as string | number | boolean;
  }
  return out;
}

/** A request sent on the open stream. */
export interface StreamInferRequest extends Omit<ClientInferRequest, 'headers' | 'timeoutMs' | 'signal'> {
  /**
   * Ask for the flag-only end of a decoupled model's request as an empty response with
   * `final: true` (Triton's `triton_enable_empty_final_response`), so the callback knows when the
   * request is complete.
   */
  enableEmptyFinalResponse?: boolean;
}

type Req = Record<string, unknown>;
type StreamCall = ClientDuplexStream<Buffer, StreamResponseMessage>;

/** The stream startStream opened. */
interface OpenStream {
  call: StreamCall;
  /** False once the call ended: requests can no longer be sent on it. */
  active: boolean;
  /** Settles when the call's status arrived. */
  ended: Promise<void>;
}
type Method = { path: string; requestSerialize: (value: unknown) => Buffer; responseDeserialize: (buf: Buffer) => unknown };

/** `host:port`, or `grpc://host:port` (default port 8001). */
function target(url: string): string {
  const m = /^(?:grpc:\/\/)?(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/i.exec(url);
  if (!m) throw new ClientInvalidUrlError(`invalid gRPC server address '${url}': expected [grpc://]host[:port]`);
  return `${m[1]}:${m[2] ?? '8001'}`;
}

export class GrpcInferenceServerClient extends TritonClientBase implements InferenceServerClient {
  readonly #client: Client;
  readonly #methods: Record<string, Method>;
  readonly #options: GrpcClientOptions;
  #closed = false;
  /** Streaming calls not yet ended; close() cancels them. */
  readonly #streamCalls = new Set<StreamCall>();
  /** The stream of startStream, until stopStream. */
  #stream: OpenStream | null = null;
  /** The server address (`host:port`). */
  readonly address: string;

  constructor(url: string, options: GrpcClientOptions = {}) {
    super();
    this.#options = options;
    this.address = target(url);
    const max = options.maxMessageSize ?? 2 ** 31 - 1;
    this.#client = new Client(this.address, channelCredentials(options), {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      'grpc.enable_channelz': 0,
      ...options.channelOptions,
    });
    this.#methods = clientServiceDefinition() as unknown as Record<string, Method>;
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

  /** The call's headers after the plugin saw them. */
  #headers(headers: Record<string, string> | undefined): Record<string, string> {
    const request = { headers: { ...headers } };
    this.plugin()?.(request);
    return request.headers;
  }

  /** One unary call; `request` is what the method's serializer takes. */
  #call<T>(rpc: string, request: unknown, opts: ClientCallOptions = {}): Promise<T> {
    if (this.#closed) return Promise.reject(new ClientClosedError());
    const method = this.#methods[rpc];
    const callOptions: CallOptions = { deadline: Date.now() + (opts.timeoutMs ?? this.#options.timeoutMs ?? 60_000) };
    let metadata: Metadata;
    try {
      metadata = this.#metadata(this.#headers(opts.headers));
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = this.#client.makeUnaryRequest(
        method.path, method.requestSerialize, method.responseDeserialize, request, metadata, callOptions,
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

  async isServerLive(options: ClientCallOptions = {}): Promise<boolean> {
    return (await this.#call<Req>('ServerLive', {}, options)).live === true;
  }

  async isServerReady(options: ClientCallOptions = {}): Promise<boolean> {
    return (await this.#call<Req>('ServerReady', {}, options)).ready === true;
  }

  async isModelReady(modelName: string, modelVersion = '', options: ClientCallOptions = {}): Promise<boolean> {
    return (await this.#call<Req>('ModelReady', { name: modelName, version: modelVersion }, options)).ready === true;
  }

  getServerMetadata(options: ClientCallOptions = {}): Promise<ServerMetadata> {
    return this.#call('ServerMetadata', {}, options);
  }

  getModelMetadata(modelName: string, modelVersion = '', options: ClientCallOptions = {}): Promise<ModelMetadata> {
    return this.#call('ModelMetadata', { name: modelName, version: modelVersion }, options);
  }

  /** The config in Triton's JSON form, as the HTTP client returns it. */
  async getModelConfig(modelName: string, modelVersion = '', options: ClientCallOptions = {}): Promise<Record<string, unknown>> {
    const res = await this.#call<{ config: Req }>('ModelConfig', { name: modelName, version: modelVersion }, options);
    return modelConfigJson(res.config);
  }

  /** The repository's models (the HTTP API's list; RepositoryIndexResponse.models). */
  async getModelRepositoryIndex(options: RepositoryIndexOptions = {}): Promise<RepositoryIndexEntry[]> {
    return (await this.#call<{ models: RepositoryIndexEntry[] }>('RepositoryIndex', { ready: options.readyOnly ?? false }, options)).models;
  }

  async loadModel(modelName: string, options: LoadModelOptions = {}): Promise<void> {
    const parameters: Record<string, Req> = {};
    if (options.config !== undefined) parameters.config = { string_param: options.config };
    for (const [key, content] of Object.entries(options.files ?? {})) {
      parameters[key.startsWith('file:') ? key : `file:${key}`] = { bytes_param: Buffer.from(content.buffer, content.byteOffset, content.byteLength) };
    }
    await this.#call('RepositoryModelLoad', { model_name: modelName, parameters }, options);
  }

  async unloadModel(modelName: string, options: UnloadModelOptions = {}): Promise<void> {
    const parameters = { unload_dependents: { bool_param: options.unloadDependents ?? false } };
    await this.#call('RepositoryModelUnload', { model_name: modelName, parameters }, options);
  }

  getInferenceStatistics(modelName = '', modelVersion = '', options: ClientCallOptions = {}): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.#call('ModelStatistics', { name: modelName, version: modelVersion }, options);
  }

  /**
   * Changes the global trace settings, or a model's (`modelName`); a null value clears a
   * setting. Resolves with the settings after, in the HTTP API's JSON form.
   */
  async updateTraceSettings(
    modelName?: string, settings: Record<string, string | number | string[] | null> = {}, options: ClientCallOptions = {},
  ): Promise<TraceSettingsJson> {
    const wire: Record<string, { value: string[] }> = {};
    for (const [key, value] of Object.entries(settings)) {
      wire[key] = { value: value === null ? [] : (Array.isArray(value) ? value : [value]).map(String) };
    }
    const res = await this.#call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', { model_name: modelName ?? '', settings: wire }, options);
    return traceSettingsJson(res.settings);
  }

  async getTraceSettings(modelName?: string, options: ClientCallOptions = {}): Promise<TraceSettingsJson> {
    const res = await this.#call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', { model_name: modelName ?? '' }, options);
    return traceSettingsJson(res.settings);
  }

  /** Changes the server's log settings (booleans, unsigned integers, strings); resolves with the settings after. */
  async updateLogSettings(settings: LogSettingsJson, options: ClientCallOptions = {}): Promise<LogSettingsJson> {
    const wire: Record<string, Req> = {};
    for (const [key, value] of Object.entries(settings)) {
      if (typeof value === 'boolean') wire[key] = { bool_param: value };
      else if (typeof value === 'number') wire[key] = { uint32_param: value };
      else if (typeof value === 'string') wire[key] = { string_param: value };
      else throw new ClientValueError(`log setting '${key}' must be a boolean, a number or a string, got ${typeof value}`);
    }
    const res = await this.#call<{ settings: Record<string, Req> }>('LogSettings', { settings: wire }, options);
    return logSettingsJson(res.settings);
  }

  async getLogSettings(options: ClientCallOptions = {}): Promise<LogSettingsJson> {
    return logSettingsJson((await this.#call<{ settings: Record<string, Req> }>('LogSettings', {}, options)).settings);
  }

  /** Every registered system region, or the one named (the HTTP API's list form). */
  async getSystemSharedMemoryStatus(regionName = '', options: ClientCallOptions = {}): Promise<SharedMemoryRegionStatus[]> {
    const res = await this.#call<{ regions: Record<string, SharedMemoryRegionStatus> }>('SystemSharedMemoryStatus', { name: regionName }, options);
    return Object.values(res.regions ?? {});
  }

  /** Registers `byteSize` bytes at `offset` of the POSIX shared-memory object `key` (e.g. '/my_region') as region `name`. */
  async registerSystemSharedMemory(name: string, key: string, byteSize: number, offset = 0, options: ClientCallOptions = {}): Promise<void> {
    await this.#call('SystemSharedMemoryRegister', { name, key, offset, byte_size: byteSize }, options);
  }

  /** Unregisters region `name`, or every system region when it is empty. */
  async unregisterSystemSharedMemory(name = '', options: ClientCallOptions = {}): Promise<void> {
    await this.#call('SystemSharedMemoryUnregister', { name }, options);
  }

  async getCudaSharedMemoryStatus(regionName = '', options: ClientCallOptions = {}): Promise<SharedMemoryRegionStatus[]> {
    const res = await this.#call<{ regions: Record<string, SharedMemoryRegionStatus> }>('CudaSharedMemoryStatus', { name: regionName }, options);
    return Object.values(res.regions ?? {});
  }

  /** `rawHandle`: the cudaIpcMemHandle_t's bytes, or their base64 text (what tritonclient's cudashm.get_raw_handle gives). */
  async registerCudaSharedMemory(
    name: string, rawHandle: Uint8Array | string, deviceId: number, byteSize: number, options: ClientCallOptions = {},
  ): Promise<void> {
    const raw = typeof rawHandle === 'string' ? Buffer.from(rawHandle, 'base64') : Buffer.from(rawHandle.buffer, rawHandle.byteOffset, rawHandle.byteLength);
    await this.#call('CudaSharedMemoryRegister', { name, raw_handle: raw, device_id: deviceId, byte_size: byteSize }, options);
  }

  async unregisterCudaSharedMemory(name = '', options: ClientCallOptions = {}): Promise<void> {
    await this.#call('CudaSharedMemoryUnregister', { name }, options);
  }

  /**
   * One inference. tritonclient's shape, `infer(modelName, [InferInput...], { outputs, requestId,
   * sequenceId, priority, timeout, headers, timeoutMs, signal })`, or infernode's request object,
   * `infer({ modelName, inputs: { IN: ndarray } })`. Resolves with an InferResult.
   */
  infer(request: ClientInferRequest): Promise<InferResult>;
  infer(modelName: string, inputs: InferInput[], options?: InferOptions): Promise<InferResult>;
  async infer(request: ClientInferRequest | string, inputs?: InferInput[], options?: InferOptions): Promise<InferResult> {
    const wire = typeof request === 'string' ? wireFromInferInputs(request, inputs ?? [], options) : wireFromRequest(request, true, true);
    const body = encodeInferRequest(wireRequestFields(wire));
    const response = await this.#call<InferResponseMessage>('ModelInfer', body, wire);
    return inferResult(response, sharedMemoryOutputs(wire));
  }

  /** tritonclient's async_infer: the same call as `infer`, which is asynchronous already (a Promise). */
  asyncInfer(request: ClientInferRequest): Promise<InferResult>;
  asyncInfer(modelName: string, inputs: InferInput[], options?: InferOptions): Promise<InferResult>;
  asyncInfer(request: ClientInferRequest | string, inputs?: InferInput[], options?: InferOptions): Promise<InferResult> {
    return typeof request === 'string' ? this.infer(request, inputs ?? [], options) : this.infer(request);
  }

  /** Opens a ModelStreamInfer call; `timeoutMs` bounds the whole call (none by default). */
  #openStreamCall(headers: Record<string, string> | undefined, timeoutMs: number | undefined): StreamCall {
    if (this.#closed) throw new ClientClosedError();
    const method = this.#methods.ModelStreamInfer;
    const options: CallOptions = timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
    const call = this.#client.makeBidiStreamRequest(
      method.path, method.requestSerialize, method.responseDeserialize, this.#metadata(headers), options,
    ) as StreamCall;
    this.#streamCalls.add(call);
    call.on('status', () => this.#streamCalls.delete(call));
    return call;
  }

  /** The error a streaming call ended with, as the caller should see it. */
  #streamError(err: unknown, what: string, signal?: AbortSignal): unknown {
    if (typeof (err as ServiceError).code !== 'number') return err;
    if (this.#closed) return new ClientClosedError(`the client was closed while ${what} was streaming`);
    if (signal?.aborted && (err as ServiceError).code === Status.CANCELLED) return new InferenceServerError('CANCELLED', `${what} was cancelled`);
    return errorFromStatus(err as ServiceError, what);
  }

  /**
   * Infers one request over ModelStreamInfer and yields its responses as they arrive, ending
   * after its final one: many, one or none for a decoupled model, exactly one for any other.
   * The request travels on a call of its own (one HTTP/2 stream on the client's connection),
   * half-closed once sent, with `triton_enable_empty_final_response` so a decoupled model's
   * flag-only end arrives (it is not yielded), and with the `triton_grpc_error` header so a
   * failure ends the call with its gRPC status: the error thrown keeps the Triton code
   * (NOT_FOUND, INVALID_ARG, INTERNAL, ...). A server that answers in band instead gives a
   * StreamResponseError (code UNKNOWN). Aborting `signal`, or leaving the loop early, cancels the
   * call, and so the request on the server (the model's generator stops at its next response);
   * the iterator then throws CANCELLED. `request.timeoutMs` bounds the whole call (default none:
   * a generation may take long); `responseTimeoutMs` bounds each wait for the next response.
   *
   * Why a call per request rather than many requests matched by id on one call: the protocol
   * cancels a call, not a request, so only a call of its own lets one iterator cancel its request
   * without cancelling the others; HTTP/2 multiplexes the calls on one connection anyway.
   */
  async *streamInfer(request: ClientInferRequest, options: StreamInferOptions = {}): AsyncGenerator<ClientStreamResult, void, undefined> {
    const signal = options.signal ?? request.signal;
    const what = `ModelStreamInfer of model '${request.modelName}'`;
    if (signal?.aborted) throw new InferenceServerError('CANCELLED', `${what} was cancelled`);
    const body = encodeInferRequest(inferRequestFields({
      ...request, parameters: { ...request.parameters, [EMPTY_FINAL_RESPONSE_PARAM]: true },
    }));
    const call = this.#openStreamCall(this.#headers({ ...request.headers, triton_grpc_error: 'true' }), request.timeoutMs);
    const reader = new StreamReader(call);
    const onAbort = (): void => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    call.write(body);
    call.end();
    let answered = false;  // the request's final response (or the call's OK end) arrived
    try {
      for (;;) {
        let message: StreamResponseMessage | null | typeof TIMED_OUT;
        try {
          message = await reader.next(options.responseTimeoutMs);
        } catch (err) {
          throw this.#streamError(err, what, signal);
        }
        if (message === TIMED_OUT) {
          throw new ClientTimeoutError(`${what}: no response within ${options.responseTimeoutMs} ms (responseTimeoutMs)`);
        }
        if (message === null) return;  // the call ended OK: a server that sends no empty final response
        if (message.errorMessage) throw new StreamResponseError(message.errorMessage, message.inferResponse?.id ?? '');
        if (!message.inferResponse) continue;
        const result = streamResult(message.inferResponse);
        answered = result.final;
        if (!isEmptyFinal(result)) yield result;
        if (result.final) return;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // Left early (error, timeout, the reader stopped): cancel the call, and with it the
      // request. After the final response the call is left to end by itself (the request was
      // half-closed, so the server ends it OK at once): cancelling it would reset the HTTP/2
      // stream, and a server counts resets — Node's HTTP/2 closes a connection past about
      // 1000 + 33/s of them (its rapid-reset protection), failing every call on it.
      if (!reader.ended && !answered) call.cancel();
    }
  }

  /**
   * Opens the stream of `asyncStreamInfer` (tritonclient's start_stream): one ModelStreamInfer
   * call; every response and error goes to `onResponse`. One such stream at a time.
   */
  startStream(callbackOrOptions: StreamCallback | StartStreamOptions = {}): void {
    const options = typeof callbackOrOptions === 'function' ? { onResponse: callbackOrOptions } : callbackOrOptions;
    if (this.#closed) throw new ClientClosedError();
    if (this.#stream) {
      throw new ClientValueError('cannot start another stream with one already running: call stopStream() first ' +
        '(streamInfer() needs no open stream: it opens a call per request)');
    }
    const call = this.#openStreamCall(this.#headers(options.headers), options.timeoutMs);
    const deliver = options.onResponse ?? ((): void => undefined);
    const stream: OpenStream = { call, active: true, ended: new Promise((resolve) => call.on('status', () => resolve())) };
    call.on('data', (message: StreamResponseMessage) => {
      if (message.errorMessage) deliver(null, new StreamResponseError(message.errorMessage, message.inferResponse?.id ?? ''));
      else if (message.inferResponse) deliver(streamResult(message.inferResponse), null);
    });
    call.on('error', (err: ServiceError) => {
      stream.active = false;
      deliver(null, this.#streamError(err, 'ModelStreamInfer') as InferenceServerError);
    });
    call.on('status', () => { stream.active = false; });
    this.#stream = stream;
  }

  /**
   * Sends one request on the stream startStream opened (tritonclient's async_stream_infer):
   * `asyncStreamInfer(modelName, [InferInput...], { outputs, requestId, sequenceId,
   * enableEmptyFinalResponse, ... })`, or infernode's request object.
   */
  asyncStreamInfer(request: StreamInferRequest): void;
  asyncStreamInfer(modelName: string, inputs: InferInput[], options?: StreamInferInputsOptions): void;
  asyncStreamInfer(request: StreamInferRequest | string, inputs?: InferInput[], options: StreamInferInputsOptions = {}): void {
    if (this.#closed) throw new ClientClosedError();
    const stream = this.#stream;
    if (!stream) throw new ClientValueError('no stream is open: call startStream() before asyncStreamInfer()');
    if (!stream.active) {
      throw new InferenceServerError('UNAVAILABLE', 'the stream has ended (its error went to onResponse): ' +
        'call stopStream() and startStream() to open another');
    }
    const wire = typeof request === 'string' ? wireFromInferInputs(request, inputs ?? [], options) : wireFromRequest(request, true, true);
    const emptyFinal = typeof request === 'string' ? options.enableEmptyFinalResponse : request.enableEmptyFinalResponse;
    if (emptyFinal) wire.parameters[EMPTY_FINAL_RESPONSE_PARAM] = true;
    stream.call.write(encodeInferRequest(wireRequestFields(wire)));
  }

  /**
   * Closes the stream startStream opened (tritonclient's stop_stream): by default it half-closes
   * and resolves once the server answered every request sent; with `cancelRequests` it cancels
   * the call and the requests still running. No stream open: nothing to do.
   */
  async stopStream(cancelRequests: boolean | { cancelRequests?: boolean } = {}): Promise<void> {
    const options = typeof cancelRequests === 'boolean' ? { cancelRequests } : cancelRequests;
    const stream = this.#stream;
    if (!stream) return;
    this.#stream = null;
    if (options.cancelRequests) stream.call.cancel();
    else stream.call.end();
    await stream.ended;
  }

  /** Closes the channel and cancels open streams; later calls reject with ClientClosedError. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stream = null;
    for (const call of [...this.#streamCalls]) call.cancel();
    this.#client.close();
  }
}
