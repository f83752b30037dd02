/**
 * Property tests of the gRPC request decoding (ts/server/grpc/wire.ts, infer-codec.ts,
 * infer-request.ts, typed-contents.ts): arbitrary bytes, and ModelInferRequest messages built
 * field by field with hostile values (wrong wire types, 10-byte varints, negative and huge shape
 * dimensions, typed contents of the wrong field or count, raw contents of the wrong size,
 * parameters of the wrong InferParameter kind, truncation) decode to an InferenceCall or fail
 * with an InferenceServerError whose code is a client error (INVALID_ARG, NOT_FOUND,
 * UNAVAILABLE) — never another exception, never INTERNAL. Requests encoded by infernode's own
 * gRPC client decode to the same tensors. A smaller number of hostile messages go through a real
 * gRPC server: every call ends with a status other than INTERNAL/UNKNOWN, and the server keeps
 * answering.
 */
import fc from 'fast-check';
import { Client, Metadata, credentials, status as Status, type ServiceError } from '@grpc/grpc-js';
import { inferRequestFields } from '../../ts/client/grpc-convert';
import { InferenceServerError } from '../../ts/errors';
import { decodeInferRequest } from '../../ts/server/grpc/infer-codec';
import { encodeInferRequest } from '../../ts/server/grpc/infer-encode';
import { inferenceCall, type CallEnvironment } from '../../ts/server/grpc/infer-request';
import { DisconnectSignal } from '../../ts/server/http/disconnect';
import type { ServerContext } from '../../ts/server/context';
import { DATA_TYPES, NDArray } from '../../ts/tensor';
import type { Triton } from '../../ts/triton';
import { inProcessTriton } from '../integration/helpers';
import { serve, type Served } from '../integration/grpc/helpers';
import { settings } from './fc-settings';
import { namedTensors, tensorBytes } from './wire-arbitraries';

// ---- a test-side protobuf writer: any field number, any wire type, any payload ----

type Field = { no: number; wt: number; payload: Buffer | bigint };

function varint(v: bigint): Buffer {
  let u = BigInt.asUintN(64, v);
  const out: number[] = [];
  while (u >= 0x80n) {
    out.push(Number(u & 0x7fn) | 0x80);
    u >>= 7n;
  }
  out.push(Number(u));
  return Buffer.from(out);
}

function encode(fields: Field[]): Buffer {
  return Buffer.concat(fields.map(({ no, wt, payload }) => {
    const tag = varint(BigInt(no * 8 + wt));
    if (wt === 0) return Buffer.concat([tag, varint(payload as bigint)]);
    if (wt === 2) return Buffer.concat([tag, varint(BigInt((payload as Buffer).length)), payload as Buffer]);
    return Buffer.concat([tag, payload as Buffer]);  // fixed32/64, or bytes of a bogus wire type
  }));
}

const bytesField = (no: number, payload: Buffer | string): Field => ({ no, wt: 2, payload: Buffer.from(payload) });
const varintField = (no: number, v: bigint): Field => ({ no, wt: 0, payload: v });

/** Varints at every edge: small, 32/53/64-bit limits, negative (10 bytes on the wire). */
const anyVarint = fc.oneof(
  fc.bigInt({ min: 0n, max: 8n }),
  fc.constantFrom(-1n, -(2n ** 63n), 2n ** 31n, 2n ** 32n, 2n ** 53n, 2n ** 63n - 1n, 2n ** 64n - 1n),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
);

/** A field with the wrong wire type or a truncated payload, for any field number. */
const junkField = (no: number): fc.Arbitrary<Field> => fc.oneof(
  anyVarint.map((v) => varintField(no, v)),
  fc.tuple(fc.constantFrom(1, 5), fc.uint8Array({ maxLength: 9 })).map(([wt, b]) => ({ no, wt, payload: Buffer.from(b) })),
  fc.uint8Array({ maxLength: 12 }).map((b) => bytesField(no, Buffer.from(b))),
  fc.constantFrom(3, 4, 6, 7).map((wt) => ({ no, wt, payload: Buffer.alloc(0) })),
);

const PARAM_KEYS = ['priority', 'timeout', 'sequence_id', 'sequence_start', 'sequence_end', 'triton_enable_empty_final_response',
  'binary_data_output', 'classification', 'shared_memory_region', 'shared_memory_byte_size', 'shared_memory_offset',
  'custom', '__proto__', 'triton_x', ''];

/** An InferParameter: one (or several, or a wrongly typed) member of its oneof. */
const paramValue = fc.array(fc.oneof(
  fc.bigInt({ min: 0n, max: 1n }).map((v) => varintField(1, v)),
  anyVarint.map((v) => varintField(2, v)),
  fc.string({ maxLength: 6 }).map((s) => bytesField(3, s)),
  fc.double().map((d) => { const b = Buffer.alloc(8); b.writeDoubleLE(d); return { no: 4, wt: 1, payload: b } as Field; }),
  anyVarint.map((v) => varintField(5, v)),
  fc.integer({ min: 1, max: 6 }).chain(junkField),
), { maxLength: 2 }).map(encode);

const paramEntry = fc.tuple(fc.oneof(fc.constantFrom(...PARAM_KEYS), fc.string({ maxLength: 4 })), paramValue)
  .map(([key, value]) => encode([bytesField(1, key), bytesField(2, value)]));

/** InferTensorContents: packed or unpacked runs in any field, fixed-width runs of any length. */
const contents = fc.array(fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 5 }), fc.array(anyVarint, { maxLength: 6 }), fc.boolean()).map(([no, values, packed]) =>
    (packed ? [bytesField(no, Buffer.concat(values.map(varint)))] : values.map((v) => varintField(no, v)))),
  fc.tuple(fc.constantFrom(6, 7), fc.uint8Array({ maxLength: 40 })).map(([no, b]) => [bytesField(no, Buffer.from(b))]),
  fc.array(fc.uint8Array({ maxLength: 6 }), { maxLength: 4 }).map((items) => items.map((b) => bytesField(8, Buffer.from(b)))),
  fc.integer({ min: 1, max: 9 }).chain(junkField).map((f) => [f]),
), { maxLength: 3 }).map((groups) => encode(groups.flat()));

const shapeField = fc.tuple(fc.array(fc.oneof(fc.bigInt({ min: 0n, max: 4n }), anyVarint), { maxLength: 4 }), fc.boolean())
  .map(([dims, packed]) => (packed ? [bytesField(3, Buffer.concat(dims.map(varint)))] : dims.map((d) => varintField(3, d))));

const tensor = fc.record({
  name: fc.constantFrom('IN', 'IN0', ''),
  datatype: fc.oneof(fc.constantFrom(...DATA_TYPES), fc.constantFrom('FP33', '', 'fp32')),
  shape: shapeField,
  params: fc.array(paramEntry, { maxLength: 2 }),
  contents: fc.option(contents),
  junk: fc.array(fc.integer({ min: 1, max: 7 }).chain(junkField), { maxLength: 1 }),
}).map((t) => encode([
  bytesField(1, t.name), bytesField(2, t.datatype), ...t.shape, ...t.params.map((p) => bytesField(4, p)),
  ...(t.contents ? [bytesField(5, t.contents)] : []), ...t.junk,
]));

const requestedOutput = fc.tuple(fc.constantFrom('OUT', 'x'), fc.array(paramEntry, { maxLength: 2 }))
  .map(([name, params]) => encode([bytesField(1, name), ...params.map((p) => bytesField(2, p))]));

/** A ModelInferRequest with hostile fields, then maybe cut short or with a byte flipped. */
const hostileRequest = fc.record({
  model: fc.constantFrom('identity', 'strings', 'nobatch', 'missing'),
  id: fc.string({ maxLength: 4 }),
  params: fc.array(paramEntry, { maxLength: 3 }),
  inputs: fc.array(tensor, { maxLength: 3 }),
  outputs: fc.array(requestedOutput, { maxLength: 2 }),
  raw: fc.array(fc.uint8Array({ maxLength: 24 }), { maxLength: 3 }),
  junk: fc.array(fc.integer({ min: 1, max: 12 }).chain(junkField), { maxLength: 2 }),
  damage: fc.option(fc.tuple(fc.nat(), fc.nat(255), fc.boolean())),
}).map((r) => {
  let buf = encode([
    bytesField(1, r.model), bytesField(3, r.id), ...r.params.map((p) => bytesField(4, p)), ...r.inputs.map((t) => bytesField(5, t)),
    ...r.outputs.map((o) => bytesField(6, o)), ...r.raw.map((b) => bytesField(7, Buffer.from(b))), ...r.junk,
  ]);
  if (r.damage) {
    const [at, byte, cut] = r.damage;
    buf = Buffer.from(buf);
    if (cut) buf = buf.subarray(0, at % (buf.length + 1));
    else if (buf.length > 0) buf[at % buf.length] = byte;
  }
  return buf;
});

// ---- the properties ----

const CLIENT_ERRORS = new Set(['INVALID_ARG', 'NOT_FOUND', 'UNAVAILABLE', 'UNSUPPORTED']);

function environment(): CallEnvironment {
  return { metadata: new Metadata(), forwardPattern: null, deadline: Infinity, signal: new DisconnectSignal() };
}

/** Decodes and converts; returns the call, or the client error it failed with (anything else fails the property). */
function decodeOrClientError(ctx: ServerContext, buf: Buffer): ReturnType<typeof inferenceCall> | InferenceServerError {
  try {
    return inferenceCall(ctx, decodeInferRequest(buf), environment());
  } catch (err) {
    if (err instanceof InferenceServerError && CLIENT_ERRORS.has(err.code)) return err;
    throw err;
  }
}

describe('gRPC ModelInferRequest decoding: hostile messages decode or fail with a client error', () => {
  let triton: Triton;
  let ctx: ServerContext;

  beforeAll(async () => {
    triton = inProcessTriton({ allowClientShm: true });
    await triton.run();
    ctx = triton.server!;
  });

  afterAll(async () => {
    await triton.stop();
  });

  test('arbitrary bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      decodeOrClientError(ctx, Buffer.from(bytes));
    }), settings(3000));
  });

  test('messages built field by field with hostile values', () => {
    fc.assert(fc.property(hostileRequest, (buf) => {
      const call = decodeOrClientError(ctx, buf);
      if (call instanceof InferenceServerError) return;
      for (const { tensor: t } of call.inputs) {
        expect(t).toBeInstanceOf(NDArray);  // no shared memory here
        expect((t as NDArray).size).toBe(t.shape.reduce((a, b) => a * b, 1));
      }
    }), settings(2500));
  });

  test('requests from infernode\'s gRPC client decode to the same tensors and parameters', () => {
    const parameters = fc.record({
      priority: fc.nat(),
      timeout: fc.nat(),
      // -0 is an integer to the client, which sends it as int64 0.
      a: fc.oneof(fc.string({ maxLength: 4 }), fc.boolean(), fc.nat(), fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => d || 0)),
      constructor: fc.string({ maxLength: 4 }),
      ['__proto__']: fc.boolean(),  // computed: a plain `__proto__:` would set the prototype
    }, { requiredKeys: [] });
    fc.assert(fc.property(namedTensors(false), fc.string({ maxLength: 6 }), parameters, (inputs, id, params) => {
      const buf = encodeInferRequest(inferRequestFields({ modelName: 'm', id, inputs, parameters: params }));
      const call = inferenceCall(ctx, decodeInferRequest(buf), environment());
      expect(call.id).toBe(id);
      expect(call.inputs.map((i) => i.name)).toEqual(Object.keys(inputs));
      for (const { name, tensor: t } of call.inputs) {
        expect({ dtype: t.dtype, shape: t.shape }).toEqual({ dtype: inputs[name].dtype, shape: inputs[name].shape });
        expect(t).toBeInstanceOf(NDArray);  // no shared memory here
        expect(tensorBytes(t as NDArray).equals(tensorBytes(inputs[name]))).toBe(true);
      }
      const { priority, timeout, ...custom } = params;
      expect(call.parameters.custom).toEqual(custom);
      expect(call.parameters.priority).toBe(priority ?? 0);
      void timeout;
    }), settings(800));
  });
});

describe('gRPC ModelInfer on a real server: hostile messages never get INTERNAL, and the server stays up', () => {
  let served: Served;
  let client: Client;

  beforeAll(async () => {
    served = await serve();
    client = new Client(`127.0.0.1:${served.port}`, credentials.createInsecure());
  });

  afterAll(async () => {
    client.close();
    await served.close();
  });

  /** Sends pre-encoded request bytes; resolves with the status code (OK on success). */
  function send(buf: Buffer): Promise<{ code: number; details: string }> {
    return new Promise((resolve) => {
      client.makeUnaryRequest('/inference.GRPCInferenceService/ModelInfer', (b: Buffer) => b, (b: Buffer) => b, buf, new Metadata(),
        { deadline: Date.now() + 20_000 }, (err: ServiceError | null) => resolve(err ? { code: err.code, details: err.details } : { code: Status.OK, details: '' }));
    });
  }

  test('every hostile request ends with OK or a client-error status', async () => {
    await fc.assert(fc.asyncProperty(hostileRequest, async (buf) => {
      const { code, details } = await send(buf);
      if (code === Status.INTERNAL || code === Status.UNKNOWN || code === Status.DEADLINE_EXCEEDED) {
        throw new Error(`ModelInfer ended with status ${Status[code]}: ${details}`);
      }
    }), settings(150));
    const good = encodeInferRequest(inferRequestFields({ modelName: 'nobatch', inputs: { IN: new NDArray('INT32', [4], Int32Array.of(1, 2, 3, 4)) } }));
    expect(await send(good)).toEqual({ code: Status.OK, details: '' });
  });
});
