/**
 * Building blocks of the decorators: promise plumbing that stays synchronous for synchronous
 * callables, errors that name the model, output conversion (PyTriton's `convert_output`) and
 * row operations on NDArrays.
 */
import type { NormalizedModelConfig, NormalizedTensor } from '../config/normalize';
import { InferenceServerError } from '../errors';
import { Request } from '../request';
import {
  NDArray, dataTypeOfArray, elementCount, typedArrayFor, type DataType, type TypedArray,
  type TypedArrayConstructor,
} from '../tensor';
import { TRITON_CONTEXT_KEY, type Awaitable, type Kwargs, type OutputValue, type StreamedSteps } from './types';

/** True for promises and other thenables. */
export function isPromiseLike<T>(value: Awaitable<T>): value is PromiseLike<T> {
  return value !== null && typeof value === 'object' && typeof (value as PromiseLike<T>).then === 'function';
}

/** Applies `f` at once to a plain value, or after a promise resolves (no needless await). */
export function thenApply<T, R>(value: Awaitable<T>, f: (value: T) => R): R | Promise<R> {
  return isPromiseLike(value) ? Promise.resolve(value).then(f) : f(value);
}

/**
 * Calls `f` on each item in turn, the next call only after the previous result resolved (as
 * PyTriton calls the wrapped function once per group). Synchronous while `f` is.
 */
export function mapSequential<T, R>(items: readonly T[], f: (item: T, index: number) => Awaitable<R>): R[] | Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  for (let i = 0; i < items.length; i++) {
    const result = f(items[i], i);
    if (isPromiseLike(result)) return continueSequential(items, f, results, i, result);
    results[i] = result;
  }
  return results;
}

async function continueSequential<T, R>(
  items: readonly T[], f: (item: T, index: number) => Awaitable<R>, results: R[], index: number, pending: PromiseLike<R>,
): Promise<R[]> {
  results[index] = await pending;
  for (let i = index + 1; i < items.length; i++) results[i] = await f(items[i], i);
  return results;
}

/**
 * The steps of a callable's result when it streams (a decoupled model's generator, async
 * generator or other (async) iterable), else null: outputs by name, an array (of outputs, or of
 * per-request results), an NDArray or a TypedArray are plain results, never steps.
 */
export function asSteps(value: unknown): StreamedSteps<unknown> | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value) ||
    value instanceof NDArray) {
    return null;
  }
  const v = value as { [Symbol.asyncIterator]?: unknown; [Symbol.iterator]?: unknown };
  return typeof v[Symbol.asyncIterator] === 'function' || typeof v[Symbol.iterator] === 'function'
    ? (value as StreamedSteps<unknown>) : null;
}

/** True when `steps` is iterated asynchronously (as driveDecoupled does, async wins when it is both). */
export function isAsyncSteps(steps: StreamedSteps<unknown>): steps is AsyncIterable<unknown> {
  return typeof (steps as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

/**
 * `asSteps(value)`, refusing steps for a model that is not decoupled (only a decoupled model
 * can send a stream of responses): INTERNAL naming the model and the decorator.
 */
export function decoupledSteps(config: NormalizedModelConfig, decorator: string, value: unknown): StreamedSteps<unknown> | null {
  const steps = asSteps(value);
  if (steps && !config.decoupled) {
    throw modelOutputError(config, decorator, `the callable returned ${isAsyncSteps(steps) ? 'an async generator' : 'a generator'} ` +
      '(a stream of responses), which only a decoupled model can send: bind the model with config: { decoupled: true }, ' +
      'or return the outputs');
  }
  return steps;
}

/**
 * `steps` with `f` applied to each step as it is yielded, as a generator of the same kind (async
 * for async steps). Closing it early (a cancelled request) closes `steps`, and so does an error
 * thrown by `f`: the wrapped generator's `finally` runs.
 */
export function mapSteps<R>(steps: StreamedSteps<unknown>, f: (step: unknown) => R): Generator<R, void> | AsyncGenerator<R, void> {
  if (isAsyncSteps(steps)) {
    return (async function* mapAsync() {
      for await (const step of steps) yield f(step);
    })();
  }
  return (function* mapSync() {
    for (const step of steps) yield f(step);
  })();
}

/**
 * Applies `f` to a callable's result once its promise resolved: to the result itself, or, when
 * the callable streams (a decoupled model's generator), to each step it yields (`mapSteps`).
 * PyTriton's `@batch` does this for generators. The result's static type is the decorator's to
 * state: `InferFunc` has no generator form, though `bind()` takes one for decoupled models.
 */
export function applyPerStep<R>(
  config: NormalizedModelConfig, decorator: string, result: unknown, f: (value: unknown) => R,
): unknown {
  return thenApply(result, (value) => {
    const steps = decoupledSteps(config, decorator, value);
    return steps ? mapSteps(steps, f) : f(value);
  });
}

/** Marks, in a round of `zipSteps`, a stream that has ended. */
export const ENDED: unique symbol = Symbol('ended');

/** One round of `zipSteps`: each stream's next step, or ENDED. */
export type Round = (unknown | typeof ENDED)[];

type AnyIterator = Iterator<unknown> | AsyncIterator<unknown>;

/**
 * Advances several streams in lockstep: each round takes the next step of every stream that has
 * not ended (one after the other, in order) and yields `merge(round, index)`; it ends when every
 * stream has ended. Async when any stream is. Closing it, or an error (a stream's or `merge`'s),
 * closes the streams that have not ended.
 */
export function zipSteps<R>(all: readonly StreamedSteps<unknown>[], merge: (round: Round, index: number) => R):
  Generator<R, void> | AsyncGenerator<R, void> {
  const iterators: AnyIterator[] = all.map((s) => (isAsyncSteps(s) ? s[Symbol.asyncIterator]() : s[Symbol.iterator]()));
  if (all.some(isAsyncSteps)) return zipAsync(iterators, merge);
  return zipSync(iterators as Iterator<unknown>[], merge);
}

function* zipSync<R>(iterators: Iterator<unknown>[], merge: (round: Round, index: number) => R): Generator<R, void> {
  // open[i]: stream i may still yield (a stream whose next() threw has finished).
  const open = iterators.map(() => true);
  try {
    for (let index = 0; ; index++) {
      const round: Round = iterators.map((it, i) => {
        if (!open[i]) return ENDED;
        open[i] = false;
        const step = it.next();
        open[i] = !step.done;
        return step.done ? ENDED : step.value;
      });
      if (!open.some(Boolean)) return;
      yield merge(round, index);
    }
  } finally {
    iterators.forEach((it, i) => {
      if (!open[i]) return;
      try {
        it.return?.();
      } catch {
        // closing is best effort: the stream's outcome is decided already
      }
    });
  }
}

async function* zipAsync<R>(iterators: AnyIterator[], merge: (round: Round, index: number) => R): AsyncGenerator<R, void> {
  const open = iterators.map(() => true);
  try {
    for (let index = 0; ; index++) {
      const round: Round = [];
      for (let i = 0; i < iterators.length; i++) {
        if (!open[i]) {
          round.push(ENDED);
          continue;
        }
        open[i] = false;
        const step = await iterators[i].next();
        open[i] = !step.done;
        round.push(step.done ? ENDED : step.value);
      }
      if (!open.some(Boolean)) return;
      yield merge(round, index);
    }
  } finally {
    for (let i = 0; i < iterators.length; i++) {
      if (!open[i]) continue;
      try {
        await iterators[i].return?.();
      } catch {
        // closing is best effort: the stream's outcome is decided already
      }
    }
  }
}

/** INVALID_ARG naming the model and the decorator: a request or a decorator was used wrongly. */
export function invalidArgError(config: NormalizedModelConfig, decorator: string, message: string): InferenceServerError {
  return new InferenceServerError('INVALID_ARG', `model '${config.name}': ${decorator}: ${message}`);
}

/** INTERNAL naming the model and the decorator: the model's callable broke the output contract. */
export function modelOutputError(config: NormalizedModelConfig, decorator: string, message: string): InferenceServerError {
  return new InferenceServerError('INTERNAL', `model '${config.name}': ${decorator}: ${message}`);
}

/** "[1,2,3]" */
export function shapeString(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'an object';
  return typeof value;
}

/**
 * The batch size of a request (or of a kwargs object): the first dim of its first input
 * (PyTriton's `get_inference_request_batch_size`). INVALID_ARG when it has no inputs.
 */
export function getInferenceRequestBatchSize(request: Request | Kwargs): number {
  const data = request instanceof Request ? request.data : request;
  for (const name in data) {
    if (name !== TRITON_CONTEXT_KEY) return data[name].rows;
  }
  throw new InferenceServerError('INVALID_ARG', 'cannot determine the batch size of a request without inputs');
}

/** The NDArray inputs of a kwargs object, without the `tritonContext` entry. */
export function tensorEntries(inputs: Kwargs): [string, NDArray][] {
  const entries: [string, NDArray][] = [];
  for (const name in inputs) {
    if (name === TRITON_CONTEXT_KEY) continue;
    entries.push([name, inputs[name]]);
  }
  return entries;
}

/**
 * A callable's result as outputs by name: an object is taken as is; an array is mapped onto
 * the declared outputs in order and must have one entry per declared output (PyTriton's
 * `convert_output`).
 */
export function convertOutput(
  result: unknown, config: NormalizedModelConfig, decorator = 'convertOutput',
): Record<string, OutputValue> {
  if (Array.isArray(result)) {
    if (result.length !== config.outputs.length) {
      throw modelOutputError(config, decorator, `the callable returned an array of ${result.length} outputs, ` +
        `but the model declares ${config.outputs.length} (${config.outputs.map((o) => o.name).join(', ')}); ` +
        'an array result must list the outputs in declared order');
    }
    const outputs: Record<string, OutputValue> = {};
    config.outputs.forEach((spec, i) => { outputs[spec.name] = result[i] as OutputValue; });
    return outputs;
  }
  if (result === null || typeof result !== 'object' || result instanceof NDArray || ArrayBuffer.isView(result)) {
    throw modelOutputError(config, decorator, 'the callable must return an object of outputs or an array of outputs ' +
      `in declared order, got ${describe(result)}`);
  }
  return result as Record<string, OutputValue>;
}

/** Declared dims resolved for `rowSize` elements per row (one -1 may be inferred), or null. */
function resolveDims(dims: readonly number[], rowSize: number): number[] | null {
  let known = 1;
  let free = 0;
  for (const d of dims) {
    if (d < 0) free++;
    else known *= d;
  }
  if (free === 0) return known === rowSize ? [...dims] : null;
  if (free === 1 && known > 0 && rowSize % known === 0) return dims.map((d) => (d < 0 ? rowSize / known : d));
  return null;
}

/** The datatype of a bare TypedArray for `spec`: the declared one when the array can hold it. */
export function dtypeForArray(spec: NormalizedTensor | undefined, data: TypedArray): DataType {
  return spec && spec.dtype !== 'BYTES' && data instanceof typedArrayFor(spec.dtype) ? spec.dtype : dataTypeOfArray(data);
}

/** A TypedArray of `length` elements as an NDArray with the declared dims (one -1 inferred), else 1-D. */
export function arrayWithDeclaredDims(spec: NormalizedTensor | undefined, data: TypedArray): NDArray {
  const shape = (spec && resolveDims(spec.dims, data.length)) ?? [data.length];
  return new NDArray(dtypeForArray(spec, data), shape, data);
}

/**
 * One output of a batch of `rows` rows as an NDArray. A bare TypedArray gets the shape
 * `[rows, ...declared dims]` (one -1 inferred); its length must split into `rows` rows.
 */
export function asBatchArray(
  config: NormalizedModelConfig, decorator: string, name: string, value: unknown, rows: number,
): NDArray {
  if (value instanceof NDArray) return value;
  if (!ArrayBuffer.isView(value) || value instanceof DataView) {
    throw modelOutputError(config, decorator, `output '${name}' must be an NDArray or a TypedArray, got ${describe(value)}`);
  }
  const data = value as TypedArray;
  const spec = config.outputs.find((o) => o.name === name);
  if (rows === 0 ? data.length !== 0 : data.length % rows !== 0) {
    throw modelOutputError(config, decorator, `output '${name}' is a TypedArray of ${data.length} elements, ` +
      `which does not split into ${rows} rows`);
  }
  let dims: number[];
  if (rows === 0) dims = spec ? spec.dims.map((d) => Math.max(d, 0)) : [0];
  else dims = (spec && resolveDims(spec.dims, data.length / rows)) ?? [data.length / rows];
  return new NDArray(dtypeForArray(spec, data), [rows, ...dims], data);
}

/** Elements per row (along axis 0). */
export function rowSizeOf(arr: NDArray): number {
  return arr.rows === 0 ? 0 : arr.size / arr.rows;
}

/** A zero-filled array (empty strings for BYTES) of `dtype` and `shape`. */
export function allocate(dtype: DataType, shape: number[]): NDArray {
  const count = elementCount(shape);
  if (dtype === 'BYTES') return new NDArray('BYTES', shape, new Array<Uint8Array>(count).fill(EMPTY_BYTES));
  return new NDArray(dtype, shape, new (typedArrayFor(dtype))(count));
}

/** The empty byte string BYTES padding uses (PyTriton pads strings with `b""`). */
export const EMPTY_BYTES: Uint8Array = Buffer.alloc(0);

/**
 * A data array of the same kind as `arr`'s, with `count` elements (zeros; empty byte strings for
 * BYTES, so that it is a valid NDArray before the caller fills it).
 */
export function sameKind(arr: NDArray, count: number): TypedArray | Uint8Array[] {
  if (Array.isArray(arr.data)) return new Array<Uint8Array>(count).fill(EMPTY_BYTES);
  return new ((arr.data as TypedArray).constructor as TypedArrayConstructor)(count);
}

/** Copies row `from` of `src` into row `to` of `dst` (same row size and data kind). */
export function copyRow(src: NDArray, from: number, dst: NDArray, to: number, rowSize: number): void {
  if (Array.isArray(src.data)) {
    const s = src.data;
    const d = dst.data as Uint8Array[];
    for (let k = 0; k < rowSize; k++) d[to * rowSize + k] = s[from * rowSize + k];
    return;
  }
  const s = src.data as TypedArray;
  (dst.data as Float64Array).set(s.subarray(from * rowSize, (from + 1) * rowSize) as Float64Array, to * rowSize);
}

/** Rows `indices` (ascending) of `arr`: a zero-copy view when they are consecutive, else a copy. */
export function takeRows(arr: NDArray, indices: readonly number[]): NDArray {
  const n = indices.length;
  if (n > 0 && indices[n - 1] - indices[0] === n - 1) return arr.sliceRows(indices[0], indices[0] + n);
  const rowSize = rowSizeOf(arr);
  const out = new NDArray(arr.dtype, [n, ...arr.shape.slice(1)], sameKind(arr, n * rowSize));
  for (let j = 0; j < n; j++) copyRow(arr, indices[j], out, j, rowSize);
  return out;
}

/** The bytes of row `row` as a string usable as a map key (byte-exact, self-delimiting for BYTES). */
export function rowKey(arr: NDArray, row: number): string {
  const rowSize = rowSizeOf(arr);
  if (Array.isArray(arr.data)) {
    let key = '';
    for (let k = row * rowSize; k < (row + 1) * rowSize; k++) {
      const item = arr.data[k];
      key += `${item.length}:${Buffer.from(item.buffer, item.byteOffset, item.byteLength).toString('latin1')}`;
    }
    return key;
  }
  const data = arr.data as TypedArray;
  const bytes = data.BYTES_PER_ELEMENT * rowSize;
  return Buffer.from(data.buffer, data.byteOffset + row * bytes, bytes).toString('latin1');
}

/** Whether rows `a` and `b` of `arr` hold equal values (NaN equals NaN; bytes compared for BYTES). */
export function rowsEqual(arr: NDArray, a: number, b: number): boolean {
  const rowSize = rowSizeOf(arr);
  if (Array.isArray(arr.data)) {
    for (let k = 0; k < rowSize; k++) {
      if (Buffer.compare(arr.data[a * rowSize + k], arr.data[b * rowSize + k]) !== 0) return false;
    }
    return true;
  }
  const data = arr.data as ArrayLike<number | bigint>;
  for (let k = 0; k < rowSize; k++) {
    const x = data[a * rowSize + k];
    const y = data[b * rowSize + k];
    if (x !== y && !(x !== x && y !== y)) return false;
  }
  return true;
}

/** Row `row` of `arr` for messages: "[0.5,1]" or '["ab","c"]', cut after 8 elements. */
export function formatRow(arr: NDArray, row: number): string {
  const rowSize = rowSizeOf(arr);
  const items: string[] = [];
  for (let k = 0; k < Math.min(rowSize, 8); k++) {
    const v = arr.data[row * rowSize + k];
    items.push(v instanceof Uint8Array ? JSON.stringify(Buffer.from(v).toString('utf8')) : String(v));
  }
  if (rowSize > 8) items.push('…');
  return `[${items.join(',')}]`;
}

/** A new Request with other inputs and the same parameters and requested outputs. */
export function withData(request: Request, data: Kwargs): Request {
  return new Request(data, request.parameters, request.requestedOutputNames);
}

/** Splits `(...keys, options?)` arguments; keys must be non-empty strings. */
export function splitKeysAndOptions<O extends object>(
  decorator: string, args: readonly (string | O)[],
): { keys: string[]; options: O | undefined } {
  const last = args[args.length - 1];
  const hasOptions = last !== undefined && typeof last === 'object';
  const keys = (hasOptions ? args.slice(0, -1) : args) as unknown[];
  for (const key of keys) {
    if (typeof key !== 'string' || key === '') {
      throw new InferenceServerError('INVALID_ARG',
        `${decorator}: keys must be input names (non-empty strings), got ${String(key)}`);
    }
  }
  return { keys: keys as string[], options: hasOptions ? (last as O) : undefined };
}

/**
 * Checks once per model config that every key names a declared input (INVALID_ARG naming the
 * model, the decorator and the unknown keys otherwise).
 */
export function checkDeclaredKeys(
  config: NormalizedModelConfig, decorator: string, keys: readonly string[], checked: WeakSet<NormalizedModelConfig>,
): void {
  if (checked.has(config)) return;
  const unknown = keys.filter((k) => !config.inputs.some((i) => i.name === k));
  if (unknown.length > 0) {
    throw invalidArgError(config, decorator, `no input named ${unknown.map((k) => `'${k}'`).join(', ')} ` +
      `(the model's inputs are ${config.inputs.map((i) => i.name).join(', ')})`);
  }
  checked.add(config);
}
