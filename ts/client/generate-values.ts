/**
 * Tensors as Triton's generate extension carries them: flat JSON values (a scalar for one
 * element, else a flat list; BYTES as UTF-8 text, BOOL as booleans) whose shapes the server
 * takes from the model's metadata. ModelClient's streaming over HTTP (generate_stream) maps its
 * NDArrays to them and the response values back, using the model's config for datatypes and dims.
 */
import { NDArray, elementCount, typedArrayFor, type DataType, type TypedArray } from '../tensor';
import { ClientValueError } from './errors';

/** What the mapping needs of a tensor's config. */
export interface GenerateTensorSpec {
  name: string;
  dtype: DataType;
  /** Config dims, without the batch axis. */
  shape: number[];
}

/** An input as generate's JSON value. FP16/BF16 have no JSON form: refused (use grpc://). */
export function toGenerateValue(name: string, arr: NDArray): unknown {
  if (arr.dtype === 'FP16' || arr.dtype === 'BF16') {
    throw new ClientValueError(`input '${name}' is ${arr.dtype}, which generate's JSON cannot carry: stream over a grpc:// URL`);
  }
  let values: unknown[];
  if (arr.dtype === 'BYTES') values = (arr.data as Uint8Array[]).map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'));
  else if (arr.dtype === 'BOOL') values = Array.from(arr.data as Uint8Array, (v) => v !== 0);
  else if (arr.data instanceof BigInt64Array || arr.data instanceof BigUint64Array) {
    values = Array.from(arr.data as BigInt64Array, (v) => {
      if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
        throw new ClientValueError(`input '${name}' holds ${v}, beyond what generate's JSON numbers carry exactly: stream over a grpc:// URL`);
      }
      return Number(v);
    });
  } else values = Array.from(arr.data as ArrayLike<number>);
  return values.length === 1 ? values[0] : values;
}

/**
 * A response value as an NDArray of `spec`'s datatype. Its shape: the config dims (one -1
 * resolved from the element count), after `rows` batch rows when given (rows resolved from the
 * element count when -1 is passed and the dims are fixed).
 */
export function fromGenerateValue(spec: GenerateTensorSpec, value: unknown, rows?: number): NDArray {
  const items = Array.isArray(value) ? value.flat(Infinity) : [value];
  const what = `output '${spec.name}'`;
  const shape = generateShape(spec, items.length, rows);
  if (spec.dtype === 'BYTES') return new NDArray('BYTES', shape, items.map((v) => Buffer.from(String(v))));
  if (spec.dtype === 'FP16' || spec.dtype === 'BF16') throw new ClientValueError(`${what} is ${spec.dtype}: stream over a grpc:// URL`);
  const data = new (typedArrayFor(spec.dtype))(items.length) as TypedArray;
  items.forEach((v, i) => {
    if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(v as number);
    else if (typeof v === 'boolean' || typeof v === 'number') (data as Float64Array)[i] = Number(v);
    else throw new ClientValueError(`${what}: expected numbers in the server's generate response, got ${typeof v}`);
  });
  return new NDArray(spec.dtype, shape, data);
}

function generateShape(spec: GenerateTensorSpec, count: number, rows?: number): number[] {
  const free = spec.shape.filter((d) => d < 0).length;
  const fixed = elementCount(spec.shape.map((d) => (d < 0 ? 1 : d)));
  const batch = rows === -1 ? (free === 0 && fixed > 0 ? count / fixed : NaN) : rows;
  const perRow = batch === undefined ? count : count / batch;
  if (!Number.isInteger(perRow) || (free === 0 && perRow !== fixed) || free > 1 || (fixed > 0 && perRow % fixed !== 0)) {
    throw new ClientValueError(`output '${spec.name}': ${count} values do not fit dims [${spec.shape.join(',')}]` +
      `${batch === undefined ? '' : ` in ${Number.isNaN(batch) ? 'an unknown number of' : batch} rows`}; stream over a grpc:// URL`);
  }
  const dims = spec.shape.map((d) => (d < 0 ? perRow / fixed : d));
  return batch === undefined ? dims : [batch, ...dims];
}
