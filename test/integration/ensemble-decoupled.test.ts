/**
 * Ensembles with a decoupled step (issue 10), bound in code and served in process and over HTTP
 * generate_stream: the ensemble becomes decoupled (as Triton sets it), plain steps before the
 * decoupled one run once, each of its responses runs the steps after it on its own and becomes
 * one response of the ensemble; infer() is refused; a failing decoupled step is named; leaving
 * early stops the step's generator; Triton's load error for a step fed by two decoupled steps;
 * no response cache on such an ensemble.
 */
import { getEventListeners } from 'node:events';
import * as http from 'node:http';
import type { Request, ResponseOutputs } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import { expectRejects, expectThrows, fp32, inProcessTriton, waitFor } from './helpers';

let triton: Triton;

afterEach(async () => {
  await triton.stop();
});

const T = (name: string) => ({ name, dtype: 'FP32' as const, shape: [1] });
const valueOf = (arr: NDArray): number => Number(arr.data[0]);

/** Counts generator runs and finished generators: leaving early must run the generator's finally. */
const events = { started: 0, finished: 0 };

/** plus1 (plain) → count (decoupled: N = IN responses, 0..N-1 each plus IN) → times10 (plain). */
function bindPipeline(t: Triton, extra: { failAt?: number } = {}): void {
  const plus1 = (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({ OUT: new Float32Array([valueOf(r.data.IN) + 1]) }));
  const times10 = (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({ OUT: new Float32Array([valueOf(r.data.IN) * 10]) }));
  async function* count(requests: Request[]): AsyncGenerator<ResponseOutputs[]> {
    events.started++;
    try {
      const n = valueOf(requests[0].data.IN);
      for (let k = 0; k < n; k++) {
        if (k === extra.failAt) throw new Error(`count failed at ${k}`);
        await new Promise((resolve) => setImmediate(resolve));
        yield [{ OUT: new Float32Array([n + k]) }];
      }
    } finally {
      events.finished++;
    }
  }
  t.bind({ modelName: 'plus1', inferFunc: plus1, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  t.bind({ modelName: 'times10', inferFunc: times10, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  t.bind({
    modelName: 'count', inferFunc: count as never, inputs: [T('IN')], outputs: [T('OUT')],
    config: { maxBatchSize: 1, decoupled: true },
  });
  t.bind({
    modelName: 'fan_out', inputs: [T('X')], outputs: [T('Y')],
    config: {
      maxBatchSize: 1,  // no more than its step count allows (Triton's load check)
      ensembleScheduling: {
        step: [
          { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'N' } },
          { modelName: 'count', inputMap: { IN: 'N' }, outputMap: { OUT: 'C' } },
          { modelName: 'times10', inputMap: { IN: 'C' }, outputMap: { OUT: 'Y' } },
        ],
      },
    },
  });
}

beforeEach(() => {
  events.started = 0;
  events.finished = 0;
});

test('each response of the decoupled step runs the steps after it and is one response of the ensemble', async () => {
  triton = inProcessTriton();
  bindPipeline(triton);
  await triton.run();
  expect(triton.model('fan_out').config.decoupled).toBe(true);
  const got: number[] = [];
  for await (const r of triton.inferStream('fan_out', { X: fp32(2) })) got.push(valueOf(r.Y));
  // N = 3 (plus1 ran once), count yields 3, 4, 5, times10 ran per response.
  expect(got.sort((a, b) => a - b)).toEqual([30, 40, 50]);
  expect(triton.model('plus1').stats().inferenceCount).toBe(1);
  expect(triton.model('times10').stats().inferenceCount).toBe(3);
  await expectRejects(triton.infer('fan_out', { X: fp32(2) }), 'UNSUPPORTED', /decoupled/);
  expect(triton.model('fan_out').stats().success.count).toBe(1);
  // As in Triton, the ensemble request's compute times are its step requests' own, summed: the
  // decoupled step's once it ended, and each continuation's times10 request.
  const ensemble = triton.model('fan_out').stats();
  for (const phase of ['computeInput', 'computeInfer', 'computeOutput'] as const) {
    const steps = ['plus1', 'count', 'times10'].reduce((sum, m) => sum + triton.model(m).stats()[phase].ns, 0);
    expect(ensemble[phase]).toMatchObject({ count: 1, ns: steps });
  }
  expect(ensemble.computeInfer.ns).toBeGreaterThan(0);
});

test('a decoupled step that fails mid-stream fails the ensemble request, naming the step', async () => {
  triton = inProcessTriton();
  bindPipeline(triton, { failAt: 1 });
  await triton.run();
  const got: number[] = [];
  const run = async (): Promise<void> => {
    for await (const r of triton.inferStream('fan_out', { X: fp32(2) })) got.push(valueOf(r.Y));
  };
  await expectRejects(run(), 'INTERNAL', /in ensemble 'fan_out', step 2 \(model 'count'\) failed: count failed at 1/);
  // The first response may or may not have made it through times10 before the failure ended the request.
  expect([[], [30]]).toContainEqual(got);
});

test('a step after the decoupled one that fails ends the request at once: no later response, the decoupled step stops', async () => {
  triton = inProcessTriton();
  let yielded = 0;
  async function* ticks(): AsyncGenerator<ResponseOutputs[]> {
    events.started++;
    try {
      for (let k = 0; k < 1000; k++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        yielded++;
        yield [{ OUT: new Float32Array([k]) }];
      }
    } finally {
      events.finished++;
    }
  }
  const check = (requests: Request[]): ResponseOutputs[] => requests.map((r) => {
    if (valueOf(r.data.IN) === 1) throw new Error('bad value 1');
    return { OUT: new Float32Array([valueOf(r.data.IN)]) };
  });
  triton.bind({ modelName: 'ticks', inferFunc: ticks as never, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 1, decoupled: true } });
  triton.bind({ modelName: 'check', inferFunc: check, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 1 } });
  triton.bind({
    modelName: 'checked', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 1, ensembleScheduling: { step: [
      { modelName: 'ticks', inputMap: { IN: 'X' }, outputMap: { OUT: 'G' } },
      { modelName: 'check', inputMap: { IN: 'G' }, outputMap: { OUT: 'Y' } },
    ] } },
  });
  await triton.run();
  const got: number[] = [];
  const run = async (): Promise<void> => {
    for await (const r of triton.inferStream('checked', { X: fp32(0) })) got.push(valueOf(r.Y));
  };
  await expectRejects(run(), 'INTERNAL', /in ensemble 'checked', step 2 \(model 'check'\) failed: .*bad value 1/);
  expect(got).toEqual([0]);
  await waitFor(() => events.finished === 1, 'the decoupled step to stop');
  expect(yielded).toBeLessThan(10);
  expect(triton.model('checked').stats().fail.count).toBe(1);
});

test('max_inflight_requests holds a fast decoupled step back: its generator runs at most a few responses ahead of a slow next step, and every response arrives', async () => {
  triton = inProcessTriton();
  let yielded = 0;
  let consumed = 0;
  let lead = 0;
  function* burst(requests: Request[]): Generator<ResponseOutputs[]> {
    for (let k = 0; k < 200; k++) {
      yielded++;
      lead = Math.max(lead, yielded - consumed);
      yield requests.map(() => ({ OUT: new Float32Array([k]) }));
    }
  }
  const slow = async (requests: Request[]): Promise<ResponseOutputs[]> => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    consumed += requests.length;
    return requests.map((r) => ({ OUT: new Float32Array([valueOf(r.data.IN)]) }));
  };
  triton.bind({ modelName: 'burst', inferFunc: burst as never, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 1, decoupled: true } });
  triton.bind({ modelName: 'slow', inferFunc: slow, inputs: [T('IN')], outputs: [T('OUT')], config: { maxBatchSize: 1 } });
  triton.bind({
    modelName: 'held', inputs: [T('X')], outputs: [T('Y')],
    config: { maxBatchSize: 1, ensembleScheduling: { maxInflightRequests: 2, step: [
      { modelName: 'burst', inputMap: { IN: 'X' }, outputMap: { OUT: 'G' } },
      { modelName: 'slow', inputMap: { IN: 'G' }, outputMap: { OUT: 'Y' } },
    ] } },
  });
  await triton.run();
  const got: number[] = [];
  for await (const r of triton.inferStream('held', { X: fp32(0) })) got.push(valueOf(r.Y));
  expect(got).toHaveLength(200);
  expect(new Set(got).size).toBe(200);
  // Two continuations running, two responses queued, one in hand: without the hold the
  // generator yields all 200 before the slow step has run once.
  expect(lead).toBeLessThanOrEqual(6);
});

test('a stopped decoupled ensemble refuses new streams, as a stopped model does, and runs no step', async () => {
  triton = inProcessTriton();
  bindPipeline(triton);
  await triton.run();
  const ensemble = triton.model('fan_out');
  await ensemble.stop();
  const stream = ensemble.inferStream({ X: fp32(2) });
  await expectRejects(stream.next(), 'UNAVAILABLE', "model 'fan_out' is not ready: it was stopped");
  expect(events.started).toBe(0);
});

test("leaving the ensemble's stream early stops the decoupled step's generator", async () => {
  triton = inProcessTriton();
  bindPipeline(triton);
  await triton.run();
  for await (const r of triton.inferStream('fan_out', { X: fp32(1000) })) {
    expect(valueOf(r.Y)).toBe(10010);  // N = 1001, count's first response 1001, times 10
    break;
  }
  await waitFor(() => events.finished === 1, 'the count generator to finish');
  await waitFor(() => triton.model('count').pendingCount === 0, 'the count request to end');
});

test('inferStream: a signal aborted before the request is CANCELLED with no step run; a settled request leaves no listener on the signal', async () => {
  triton = inProcessTriton();
  bindPipeline(triton);
  await triton.run();
  const drain = async (signal: AbortSignal): Promise<number> => {
    let n = 0;
    for await (const _ of triton.inferStream('fan_out', { X: fp32(1) }, { signal })) n++;
    return n;
  };
  await expectRejects(drain(AbortSignal.abort()), 'CANCELLED', "request for model 'fan_out' was cancelled");
  expect(triton.model('plus1').stats().success.count + events.started).toBe(0);
  const shared = new AbortController();
  for (let i = 0; i < 3; i++) expect(await drain(shared.signal)).toBe(2);
  expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
});

test('inferStream with some outputs: the steps after the decoupled one that feed only the others do not run', async () => {
  triton = inProcessTriton();
  bindPipeline(triton);
  triton.bind({
    modelName: 'fan_two', inputs: [T('X')], outputs: [T('Y'), T('Z')],
    config: { maxBatchSize: 1, ensembleScheduling: { step: [
      { modelName: 'count', inputMap: { IN: 'X' }, outputMap: { OUT: 'C' } },
      { modelName: 'times10', inputMap: { IN: 'C' }, outputMap: { OUT: 'Y' } },
      { modelName: 'plus1', inputMap: { IN: 'C' }, outputMap: { OUT: 'Z' } },
    ] } },
  });
  await triton.run();
  const got: string[][] = [];
  for await (const r of triton.inferStream('fan_two', { X: fp32(2) }, { outputs: ['Y'] })) got.push(Object.keys(r));
  expect(got).toEqual([['Y'], ['Y']]);
  expect(triton.model('times10').stats().inferenceCount).toBe(2);
  expect(triton.model('plus1').stats().inferenceCount).toBe(0);
});

test('over HTTP generate_stream: one event per ensemble response', async () => {
  triton = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  bindPipeline(triton);
  await triton.run();
  const body = await new Promise<string>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: triton.ports.http, method: 'POST', path: '/v2/models/fan_out/generate_stream' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ X: 1 }));
  });
  const events = body.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)) as { Y: number });
  expect(events.map((e) => e.Y).sort((a, b) => a - b)).toEqual([20, 30]);
});

test("a step fed by two different decoupled steps is Triton's load error; so is a response cache", () => {
  triton = inProcessTriton({ cacheConfig: ['local,size=65536'] });
  bindPipeline(triton);
  const add = (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({ OUT: new Float32Array([valueOf(r.data.A) + valueOf(r.data.B)]) }));
  triton.bind({ modelName: 'add', inferFunc: add, inputs: [T('A'), T('B')], outputs: [T('OUT')], config: { maxBatchSize: 8 } });
  expectThrows(() => triton.bind({
    modelName: 'two_origins', inputs: [T('X')], outputs: [T('Y')],
    config: {
      maxBatchSize: 1,
      ensembleScheduling: {
        step: [
          { modelName: 'count', inputMap: { IN: 'X' }, outputMap: { OUT: 'C1' } },
          { modelName: 'count', inputMap: { IN: 'X' }, outputMap: { OUT: 'C2' } },
          { modelName: 'add', inputMap: { A: 'C1', B: 'C2' }, outputMap: { OUT: 'Y' } },
        ],
      },
    },
  }), 'INVALID_ARG', /step 3 \(model 'add'\) receives inputs originated from different decoupled models/);
  // One response carries every output: outputs from two decoupled steps, or from one and from
  // the request's own steps, are the same error (Triton's sink node).
  const outputsFrom = (first: string, second: string): void => triton.bind({
    modelName: 'two_output_origins', inputs: [T('X')], outputs: [T('Y'), T('Z')],
    config: {
      maxBatchSize: 1,
      ensembleScheduling: {
        step: [
          { modelName: first, inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } },
          { modelName: second, inputMap: { IN: 'X' }, outputMap: { OUT: 'Z' } },
        ],
      },
    },
  });
  expectThrows(() => outputsFrom('count', 'count'), 'INVALID_ARG', new RegExp("the ensemble outputs originate from different decoupled models \\('Y' " +
    "from step 1 \\(model 'count'\\), 'Z' from step 2 \\(model 'count'\\)\\).*in ensemble two_output_origins, step of model " +
    "'two_output_origins' receives inputs originated from different decoupled models"));
  expectThrows(() => outputsFrom('count', 'plus1'), 'INVALID_ARG', /'Z' from the request \(no decoupled step\)/);
  expectThrows(() => triton.bind({
    modelName: 'cached_fan_out', inputs: [T('X')], outputs: [T('Y')],
    config: {
      maxBatchSize: 1, responseCache: true,
      ensembleScheduling: { step: [{ modelName: 'count', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }] },
    },
  }), 'INVALID_ARG', /response cache cannot be enabled for an ensemble with a decoupled step/);
});

test('an input entry set to undefined counts as absent: the request succeeds and counts one row, stream and infer() alike', async () => {
  // The ensemble read the batch size from the caller's first entry when the request succeeded:
  // an undefined one threw there, so infer() rejected with a TypeError after its steps ran, and
  // inferStream() left an unhandled rejection (the process ended) and a stream that never ended.
  triton = inProcessTriton();
  bindPipeline(triton);
  triton.bind({
    modelName: 'pipe', inputs: [T('X')], outputs: [T('Y')],
    config: {
      maxBatchSize: 8,
      ensembleScheduling: {
        step: [
          { modelName: 'plus1', inputMap: { IN: 'X' }, outputMap: { OUT: 'N' } },
          { modelName: 'times10', inputMap: { IN: 'N' }, outputMap: { OUT: 'Y' } },
        ],
      },
    },
  });
  await triton.run();
  const inputs = { ABSENT: undefined, X: fp32(2) } as unknown as Record<string, NDArray>;
  const got: number[] = [];
  for await (const r of triton.model('fan_out').inferStream(inputs)) got.push(valueOf(r.Y));
  expect(got.sort((a, b) => a - b)).toEqual([30, 40, 50]);
  expect(valueOf((await triton.model('pipe').infer(inputs)).Y)).toBe(30);
  for (const name of ['fan_out', 'pipe']) {
    const stats = triton.model(name).stats();
    expect({ name, success: stats.success.count, inferenceCount: stats.inferenceCount, batchSizes: stats.batchStats.map((b) => b.batchSize) })
      .toEqual({ name, success: 1, inferenceCount: 1, batchSizes: [1] });
  }
});
