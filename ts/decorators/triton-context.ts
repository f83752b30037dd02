/**
 * `tritonContext`: PyTriton's `@triton_context`, which injects the context as a kwarg.
 */
import type { InferFunc, Request, TritonContext } from '../request';
import {
  TRITON_CONTEXT_KEY, type BatchedInferFunc, type ContextInferFunc, type ContextKwargs, type Kwargs, type NamedInputs,
  type RequestsInferFunc,
} from './types';

/**
 * PyTriton's `@triton_context`: the wrapped function finds the `TritonContext` (the model's
 * normalized config and the instance index) under the key `tritonContext` of its first
 * argument when that argument is a kwargs object (below `batch` or `sample`):
 *
 * ```ts
 * batch(tritonContext(({ x, tritonContext }) => ({ y: scale(x, tritonContext.modelConfig) })))
 * ```
 *
 * The context is always the second argument of every callable too, so in infernode this
 * decorator is a convenience; on a request-list callable it passes the call through unchanged
 * (annotate its parameter, `(requests: Request[]) => …`, to pick that overload). The kwargs
 * object is copied, never modified. What `fn` returns passes through unchanged (a decoupled
 * model's generator included).
 */
export function tritonContext<K extends NamedInputs<K> = Kwargs>(fn: ContextInferFunc<K>): BatchedInferFunc<K>;
export function tritonContext(fn: RequestsInferFunc): InferFunc;
export function tritonContext(fn: ContextInferFunc | RequestsInferFunc): BatchedInferFunc | InferFunc {
  const withContext = (arg: Kwargs | Request[], context: TritonContext): unknown => {
    if (Array.isArray(arg)) return (fn as RequestsInferFunc)(arg, context);
    const inputs = { ...arg, [TRITON_CONTEXT_KEY]: context } as ContextKwargs;
    return (fn as ContextInferFunc)(inputs, context);
  };
  return withContext as BatchedInferFunc | InferFunc;
}
