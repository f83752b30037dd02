/**
 * What an inference callable receives: one `Request` per client request in the batch
 * (PyTriton's `pytriton.proxy.types.Request`), and the `TritonContext` decorators read.
 */
import type { ResponseSender } from './decoupled';
import type { NDArray } from './tensor';
import type { NormalizedModelConfig } from './config/normalize';

/** Request parameters as KServe v2 carries them. */
export type Parameters = Record<string, string | number | boolean>;

/** Where a request of a sequence batcher model stands in its sequence. */
export interface SequenceInfo {
  /** The correlation id the client sent (undefined when the iterative sequencer gave one). */
  readonly id: bigint | string | undefined;
  /** The first step of the sequence (its state was just reset). */
  readonly start: boolean;
  /** The last request of the sequence. */
  readonly end: boolean;
  /**
   * False for a null row: the direct strategy fills the slots below the highest busy one with
   * READY = 0 rows (zeros) so every sequence keeps its row; their outputs are discarded.
   */
  readonly ready: boolean;
}

/**
 * One client request inside an execution. `data` holds its inputs (with their batch axis);
 * `In` types them when the model's inputs are declared with literal names (see typed-model.ts).
 */
export class Request<In extends object = Record<string, NDArray>> {
  /**
   * Decoupled models: sends this request's responses, any number of them, the last one flagged
   * final, also after the callable returned (the Python backend's response sender).
   */
  responseSender?: ResponseSender;
  /**
   * Sequence batcher models: the request's sequence. Its control inputs and implicit state (as
   * configured) are in `data` too.
   */
  sequence?: SequenceInfo;
  #rescheduled = false;
  #reschedulable = false;

  constructor(
    readonly data: In,
    readonly parameters: Parameters = {},
    readonly requestedOutputNames: string[] | null = null,
  ) {}

  /** Input by name. */
  get(name: string): NDArray | undefined {
    return (this.data as Record<string, NDArray | undefined>)[name];
  }

  /** Names of the inputs present. */
  keys(): string[] {
    return Object.keys(this.data);
  }

  /**
   * Iterative sequence models (`iterative_sequence`): run this request again for another step
   * once this execution ends, batched with whatever else is ready (continuous batching). Call it
   * before the callable returns; a decoupled model keeps sending responses on the same request.
   * Triton's TRITONSERVER_REQUEST_RELEASE_RESCHEDULE.
   */
  reschedule(): void {
    if (!this.#reschedulable) {
      throw new Error('request.reschedule() needs an iterative sequence model (sequence_batching { iterative_sequence: ' +
        'true }), called before the callable returns');
    }
    this.#rescheduled = true;
  }

  /** @internal A sequence model runs this request (again): where it stands, and whether it may reschedule. */
  beginStep(sequence: SequenceInfo, reschedulable: boolean): void {
    this.sequence = sequence;
    this.#reschedulable = reschedulable;
    this.#rescheduled = false;
  }

  /** @internal Whether the callable asked for another step. */
  get rescheduled(): boolean {
    return this.#rescheduled;
  }
}

/** What a callable returns for one request: outputs by name (NDArray or TypedArray). */
export type ResponseOutputs = Record<string, NDArray | import('./tensor').TypedArray>;

/** What decorators and `tritonContext` callables can read about the bound model. */
export interface TritonContext {
  /** The normalized config of the model this callable serves. */
  readonly modelConfig: NormalizedModelConfig;
  /** Which instance (0-based index into the bound callables) runs this call. */
  readonly instanceIndex: number;
  /**
   * True once request `index` of this call (0 = the first) was cancelled — its client went
   * away, aborted, or (decoupled) fell too far behind — or, for a decoupled model, ended: a
   * callable that works long may poll it and stop early. Absent where nothing can be cancelled
   * (warm-up).
   */
  readonly isCancelled?: (index?: number) => boolean;
}

/**
 * An inference callable as `bind()` takes it: requests in, one outputs object per request out
 * (sync or async). The context is passed as a second argument for decorators to use. `In` and
 * `Out` type the inputs and outputs when the model's tensors are declared with literal names
 * (see typed-model.ts); a decoupled model's callable may return more (`InferFuncResult`).
 */
export type InferFunc<In extends object = Record<string, NDArray>, Out = ResponseOutputs> = (
  requests: Request<In>[],
  context: TritonContext,
) => Out[] | Promise<Out[]>;

/**
 * Everything a callable bound with `bind()` may return: one outputs object per request (sync or
 * async), or, for a decoupled model, a generator (sync or async) yielding per step one outputs
 * object (or null: no response this step) per request, or nothing, answering through each
 * request's `responseSender`.
 */
export type InferFuncResult<Out = ResponseOutputs> =
  | Out[] | PromiseLike<Out[]>
  | Iterable<readonly (Out | null | undefined)[]> | AsyncIterable<readonly (Out | null | undefined)[]>
  | void | PromiseLike<void>;
