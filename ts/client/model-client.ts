/**
 * `ModelClient`: PyTriton's ModelClient in TypeScript conventions, over HTTP (or gRPC once the
 * gRPC client exists: the URL decides, see connect.ts). It waits for the server and the model,
 * reads the model's config once, and infers one sample (`inferSample`: the batch axis is added
 * and stripped for you) or a batch (`inferBatch`).
 *
 * Differences forced by JavaScript: the constructor cannot block, so with `lazyInit: false`
 * initialization starts in the constructor and the first call waits for it (a failed
 * initialization is retried by the next call); `modelConfig` and `isBatchingSupported` are
 * promise-valued getters (`await client.modelConfig`), like PyTriton's AsyncioModelClient.
 *
 * Decoupled models (0..N responses per request) stream: `inferSampleStream` / `inferBatchStream`
 * are async iterators of outputs (PyTriton's DecoupledModelClient), over gRPC; `inferSample` and
 * `inferBatch` refuse them.
 *
 * ```ts
 * const client = new ModelClient('localhost', 'add_sub');
 * const { OUTPUT0 } = await client.inferSample({ INPUT0: new Float32Array([1, 2]), INPUT1: new Float32Array([3, 4]) });
 * await client.close();
 * ```
 */
import { InferenceServerError } from '../errors';
import { NDArray, ndarray, parseDataType, typedArrayFor, type DataType, type TypedArray } from '../tensor';
import { clientForUrl, type ClientOptions } from './connect';
import { ClientClosedError, ClientTimeoutError, ClientValueError, ModelDoesntSupportBatchingError } from './errors';
import { toGenerateValue, fromGenerateValue } from './generate-values';
import { GrpcInferenceServerClient } from './grpc';
import { HttpInferenceServerClient } from './http';
import type { InferenceServerClient } from './types';
import type { ClientInputsOf, InferResultOf, ModelSpec } from '../typed-model';
import { sequenceParameters, type SequenceOptions } from './sequence';
import type { PemSource } from './tls';
import { stringifyExactJson } from '../exact-json';

/** A tensor of the model's config, as ModelClient reads it. */
export interface ModelTensorSpec {
  name: string;
  dtype: DataType;
  /** Config dims, without the batch axis. */
  shape: number[];
  optional: boolean;
}

/**
 * The input's declared datatype when `value` is its kind of array (a Uint8Array for BOOL, a
 * Uint16Array for FP16 or BF16, which the array alone would call UINT8 / UINT16), as
 * triton.infer() reads it; otherwise the array decides.
 */
function declaredType(config: ModelClientConfig, name: string, value: unknown): DataType | undefined {
  const dtype = config.inputs.find((t) => t.name === name)?.dtype;
  if (!dtype || dtype === 'BYTES' || !ArrayBuffer.isView(value)) return undefined;
  return value instanceof typedArrayFor(dtype) ? dtype : undefined;
}

/** What ModelClient needs of a model's config (PyTriton's TritonModelConfig subset). */
export interface ModelClientConfig {
  modelName: string;
  maxBatchSize: number;
  batching: boolean;
  decoupled: boolean;
  inputs: ModelTensorSpec[];
  outputs: ModelTensorSpec[];
}

export interface ModelClientOptions {
  /** Default true: wait for the model and read its config on the first call. */
  lazyInit?: boolean;
  /** Default 300: how long initialization may wait for the server and the model. */
  initTimeoutS?: number;
  /** Default 60: deadline of each inference. */
  inferenceTimeoutS?: number;
  /** Skip reading the config from the server. */
  modelConfig?: ModelClientConfig;
  /** Default true: wait until the model is ready (skipped with a given modelConfig when false). */
  ensureModelIsReady?: boolean;
  /** Sent as `authorization: Bearer <token>`. */
  accessToken?: string;
  /** Connect over TLS (HTTPS for an http URL, TLS for a grpc one). Default false. */
  ssl?: boolean;
  /** The CA(s) the server's certificate must be signed by (a PEM file's path or its contents). */
  rootCertificates?: PemSource;
  /** The client certificate's key, for servers that require client certificates (mutual TLS). */
  privateKey?: PemSource;
  /** The client certificate (chain). */
  certificateChain?: PemSource;
}

/** The clients' TLS options for ModelClient's (tritonclient.grpc's names, mapped to ssl_options for HTTP). */
function tlsOptions(options: ModelClientOptions): ClientOptions {
  const { ssl, rootCertificates, privateKey, certificateChain } = options;
  const given = rootCertificates !== undefined || privateKey !== undefined || certificateChain !== undefined;
  if (given && !ssl) throw new ClientValueError('rootCertificates, privateKey and certificateChain need ssl: true (they are certificates of a TLS connection)');
  return {
    ssl, rootCertificates, privateKey, certificateChain,
    sslOptions: ssl && given ? { caCerts: rootCertificates, certFile: certificateChain, keyFile: privateKey } : undefined,
  };
}

/** An input: an NDArray, a TypedArray (1-D) or byte strings (BYTES, 1-D). */
export type ModelInput = NDArray | TypedArray | (string | Uint8Array)[];
/** Inputs by position (the config's input order) or by name. */
export type ModelInputs = ModelInput[] | Record<string, ModelInput>;

/**
 * Options of one call. `sequenceId` / `sequenceStart` / `sequenceEnd` (a stateful model's
 * sequence, as tritonclient's `sequence_id`, `sequence_start`, `sequence_end`) travel as request
 * parameters; streaming calls carry them over gRPC only.
 */
export interface InferCallOptions extends SequenceOptions {
  /** Request parameters (string, number or boolean values). */
  parameters?: Record<string, string | number | boolean>;
  /** Extra request headers (string, number or boolean values). */
  headers?: Record<string, string | number | boolean>;
}

export interface StreamCallOptions extends InferCallOptions {
  /** Aborting cancels the request on the server (the model's generator stops); the iterator throws CANCELLED. */
  signal?: AbortSignal;
}

interface ConfigJson {
  name?: string;
  max_batch_size?: number;
  input?: { name: string; data_type: string; dims: number[]; optional?: boolean }[];
  output?: { name: string; data_type: string; dims: number[] }[];
  model_transaction_policy?: { decoupled?: boolean };
}

/** Reads Triton's JSON config (GET .../config) into ModelClientConfig. */
export function modelClientConfig(json: Record<string, unknown>, modelName: string): ModelClientConfig {
  const c = json as ConfigJson;
  const spec = (t: { name: string; data_type: string; dims: number[]; optional?: boolean }): ModelTensorSpec => ({
    name: t.name, dtype: parseDataType(t.data_type), shape: (t.dims ?? []).map(Number), optional: t.optional ?? false,
  });
  const maxBatchSize = Number(c.max_batch_size ?? 0);
  return {
    modelName: c.name || modelName,
    maxBatchSize,
    batching: maxBatchSize > 0,
    decoupled: c.model_transaction_policy?.decoupled ?? false,
    inputs: (c.input ?? []).map(spec),
    outputs: (c.output ?? []).map(spec),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function checkValues(what: string, values: Record<string, unknown> | undefined): void {
  for (const [key, value] of Object.entries(values ?? {})) {
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ClientValueError(`${what} '${key}' must be a string, number or boolean, got ${typeof value}`);
    }
  }
}

function stringValues(values: Record<string, string | number | boolean> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values ?? {})) out[key] = String(value);
  return out;
}

/**
 * With a model spec as type argument (`new ModelClient<typeof spec>(url, name)`, see
 * `defineModel`), inputs by name and results are typed by the spec; without one, as before.
 */
export class ModelClient<M extends ModelSpec = ModelSpec> {
  readonly url: string;
  readonly modelName: string;
  readonly modelVersion: string | undefined;
  readonly #client: InferenceServerClient;
  readonly #options: ModelClientOptions;
  #config: ModelClientConfig | null;
  #init: Promise<ModelClientConfig> | null = null;
  #closed = false;

  constructor(url: string, modelName: string, modelVersion?: string, options: ModelClientOptions = {}) {
    this.url = url;
    this.modelName = modelName;
    this.modelVersion = modelVersion;
    this.#options = options;
    this.#config = options.modelConfig ?? null;
    const networkTimeoutS = Math.min(60, options.initTimeoutS ?? 300);
    this.#client = clientForUrl(url, {
      ...tlsOptions(options),
      timeoutMs: networkTimeoutS * 1000,
      headers: options.accessToken ? { authorization: `Bearer ${options.accessToken}` } : undefined,
    });
    // Eager initialization: started now; the first call waits for it (a failure is retried then).
    if (options.lazyInit === false) this.#initialize().catch(() => undefined);
  }

  /** A new client for the same model reusing this one's URL, options and cached config. */
  static fromExistingClient(client: ModelClient): ModelClient {
    return new ModelClient(client.url, client.modelName, client.modelVersion, {
      ...client.#options, modelConfig: client.#config ?? client.#options.modelConfig, lazyInit: true,
    });
  }

  #checkOpen(): void {
    if (this.#closed) throw new ClientClosedError(`ModelClient for model '${this.modelName}' is closed`);
  }

  /** Waits for the model (unless told not to) and reads its config, once. */
  #initialize(): Promise<ModelClientConfig> {
    this.#init ??= (async () => {
      const timeoutS = this.#options.initTimeoutS ?? 300;
      if (!this.#config || (this.#options.ensureModelIsReady ?? true)) await this.waitForModel(timeoutS);
      this.#config ??= modelClientConfig(await this.#client.modelConfig(this.modelName, this.modelVersion), this.modelName);
      return this.#config;
    })();
    // A failed initialization is retried by the next call.
    this.#init.catch(() => { this.#init = null; });
    return this.#init;
  }

  /** The model's config (read from the server once). */
  get modelConfig(): Promise<ModelClientConfig> {
    try {
      this.#checkOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#initialize();
  }

  /** Whether the model batches (max_batch_size > 0). */
  get isBatchingSupported(): Promise<boolean> {
    return this.modelConfig.then((c) => c.batching);
  }

  /** Waits until the server is live and ready; ClientTimeoutError after `timeoutS`. */
  async waitForServer(timeoutS: number): Promise<void> {
    await this.#poll(timeoutS, `the server at ${this.url}`, async () =>
      (await this.#client.serverLive()) && (await this.#client.serverReady()));
  }

  /**
   * Waits until the server and the model are ready; ClientTimeoutError after `timeoutS`, as
   * PyTriton's wait_for_model_ready (a model bound or loaded later is waited for). When the
   * server's repository index does not list the model (a misspelled name?), the timeout's
   * message says which models it has.
   */
  async waitForModel(timeoutS: number): Promise<void> {
    let missing = '';
    await this.#poll(timeoutS, `model '${this.modelName}' at ${this.url}`, async () => {
      if (!(await this.#client.serverLive()) || !(await this.#client.serverReady())) return false;
      if (await this.#client.modelReady(this.modelName, this.modelVersion)) return true;
      missing = await this.#notInIndex();
      return false;
    }, () => missing);
  }

  /** Why the model may never be ready: the server's index does not list it ('' when it does, or cannot tell). */
  async #notInIndex(): Promise<string> {
    let index: { name: string }[];
    try {
      index = await this.#client.repositoryIndex();
    } catch {
      return '';  // a server without the repository extension
    }
    if (index.some((entry) => entry.name === this.modelName)) return '';
    return `the server's model repository does not list it: it has ` +
      `${index.length === 0 ? 'no models' : `only ${index.slice(0, 10).map((e) => `'${e.name}'`).join(', ')}${index.length > 10 ? ', …' : ''}`}`;
  }

  async #poll(timeoutS: number, what: string, check: () => Promise<boolean>, why: () => string = () => ''): Promise<void> {
    this.#checkOpen();
    const deadline = Date.now() + timeoutS * 1000;
    let delay = 25;
    for (;;) {
      try {
        if (await check()) return;
      } catch (err) {
        // Not up yet (connection refused): keep waiting. A closed client stops the wait.
        if (this.#closed) throw err;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const reason = why();
        throw new ClientTimeoutError(`waiting for ${what} to be ready took longer than ${timeoutS} s${reason ? `: ${reason}` : ''}`);
      }
      await sleep(Math.min(delay, left));
      delay = Math.min(delay * 2, 1000);
    }
  }

  /** Infers one sample: adds the batch axis (when the model batches) and strips it from the outputs. */
  async inferSample(inputs: ClientInputsOf<M> | ModelInput[], options: InferCallOptions = {}): Promise<InferResultOf<M['outputs']>> {
    const config = await this.#prepareUnary(options);
    const named = this.#named(inputs as ModelInputs, config);
    if (config.batching) for (const name in named) named[name] = named[name].reshape([1, ...named[name].shape]);
    const outputs = await this.#infer(named, options);
    if (config.batching) for (const name in outputs) outputs[name] = outputs[name].reshape(outputs[name].shape.slice(1));
    return outputs as InferResultOf<M['outputs']>;
  }

  /** Infers a batch (inputs carry their batch axis); ModelDoesntSupportBatchingError for non-batching models. */
  async inferBatch(inputs: ClientInputsOf<M> | ModelInput[], options: InferCallOptions = {}): Promise<InferResultOf<M['outputs']>> {
    const config = await this.#prepareUnary(options);
    if (!config.batching) {
      throw new ModelDoesntSupportBatchingError(`model '${this.modelName}' does not support batching (max_batch_size is 0): use inferSample`);
    }
    return this.#infer(this.#named(inputs as ModelInputs, config), options) as Promise<InferResultOf<M['outputs']>>;
  }

  /** Checks the call's options and waits for the config. */
  async #prepare(options: InferCallOptions): Promise<ModelClientConfig> {
    this.#checkOpen();
    checkValues('parameter', options.parameters);
    checkValues('header', options.headers);
    sequenceParameters(options);  // a bad sequenceId fails here, before any request
    return this.#initialize();
  }

  /** #prepare for inferSample/inferBatch, which need one response per request. */
  async #prepareUnary(options: InferCallOptions): Promise<ModelClientConfig> {
    const config = await this.#prepare(options);
    if (config.decoupled) {
      throw new InferenceServerError('UNSUPPORTED', `model '${this.modelName}' is decoupled (0..N responses per request): ` +
        'use a streaming call, inferSampleStream() or inferBatchStream()');
    }
    return config;
  }

  /** The client streaming calls go through: ModelStreamInfer over gRPC, generate_stream over HTTP. */
  #streamingClient(): GrpcInferenceServerClient | HttpInferenceServerClient {
    this.#checkOpen();
    if (this.#client instanceof GrpcInferenceServerClient || this.#client instanceof HttpInferenceServerClient) return this.#client;
    throw new InferenceServerError('UNSUPPORTED', `ModelClient streaming (model '${this.modelName}') needs an http:// or grpc:// URL, got ${this.url}`);
  }

  /**
   * Streams one sample (PyTriton's DecoupledModelClient.infer_sample): adds the batch axis when
   * the model batches and strips it from every response's outputs. Yields one outputs object per
   * response (none, one or many for a decoupled model; one for any other) and ends after the
   * request's final response. Leaving the loop early or aborting `signal` cancels the request.
   * Each wait for the next response is bounded by `inferenceTimeoutS` (ClientTimeoutError).
   */
  async *inferSampleStream(inputs: ModelInputs, options: StreamCallOptions = {}): AsyncGenerator<Record<string, NDArray>, void, undefined> {
    const client = this.#streamingClient();
    const config = await this.#prepare(options);
    const named = this.#named(inputs, config);
    if (client instanceof HttpInferenceServerClient) {
      // generate's flat JSON: the server adds the batch axis from the model's metadata.
      this.#refuseSequenceOverGenerate(options);
      yield* this.#generateStream(client, named, config, undefined, options);
      return;
    }
    if (config.batching) for (const name in named) named[name] = named[name].reshape([1, ...named[name].shape]);
    for await (const outputs of this.#stream(client, named, options)) {
      if (config.batching) for (const name in outputs) outputs[name] = outputs[name].reshape(outputs[name].shape.slice(1));
      yield outputs;
    }
  }

  /** Streams one batch (inputs carry their batch axis); ModelDoesntSupportBatchingError for non-batching models. */
  async *inferBatchStream(inputs: ModelInputs, options: StreamCallOptions = {}): AsyncGenerator<Record<string, NDArray>, void, undefined> {
    const client = this.#streamingClient();
    const config = await this.#prepare(options);
    if (!config.batching) {
      throw new ModelDoesntSupportBatchingError(`model '${this.modelName}' does not support batching (max_batch_size is 0): use inferSampleStream`);
    }
    if (client instanceof HttpInferenceServerClient) {
      this.#refuseSequenceOverGenerate(options);
      yield* this.#generateStream(client, this.#named(inputs, config), config, -1, options);
      return;
    }
    yield* this.#stream(client, this.#named(inputs, config), options);
  }

  /**
   * Streams over HTTP generate_stream: inputs as generate's flat JSON values, each response's
   * values back as NDArrays of the config's datatypes and dims (after `rows` batch rows, -1 =
   * from the element count; none for a sample).
   */
  async *#generateStream(
    client: HttpInferenceServerClient, inputs: Record<string, NDArray>, config: ModelClientConfig, rows: number | undefined,
    options: StreamCallOptions,
  ): AsyncGenerator<Record<string, NDArray>, void, undefined> {
    const body: Record<string, unknown> = {};
    for (const name in inputs) body[name] = toGenerateValue(name, inputs[name]);
    if (options.parameters) body.parameters = options.parameters;
    const responses = client.generateStream(this.modelName, body, {
      modelVersion: this.modelVersion, headers: stringValues(options.headers), signal: options.signal,
    });
    for await (const response of responses) {
      const outputs: Record<string, NDArray> = {};
      for (const spec of config.outputs) {
        if (response[spec.name] !== undefined) outputs[spec.name] = fromGenerateValue(spec, response[spec.name], rows);
      }
      yield outputs;
    }
  }

  /** HTTP streams go through generate_stream, whose flat JSON has no sequence parameters. */
  #refuseSequenceOverGenerate(options: SequenceOptions): void {
    if (sequenceParameters(options) === null) return;
    throw new InferenceServerError('UNSUPPORTED', `model '${this.modelName}': a streamed sequence request needs a grpc:// URL ` +
      `(HTTP streams use generate_stream, which carries no sequence_id); got ${this.url}`);
  }

  async *#stream(
    client: GrpcInferenceServerClient, inputs: Record<string, NDArray>, options: StreamCallOptions,
  ): AsyncGenerator<Record<string, NDArray>, void, undefined> {
    const responses = client.streamInfer(
      {
        modelName: this.modelName, modelVersion: this.modelVersion, inputs, parameters: options.parameters, headers: stringValues(options.headers),
        sequenceId: options.sequenceId, sequenceStart: options.sequenceStart, sequenceEnd: options.sequenceEnd,
      },
      { signal: options.signal, responseTimeoutMs: (this.#options.inferenceTimeoutS ?? 60) * 1000 },
    );
    for await (const result of responses) yield result.outputs;
  }

  #named(inputs: ModelInputs, config: ModelClientConfig): Record<string, NDArray> {
    const entries: [string, ModelInput][] = Array.isArray(inputs)
      ? inputs.map((value, i) => {
        if (i >= config.inputs.length) throw new ClientValueError(`model '${this.modelName}' has ${config.inputs.length} inputs, got ${inputs.length}`);
        return [config.inputs[i].name, value];
      })
      : Object.entries(inputs);
    if (entries.length === 0) throw new ClientValueError(`no inputs given for model '${this.modelName}'`);
    const named: Record<string, NDArray> = {};
    for (const [name, value] of entries) {
      if (value instanceof NDArray) named[name] = value;
      else if (!ArrayBuffer.isView(value) && !Array.isArray(value)) {
        throw new ClientValueError(`input '${name}' must be an NDArray, a TypedArray or an array of byte strings`);
      } else named[name] = ndarray(value as TypedArray | string[], undefined, declaredType(config, name, value));
    }
    return named;
  }

  async #infer(inputs: Record<string, NDArray>, options: InferCallOptions): Promise<Record<string, NDArray>> {
    const result = await this.#client.infer({
      modelName: this.modelName, modelVersion: this.modelVersion, inputs,
      parameters: options.parameters, headers: stringValues(options.headers), timeoutMs: (this.#options.inferenceTimeoutS ?? 60) * 1000,
      sequenceId: options.sequenceId, sequenceStart: options.sequenceStart, sequenceEnd: options.sequenceEnd,
    });
    return result.outputs;
  }

  /** Loads (or reloads) the model through the repository API; `config` as JSON text or object. */
  async loadModel(config?: string | Record<string, unknown>, files?: Record<string, Uint8Array>): Promise<void> {
    this.#checkOpen();
    await this.#client.loadModel(this.modelName, { config: typeof config === 'object' ? stringifyExactJson(config) : config, files });
    this.#config = this.#options.modelConfig ?? null;
    this.#init = null;
  }

  /** Unloads the model through the repository API. */
  async unloadModel(): Promise<void> {
    this.#checkOpen();
    await this.#client.unloadModel(this.modelName);
  }

  /** Closes the connections; every later call fails with ClientClosedError. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#client.close();
  }
}
