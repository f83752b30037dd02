/**
 * The user-facing configuration types, PyTriton's names in camelCase with PyTriton's defaults.
 * `bind()` turns these into the one normalized config (`normalize.ts`) that native code receives.
 */
import type { DataType, TypedArray, TypedArrayConstructor } from '../tensor';

/** What to do with a request that waited in the queue past its timeout. */
export enum TimeoutAction {
  /** Fail the request with "Request timeout expired" (UNAVAILABLE). */
  REJECT = 'REJECT',
  /** Keep it, but behind every request that has not timed out. */
  DELAY = 'DELAY',
}

/** Where a model instance runs. Bound JS callables always run as KIND_CPU instances. */
export enum DeviceKind {
  KIND_AUTO = 'KIND_AUTO',
  KIND_CPU = 'KIND_CPU',
  KIND_GPU = 'KIND_GPU',
}

/** Queue policy of one priority level (Triton's `ModelQueuePolicy`). */
export interface QueuePolicy {
  /** Default `REJECT`. */
  timeoutAction?: TimeoutAction;
  /**
   * Default 0: requests never time out in the queue. Up to 2^64 - 1 (uint64, as in Triton):
   * beyond 2^53 - 1 give a bigint; a timeout too long to count in nanoseconds never expires.
   */
  defaultTimeoutMicroseconds?: number | bigint;
  /** Default false: a request's own `timeoutMicroseconds` may only shorten the default when true. */
  allowTimeoutOverride?: boolean;
  /** Default 0: no limit beyond the server's hard cap (`TritonConfig.maxQueueSizeHardLimit`). */
  maxQueueSize?: number;
}

/** Dynamic batcher settings (Triton's `ModelDynamicBatching`). */
export interface DynamicBatcher {
  /**
   * Default 0: send whatever is queued as soon as an instance is free. Up to 2^64 - 1 (a bigint
   * beyond 2^53 - 1); the batcher waits at most 2^52 µs (about 142 years).
   */
  maxQueueDelayMicroseconds?: number | bigint;
  /** Default none, which means "full" (`maxBatchSize`). */
  preferredBatchSize?: number[];
  /** Default false. */
  preserveOrdering?: boolean;
  /**
   * Default 0 (one level). Level 1 is the highest. Up to 2^64 - 1 (uint64, as in Triton; a
   * bigint beyond 2^53 - 1): a level is only made when a request uses it.
   */
  priorityLevels?: number | bigint;
  /** Default 0 (the lowest level when `priorityLevels` is set). */
  defaultPriorityLevel?: number | bigint;
  defaultQueuePolicy?: QueuePolicy;
  /** Queue policy per priority level (1-based keys; beyond 2^53 - 1 as decimal strings, e.g. `[String(2n ** 40n)]`). */
  priorityQueuePolicy?: Record<number | string, QueuePolicy>;
}

/** Warm-up data for one input. Exactly one source must be chosen. */
export interface WarmupInput {
  dtype: DataType | TypedArrayConstructor;
  shape: number[];
  zeroData?: boolean;
  randomData?: boolean;
  /**
   * A raw little-endian file with one sample's data (numeric: its first bytes) or length-prefixed
   * strings (BYTES), repeated `batchSize` times as Triton does; BYTES `randomData` gives empty strings.
   */
  inputDataFile?: string;
}

/** One warm-up: `count` requests of `batchSize` rows, run on every instance before the model is ready. */
export interface ModelWarmup {
  name: string;
  batchSize: number;
  inputs: Record<string, WarmupInput>;
  count: number;
}

/** Model settings of `bind()` (PyTriton's `ModelConfig`). */
export interface ModelConfig {
  /** Default true. */
  batching?: boolean;
  /** Default 4. Must be ≥ 1 when batching. */
  maxBatchSize?: number;
  /** Default `{}` (dynamic batching on whenever batching is). */
  batcher?: DynamicBatcher;
  /**
   * Default false. Cache this model's answers in the server's response cache (which needs
   * `TritonConfig.cacheConfig`; without one the model is served uncached, as in Triton).
   * Not for decoupled models.
   */
  responseCache?: boolean;
  /** Default false. */
  decoupled?: boolean;
  modelWarmup?: ModelWarmup[];
  /**
   * Makes the model stateful (Triton's `sequence_batching`): requests carry a sequence id and
   * START/END flags, each sequence's requests run in order on one instance, and the batcher
   * feeds control and state tensors. Replaces the dynamic batcher: leave `batcher` unset.
   */
  sequenceBatcher?: SequenceBatcher;
  /**
   * Declares the model an ensemble (Triton's `ensemble_scheduling`): bind() it without an
   * inferFunc; its steps are models bound (or loaded) before it.
   */
  ensembleScheduling?: EnsembleScheduling;
  /**
   * The rate limiter settings of the model's instances (Triton's `instance_group.rate_limiter`),
   * used when the server runs with `rateLimit: 'execution_count'` and ignored otherwise: an
   * instance executes only when `resources` are available; `priority` weights instances of all
   * models (priority 2 gets half the chances of priority 1; 0 counts as 1).
   */
  rateLimiter?: RateLimiterConfig;
}

/** One resource an instance holds while it executes (Triton's `ModelRateLimiter.Resource`). */
export interface RateLimiterResource {
  name: string;
  /** How many of the resource the instance needs (default 0). */
  count?: number;
  /** Default false: one pool of this resource per device (CPU instances: device 0); true: one pool for the server. */
  global?: boolean;
}

/** Triton's `ModelRateLimiter`. */
export interface RateLimiterConfig {
  resources?: RateLimiterResource[];
  /** Default 0 (counted as 1). */
  priority?: number;
}

/** The control tensors the sequence batcher synthesizes (Triton's `ModelSequenceBatching.Control.Kind`). */
export type SequenceControlKind =
  | 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_CORRID';

/**
 * One control input (Triton's `ModelSequenceBatching.ControlInput` with its one `Control`): a
 * model input the sequence batcher fills for every batch slot. START, END and READY give
 * exactly one of the [false, true] pairs, which also sets the tensor's datatype (INT32, FP32 or
 * BOOL); CORRID gives `dataType` (UINT64, INT64, UINT32, INT32 or BYTES) and receives the
 * sequence id. Do not declare it among the model's inputs: requests never send it.
 */
export interface SequenceControlInput {
  /** The model input it is delivered as. */
  name: string;
  kind: SequenceControlKind;
  int32FalseTrue?: [number, number];
  fp32FalseTrue?: [number, number];
  boolFalseTrue?: [boolean, boolean];
  /** CORRID only. */
  dataType?: DataType | TypedArrayConstructor;
}

/**
 * What a sequence's state holds at its START (Triton's `ModelSequenceBatching.InitialState`,
 * whose datatype is the state's): exactly one of `zeroData`, `data` or `dataFile`.
 */
export interface SequenceInitialState {
  /** Default `'initial_state'` (Triton requires a name; it only labels the data). */
  name?: string;
  /** Concrete dims (no -1), as many as the state's; default the state's shape when it has no -1. */
  shape?: number[];
  /** Zeros (BYTES: empty strings). */
  zeroData?: boolean;
  /** The raw little-endian bytes (BYTES: 4-byte length-prefixed elements), or a TypedArray of the state's type. */
  data?: TypedArray | Uint8Array;
  /** A file holding those bytes, read when the model is bound. */
  dataFile?: string;
}

/**
 * One implicit state tensor (Triton's `ModelSequenceBatching.State`): the model receives it as
 * input `inputName` and returns its next value as output `outputName`; the batcher keeps it
 * per sequence between requests. Neither is declared among the model's inputs.
 */
export interface SequenceState {
  inputName: string;
  outputName: string;
  dtype: DataType | TypedArrayConstructor;
  /** Without the batch axis; -1 marks a dim the model's output decides. */
  shape: number[];
  /** Default zeros of `shape` (or an empty state when `shape` has a -1). */
  initialState?: SequenceInitialState;
  /** Default false. */
  useSameBufferForInputOutput?: boolean;
  /** Default false; needs useSameBufferForInputOutput (and, as in Triton, GPU instances). */
  useGrowableMemory?: boolean;
}

/**
 * Sequence batcher settings (Triton's `ModelSequenceBatching`). `strategy` picks how batches
 * form: `'direct'` (the default) pins each sequence to one batch slot of one instance;
 * `'oldest'` batches the oldest requests of up to `maxCandidateSequences` sequences. Fields of
 * the other strategy are refused.
 */
export interface SequenceBatcher {
  /** Default 'direct'. */
  strategy?: 'direct' | 'oldest';
  /**
   * Default 1,000,000 (0 too, as in Triton): a sequence idle this long is released. Up to
   * 2^64 - 1 (a bigint beyond 2^53 - 1); the batcher counts at most 2^52 µs (about 142 years).
   */
  maxSequenceIdleMicroseconds?: number | bigint;
  /** Both strategies; default 0: how long a batch may wait to fill (as `maxSequenceIdleMicroseconds`). */
  maxQueueDelayMicroseconds?: number | bigint;
  /** direct only; default 0: the share of slots a batch waits for, in [0, 1]. */
  minimumSlotUtilization?: number;
  /** oldest only; default 0, which means max(1, maxBatchSize) (Triton's slot count). */
  maxCandidateSequences?: number;
  /** oldest only; default [max(1, maxBatchSize)]. */
  preferredBatchSize?: number[];
  /** oldest only; default false. */
  preserveOrdering?: boolean;
  controlInputs?: SequenceControlInput[];
  states?: SequenceState[];
  /** Default false: the model may hand a request back for another step (continuous batching). */
  iterativeSequence?: boolean;
}

/** One step of an ensemble (Triton's `ModelEnsembling.Step`). */
export interface EnsembleStep {
  modelName: string;
  /** Default -1: the latest version at request time. */
  modelVersion?: number;
  /** Step model input name → ensemble tensor name. */
  inputMap: Record<string, string>;
  /** Step model output name → ensemble tensor name. */
  outputMap: Record<string, string>;
}

/** An ensemble's DAG (Triton's `ensemble_scheduling`). */
export interface EnsembleScheduling {
  step: EnsembleStep[];
  /** Requests in flight at each step at once (0, the default: unbounded). */
  maxInflightRequests?: number;
}

/** An input or output declaration (PyTriton's `Tensor`). `shape` excludes the batch axis. */
export interface Tensor {
  /** Default `INPUT_<n>` / `OUTPUT_<n>` (1-based). */
  name?: string;
  dtype: DataType | TypedArrayConstructor;
  /** -1 marks a dynamic dim. */
  shape: readonly number[];
  /** Inputs only: the input may be absent from a request. Default false. */
  optional?: boolean;
  /** Inputs only: requests with different shapes of this input may share a batch. Default false. */
  allowRaggedBatch?: boolean;
}

/** Server settings (PyTriton's `TritonConfig`); every field has Triton's default when absent. */
export interface TritonConfig {
  /** Server name reported by server metadata. Default 'triton'. */
  id?: string;
  /** Verbose log level (0 = off). */
  logVerbose?: number;
  /** Log to this file instead of stdout/stderr (start-up only). */
  logFile?: string;
  /** Default true. */
  logInfo?: boolean;
  /** Default true. */
  logWarning?: boolean;
  /** Default true. */
  logError?: boolean;
  /** Default 'default'. */
  logFormat?: 'default' | 'ISO8601';
  /** Seconds stop() waits for in-flight requests. Default 30. */
  exitTimeoutSecs?: number;
  /** Default true: run() fails when a repository model fails to load at start-up. */
  exitOnError?: boolean;
  /** Default true: ready only when every model is ready. */
  strictReadiness?: boolean;
  /** Default true. */
  allowHttp?: boolean;
  /** Default '0.0.0.0'. */
  httpAddress?: string;
  /** Default 8000; 0 picks a free port. */
  httpPort?: number;
  /** `<group>[,<group>]:<key>=<value>`, several separated by ';' (tritonserver's --http-restricted-api). */
  httpRestrictedApi?: string;
  /** Largest request body accepted, also after decompression. Default 64 MiB. */
  httpMaxInputSize?: number;
  /** Request headers whose names match this regex are passed to models as request parameters. */
  httpHeaderForwardPattern?: string;
  /**
   * Default false: serve HTTPS with httpServerCert and httpServerKey (--http-use-ssl). infernode's
   * own, named after the gRPC settings (Triton has no HTTPS; it expects a proxy in front).
   */
  httpUseSsl?: boolean;
  /** Default false: HTTPS that requires a client certificate signed by httpRootCert; implies httpUseSsl. */
  httpUseSslMutual?: boolean;
  /** PEM file of the HTTPS server's certificate (chain). Ignored unless httpUseSsl or httpUseSslMutual. */
  httpServerCert?: string;
  /** PEM file of the HTTPS server's private key. Ignored unless httpUseSsl or httpUseSslMutual. */
  httpServerKey?: string;
  /** PEM file of the CA that client certificates must be signed by; required by httpUseSslMutual. */
  httpRootCert?: string;
  /** Default true. */
  allowGrpc?: boolean;
  /** Default '0.0.0.0'. */
  grpcAddress?: string;
  /** Default 8001; 0 picks a free port. */
  grpcPort?: number;
  /** `<group>[,<group>]:<key>=<value>`, several separated by ';' (tritonserver's --grpc-restricted-protocol). */
  grpcRestrictedProtocol?: string;
  /** Metadata whose keys match this regex are passed to models as request parameters. */
  grpcHeaderForwardPattern?: string;
  /** Largest gRPC message received or sent. Default 2^31 - 1 bytes, as Triton. */
  grpcMaxMessageSize?: number;
  /**
   * Largest size a compressed (gzip, deflate) gRPC request message may inflate to; larger ones
   * are refused with RESOURCE_EXHAUSTED. Default 64 MiB (httpMaxInputSize's default); at most
   * grpcMaxMessageSize. Uncompressed messages are bounded by grpcMaxMessageSize alone.
   */
  grpcMaxDecompressedSize?: number;
  /** Default 7200000 ms, as Triton. */
  grpcKeepaliveTime?: number;
  /** Default 20000 ms. */
  grpcKeepaliveTimeout?: number;
  /** Default false. */
  grpcKeepalivePermitWithoutCalls?: boolean;
  /** Default 2. */
  grpcHttp2MaxPingsWithoutData?: number;
  /** 'none' (default), 'low', 'medium' or 'high'. */
  grpcInferResponseCompressionLevel?: 'none' | 'low' | 'medium' | 'high';
  /** Default false: serve gRPC over TLS with grpcServerCert and grpcServerKey (tritonserver's --grpc-use-ssl). */
  grpcUseSsl?: boolean;
  /**
   * Default false: TLS that requires a client certificate signed by grpcRootCert
   * (--grpc-use-ssl-mutual); implies grpcUseSsl, as in Triton.
   */
  grpcUseSslMutual?: boolean;
  /** PEM file of the server's certificate (chain) (--grpc-server-cert). Ignored unless TLS is on. */
  grpcServerCert?: string;
  /** PEM file of the server's private key (--grpc-server-key). Ignored unless TLS is on. */
  grpcServerKey?: string;
  /** PEM file of the CA that client certificates must be signed by (--grpc-root-cert); required by grpcUseSslMutual. */
  grpcRootCert?: string;
  /** Default true. */
  allowMetrics?: boolean;
  /** Default: the HTTP address. */
  metricsAddress?: string;
  /** Default 8002; 0 picks a free port. */
  metricsPort?: number;
  /** `<setting>=<value>` entries (tritonserver's --metrics-config), e.g. summary_latencies=true. */
  metricsConfig?: string[];
  /** Default 2000: how often the per-interval (CPU, memory, GPU) metrics refresh. */
  metricsIntervalMs?: number;
  /**
   * Default true: report Triton's per-GPU metrics (nv_gpu_*, nv_energy_consumption) read through
   * NVML; absent from /metrics where there is no NVIDIA driver or GPU (--allow-gpu-metrics).
   */
  allowGpuMetrics?: boolean;
  /**
   * Default true: report Triton's CPU metrics (nv_cpu_utilization, nv_cpu_memory_total_bytes,
   * nv_cpu_memory_used_bytes) read from Linux /proc (--allow-cpu-metrics).
   */
  allowCpuMetrics?: boolean;
  /**
   * Default 256 MiB: pinned host memory the batch buffers may use (--pinned-memory-pool-byte-size).
   * Process-wide (pinned pages are a system resource), so the last Triton made sets it; past it,
   * blocks are pageable. Matters only with a CUDA device.
   */
  pinnedMemoryPoolByteSize?: number;
  /** Default false: clients may register system/CUDA shared-memory regions (--allow-client-shm). */
  allowClientShm?: boolean;
  /** `[triton,]<setting>=<value>` entries (tritonserver's --trace-config): file, level, rate, count, log-frequency. */
  traceConfig?: string[];
  /** Hard cap on queued requests per model, so no queue is unbounded. Default 65536. */
  maxQueueSizeHardLimit?: number;
  /**
   * Default 1024: responses of one decoupled request held for a streaming client (gRPC
   * ModelStreamInfer, HTTP generate_stream) that reads more slowly than the model produces;
   * past it the request is cancelled with UNAVAILABLE instead of the server buffering more.
   */
  maxQueuedResponses?: number;
  /**
   * `<cache>,<key>=<value>` entries (tritonserver's --cache-config, PyTriton's cache_config),
   * e.g. `['local,size=1048576']`: the response cache shared by every model whose config
   * enables it, an LRU within `size` bytes of outputs. Only the `local` cache exists. Default none.
   */
  cacheConfig?: string[];
  /** Deprecated (tritonserver's --response-cache-byte-size): the same as `local,size=<n>`; 0 = no cache. */
  responseCacheByteSize?: number;
  /**
   * tritonserver's --rate-limit: 'off' (default; instance groups' rate_limiter settings are
   * ignored) or 'execution_count' (an instance executes only when its group's rate_limiter
   * resources are available; priorities weight instances across all models).
   */
  rateLimit?: 'off' | 'execution_count';
  /**
   * tritonserver's --rate-limit-resource, `<name>:<count>[:<device>]` entries: how many of a
   * resource exist (on `device`, else on every device; a global resource ignores the device).
   * Default: the largest count any loaded instance asks for. Once any is given, every resource
   * an instance asks for must be listed with at least its count, or the model fails to load.
   */
  rateLimitResource?: string[];
}
