/**
 * Typed contents and shapes in the gRPC codec (ts/server/grpc/infer-codec.ts). A contents field
 * is materialised only when it holds as many elements as the tensor's shape declares, whatever
 * the order of the tensor's fields, packed or not, in one run or several; any other field keeps
 * its count alone (the request fails on it), so a message of a million one-byte elements for
 * shape [1,1] allocates nothing per element. A shape past MAX_SHAPE_DIMS dims is refused, and a
 * message of more than MAX_MESSAGE_ENTRIES repeated entries (each a JS object, 2 bytes on the
 * wire when empty).
 */
import { InferenceServerError } from '../../ts/errors';
import { MAX_MESSAGE_ENTRIES, MAX_SHAPE_DIMS, decodeInferRequest, decodeInferResponse, type TensorContents } from '../../ts/server/grpc/infer-codec';
import { tensorFromContents } from '../../ts/server/grpc/typed-contents';
import type { DataType } from '../../ts/tensor';
import { ProtoWriter } from '../../ts/tools/onnx/protobuf';

/** InferTensorContents field numbers (Triton's grpc_service.proto). */
const C = { bool: 1, int: 2, int64: 3, uint: 4, uint64: 5, fp32: 6, fp64: 7, bytes: 8 } as const;

/** A ModelInferRequest with one input; `contentsFirst` puts its contents before its shape. */
function request(shape: number[], contents: ProtoWriter, contentsFirst = false): Buffer {
  const t = new ProtoWriter();
  if (contentsFirst) t.message(5, contents);
  t.string(1, 'IN').string(2, 'X').packedVarints(3, shape);
  if (!contentsFirst) t.message(5, contents);
  return new ProtoWriter().string(1, 'm').message(5, t).finish();
}

const contentsOf = (buf: Buffer): TensorContents => decodeInferRequest(buf).inputs[0].contents!;
const values = (dtype: DataType, shape: number[], contents: TensorContents): unknown[] =>
  [...(tensorFromContents('input', dtype, shape, contents).data as Iterable<unknown>)];

describe('a field holding the shape\'s element count is materialised', () => {
  test('varints, packed in several runs and unpacked, of every varint field', () => {
    const ints = new ProtoWriter().packedVarints(C.int, [1, -2]).repeatedVarints(C.int, [3]).packedVarints(C.int, [-4]);
    expect(values('INT32', [4], contentsOf(request([4], ints)))).toEqual([1, -2, 3, -4]);
    expect(values('BOOL', [3], contentsOf(request([3], new ProtoWriter().packedVarints(C.bool, [1, 0, 5]))))).toEqual([1, 0, 1]);
    const int64s = new ProtoWriter().packedVarints(C.int64, [-1n, 2n ** 53n + 1n]).repeatedVarints(C.int64, [7]);
    expect(values('INT64', [3], contentsOf(request([3], int64s)))).toEqual([-1n, 2n ** 53n + 1n, 7n]);
    expect(values('UINT32', [2], contentsOf(request([2], new ProtoWriter().packedVarints(C.uint, [2 ** 32 - 1, 5]))))).toEqual([2 ** 32 - 1, 5]);
    const uint64s = new ProtoWriter().repeatedVarints(C.uint64, [2n ** 64n - 1n]).packedVarints(C.uint64, [0]);
    expect(values('UINT64', [2], contentsOf(request([2], uint64s)))).toEqual([2n ** 64n - 1n, 0n]);
  });

  test('fixed-width values in one run, several runs, and unpacked', () => {
    expect(values('FP32', [2], contentsOf(request([2], new ProtoWriter().packedFloats(C.fp32, [0.5, 1.5]))))).toEqual([0.5, 1.5]);
    const floats = new ProtoWriter().packedFloats(C.fp32, [0.5]).float(C.fp32, 2.5).packedFloats(C.fp32, []).packedFloats(C.fp32, [3, 4]);
    expect(values('FP32', [4], contentsOf(request([4], floats)))).toEqual([0.5, 2.5, 3, 4]);
    const doubles = new ProtoWriter().double(C.fp64, 0.25).packedDoubles(C.fp64, [1e300, -2]);
    expect(values('FP64', [3], contentsOf(request([3], doubles)))).toEqual([0.25, 1e300, -2]);
  });

  test('bytes, with the shape after the contents', () => {
    const strings = new ProtoWriter().repeatedStrings(C.bytes, ['a', '', 'bc']);
    expect(values('BYTES', [3], contentsOf(request([3], strings, true))).map(String)).toEqual(['a', '', 'bc']);
  });
});

describe('a field holding another count keeps only its count', () => {
  const million = 1_000_000;

  test.each([
    ['bool_contents: one-byte varints, packed', 'BOOL', new ProtoWriter().bytes(C.bool, Buffer.alloc(million, 1))],
    ['int64_contents: one-byte varints, packed', 'INT64', new ProtoWriter().bytes(C.int64, Buffer.alloc(million, 1))],
    ['bytes_contents: empty elements', 'BYTES', new ProtoWriter().repeatedBytes(C.bytes, new Array(million).fill(Buffer.alloc(0)))],
    ['fp32_contents: unpacked', 'FP32', new ProtoWriter().repeatedFloats(C.fp32, new Float32Array(million))],
  ] as const)('%s', (_name, dtype, contents) => {
    const field = `${{ BOOL: 'bool', INT64: 'int64', BYTES: 'bytes', FP32: 'fp32' }[dtype]}_contents` as keyof TensorContents;
    for (const contentsFirst of [false, true]) {
      const decoded = contentsOf(request([1, 1], contents, contentsFirst));
      expect(decoded[field]).toEqual({ miscounted: true, length: million });
      expect(() => tensorFromContents("input 'IN' for model 'm'", dtype, [1, 1], decoded))
        .toThrow(`input 'IN' for model 'm': shape [1,1] holds 1 elements, ${field} has ${million}`);
    }
  });

  test('and a field the datatype does not take is still named', () => {
    const decoded = contentsOf(request([2], new ProtoWriter().packedVarints(C.int, [1, 2, 3])));
    expect(() => tensorFromContents('input', 'FP32', [2], decoded)).toThrow('got int_contents, but datatype FP32 takes its typed contents in fp32_contents');
  });

  test('a truncated packed run is malformed', () => {
    expect(() => contentsOf(request([1], new ProtoWriter().bytes(C.bool, Buffer.from([0x80]))))).toThrow('malformed ModelInferRequest: truncated varint');
  });
});

describe('shapes', () => {
  const shaped = (dims: number): Buffer => request(new Array(dims).fill(1), new ProtoWriter().packedVarints(C.bool, [1]));

  test(`${MAX_SHAPE_DIMS} dims decode`, () => {
    expect(decodeInferRequest(shaped(MAX_SHAPE_DIMS)).inputs[0].shape).toHaveLength(MAX_SHAPE_DIMS);
  });

  test('more are refused, counted rather than decoded', () => {
    for (const dims of [MAX_SHAPE_DIMS + 1, 1_000_000]) {
      let error: unknown;
      try {
        decodeInferRequest(shaped(dims));
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(InferenceServerError);
      expect((error as InferenceServerError).message)
        .toBe(`the shape of input 'IN' has ${dims} dimensions; at most ${MAX_SHAPE_DIMS} are supported`);
    }
  });
});

describe('repeated entries', () => {
  /** A ModelInferRequest of `n` entries of one kind: empty inputs, outputs or raw contents, or parameters with distinct keys. */
  function entries(kind: 'inputs' | 'outputs' | 'raw' | 'parameters', n: number): Buffer {
    const w = new ProtoWriter().string(1, 'm');
    for (let i = 0; i < n; i++) {
      if (kind === 'parameters') w.message(4, new ProtoWriter().string(1, `k${i}`));
      else if (kind === 'raw') w.bytes(7, Buffer.alloc(0));
      else w.message(kind === 'inputs' ? 5 : 6, new ProtoWriter());
    }
    return w.finish();
  }

  test.each(['inputs', 'outputs', 'raw', 'parameters'] as const)('%s: up to the cap decode, one more is refused', (kind) => {
    const m = decodeInferRequest(entries(kind, MAX_MESSAGE_ENTRIES));
    const sizes = { inputs: m.inputs.length, outputs: m.outputs.length, raw: m.rawInputContents.length, parameters: m.parameters?.size ?? 0 };
    expect(sizes[kind]).toBe(MAX_MESSAGE_ENTRIES);
    expect(() => decodeInferRequest(entries(kind, MAX_MESSAGE_ENTRIES + 1))).toThrow(
      `the ModelInferRequest holds more than ${MAX_MESSAGE_ENTRIES} tensors, requested outputs, raw contents and parameters together`);
  });

  test('kinds count together, per message: the next message starts afresh', () => {
    const half = MAX_MESSAGE_ENTRIES / 2;
    const both = Buffer.concat([entries('inputs', half), entries('raw', half + 1)]);
    expect(() => decodeInferRequest(both)).toThrow(InferenceServerError);
    expect(decodeInferRequest(entries('raw', half)).rawInputContents).toHaveLength(half);
    expect(decodeInferRequest(entries('raw', half)).rawInputContents).toHaveLength(half);
  });

  test('the client side too: a response of more raw outputs than the cap is refused', () => {
    const w = new ProtoWriter();
    for (let i = 0; i <= MAX_MESSAGE_ENTRIES; i++) w.bytes(6, Buffer.alloc(0));
    expect(() => decodeInferResponse(w.finish())).toThrow('the ModelInferResponse holds more than');
  });
});
