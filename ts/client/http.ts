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
import type { LoadModelOptions } from './types';
import type {
  ClientInferRequest, ClientInferResult, InferenceServerClient, ModelMetadata, RepositoryIndexEntry, ServerMetadata,
} from './types';
import { generateResponse, serverSentData, type GenerateOptions, type GenerateResponse } from './http-generate';
import { decodeInferResponse, encodeInferRequest } from './http-infer';
import { errorFromResponse, HttpTransport, type HttpResponse } from './http-transport';
import type * as https from 'node:https';
import * as zlib from 'node:zlib';
import { InferenceServerError } from '../errors';
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

function modelPath(name: string, version?: string): string {
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

export class HttpInferenceServerClient implements InferenceServerClient {
  readonly #transport: HttpTransport;
  readonly #options: HttpClientOptions;

  /** `url`: `host:port` (HTTPS with `ssl: true`) or `http(s)://host:port[/prefix]`. */
  constructor(url: string, options: HttpClientOptions = {}) {
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

  #send(method: 'GET' | 'POST', path: string, body?: unknown, timeoutMs?: number): Promise<HttpResponse> {
    return this.#transport.send({
      method, path,
      body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      timeoutMs: timeoutMs ?? this.#options.timeoutMs ?? 60_000,
    });
  }

  async #json<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await this.#send(method, path, body);
    if (res.status !== 200) throw errorFromResponse(res);
    return (res.body.length === 0 ? undefined : JSON.parse(res.body.toString('utf8'))) as T;
  }

  /** True when the server answers 200 (false for any other HTTP answer, as tritonclient). */
  async #ok(path: string): Promise<boolean> {
    return (await this.#send('GET', path)).status === 200;
  }

  serverLive(): Promise<boolean> {
    return this.#ok('/v2/health/live');
  }

  serverReady(): Promise<boolean> {
    return this.#ok('/v2/health/ready');
  }

  modelReady(modelName: string, modelVersion?: string): Promise<boolean> {
    return this.#ok(`${modelPath(modelName, modelVersion)}/ready`);
  }

  serverMetadata(): Promise<ServerMetadata> {
    return this.#json('GET', '/v2');
  }

  modelMetadata(modelName: string, modelVersion?: string): Promise<ModelMetadata> {
    return this.#json('GET', modelPath(modelName, modelVersion));
  }

  modelConfig(modelName: string, modelVersion?: string): Promise<Record<string, unknown>> {
    return this.#json('GET', `${modelPath(modelName, modelVersion)}/config`);
  }

  modelStatistics(modelName?: string, modelVersion?: string): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.#json('GET', `${modelName ? modelPath(modelName, modelVersion) : '/v2/models'}/stats`);
  }

  repositoryIndex(readyOnly = false): Promise<RepositoryIndexEntry[]> {
    return this.#json('POST', '/v2/repository/index', { ready: readyOnly });
  }

  async loadModel(modelName: string, options: LoadModelOptions = {}): Promise<void> {
    const parameters: Record<string, string> = {};
    if (options.config !== undefined) parameters.config = options.config;
    for (const [key, content] of Object.entries(options.files ?? {})) {
      parameters[key.startsWith('file:') ? key : `file:${key}`] = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString('base64');
    }
    await this.#json('POST', `/v2/repository/models/${encodeURIComponent(modelName)}/load`, { parameters });
  }

  async unloadModel(modelName: string): Promise<void> {
    await this.#json('POST', `/v2/repository/models/${encodeURIComponent(modelName)}/unload`, {});
  }

  async infer(request: ClientInferRequest): Promise<ClientInferResult> {
    const { body, headers } = encodeInferRequest(request, this.#options.binaryInputs ?? true, this.#options.binaryOutputs ?? true);
    let payload = body;
    if (this.#options.requestCompression) {
      payload = await (this.#options.requestCompression === 'gzip' ? gzip(body) : deflate(body));
      headers['Content-Encoding'] = this.#options.requestCompression;
    }
    if (this.#options.responseCompression) headers['Accept-Encoding'] = this.#options.responseCompression;
    const res = await this.#transport.send({
      method: 'POST', path: `${modelPath(request.modelName, request.modelVersion)}/infer`, body: payload,
      headers: { ...headers, ...request.headers },
      timeoutMs: request.timeoutMs ?? this.#options.timeoutMs ?? 60_000,
      signal: request.signal,
    });
    if (res.status !== 200) throw errorFromResponse(res);
    return decodeInferResponse(res);
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
