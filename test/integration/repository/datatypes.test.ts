/**
 * ONNX models of every Triton datatype through the native ONNX Runtime engine: values come
 * back exactly (element-wise arithmetic checked against the same arithmetic in JS, copies bit
 * for bit), alone and merged into one batch with other requests.
 */
import type { DataType, TypedArray } from '../../../ts/tensor';
import { NDArray, typedArrayFor } from '../../../ts/tensor';
import { addSubModel, identityModel } from '../../../ts/tools/onnx';
import type { Triton } from '../../../ts/triton';
import { TempRepo, startRepoTriton } from './repo-helpers';

type NumericType = Exclude<DataType, 'BYTES'>;

/** Element-wise arithmetic (ONNX Add/Sub) types, each with inputs that exercise its range. */
const ARITHMETIC: NumericType[] = ['FP32', 'FP64', 'INT8', 'UINT8', 'INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64', 'FP16'];
/** Copy-only types (ONNX Runtime has no Add for them): Identity. */
const COPY_ONLY: NumericType[] = ['BOOL', 'BF16'];

/** FP16 bits of a small float that FP16 represents exactly (sign, exponent, 10-bit mantissa). */
function toHalf(value: number): number {
  if (value === 0) return Object.is(value, -0) ? 0x8000 : 0;
  const sign = value < 0 ? 0x8000 : 0;
  const abs = Math.abs(value);
  const exponent = Math.floor(Math.log2(abs));
  const mantissa = abs / 2 ** exponent - 1;
  const bits = Math.round(mantissa * 1024);
  if (exponent < -14 || exponent > 15 || bits / 1024 !== mantissa) throw new Error(`${value} is not an exact normal FP16`);
  return sign | ((exponent + 15) << 10) | bits;
}

/** Two operand arrays of 2 rows × 4 values for `dtype`, chosen to reach its limits. */
function operands(dtype: NumericType): [TypedArray, TypedArray] {
  const Ctor = typedArrayFor(dtype);
  const from = (values: (number | bigint)[]): TypedArray => {
    const out = new Ctor(values.length);
    values.forEach((v, i) => { (out as unknown as (number | bigint)[])[i] = v; });
    return out;
  };
  switch (dtype) {
    case 'FP32': return [from([1.5, -2.25, 3.4028234663852886e38, 1e-30, 0.1, 7, -0, 2 ** -20]), from([0.25, 2.25, 1e30, -1e-30, 0.2, 1e-7, 0, 3])];
    case 'FP64': return [from([0.1, -1e308, 1e-300, 2 ** 52, 3, -7.5, 1 / 3, 0]), from([0.2, -1e308, 1e-300, 0.5, -3, 7.5, 2 / 3, -0])];
    case 'INT8': return [from([127, -128, 100, -1, 0, 5, -50, 64]), from([1, -1, 100, -1, 0, -5, -100, 64])];
    case 'UINT8': return [from([255, 0, 200, 1, 128, 3, 250, 7]), from([1, 1, 100, 1, 128, 5, 10, 7])];
    case 'INT16': return [from([32767, -32768, 1000, -1, 0, 12345, -300, 2]), from([1, -1, 32000, -1, 0, -12345, 300, 2])];
    case 'UINT16': return [from([65535, 0, 40000, 1, 2, 3, 65000, 9]), from([1, 1, 40000, 1, 2, 4, 1000, 9])];
    case 'INT32': return [from([2147483647, -2147483648, 1, -1, 0, 123456789, -5, 7]), from([1, -1, -1, 1, 0, 987654321, 5, 7])];
    case 'UINT32': return [from([4294967295, 0, 3000000000, 1, 2, 3, 4, 5]), from([1, 1, 3000000000, 1, 2, 4, 5, 5])];
    case 'INT64': return [from([9223372036854775807n, -9223372036854775808n, 1n, -1n, 0n, 2n ** 40n, -5n, 7n]), from([1n, -1n, -1n, 1n, 0n, 3n, 5n, 7n])];
    case 'UINT64': return [from([18446744073709551615n, 0n, 2n ** 63n, 1n, 2n, 3n, 4n, 5n]), from([1n, 1n, 2n ** 63n, 1n, 2n, 4n, 5n, 5n])];
    case 'FP16': return [from([1, 2, -0.5, 1024, 0.25, 3, -8, 0].map(toHalf)), from([0.5, -2, 0.25, 1024, 0.25, -1, 4, 0].map(toHalf))];
    default: throw new Error(dtype);
  }
}

/** a ± b as ONNX Runtime computes it for `dtype`: integer wrap-around, float rounding to the type. */
function expected(dtype: NumericType, a: TypedArray, b: TypedArray, op: 1 | -1): TypedArray {
  const out = new (typedArrayFor(dtype))(a.length);
  for (let i = 0; i < a.length; i++) {
    if (dtype === 'FP16') {
      const half = (bits: number): number => {
        const e = (bits >> 10) & 0x1f;
        const m = bits & 0x3ff;
        const v = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
        return bits & 0x8000 ? -v : v;
      };
      (out as Uint16Array)[i] = toHalf(half(Number(a[i])) + op * half(Number(b[i])));
    } else if (typeof a[i] === 'bigint') {
      (out as BigInt64Array)[i] = (a[i] as bigint) + BigInt(op) * (b[i] as bigint);  // the typed array wraps
    } else {
      (out as Float64Array)[i] = (a[i] as number) + op * (b[i] as number);  // rounds (FP32) or wraps (ints)
    }
  }
  return out;
}

/** The bytes of a typed array: a bit-for-bit comparison (also -0 vs 0, NaN payloads). */
function bits(array: NDArray): Buffer {
  const data = array.data as TypedArray;
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

let repo: TempRepo;
let triton: Triton;

beforeAll(async () => {
  repo = new TempRepo('dtypes');
  // No config.pbtxt: auto-complete derives inputs, outputs and max_batch_size 4.
  for (const dtype of ARITHMETIC) repo.onnx(`add_sub_${dtype.toLowerCase()}`, 1, addSubModel(dtype, [4]));
  for (const dtype of [...ARITHMETIC, ...COPY_ONLY]) repo.onnx(`identity_${dtype.toLowerCase()}`, 1, identityModel(dtype, [4]));
  repo.onnx('identity_bytes', 1, identityModel('BYTES', ['length']));
  // The batched BYTES model waits for 4 rows (three requests) so they run as one batch.
  repo.onnx('identity_bytes_batched', 1, identityModel('BYTES', ['length']));
  repo.config('identity_bytes_batched', `
    platform: "onnxruntime_onnx"
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 4 ], max_queue_delay_microseconds: 10000000 }`);
  ({ triton } = await startRepoTriton(repo.root));
});

afterAll(async () => {
  await triton?.stop();
  repo.cleanup();
});

describe.each(ARITHMETIC)('%s through ONNX Runtime Add/Sub', (dtype) => {
  test('each element equals the same arithmetic in the datatype, wrap-around and rounding included', async () => {
    const [a, b] = operands(dtype);
    const model = `add_sub_${dtype.toLowerCase()}`;
    const out = await triton.infer(model, { INPUT0: new NDArray(dtype, [2, 4], a), INPUT1: new NDArray(dtype, [2, 4], b) });
    expect(out.OUTPUT0.dtype).toBe(dtype);
    expect(out.OUTPUT0.shape).toEqual([2, 4]);
    expect(out.OUTPUT1.shape).toEqual([2, 4]);
    expect(out.OUTPUT0.data).toBeInstanceOf(typedArrayFor(dtype));
    expect(bits(out.OUTPUT0)).toEqual(bits(new NDArray(dtype, [2, 4], expected(dtype, a, b, 1))));
    expect(bits(out.OUTPUT1)).toEqual(bits(new NDArray(dtype, [2, 4], expected(dtype, a, b, -1))));
  });
});

describe.each([...ARITHMETIC, ...COPY_ONLY])('%s through ONNX Runtime Identity', (dtype) => {
  test('values come back bit for bit, alone and in a batch of concurrent requests', async () => {
    const model = `identity_${dtype.toLowerCase()}`;
    const Ctor = typedArrayFor(dtype);
    const requests = [1, 2, 1].map((rows, r) => {
      const data = new Ctor(rows * 4);
      const bytes = new Uint8Array(data.buffer);
      // BOOL holds 0/1 per byte; every other type gets arbitrary bit patterns.
      for (let i = 0; i < bytes.length; i++) bytes[i] = dtype === 'BOOL' ? (i + r) % 2 : (i * 37 + r * 11 + 5) & 0xff;
      return new NDArray(dtype, [rows, 4], data);
    });
    const alone = await triton.infer(model, { INPUT0: requests[0] });
    expect(alone.OUTPUT0.dtype).toBe(dtype);
    expect(bits(alone.OUTPUT0)).toEqual(bits(requests[0]));
    const together = await Promise.all(requests.map((r) => triton.infer(model, { INPUT0: r })));
    together.forEach((out, i) => {
      expect(out.OUTPUT0.shape).toEqual(requests[i].shape);
      expect(bits(out.OUTPUT0)).toEqual(bits(requests[i]));
    });
  });
});

describe('BYTES (ONNX string tensors)', () => {
  const strings = (...items: (string | number[])[]): Buffer[] => items.map((s) => (typeof s === 'string' ? Buffer.from(s) : Buffer.from(s)));

  test('strings of any length and content come back exactly: empty, UTF-8, embedded zero bytes', async () => {
    const items = strings('', 'hello', 'ünïcødé ✓', [0, 1, 0, 255, 10], 'x'.repeat(1000), 'end');
    const out = await triton.infer('identity_bytes', { INPUT0: new NDArray('BYTES', [2, 3], items) });
    expect(out.OUTPUT0.dtype).toBe('BYTES');
    expect(out.OUTPUT0.shape).toEqual([2, 3]);
    expect((out.OUTPUT0.data as Buffer[]).map((b) => Buffer.from(b))).toEqual(items);
  });

  test('requests merged into one batch each get their own strings back', async () => {
    const sent = [
      new NDArray('BYTES', [1, 2], strings('a', 'bb')),
      new NDArray('BYTES', [2, 2], strings('ccc', '', 'dddd', 'e')),
      new NDArray('BYTES', [1, 2], strings('ffffff', 'g')),
    ];
    const before = triton.model('identity_bytes_batched').stats().executionCount;
    const outs = await Promise.all(sent.map((input) => triton.infer('identity_bytes_batched', { INPUT0: input })));
    outs.forEach((out, i) => {
      expect(out.OUTPUT0.shape).toEqual(sent[i].shape);
      expect((out.OUTPUT0.data as Buffer[]).map((b) => Buffer.from(b))).toEqual(sent[i].data);
    });
    const stats = triton.model('identity_bytes_batched').stats();
    expect(stats.executionCount - before).toBe(1);
    expect(stats.batchStats.map((s) => s.batchSize)).toContain(4);
  });
});

test('auto-complete gives every datatype its Triton name and the ONNX dims', () => {
  for (const dtype of ARITHMETIC) {
    const config = triton.model(`add_sub_${dtype.toLowerCase()}`).config;
    expect(config.maxBatchSize).toBe(4);
    expect(config.inputs.map((t) => [t.name, t.dtype, t.dims])).toEqual([['INPUT0', dtype, [4]], ['INPUT1', dtype, [4]]]);
    expect(config.outputs.map((t) => [t.name, t.dtype, t.dims])).toEqual([['OUTPUT0', dtype, [4]], ['OUTPUT1', dtype, [4]]]);
  }
  expect(triton.model('identity_bytes').config.inputs[0]).toMatchObject({ dtype: 'BYTES', dims: [-1] });
});
