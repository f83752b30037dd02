/**
 * The hostile-input list over gRPC: every malformed request gets the status Triton gives and a
 * message naming the problem, and the server keeps serving afterwards (checked after each test).
 * Cancelled and timed-out calls leave the queue without executing.
 */
import { Client, Metadata, credentials, status, type ServiceError } from '@grpc/grpc-js';
import type { Triton } from '../../../ts/triton';
import { grpcMaxDecompressedSize } from '../../../ts/server/grpc/server';
import { Recorder, waitFor } from '../helpers';
import { bindStandardModels, fails, fp32Bytes, ok, rawStub, serve, unary, type Served } from './helpers';

const held = new Recorder();
const limited = new Recorder();

function bindModels(t: Triton): void {
  bindStandardModels(t);
  t.bind({
    modelName: 'held', inferFunc: held.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { batching: false },
  });
  t.bind({
    modelName: 'limited', inferFunc: limited.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { maxBatchSize: 1, batcher: { defaultQueuePolicy: { maxQueueSize: 1 } } },
  });
  t.bind({
    modelName: 'loud', inferFunc: () => { throw new Error(`the model broke: ${'é'.repeat(1024 * 1024)} (end)`); },
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { batching: false },
  });
  t.bind({
    modelName: 'failing', inferFunc: () => { throw new Error('the model broke on purpose'); },
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { batching: false },
  });
}

let s: Served;
beforeAll(async () => {
  s = await serve(bindModels);
});
afterAll(() => s.close());

// Whatever a test sent, the server must still answer correctly.
afterEach(async () => {
  expect(await ok(s.stub, 'ServerLive', {})).toEqual({ live: true });
  const r = await ok(s.stub, 'ModelInfer', {
    model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32Bytes([1, 2])],
  });
  expect(r.raw_output_contents).toEqual([fp32Bytes([1, 2])]);
});

const IN = (shape: number[], datatype = 'FP32', extra: object = {}) => ({ name: 'IN', datatype, shape, ...extra });
const infer = (request: object, code: status, details: string | RegExp) => fails(s.stub, 'ModelInfer', request, code, details);

describe('tensor data', () => {
  test('raw contents of the wrong length', async () => {
    await infer({ model_name: 'identity', inputs: [IN([1, 3])], raw_input_contents: [fp32Bytes([1, 2])] }, status.INVALID_ARGUMENT,
      "unexpected byte size for input 'IN' for model 'identity': FP32 tensor of shape [1,3] needs 12 bytes, got 8");
    await infer({ model_name: 'identity', inputs: [IN([1, 1])], raw_input_contents: [Buffer.alloc(5)] }, status.INVALID_ARGUMENT,
      'needs 4 bytes, got 5');
  });

  test('contents of the wrong type, count or range', async () => {
    await infer({ model_name: 'identity', inputs: [IN([1, 2], 'FP32', { contents: { int_contents: [1, 2] } })] }, status.INVALID_ARGUMENT,
      "unexpected explicit tensor data for input 'IN' for model 'identity': got int_contents, but datatype FP32 takes its typed contents in fp32_contents");
    await infer({ model_name: 'identity', inputs: [IN([1, 3], 'FP32', { contents: { fp32_contents: [1, 2] } })] }, status.INVALID_ARGUMENT,
      'shape [1,3] holds 3 elements, fp32_contents has 2');
    await infer({ model_name: 'nobatch', inputs: [IN([4], 'INT32', { contents: { int_contents: [1, 2, 3, 4], fp32_contents: [1] } })] },
      status.INVALID_ARGUMENT, 'got fp32_contents, but datatype INT32 takes its typed contents in int_contents');
  });

  test('both contents and raw_input_contents', async () => {
    await infer({
      model_name: 'identity', inputs: [IN([1, 1], 'FP32', { contents: { fp32_contents: [1] } })], raw_input_contents: [fp32Bytes([1])],
    }, status.INVALID_ARGUMENT, "contents field must not be specified when using raw_input_contents for 'IN' for model 'identity'");
  });

  test('no data, too much raw data, a duplicate input', async () => {
    await infer({ model_name: 'identity', inputs: [IN([1, 1])] }, status.INVALID_ARGUMENT,
      "unable to find data for input tensor 'IN' for model 'identity' in request.");
    await infer({ model_name: 'identity', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1]), fp32Bytes([2])] },
      status.INVALID_ARGUMENT, "request for model 'identity' has 2 raw_input_contents but 1 of its inputs take their data from them");
    await infer({ model_name: 'identity', inputs: [IN([1, 1]), IN([1, 1])], raw_input_contents: [fp32Bytes([1]), fp32Bytes([2])] },
      status.INVALID_ARGUMENT, "input 'IN' already exists in request for model 'identity'");
  });

  test('broken BYTES encoding, or more elements than the shape, in raw contents', async () => {
    const broken = Buffer.from([5, 0, 0, 0, 65]);
    await infer({ model_name: 'strings', inputs: [IN([1, 1], 'BYTES')], raw_input_contents: [broken] }, status.INVALID_ARGUMENT,
      "input 'IN' for model 'strings': BYTES element exceeds the data");
    // 256 KiB of zeros is 65,536 empty elements: the walk stops at the second, as Triton's does.
    await infer({ model_name: 'strings', inputs: [IN([1, 1], 'BYTES')], raw_input_contents: [Buffer.alloc(1 << 18)] },
      status.INVALID_ARGUMENT, "unexpected number of string elements 2 for input 'IN' for model 'strings', expecting 1");
  });

  test('bad datatype, negative or huge dimensions, wrong shape for the model, batch too big', async () => {
    await infer({ model_name: 'identity', inputs: [IN([1, 1], 'FLOAT')], raw_input_contents: [fp32Bytes([1])] }, status.INVALID_ARGUMENT,
      "invalid datatype 'FLOAT' for input 'IN' for model 'identity'");
    await infer({ model_name: 'identity', inputs: [IN([1, -1])], raw_input_contents: [fp32Bytes([1])] }, status.INVALID_ARGUMENT,
      "invalid dimension -1 in the shape of input 'IN' for model 'identity'");
    await infer({ model_name: 'identity', inputs: [IN([1, '9223372036854775807'] as never)], raw_input_contents: [fp32Bytes([1])] },
      status.INVALID_ARGUMENT, "input 'IN' for model 'identity'");
    await infer({ model_name: 'nobatch', inputs: [IN([5], 'INT32')], raw_input_contents: [Buffer.alloc(20)] }, status.INVALID_ARGUMENT,
      /unexpected shape for input 'IN' for model 'nobatch'/);
    await infer({ model_name: 'identity', inputs: [IN([65, 1])], raw_input_contents: [Buffer.alloc(260)] }, status.INVALID_ARGUMENT,
      /batch-size must be <= 64/);
  });

  test('FP16 has no typed contents; narrow integers are range-checked', async () => {
    await fails(s.stub, 'ModelInfer', { model_name: 'identity', inputs: [IN([1, 1], 'FP16', { contents: { fp32_contents: [1] } })] },
      status.INVALID_ARGUMENT, 'datatype FP16 has no typed contents field; send it in raw_input_contents');
    const t = s.triton;
    if (!t.models().some((m) => m.name === 'int8')) {
      t.bind({
        modelName: 'int8', inferFunc: held.func, inputs: [{ name: 'IN', dtype: 'INT8', shape: [2] }],
        outputs: [{ name: 'OUT', dtype: 'INT8', shape: [2] }], config: { batching: false },
      });
    }
    await infer({ model_name: 'int8', inputs: [IN([2], 'INT8', { contents: { int_contents: [1, 300] } })] }, status.INVALID_ARGUMENT,
      "input 'IN' for model 'int8': element 1 (300) is out of range for datatype INT8");
  });
});

describe('names and parameters', () => {
  test('unknown model, unknown version, unknown input or output', async () => {
    await infer({ model_name: 'nope', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] }, status.NOT_FOUND,
      "Request for unknown model: 'nope' is not found");
    await infer({ model_name: 'identity', model_version: '7', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] },
      status.NOT_FOUND, "'identity' version 7 is not found");
    await infer({ model_name: 'identity', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 1] }], raw_input_contents: [fp32Bytes([1])] },
      status.INVALID_ARGUMENT, /'X'/);
    await infer({ model_name: 'identity', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])], outputs: [{ name: 'NOPE' }] },
      status.INVALID_ARGUMENT, "unexpected inference output 'NOPE' for model 'identity'");
  });

  test('reserved parameters of the wrong type, and unknown triton_ keys', async () => {
    const base = { model_name: 'identity', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] };
    await infer({ ...base, parameters: { timeout: { string_param: '5' } } }, status.INVALID_ARGUMENT,
      "invalid value type for 'timeout' parameter, expected int64_param.");
    await infer({ ...base, parameters: { priority: { bool_param: true } } }, status.INVALID_ARGUMENT,
      "invalid value type for 'priority' parameter, expected int64_param or uint64_param.");
    await infer({ ...base, parameters: { sequence_start: { int64_param: 1 } } }, status.INVALID_ARGUMENT,
      "invalid value type for 'sequence_start' parameter, expected bool_param.");
    await infer({ ...base, parameters: { triton_x: { bool_param: true } } }, status.INVALID_ARGUMENT,
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified: 'triton_x'");
    await infer({ ...base, outputs: [{ name: 'OUT', parameters: { classification: { string_param: '2' } } }] }, status.INVALID_ARGUMENT,
      "parameter 'classification' must be a positive int64_param");
  });
});

describe('bytes that are not a valid message', () => {
  const send = (path: string, body: Buffer): Promise<ServiceError | null> => {
    const client = new Client(`127.0.0.1:${s.port}`, credentials.createInsecure());
    const same = (b: Buffer): Buffer => b;
    return new Promise((resolve) => {
      client.makeUnaryRequest(path, same, same, body, new Metadata(), {}, (err) => {
        client.close();
        resolve(err);
      });
    });
  };

  test('ModelInfer: INVALID_ARGUMENT saying what is malformed', async () => {
    // Field 7 (raw_input_contents) claims 100 bytes, but 2 follow.
    const err = await send('/inference.GRPCInferenceService/ModelInfer', Buffer.from([0x3a, 100, 1, 2]));
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toContain('malformed ModelInferRequest: length 100 at byte 2 runs past the end');
    const wrongType = await send('/inference.GRPCInferenceService/ModelInfer', Buffer.from([0x08, 1]));
    expect(wrongType?.details).toContain('field 1 has wire type 0, expected 2');
  });

  test('other RPCs: INVALID_ARGUMENT too', async () => {
    // A varint whose continuation bit promises a byte that never comes.
    const err = await send('/inference.GRPCInferenceService/ModelMetadata', Buffer.from([0x08, 0x80]));
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toContain('malformed ModelMetadata request');
  });
});

describe('the queue', () => {
  test('a full queue: UNAVAILABLE "Exceeds maximum queue size", others unaffected', async () => {
    const gate = limited.hold();
    const one = { model_name: 'limited', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] };
    const first = unary(s.stub, 'ModelInfer', one);
    await waitFor(() => limited.active === 1, 'the instance to be busy');
    const second = unary(s.stub, 'ModelInfer', one);
    await waitFor(() => s.triton.model('limited').pendingCount === 2, 'the second request to be queued');
    await infer(one, status.UNAVAILABLE, 'Exceeds maximum queue size');
    gate.open();
    expect((await first).error).toBeUndefined();
    expect((await second).error).toBeUndefined();
  });

  test('a failing model: its error with INTERNAL, only for its batch', async () => {
    await infer({ model_name: 'failing', inputs: [IN([1])], raw_input_contents: [fp32Bytes([1])] }, status.INTERNAL,
      'the model broke on purpose');
  });
});

describe('cancelled and timed-out calls', () => {
  const request = (tag: number) => ({ model_name: 'held', inputs: [IN([1])], raw_input_contents: [fp32Bytes([tag])] });

  test('a call cancelled while queued: CANCELLED at the client, removed from the queue, never executed', async () => {
    const gate = held.hold();
    const calls = held.calls.length;
    const first = unary(s.stub, 'ModelInfer', request(101));
    await waitFor(() => held.active === 1, 'the instance to be busy');
    const md = new Metadata();
    const cancelled = new Promise<ServiceError | null>((resolve) => {
      const call = s.stub.ModelInfer(request(102), md, {}, (err) => resolve(err));
      setTimeout(() => call.cancel(), 50);
    });
    const err = await cancelled;
    expect(err?.code).toBe(status.CANCELLED);
    await waitFor(() => s.triton.model('held').pendingCount === 1, 'the cancelled request to leave the queue');
    gate.open();
    expect((await first).error).toBeUndefined();
    expect(held.calls.slice(calls).flatMap((c) => c.tags)).toEqual([101]);
  });

  test('a call past its deadline: DEADLINE_EXCEEDED, removed from the queue, never executed', async () => {
    const gate = held.hold();
    const calls = held.calls.length;
    const first = unary(s.stub, 'ModelInfer', request(201));
    await waitFor(() => held.active === 1, 'the instance to be busy');
    const late = await unary(s.stub, 'ModelInfer', request(202), {}, { deadline: Date.now() + 100 });
    expect(late.error?.code).toBe(status.DEADLINE_EXCEEDED);
    await waitFor(() => s.triton.model('held').pendingCount === 1, 'the expired request to leave the queue');
    gate.open();
    expect((await first).error).toBeUndefined();
    expect(held.calls.slice(calls).flatMap((c) => c.tags)).toEqual([201]);
  });

  test('a call cancelled while its request runs: the result is dropped, nothing stays pending', async () => {
    const gate = held.hold();
    const err = await new Promise<ServiceError | null>((resolve) => {
      const call = s.stub.ModelInfer(request(301), new Metadata(), {}, (e) => resolve(e));
      void waitFor(() => held.active === 1, 'the request to run').then(() => call.cancel());
    });
    expect(err?.code).toBe(status.CANCELLED);
    gate.open();
    await waitFor(() => s.triton.model('held').pendingCount === 0, 'the running request to be handed back');
  });
});

describe('message size limits', () => {
  test('a message over grpcMaxMessageSize: RESOURCE_EXHAUSTED; the server keeps serving', async () => {
    const small = await serve(bindStandardModels, { grpcMaxMessageSize: 1024 * 1024 });
    try {
      const big = Buffer.alloc(2 * 1024 * 1024);
      const { error } = await unary(small.stub, 'ModelInfer', {
        model_name: 'identity', inputs: [IN([1, big.length / 4])], raw_input_contents: [big],
      });
      expect(error?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(error?.details).toMatch(/larger than max \(\d+ vs\. 1048576\)|larger than max \(\d+ vs 1048576\)/);
      const fine = await ok(small.stub, 'ModelInfer', {
        model_name: 'identity', inputs: [IN([1, 2])], raw_input_contents: [fp32Bytes([3, 4])],
      });
      expect(fine.raw_output_contents).toEqual([fp32Bytes([3, 4])]);
    } finally {
      await small.close();
    }
  });

  // grpc-js checks the inflated size of a compressed message against grpc.max_receive_message_length
  // only, 2 GiB for Triton: a few KiB of gzip could make the server allocate up to 2 GiB.
  test('a compressed message inflating past grpcMaxDecompressedSize: RESOURCE_EXHAUSTED; smaller and uncompressed ones pass', async () => {
    const bounded = await serve(bindStandardModels, { grpcMaxDecompressedSize: 1024 * 1024 });
    const gzip = rawStub(bounded.port, 'inference.GRPCInferenceService', { 'grpc.default_compression_algorithm': 2 });
    try {
      const zeros = (bytes: number) => ({
        model_name: 'identity', inputs: [IN([1, bytes / 4])], raw_input_contents: [Buffer.alloc(bytes)],
      });
      const { error } = await unary(gzip, 'ModelInfer', zeros(2 * 1024 * 1024));  // ~2 KiB on the wire
      expect(error?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(error?.details).toBe('Received message that decompresses to a size larger than 1048576 bytes ' +
        '(grpcMaxDecompressedSize, --grpc-max-decompressed-size): send the message uncompressed (bounded by grpcMaxMessageSize ' +
        'instead) or raise the limit');
      const under = await ok(gzip, 'ModelInfer', zeros(512 * 1024));
      expect(under.raw_output_contents).toEqual([Buffer.alloc(512 * 1024)]);
      // The same call on the same gzip channel after the refusal, and uncompressed past the bound.
      expect((await ok(gzip, 'ModelInfer', zeros(8))).raw_output_contents).toEqual([Buffer.alloc(8)]);
      expect((await ok(bounded.stub, 'ModelInfer', zeros(2 * 1024 * 1024))).raw_output_contents).toEqual([Buffer.alloc(2 * 1024 * 1024)]);
    } finally {
      gzip.close();
      await bounded.close();
    }
  });

  test('grpcMaxDecompressedSize: 64 MiB unless set, never above grpcMaxMessageSize, validated', () => {
    expect(grpcMaxDecompressedSize({})).toBe(64 * 1024 * 1024);
    expect(grpcMaxDecompressedSize({ grpcMaxDecompressedSize: 5 })).toBe(5);
    expect(grpcMaxDecompressedSize({ grpcMaxMessageSize: 1000 })).toBe(1000);
    expect(() => grpcMaxDecompressedSize({ grpcMaxDecompressedSize: 0 })).toThrow('grpcMaxDecompressedSize must be an integer in 1..2147483647');
  });

  test('a client without raised limits is refused a big response by its own limit, not by the server', async () => {
    const plain = rawStub(s.port, 'inference.GRPCInferenceService', { 'grpc.max_receive_message_length': 1024 });
    try {
      const { error } = await unary(plain, 'ModelInfer', {
        model_name: 'identity', inputs: [IN([1, 1024])], raw_input_contents: [Buffer.alloc(4096)],
      });
      expect(error?.code).toBe(status.RESOURCE_EXHAUSTED);
    } finally {
      plain.close();
    }
  });
});

// A status goes out in HTTP/2 trailers; a message echoing megabytes of client input used to
// exceed the peer's header-list limit, so the call never got a status and the connection hung.
describe('client input echoed in errors', () => {
  const clipped = (details: string | undefined) => {
    expect(details).toBeDefined();
    expect(details!.length).toBeLessThan(2048);
    expect(details).toContain('…');
  };

  test('a 1 MiB model name: INVALID_ARGUMENT (names are bounded) with the name clipped, then the same channel serves', async () => {
    const name = 'm'.repeat(1024 * 1024);
    const { error } = await unary(s.stub, 'ModelInfer', { model_name: name, inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] },
      {}, { deadline: Date.now() + 20_000 });
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toBe("model name 'mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm… (1048576 characters)' is too long: " +
      'model names are directory names and may be at most 255 characters');
    clipped(error?.details);
  });

  test('a 1,000,000-dim shape: INVALID_ARGUMENT naming the count (the codec decodes at most 64 dims), then the same channel serves', async () => {
    const { error } = await unary(s.stub, 'ModelInfer', {
      model_name: 'identity', inputs: [IN(new Array(1_000_000).fill(1))], raw_input_contents: [fp32Bytes([1])],
    }, {}, { deadline: Date.now() + 20_000 });
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toBe("the shape of input 'IN' has 1000000 dimensions; at most 64 are supported");
    const next = await unary(s.stub, 'ModelInfer', { model_name: 'identity', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] });
    expect(next.error).toBeFalsy();
  });

  test('a 64-dim shape with large dims: INVALID_ARGUMENT with the shape clipped', async () => {
    const { error } = await unary(s.stub, 'ModelInfer', {
      model_name: 'identity', inputs: [IN(new Array(64).fill(2 ** 52))], raw_input_contents: [fp32Bytes([1])],
    }, {}, { deadline: Date.now() + 20_000 });
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toContain("input 'IN'");
    clipped(error?.details);
  });

  test('a 1 MiB error from a model: the status message is bounded as a whole (head … tail)', async () => {
    const { error } = await unary(s.stub, 'ModelInfer', { model_name: 'loud', inputs: [IN([1])], raw_input_contents: [fp32Bytes([1])] },
      {}, { deadline: Date.now() + 20_000 });
    expect(error?.code).toBe(status.INTERNAL);
    expect(error?.details).toMatch(/^the model broke: é+…é+ \(end\)$/);
    expect(encodeURI(error!.details).length).toBeLessThanOrEqual(4096);
  });

  test('a stream request with a 1 MiB model name: the in-band error is clipped, the stream goes on', async () => {
    const stream = s.stub.ModelStreamInfer();
    const answers: Record<string, unknown>[] = [];
    const two = new Promise<void>((resolve, reject) => {
      stream.on('data', (r: Record<string, unknown>) => {
        answers.push(r);
        if (answers.length === 2) resolve();
      });
      stream.on('error', reject);
    });
    stream.write({ model_name: 'x'.repeat(1024 * 1024), id: 'long', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] });
    stream.write({ model_name: 'identity', id: 'fine', inputs: [IN([1, 1])], raw_input_contents: [fp32Bytes([1])] });
    await two;
    stream.end();
    const failed = answers.find((a) => a.error_message)!;
    clipped(failed.error_message as string);
    expect(answers.some((a) => (a.infer_response as { id?: string } | undefined)?.id === 'fine')).toBe(true);
  });
});
