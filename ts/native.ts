/**
 * The one typed contract of the native addon, and the only file that loads it.
 * Loading order: node-gyp-build (prebuilds/<platform>-<arch>/, then build/Release); on failure a
 * single error lists what was tried and how to fix it.
 */
import * as path from 'node:path';
import { InferenceServerError } from './errors';
import type { NormalizedModelConfig } from './config/normalize';

/**
 * Requests handed back by native code: parallel arrays, codes are StatusCode numbers (0 = ok).
 * A tuple rather than an object: native code makes one per completion, and property names
 * would cost a string lookup each.
 */
export type NativeResponses = [
  ids: Float64Array,
  codes: Int32Array,
  /** Error message per failed entry (sparse; undefined when none failed). */
  messages: (string | undefined)[] | undefined,
  /** Outputs of native engines per entry (sparse; undefined for JS engines, which keep theirs in JS). */
  outputs: (Record<string, NativeOutput> | undefined)[] | undefined,
  /**
   * Per entry, TIMING_FIELDS numbers (RequestTimings), when there are more entries than the
   * model's timings view holds; absent otherwise: they are in that view (`views()[4]`).
   */
  timings?: Float64Array,
];

/**
 * A handed-back request's timings, in the model's timings view or NativeResponses' own (ns, as
 * its model's statistics counted them; all 0 for a failed request): queue, compute input,
 * compute infer, compute output, request (enqueue to completion; cpp/core/request.h RequestTimings).
 */
export const TIMING_FIELDS = 5;

/** An output of a native engine: `data` is an external ArrayBuffer over native memory. */
export interface NativeOutput {
  dtype: string;
  shape: number[];
  data: ArrayBuffer;
  /** True when the engine also wrote it into the request's CUDA shared memory (absent otherwise). */
  onDevice?: true;
}

/** A tensor of an ONNX model as ONNX Runtime reports it (-1 for symbolic dims). */
export interface OnnxTensorInfo {
  name: string;
  dtype: string;
  dims: number[];
}

/** A loaded ONNX model: metadata, and the sessions a NativeModel takes (once). */
export interface OnnxModelHandle {
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
  /** The execution provider the sessions got: 'CPU', 'CUDA' or 'TensorRT'. */
  provider: string;
  ortVersion: string;
  handle: object;
}

export interface TensorRtLoadOptions {
  fp16?: boolean;
  maxWorkspaceBytes?: number;
  /** Where built engines are cached; none when absent. */
  engineCachePath?: string;
}

export interface OnnxLoadOptions {
  intraOpThreads?: number;
  interOpThreads?: number;
  useCuda?: boolean;
  useTensorRt?: boolean;
  /** The TensorRT accelerator's parameters (useTensorRt). */
  tensorRt?: TensorRtLoadOptions;
  /** The GPU of each session (one entry per instance) when the options ask for CUDA or TensorRT. */
  deviceIds?: number[];
  /** ONNX Runtime session config entries, e.g. { 'session.intra_op.allow_spinning': '0' }. */
  sessionConfig?: Record<string, string>;
  /** Nice increment of the instance threads and ONNX Runtime's pool threads (0 = unchanged). */
  computeThreadNice?: number;
}

/**
 * A batch the scheduler dispatched on the main thread to a JS instance (no batcher-thread
 * hop); the caller must run it and then call completeBatch. `[instance, token, ...requestIds]`:
 * a count of request ids when they are in the model's dispatch view (`views()[0]`), or an array
 * of its own when they did not fit there.
 */
export type Dispatch = number | Float64Array;

export interface NativeDuration {
  count: number;
  ns: number;
  /**
   * The same durations in whole microseconds, each rounded down before it was added, as
   * Triton's `nv_inference_*_duration_us` counters add them (not in the statistics API).
   */
  us: number;
}

/** Why requests failed, as Triton's `nv_inference_request_failure{reason}` labels them. */
export interface NativeFailureCounts {
  /** Queue full, queue timeout. */
  REJECTED: number;
  CANCELED: number;
  /** The engine (callable, ONNX Runtime) failed the request. */
  BACKEND: number;
  /** Invalid requests, shutdown. */
  OTHER: number;
}

export interface NativeBatchStats {
  batchSize: number;
  computeInput: NativeDuration;
  computeInfer: NativeDuration;
  computeOutput: NativeDuration;
}

/** Triton's statistics counters of one model version (cpp/core/model_stats.h). */
export interface NativeModelStats {
  success: NativeDuration;
  fail: NativeDuration;
  queue: NativeDuration;
  computeInput: NativeDuration;
  computeInfer: NativeDuration;
  computeOutput: NativeDuration;
  inferenceCount: number;
  executionCount: number;
  lastInferenceMs: number;
  failures: NativeFailureCounts;
  /** Queued or executing now. */
  pending: number;
  /** Queued now (not yet handed to an instance). */
  queued: number;
  batchStats: NativeBatchStats[];
  /** The model's batch-buffer pool (cpp/memory/buffer_pool.h): pinned blocks on a GPU machine; none for ensembles. */
  memory?: NativeMemoryStats;
}

export interface NativeMemoryStats {
  /** `cuda-pinned` or `aligned`. */
  allocator: string;
  hits: number;
  misses: number;
  cachedBytes: number;
  inUseBytes: number;
}

/** The process-wide pinned budget (cpp/memory/cuda_host.h); zeros without CUDA. */
export interface PinnedMemoryStats {
  totalBytes: number;
  usedBytes: number;
  /** Blocks served from pageable memory because the budget was spent. */
  pageableFallbacks: number;
}

/**
 * Tensors as a flat list, `[name, dtypeCode, shape, data, name, ...]` (completeBatch's state
 * outputs). `data` is a TypedArray or Buffer, read in place; BYTES are serialized (4-byte
 * little-endian length before each element).
 */
export type EnqueueInputs = (string | number | number[] | ArrayBufferView)[];

/** A sequence batcher request's `[correlation id (0n / '' = none), flags (1 START | 2 END)]`. */
export type NativeSequence = [id: bigint | string, flags: number];

/**
 * Requests native code handed back: their count when every one succeeded without native
 * outputs (their ids and codes are then in the model's views, `views()[1]` and `[2]`), else
 * NativeResponses.
 */
export type HandedBack = number | NativeResponses;

/**
 * Per request, what `enqueue` reads besides the data arrays, in a Float64Array the caller
 * reuses: `[inputCount, priority, timeoutUs, copyInputs (0/1), instance (-1: any), then per
 * input: its index in config.inputs, dtype code, byte size, rank, ...dims]`. A JS engine's
 * inputs are passed without data (undefined): native code then has their byte size only
 * (-1 for BYTES, whose elements JS counted) and never reads them.
 */
export type EnqueueMeta = Float64Array;

/**
 * Backed by cpp/napi/native_model.{h,cc}. Every method runs on the main thread.
 *
 * A Dispatch or HandedBack that is a count refers to the model's views (`views()`), scratch
 * memory that its next pump() or completion overwrites: read them at once, and copy what must
 * outlive the next call into the model.
 */
export interface NativeModel {
  /**
   * Validates and queues; throws InferenceServerError (INVALID_ARG, UNAVAILABLE) synchronously.
   * The caller promises to call pump() soon (once per burst of requests). With `copyInputs`
   * the inputs are copied into pooled native memory the request owns (the caller's arrays may
   * then change or be transferred); without it they are read in place, and the caller keeps
   * them alive and unchanged until the request is handed back.
   */
  enqueue(id: number, meta: EnqueueMeta, sequence: NativeSequence | undefined, ...data: EnqueueData[]): void;
  /**
   * The scratch views counts refer to: [dispatch, completed ids, completed codes] (read them at
   * once), `pumpOwed[0]`, 1 when the last completeBatch left requests queued (the caller
   * must then call pump() soon; 0: nothing queued, no pump owed), and the completed requests'
   * timings (TIMING_FIELDS per request; read them at once), unless NativeResponses carries its own.
   */
  views(): [dispatch: Float64Array, ids: Float64Array, codes: Int32Array, pumpOwed: Int32Array, timings: Float64Array];
  /**
   * Dispatches the batch the batcher would send now to an idle JS instance, on this thread;
   * undefined when none can go now (the batcher thread then handles any queue delay).
   */
  pump(): Dispatch | undefined;
  /**
   * Reports a batch done; returns the responses releasable now (preserve_ordering may hold
   * some). `inferNs` and `outputNs`: compute infer and compute output as the caller measured
   * them (compute input is the rest of the batch's time). The caller promises to call pump() soon
   * when `views()[3][0]` says one is owed.
   */
  completeBatch(
    instance: number, token: number, code: number, message: string, inferNs?: number, outputNs?: number,
    release?: Uint8Array, states?: (EnqueueInputs | undefined)[],
  ): HandedBack | null;
  /**
   * Per request. `release` per request: 0 ended; 1 open (decoupled: not ended yet — it stays
   * pending, and is handed back by its finishRequest() instead); 2 reschedule (iterative
   * sequence: queued again for another step). `states` (sequence models with implicit state):
   * per request the state outputs it produced, which native code keeps for the next step.
   */
  completeBatch(
    instance: number, token: number, codes: Int32Array, messages: string[], inferNs?: number, outputNs?: number,
    release?: Uint8Array, states?: (EnqueueInputs | undefined)[],
  ): HandedBack | null;
  /**
   * Sequence models: per request of the batch in flight on `instance` (its `token`), the inputs
   * the scheduler added — control inputs and implicit state, or every input of a READY = 0 null
   * row (whose id in the dispatch is 0). Views over native memory; empty once the batch ended.
   */
  addedInputs(instance: number, token: number): Record<string, NativeOutput>[];
  /** A request completeBatch left open ended (0 = its final response was sent): its response. */
  finishRequest(id: number, code: number, message: string): HandedBack | null;
  /** Removes a queued request: its CANCELLED response, or null when it already left the queue. */
  cancel(id: number): HandedBack | null;
  /** Queued requests are sent without waiting for the queue delay; new ones are refused. */
  drain(): void;
  /** Joins the batcher thread; returns the failures of everything still queued or executing. */
  stop(): HandedBack | null;
  stats(): NativeModelStats;
}

export type ExecuteCallback = (instance: number, token: number, ids: Float64Array) => void;
export type CompleteCallback = (responses: HandedBack) => void;

export interface NativeModelConstructor {
  /**
   * Without `onnx`, the instances are the JS callables; with it, ONNX Runtime sessions (a handle,
   * or one handle per instance group in the config's order, each taken once). With
   * `rateLimiter` (the Triton's, shared by its models) an instance executes only when the
   * resources of its group (`config.instanceGroup[].rateLimiter`) are available; throws
   * INVALID_ARG when the limiter cannot serve them (cpp/scheduling/rate_limiter.h).
   */
  new (
    config: NormalizedModelConfig, onExecute: ExecuteCallback, onComplete: CompleteCallback, onnx?: object | object[],
    rateLimiter?: RateLimiter,
  ): NativeModel;
}

/** A Triton's rate limiter (cpp/napi/rate_limiter_object.h), shared by its models. */
export interface RateLimiter {
  /** The resource counts available now: [device (-2 = global), name, count]. */
  available(): [number, string, number][];
}

export interface RateLimiterConstructor {
  /** `resources`: the --rate-limit-resource counts as [name, count, device (-1 = every device)]. */
  new (resources: [string, number, number][]): RateLimiter;
}

export interface BuildInfo {
  cuda: boolean;
  cudaDeviceCount: number;
  napiVersion: number;
  /** Allocator of the batch-buffer pools: 'cuda-pinned' when a CUDA device exists, else 'aligned'. */
  hostAllocator: string;
}

/** Options of measureCopyBandwidth (cpp/memory/copy_bandwidth.h). */
export interface CopyBandwidthOptions {
  /** Bytes per copy, 1 B .. 4 GiB. */
  bytes: number;
  /** Timed copies, 1 .. 10000 (default 10), after one untimed warm-up copy. */
  iterations?: number;
  /** Source: a block of a pinned BufferPool (true, the default) or malloc'ed pageable memory. */
  pinned?: boolean;
  deviceId?: number;
  /**
   * 1 (the default): each copy on one stream. 2: each copy split in halves on two streams, forked
   * and joined around the copy (the timing includes both), so two copy engines overlap.
   */
  streams?: 1 | 2;
  /**
   * A caller's pageable buffer instead of `pinned`, each copy timed end to end on the host clock:
   * 'staged' memcpy's it into a pinned pool block and copies that (what a batch does), 'registered'
   * cudaHostRegister's it, copies, and unregisters (registering a buffer used once).
   */
  caller?: 'staged' | 'registered';
}

/** Host-to-device copy bandwidth, timed with CUDA events on a stream of its own. */
export interface CopyBandwidth {
  bytes: number;
  iterations: number;
  source: 'pinned-pool' | 'pageable' | 'staged-through-pool' | 'registered-per-copy';
  /** Decimal GB/s over all timed copies back to back (total bytes ÷ total time). */
  gbPerSecond: number;
  /** Decimal GB/s of the fastest single copy. */
  bestGbPerSecond: number;
  totalMs: number;
  deviceId: number;
  streams: number;
  /** The device's name as CUDA reports it (what nvidia-smi shows), e.g. 'NVIDIA H100 80GB HBM3'. */
  deviceName: string;
}

/**
 * One input's data for enqueue: a TypedArray (or Buffer) of its datatype's kind; undefined for a
 * JS engine's input (JS reads it); [region, offset] for an input left in CUDA shared memory.
 */
export type EnqueueData = ArrayBufferView | [CudaSharedMemory, number] | undefined | DeviceOutputList;

/**
 * Outputs wanted in CUDA shared memory, as [name, region, offset, byteSize]*: an optional array
 * after the inputs' data in enqueue's arguments.
 */
export type DeviceOutputList = (string | number | CudaSharedMemory)[];

/** A client's CUDA IPC region (cpp/napi/shared_memory.h). Main thread only. */
export interface CudaSharedMemory {
  /** Copies `byteSize` bytes at `offset` of the device region into a new Buffer. */
  read(offset: number, byteSize: number): Buffer;
  /** Copies `data` into the device region at `offset`. */
  write(offset: number, data: Uint8Array): void;
  /**
   * Lets go of the IPC handle (also done when the object is collected); it closes once no
   * queued request still reads an input in it.
   */
  close(): void;
}

/**
 * A client's POSIX region (cpp/napi/shared_memory.h), read and written through the object's
 * file descriptor, never a mapping: a client that shrinks its object gets INVALID_ARG instead
 * of killing the server with SIGBUS. Main thread only.
 */
export interface SystemSharedMemoryRegion {
  /**
   * Copies `byteSize` bytes at `offset` of the region into a new Buffer. INVALID_ARG when the
   * range is outside the region or the object shrank below it (naming region, key and sizes).
   */
  read(offset: number, byteSize: number): Buffer;
  /** Copies `data` into the region at `offset`; the same errors as read. */
  write(offset: number, data: Uint8Array): void;
  /** Closes the file descriptor (also done when the object is collected). */
  close(): void;
}

/**
 * One GPU as NVML reports it (cpp/gpu/gpu_metrics.h). A metric the device does not report
 * (NVML_ERROR_NOT_SUPPORTED for power on some boards) is absent.
 */
export interface GpuDeviceReading {
  /** 'GPU-xxxxxxxx-...': Triton's gpu_uuid label. */
  uuid: string;
  name: string;
  /** 0..1 over NVML's last sample period. */
  utilization?: number;
  memoryTotalBytes?: number;
  memoryUsedBytes?: number;
  powerUsageWatts?: number;
  /** The enforced power limit. */
  powerLimitWatts?: number;
  /** Total energy since the driver loaded. */
  energyMillijoules?: number;
}

export interface Addon {
  NativeModel: NativeModelConstructor;
  RateLimiter: RateLimiterConstructor;
  /**
   * Opens `byteSize` bytes at `offset` of the POSIX shared-memory object `key` ('/name') as the
   * region `name` (used in messages). Throws INVALID_ARG naming the key.
   */
  openSystemSharedMemory(name: string, key: string, offset: number, byteSize: number): SystemSharedMemoryRegion;
  /** Opens a cudaIpcMemHandle_t (64 bytes); UNAVAILABLE without a CUDA device. */
  openCudaSharedMemory(handle: Uint8Array, deviceId: number, byteSize: number): CudaSharedMemory;
  init(errorClass: typeof InferenceServerError): void;
  buildInfo(): BuildInfo;
  /**
   * Measures host-to-device copy bandwidth; blocks the calling thread for the copies (bench
   * only). INVALID_ARG for bad options, UNAVAILABLE without CUDA or a device.
   */
  measureCopyBandwidth(options: CopyBandwidthOptions): CopyBandwidth;
  /**
   * XXH3-128 of the parts in order (strings as their UTF-16 code units, views as their bytes,
   * read in place), keyed with a random secret drawn once per process: 32 lower-case hex digits.
   * Not cryptographic (cpp/core/hash128.h); the response cache key (ts/cache/key.ts).
   */
  hash128(parts: readonly (string | ArrayBufferView)[]): string;
  /**
   * A view whose one element counts the iterations of this environment's event loop: it changes
   * once per turn, just before the loop polls, so every I/O callback of a turn and the
   * setImmediate callbacks after them read the same value (cpp/napi/loop_turns.h).
   */
  loopTurns(): Float64Array;
  /** Sets the process-wide pinned budget when given (bytes), and returns its statistics. */
  pinnedMemory(limitBytes?: number): PinnedMemoryStats;
  /**
   * Every GPU's readings through NVML (libnvidia-ml.so.1, dlopen'ed by the first read), or null
   * when NVML cannot be used (no NVIDIA driver). Runs on the libuv pool: NVML's energy query
   * takes milliseconds per GPU.
   */
  readGpuMetrics(): Promise<GpuDeviceReading[] | null>;
  /** Why readGpuMetrics() returned null (dlopen's or NVML's words); null otherwise. */
  gpuMetricsUnavailable(): string | null;
  /** Creates `instanceCount` sessions off the event loop (libuv pool). */
  loadOnnxModel(libraryPath: string, modelPath: string, instanceCount: number, options: OnnxLoadOptions): Promise<OnnxModelHandle>;
  /**
   * Opens ONNX Runtime (or reuses this process's) on the calling thread and says its version and
   * the execution providers it knows; for `infernode doctor`. UNAVAILABLE when it cannot be opened.
   */
  onnxRuntimeInfo(libraryPath: string): { version: string; providers: string[] };
  /**
   * Frees a handle's sessions now (a load that failed after making them); nothing for a handle a
   * NativeModel took. Joins their ONNX Runtime threads on the calling thread.
   */
  releaseOnnxSessions(handle: object): void;
}

let addon: Addon | undefined;
const packageRoot = path.join(__dirname, '..');

/** The addon file node-gyp-build picks: build/Release/ (a source build) before prebuilds/. */
export function nativeAddonPath(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('node-gyp-build') as { path(dir: string): string }).path(packageRoot);
}

/** The loaded addon (loaded once per environment, on first use). */
export function native(): Addon {
  if (addon) return addon;
  const root = packageRoot;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    addon = require('node-gyp-build')(root) as Addon;
  } catch (err) {
    throw new Error(
      `infernode: could not load the native addon (${(err as Error).message}).\n` +
        `Tried prebuilds/${process.platform}-${process.arch}/ and build/Release/ under ${root}; the package ships ` +
        'prebuilds for linux-x64 and linux-arm64 (glibc).\n' +
        'Build it from source with `npm rebuild infernode --build-from-source` (needs cmake, or python3 and make, and a ' +
        'C++17 compiler), or `npm run build:native` in a clone. `npx infernode doctor` says what was found.',
    );
  }
  addon.init(InferenceServerError);
  return addon;
}
