/**
 * Types shared by the decorators. PyTriton passes a batch as `**kwargs`; infernode passes one
 * object of named NDArrays (`Kwargs`), and the `TritonContext` always travels as the second
 * argument.
 */
import type { InferFunc, Request, ResponseOutputs, TritonContext } from '../request';
import type { NDArray, TypedArray } from '../tensor';

/** The key under which `tritonContext` puts the context into a kwargs object (PyTriton's `triton_context`). */
export const TRITON_CONTEXT_KEY = 'tritonContext';

/** Named inputs of a batch (PyTriton's `**kwargs`): input name → NDArray with the batch axis. */
export type Kwargs = Record<string, NDArray>;

/**
 * The constraint on a user's own inputs type `K`: every property an NDArray. Unlike `Kwargs`
 * it also admits interfaces, e.g. `batch((inputs: { a: NDArray; b: NDArray }) => …)`.
 */
export type NamedInputs<K> = { [P in keyof K]: NDArray };

/** A kwargs object that also carries the context under `tritonContext` (see `tritonContext`). */
export type ContextKwargs<K extends NamedInputs<K> = Kwargs> = K & { tritonContext: TritonContext };

/** A value a decorated callable may return: a sync value or a promise of it. */
export type Awaitable<T> = T | PromiseLike<T>;

/** One output of a batch: an NDArray, or a bare TypedArray whose shape follows the declared dims. */
export type OutputValue = NDArray | TypedArray;

/**
 * What a kwargs callable returns: outputs by name, or an array of outputs in the order of the
 * model's declared outputs (PyTriton's `convert_output`).
 */
export type BatchOutputs = ResponseOutputs | readonly OutputValue[];

/**
 * The steps of a decoupled (streaming) callable: a generator, async generator or any other
 * (async) iterable, each item one step (PyTriton's generator form).
 */
export type StreamedSteps<T> = Iterable<T> | AsyncIterable<T>;

/**
 * A callable below `batch` (or `sample`): named inputs (the whole batch, concatenated along the
 * batch axis) and the context in, outputs with the same number of rows out. Sync or async; for a
 * decoupled model also a generator (or async generator) yielding such outputs once per step.
 */
export type BatchedInferFunc<K extends NamedInputs<K> = Kwargs> = (
  inputs: K,
  context: TritonContext,
) => BatchedResult;

/** What a `BatchedInferFunc` returns. */
export type BatchedResult = Awaitable<BatchOutputs> | Awaitable<StreamedSteps<BatchOutputs>>;

/**
 * The outputs object a `batch`/`sample` callable's result `Ret` gives each request, for the
 * types: a returned (or yielded) record of outputs keeps its names and types; outputs in
 * declared order (an array) are `ResponseOutputs`, named at run time.
 */
export type OutputsOfResult<Ret> =
  Awaited<Ret> extends infer T
    ? T extends readonly unknown[] ? ResponseOutputs
      : T extends Iterable<infer S> | AsyncIterable<infer S> ? (S extends readonly unknown[] ? ResponseOutputs : S)
        : T
    : never;

/** A `BatchedInferFunc` that reads the context from `inputs.tritonContext` (see `tritonContext`). */
export type ContextInferFunc<K extends NamedInputs<K> = Kwargs> = (
  inputs: ContextKwargs<K>,
  context: TritonContext,
) => Awaitable<BatchOutputs> | Awaitable<StreamedSteps<BatchOutputs>>;

/**
 * A request-list callable as the request-list decorators take it: an `InferFunc`, or for a
 * decoupled model PyTriton's generator form, yielding per step one entry per request (null or
 * undefined: no response for that request this step).
 */
export type RequestsInferFunc = (
  requests: Request[],
  context: TritonContext,
) => Awaitable<ResponseOutputs[]> | Awaitable<StreamedSteps<readonly (ResponseOutputs | null | undefined)[]>>;

/** A decorator of kwargs callables (`groupByValues(...)`, `padBatch`): the input type is kept. */
export type KwargsDecorator = <K extends NamedInputs<K> = Kwargs>(fn: BatchedInferFunc<K>) => BatchedInferFunc<K>;

/**
 * A decorator of request-list callables (`fillOptionals(...)`, `groupByKeys`). It returns an
 * `InferFunc`, what `bind()` takes (a generator when `fn` returns one).
 */
export type RequestsDecorator = (fn: RequestsInferFunc) => InferFunc;

/** A decorator that takes either kind of callable and returns the same kind (`firstValue(...)`). */
export interface AnyDecorator {
  /** Decorates a kwargs callable (below `batch`). */
  <K extends NamedInputs<K> = Kwargs>(fn: BatchedInferFunc<K>): BatchedInferFunc<K>;
  /** Decorates a request-list callable (above `batch`, or undecorated). */
  (fn: RequestsInferFunc): InferFunc;
}

/** What a `padFn` of `groupByValues` receives and returns: one outputs object per sub-batch. */
export type SubBatchOutputs = Record<string, NDArray>;

/** A `padFn` of `groupByValues`: a function, or an object with a `pad` method (`ConstantPadder`). */
export type PadFn =
  | ((results: SubBatchOutputs[]) => SubBatchOutputs[])
  | { pad(results: SubBatchOutputs[]): SubBatchOutputs[] };

/** Options of `groupByValues`. */
export interface GroupByValuesOptions {
  /** Applied to the sub-batches' results before they are merged, e.g. `new ConstantPadder()`. */
  padFn?: PadFn;
}

/** Options of `firstValue`. */
export interface FirstValueOptions {
  /** Default true: a value with a single element becomes a scalar-shaped NDArray (shape `[]`). */
  squeezeSingleValues?: boolean;
  /** Default true: every row of a selected input must be equal (else INVALID_ARG). */
  strict?: boolean;
}

/** Defaults of `fillOptionals`: input name → value WITHOUT the batch axis. */
export type OptionalDefaults = Record<string, NDArray | TypedArray>;
