/**
 * `fillOptionals`: inserts default values for inputs a request does not carry.
 */
import type { NormalizedModelConfig } from '../config/normalize';
import { InferenceServerError } from '../errors';
import type { InferFunc, Request, ResponseOutputs, TritonContext } from '../request';
import { NDArray, type TypedArray } from '../tensor';
import { tileRows } from './padding';
import type { Kwargs, OptionalDefaults, RequestsDecorator, RequestsInferFunc } from './types';
import { arrayWithDeclaredDims, invalidArgError, shapeString, withData } from './util';

function isTypedArray(value: unknown): value is TypedArray {
  return ArrayBuffer.isView(value) && !(value instanceof DataView);
}

/** The defaults checked against the model's declared inputs (PyTriton's `_verify_defaults`). */
function verifyDefaults(config: NormalizedModelConfig, defaults: OptionalDefaults): [string, NDArray][] {
  const unknown = Object.keys(defaults).filter((name) => !config.inputs.some((i) => i.name === name));
  if (unknown.length > 0) {
    throw invalidArgError(config, 'fillOptionals', `no input named ${unknown.map((n) => `'${n}'`).join(', ')} ` +
      `(the model's inputs are ${config.inputs.map((i) => i.name).join(', ')})`);
  }
  return Object.entries(defaults).map(([name, value]): [string, NDArray] => {
    const spec = config.inputs.find((i) => i.name === name)!;
    const arr = value instanceof NDArray ? value : arrayWithDeclaredDims(spec, value);
    if (arr.dtype !== spec.dtype) {
      throw invalidArgError(config, 'fillOptionals', `the default for input '${name}' has datatype ${arr.dtype}, ` +
        `expected ${spec.dtype} (the input's declared datatype)`);
    }
    const dims = spec.dims;
    if (arr.shape.length !== dims.length || dims.some((d, i) => d !== -1 && d !== arr.shape[i])) {
      throw invalidArgError(config, 'fillOptionals', `the default for input '${name}' has shape ${shapeString(arr.shape)}, ` +
        `expected ${shapeString(dims)} (the input's declared shape, without the batch axis; -1 matches any size)`);
    }
    return [name, arr];
  });
}

/** `request` with the missing defaults inserted (tiled to its batch size when batching). */
function fill(request: Request, defaults: readonly [string, NDArray][], batching: boolean): Request {
  let data: Kwargs | null = null;
  for (const [name, value] of defaults) {
    if (name in request.data) continue;
    data ??= { ...request.data };
    if (!batching) {
      data[name] = value;
      continue;
    }
    // A request without inputs counts as one row, as BoundModel counts it.
    let rows = 1;
    for (const present in request.data) {
      rows = request.data[present].rows;
      break;
    }
    data[name] = tileRows(value, rows);
  }
  return data ? withData(request, data) : request;
}

/**
 * PyTriton's `@fill_optionals(**defaults)`: inserts a default for every input a request lacks.
 * Defaults are NDArrays (or TypedArrays, shaped by the declared dims) WITHOUT the batch axis;
 * for batching models each is tiled to the request's batch size.
 *
 * The defaults are checked against `context.modelConfig` at the first call: their names must
 * be declared inputs, their datatypes the declared ones and their shapes the declared dims
 * (-1 matches any size); requests fail with INVALID_ARG naming the input otherwise. Put it at
 * the top of the stack (it takes the request list), so that `groupByKeys` can form bigger groups.
 * A decoupled model's generator passes through unchanged (as in PyTriton).
 */
export function fillOptionals(defaults: OptionalDefaults): RequestsDecorator {
  if (defaults === null || typeof defaults !== 'object') {
    throw new InferenceServerError('INVALID_ARG', 'fillOptionals: defaults must be an object of input name → value');
  }
  for (const [name, value] of Object.entries(defaults)) {
    if (!(value instanceof NDArray) && !isTypedArray(value)) {
      throw new InferenceServerError('INVALID_ARG', `fillOptionals: the default for '${name}' must be an NDArray or a ` +
        `TypedArray without the batch axis, got ${value === null ? 'null' : typeof value}`);
    }
  }
  const verified = new WeakMap<NormalizedModelConfig, [string, NDArray][]>();
  return (fn: RequestsInferFunc): InferFunc => (requests: Request[], context: TritonContext): ResponseOutputs[] => {
    const config = context.modelConfig;
    if (!Array.isArray(requests)) {
      throw invalidArgError(config, 'fillOptionals', 'it must sit above batch (it received named inputs, not a request list)');
    }
    let checked = verified.get(config);
    if (!checked) {
      checked = verifyDefaults(config, defaults);
      verified.set(config, checked);
    }
    if (checked.length === 0) return fn(requests, context) as ResponseOutputs[];
    const batching = config.maxBatchSize > 0;
    return fn(requests.map((r) => fill(r, checked, batching)), context) as ResponseOutputs[];
  };
}
