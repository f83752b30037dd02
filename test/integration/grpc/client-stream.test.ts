/**
 * GrpcInferenceServerClient streaming (issue 9) against infernode's gRPC frontend on loopback:
 * streamInfer() over decoupled models (0, 1 and many responses, concurrent streams interleaving,
 * an error mid-stream, AbortSignal and leaving the loop cancelling the model's generator, a
 * response timeout), a non-decoupled model, an unknown model, the server stopping and the client
 * closing while a stream is open; tritonclient's startStream/asyncStreamInfer/stopStream; and the
 * README's streaming example, run as written.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ClientClosedError, ClientTimeoutError, type StreamResponseError } from '../../../ts/client/errors';
import { GrpcInferenceServerClient } from '../../../ts/client/grpc';
import { InferenceServerError } from '../../../ts/errors';
import * as infernode from '../../../ts/index';
import type { Request } from '../../../ts/request';
import { NDArray } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import type { ClientStreamResult } from '../../../ts/client/types';
import { expectRejects, waitFor } from '../helpers';
import { identity, serve, type Served } from './helpers';

const IN = { name: 'IN', dtype: 'FP32' as const, shape: [-1] };
const OUT = { name: 'OUT', dtype: 'FP32' as const, shape: [-1] };
const f32 = (...values: number[]): NDArray => new NDArray('FP32', [1, values.length], Float32Array.from(values));
const valueOf = (outputs: Record<string, NDArray>): number => (outputs.OUT.data as Float32Array)[0];

/** PyTriton's generator form: `n` responses for input n, value n × 10 + step. */
function* counting(requests: Request[]): Generator<({ OUT: NDArray } | null)[]> {
  const counts = requests.map((r) => (r.data.IN.data as Float32Array)[0]);
  for (let step = 0; step < Math.max(0, ...counts); step++) {
    yield counts.map((n) => (step < n ? { OUT: f32(n * 10 + step) } : null));
  }
}

/** Responses the test sends itself, through each request's responseSender (tag: the request's IN value). */
const senders: { tag: number; sender: NonNullable<Request['responseSender']> }[] = [];
function captureSenders(requests: Request[]): void {
  for (const r of requests) senders.push({ tag: (r.data.IN.data as Float32Array)[0], sender: r.responseSender! });
}
/** Whether the endless model's generators stopped (their finally ran), by model name. */
const stopped: Record<string, number> = {};

function endless(name: string) {
  return async function* (requests: Request[]): AsyncGenerator<{ OUT: NDArray }[]> {
    try {
      for (let k = 0; ; k++) {
        await new Promise((resolve) => setImmediate(resolve));
        yield requests.map(() => ({ OUT: f32(k) }));
      }
    } finally {
      stopped[name] = (stopped[name] ?? 0) + 1;
    }
  };
}

function bindModels(t: Triton): void {
  const decoupled = (modelName: string, inferFunc: unknown): void => {
    t.bind({ modelName, inferFunc: inferFunc as never, inputs: [IN], outputs: [OUT], config: { decoupled: true, maxBatchSize: 8 } });
  };
  decoupled('counter', counting);
  decoupled('failing', function* (requests: Request[]) {
    yield requests.map(() => ({ OUT: f32(1) }));
    throw new Error('tokenizer exploded');
  });
  decoupled('sent', captureSenders);
  for (const name of ['aborted', 'left', 'cancelled', 'closed']) decoupled(name, endless(name));
  // Sends nothing until its request is cancelled, then ends it.
  decoupled('quiet', async function* (requests: Request[]) {
    while (!requests.every((r) => r.responseSender!.isCancelled())) await new Promise((resolve) => setTimeout(resolve, 5));
    stopped.quiet = (stopped.quiet ?? 0) + 1;
    yield* [];
  });
  t.bind({ modelName: 'plain', inferFunc: identity, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 8 } });
}

let s: Served;
let client: GrpcInferenceServerClient;
beforeAll(async () => {
  s = await serve(bindModels);
  client = new GrpcInferenceServerClient(`grpc://127.0.0.1:${s.port}`);
});
afterAll(async () => {
  await client.close();
  await s.close();
});

async function collect(stream: AsyncIterable<ClientStreamResult>): Promise<number[]> {
  const values: number[] = [];
  for await (const { outputs } of stream) values.push(valueOf(outputs));
  return values;
}

/** Runs `loop` and returns what it threw (undefined when it did not). */
async function thrown(loop: () => Promise<unknown>): Promise<unknown> {
  try {
    await loop();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('streamInfer', () => {
  test('many, one and zero responses of a decoupled model; each iterator ends after its final response', async () => {
    const results: ClientStreamResult[] = [];
    for await (const r of client.streamInfer({ modelName: 'counter', id: 'r-3', inputs: { IN: f32(3) } })) results.push(r);
    expect(results.map((r) => valueOf(r.outputs))).toEqual([30, 31, 32]);
    expect(results.map((r) => [r.modelName, r.modelVersion, r.id, r.final])).toEqual([
      ['counter', '1', 'r-3', false], ['counter', '1', 'r-3', false], ['counter', '1', 'r-3', false],
    ]);
    expect(results[0].outputs.OUT.shape).toEqual([1, 1]);
    expect(await collect(client.streamInfer({ modelName: 'counter', inputs: { IN: f32(1) } }))).toEqual([10]);
    expect(await collect(client.streamInfer({ modelName: 'counter', inputs: { IN: f32(0) } }))).toEqual([]);
  });

  test('a reader slower than the model gets every response, in order (reading pauses and resumes)', async () => {
    const values: number[] = [];
    for await (const { outputs } of client.streamInfer({ modelName: 'counter', inputs: { IN: f32(100) } })) {
      values.push(valueOf(outputs));
      await new Promise((resolve) => setTimeout(resolve, 1));  // a slow reader (not synchronisation)
    }
    expect(values).toEqual(Array.from({ length: 100 }, (_, k) => 1000 + k));
  });

  test('concurrent streams interleave, each iterator gets only its own responses', async () => {
    senders.length = 0;
    const a = client.streamInfer({ modelName: 'sent', inputs: { IN: f32(1) } });
    const b = client.streamInfer({ modelName: 'sent', inputs: { IN: f32(2) } });
    const [firstA, firstB] = [a.next(), b.next()];
    await waitFor(() => senders.length === 2, 'both requests to reach the model');
    const sender = (tag: number) => senders.find((x) => x.tag === tag)!.sender;
    sender(2).send({ OUT: f32(200) });
    expect(valueOf((await firstB).value!.outputs)).toBe(200);
    sender(1).send({ OUT: f32(100) });
    expect(valueOf((await firstA).value!.outputs)).toBe(100);
    sender(2).send({ OUT: f32(201) });
    sender(1).send({ OUT: f32(101) });
    sender(1).send(null, { final: true });
    sender(2).send({ OUT: f32(202) }, { final: true });
    const rest = (it: AsyncGenerator<ClientStreamResult>) => collect({ [Symbol.asyncIterator]: () => it });
    expect(await Promise.all([rest(a), rest(b)])).toEqual([[101], [201, 202]]);
  });

  test('an error mid-stream: the responses before it, then InferenceServerError with the Triton code', async () => {
    const seen: number[] = [];
    const err = await thrown(async () => {
      for await (const { outputs } of client.streamInfer({ modelName: 'failing', inputs: { IN: f32(0) } })) seen.push(valueOf(outputs));
    });
    expect(seen).toEqual([1]);
    expect(err).toBeInstanceOf(InferenceServerError);
    expect(err).toMatchObject({ code: 'INTERNAL', message: 'tokenizer exploded' });
  });

  test('aborting the signal mid-stream cancels the request on the server: the generator stops (failures.CANCELED)', async () => {
    const controller = new AbortController();
    const seen: number[] = [];
    const err = await thrown(async () => {
      for await (const { outputs } of client.streamInfer({ modelName: 'aborted', inputs: { IN: f32(0) } }, { signal: controller.signal })) {
        seen.push(valueOf(outputs));
        if (seen.length === 3) controller.abort();
      }
    });
    expect(err).toBeInstanceOf(InferenceServerError);
    expect(err).toMatchObject({ code: 'CANCELLED', message: "ModelStreamInfer of model 'aborted' was cancelled" });
    expect(seen.slice(0, 3)).toEqual([0, 1, 2]);
    const model = s.triton.model('aborted');
    await waitFor(() => stopped.aborted === 1 && model.stats().pending === 0, 'the generator to stop');
    expect(model.stats().failures.CANCELED).toBe(1);
    // A signal aborted before the call: nothing is sent.
    await expectRejects(client.streamInfer({ modelName: 'aborted', inputs: { IN: f32(0) } }, { signal: controller.signal }).next(), 'CANCELLED');
    expect(model.stats().failures.CANCELED).toBe(1);
  });

  test('leaving the loop early cancels the request too', async () => {
    for await (const { outputs } of client.streamInfer({ modelName: 'left', inputs: { IN: f32(0) } })) {
      if (valueOf(outputs) === 2) break;
    }
    const model = s.triton.model('left');
    await waitFor(() => stopped.left === 1 && model.stats().pending === 0, 'the generator to stop');
    expect(model.stats().failures.CANCELED).toBe(1);
  });

  test('responseTimeoutMs: no response in time → ClientTimeoutError, and the request is cancelled', async () => {
    // The timer runs from the call, so it must outlast the request's way to the model on a loaded
    // machine (if it fired first, the cancellation could beat the request and the model never run).
    const stream = client.streamInfer({ modelName: 'quiet', inputs: { IN: f32(0) } }, { responseTimeoutMs: 1000 });
    const err = await thrown(() => stream.next());
    expect(err).toBeInstanceOf(ClientTimeoutError);
    expect((err as Error).message).toBe("ModelStreamInfer of model 'quiet': no response within 1000 ms (responseTimeoutMs)");
    const model = s.triton.model('quiet');
    await waitFor(() => stopped.quiet === 1 && model.stats().pending === 0, 'the request to be cancelled');
    expect(model.stats().failures.CANCELED).toBe(1);
  });

  test('a non-decoupled model: one response (final), then the end', async () => {
    const results: ClientStreamResult[] = [];
    for await (const r of client.streamInfer({ modelName: 'plain', inputs: { IN: f32(4, 5) } })) results.push(r);
    expect(results).toHaveLength(1);
    expect(results[0].final).toBe(true);
    expect([...(results[0].outputs.OUT.data as Float32Array)]).toEqual([4, 5]);
  });

  test('1,200 calls in a row on one connection all succeed: a finished call is not reset (HTTP/2 rapid-reset limit)', async () => {
    // Node's HTTP/2 server closes a connection past about 1000 + 33/s stream resets from its
    // client; a client that cancelled each call after its final response failed near call 1,100.
    const own = new GrpcInferenceServerClient(`grpc://127.0.0.1:${s.port}`);
    try {
      let answered = 0;
      for (let i = 0; i < 1200; i++) {
        for await (const r of own.streamInfer({ modelName: 'plain', inputs: { IN: f32(i) } })) {
          if ((r.outputs.OUT.data as Float32Array)[0] === i) answered++;
        }
      }
      expect(answered).toBe(1200);
    } finally {
      await own.close();
    }
  }, 60_000);

  test('an unknown model: NOT_FOUND with Triton\'s text', async () => {
    await expectRejects(client.streamInfer({ modelName: 'nope', inputs: { IN: f32(1) } }).next(),
      'NOT_FOUND', "Request for unknown model: 'nope' is not found");
  });

  test('closing the client while a stream is open: ClientClosedError, the request is cancelled', async () => {
    const own = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`);
    const stream = own.streamInfer({ modelName: 'closed', inputs: { IN: f32(0) } });
    expect((await stream.next()).done).toBe(false);
    await own.close();
    const err = await thrown(async () => { for await (const _ of stream); });
    expect(err).toBeInstanceOf(ClientClosedError);
    await waitFor(() => stopped.closed === 1, 'the generator to stop');
    await expectRejects(own.streamInfer({ modelName: 'counter', inputs: { IN: f32(1) } }).next(), 'UNAVAILABLE', 'the client is closed');
  });
});

describe('startStream / asyncStreamInfer / stopStream (tritonclient\'s shape)', () => {
  test('responses and in-band errors reach the callback, matched by id; stopStream waits for the answers', async () => {
    const own = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`);
    const seen: string[] = [];
    own.startStream({
      onResponse: (result, error) => {
        if (error) seen.push(`${(error as StreamResponseError).requestId}: error ${error.message}`);
        else seen.push(`${result!.id}: ${result!.final ? 'final' : valueOf(result!.outputs)}`);
      },
    });
    expect(() => own.startStream()).toThrow('cannot start another stream with one already running');
    own.asyncStreamInfer({ modelName: 'counter', id: 'a', inputs: { IN: f32(2) }, enableEmptyFinalResponse: true });
    await waitFor(() => seen.includes('a: final'), 'request a to complete');
    own.asyncStreamInfer({ modelName: 'failing', id: 'b', inputs: { IN: f32(0) } });
    await waitFor(() => seen.length === 5, 'request b to fail');
    own.asyncStreamInfer({ modelName: 'counter', id: 'c', inputs: { IN: f32(1) } });  // no empty final: just its response
    own.asyncStreamInfer({ modelName: 'plain', id: 'd', inputs: { IN: f32(7) } });
    await own.stopStream();
    expect(seen.slice(0, 5)).toEqual(['a: 20', 'a: 21', 'a: final', 'b: 1', 'b: error tokenizer exploded']);
    expect(seen.slice(5).sort()).toEqual(['c: 10', 'd: final']);
    expect(() => own.asyncStreamInfer({ modelName: 'plain', inputs: { IN: f32(1) } })).toThrow('no stream is open');
    await own.close();
  });

  test('stopStream({ cancelRequests: true }) cancels what still runs; the callback gets CANCELLED', async () => {
    const own = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`);
    const errors: InferenceServerError[] = [];
    let responses = 0;
    own.startStream({ onResponse: (result, error) => (error ? errors.push(error) : responses++) });
    own.asyncStreamInfer({ modelName: 'cancelled', id: 'x', inputs: { IN: f32(0) } });
    await waitFor(() => responses >= 2, 'the model to stream');
    await own.stopStream({ cancelRequests: true });
    const model = s.triton.model('cancelled');
    await waitFor(() => stopped.cancelled === 1 && model.stats().pending === 0, 'the generator to stop');
    expect(model.stats().failures.CANCELED).toBe(1);
    expect(errors.map((e) => e.code)).toEqual(['CANCELLED']);
    await own.close();
  });
});

test('the server stopping while a stream is open: the iterator ends with an error, no hang', async () => {
  const own = await serve((t) => {
    t.bind({
      modelName: 'held', inferFunc: captureSenders as never,
      inputs: [IN], outputs: [OUT], config: { decoupled: true },
    });
  }, { exitTimeoutSecs: 0 });
  const c = new GrpcInferenceServerClient(`127.0.0.1:${own.port}`);
  try {
    senders.length = 0;
    const stream = c.streamInfer({ modelName: 'held', inputs: { IN: f32(0) } });
    const first = stream.next();
    await waitFor(() => senders.length === 1, 'the request to reach the model');
    senders[0].sender.send({ OUT: f32(9) });
    expect(valueOf((await first).value!.outputs)).toBe(9);
    const rest = thrown(async () => { for await (const _ of stream); });
    await own.triton.stop();
    const err = await rest;
    expect(err).toBeInstanceOf(InferenceServerError);
    // Whichever ends it first: the model failing its open request, or the frontend closing its
    // open streams (Triton's text); both are UNAVAILABLE, which clients retry elsewhere.
    expect((err as InferenceServerError).code).toBe('UNAVAILABLE');
    expect((err as Error).message).toMatch(
      /^(model 'held' was stopped before the request completed|GRPC server is shutting down and has stopped accepting new requests\.)$/);
  } finally {
    await c.close();
    await own.close();
  }
});

/**
 * The README's gRPC streaming example (an ES module block), copied verbatim. test/docs runs every
 * README block; this test also checks what it prints. It runs the block as the body of an async
 * function whose `require` (standing in for the import) and `console` are the test's.
 */
const README_IMPORT = "import { Triton, GrpcInferenceServerClient, NDArray } from 'infernode';";
const README_STREAMING_EXAMPLE = String.raw`import { Triton, GrpcInferenceServerClient, NDArray } from 'infernode';

const triton = new Triton({ config: { allowHttp: false, allowMetrics: false, grpcAddress: '127.0.0.1', grpcPort: 0 } });
triton.bind({
  modelName: 'Countdown',
  inferFunc: function* (requests) {                  // decoupled: one list per step, a response per request
    const starts = requests.map((r) => r.data.N.data[0]);
    for (let step = 0; step < Math.max(...starts); step++) {
      yield starts.map((n) => (step < n ? { LEFT: new Int32Array([n - step - 1]) } : null));
    }
  },
  inputs: [{ name: 'N', dtype: 'INT32', shape: [1] }],
  outputs: [{ name: 'LEFT', dtype: 'INT32', shape: [1] }],
  config: { decoupled: true, maxBatchSize: 8 },
});
await triton.run();

const client = new GrpcInferenceServerClient('127.0.0.1:' + triton.ports.grpc);
const N = new NDArray('INT32', [1, 1], new Int32Array([3]));
const left = [];
for await (const { outputs } of client.streamInfer({ modelName: 'Countdown', inputs: { N } })) {
  left.push(outputs.LEFT.data[0]);                   // 2, 1, 0: the loop ends after the final response
}
console.log(left);

const controller = new AbortController();            // aborting (or leaving the loop) cancels the request
try {
  for await (const { outputs } of client.streamInfer({ modelName: 'Countdown', inputs: { N } }, { signal: controller.signal })) {
    controller.abort();
  }
} catch (err) {
  console.log(err.code, err.message);                // CANCELLED ModelStreamInfer of model 'Countdown' was cancelled
}
await client.close();
await triton.stop();`;

test('README: the streaming client example runs as written', async () => {
  const readme = readFileSync(path.join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
  expect(readme).toContain('```mjs\n' + README_STREAMING_EXAMPLE + '\n```');
  const logged: unknown[][] = [];
  const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<void>;
  const body = README_STREAMING_EXAMPLE.replace(README_IMPORT, "const { Triton, GrpcInferenceServerClient, NDArray } = require('infernode');");
  const example = new AsyncFunction('require', 'console', body);
  await example((name: string) => {
    expect(name).toBe('infernode');
    return infernode;
  }, { log: (...values: unknown[]) => logged.push(values) });
  expect(logged).toEqual([[[2, 1, 0]], ['CANCELLED', "ModelStreamInfer of model 'Countdown' was cancelled"]]);
});
