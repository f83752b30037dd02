/**
 * `HttpInferenceServerClient`: a KServe v2 / Triton HTTP client that works against any
 * Triton-compatible server (Triton itself or infernode). Binary tensor data both ways by
 * default (as tritonclient.http), keep-alive sockets, a timeout per call, and every failure an
 * InferenceServerError carrying the server's message.
 *
 * ```ts
 * const client = new HttpInferenceServerClient('localhost:8000');
 * const { outputs } = await client.infer({ modelName: 'add_sub', inputs: { INPUT0: a, INPUT1: b } });
 * await client.close();
 * ```
 *
 * Triton's generate extension: `generate()` resolves with the one response object;
 * `generateStream()` yields each response as the server sends it (server-sent events).
 */
import type {
  CallOptions, ClientInferRequest, InferenceServerClient, LoadModelOptions, LogSettingsJson, ModelMetadata, RepositoryIndexEntry,
  RepositoryIndexOptions, ServerMetadata, SharedMemoryRegionStatus, TraceSettingsJson, UnloadModelOptions,
} from './types';
import type { InferInput, InferResult } from './infer-io';
import { wireFromInferInputs, wireFromRequest, type InferOptions } from './infer-request';
import { generateResponse, serverSentData, type GenerateOptions, type GenerateResponse } from './http-generate';
import { decodeInferResponse, encodeWireRequest } from './http-infer';
import { errorFromResponse, HttpTransport, type HttpResponse } from './http-transport';
import type * as https from 'node:https';
import * as zlib from 'node:zlib';
import { InferenceServerError } from '../errors';
import { parseJsonExact } from '../exact-json';
import { TritonClientBase } from './client-base';
import { ClientInvalidUrlError, ClientValueError } from './errors';
import { readOptionalPem, type PemSource } from './tls';
import { promisify } from 'node:util';

export interface HttpClientOptions {
  /** Deadline of every call, in ms, unless a call sets its own. Default 60000. */
  timeoutMs?: number;
  /** Headers sent with every request (e.g. `authorization`). */
  headers?: Record<string, string>;
  /** Sockets kept open to the server at most. Default: no limit. */
  maxSockets?: number;
  /** Send inputs as binary data (default true); false sends JSON `data` (FP16/BF16 stay binary). */
  binaryInputs?: boolean;
  /** Ask for outputs as binary data (default true). */
  binaryOutputs?: boolean;
  /** Compress infer request bodies. Default none. */
  requestCompression?: 'gzip' | 'deflate';
  /** Ask the server to compress infer responses. Default none. */
  responseCompression?: 'gzip' | 'deflate';
  /** tritonclient's `ssl`: HTTPS for a URL given without a scheme (an https:// URL is HTTPS anyway). Default false. */
  ssl?: boolean;
  /** tritonclient's `ssl_options`: certificates for HTTPS (file paths, or the PEM bytes). */
  sslOptions?: HttpSslOptions;
  /** tritonclient's `insecure`: do not check that the server's certificate names the host. Default false. */
  insecure?: boolean;
}

/**
 * The certificates of an HTTPS connection (tritonclient's ssl_options keys ca_certs, certfile,
 * keyfile): each a PEM file's path or its contents.
 */
export interface HttpSslOptions {
  /** The CA(s) the server's certificate must be signed by. Default: Node's bundled public CAs. */
  caCerts?: PemSource;
  /** The client certificate (chain), for servers that require one (mutual TLS). */
  certFile?: PemSource;
  /** The client certificate's private key. */
  keyFile?: PemSource;
}

const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

/** A model's route under /v2 (the version's when one is given). */
export function modelPath(name: string, version?: string): string {
  return `/v2/models/${encodeURIComponent(name)}${version ? `/versions/${encodeURIComponent(version)}` : ''}`;
}

/** The https Agent options `options` ask for; undefined when they set none. */
function httpsAgentOptions(options: HttpClientOptions): https.AgentOptions | undefined {
  const ssl = options.sslOptions ?? {};
  if (ssl.certFile === undefined && ssl.keyFile !== undefined) throw new ClientValueError('sslOptions.keyFile needs sslOptions.certFile');
  if (ssl.certFile !== undefined && ssl.keyFile === undefined) throw new ClientValueError('sslOptions.certFile needs sslOptions.keyFile');
  const agent: https.AgentOptions = {
    ca: readOptionalPem(ssl.caCerts, 'sslOptions.caCerts'),
    cert: readOptionalPem(ssl.certFile, 'sslOptions.certFile'),
    key: readOptionalPem(ssl.keyFile, 'sslOptions.keyFile'),
    checkServerIdentity: options.insecure ? () => undefined : undefined,
  };
  const given = Object.entries(agent).filter(([, v]) => v !== undefined);
  return given.length === 0 ? undefined : Object.fromEntries(given) as https.AgentOptions;
}

/**
 * A tritonclient plugin: called before every call with the call's headers, which it may change
 * (e.g. add `authorization`). tritonclient's `register_plugin` takes an object with `__call__`.
 */

/** `path` with `queryParams` (tritonclient.http's query_params: lists repeat their key). */
function withQuery(path: string, queryParams: CallOptions['queryParams']): string {
  if (!queryParams) return path;
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(queryParams)) {
    for (const v of Array.isArray(value) ? value : [value]) query.append(key, String(v));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** A CUDA IPC handle as the HTTP API carries it: base64 (a string is taken as base64 already). */
function base64Handle(rawHandle: Uint8Array | string): string {
  if (typeof rawHandle === 'string') return rawHandle;
  return Buffer.from(rawHandle.buffer, rawHandle.byteOffset, rawHandle.byteLength).toString('base64');
}

/** `[/region/{name}]` of the shared-memory paths: all regions when the name is empty. */
function regionPath(kind: 'system' | 'cuda', name: string, action: string): string {
  return `/v2/${kind}sharedmemory${name ? `/region/${encodeURIComponent(name)}` : ''}/${action}`;
}

function tracePath(modelName?: string): string {
  return modelName ? `/v2/models/${encodeURIComponent(modelName)}/trace/setting` : '/v2/trace/setting';
}

export class HttpInferenceServerClient extends TritonClientBase implements InferenceServerClient {
  readonly #transport: HttpTransport;
  readonly #options: HttpClientOptions;

  /** `url`: `host:port` (HTTPS with `ssl: true`) or `http(s)://host:port[/prefix]`. */
  constructor(url: string, options: HttpClientOptions = {}) {
    super();
    this.#options = options;
    if (options.ssl && /^http:\/\//i.test(url)) {
      throw new ClientInvalidUrlError(`ssl is true but the URL '${url}' says http://: give host:port or an https:// URL`);
    }
    const tlsUrl = options.ssl && !url.includes('://') ? `https://${url}` : url;
    this.#transport = new HttpTransport(tlsUrl, options.headers, options.maxSockets, httpsAgentOptions(options));
  }

  /** The server's base URL. */
  get url(): string {
    return this.#transport.url.href;
  }

  /** The call's headers after the plugin saw them. */
  #headers(headers: Record<string, string> | undefined): Record<string, string> {
    const request = { headers: { ...headers } };
    this.plugin()?.(request);
    return request.headers;
  }

  #send(method: 'GET' | 'POST', path: string, body: unknown, options: CallOptions): Promise<HttpResponse> {
    return this.#transport.send({
      method, path: withQuery(path, options.queryParams),
      body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...this.#headers(options.headers) },
      timeoutMs: options.timeoutMs ?? this.#options.timeoutMs ?? 60_000,
      signal: options.signal,
    });
  }

  async #json<T>(
    method: 'GET' | 'POST', path: string, body: unknown, options: CallOptions = {}, parse: (text: string) => unknown = JSON.parse,
  ): Promise<T> {
    const res = await this.#send(method, path, body, options);
    if (res.status !== 200) throw errorFromResponse(res);
    if (res.body.length === 0) return undefined as T;
    try {
      return parse(res.body.toString('utf8')) as T;
    } catch (err) {
      if (err instanceof InferenceServerError) throw err;
      throw new InferenceServerError('INTERNAL', `the server's answer to ${method} ${path} is not JSON: ${(err as Error).message}`);
    }
  }

  /** True when the server answers 200 (false for any other HTTP answer, as tritonclient). */
  async #ok(path: string, options: CallOptions): Promise<boolean> {
    return (await this.#send('GET', path, undefined, options)).status === 200;
  }

  isServerLive(options: CallOptions = {}): Promise<boolean> {
    return this.#ok('/v2/health/live', options);
  }

  isServerReady(options: CallOptions = {}): Promise<boolean> {
    return this.#ok('/v2/health/ready', options);
  }

  isModelReady(modelName: string, modelVersion = '', options: CallOptions = {}): Promise<boolean> {
    return this.#ok(`${modelPath(modelName, modelVersion)}/ready`, options);
  }

  getServerMetadata(options: CallOptions = {}): Promise<ServerMetadata> {
    return this.#json('GET', '/v2', undefined, options);
  }

  getModelMetadata(modelName: string, modelVersion = '', options: CallOptions = {}): Promise<ModelMetadata> {
    return this.#json('GET', modelPath(modelName, modelVersion), undefined, options);
  }

  /**
   * The model's config as the server sends it; 64-bit fields beyond 2^53 - 1 (e.g. Triton's
   * `priority_levels: 18446744073709551615`) come back as exact BigInts, not rounded numbers.
   */
  getModelConfig(modelName: string, modelVersion = '', options: CallOptions = {}): Promise<Record<string, unknown>> {
    return this.#json('GET', `${modelPath(modelName, modelVersion)}/config`, undefined, options, parseJsonExact);
  }

  getModelRepositoryIndex(options: RepositoryIndexOptions = {}): Promise<RepositoryIndexEntry[]> {
    return this.#json('POST', '/v2/repository/index', { ready: options.readyOnly ?? false }, options);
  }

  async loadModel(modelName: string, options: LoadModelOptions = {}): Promise<void> {
    const parameters: Record<string, string> = {};
    if (options.config !== undefined) parameters.config = options.config;
    for (const [key, content] of Object.entries(options.files ?? {})) {
      parameters[key.startsWith('file:') ? key : `file:${key}`] = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString('base64');
    }
    await this.#json('POST', `/v2/repository/models/${encodeURIComponent(modelName)}/load`, { parameters }, options);
  }

  async unloadModel(modelName: string, options: UnloadModelOptions = {}): Promise<void> {
    const body = { parameters: { unload_dependents: options.unloadDependents ?? false } };
    await this.#json('POST', `/v2/repository/models/${encodeURIComponent(modelName)}/unload`, body, options);
  }

  getInferenceStatistics(modelName = '', modelVersion = '', options: CallOptions = {}): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.#json('GET', `${modelName ? modelPath(modelName, modelVersion) : '/v2/models'}/stats`, undefined, options);
  }

  /** Changes the global trace settings, or a model's (`modelName`); a null value clears a setting. Resolves with the settings after. */
  updateTraceSettings(
    modelName?: string, settings: Record<string, string | number | string[] | null> = {}, options: CallOptions = {},
  ): Promise<TraceSettingsJson> {
    return this.#json('POST', tracePath(modelName), settings, options);
  }

  getTraceSettings(modelName?: string, options: CallOptions = {}): Promise<TraceSettingsJson> {
    return this.#json('GET', tracePath(modelName), undefined, options);
  }

  /** Changes the server's log settings (log_info, log_verbose_level, ...); resolves with the settings after. */
  updateLogSettings(settings: LogSettingsJson, options: CallOptions = {}): Promise<LogSettingsJson> {
    return this.#json('POST', '/v2/logging', settings, options);
  }

  getLogSettings(options: CallOptions = {}): Promise<LogSettingsJson> {
    return this.#json('GET', '/v2/logging', undefined, options);
  }

  /** Every registered system region, or the one named. */
  getSystemSharedMemoryStatus(regionName = '', options: CallOptions = {}): Promise<SharedMemoryRegionStatus[]> {
    return this.#json('GET', regionPath('system', regionName, 'status'), undefined, options);
  }

  /** Registers `byteSize` bytes at `offset` of the POSIX shared-memory object `key` (e.g. '/my_region') as region `name`. */
  async registerSystemSharedMemory(name: string, key: string, byteSize: number, offset = 0, options: CallOptions = {}): Promise<void> {
    await this.#json('POST', regionPath('system', name, 'register'), { key, offset, byte_size: byteSize }, options);
  }

  /** Unregisters region `name`, or every system region when it is empty. */
  async unregisterSystemSharedMemory(name = '', options: CallOptions = {}): Promise<void> {
    await this.#json('POST', regionPath('system', name, 'unregister'), {}, options);
  }

  getCudaSharedMemoryStatus(regionName = '', options: CallOptions = {}): Promise<SharedMemoryRegionStatus[]> {
    return this.#json('GET', regionPath('cuda', regionName, 'status'), undefined, options);
  }

  /** `rawHandle`: the cudaIpcMemHandle_t's bytes, or their base64 text (what tritonclient's cudashm.get_raw_handle gives). */
  async registerCudaSharedMemory(
    name: string, rawHandle: Uint8Array | string, deviceId: number, byteSize: number, options: CallOptions = {},
  ): Promise<void> {
    const body = { raw_handle: { b64: base64Handle(rawHandle) }, device_id: deviceId, byte_size: byteSize };
    await this.#json('POST', regionPath('cuda', name, 'register'), body, options);
  }

  async unregisterCudaSharedMemory(name = '', options: CallOptions = {}): Promise<void> {
    await this.#json('POST', regionPath('cuda', name, 'unregister'), {}, options);
  }

  /**
   * One inference. tritonclient's shape, `infer(modelName, [InferInput...], { outputs, requestId,
   * sequenceId, priority, timeout, headers, timeoutMs, signal, ... })`, or infernode's request
   * object, `infer({ modelName, inputs: { IN: ndarray } })`. Resolves with an InferResult.
   */
  infer(request: ClientInferRequest): Promise<InferResult>;
  infer(modelName: string, inputs: InferInput[], options?: InferOptions): Promise<InferResult>;
  async infer(request: ClientInferRequest | string, inputs?: InferInput[], options?: InferOptions): Promise<InferResult> {
    const wire = typeof request === 'string'
      ? wireFromInferInputs(request, inputs ?? [], options)
      : wireFromRequest(request, this.#options.binaryInputs ?? true, this.#options.binaryOutputs ?? true);
    const { body, headers } = encodeWireRequest(wire, this.#options.binaryOutputs ?? true);
    let payload = body;
    const requestCompression = wire.requestCompression ?? this.#options.requestCompression;
    const responseCompression = wire.responseCompression ?? this.#options.responseCompression;
    if (requestCompression) {
      payload = await (requestCompression === 'gzip' ? gzip(body) : deflate(body));
      headers['Content-Encoding'] = requestCompression;
    }
    if (responseCompression) headers['Accept-Encoding'] = responseCompression;
    const res = await this.#transport.send({
      method: 'POST', path: withQuery(`${modelPath(wire.modelName, wire.modelVersion)}/infer`, options?.queryParams), body: payload,
      headers: { ...headers, ...this.#headers(wire.headers) },
      timeoutMs: wire.timeoutMs ?? this.#options.timeoutMs ?? 60_000,
      signal: wire.signal,
    });
    if (res.status !== 200) throw errorFromResponse(res);
    return decodeInferResponse(res);
  }

  /** tritonclient's async_infer: the same call as `infer`, which is asynchronous already (a Promise). */
  asyncInfer(request: ClientInferRequest): Promise<InferResult>;
  asyncInfer(modelName: string, inputs: InferInput[], options?: InferOptions): Promise<InferResult>;
  asyncInfer(request: ClientInferRequest | string, inputs?: InferInput[], options?: InferOptions): Promise<InferResult> {
    return typeof request === 'string' ? this.infer(request, inputs ?? [], options) : this.infer(request);
  }

  /**
   * tritonclient.http's generate_request_body: the body `infer` would send, and the JSON header's
   * length (the Inference-Header-Content-Length to send with it; null when the body is all JSON).
   */
  static generateRequestBody(inputs: InferInput[], options: Omit<InferOptions, keyof CallOptions> = {}): { body: Buffer; jsonSize: number | null } {
    const { body, jsonSize } = encodeWireRequest(wireFromInferInputs('generateRequestBody', inputs, options), true);
    return { body, jsonSize };
  }

  /**
   * tritonclient.http's parse_response_body: an InferResult from an infer response's body.
   * `headerLength`: its Inference-Header-Content-Length (absent: all JSON); `contentEncoding`:
   * its Content-Encoding (gzip, deflate).
   */
  static parseResponseBody(body: Uint8Array, options: { headerLength?: number; contentEncoding?: 'gzip' | 'deflate' } = {}): InferResult {
    let bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    if (options.contentEncoding === 'gzip') bytes = zlib.gunzipSync(bytes);
    else if (options.contentEncoding === 'deflate') bytes = zlib.inflateSync(bytes);
    const headers = options.headerLength === undefined ? {} : { 'inference-header-content-length': String(options.headerLength) };
    return decodeInferResponse({ status: 200, headers, body: bytes });
  }

  /**
   * `POST .../generate`: the model's one response object (Triton's generate mapping: `body`'s
   * keys that name inputs become inputs, the others parameters). Rejects with the server's error.
   */
  async generate(modelName: string, body: Record<string, unknown>, options: GenerateOptions = {}): Promise<GenerateResponse> {
    const res = await this.#transport.send({
      method: 'POST', path: `${modelPath(modelName, options.modelVersion)}/generate`, body: Buffer.from(JSON.stringify(body)),
      headers: { 'Content-Type': 'application/json', ...options.headers },
      timeoutMs: options.timeoutMs ?? this.#options.timeoutMs ?? 60_000,
      signal: options.signal,
    });
    if (res.status !== 200) throw errorFromResponse(res);
    let value: unknown;
    try {
      value = JSON.parse(res.body.toString('utf8'));
    } catch (err) {
      throw new InferenceServerError('INTERNAL', `the server's generate response is not JSON: ${(err as Error).message}`);
    }
    return generateResponse(value, res.status);
  }

  /**
   * `POST .../generate_stream`: each response object as the server sends it; the iteration ends
   * after the model's final response, or throws the server's error (an error event, or an error
   * answer before the stream). Leaving the loop early, or aborting `signal`, closes the
   * connection: the server cancels the request.
   */
  async *generateStream(
    modelName: string, body: Record<string, unknown>, options: GenerateOptions = {},
  ): AsyncGenerator<GenerateResponse> {
    const res = await this.#transport.open({
      method: 'POST', path: `${modelPath(modelName, options.modelVersion)}/generate_stream`, body: Buffer.from(JSON.stringify(body)),
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...options.headers },
      timeoutMs: options.timeoutMs ?? this.#options.timeoutMs ?? 60_000,
      signal: options.signal,
    });
    try {
      if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        const chunks: Buffer[] = [];
        for await (const chunk of res.body as AsyncIterable<Buffer>) chunks.push(chunk);
        const whole = { status: res.status, headers: res.headers, body: Buffer.concat(chunks) };
        if (res.status !== 200) throw errorFromResponse(whole);
        throw new InferenceServerError('INTERNAL', `generate_stream answered ${res.headers['content-type']} instead of an event stream`);
      }
      for await (const data of serverSentData(res.body)) {
        let value: unknown;
        try {
          value = JSON.parse(data);
        } catch (err) {
          throw new InferenceServerError('INTERNAL', `an event of the server's generate stream is not JSON: ${(err as Error).message}`);
        }
        yield generateResponse(value, res.status);
      }
    } catch (err) {
      if (err instanceof InferenceServerError) throw err;
      throw new InferenceServerError('UNAVAILABLE',
        `the connection to ${this.#transport.url.origin} closed before the generate stream ended: ${(err as Error).message}`);
    } finally {
      // Left early (or failed): closing the connection tells the server to cancel the request.
      if (!res.body.complete) res.body.destroy();
    }
  }

  /** Closes the keep-alive sockets; later calls reject with ClientClosedError. */
  async close(): Promise<void> {
    this.#transport.close();
  }
}
