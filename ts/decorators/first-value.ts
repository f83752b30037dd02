/**
 * `firstValue`: replaces selected inputs by their first row (per-batch parameters such as a
 * temperature that every row carries).
 */
import type { NormalizedModelConfig } from '../config/normalize';
import { InferenceServerError } from '../errors';
import type { Request, TritonContext } from '../request';
import type { NDArray } from '../tensor';
import {
  TRITON_CONTEXT_KEY, type AnyDecorator, type BatchedInferFunc, type FirstValueOptions, type Kwargs, type RequestsInferFunc,
} from './types';
import { checkDeclaredKeys, formatRow, invalidArgError, rowsEqual, splitKeysAndOptions, withData } from './util';

/** The arguments of `firstValue`: input names, optionally followed by options. */
export type FirstValueArgs = string[] | [...keys: string[], options: FirstValueOptions];

/** Keys a decorator may not select: the name `tritonContext` puts the context under. */
export const RESERVED_KEYS: readonly string[] = [TRITON_CONTEXT_KEY];

interface FirstValueSettings {
  keys: string[];
  squeeze: boolean;
  strict: boolean;
}

/** Row 0 of `arr` without the batch axis; shape [] when squeezed and it has a single element. */
function firstRow(config: NormalizedModelConfig, name: string, arr: NDArray, settings: FirstValueSettings): NDArray {
  if (arr.shape.length === 0 || arr.rows === 0) {
    throw invalidArgError(config, 'firstValue', `input '${name}' has shape [${arr.shape.join(',')}]: it has no first row`);
  }
  if (settings.strict) {
    for (let row = 1; row < arr.rows; row++) {
      if (!rowsEqual(arr, 0, row)) {
        throw invalidArgError(config, 'firstValue', `the values of input '${name}' are not equal across the batch ` +
          `(row 0 is ${formatRow(arr, 0)}, row ${row} is ${formatRow(arr, row)}); send equal values ` +
          'or disable strict mode with firstValue(..., { strict: false })');
      }
    }
  }
  const dims = arr.shape.slice(1);
  const single = dims.every((d) => d === 1);
  return arr.sliceRows(0, 1).reshape(settings.squeeze && single ? [] : dims);
}

/** `inputs` with the selected keys replaced by their first row (a new object; absent keys skipped). */
function replaceInputs(config: NormalizedModelConfig, inputs: Kwargs, settings: FirstValueSettings): Kwargs | null {
  let replaced: Kwargs | null = null;
  for (const key of settings.keys) {
    const arr = inputs[key];
    if (arr === undefined) continue;
    replaced ??= { ...inputs };
    replaced[key] = firstRow(config, key, arr, settings);
  }
  return replaced;
}

/**
 * PyTriton's `@first_value(*keys, squeeze_single_values=True, strict=True)`: replaces each
 * selected input by its first row (dropping the batch axis). With `strict` (the default) every
 * row must hold the same value (INVALID_ARG otherwise); with `squeezeSingleValues` (the default)
 * a single-element value becomes a scalar-shaped NDArray (shape `[]`).
 *
 * It works on the kwargs object (below `batch`) and on the request list (each request's inputs
 * replaced in a new Request). Only for batching models (INVALID_ARG otherwise). The reserved
 * name `tritonContext` cannot be a key; a key that is not a declared input fails the requests
 * with INVALID_ARG, one that a request does not carry is skipped. In TypeScript, annotate a
 * request-list callable's parameter (`(requests: Request[]) => …`): an unannotated one is
 * typed as named inputs. What `fn` returns passes through unchanged (a decoupled model's
 * generator included).
 */
export function firstValue(...args: FirstValueArgs): AnyDecorator {
  const { keys, options } = splitKeysAndOptions<FirstValueOptions>('firstValue', args);
  const reserved = keys.filter((k) => RESERVED_KEYS.includes(k));
  if (reserved.length > 0) {
    throw new InferenceServerError('INVALID_ARG', `firstValue: ${reserved.map((k) => `'${k}'`).join(', ')} cannot be ` +
      `a key: the reserved names are ${RESERVED_KEYS.join(', ')}`);
  }
  const settings: FirstValueSettings = {
    keys,
    squeeze: options?.squeezeSingleValues ?? true,
    strict: options?.strict ?? true,
  };
  const checked = new WeakSet<NormalizedModelConfig>();
  const decorate = (fn: BatchedInferFunc | RequestsInferFunc) => (arg: Kwargs | Request[], context: TritonContext) => {
    const config = context.modelConfig;
    if (config.maxBatchSize === 0) {
      throw invalidArgError(config, 'firstValue', 'it can only be used with models that batch (maxBatchSize > 0)');
    }
    checkDeclaredKeys(config, 'firstValue', keys, checked);
    if (Array.isArray(arg)) {
      const requests = arg.map((r) => {
        const data = replaceInputs(config, r.data, settings);
        return data ? withData(r, data) : r;
      });
      return (fn as RequestsInferFunc)(requests, context);
    }
    return (fn as BatchedInferFunc)(replaceInputs(config, arg, settings) ?? arg, context);
  };
  return decorate as AnyDecorator;
}
