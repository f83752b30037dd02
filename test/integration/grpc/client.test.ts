/**
 * GrpcInferenceServerClient against infernode's gRPC frontend: every method of the
 * InferenceServerClient contract, errors with the server's message and Triton's code, client
 * deadlines, cancellation, closed clients and unreachable servers; and ModelClient over grpc://.
 */
import { ClientClosedError, ClientTimeoutError, ClientValueError } from '../../../ts/client/errors';
import { GrpcInferenceServerClient } from '../../../ts/client/grpc';
import { ModelClient } from '../../../ts/client/model-client';
import { toModelConfigJson } from '../../../ts/config/model-config-json';
import { InferenceServerError } from '../../../ts/errors';
import type { Request } from '../../../ts/request';
import { NDArray } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import { Recorder, expectRejects, waitFor } from '../helpers';
import { bindStandardModels, fp32, grpcTriton, serve, type Served } from './helpers';

const held = new Recorder();

function bindModels(t: Triton): void {
  bindStandardModels(t);
  t.bind({
    modelName: 'held', inferFunc: held.func, config: { batching: false },
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
  });
  t.bind({
    modelName: 'add_sub',
    inferFunc: (requests: Request[]) => requests.map((r) => {
      const a = r.data.a.data as Float32Array;
      const b = r.data.b.data as Float32Array;
      return {
        add: new NDArray('FP32', r.data.a.shape, a.map((v, i) => v + b[i])),
        sub: new NDArray('FP32', r.data.a.shape, a.map((v, i) => v - b[i])),
      };
    }),
    inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'sub', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 16 },
  });
}

let s: Served;
let client: GrpcInferenceServerClient;
beforeAll(async () => {
  s = await serve(bindModels, { grpcRestrictedProtocol: 'statistics:admin=1' });
  client = new GrpcInferenceServerClient(`grpc://127.0.0.1:${s.port}`);
});
afterAll(async () => {
  await client.close();
  await s.close();
});

describe('GrpcInferenceServerClient', () => {
  test('health, metadata, config and the repository index', async () => {
    expect(await client.serverLive()).toBe(true);
    expect(await client.serverReady()).toBe(true);
    expect(await client.modelReady('identity')).toBe(true);
    expect(await client.modelReady('identity', '2')).toBe(false);
    expect(await client.modelReady('nope')).toBe(false);
    expect((await client.serverMetadata()).name).toBe('triton');
    expect(await client.modelMetadata('identity')).toEqual({
      name: 'identity', versions: ['1'], platform: expect.any(String),
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [-1, -1] }], outputs: [{ name: 'OUT', datatype: 'FP32', shape: [-1, -1] }],
    });
    expect(await client.modelConfig('add_sub')).toEqual(toModelConfigJson(s.triton.model('add_sub').config));
    expect((await client.repositoryIndex()).map((e) => e.name)).toEqual(['add_sub', 'held', 'identity', 'nobatch', 'strings']);
  });

  test('infer: several inputs and datatypes, requested outputs, id and parameters', async () => {
    const r = await client.infer({
      modelName: 'add_sub', id: 'x-1', inputs: { a: fp32([1, 2, 3]), b: fp32([0.5, 0.5, 0.5]) }, parameters: { tag: 'ok', n: 3, f: 0.5 },
    });
    expect(r).toMatchObject({ modelName: 'add_sub', modelVersion: '1', id: 'x-1' });
    expect(r.outputs.add.shape).toEqual([1, 3]);
    expect([...r.outputs.add.data as Float32Array]).toEqual([1.5, 2.5, 3.5]);
    expect([...r.outputs.sub.data as Float32Array]).toEqual([0.5, 1.5, 2.5]);
    const only = await client.infer({ modelName: 'add_sub', inputs: { a: fp32([1]), b: fp32([1]) }, outputs: ['sub'] });
    expect(Object.keys(only.outputs)).toEqual(['sub']);
    const strings = await client.infer({
      modelName: 'strings', inputs: { IN: new NDArray('BYTES', [1, 2], [Buffer.from('α'), Buffer.from('')]) },
    });
    expect((strings.outputs.OUT.data as Buffer[]).map((b) => b.toString())).toEqual(['α', '']);
    const ints = await client.infer({ modelName: 'nobatch', inputs: { IN: new NDArray('INT32', [4], new Int32Array([1, -2, 3, -4])) } });
    expect([...ints.outputs.OUT.data as Int32Array]).toEqual([1, -2, 3, -4]);
  });

  test('errors carry the server\'s message and Triton\'s code', async () => {
    await expectRejects(client.infer({ modelName: 'nope', inputs: { IN: fp32([1]) } }), 'NOT_FOUND', "Request for unknown model: 'nope' is not found");
    await expectRejects(client.infer({ modelName: 'identity', inputs: { X: fp32([1]) } }), 'INVALID_ARG', "'X'");
    await expectRejects(client.modelConfig('nope'), 'NOT_FOUND', "'nope' is not found");
    await expectRejects(client.loadModel('x'), 'UNAVAILABLE', 'explicit model load / unload is not allowed');
    await expectRejects(client.unloadModel('x'), 'UNAVAILABLE', 'explicit model load / unload is not allowed');
  });

  test('statistics (restricted here): the header comes from the client options; numbers are numbers', async () => {
    await expectRejects(client.modelStatistics('identity'), 'UNAVAILABLE', "expecting header 'triton-grpc-protocol-admin'");
    const admin = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`, { headers: { 'triton-grpc-protocol-admin': '1' } });
    try {
      await admin.infer({ modelName: 'identity', inputs: { IN: fp32([1]) } });
      const stats = await admin.modelStatistics('identity');
      expect(stats.model_stats[0]).toMatchObject({ name: 'identity', version: '1' });
      expect(stats.model_stats[0].inference_count).toBeGreaterThanOrEqual(1);
      expect(typeof (stats.model_stats[0].inference_stats as { success: { ns: unknown } }).success.ns).toBe('number');
    } finally {
      await admin.close();
    }
  });

  test('a call past its timeout fails with ClientTimeoutError; the server drops the queued request', async () => {
    const gate = held.hold();
    const first = client.infer({ modelName: 'held', inputs: { IN: new NDArray('FP32', [1], new Float32Array([1])) } });
    await waitFor(() => held.active === 1, 'the request to run');
    const late = client.infer({ modelName: 'held', inputs: { IN: new NDArray('FP32', [1], new Float32Array([2])) }, timeoutMs: 100 });
    await expect(late).rejects.toBeInstanceOf(ClientTimeoutError);
    await waitFor(() => s.triton.model('held').pendingCount === 1, 'the expired request to leave the queue');
    gate.open();
    await first;
  });

  test('an aborted signal cancels the call: CANCELLED; the server removes the queued request', async () => {
    const gate = held.hold();
    const first = client.infer({ modelName: 'held', inputs: { IN: new NDArray('FP32', [1], new Float32Array([1])) } });
    await waitFor(() => held.active === 1, 'the request to run');
    const controller = new AbortController();
    const second = client.infer({ modelName: 'held', inputs: { IN: new NDArray('FP32', [1], new Float32Array([2])) }, signal: controller.signal });
    await waitFor(() => s.triton.model('held').pendingCount === 2, 'the second request to be queued');
    controller.abort();
    await expectRejects(second, 'CANCELLED', 'ModelInfer was cancelled');
    await waitFor(() => s.triton.model('held').pendingCount === 1, 'the cancelled request to leave the queue');
    gate.open();
    await first;
  });

  test('closed clients, unreachable servers and bad addresses', async () => {
    const other = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`);
    await other.close();
    await expect(other.serverLive()).rejects.toBeInstanceOf(ClientClosedError);
    const t = grpcTriton();
    await t.run();
    const port = t.ports.grpc!;
    await t.stop();
    const gone = new GrpcInferenceServerClient(`127.0.0.1:${port}`, { timeoutMs: 2000 });
    const err = await gone.serverLive().catch((e: unknown) => e);
    await gone.close();
    expect(err).toBeInstanceOf(InferenceServerError);
    expect((err as InferenceServerError).code).toBe('UNAVAILABLE');
    expect(() => new GrpcInferenceServerClient('http://x:1')).toThrow(ClientValueError);
    const badHeader = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`, { headers: { 'bad header': 'x' } });
    await expect(badHeader.serverLive()).rejects.toBeInstanceOf(ClientValueError);
    await badHeader.close();
  });
});

describe('ModelClient over grpc://', () => {
  test('inferSample and inferBatch, as over HTTP', async () => {
    const mc = new ModelClient(`grpc://127.0.0.1:${s.port}`, 'add_sub', undefined, { initTimeoutS: 10 });
    try {
      const sample = await mc.inferSample({ a: new Float32Array([1, 2]), b: new Float32Array([3, 4]) });
      expect(sample.add.shape).toEqual([2]);
      expect([...sample.add.data as Float32Array]).toEqual([4, 6]);
      const batch = await mc.inferBatch([fp32([1, 2, 3, 4], [2, 2]), fp32([1, 1, 1, 1], [2, 2])]);
      expect(batch.sub.shape).toEqual([2, 2]);
      expect([...batch.sub.data as Float32Array]).toEqual([0, 1, 2, 3]);
    } finally {
      await mc.close();
    }
  });

  test('a model without batching refuses inferBatch; an unknown model times out saying the index does not list it', async () => {
    const mc = new ModelClient(`grpc://127.0.0.1:${s.port}`, 'nobatch', undefined, { initTimeoutS: 10 });
    try {
      const out = await mc.inferSample([new Int32Array([1, 2, 3, 4])]);
      expect([...out.OUT.data as Int32Array]).toEqual([1, 2, 3, 4]);
      await expect(mc.inferBatch([new Int32Array([1, 2, 3, 4])])).rejects.toThrow('does not support batching');
    } finally {
      await mc.close();
    }
    // 1 s: the reason needs one whole check (connecting, then four calls) in time.
    const missing = new ModelClient(`grpc://127.0.0.1:${s.port}`, 'nope', undefined, { initTimeoutS: 1 });
    const err = await missing.inferSample([new Float32Array([1])]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientTimeoutError);
    expect((err as Error).message).toContain("the server's model repository does not list it");
    await missing.close();
  });
});
