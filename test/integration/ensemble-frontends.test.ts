/**
 * Ensembles declared in code (issue 10): `triton.bind()` with `config.ensembleScheduling` over
 * bound callables, served in process, over HTTP and over gRPC by the real frontends: inference,
 * metadata (platform "ensemble"), config (ensemble_scheduling), statistics of the ensemble and
 * of its steps, a failing step named in each protocol's error, and bind-time DAG errors.
 */
import { getEventListeners } from 'node:events';
import { status } from '@grpc/grpc-js';
import type { Request } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import { GrpcInferenceServerClient } from '../../ts/client/grpc';
import { expectRejects, expectThrows, waitFor } from './helpers';
import { fails, fp32Bytes, ok, rawStub } from './grpc/helpers';
import { closeAgent, get, post } from './http/http-helpers';

let triton: Triton;

afterEach(async () => {
  await triton?.stop();
});

afterAll(() => closeAgent());

const T = (name: string, dtype: 'FP32' | 'INT32' = 'FP32') => ({ name, dtype, shape: [2] });
const map = (f: (v: number) => number) => (requests: Request[]) =>
  requests.map((r) => ({ OUT: (r.data.IN.data as Float32Array).map(f) }));

/** plus1 and times3 (bound callables), and `pipe`: Y = (X + 1) × 3, also X + 1 as Z. */
function bindPipeline(t: Triton): void {
  t.bind({ modelName: 'plus1', inferFunc: map((v) => v + 1), inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  t.bind({ modelName: 'times3', inferFunc: map((v) => v * 3), inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  t.bind({
    modelName: 'boom', inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 },
    inferFunc: () => { throw new Error('the device caught fire'); },
  });
  t.bind({
    modelName: 'pipe', inputs: [T('X')], outputs: [T('Y'), T('Z')],
    config: {
      maxBatchSize: 8,
      ensembleScheduling: {
        step: [
          { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'Z' } },
          { modelName: 'times3', inputMap: { IN: 'Z' }, outputMap: { OUT: 'Y' } },
        ],
      },
    },
  });
  t.bind({
    modelName: 'broken', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 8, ensembleScheduling: { step: [{ modelName: 'boom', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }] } },
  });
}

const row = (...values: number[]): NDArray => new NDArray('FP32', [1, values.length], Float32Array.from(values));

test('in process: a bound ensemble over bound callables; statistics per ensemble and per step', async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  bindPipeline(triton);
  await triton.run();
  const out = await triton.infer('pipe', { X: row(1, 2) });
  expect(Array.from(out.Y.data as Float32Array)).toEqual([6, 9]);
  expect(Array.from(out.Z.data as Float32Array)).toEqual([2, 3]);
  const only = await triton.infer('pipe', { X: row(0, 0) }, { outputs: ['Y'] });
  expect(Object.keys(only)).toEqual(['Y']);
  await expectRejects(triton.infer('pipe', { X: row(0, 0) }, { outputs: ['NOPE'] }), 'INVALID_ARG', "unexpected inference output 'NOPE' for model 'pipe'");
  await expectRejects(triton.infer('pipe', {}), 'INVALID_ARG',
    "expected 1 inputs but got 0 inputs for model 'pipe'. Got input(s) [], but missing required input(s) ['X']. Please provide all required input(s).");
  await expectRejects(triton.infer('pipe', { X: row(0, 0), W: row(0, 0) }), 'INVALID_ARG', "unexpected inference input 'W' for model 'pipe'");
  // The three refused requests count nowhere, as in Triton (its checks run before any statistics).
  expect(triton.model('pipe').stats()).toMatchObject({ success: { count: 2 }, fail: { count: 0 }, inferenceCount: 2 });
  expect(triton.model('times3').stats().success.count).toBe(2);
  await expectRejects(triton.infer('broken', { X: row(0, 0) }), 'INTERNAL', /in ensemble 'broken', step 1 \(model 'boom'\) failed: .*the device caught fire/);
});

test("an ensemble's request is checked against the ensemble's own config, in the words a plain model uses", async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  bindPipeline(triton);
  // `narrow` accepts fewer rows than its step; `twin` is a plain model with the same inputs.
  const narrow = { inputs: [T('X')], outputs: [T('Y')], config: { maxBatchSize: 2 } };
  triton.bind({ modelName: 'twin', inferFunc: map((v) => v), ...narrow });
  triton.bind({ modelName: 'narrow', ...narrow, config: { ...narrow.config, ensembleScheduling: { step: [
    { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } },
  ] } } });
  await triton.run();
  const f32 = (shape: number[]): NDArray => new NDArray('FP32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)));
  const refusals: [string, Record<string, NDArray>, RegExp][] = [
    ['batch 5', { X: f32([5, 2]) }, /^inference request batch-size must be <= 2 for 'narrow', got 5$/],
    ['batch 0', { X: f32([0, 2]) }, /^inference request batch-size must be >= 1 for model 'narrow'$/],
    ['shape', { X: f32([1, 3]) }, /^unexpected shape for input 'X' for model 'narrow'. Expected \[-1,2\], got \[1,3\]$/],
    ['one sample', { X: f32([2]) }, /got \[2\] \(one sample without the batch dimension: give it shape \[1,2\]\)$/],
    ['scalar', { X: f32([]) }, /missing the batch dimension, expected \[-1,2\]$/],
    ['datatype', { X: new NDArray('INT32', [1, 2], new Int32Array(2)) }, /^unexpected datatype INT32 for input 'X' for model 'narrow', expected FP32$/],
    ['missing', {}, /^expected 1 inputs but got 0 inputs for model 'narrow'\. Got input\(s\) \[\], but missing required input\(s\) \['X'\]\. Please provide all required input\(s\)\.$/],
  ];
  for (const [what, inputs, message] of refusals) {
    const ensembleError = await triton.infer('narrow', inputs).then(() => null, (err: Error & { code: string }) => err);
    const plainError = await triton.infer('twin', inputs).then(() => null, (err: Error & { code: string }) => err);
    expect([what, ensembleError?.code, ensembleError?.message]).toEqual([what, 'INVALID_ARG', expect.stringMatching(message)]);
    expect([what, ensembleError?.message]).toEqual([what, plainError?.message.replaceAll("'twin'", "'narrow'")]);
  }
  expect(triton.model('plus1').stats().success.count).toBe(0);
  // Triton's load check: a step may not allow fewer rows than the ensemble (ensemble_utils.cc).
  expectThrows(() => triton.bind({
    modelName: 'wide', inputs: [T('X')], outputs: [T('Y')], config: { maxBatchSize: 16, ensembleScheduling: { step: [
      { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } },
    ] } },
  }), 'INVALID_ARG', /^ensemble wide allows maximum batch size 16, but it contains model plus1 which only allows maximum batch size to be 8 \(at step 1\)/);
});

test('a request that asks for some outputs runs only the steps they depend on (Triton prunes the rest)', async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  bindPipeline(triton);
  let boomRuns = 0;
  triton.bind({
    modelName: 'boom_counted', inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 },
    inferFunc: () => { boomRuns++; throw new Error('the unwanted branch failed'); },
  });
  // pipe's chain (Y = times3(plus1(X)), Z = plus1(X)) beside a failing branch W.
  triton.bind({
    modelName: 'branches', inputs: [T('X')], outputs: [T('Y'), T('Z'), T('W')],
    config: { maxBatchSize: 8, ensembleScheduling: { step: [
      { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'Z' } },
      { modelName: 'times3', inputMap: { IN: 'Z' }, outputMap: { OUT: 'Y' } },
      { modelName: 'boom_counted', inputMap: { IN: 'X' }, outputMap: { OUT: 'W' } },
    ] } },
  });
  await triton.run();
  const runs = (): number[] => [triton.model('plus1').stats().success.count, triton.model('times3').stats().success.count, boomRuns];
  const y = await triton.infer('branches', { X: row(1, 2) }, { outputs: ['Y'] });  // needs plus1 then times3
  expect([Object.keys(y), Array.from(y.Y.data as Float32Array)]).toEqual([['Y'], [6, 9]]);
  expect(runs()).toEqual([1, 1, 0]);
  const z = await triton.infer('branches', { X: row(1, 2) }, { outputs: ['Z'] });  // plus1 only
  expect(Array.from(z.Z.data as Float32Array)).toEqual([2, 3]);
  expect(runs()).toEqual([2, 1, 0]);
  await expectRejects(triton.infer('branches', { X: row(1, 2) }), 'INTERNAL', /step 3 \(model 'boom_counted'\) failed: .*the unwanted branch failed/);
  expect(boomRuns).toBe(1);
});

test('bind-time DAG errors name the step and the tensor', () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  triton.bind({ modelName: 'plus1', inferFunc: map((v) => v + 1), inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  const bindEnsemble = (step: { modelName: string; inputMap: Record<string, string>; outputMap: Record<string, string> }[], inputs = [T('X')]) =>
    triton.bind({ modelName: 'e', inputs, outputs: [T('Y')], config: { maxBatchSize: 8, ensembleScheduling: { step } } });
  expect(() => bindEnsemble([{ modelName: 'ghost', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }]))
    .toThrow(/ensemble 'e': step 1 \(model 'ghost'\): the step model is not available/);
  expect(() => bindEnsemble([{ modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }], [T('X', 'INT32')]))
    .toThrow(/ensemble tensor 'X': ensemble input 'X' has datatype INT32, but input 'IN' of step 1 \(model 'plus1'\) expects FP32/);
  expect(() => triton.bind({ modelName: 'e', inferFunc: map((v) => v), inputs: [T('X')], outputs: [T('Y')],
    config: { ensembleScheduling: { step: [{ modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }] } } }))
    .toThrow(/an ensemble has no inferFunc/);
});

test('HTTP: infer, metadata, config and statistics of a bound ensemble; a failing step named', async () => {
  triton = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  bindPipeline(triton);
  await triton.run();
  const port = triton.ports.http!;
  const infer = await post(port, '/v2/models/pipe/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] });
  expect(infer.status).toBe(200);
  expect(infer.json()).toMatchObject({
    model_name: 'pipe', outputs: [{ name: 'Y', datatype: 'FP32', shape: [1, 2], data: [6, 9] }, { name: 'Z', data: [2, 3] }],
  });
  expect((await get(port, '/v2/models/pipe')).json()).toMatchObject({ name: 'pipe', platform: 'ensemble' });
  expect((await get(port, '/v2/models/pipe/ready')).status).toBe(200);
  const config = (await get(port, '/v2/models/pipe/config')).json() as Record<string, any>;
  expect(config.platform).toBe('ensemble');
  expect(config.ensemble_scheduling.step).toEqual([
    expect.objectContaining({ model_name: 'plus1', model_version: -1, input_map: { IN: 'X' }, output_map: { OUT: 'Z' } }),
    expect.objectContaining({ model_name: 'times3', input_map: { IN: 'Z' }, output_map: { OUT: 'Y' } }),
  ]);
  const stats = (await get(port, '/v2/models/pipe/stats')).json() as { model_stats: Record<string, any>[] };
  expect(stats.model_stats[0]).toMatchObject({ name: 'pipe', inference_count: 1, inference_stats: { success: { count: 1 } } });
  const stepStats = (await get(port, '/v2/models/times3/stats')).json() as { model_stats: Record<string, any>[] };
  expect(stepStats.model_stats[0].inference_stats.success.count).toBe(1);
  const failed = await post(port, '/v2/models/broken/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] });
  expect(failed.status).toBe(500);
  expect((failed.json() as { error: string }).error).toMatch(/in ensemble 'broken', step 1 \(model 'boom'\) failed/);
});

test('gRPC: ModelInfer and ModelMetadata of a bound ensemble; a failing step named', async () => {
  triton = new Triton({ config: { grpcAddress: '127.0.0.1', grpcPort: 0, allowHttp: false, allowMetrics: false, logInfo: false } });
  bindPipeline(triton);
  await triton.run();
  const stub = rawStub(triton.ports.grpc!);
  try {
    const r = await ok(stub, 'ModelInfer', {
      model_name: 'pipe', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32Bytes([1, 2])],
      outputs: [{ name: 'Y' }],
    });
    expect(r.raw_output_contents).toEqual([fp32Bytes([6, 9])]);
    expect(await ok(stub, 'ModelMetadata', { name: 'pipe' })).toMatchObject({ name: 'pipe', platform: 'ensemble' });
    const { config } = await ok(stub, 'ModelConfig', { name: 'pipe' }) as { config: Record<string, any> };
    expect(config.platform).toBe('ensemble');
    expect(config.ensemble_scheduling.step.map((s: { model_name: string; input_map: object }) => [s.model_name, s.input_map]))
      .toEqual([['plus1', { IN: 'X' }], ['times3', { IN: 'Z' }]]);
    await fails(stub, 'ModelInfer', {
      model_name: 'broken', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32Bytes([1, 2])],
    }, status.INTERNAL, /in ensemble 'broken', step 1 \(model 'boom'\) failed/);
  } finally {
    stub.close();
  }
});

test('an ensemble can be a step of another ensemble', async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  bindPipeline(triton);
  triton.bind({
    modelName: 'outer', inputs: [T('A')], outputs: [T('B')],
    config: {
      maxBatchSize: 8,
      ensembleScheduling: { step: [
        { modelName: 'pipe', inputMap: { X: 'A' }, outputMap: { Y: 'mid' } },
        { modelName: 'plus1', inputMap: { IN: 'mid' }, outputMap: { OUT: 'B' } },
      ] },
    },
  });
  await triton.run();
  expect(Array.from((await triton.infer('outer', { A: row(1, 2) })).B.data as Float32Array)).toEqual([7, 10]);
});

test("a step that answers without a mapped output: the ensemble's response leaves it out, as Triton's does (with or without the response cache)", async () => {
  for (const cache of [false, true]) {
    triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false, ...(cache ? { cacheConfig: ['local,size=1048576'] } : {}) } });
    // Declares OUT and AUX, answers with OUT only (a non-strict model may).
    triton.bind({
      modelName: 'partial', inputs: [T('IN')], outputs: [T('OUT'), T('AUX')], config: { maxBatchSize: 8 },
      inferFunc: (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN })),
    });
    triton.bind({
      modelName: 'ens', inputs: [T('X')], outputs: [T('Y'), T('Z')],
      config: { maxBatchSize: 8, responseCache: cache, ensembleScheduling: { step: [
        { modelName: 'partial', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y', AUX: 'Z' } },
      ] } },
    });
    await triton.run();
    for (let i = 0; i < 2; i++) {  // with the cache, the second is a hit
      const out = await triton.infer('ens', { X: row(1, 2) });
      expect(Object.keys(out)).toEqual(['Y']);
      expect(Array.from(out.Y.data as Float32Array)).toEqual([1, 2]);
    }
    const stats = triton.model('ens').stats();
    expect([stats.success.count, stats.fail.count, stats.cacheHit.count]).toEqual([2, 0, cache ? 1 : 0]);
    await triton.stop();
  }
});

test('maxInflightRequests bounds the requests in flight at a step; the rest wait in the ensemble', async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => { release = resolve; });
  let executions = 0;
  triton.bind({
    modelName: 'held', inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 },
    inferFunc: async (requests: Request[]) => {
      executions++;
      await released;
      return requests.map((r) => ({ OUT: r.data.IN }));
    },
  });
  triton.bind({
    modelName: 'bounded', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 8, ensembleScheduling: { step: [{ modelName: 'held', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }], maxInflightRequests: 1 } },
  });
  await triton.run();
  const results = [triton.infer('bounded', { X: row(1, 1) }), triton.infer('bounded', { X: row(2, 2) })];
  for (const r of results) r.catch(() => undefined);  // a failed expectation below must not leave them unhandled
  await waitFor(() => executions === 1, 'the first step request to execute');
  expect(triton.model('held').pendingCount).toBe(1);
  expect(triton.model('bounded').pendingCount).toBe(2);
  release();
  const outs = await Promise.all(results);
  expect(outs.map((o) => Array.from(o.Y.data as Float32Array))).toEqual([[1, 1], [2, 2]]);
  expect(executions).toBe(2);
});

/**
 * `chain` = `slow` (held until `release()`; `started()` counts its executions) then `plus1`:
 * an ensemble with a request in flight at its first step, for as long as the test wants.
 */
async function heldChain(): Promise<{ started: () => number; release: () => void }> {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  let executions = 0;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => { release = resolve; });
  triton.bind({
    modelName: 'slow', inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 },
    inferFunc: async (requests: Request[]) => {
      executions++;
      await released;
      return requests.map((r) => ({ OUT: r.data.IN }));
    },
  });
  triton.bind({ modelName: 'plus1', inferFunc: map((v) => v + 1), inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  triton.bind({
    modelName: 'chain', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 8, ensembleScheduling: { step: [
      { modelName: 'slow', inputMap: { IN: 'X' }, outputMap: { OUT: 'a' } },
      { modelName: 'plus1', inputMap: { IN: 'a' }, outputMap: { OUT: 'Y' } },
    ] } },
  });
  await triton.run();
  return { started: () => executions, release };
}

test('cancelling an ensemble request cancels its step in flight and starts no more', async () => {
  const { started, release } = await heldChain();
  const controller = new AbortController();
  const result = triton.infer('chain', { X: row(1, 1) }, { signal: controller.signal });
  await waitFor(() => started() === 1, 'the first step to execute');
  controller.abort();
  await expectRejects(result, 'CANCELLED');
  release();
  await waitFor(() => triton.model('slow').pendingCount === 0, 'the first step to finish');
  expect(triton.model('plus1').stats().success.count + triton.model('plus1').stats().fail.count).toBe(0);
});

test('a signal aborted before the request: CANCELLED and no step runs, as for a plain model', async () => {
  const { started } = await heldChain();
  await expectRejects(triton.infer('chain', { X: row(1, 1) }, { signal: AbortSignal.abort() }), 'CANCELLED', "request for model 'chain' was cancelled");
  expect(started()).toBe(0);
  expect(triton.model('chain').stats().fail.count).toBe(1);
});

test("a request's abort listener leaves the caller's signal when the request settles (a long-lived signal shared by many requests)", async () => {
  const { release } = await heldChain();
  release();
  const shared = new AbortController();
  for (let i = 0; i < 5; i++) await triton.infer('chain', { X: row(i, i) }, { signal: shared.signal });
  await expectRejects(triton.infer('chain', { X: row(0, 0), W: row(0, 0) }, { signal: shared.signal }), 'INVALID_ARG');
  // Step requests carry the request's own signal, never the caller's: nothing else listens to it.
  expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
});

test('metrics: the ensemble and its steps each count their requests', async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, metricsPort: 0, metricsAddress: '127.0.0.1', logInfo: false } });
  bindPipeline(triton);
  await triton.run();
  await triton.infer('pipe', { X: row(1, 2) });
  const text = (await get(triton.ports.metrics!, '/metrics')).body.toString();
  expect(text).toMatch(/nv_inference_request_success\{model="pipe",version="1"\} 1/);
  expect(text).toMatch(/nv_inference_request_success\{model="times3",version="1"\} 1/);
});

test("a failed ensemble request counts with Triton's reason OTHER, in statistics and metrics; the failing step keeps its own", async () => {
  triton = new Triton({ config: { allowHttp: false, allowGrpc: false, metricsPort: 0, metricsAddress: '127.0.0.1', logInfo: false } });
  bindPipeline(triton);
  await triton.run();
  await expectRejects(triton.infer('broken', { X: row(1, 2) }), 'INTERNAL');
  await expectRejects(triton.infer('broken', { X: row(1, 2) }, { signal: AbortSignal.abort() }), 'CANCELLED');
  expect(triton.model('broken').stats().failures).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 2 });
  expect(triton.model('boom').stats().failures).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 1, OTHER: 0 });
  const text = (await get(triton.ports.metrics!, '/metrics')).body.toString();
  const failures = text.split('\n').filter((line) => line.startsWith('nv_inference_request_failure{model="broken"'));
  expect(failures).toContainEqual(expect.stringMatching(/reason="OTHER".* 2$/));
  expect(failures).toContainEqual(expect.stringMatching(/reason="BACKEND".* 0$/));
});

/**
 * The failure counts of a model: its statistics' reasons and its nv_inference_request_failure
 * lines (reason and value).
 */
async function failureCounts(model: string): Promise<{ stats: Record<string, number>; metrics: string[] }> {
  const text = (await get(triton.ports.metrics!, '/metrics')).body.toString();
  const metrics = text.split('\n').filter((line) => line.startsWith(`nv_inference_request_failure{model="${model}"`))
    .map((line) => `${/reason="(\w+)"/.exec(line)![1]} ${line.split(' ').pop()}`).sort();
  return { stats: { ...triton.model(model).stats().failures }, metrics };
}

test('a request refused at its checks counts nowhere, infer() and inferStream() alike, in process and over gRPC, as in Triton; ' +
  'one failing in a step counts once on either path', async () => {
  triton = new Triton({ config: {
    allowHttp: false, grpcAddress: '127.0.0.1', grpcPort: 0, metricsPort: 0, metricsAddress: '127.0.0.1', logInfo: false,
  } });
  bindPipeline(triton);
  // `repeat` (decoupled) answers its input twice, and fails on a negative one; `echoes` streams it.
  async function* repeat(requests: Request[]): AsyncGenerator<{ OUT: NDArray }[]> {
    const input = requests[0].data.IN;
    if ((input.data as Float32Array)[0] < 0) throw new Error('a negative input');
    for (let k = 0; k < 2; k++) yield [{ OUT: input }];
  }
  triton.bind({ modelName: 'repeat', inferFunc: repeat as never, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 1, decoupled: true } });
  triton.bind({
    modelName: 'echoes', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 1, ensembleScheduling: { step: [{ modelName: 'repeat', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }] } },
  });
  await triton.run();
  const client = new GrpcInferenceServerClient(`127.0.0.1:${triton.ports.grpc}`);
  const drain = async (responses: AsyncIterable<unknown>): Promise<number> => {
    let n = 0;
    for await (const _ of responses) n++;
    return n;
  };
  try {
    const refused: [string, Record<string, NDArray>, RegExp][] = [
      ['missing', {}, /missing required input\(s\) \['X'\]/],
      ['datatype', { X: new NDArray('INT32', [1, 2], new Int32Array(2)) }, /unexpected datatype INT32 for input 'X'/],
      ['shape', { X: row(1, 2, 3) }, /unexpected shape for input 'X'/],
      ['unexpected', { X: row(1, 2), W: row(1, 2) }, /unexpected inference input 'W'/],
    ];
    for (const [, inputs, message] of refused) {
      await expectRejects(triton.infer('pipe', inputs), 'INVALID_ARG', message);
      await expectRejects(drain(triton.inferStream('echoes', inputs)), 'INVALID_ARG', message);
      await expectRejects(client.infer({ modelName: 'pipe', inputs }), 'INVALID_ARG', message);
      await expectRejects(drain(client.streamInfer({ modelName: 'pipe', inputs })), 'INVALID_ARG', message);
      await expectRejects(drain(client.streamInfer({ modelName: 'echoes', inputs })), 'INVALID_ARG', message);
    }
    const none = { stats: { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 }, metrics: ['BACKEND 0', 'CANCELED 0', 'OTHER 0', 'REJECTED 0'] };
    expect(await failureCounts('pipe')).toEqual(none);
    expect(await failureCounts('echoes')).toEqual(none);
    // Past the checks, a failing step fails the request: counted once (reason OTHER), whichever path.
    expect(await drain(triton.inferStream('echoes', { X: row(1, 2) }))).toBe(2);
    await expectRejects(triton.infer('broken', { X: row(1, 2) }), 'INTERNAL', /step 1 \(model 'boom'\) failed/);
    await expectRejects(client.infer({ modelName: 'broken', inputs: { X: row(1, 2) } }), 'INTERNAL', /step 1 \(model 'boom'\) failed/);
    await expectRejects(drain(triton.inferStream('echoes', { X: row(-1, 2) })), 'INTERNAL', /step 1 \(model 'repeat'\) failed/);
    await expectRejects(drain(client.streamInfer({ modelName: 'echoes', inputs: { X: row(-1, 2) } })), 'INTERNAL', /step 1 \(model 'repeat'\) failed/);
    const two = { stats: { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 2 }, metrics: ['BACKEND 0', 'CANCELED 0', 'OTHER 2', 'REJECTED 0'] };
    expect(await failureCounts('broken')).toEqual(two);
    expect(await failureCounts('echoes')).toEqual(two);
    expect(triton.model('echoes').stats().success.count).toBe(1);
  } finally {
    await client.close();
  }
});

test("HTTP and gRPC: an ensemble's step request batches with a direct request to the step model", async () => {
  triton = new Triton({ config: {
    httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false, logInfo: false,
  } });
  // A batch of 2 goes at once; a lone request would wait the (long) queue delay, then run alone.
  triton.bind({
    modelName: 'plus1', inferFunc: map((v) => v + 1), inputs: [T('IN')], outputs: [T('OUT')],
    config: { maxBatchSize: 8, batcher: { preferredBatchSize: [2], maxQueueDelayMicroseconds: 5_000_000 } },
  });
  triton.bind({ modelName: 'times3', inferFunc: map((v) => v * 3), inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  triton.bind({
    modelName: 'pipe', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 8, ensembleScheduling: { step: [
      { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'a' } },
      { modelName: 'times3', inputMap: { IN: 'a' }, outputMap: { OUT: 'Y' } },
    ] } },
  });
  await triton.run();
  const stub = rawStub(triton.ports.grpc!);
  try {
    const [viaEnsemble, direct] = await Promise.all([
      post(triton.ports.http!, '/v2/models/pipe/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] }),
      ok(stub, 'ModelInfer', {
        model_name: 'plus1', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32Bytes([10, 20])],
      }),
    ]);
    expect(viaEnsemble.json()).toMatchObject({ outputs: [{ name: 'Y', data: [6, 9] }] });
    expect(direct.raw_output_contents).toEqual([fp32Bytes([11, 21])]);
    expect(triton.model('plus1').stats().batchStats.map((b) => [b.batchSize, b.computeInfer.count])).toEqual([[2, 1]]);
  } finally {
    stub.close();
  }
});

test('stop() lets an ensemble request in flight finish its later steps before the step models stop', async () => {
  const { started, release } = await heldChain();
  const result = triton.infer('chain', { X: row(1, 2) });
  result.catch(() => undefined);
  await waitFor(() => started() === 1, 'the first step to execute');
  const stopped = triton.stop();
  release();
  expect(Array.from((await result).Y.data as Float32Array)).toEqual([2, 3]);
  await stopped;
});
