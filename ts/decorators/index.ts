/**
 * PyTriton's inference-callable decorators (pytriton.decorators), camelCased. Where PyTriton
 * passes `**kwargs`, infernode passes one object of named NDArrays; the `TritonContext` is
 * always the second argument.
 *
 * Recommended stacking order (outermost first, as in PyTriton's docs):
 * `fillOptionals` → `groupByKeys` → `batch` → `groupByValues` → `firstValue` → `tritonContext`:
 *
 * ```ts
 * fillOptionals({ temperature: new Float32Array([1]) })(
 *   groupByKeys(batch(groupByValues('temperature')(firstValue('temperature')(
 *     tritonContext(({ prompt, temperature, tritonContext }) => generate(prompt, temperature, tritonContext)))))));
 * ```
 *
 * For a decoupled model the innermost function may be a generator or async generator: every
 * decorator handles each yielded result as it handles a returned one, so the stack yields, per
 * step, one outputs object per request (the form a decoupled model's callable yields).
 */
export { batch, sample, groupByKeys } from './batch';
export { groupByValues, ConstantPadder, type GroupByValuesArgs } from './group-by-values';
export { fillOptionals } from './fill-optionals';
export { padBatch, paddedBatchSize } from './pad-batch';
export { firstValue, RESERVED_KEYS, type FirstValueArgs } from './first-value';
export { tritonContext } from './triton-context';
export { convertOutput, getInferenceRequestBatchSize } from './util';
export {
  TRITON_CONTEXT_KEY,
  type AnyDecorator, type Awaitable, type BatchOutputs, type BatchedInferFunc, type ContextInferFunc,
  type ContextKwargs, type FirstValueOptions, type GroupByValuesOptions, type Kwargs, type KwargsDecorator,
  type NamedInputs, type OptionalDefaults, type OutputValue, type PadFn, type RequestsDecorator, type RequestsInferFunc,
  type StreamedSteps, type SubBatchOutputs,
} from './types';
