/**
 * Checks what an inference callable returned (PyTriton's TritonResultsValidator): one outputs
 * object per request, values NDArray or TypedArray. Non-strict mode converts numeric data to
 * the declared dtype (PyTriton casts with astype); strict mode also checks names, dtypes and
 * shapes against the declared outputs. Failures are INVALID_ARG-free model errors (INTERNAL):
 * the model, not the client, broke the contract.
 */
import { InferenceServerError } from './errors';
import type { NormalizedModelConfig, NormalizedTensor } from './config/normalize';
import type { ResponseOutputs } from './request';
import {
  NDArray, dataTypeOfArray, typedArrayFor, type DataType, type TypedArray,
} from './tensor';

function modelError(config: NormalizedModelConfig, message: string): InferenceServerError {
  return new InferenceServerError('INTERNAL', `model '${config.name}': ${message}`);
}

/** The shape a bare TypedArray output gets: declared dims with the batch axis and -1 resolved. */
function inferShape(spec: NormalizedTensor | undefined, length: number, rows: number, batching: boolean): number[] {
  const dims = spec ? [...spec.dims] : [-1];
  if (batching) dims.unshift(rows);
  const known = dims.filter((d) => d >= 0).reduce((a, b) => a * b, 1);
  const free = dims.filter((d) => d < 0).length;
  if (free === 1 && known > 0 && length % known === 0) return dims.map((d) => (d < 0 ? length / known : d));
  if (free === 0) return dims;
  return batching ? [rows, rows > 0 ? length / rows : 0] : [length];
}

function castTo(dtype: DataType, data: TypedArray): TypedArray {
  if (dtype === 'BYTES' || dtype === 'FP16' || dtype === 'BF16' || dtype === 'BOOL') return data;
  const Ctor = typedArrayFor(dtype);
  if (data instanceof Ctor) return data;
  const from = (Ctor as unknown as { from(values: ArrayLike<unknown>): TypedArray }).from.bind(Ctor);
  const bigOut = dtype === 'INT64' || dtype === 'UINT64';
  const bigIn = data instanceof BigInt64Array || data instanceof BigUint64Array;
  if (bigOut === bigIn) return from(data);
  return bigOut
    ? from(Array.from(data as Float64Array, (v) => BigInt(Math.trunc(v))))
    : from(Array.from(data as BigInt64Array, (v) => Number(v)));
}

function checkStrict(config: NormalizedModelConfig, spec: NormalizedTensor | undefined, name: string, arr: NDArray): void {
  if (!spec) throw modelError(config, `output '${name}' is not declared in the model's outputs`);
  if (arr.dtype !== spec.dtype) {
    throw modelError(config, `output '${name}' has datatype ${arr.dtype}, declared ${spec.dtype}`);
  }
  const dims = config.maxBatchSize > 0 ? arr.shape.slice(1) : arr.shape;
  if (dims.length !== spec.dims.length || spec.dims.some((d, i) => d !== -1 && d !== dims[i])) {
    throw modelError(config, `output '${name}' has shape [${arr.shape.join(',')}], declared [${spec.dims.join(',')}]` +
      (config.maxBatchSize > 0 ? ' (plus the batch axis)' : ''));
  }
}

/** Each config's declared outputs by name, made once per config (configs are not changed once normalized). */
const outputSpecs = new WeakMap<NormalizedModelConfig, Map<string, NormalizedTensor>>();

function outputSpec(config: NormalizedModelConfig, name: string): NormalizedTensor | undefined {
  let specs = outputSpecs.get(config);
  if (!specs) outputSpecs.set(config, specs = new Map(config.outputs.map((o) => [o.name, o])));
  return specs.get(name);
}

/** One output value → NDArray of the declared dtype. */
function toOutput(
  config: NormalizedModelConfig, name: string, value: unknown, rows: number, strict: boolean,
): NDArray {
  const spec = outputSpec(config, name);
  let arr: NDArray;
  if (value instanceof NDArray) {
    arr = value;
  } else if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const data = value as TypedArray;
    // Uint8Array can carry BOOL and Uint16Array FP16/BF16: the declared dtype decides.
    const dtype = spec && spec.dtype !== 'BYTES' && data instanceof typedArrayFor(spec.dtype)
      ? spec.dtype
      : dataTypeOfArray(data);
    const shape = inferShape(spec, data.length, rows, config.maxBatchSize > 0);
    try {
      arr = new NDArray(dtype, shape, data);
    } catch (err) {
      // The model produced the wrong amount of data: its fault (INTERNAL), not the client's.
      throw modelError(config, `output '${name}': ${(err as Error).message}`);
    }
  } else {
    throw modelError(config, `output '${name}' must be an NDArray or a TypedArray, got ${typeof value}`);
  }
  if (strict) {
    checkStrict(config, spec, name, arr);
    return arr;
  }
  if (spec && spec.dtype !== arr.dtype && spec.dtype !== 'BYTES' && arr.dtype !== 'BYTES') {
    return new NDArray(spec.dtype, arr.shape, castTo(spec.dtype, arr.data as TypedArray));
  }
  return arr;
}

/** Validates a callable's result for `rows` (one batch size per request). */
export function collectOutputs(
  config: NormalizedModelConfig, result: unknown, rows: number[], strict: boolean,
): Record<string, NDArray>[] {
  if (!Array.isArray(result) || result.length !== rows.length) {
    throw modelError(config, `the inference callable must return an array with one outputs object per request ` +
      `(${rows.length}), got ${Array.isArray(result) ? `an array of ${result.length}` : typeof result}`);
  }
  return result.map((outputs: ResponseOutputs, i) => {
    if (outputs === null || typeof outputs !== 'object') {
      throw modelError(config, `result ${i} must be an object of outputs, got ${outputs === null ? 'null' : typeof outputs}`);
    }
    const converted: Record<string, NDArray> = {};
    for (const name in outputs) {
      if (Object.prototype.hasOwnProperty.call(outputs, name)) converted[name] = toOutput(config, name, outputs[name], rows[i], strict);
    }
    return converted;
  });
}
