/**
 * BYTES tensors kept in wire form (ts/packed-bytes.ts): checked when made, split into elements
 * only when JS reads `data`, and passed on as the same bytes otherwise.
 */
import { setFlagsFromString } from 'node:v8';
import { InferenceServerError } from '../../ts/errors';
import { tensorFromBytes } from '../../ts/server/tensor-codec';
import { PackedBytes, packStrings, slicePackedBytes, splitPackedBytes, walkBytes } from '../../ts/packed-bytes';
import {
  NDArray, bytesOfTensor, bytesTensorSize, concatRows, copyNDArray, deserializeBytes, isPackedBytes, packedBytesTensor,
  serializeBytes,
} from '../../ts/tensor';

const texts = ['', 'a', 'ünï ✓', '\u0000\u0001', 'last'];
const items = texts.map((t) => Buffer.from(t));
const wire = serializeBytes(items);

/** The elements of a BYTES tensor as text. */
const strs = (arr: NDArray): string[] => (arr.data as Uint8Array[]).map((b) => Buffer.from(b).toString());

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return `${(err as InferenceServerError).code}: ${(err as Error).message}`;
  }
  return 'no error';
}

describe('walkBytes: the checks every received BYTES tensor gets', () => {
  test('visits each element in order with its byte range', () => {
    const seen: string[] = [];
    walkBytes(wire, texts.length, 'x', (start, end) => seen.push(wire.toString('utf8', start, end)));
    expect(seen).toEqual(texts);
  });

  test('broken encodings and counts get their texts', () => {
    expect(code(() => walkBytes(Buffer.from([5, 0, 0, 0, 65]), 1, 'input IN'))).toBe('INVALID_ARG: input IN: BYTES element exceeds the data');
    expect(code(() => walkBytes(Buffer.from([0, 0, 0, 0, 1]), 2, 'input IN'))).toBe('INVALID_ARG: input IN: truncated BYTES element length');
    expect(code(() => walkBytes(Buffer.alloc(1 << 16), 1, 'input IN')))
      .toBe('INVALID_ARG: unexpected number of string elements 2 for input IN, expecting 1');
    expect(code(() => walkBytes(wire, 6, 'input IN'))).toBe('INVALID_ARG: input IN: expected 6 BYTES elements, got 5');
  });
});

describe('an NDArray over wire-form BYTES', () => {
  test('knows its size and bytes without splitting, and splits on the first read of data', () => {
    const arr = packedBytesTensor([5], wire, 'x');
    expect(arr.size).toBe(5);
    expect(bytesOfTensor(arr)).toBe(wire);
    expect(bytesTensorSize(arr)).toBe(wire.length);
    expect(isPackedBytes(arr)).toBe(true);
    expect(arr.data.map((b) => Buffer.from(b).toString())).toEqual(texts);
    expect(isPackedBytes(arr)).toBe(false);
    expect(arr.data).toBe(arr.data);  // split once
    expect(arr.at(2)).toEqual(Buffer.from('ünï ✓'));
    expect(arr).toEqual(new NDArray('BYTES', [5], items));
    expect(JSON.parse(JSON.stringify(arr)).data).toHaveLength(5);
  });

  test('once split, the elements JS changed are what is serialized', () => {
    const arr = packedBytesTensor([5], wire, 'x');
    arr.data[0] = Buffer.from('changed');
    expect(deserializeBytes(bytesOfTensor(arr), 5, 'x').map(String)).toEqual(['changed', ...texts.slice(1)]);
  });

  test('checks the bytes when made', () => {
    expect(code(() => packedBytesTensor([2, 3], wire, "input 'IN'"))).toBe("INVALID_ARG: input 'IN': expected 6 BYTES elements, got 5");
  });

  test('slices, reshapes, copies and concatenations stay packed and hold the right elements', () => {
    const strings = ['r0c0', 'r0c1', '', 'r1c1', 'r2c0', 'r2c1'];
    const arr = packedBytesTensor([3, 2], packStrings(strings), 'x');
    const middle = arr.sliceRows(1, 2);
    expect(isPackedBytes(middle)).toBe(true);
    expect(middle.shape).toEqual([1, 2]);
    expect(middle.data.map(String)).toEqual(['', 'r1c1']);
    expect(arr.sliceRows(2, 2).size).toBe(0);
    const flat = arr.reshape([6]);
    expect(isPackedBytes(flat)).toBe(true);
    expect(code(() => arr.reshape([4]))).toMatch(/^INVALID_ARG: BYTES tensor of shape \[4\] needs 4 elements, got 6/);
    const copy = copyNDArray(arr);
    expect(isPackedBytes(copy)).toBe(true);
    expect(bytesOfTensor(copy)).not.toBe(bytesOfTensor(arr));
    expect(bytesOfTensor(copy)).toEqual(bytesOfTensor(arr));
    const joined = concatRows([arr.sliceRows(0, 1), arr.sliceRows(2, 3)]);
    expect(isPackedBytes(joined)).toBe(true);
    expect(joined.shape).toEqual([2, 2]);
    expect(strs(joined)).toEqual(['r0c0', 'r0c1', 'r2c0', 'r2c1']);
    expect(arr.data.map(String)).toEqual(strings);
  });

  test('concatenating packed rows with split ones gives the elements of both', () => {
    const packed = packedBytesTensor([1, 1], packStrings(['p']), 'x');
    const split = new NDArray('BYTES', [1, 1], [Buffer.from('s')]);
    expect(strs(concatRows([packed, split]))).toEqual(['p', 's']);
  });
});

describe('packStrings and splitting', () => {
  test('packStrings writes what serializeBytes writes for the same text', () => {
    expect(packStrings(texts)).toEqual(wire);
    expect(packStrings([])).toEqual(Buffer.alloc(0));
  });

  test('slicePackedBytes takes whole elements', () => {
    const packed = new PackedBytes(wire, 5, 'x');
    const slice = slicePackedBytes(packed, 1, 3);
    expect(slice.count).toBe(2);
    expect(splitPackedBytes(slice).map(String)).toEqual(['a', 'ünï ✓']);
  });

  test('elements that would not fit in the heap are refused with UNAVAILABLE, before any is made', () => {
    // A billion elements would take ~120 GB of heap as Buffers, far past any V8 heap limit. The
    // refusal comes before the bytes are read, so they need not be there.
    const count = 1_000_000_000;
    const packed = new PackedBytes(new Uint8Array(8), count, "input 'IN' for model 'm'");
    expect(code(() => splitPackedBytes(packed))).toMatch(new RegExp(
      "^UNAVAILABLE: input 'IN' for model 'm': 1000000000 BYTES elements need about 122070 MiB of JavaScript heap as separate " +
      'Buffers, and \\d+ MiB is free; send fewer elements per request, or start Node with a larger --max-old-space-size$'));
  });
});

describe('cost per received tensor', () => {
  test('packed BYTES tensors share one hidden class in fast mode: no accessor closure or WeakMap entry per tensor', () => {
    // A getter closed over each tensor's bytes (kept in a WeakMap) put every received BYTES tensor
    // in dictionary mode and cost ~3-6 us each: a 1-element input decoded and handed to a native
    // engine took 7 us, against 1 us when it was split into Buffers.
    setFlagsFromString('--allow-natives-syntax');
    const fast = new Function('o', 'return %HasFastProperties(o)') as (o: unknown) => boolean;
    const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: unknown, b: unknown) => boolean;
    const a = tensorFromBytes("input 'a'", 'BYTES', [texts.length], wire);
    const b = tensorFromBytes("input 'b'", 'BYTES', [1], serializeBytes([Buffer.from('x')]));
    expect([isPackedBytes(a), fast(a), fast(b), sameMap(a, b)]).toEqual([true, true, true, true]);
    // Still an own enumerable `data` that splits on first read, and the same bytes when not read.
    expect(Object.keys(a)).toEqual(['dtype', 'shape', 'data']);
    expect(bytesOfTensor(b)).toEqual(serializeBytes([Buffer.from('x')]));
    expect(strs(a)).toEqual(texts);
    expect(isPackedBytes(a)).toBe(false);
    const inherited = Object.create(b) as NDArray;
    expect(strs(inherited)).toEqual(['x']);
  });
});
