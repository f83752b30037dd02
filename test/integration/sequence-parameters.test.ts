/**
 * The sequence batcher's request parameters through real HTTP and gRPC servers: `sequence_id`
 * (uint64 or string; 0 / "" = not a sequence), `sequence_start` and `sequence_end` (bool) are
 * taken out of the custom parameters, checked with Triton's errors, and a model bound with a
 * `sequenceBatcher` serves its config back (GET /v2/models/m/config, gRPC ModelConfig).
 * Scheduling by sequence is the native sequence batcher's and is tested with it.
 */
import { status } from '@grpc/grpc-js';
import type { Request } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import { Triton as TritonServer, type Triton } from '../../ts/triton';
import { encodeInferRequest as encodeHttpInferRequest } from '../../ts/client/http-infer';
import { inferRequestFields as grpcInferRequestFields } from '../../ts/client/grpc-convert';
import { sequenceParameters } from '../../ts/client/sequence';
import { ClientValueError } from '../../ts/client/errors';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { GrpcInferenceServerClient } from '../../ts/client/grpc';
import { ModelClient } from '../../ts/client/model-client';
import { exactSequenceId, splitRequestParameters } from '../../ts/server/parameters';
import { closeAgent, get, post, serve as serveHttp, type Served as HttpServed } from './http/http-helpers';
import { fails, fp32Bytes, ok, serve as serveGrpc, type Served as GrpcServed } from './grpc/helpers';

/** Answers each request with its custom parameters as JSON: reserved keys must not reach it. */
const params = (requests: Request[]): Record<string, NDArray>[] => requests.map((r) => ({
  OUT: new NDArray('BYTES', [1], [Buffer.from(JSON.stringify(r.parameters ?? {}))]),
}));

function bindModels(t: Triton): void {
  t.bind({
    modelName: 'params', inferFunc: params,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [1] }],
    config: { batching: false },
  });
  t.bind({
    modelName: 'stateful', inferFunc: params,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [1] }],
    config: {
      maxBatchSize: 2,
      sequenceBatcher: {
        maxSequenceIdleMicroseconds: 5_000_000,
        controlInputs: [{ name: 'START', kind: 'CONTROL_SEQUENCE_START', int32FalseTrue: [0, 1] }],
      },
    },
  });
}

describe('splitRequestParameters: the sequence keys', () => {
  test.each<[string, Record<string, unknown>, object]>([
    ['a number id with flags', { sequence_id: 7, sequence_start: true, sequence_end: false }, { sequenceId: 7, sequenceStart: true, sequenceEnd: false }],
    ['a string id', { sequence_id: 'abc' }, { sequenceId: 'abc' }],
    ['id 0: not a sequence', { sequence_id: 0 }, { sequenceId: undefined }],
    ['id "": not a sequence', { sequence_id: '' }, { sequenceId: undefined }],
    ['a bigint id above 2^53 stays a bigint', { sequence_id: 2n ** 64n - 1n }, { sequenceId: 2n ** 64n - 1n }],
    ['a small bigint id becomes a number', { sequence_id: 5n }, { sequenceId: 5 }],
  ])('%s', (_what, input, expected) => {
    const out = splitRequestParameters(input);
    expect(out).toMatchObject(expected);
    expect(out.custom).toEqual({});
  });

  test.each([
    [{ sequence_id: -1 }, /^Unable to parse 'sequence_id': attempt to access JSON non-string as string \(a sequence id is an unsigned 64-bit integer or a string, got "-1"\)$/],
    [{ sequence_id: -1n }, /^Unable to parse 'sequence_id'/],
    [{ sequence_id: 1.5 }, /^Unable to parse 'sequence_id'/],
    [{ sequence_id: true }, /^Unable to parse 'sequence_id'/],
    [{ sequence_id: 2n ** 64n }, /^Unable to parse 'sequence_id'/],
    [{ sequence_id: 2 ** 60 }, /^Unable to parse 'sequence_id'/],
    [{ sequence_start: 1 }, /^Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean \(got "1"\)$/],
    [{ sequence_end: 'true' }, /^Unable to parse 'sequence_end': attempt to access JSON non-boolean as boolean/],
  ])('%p is INVALID_ARG', (input, message) => {
    expect(() => splitRequestParameters(input)).toThrow(message);
  });

  test('exactSequenceId reads an integer above 2^53 back from the JSON text', () => {
    const text = '{"parameters":{"sequence_id":18446744073709551615}}';
    const parsed = (JSON.parse(text) as { parameters: { sequence_id: number } }).parameters.sequence_id;
    expect(exactSequenceId(text, parsed)).toBe(18446744073709551615n);
    expect(exactSequenceId(text, 5)).toBe(5);
    // Two spellings of one double: ambiguous, left as the (refused) number.
    const two = '{"inputs":[{"parameters":{"sequence_id":9007199254740993}}],"parameters":{"sequence_id":9007199254740992}}';
    expect(exactSequenceId(two, 9007199254740992)).toBe(9007199254740992);
  });
});

describe('over HTTP', () => {
  let s: HttpServed;
  beforeAll(async () => {
    s = await serveHttp(bindModels);
  });
  afterAll(async () => {
    closeAgent();
    await s.triton.stop();
  });

  const body = (parameters: object) => ({ parameters, inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [0] }] });
  const received = (r: { json<T>(): T }): unknown =>
    JSON.parse((r.json<{ outputs: { data: string[] }[] }>().outputs[0].data)[0]);

  test('sequence parameters are accepted and do not reach the model as custom parameters', async () => {
    for (const parameters of [
      { sequence_id: 42, sequence_start: true, sequence_end: false, k: 1 },
      { sequence_id: 'user-7', sequence_end: true, k: 1 },
      { sequence_id: 0, k: 1 },
    ]) {
      const r = await post(s.port, '/v2/models/params/infer', body(parameters));
      expect(r.status).toBe(200);
      expect(received(r)).toEqual({ k: 1 });
    }
    // A uint64 id above 2^53 is read exactly from the JSON text; one above 2^64 - 1 is refused.
    const text = (id: string) => `{"parameters":{"sequence_id":${id}},"inputs":[{"name":"IN","datatype":"FP32","shape":[1],"data":[0]}]}`;
    expect((await post(s.port, '/v2/models/params/infer', text('18446744073709551615'), { 'Content-Type': 'application/json' })).status).toBe(200);
    const over = await post(s.port, '/v2/models/params/infer', text('18446744073709551616'), { 'Content-Type': 'application/json' });
    expect({ status: over.status, error: over.error }).toEqual({ status: 400, error: expect.stringMatching(/^Unable to parse 'sequence_id'/) });
  });

  test.each([
    [{ sequence_id: -3 }, "Unable to parse 'sequence_id': attempt to access JSON non-string as string"],
    [{ sequence_id: 1.5 }, "Unable to parse 'sequence_id': attempt to access JSON non-string as string"],
    [{ sequence_id: [1] }, "Unable to parse 'sequence_id': attempt to access JSON non-string as string"],
    [{ sequence_start: 'yes' }, "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean"],
    [{ sequence_end: 1 }, "Unable to parse 'sequence_end': attempt to access JSON non-boolean as boolean"],
  ])('%p → 400 with Triton\'s error', async (parameters, message) => {
    const r = await post(s.port, '/v2/models/params/infer', body(parameters));
    expect(r.status).toBe(400);
    expect(r.error).toContain(message);
  });

  test('a bound sequenceBatcher is served back in the model config', async () => {
    const r = await get(s.port, '/v2/models/stateful/config');
    expect(r.status).toBe(200);
    const config = r.json<Record<string, unknown>>();
    expect(config.dynamic_batching).toBeUndefined();
    expect(config.sequence_batching).toMatchObject({
      direct: { max_queue_delay_microseconds: 0, minimum_slot_utilization: 0 },
      max_sequence_idle_microseconds: 5000000,
      control_input: [{ name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] }],
      state: [], iterative_sequence: false,
    });
  });
});

describe('over gRPC', () => {
  let s: GrpcServed;
  beforeAll(async () => {
    s = await serveGrpc(bindModels);
  });
  afterAll(() => s.close());

  const base = { model_name: 'params', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1] }], raw_input_contents: [fp32Bytes([0])] };
  const received = (r: Record<string, unknown>): unknown => {
    const raw = (r.raw_output_contents as Buffer[])[0];
    return JSON.parse(raw.subarray(4).toString('utf8'));
  };

  test('int64, uint64 and string ids and bool flags are accepted and not custom parameters', async () => {
    for (const parameters of [
      { sequence_id: { int64_param: 42 }, sequence_start: { bool_param: true }, sequence_end: { bool_param: false }, k: { int64_param: 1 } },
      { sequence_id: { uint64_param: '18446744073709551615' }, k: { int64_param: 1 } },
      { sequence_id: { string_param: 'user-7' }, sequence_end: { bool_param: true }, k: { int64_param: 1 } },
    ]) {
      expect(received(await ok(s.stub, 'ModelInfer', { ...base, parameters }))).toEqual({ k: 1 });
    }
  });

  test('a negative int64 id and wrong parameter types are INVALID_ARGUMENT', async () => {
    await fails(s.stub, 'ModelInfer', { ...base, parameters: { sequence_id: { int64_param: -1 } } }, status.INVALID_ARGUMENT,
      /^Unable to parse 'sequence_id': .*unsigned 64-bit integer or a string, got "-1"/);
    await fails(s.stub, 'ModelInfer', { ...base, parameters: { sequence_id: { bool_param: true } } }, status.INVALID_ARGUMENT,
      "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.");
    await fails(s.stub, 'ModelInfer', { ...base, parameters: { sequence_end: { string_param: 'true' } } }, status.INVALID_ARGUMENT,
      "invalid value type for 'sequence_end' parameter, expected bool_param.");
  });

  test('a bound sequenceBatcher is served back by ModelConfig', async () => {
    const r = await ok(s.stub, 'ModelConfig', { name: 'stateful' });
    const config = r.config as Record<string, unknown>;
    expect(config.scheduling_choice ?? 'sequence_batching').toBe('sequence_batching');
    expect(config.sequence_batching).toMatchObject({
      max_sequence_idle_microseconds: '5000000',
      control_input: [{ name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] }],
    });
  });
});

describe('clients send the sequence parameters as tritonclient does', () => {
  const x = new NDArray('FP32', [1], new Float32Array([0]));

  test('HTTP: start/end always with an id, the exact digits of an id above 2^53, nothing without an id', () => {
    const header = (req: object): string => {
      const { body, headers } = encodeHttpInferRequest({ modelName: 'm', inputs: { IN: x }, outputs: ['OUT'], ...req }, false, false);
      expect(headers['Inference-Header-Content-Length']).toBeUndefined();
      return body.toString('utf8');
    };
    expect(header({ sequenceId: 5, sequenceStart: true, parameters: { k: 1 } }))
      .toContain('"parameters":{"k":1,"sequence_start":true,"sequence_end":false,"sequence_id":5}}');
    expect(header({ sequenceId: 2n ** 64n - 1n, sequenceEnd: true }))
      .toContain('"parameters":{"sequence_start":false,"sequence_end":true,"sequence_id":18446744073709551615}}');
    expect(header({ sequenceId: 'abc' })).toContain('"parameters":{"sequence_start":false,"sequence_end":false,"sequence_id":"abc"}}');
    expect(header({ sequenceId: 0, sequenceStart: true })).toContain('"parameters":{}}');
  });

  test('gRPC: int64_param below 2^63, uint64_param above, string_param for strings', () => {
    const kinds = (sequenceId: number | bigint | string) => Object.fromEntries(
      [...grpcInferRequestFields({ modelName: 'm', inputs: { IN: x }, sequenceId }).parameters!].map(([k, p]) => [k, [p.kind, p.value]]));
    expect(kinds(7)).toEqual({ sequence_id: ['int64', 7], sequence_start: ['bool', false], sequence_end: ['bool', false] });
    expect(kinds(2n ** 63n)).toMatchObject({ sequence_id: ['uint64', 2n ** 63n] });
    expect(kinds(2n ** 63n - 1n)).toMatchObject({ sequence_id: ['int64', 2n ** 63n - 1n] });
    expect(kinds('s')).toMatchObject({ sequence_id: ['string', 's'] });
    expect(grpcInferRequestFields({ modelName: 'm', inputs: { IN: x }, sequenceId: '' }).parameters).toBeNull();
  });

  test.each([[-1], [1.5], [2 ** 60], [2n ** 64n]])('sequenceId %p is a ClientValueError', (sequenceId) => {
    expect(() => sequenceParameters({ sequenceId })).toThrow(ClientValueError);
  });

  describe('through real servers', () => {
    let served: Triton;
    beforeAll(async () => {
      served = new TritonServer({
        config: { httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false, logInfo: false },
      });
      bindModels(served);
      await served.run();
    });
    afterAll(() => served.stop());

    test.each(['http', 'grpc'])('%s clients and ModelClient: the server takes every id kind as a sequence parameter', async (scheme) => {
      const port = scheme === 'http' ? served.ports.http : served.ports.grpc;
      const client = scheme === 'http' ? new HttpInferenceServerClient(`127.0.0.1:${port}`) : new GrpcInferenceServerClient(`127.0.0.1:${port}`);
      const modelClient = new ModelClient(`${scheme}://127.0.0.1:${port}`, 'params');
      try {
        for (const sequenceId of [9, 2n ** 64n - 1n, 'user-7']) {
          const r = await client.infer({ modelName: 'params', inputs: { IN: x }, sequenceId, sequenceStart: true, parameters: { k: 1 } });
          expect(JSON.parse(Buffer.from((r.outputs.OUT.data as Uint8Array[])[0]).toString())).toEqual({ k: 1 });
          const m = await modelClient.inferSample([new Float32Array([0])], { sequenceId, sequenceEnd: true, parameters: { k: 2 } });
          expect(JSON.parse(Buffer.from((m.OUT.data as Uint8Array[])[0]).toString())).toEqual({ k: 2 });
        }
      } finally {
        await modelClient.close();
        await client.close();
      }
    });

    test('ModelClient refuses a streamed sequence request over HTTP (generate_stream has no sequence_id)', async () => {
      const modelClient = new ModelClient(`http://127.0.0.1:${served.ports.http}`, 'params');
      try {
        await expect(modelClient.inferSampleStream([new Float32Array([0])], { sequenceId: 1 }).next())
          .rejects.toThrow(/a streamed sequence request needs a grpc:\/\/ URL/);
      } finally {
        await modelClient.close();
      }
    });
  });
});
