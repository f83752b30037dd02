/**
 * fast-check generators shared by the HTTP and gRPC property suites: valid tensors of every
 * datatype (for encode → decode round trips) and hostile JSON fragments (wrong types, huge and
 * negative numbers, nesting a hundred thousand levels deep) for the decoders' error paths.
 */
import fc from 'fast-check';
import { DATA_TYPES, NDArray, type DataType } from '../../ts/tensor';

/** Raw JSON text spliced into a generated document as is (deep nesting, odd numbers). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** Serializes a generated value; RawJson parts go in verbatim. Generated structure is shallow, so recursion is bounded. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Arrays or objects nested up to 30k deep (JSON.stringify overflows the stack from about 5k): cheap to send (2 bytes a level), deadly to recursive code. */
const nestingDepth = fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 5_000, max: 30_000 }));
export const deepJson: fc.Arbitrary<RawJson> = fc.tuple(nestingDepth, fc.boolean()).map(([n, array]) =>
  new RawJson(array ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`));

/** Numbers and literals at the edges of what JSON.parse and the decoders accept. */
export const oddJson: fc.Arbitrary<RawJson> = fc.constantFrom(
  '-1', '-0', '0', '1', '4', '1.5', '1e400', '-1e400', '1e-400', '9007199254740993', '18446744073709551616', '2147483648',
  'null', 'true', 'false', '""', '"4"', '"-1"', '"abc"', '[]', '{}', '[-1]', '[1.5]', '["x"]', '[null]', '[[1],[2,3]]',
).map((t) => new RawJson(t));

/** Any value a hostile client might put in a field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: oddJson },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: deepJson },
);

const TYPES = DATA_TYPES as readonly DataType[];

/** A shape of 0-3 dimensions, each 0-4. */
export const smallShape = fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 });

const count = (shape: number[]): number => shape.reduce((a, b) => a * b, 1);

/** Data of `n` elements of `dtype`; `jsonSafe` keeps to values JSON carries exactly (no NaN, ±Infinity, -0). */
function dataOf(dtype: DataType, n: number, jsonSafe: boolean): fc.Arbitrary<NDArray['data']> {
  const len = { minLength: n, maxLength: n };
  const int = (min: number, max: number) => fc.array(fc.integer({ min, max }), len);
  switch (dtype) {
    case 'BOOL': return fc.array(fc.boolean(), len).map((v) => Uint8Array.from(v, (b) => (b ? 1 : 0)));
    case 'INT8': return int(-128, 127).map((v) => Int8Array.from(v));
    case 'INT16': return int(-32768, 32767).map((v) => Int16Array.from(v));
    case 'INT32': return int(-(2 ** 31), 2 ** 31 - 1).map((v) => Int32Array.from(v));
    case 'UINT8': return int(0, 255).map((v) => Uint8Array.from(v));
    case 'UINT16': return int(0, 65535).map((v) => Uint16Array.from(v));
    case 'UINT32': return int(0, 2 ** 32 - 1).map((v) => Uint32Array.from(v));
    case 'INT64': {
      const range = jsonSafe ? { min: BigInt(Number.MIN_SAFE_INTEGER), max: BigInt(Number.MAX_SAFE_INTEGER) } : { min: -(2n ** 63n), max: 2n ** 63n - 1n };
      return fc.array(fc.bigInt(range), len).map((v) => BigInt64Array.from(v));
    }
    case 'UINT64': {
      const max = jsonSafe ? BigInt(Number.MAX_SAFE_INTEGER) : 2n ** 64n - 1n;
      return fc.array(fc.bigInt({ min: 0n, max }), len).map((v) => BigUint64Array.from(v));
    }
    case 'FP16':
    case 'BF16': return int(0, 65535).map((v) => Uint16Array.from(v));
    case 'FP32': return fc.array(fc.float({ noNaN: jsonSafe, noDefaultInfinity: jsonSafe }), len).map((v) => Float32Array.from(v, (x) => (jsonSafe && x === 0 ? 0 : x)));
    case 'FP64': return fc.array(fc.double({ noNaN: jsonSafe, noDefaultInfinity: jsonSafe }), len).map((v) => Float64Array.from(v, (x) => (jsonSafe && x === 0 ? 0 : x)));
    case 'BYTES': return fc.array(jsonSafe ? fc.string({ unit: 'binary', maxLength: 8 }).map((s) => Buffer.from(s, 'utf8')) : fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b)), len);
    default: throw new Error(`no generator for ${dtype as string}`);
  }
}

/** A valid tensor of any datatype and a small shape. */
export function tensorArb(jsonSafe: boolean): fc.Arbitrary<NDArray> {
  return fc.tuple(fc.constantFrom(...TYPES), smallShape).chain(([dtype, shape]) =>
    dataOf(dtype, count(shape), jsonSafe).map((data) => new NDArray(dtype, shape, data)));
}

/** A tensor's data as comparable bytes (BYTES: the elements joined with their lengths). */
export function tensorBytes(arr: NDArray): Buffer {
  if (arr.dtype === 'BYTES') {
    return Buffer.concat((arr.data as Uint8Array[]).flatMap((b) => [Buffer.from(Uint32Array.of(b.length).buffer), Buffer.from(b)]));
  }
  const d = arr.data as ArrayBufferView;
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

/** Tensors under distinct names IN0, IN1, ... */
export function namedTensors(jsonSafe: boolean, max = 3): fc.Arbitrary<Record<string, NDArray>> {
  return fc.array(tensorArb(jsonSafe), { minLength: 1, maxLength: max })
    .map((list) => Object.fromEntries(list.map((t, i) => [`IN${i}`, t])));
}
