/**
 * A bound model: the JS side of one NativeModel. It queues requests natively, runs the bound
 * callables when native code dispatches a batch to an instance, and settles each request's
 * promise when native code hands the request back.
 *
 * Ownership: `pending` holds every request (and so its input TypedArrays, which native code
 * reads as views) from enqueue until native code hands it back; only then is the entry removed.
 */
import { performance } from 'node:perf_hooks';
import { InferenceServerError, clip, invalidArg, toInferenceServerError, StatusCode } from './errors';
import type { NormalizedModelConfig, NormalizedSequenceBatching, NormalizedTensor } from './config/normalize';
import { DEFAULT_EXIT_TIMEOUT_MS } from './config/defaults';
import {
  native, TIMING_FIELDS, type Dispatch, type EnqueueData, type HandedBack, type RateLimiter, type EnqueueInputs,
  type NativeModel, type NativeOutput, type NativeResponses, type NativeSequence,
} from './native';
import { DeviceTensor, writtenOnDevice, type DeviceOutput } from './device-tensor';
import {
  DEFAULT_MAX_QUEUED_RESPONSES, ResponseSender, ResponseStream, driveDecoupled, type DecoupledSink,
} from './decoupled';
import { collectOutputs } from './outputs';
import { modelCacheFor, withoutCacheStats, type ModelResponseCache, type ModelStats, type RequestSink } from './cache/model-cache';
import type { ResponseCache } from './cache/response-cache';
import { Request, type InferFunc, type Parameters, type TritonContext } from './request';
import { PendingTable } from './pending-table';
import {
  NDArray, bytesOfTensor, checkTensorData, copyNDArray, dataTypeCode, isPackedBytes, packedBytesTensor, typedArrayFor,
  type DataType,
} from './tensor';

/**
 * Where a request's cancellation comes from: an AbortSignal, or any object with these two
 * members (the HTTP frontend passes a lighter one than AbortSignal, whose construction and
 * listener registration cost microseconds per request).
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  /** Where present (an AbortSignal), the request's listener is removed once it settles. */
  removeEventListener?(type: 'abort', listener: () => void): void;
}

/**
 * What a successful request counted in its model's statistics, in nanoseconds: its wait in the
 * model's queue and its batch's compute phases (each request of a batch counts the batch's).
 * @internal
 */
export interface RequestTimes {
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

/** Options of one in-process inference. */
export interface InferOptions {
  /** Priority level (1 is highest); 0 or absent = the model's default level. */
  priority?: number;
  /** Queue timeout; counts only where the model's queue policy allows overriding. */
  timeoutMicroseconds?: number;
  parameters?: Parameters;
  /** Outputs to return; all declared outputs when absent. */
  outputs?: string[];
  /** Aborting cancels the request: removed from the queue, or its result dropped. */
  signal?: CancelSignal;
  /**
   * Warm-up: the instance (0-based) that must execute the request. Only while the model serves
   * nothing else: a pinned request holds back the requests queued behind it.
   * @internal
   */
  instance?: number;
  /**
   * Sequence batcher models: the correlation id of the request's sequence (a non-zero unsigned
   * 64-bit integer, as a number or bigint, or a non-empty string). Ignored by other models, as
   * Triton ignores `sequence_id` there.
   */
  sequenceId?: number | bigint | string;
  /** The first request of its sequence (Triton's `sequence_start`). */
  sequenceStart?: boolean;
  /** The last request of its sequence (Triton's `sequence_end`). */
  sequenceEnd?: boolean;
  /**
   * Outputs the client wants in CUDA shared memory: a native engine's GPU instance writes them
   * there device to device where it can (models that acceptsDeviceInputs only).
   * @internal
   */
  deviceOutputs?: DeviceOutput[];
  /**
   * The inputs belong to infernode until the request settles (the frontends' received buffers,
   * warm-up data): they are read in place. Without it the inputs are copied when the request is
   * queued, so the caller may reuse, change or transfer its arrays as soon as infer() returns.
   * @internal
   */
  inputsOwned?: boolean;
  /**
   * A successful request adds its own times to these once it ends (a response-cache hit, which
   * executes nothing, adds none); the model's statistics count them as they always do. Triton's
   * secondary stats aggregator: how an ensemble sums its step requests' compute times into its
   * own statistics (ts/ensemble/).
   * @internal
   */
  addTimesTo?: RequestTimes;
}

/** Options of one request of a decoupled model (inferStream). */
export interface StreamOptions extends InferOptions {
  /**
   * Responses held for a reader that has not taken them (default 1024): past it the request is
   * cancelled with UNAVAILABLE, so a slow reader cannot make the server buffer without bound.
   */
  maxQueuedResponses?: number;
  /**
   * A reader `maxQueuedResponses` behind holds the model's generator back until it takes a
   * response, instead of the request being cancelled (default false). The generator runs apart
   * from the model's instances (they take other requests meanwhile); a callable answering
   * through `request.responseSender`, which cannot wait, is still cancelled past twice the bound.
   */
  waitForReader?: boolean;
}

/**
 * A request's inputs by name: NDArrays, or (from the server's frontends only) inputs left in
 * CUDA shared memory for a model that acceptsDeviceInputs.
 */
export type ModelInputs = Record<string, NDArray | DeviceTensor>;

interface PendingRequest {
  /** The id native code knows the request by. */
  id: number;
  request: Request;
  requestedOutputs: string[] | null;
  resolve: (outputs: Record<string, NDArray>) => void;
  reject: (err: InferenceServerError) => void;
  outputs?: Record<string, NDArray>;
  /** True once the caller has its answer (or was told it was cancelled): nothing more is sent. */
  settled: boolean;
  /** Decoupled models: where the request's responses go. */
  stream?: ResponseStream;
  /** Decoupled models, once executing: ends the request when its caller cancels it. */
  onCancel?: () => void;
  /** Sequence models: the id and flags it was queued with. */
  sequence?: NativeSequence;
  /** Sequence models: executions so far (an iterative request runs several). */
  executions: number;
  /** Sequence models: what the callable receives for this request, step after step. */
  stepRequest?: Request;
  /** Removes the request's abort listener from the caller's signal (#watchAbort). */
  unwatch?: () => void;
  /** InferOptions.addTimesTo. */
  addTimesTo?: RequestTimes;
  /**
   * With a RequestSink: when it was queued (performance.now()), until its first response (a
   * decoupled model's first streamed one, or the error that ends a request before it sent any).
   */
  queuedAt?: number;
}

const SEQUENCE_START = 1;
const SEQUENCE_END = 2;
const RELEASE_OPEN = 1;
const RELEASE_RESCHEDULE = 2;
const MAX_UINT64 = (1n << 64n) - 1n;

/** A request's sequence id and flags as native code takes them; INVALID_ARG for a bad id. */
function nativeSequence(options: InferOptions, model: string): NativeSequence {
  const id = options.sequenceId ?? 0n;
  const flags = (options.sequenceStart ? SEQUENCE_START : 0) | (options.sequenceEnd ? SEQUENCE_END : 0);
  if (typeof id === 'string') return [id, flags];
  const value = typeof id === 'number' && Number.isSafeInteger(id) ? BigInt(id) : id;
  if (typeof value !== 'bigint' || value < 0n || value > MAX_UINT64) {
    throw invalidArg(`sequence id for model '${model}' must be an unsigned 64-bit integer or a string, got ${String(id)}`);
  }
  return [value, flags];
}

/** What executes a model's batches: JS callables (bind, model.js) or a native engine. */
export type ModelEngine =
  | { kind: 'js'; funcs: InferFunc[]; strict: boolean }
  /** ONNX Runtime sessions: one handle per instance group, in the config's order (ts/engines/onnx.ts). */
  | { kind: 'onnx'; handles: object[] };

let nextRequestId = 1;

const RESOLVED = Promise.resolve();

/** Views over a native engine's outputs (no copy: the ArrayBuffers are native memory). */
function nativeOutputsToArrays(outputs: Record<string, NativeOutput>, model: string): Record<string, NDArray> {
  const arrays: Record<string, NDArray> = {};
  for (const name in outputs) {
    const { dtype, shape, data, onDevice } = outputs[name];
    const dt = dtype as DataType;
    arrays[name] = dt === 'BYTES'
      ? packedBytesTensor(shape, new Uint8Array(data), `output '${name}' of model '${model}'`)
      : new NDArray(dt, shape, new (typedArrayFor(dt))(data));
    if (onDevice) writtenOnDevice.add(arrays[name]);
  }
  return arrays;
}

export class BoundModel {
  readonly config: NormalizedModelConfig;
  readonly #native: NativeModel;
  readonly #funcs: InferFunc[];
  readonly #strict: boolean;
  readonly #nativeEngine: boolean;
  readonly #pending = new PendingTable<PendingRequest>();
  readonly #outputNames: Set<string>;
  /** Sequence batcher models: its settings; state outputs are collected with `#stateOutputs`. */
  readonly #sequencing: NormalizedSequenceBatching | null;
  readonly #stateOutputs: NormalizedModelConfig | null;
  /** The model's views (NativeModel.views()), which the counts pump() and completions answer with refer to. */
  readonly #dispatchView: Float64Array;
  /** [1 when the last completeBatch left requests queued: a pump() must follow it]. */
  readonly #pumpOwed: Int32Array;
  readonly #completedIds: Float64Array;
  readonly #completedCodes: Int32Array;
  readonly #completedTimings: Float64Array;
  /** What enqueue reads of a request besides its data (EnqueueMeta): one array, reused, grown when a request needs more. */
  #meta: Float64Array = new Float64Array(64);
  /** Each declared input's index in config.inputs, as enqueue takes it. */
  readonly #inputIndex: Map<string, number>;
  #stopped = false;
  #pumpScheduled = false;
  #drained: (() => void) | null = null;
  /**
   * How long loading this model took, in seconds (Triton's nv_model_load_duration_secs): set
   * by whoever loaded it, the repository's loader or bind() once warmed up; 0 until then.
   */
  loadDurationSeconds = 0;
  /** The server's response cache as this model uses it; null when it uses none (ts/cache/). */
  #responseCache: ModelResponseCache | null = null;
  /** Where each successful request is reported (reportRequestsTo); null: nowhere. */
  protected requestSink: RequestSink | null = null;

  /** `rateLimiter`: the Triton's (when its rateLimit is 'execution_count'). */
  constructor(config: NormalizedModelConfig, engine: ModelEngine, rateLimiter?: RateLimiter) {
    this.config = config;
    this.#funcs = engine.kind === 'js' ? engine.funcs : [];
    this.#strict = engine.kind === 'js' && engine.strict;
    this.#nativeEngine = engine.kind !== 'js';
    this.#outputNames = new Set(config.outputs.map((t) => t.name));
    this.#inputIndex = new Map(config.inputs.map((t, i) => [t.name, i]));
    this.#sequencing = config.sequenceBatching ?? null;
    this.#stateOutputs = this.#sequencing && this.#sequencing.states.length > 0
      ? { ...config, outputs: this.#sequencing.states.map((st): NormalizedTensor => ({
        name: st.outputName, dtype: st.dtype, dims: st.dims, optional: false, allowRaggedBatch: false,
      })) }
      : null;
    this.#native = new (native().NativeModel)(
      config,
      (instance, token, ids) => this.#execute(instance, token, ids),
      (responses) => this.#settle(responses),
      engine.kind === 'onnx' ? engine.handles : undefined,
      rateLimiter,
    );
    [this.#dispatchView, this.#completedIds, this.#completedCodes, this.#pumpOwed, this.#completedTimings] = this.#native.views();
  }

  get name(): string {
    return this.config.name;
  }

  get version(): number {
    return this.config.version;
  }

  /** Requests queued or executing. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Gives the model its Triton's response cache (null: none); the model uses it when its config
   * enables the cache. Called by the Triton that serves the model, before requests arrive.
   * @internal
   */
  useResponseCache(cache: ResponseCache | null): void {
    if (this.#responseCache && this.#responseCache.cache === cache) return;  // published again: its statistics stay
    this.#responseCache = modelCacheFor(this.config, cache);
  }

  /**
   * Reports each successful request to `sink` from now on (null: to nothing). Called by the
   * Triton that serves the model, for its metrics frontend.
   * @internal
   */
  reportRequestsTo(sink: RequestSink | null): void {
    this.requestSink = sink;
  }

  /**
   * Queues one request; resolves with its outputs or rejects with an InferenceServerError. With
   * a response cache, a hit answers without entering the queue.
   */
  infer(inputs: ModelInputs, options: InferOptions = {}): Promise<Record<string, NDArray>> {
    const cache = this.#responseCache;
    // No DeviceTensor with a cache (acceptsDeviceInputs): the cache hashes the bytes.
    if (cache && !this.#stopped) {
      return cache.infer(inputs as Record<string, NDArray>, options, () => this.#inferQueued(inputs, options), this.requestSink);
    }
    return this.#inferQueued(inputs, options);
  }

  #inferQueued(inputs: ModelInputs, options: InferOptions): Promise<Record<string, NDArray>> {
    return new Promise<Record<string, NDArray>>((resolve, reject) => {
      if (this.config.decoupled) {
        reject(new InferenceServerError('UNSUPPORTED', `model '${this.config.name}' is decoupled (0..N responses per ` +
          'request): call inferStream() in process, or stream over gRPC ModelStreamInfer or HTTP generate_stream'));
        return;
      }
      this.#submit(inputs, options, resolve, reject, undefined);
    });
  }

  /**
   * Queues one request of a decoupled model; its responses arrive through the returned async
   * iterator (each item one response's outputs; it ends after the final response, or throws the
   * request's error). Leaving the iteration early cancels the request.
   */
  inferStream(inputs: ModelInputs, options: StreamOptions = {}): ResponseStream {
    const id = nextRequestId++;
    const maxQueued = options.maxQueuedResponses ?? DEFAULT_MAX_QUEUED_RESPONSES;
    const stream = new ResponseStream(maxQueued, () => this.#cancel(id), options.waitForReader === true);
    if (!Number.isSafeInteger(maxQueued) || maxQueued < 1) {
      stream.fail(invalidArg(`maxQueuedResponses must be an integer >= 1, got ${String(maxQueued)}`));
      return stream;
    }
    if (!this.config.decoupled) {
      stream.fail(new InferenceServerError('UNSUPPORTED', `model '${this.config.name}' is not decoupled: call infer()`));
      return stream;
    }
    this.#submit(inputs, options, () => stream.end(), (err) => stream.fail(err), stream, id);
    return stream;
  }

  /** Validates, stores and queues one request; failures go to `reject`. Never throws. */
  #submit(
    inputs: ModelInputs, options: InferOptions, resolve: (outputs: Record<string, NDArray>) => void,
    reject: (err: InferenceServerError) => void, stream: ResponseStream | undefined, id = nextRequestId++,
  ): void {
    try {
      const requestedOutputs = this.#checkRequestedOutputs(options.outputs);
      // Caller-owned inputs are copied when queued: in JS for JS callables (which read them),
      // into pooled native memory by enqueue for native engines.
      const owned = options.inputsOwned === true;
      const data = this.#checkInputs(inputs, !owned && !this.#nativeEngine);
      const entry: PendingRequest = {
        id,
        // JS reads a Request's inputs for JS engines only, which never get a DeviceTensor.
        request: new Request(data as Record<string, NDArray>, options.parameters ?? {}, requestedOutputs),
        requestedOutputs,
        resolve,
        reject,
        settled: false,
        stream,
        sequence: this.#sequencing ? nativeSequence(options, this.config.name) : undefined,
        executions: 0,
        addTimesTo: options.addTimesTo,
        queuedAt: this.requestSink ? performance.now() : undefined,
      };
      // Stored before enqueue: the scheduler may dispatch this request within the call.
      this.#pending.set(id, entry);
      try {
        this.#enqueue(id, data, options, !owned && this.#nativeEngine, entry.sequence);
      } catch (err) {
        this.#pending.delete(id);
        throw err;
      }
      if (options.signal) this.#watchAbort(id, options.signal);
    } catch (err) {
      reject(toInferenceServerError(err));
      return;
    }
    this.#schedulePump();
  }

  #checkRequestedOutputs(names: string[] | undefined): string[] | null {
    if (!names) return null;
    for (const name of names) {
      if (!this.#outputNames.has(name)) {
        throw invalidArg(`unexpected inference output '${name}' for model '${this.config.name}'`);
      }
    }
    return names;
  }

  /**
   * Checks every input's data against its datatype (an NDArray's `data` can be replaced after
   * construction) and, unless infernode owns the inputs, copies them: native engines read them
   * on other threads later, and a caller's buffer may be transferred (detached and freed) or
   * changed meanwhile. The copy is what onnxruntime-node and PyTriton do too.
   */
  #checkInputs(inputs: ModelInputs, copy: boolean): ModelInputs {
    const checked: ModelInputs = copy ? {} : inputs;
    for (const name in inputs) {
      const arr = inputs[name];
      // Only a refusal needs the label: not built per request.
      const what = (): string => `input '${name}' for model '${this.config.name}'`;
      if (arr instanceof DeviceTensor) {
        // Made by the server only, checked against its region and shape (acceptsDeviceInputs).
        if (!this.acceptsDeviceInputs) throw invalidArg(`${what()} is in CUDA shared memory, which this model does not read in place`);
        continue;
      }
      if (!(arr instanceof NDArray)) throw invalidArg(`${what()} must be an NDArray`);
      // BYTES still in wire form were checked when decoded; a native engine takes them as they
      // are, a JS engine's are split here, so a heap that cannot hold them refuses the request.
      if (!(this.#nativeEngine && isPackedBytes(arr))) checkTensorData(arr.dtype, arr.shape, arr.data, what);
      if (copy) checked[name] = copyNDArray(arr);
    }
    return checked;
  }

  /**
   * Whether an input may stay in CUDA shared memory (a DeviceTensor) for this model: native
   * engines read it themselves, unless a response cache must hash its bytes first.
   * @internal
   */
  get acceptsDeviceInputs(): boolean {
    return this.#nativeEngine && this.#responseCache === null;
  }

  /**
   * Queues a request natively: its shapes and options go in the reused meta array (EnqueueMeta),
   * its data arrays as arguments, so Node-API reads no JS array or string per request. A JS
   * engine's inputs are read by JS only: native code gets their byte sizes, not their data. An
   * input in CUDA shared memory goes as [region, offset]: native code holds the region.
   */
  #enqueue(
    id: number, inputs: ModelInputs, options: InferOptions, copyInNative: boolean, sequence?: NativeSequence,
  ): void {
    const data: EnqueueData[] = [];
    let meta = this.#meta;
    let at = 5;
    for (const name in inputs) {
      const index = this.#inputIndex.get(name);
      if (index === undefined) throw invalidArg(`unexpected inference input '${clip(name)}' for model '${this.config.name}'`);
      const arr = inputs[name];
      const shape = arr.shape;
      if (at + 4 + shape.length > meta.length) meta = this.#meta = growMeta(meta, at + 4 + shape.length);
      let bytes: EnqueueData;
      if (arr instanceof DeviceTensor) bytes = [arr.memory, arr.offset];
      else if (arr.dtype === 'BYTES') bytes = this.#nativeEngine ? bytesOfTensor(arr) : undefined;
      else bytes = arr.data as ArrayBufferView;
      meta[at] = index;
      meta[at + 1] = dataTypeCode(arr.dtype);
      meta[at + 2] = arr instanceof DeviceTensor ? arr.byteSize : bytes ? (bytes as ArrayBufferView).byteLength : -1;
      meta[at + 3] = shape.length;
      for (let d = 0; d < shape.length; d++) meta[at + 4 + d] = shape[d];
      at += 4 + shape.length;
      data.push(this.#nativeEngine ? bytes : undefined);
    }
    meta[0] = data.length;
    if (options.deviceOutputs && this.#nativeEngine) {
      data.push(options.deviceOutputs.flatMap((o) => [o.name, o.memory, o.offset, o.byteSize]));
    }
    meta[1] = options.priority ?? 0;
    meta[2] = options.timeoutMicroseconds ?? 0;
    meta[3] = copyInNative ? 1 : 0;
    meta[4] = options.instance ?? -1;
    if (this.#stopped) throw new InferenceServerError('UNAVAILABLE', `model '${this.config.name}' is not ready: it was stopped`);
    if (data.length === 1) this.#native.enqueue(id, meta, sequence, data[0]);
    else this.#native.enqueue(id, meta, sequence, ...data);
  }

  /**
   * Cancels the request when `signal` aborts. The listener leaves a signal that can remove it
   * when the request settles: a long-lived AbortSignal shared by many requests would otherwise
   * hold one listener (and its request id) per request it ever carried.
   */
  #watchAbort(id: number, signal: CancelSignal): void {
    if (signal.aborted) {
      this.#cancel(id);
      return;
    }
    const entry = this.#pending.get(id);
    if (!entry) return;  // already answered
    const listener = (): void => this.#cancel(id);
    signal.addEventListener('abort', listener, { once: true });
    if (signal.removeEventListener) entry.unwatch = () => signal.removeEventListener!('abort', listener);
  }

  /**
   * Cancels a request: a queued one leaves the queue; an executing one is answered CANCELLED
   * now (a decoupled callable's iteration for it stops at its next response) and its entry stays
   * until native code hands it back. `error` replaces the CANCELLED error (a stream too far
   * behind its reader).
   */
  #cancel(id: number, error?: InferenceServerError): void {
    const entry = this.#pending.get(id);
    if (!entry || entry.settled) return;
    const released = this.#native.cancel(id);
    if (released && !error) {
      this.#settle(released);
      return;
    }
    if (released) this.#settle(released, error);
    if (entry.settled) return;
    entry.settled = true;
    this.#firstResponse(entry);
    entry.reject(error ?? new InferenceServerError('CANCELLED', `request for model '${this.config.name}' was cancelled`));
    entry.onCancel?.();
  }

  /**
   * Batches are formed on this thread: requests queued during one turn of the event loop are
   * dispatched together by one pump in a microtask (as the batcher would find them queued), with
   * no batcher-thread hop — JS instances run them here, native instances get them handed to
   * their threads. The batcher thread takes over for queue delays, timeouts and the batches that
   * follow a native instance's completion, and reaches JS through the channel (#execute).
   */
  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    // A reaction of a settled promise: a microtask, as queueMicrotask would make, without the
    // AsyncResource and bound function Node's queueMicrotask creates per call.
    void RESOLVED.then(this.#pump);
  }

  readonly #pump = (): void => {
    this.#pumpScheduled = false;
    if (this.#stopped && this.#pending.size === 0) return;
    let dispatch: Dispatch | undefined;
    while ((dispatch = this.#native.pump()) !== undefined) {
      const ids = typeof dispatch === 'number' ? this.#dispatchView : dispatch;
      const end = typeof dispatch === 'number' ? 2 + dispatch : dispatch.length;
      this.#run(ids[0], ids[1], this.#entriesOf(ids, 2, end));
    }
  };

  /** The batcher thread dispatched a batch to `instance` (through the channel). */
  #execute(instance: number, token: number, ids: Float64Array): void {
    this.#run(instance, token, this.#entriesOf(ids, 0, ids.length));
  }

  /** The pending requests of ids[from, to); undefined for a sequence model's null row (id 0, READY = 0). */
  #entriesOf(ids: Float64Array, from: number, to: number): (PendingRequest | undefined)[] {
    const entries: (PendingRequest | undefined)[] = [];
    for (let i = from; i < to; i++) entries.push(this.#pending.get(ids[i]));
    return entries;
  }

  /** Runs one batch's callable; its completion is reported to native code. Never throws. */
  #run(instance: number, token: number, entries: (PendingRequest | undefined)[]): void {
    const requests = this.#sequencing
      ? this.#sequenceRequests(instance, token, entries)
      : entries.map((e) => e!.request);
    if (this.config.decoupled) {
      this.#runDecoupled(instance, token, entries, requests);
      return;
    }
    const context: TritonContext = {
      modelConfig: this.config, instanceIndex: instance, isCancelled: (index = 0) => entries[index]?.settled ?? false,
    };
    const started = performance.now();
    let result: unknown;
    try {
      result = this.#funcs[instance](requests, context);
    } catch (err) {
      this.#finish(instance, token, entries, requests, started, err);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value) => this.#finish(instance, token, entries, requests, started, null, value),
        (err: unknown) => this.#finish(instance, token, entries, requests, started, err ?? new Error('inference callable rejected')),
      );
    } else {
      this.#finish(instance, token, entries, requests, started, null, result);
    }
  }

  /**
   * The Request objects of one execution of a sequence model: each client request's inputs plus
   * the control and state inputs the scheduler added, and null rows made of the scheduler's zeros.
   */
  #sequenceRequests(instance: number, token: number, entries: (PendingRequest | undefined)[]): Request[] {
    const added = this.#native.addedInputs(instance, token);
    const iterative = this.#sequencing!.iterativeSequence;
    return entries.map((entry, i) => {
      const extra = added[i] ? nativeOutputsToArrays(added[i], this.config.name) : {};
      if (!entry) {
        const row = new Request(extra);
        row.sequence = { id: undefined, start: false, end: false, ready: false };
        return row;
      }
      // One Request object per client request, kept across the steps of an iterative request
      // (a callable may key its own per-request state on it); its added inputs change per step.
      const base = entry.request;
      entry.stepRequest ??= new Request({ ...base.data }, base.parameters, base.requestedOutputNames);
      const request = entry.stepRequest;
      Object.assign(request.data, extra);
      const [id, flags] = entry.sequence!;
      const noId = id === 0n || id === '';  // iterative: the sequencer gives it an id and START
      request.beginStep({
        id: noId ? undefined : id,
        start: entry.executions === 0 && ((flags & SEQUENCE_START) !== 0 || (iterative && noId)),
        end: (flags & SEQUENCE_END) !== 0,
        ready: true,
      }, iterative);
      entry.executions++;
      return request;
    });
  }

  #finish(
    instance: number, token: number, entries: (PendingRequest | undefined)[], requests: Request[], started: number,
    error: unknown, result?: unknown,
  ): void {
    const inferred = performance.now();
    let failure = error;
    let states: (EnqueueInputs | undefined)[] | undefined;
    if (!failure) {
      try {
        const rows = requests.map((r) => this.#rowsOf(r));
        if (this.#stateOutputs) states = this.#takeStates(result, rows);
        const outputs = collectOutputs(this.config, result, rows, this.#strict);
        entries.forEach((e, i) => { if (e) e.outputs = outputs[i]; });
      } catch (err) {
        failure = err;
      }
    }
    // compute_infer = the callable, compute_output = collecting its outputs (Triton's stats).
    const inferNs = (inferred - started) * 1e6;
    const outputNs = (performance.now() - inferred) * 1e6;
    let released: HandedBack | null;
    if (failure) {
      const err = toInferenceServerError(failure);
      released = this.#native.completeBatch(instance, token, StatusCode[err.code], err.message, inferNs, outputNs);
    } else if (this.#sequencing) {
      const release = new Uint8Array(requests.map((r) => (r.rescheduled ? RELEASE_RESCHEDULE : 0)));
      released = this.#native.completeBatch(instance, token, 0, '', inferNs, outputNs, release, states);
    } else {
      released = this.#native.completeBatch(instance, token, 0, '', inferNs, outputNs);
    }
    if (this.#pumpOwed[0] !== 0) this.#schedulePump();
    if (released) this.#settle(released);
  }

  /**
   * Takes the implicit state outputs out of a sequence model's result (in place: the rest are
   * its outputs), checked like outputs, as native code keeps them: per request, flat tensors.
   */
  #takeStates(result: unknown, rows: number[]): (EnqueueInputs | undefined)[] | undefined {
    if (!Array.isArray(result)) return undefined;  // collectOutputs says what is wrong
    const names = this.#stateOutputs!.outputs.map((t) => t.name);
    const taken = result.map((outputs: unknown, i) => {
      const picked: Record<string, unknown> = {};
      if (outputs === null || typeof outputs !== 'object') return picked;
      const rest: Record<string, unknown> = { ...(outputs as Record<string, unknown>) };
      for (const name of names) {
        if (!Object.prototype.hasOwnProperty.call(rest, name)) continue;
        picked[name] = rest[name];
        if (!this.#outputNames.has(name)) delete rest[name];  // a state only, not an output
      }
      result[i] = rest;
      return picked;
    });
    return collectOutputs(this.#stateOutputs!, taken, rows, this.#strict).map((tensors) => {
      const flat: EnqueueInputs = [];
      for (const name in tensors) {
        const arr = tensors[name];
        const data = arr.dtype === 'BYTES' ? bytesOfTensor(arr) : (arr.data as ArrayBufferView);
        flat.push(name, dataTypeCode(arr.dtype), arr.shape, data);
      }
      return flat.length > 0 ? flat : undefined;
    });
  }

  /**
   * Runs a decoupled callable. Its execution ends when it has returned (its promise settled):
   * the instance is then free for the next batch, as in Triton's Python backend, and the
   * requests that have not ended stay open natively. Each response the callable yields (or
   * sends through `request.responseSender`) goes to its request's stream as it comes; each
   * request ends on its own (finishRequest), whenever its iteration or its sender ends it.
   */
  #runDecoupled(instance: number, token: number, entries: (PendingRequest | undefined)[], requests: Request[]): void {
    const context: TritonContext = {
      modelConfig: this.config, instanceIndex: instance, isCancelled: (index = 0) => sink.closed(index),
    };
    const what = `model '${this.config.name}'`;
    // Per request: undefined while it runs; null (ended) or its error once it ended. A null row
    // (sequence models) has no client: it ends at once and what is sent for it is dropped.
    const ended: (InferenceServerError | null | undefined)[] = entries.map((e) => (e ? undefined : null));
    let executed = false;
    const sink: DecoupledSink = {
      send: (i, value) => {
        const entry = entries[i];
        if (entry) this.#sendResponse(entry, value);
      },
      end: (i, error) => {
        const entry = entries[i];
        if (ended[i] !== undefined || !entry) return;
        ended[i] = error;
        if (executed) this.#finishOpen(entry, error);
      },
      closed: (i) => ended[i] !== undefined || (entries[i]?.settled ?? true),
      ready: (i) => entries[i]?.stream?.room(),
    };
    entries.forEach((entry, i) => {
      requests[i].responseSender = new ResponseSender(sink, i);
      // A cancelled request ends now (CANCELLED), whatever its iteration or sender does later.
      if (entry) entry.onCancel = () => sink.end(i, null);
    });
    const started = performance.now();
    let result: unknown;
    try {
      result = this.#funcs[instance](requests, context);
    } catch (err) {
      result = Promise.reject(err);
    }
    const executionEnded = (error: InferenceServerError | null): void => {
      executed = true;
      const codes = new Int32Array(entries.length);
      const messages: string[] = [];
      const open = new Uint8Array(entries.length);
      entries.forEach((entry, i) => {
        if (!entry) return;  // a null row: ended, ok
        if (ended[i] === undefined && error) ended[i] = error;
        const outcome = this.#outcome(entry, ended[i]);
        if (outcome !== null) [codes[i], messages[i]] = outcome;
        else open[i] = requests[i].rescheduled ? RELEASE_RESCHEDULE : RELEASE_OPEN;
      });
      const inferNs = (performance.now() - started) * 1e6;
      const released = this.#native.completeBatch(instance, token, codes, messages, inferNs, 0, open);
      if (this.#pumpOwed[0] !== 0) this.#schedulePump();
      if (released) this.#settle(released);
    };
    Promise.resolve(result).then((value) => {
      executionEnded(null);
      void driveDecoupled(value, entries.length, sink, what);
    }, (err: unknown) => executionEnded(toInferenceServerError(err ?? new Error('inference callable rejected'))));
  }

  /**
   * A request's status code and message once it ended (or its caller was answered already:
   * cancelled); null while it is still open.
   */
  #outcome(entry: PendingRequest, ended: InferenceServerError | null | undefined): [number, string] | null {
    if (ended) return [StatusCode[ended.code], ended.message];
    if (entry.settled) return [StatusCode.CANCELLED, 'cancelled'];
    return ended === null ? [0, ''] : null;
  }

  /** An open request ended after its batch executed: hand it back natively, then settle it. */
  #finishOpen(entry: PendingRequest, error: InferenceServerError | null): void {
    const [code, message] = this.#outcome(entry, error) ?? [0, ''];
    const released = this.#native.finishRequest(entry.id, code, message);
    if (released) this.#settle(released);
  }

  /** One response of a decoupled request, to its stream; a bad one or a full stream cancels the request. */
  #sendResponse(entry: PendingRequest, value: unknown): void {
    let outputs: Record<string, NDArray>;
    try {
      outputs = collectOutputs(this.config, [value], [this.#rowsOf(entry.request)], this.#strict)[0];
    } catch (err) {
      this.#cancel(entry.id, toInferenceServerError(err));
      return;
    }
    this.#firstResponse(entry);
    if (!entry.stream!.push(this.#pick(entry, outputs))) {
      this.#cancel(entry.id, new InferenceServerError('UNAVAILABLE', `request for model '${this.config.name}' was cancelled: ` +
        `its reader fell more than ${entry.stream!.maxQueued} responses behind (maxQueuedResponses)`));
    }
  }

  /**
   * Tells the RequestSink of the request's first response, now, unless it was told before: a
   * decoupled request's first streamed response, or the error that ends an accepted request
   * before it sent any, since Triton's error response observes the first-response histogram as
   * any response does (core infer_response.cc: UpdateResponseMetrics on every Send). Requests
   * refused at submit are never accepted and never get here.
   */
  #firstResponse(entry: PendingRequest): void {
    if (entry.queuedAt === undefined) return;
    this.requestSink?.firstResponse(performance.now() - entry.queuedAt);
    entry.queuedAt = undefined;
  }

  #rowsOf(request: Request): number {
    if (this.config.maxBatchSize === 0) return 1;
    for (const name in request.data) return request.data[name].rows;
    return 1;
  }

  /** Native code handed requests back: resolve or reject each. Never throws. */
  #settle(responses: HandedBack, error?: InferenceServerError): void {
    let ids = this.#completedIds;
    let codes = this.#completedCodes;
    let messages: NativeResponses[2];
    let outputs: NativeResponses[3];
    let timings: NativeResponses[4];
    let count: number;
    if (typeof responses === 'number') count = responses;
    else {
      [ids, codes, messages, outputs, timings] = responses;
      count = ids.length;
    }
    timings ??= this.#completedTimings;
    for (let i = 0; i < count; i++) {
      const entry = this.#pending.get(ids[i]);
      if (!entry) continue;
      this.#pending.delete(ids[i]);
      entry.unwatch?.();
      if (entry.settled) continue;
      entry.settled = true;
      const native = outputs?.[i];
      if (native) entry.outputs = nativeOutputsToArrays(native, this.config.name);
      if (codes[i] === 0) {
        const at = i * TIMING_FIELDS;
        if (entry.addTimesTo) addTimings(entry.addTimesTo, timings, at);
        this.requestSink?.executed(timings[at + 4], timings[at], timings[at + 1], timings[at + 2], timings[at + 3]);
        // A decoupled request's first response was told when it was sent (#sendResponse).
        if (!entry.stream) this.requestSink?.firstResponse(timings[at + 4] / 1e6);
        entry.resolve(this.#selectOutputs(entry));
      } else {
        this.#firstResponse(entry);
        entry.reject(error ?? new InferenceServerError(codes[i], messages?.[i] ?? 'inference failed'));
      }
    }
    if (this.#drained && this.#pending.size === 0) this.#drained();
  }

  #selectOutputs(entry: PendingRequest): Record<string, NDArray> {
    return this.#pick(entry, entry.outputs ?? {});
  }

  /** The outputs the request asked for (all when it named none). */
  #pick(entry: PendingRequest, all: Record<string, NDArray>): Record<string, NDArray> {
    if (!entry.requestedOutputs) return all;
    const picked: Record<string, NDArray> = {};
    for (const name of entry.requestedOutputs) if (all[name]) picked[name] = all[name];
    return picked;
  }

  /** Per-model statistics counters (Triton's statistics extension shape), response cache included. */
  stats(): ModelStats {
    const stats = this.#native.stats();
    return this.#responseCache ? this.#responseCache.addTo(stats) : withoutCacheStats(stats);
  }

  /**
   * Graceful stop: refuse new requests, send what is queued without waiting for the queue
   * delay, wait up to `timeoutMs` for everything to finish, then fail whatever is left.
   */
  async stop(timeoutMs = DEFAULT_EXIT_TIMEOUT_MS): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#native.drain();
    if (this.#pending.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.#drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.#drained = null;
    const failed = this.#native.stop();
    if (failed) this.#settle(failed);
  }
}

/** Adds the timings native code handed back at `at` (TIMING_FIELDS numbers) to `to`. */
function addTimings(to: RequestTimes, timings: Float64Array, at: number): void {
  to.queueNs += timings[at];
  to.computeInputNs += timings[at + 1];
  to.computeInferNs += timings[at + 2];
  to.computeOutputNs += timings[at + 3];
}

/** A copy of `meta` with room for at least `length` numbers. */
function growMeta(meta: Float64Array, length: number): Float64Array {
  const grown = new Float64Array(Math.max(length, meta.length * 2));
  grown.set(meta);
  return grown;
}
