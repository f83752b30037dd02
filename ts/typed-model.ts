/**
 * Types that follow a model's declared inputs and outputs (compile time only: nothing here
 * exists at run time except `defineModel`, which returns its argument).
 *
 * `bind()` infers its `inputs`/`outputs` as literal tuples (as if written `as const`), so the
 * callable sees `{ a: NDArray<Float32Array> }` for `{ name: 'a', dtype: 'FP32' }`, and what it
 * returns is checked against the declared outputs: an undeclared name, or data of another
 * datatype, does not compile. Specs whose names are not literals (`Tensor[]` built at run time)
 * give the untyped `Record<string, NDArray>` forms, as before.
 */
import type { Tensor } from './config/types';
import type { ArrayOfDataType, DataType, NDArray, TensorData, TypedArray } from './tensor';

/**
 * An input of `infer()`: an NDArray, or its parts. Data without a shape (a bare TypedArray, a
 * list of strings or byte strings for BYTES, `{ data }`) is one sample of the declared input:
 * its declared dims, with the batch axis added when the model batches (as ModelClient.inferSample
 * takes it). `D` is the data the input's datatype holds (see below).
 */
export type InferInput<D extends TensorData = TensorData> =
  | NDArray<D> | D | (D extends Uint8Array[] ? string[] : never)
  | { data: D | (D extends Uint8Array[] ? string[] : never); shape?: number[]; dtype?: DataType };

/** The declared tensors of a model, as `bind()` takes them (literal when written inline or `as const`). */
export type TensorSpecs = readonly Tensor[];

/** A model's declared inputs and outputs: what `defineModel` returns and `triton.infer<M>` reads. */
export interface ModelSpec<I extends TensorSpecs = TensorSpecs, O extends TensorSpecs = TensorSpecs> {
  readonly inputs: I;
  readonly outputs: O;
}

/** True when every tensor of `T` has a literal name (otherwise names are only known at run time). */
type HasLiteralNames<T extends TensorSpecs> =
  T[number] extends { name: infer N } ? ([N] extends [string] ? (string extends N ? false : true) : false) : false;

/** The data type of one declared tensor. */
type DataOf<S> = S extends { dtype: infer D } ? ArrayOfDataType<D> : TensorData;

// Exclude, not Extract of `{ optional?: false }`: an all-optional type is weak, and a spec without
// `optional` shares no property with it, so it would not extend it.
type RequiredNames<T extends TensorSpecs> = Exclude<T[number], { optional: true }>['name'] & string;
type OptionalNames<T extends TensorSpecs> = Extract<T[number], { optional: true }>['name'] & string;
type SpecNamed<T extends TensorSpecs, N> = Extract<T[number], { name: N }>;

/**
 * The inputs a callable receives for declared inputs `I` (with their batch axis): each declared
 * input as an NDArray of its datatype's array (optional inputs may be absent). Inputs the
 * server adds (a sequence model's control and state inputs) are reachable by name as NDArrays.
 */
export type InputsOf<I extends TensorSpecs> = HasLiteralNames<I> extends true
  ? { [N in RequiredNames<I>]: NDArray<DataOf<SpecNamed<I, N>>> }
  & { [N in OptionalNames<I>]?: NDArray<DataOf<SpecNamed<I, N>>> }
  & { readonly [name: string]: NDArray }
  : Record<string, NDArray>;

/** One output value a callable may return for a declared output: an NDArray or a bare TypedArray of its datatype. */
export type OutputValueOf<S> = DataOf<S> extends infer D extends TensorData
  ? NDArray<D> | (D extends Uint8Array[] ? never : D)
  : never;

/**
 * What a callable may return per request for declared outputs `O`: any of the declared outputs
 * (a model may leave out outputs the request did not ask for), each of its datatype.
 */
export type OutputsOf<O extends TensorSpecs> = HasLiteralNames<O> extends true
  ? { [N in O[number]['name'] & string]?: OutputValueOf<SpecNamed<O, N>> }
  : Record<string, NDArray | TypedArray>;

/**
 * A callable's returned outputs `R` checked against the declared `Allowed`: a name that is not
 * declared becomes `never` (so a typo does not compile), a declared one must hold its datatype
 * (when the value's is known).
 * Arrays (outputs in declared order) and records with run-time names are left to the run-time
 * check.
 */
export type CheckedOutputs<R, Allowed> = R extends readonly unknown[]
  ? R
  : string extends keyof R ? R  // names known only at run time (an untyped callable or decorator)
    : { [P in keyof R]: P extends keyof Allowed ? (IsUntyped<R[P]> extends true ? R[P] : Allowed[P]) : never };

/**
 * A value whose data type is not known (`NDArray`, e.g. an input of an untyped `Request` passed
 * through, or a `TypedArray`): its datatype is checked (or cast) at run time only.
 */
type IsUntyped<V> = [V] extends [NDArray<infer D>] ? (TensorData extends D ? true : false) : ([TypedArray] extends [V] ? true : false);

/**
 * The inputs `triton.infer<M>()` takes for a model spec `M`: each declared input in any form
 * `InferInput` allows, holding its datatype's array (optional inputs may be left out).
 */
export type InferInputsOf<M extends ModelSpec> = HasLiteralNames<M['inputs']> extends true
  ? { [N in RequiredNames<M['inputs']>]: InferInput<DataOf<SpecNamed<M['inputs'], N>>> }
  & { [N in OptionalNames<M['inputs']>]?: InferInput<DataOf<SpecNamed<M['inputs'], N>>> }
  : Record<string, InferInput>;

/** What `triton.infer()` resolves with for declared outputs `O`: each output as an NDArray of its datatype. */
export type InferResultOf<O extends TensorSpecs> = HasLiteralNames<O> extends true
  ? { [N in O[number]['name'] & string]: NDArray<DataOf<SpecNamed<O, N>>> }
  : Record<string, NDArray>;

/**
 * The inputs `ModelClient<M>`'s calls take: each declared input by name, an NDArray or a bare
 * array of its datatype (BYTES: strings or byte arrays); positional arrays stay untyped.
 */
export type ClientInputsOf<M extends ModelSpec> = HasLiteralNames<M['inputs']> extends true
  ? { [N in RequiredNames<M['inputs']>]: ClientInputOf<DataOf<SpecNamed<M['inputs'], N>>> }
  & { [N in OptionalNames<M['inputs']>]?: ClientInputOf<DataOf<SpecNamed<M['inputs'], N>>> }
  : Record<string, NDArray | TypedArray | (string | Uint8Array)[]>;

type ClientInputOf<D> = NDArray<D & TensorData> | (D extends Uint8Array[] ? (string | Uint8Array)[] : D);

/**
 * A model's declared inputs and outputs, typed for reuse: pass it to `bind()` (spread it into the
 * options) and as `triton.infer<typeof spec>(...)`'s or `new ModelClient<typeof spec>(...)`'s type
 * argument, so in-process and client results are typed too. Returns its argument unchanged.
 *
 * ```ts
 * const AddSub = defineModel({
 *   inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'FP32', shape: [-1] }],
 *   outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }],
 * });
 * triton.bind({ modelName: 'AddSub', ...AddSub, inferFunc: batch(({ a, b }) => ({ add: a.data.map((v, i) => v + b.data[i]) })) });
 * const { add } = await triton.infer<typeof AddSub>('AddSub', { a, b });   // add: NDArray<Float32Array>
 * ```
 */
export function defineModel<const I extends TensorSpecs, const O extends TensorSpecs>(spec: { inputs: I; outputs: O }): ModelSpec<I, O> {
  return spec;
}
