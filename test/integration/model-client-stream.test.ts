/**
 * ModelClient streaming (issue 9; PyTriton's DecoupledModelClient): inferSampleStream and
 * inferBatchStream over grpc:// (and http://) against a real server on loopback, with the batch axis added and
 * stripped for samples, parameters reaching the model, AbortSignal cancelling the model's
 * generator, a non-decoupled model answering once, the refusals (inferSample on a decoupled
 * model, inferBatchStream on a non-batching one), and the same over http:// through generate_stream.
 */
import { ModelDoesntSupportBatchingError } from '../../ts/client/errors';
import { ModelClient } from '../../ts/client/model-client';
import { InferenceServerError } from '../../ts/errors';
import type { Request } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import { expectRejects, waitFor } from './helpers';
import { identity, serve, type Served } from './grpc/helpers';

const f32 = (shape: number[], ...values: number[]): NDArray => new NDArray('FP32', shape, Float32Array.from(values));

/** Per request: IN's first value n → n responses, OUT = IN + step (IN's shape kept), plus the `offset` parameter. */
function* counting(requests: Request[]): Generator<({ OUT: NDArray } | null)[]> {
  const counts = requests.map((r) => (r.data.IN.data as Float32Array)[0]);
  for (let step = 0; step < Math.max(0, ...counts); step++) {
    yield requests.map((r, i) => {
      if (step >= counts[i]) return null;
      const offset = Number(r.parameters.offset ?? 0);
      return { OUT: new NDArray('FP32', r.data.IN.shape, (r.data.IN.data as Float32Array).map((v) => v + step + offset)) };
    });
  }
}

let stoppedGenerators = 0;
async function* endless(requests: Request[]): AsyncGenerator<{ OUT: NDArray }[]> {
  try {
    for (let k = 0; ; k++) {
      await new Promise((resolve) => setImmediate(resolve));
      yield requests.map((r) => ({ OUT: r.data.IN }));
    }
  } finally {
    stoppedGenerators++;
  }
}

const IN = { name: 'IN', dtype: 'FP32' as const, shape: [-1] };
const OUT = { name: 'OUT', dtype: 'FP32' as const, shape: [-1] };

function bindModels(t: Triton): void {
  t.bind({ modelName: 'counter', inferFunc: counting as never, inputs: [IN], outputs: [OUT], config: { decoupled: true, maxBatchSize: 8 } });
  t.bind({ modelName: 'counter_nobatch', inferFunc: counting as never, inputs: [IN], outputs: [OUT], config: { decoupled: true, batching: false } });
  t.bind({ modelName: 'endless', inferFunc: endless as never, inputs: [IN], outputs: [OUT], config: { decoupled: true, maxBatchSize: 8 } });
  t.bind({ modelName: 'plain', inferFunc: identity, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 8 } });
}

let s: Served;
beforeAll(async () => {
  s = await serve(bindModels);
});
afterAll(() => s.close());

const clients: ModelClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function modelClient(model: string, url = `grpc://127.0.0.1:${s.port}`): ModelClient {
  const c = new ModelClient(url, model, undefined, { initTimeoutS: 10 });
  clients.push(c);
  return c;
}

async function collect(stream: AsyncIterable<Record<string, NDArray>>): Promise<{ shape: number[]; values: number[] }[]> {
  const out: { shape: number[]; values: number[] }[] = [];
  for await (const { OUT: o } of stream) out.push({ shape: o.shape, values: [...(o.data as Float32Array)] });
  return out;
}

test('inferSampleStream: the batch axis is added for the model and stripped from every response', async () => {
  const c = modelClient('counter');
  expect(await collect(c.inferSampleStream({ IN: new Float32Array([3, 5]) }))).toEqual([
    { shape: [2], values: [3, 5] }, { shape: [2], values: [4, 6] }, { shape: [2], values: [5, 7] },
  ]);
  // Inputs by position, parameters reaching the model; none and one response.
  expect(await collect(c.inferSampleStream([new Float32Array([1])], { parameters: { offset: 10 } }))).toEqual([{ shape: [1], values: [11] }]);
  expect(await collect(c.inferSampleStream({ IN: new Float32Array([0]) }))).toEqual([]);
  // A non-batching model gets the sample as it is.
  expect(await collect(modelClient('counter_nobatch').inferSampleStream({ IN: new Float32Array([2]) }))).toEqual([
    { shape: [1], values: [2] }, { shape: [1], values: [3] },
  ]);
});

test('inferBatchStream: inputs and outputs keep their batch axis; a non-batching model is refused', async () => {
  expect(await collect(modelClient('counter').inferBatchStream({ IN: f32([1, 2], 2, 9) }))).toEqual([
    { shape: [1, 2], values: [2, 9] }, { shape: [1, 2], values: [3, 10] },
  ]);
  const err = await expectRejects(modelClient('counter_nobatch').inferBatchStream({ IN: f32([1], 1) }).next(), 'UNSUPPORTED',
    "model 'counter_nobatch' does not support batching (max_batch_size is 0): use inferSampleStream");
  expect(err).toBeInstanceOf(ModelDoesntSupportBatchingError);
});

test('aborting the signal mid-stream cancels the request: the generator stops (failures.CANCELED)', async () => {
  const controller = new AbortController();
  let seen = 0;
  let caught: unknown;
  try {
    for await (const _ of modelClient('endless').inferSampleStream({ IN: new Float32Array([1]) }, { signal: controller.signal })) {
      if (++seen === 2) controller.abort();
    }
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(InferenceServerError);
  expect((caught as InferenceServerError).code).toBe('CANCELLED');
  const model = s.triton.model('endless');
  await waitFor(() => stoppedGenerators === 1 && model.stats().pending === 0, 'the generator to stop');
  expect(model.stats().failures.CANCELED).toBe(1);
});

test('a non-decoupled model through the streaming calls: one response, then the end', async () => {
  expect(await collect(modelClient('plain').inferSampleStream({ IN: new Float32Array([4, 2]) }))).toEqual([{ shape: [2], values: [4, 2] }]);
});

test('inferSample and inferBatch refuse a decoupled model, pointing at the streaming calls', async () => {
  const c = modelClient('counter');
  const text = "model 'counter' is decoupled (0..N responses per request): use a streaming call, inferSampleStream() or inferBatchStream()";
  await expectRejects(c.inferSample({ IN: new Float32Array([1]) }), 'UNSUPPORTED', text);
  await expectRejects(c.inferBatch({ IN: f32([1, 1], 1) }), 'UNSUPPORTED', text);
});

describe('over http:// (HTTP generate_stream)', () => {
  let http: Triton;
  beforeAll(async () => {
    http = new Triton({ config: { httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
    const IN2 = { name: 'IN', dtype: 'FP32' as const, shape: [2] };
    const OUT2 = { name: 'OUT', dtype: 'FP32' as const, shape: [2] };
    http.bind({ modelName: 'counter', inferFunc: counting as never, inputs: [IN2], outputs: [OUT2], config: { decoupled: true, maxBatchSize: 8 } });
    http.bind({ modelName: 'endless', inferFunc: endless as never, inputs: [IN2], outputs: [OUT2], config: { decoupled: true, maxBatchSize: 8 } });
    await http.run();
  });
  afterAll(() => http.stop());
  const url = (): string => `http://127.0.0.1:${http.ports.http}`;

  test('inferSampleStream: generate\'s JSON values in, NDArrays of the config\'s dtype and dims out', async () => {
    const c = modelClient('counter', url());
    expect(await collect(c.inferSampleStream({ IN: new Float32Array([3, 5]) }))).toEqual([
      { shape: [2], values: [3, 5] }, { shape: [2], values: [4, 6] }, { shape: [2], values: [5, 7] },
    ]);
    expect(await collect(c.inferSampleStream({ IN: new Float32Array([1, 0]) }, { parameters: { offset: 10 } })))
      .toEqual([{ shape: [2], values: [11, 10] }]);
  });

  test('inferBatchStream: rows come back with their batch axis', async () => {
    const c = modelClient('counter', url());
    expect(await collect(c.inferBatchStream({ IN: f32([2, 2], 2, 0, 7, 8) }))).toEqual([
      { shape: [2, 2], values: [2, 0, 7, 8] }, { shape: [2, 2], values: [3, 1, 8, 9] },
    ]);
  });

  test('an AbortSignal closes the stream: the server stops the model\'s generator', async () => {
    const c = modelClient('endless', url());
    const before = stoppedGenerators;
    const controller = new AbortController();
    let seen = 0;
    await expect((async () => {
      for await (const _ of c.inferSampleStream({ IN: new Float32Array([1, 2]) }, { signal: controller.signal })) {
        if (++seen === 3) controller.abort();
      }
    })()).rejects.toThrow();
    await waitFor(() => stoppedGenerators === before + 1 && http.model('endless').stats().pending === 0, 'the generator to stop');
    expect(http.model('endless').stats().failures.CANCELED).toBe(1);
  });

  test('FP16 cannot travel as generate\'s JSON: refused before the call, pointing at grpc://', async () => {
    const c = modelClient('counter', url());
    await expect(c.inferSampleStream({ IN: new NDArray('FP16', [2], new Uint16Array(2)) }).next())
      .rejects.toThrow("input 'IN' is FP16, which generate's JSON cannot carry: stream over a grpc:// URL");
  });
});

test('an unknown model is waited for until initTimeoutS, as inferSample does; the timeout says the server\'s index does not list it', async () => {
  // 1 s: the reason needs one whole check (connecting, then four calls) in time.
  const c = new ModelClient(`grpc://127.0.0.1:${s.port}`, 'nope', undefined, { initTimeoutS: 1 });
  clients.push(c);
  await expect(c.inferSampleStream({ IN: new Float32Array([1]) }).next()).rejects.toThrow(
    /waiting for model 'nope' at .* to be ready took longer than 1 s: the server's model repository does not list it/);
});
