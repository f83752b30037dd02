/**
 * Decoupled bound models in process (issue 9): 0, 1 and many responses per request through
 * triton.inferStream(), PyTriton's generator form and per-request iterables, batches whose
 * requests stream independently, errors mid-stream, cancellation (AbortSignal and leaving the
 * loop) that stops the generator, a slow reader bounded by maxQueuedResponses, and the refusals
 * of the non-streaming endpoints (in process, HTTP /infer, gRPC ModelInfer) with Triton's texts.
 */
import * as grpc from '@grpc/grpc-js';
import { InferenceServerError } from '../../ts/errors';
import type { Request } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import type { Triton } from '../../ts/triton';
import { expectRejects, gate, inProcessTriton, waitFor } from './helpers';
import { fails, rawStub } from './grpc/helpers';
import { request as httpRequest, closeAgent } from './http/http-helpers';

let triton: Triton;

afterEach(async () => {
  await triton?.stop();
});

afterAll(() => closeAgent());

const IN = { name: 'IN', dtype: 'FP32' as const, shape: [-1] };
const OUT = { name: 'OUT', dtype: 'FP32' as const, shape: [-1] };

/** Binds a decoupled model named `streamer` around `inferFunc`. */
async function bindStreamer(
  inferFunc: (requests: Request[]) => unknown, config: Record<string, unknown> = {}, tritonConfig = {},
): Promise<Triton> {
  triton = inProcessTriton(tritonConfig);
  triton.bind({
    modelName: 'streamer',
    inferFunc: inferFunc as never,
    inputs: [IN],
    outputs: [OUT],
    config: { decoupled: true, maxBatchSize: 8, ...config },
  });
  await triton.run();
  return triton;
}

const f32 = (...values: number[]): NDArray => new NDArray('FP32', [1, values.length], Float32Array.from(values));
const valueOf = (outputs: Record<string, NDArray>): number => (outputs.OUT.data as Float32Array)[0];

/** Every response of a stream, as the first value of OUT. */
async function collect(stream: AsyncIterable<Record<string, NDArray>>): Promise<number[]> {
  const values: number[] = [];
  for await (const outputs of stream) values.push(valueOf(outputs));
  return values;
}

/** PyTriton's form: `count(request)` responses per request, value = input × 10 + step. */
function* counting(requests: Request[]): Generator<({ OUT: NDArray } | null)[]> {
  const counts = requests.map((r) => (r.data.IN.data as Float32Array)[0]);
  for (let step = 0; step < Math.max(0, ...counts); step++) {
    yield counts.map((n) => (step < n ? { OUT: f32(n * 10 + step) } : null));
  }
}

describe('responses', () => {
  test('many, one and zero responses per request (PyTriton generator form), each stream ends after its final response', async () => {
    const t = await bindStreamer(counting);
    expect(await collect(t.inferStream('streamer', { IN: f32(3) }))).toEqual([30, 31, 32]);
    expect(await collect(t.inferStream('streamer', { IN: f32(1) }))).toEqual([10]);
    expect(await collect(t.inferStream('streamer', { IN: f32(0) }))).toEqual([]);
  });

  test('requests batched together stream independently; each gets only its own responses', async () => {
    const batches: number[] = [];
    const t = await bindStreamer((requests) => {
      batches.push(requests.length);
      return counting(requests);
    }, { batcher: { maxQueueDelayMicroseconds: 200_000, preferredBatchSize: [3] } });
    const streams = [2, 4, 1].map((n) => collect(t.inferStream('streamer', { IN: f32(n) })));
    expect(await Promise.all(streams)).toEqual([[20, 21], [40, 41, 42, 43], [10]]);
    expect(batches).toEqual([3]);
  });

  test('one async iterable per request: responses interleave in the order they are produced', async () => {
    const order: string[] = [];
    async function* per(id: number, n: number): AsyncGenerator<{ OUT: NDArray }> {
      for (let k = 0; k < n; k++) {
        await new Promise((resolve) => setImmediate(resolve));
        order.push(`${id}:${k}`);
        yield { OUT: f32(id * 10 + k) };
      }
    }
    const t = await bindStreamer((requests) => requests.map((r, i) => per((r.data.IN.data as Float32Array)[0], 2 + i)),
      { batcher: { maxQueueDelayMicroseconds: 200_000, preferredBatchSize: [2] } });
    const [a, b] = await Promise.all([collect(t.inferStream('streamer', { IN: f32(1) })), collect(t.inferStream('streamer', { IN: f32(2) }))]);
    expect(a).toEqual([10, 11]);
    expect(b).toEqual([20, 21, 22]);
    expect(order).toEqual(['1:0', '2:0', '1:1', '2:1', '2:2']);
  });

  test('an error mid-stream reaches the reader after the responses sent before it', async () => {
    const t = await bindStreamer(function* (requests) {
      yield requests.map(() => ({ OUT: f32(1) }));
      throw new Error('tokenizer exploded');
    });
    const seen: number[] = [];
    let caught: unknown;
    try {
      for await (const outputs of t.inferStream('streamer', { IN: f32(0) })) seen.push(valueOf(outputs));
    } catch (err) {
      caught = err;
    }
    expect(seen).toEqual([1]);
    expect(caught).toBeInstanceOf(InferenceServerError);
    expect((caught as InferenceServerError).code).toBe('INTERNAL');
    expect((caught as Error).message).toBe('tokenizer exploded');
    const stats = t.model('streamer').stats();
    expect(stats.failures.BACKEND).toBe(1);
  });

  test('a callable returning neither form fails its requests with a message saying what it must return', async () => {
    const t = await bindStreamer((requests) => requests.map(() => ({ OUT: f32(1) })));
    await expect(collect(t.inferStream('streamer', { IN: f32(0) }))).rejects.toThrow(
      /a decoupled model's callable must return a generator \(or an \(async\) iterable\) yielding one outputs list per step, or one \(async\) iterable of outputs per request \(1\)/);
  });
});

describe('cancellation', () => {
  test('aborting mid-stream stops the generator (its finally runs) and frees the instance for the next request', async () => {
    const stopped = gate();
    let running = 0;
    const t = await bindStreamer(async function* (requests: Request[]) {
      running++;
      try {
        for (let k = 0; ; k++) {
          await new Promise((resolve) => setImmediate(resolve));
          yield requests.map(() => ({ OUT: f32(k) }));
        }
      } finally {
        running--;
        stopped.open();
      }
    });
    const controller = new AbortController();
    const seen: number[] = [];
    let caught: unknown;
    try {
      for await (const outputs of t.inferStream('streamer', { IN: f32(0) }, { signal: controller.signal })) {
        seen.push(valueOf(outputs));
        if (seen.length === 3) controller.abort();
      }
    } catch (err) {
      caught = err;
    }
    expect((caught as InferenceServerError).code).toBe('CANCELLED');
    expect(seen.slice(0, 3)).toEqual([0, 1, 2]);
    await stopped.promise;
    expect(running).toBe(0);
    await waitFor(() => t.model('streamer').stats().pending === 0, 'the cancelled request to be handed back');
    expect(t.model('streamer').stats().failures.CANCELED).toBe(1);
  });

  test('leaving the loop early cancels the request and stops the generator', async () => {
    let finished = false;
    const t = await bindStreamer(async function* (requests: Request[]) {
      try {
        for (let k = 0; k < 1000; k++) {
          await new Promise((resolve) => setImmediate(resolve));
          yield requests.map(() => ({ OUT: f32(k) }));
        }
      } finally {
        finished = true;
      }
    });
    for await (const outputs of t.inferStream('streamer', { IN: f32(0) })) {
      if (valueOf(outputs) === 2) break;
    }
    await waitFor(() => finished && t.model('streamer').stats().pending === 0, 'the generator to stop');
    expect(t.model('streamer').stats().failures.CANCELED).toBe(1);
    // The instance serves the next request.
    const next = t.inferStream('streamer', { IN: f32(0) });
    expect(valueOf((await next.next()).value)).toBe(0);
    await next.return!();
  });

  test('waitForReader: a reader behind maxQueuedResponses holds the generator back instead; every response arrives', async () => {
    let produced = 0;
    const t = await bindStreamer(function* (requests) {
      for (let k = 0; k < 50; k++) {
        produced++;
        yield requests.map(() => ({ OUT: f32(k) }));
      }
    });
    const stream = t.inferStream('streamer', { IN: f32(0) }, { maxQueuedResponses: 4, waitForReader: true });
    const values: number[] = [];
    let lead = 0;
    for await (const outputs of stream) {
      values.push(valueOf(outputs));
      lead = Math.max(lead, produced - values.length);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(values).toEqual(Array.from({ length: 50 }, (_, k) => k));
    expect(lead).toBeLessThanOrEqual(6);  // the 4 queued, one being handed over, one in the generator's hand
  });

  test('a reader that falls behind maxQueuedResponses gets UNAVAILABLE, and the generator stops', async () => {
    let produced = 0;
    const t = await bindStreamer(function* (requests) {
      for (let k = 0; k < 100_000; k++) {
        produced++;
        yield requests.map(() => ({ OUT: f32(k) }));
      }
    });
    const stream = t.inferStream('streamer', { IN: f32(0) }, { maxQueuedResponses: 4 });
    await waitFor(() => t.model('streamer').stats().pending === 0, 'the request to be cancelled');
    const values: number[] = [];
    await expect((async () => {
      for await (const outputs of stream) values.push(valueOf(outputs));
    })()).rejects.toThrow("request for model 'streamer' was cancelled: its reader fell more than 4 responses behind (maxQueuedResponses)");
    expect(values).toEqual([0, 1, 2, 3]);
    expect(produced).toBeLessThan(10);
  });
});

describe('endpoints that cannot stream refuse decoupled models with Triton\'s texts', () => {
  test('in process: infer() on a decoupled model, inferStream() on a non-decoupled one', async () => {
    const t = await bindStreamer(counting);
    t.bind({ modelName: 'plain', inferFunc: (rs: Request[]) => rs.map((r) => ({ OUT: r.data.IN })), inputs: [IN], outputs: [OUT] });
    await expectRejects(t.infer('streamer', { IN: f32(1) }), 'UNSUPPORTED', "model 'streamer' is decoupled (0..N responses per request)");
    await expect(collect(t.inferStream('plain', { IN: f32(1) }))).rejects.toThrow("model 'plain' is not decoupled: call infer()");
    await expect(collect(t.inferStream('nope', { IN: f32(1) }))).rejects.toThrow("Request for unknown model: 'nope' is not found");
  });

  test('HTTP /infer answers 501, gRPC ModelInfer UNIMPLEMENTED', async () => {
    triton = inProcessTriton({
      allowHttp: true, allowGrpc: true, httpPort: 0, grpcPort: 0, httpAddress: '127.0.0.1', grpcAddress: '127.0.0.1', logInfo: false,
    });
    triton.bind({ modelName: 'streamer', inferFunc: counting as never, inputs: [IN], outputs: [OUT], config: { decoupled: true } });
    await triton.run();
    const body = { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [1] }] };
    const reply = await httpRequest(triton.ports.http!, 'POST', '/v2/models/streamer/infer', body);
    expect(reply.status).toBe(501);
    expect(reply.error).toBe("HTTP end point doesn't support models with decoupled transaction policy");
    const stub = rawStub(triton.ports.grpc!);
    try {
      await fails(stub, 'ModelInfer', {
        model_name: 'streamer', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1] }], raw_input_contents: [Buffer.alloc(4)],
      }, grpc.status.UNIMPLEMENTED, "ModelInfer RPC doesn't support models with decoupled transaction policy");
    } finally {
      stub.close();
    }
  });
});

describe('gRPC ModelStreamInfer', () => {
  type StreamResponse = {
    error_message: string;
    infer_response: { id: string; model_name: string; model_version: string; raw_output_contents: Buffer[];
      parameters: Record<string, { bool_param?: boolean }> } | null;
  };

  async function grpcServed(inferFunc: (requests: Request[]) => unknown): Promise<{ stub: ReturnType<typeof rawStub> }> {
    triton = inProcessTriton({ allowGrpc: true, grpcPort: 0, grpcAddress: '127.0.0.1', logInfo: false });
    triton.bind({ modelName: 'streamer', inferFunc: inferFunc as never, inputs: [IN], outputs: [OUT], config: { decoupled: true } });
    await triton.run();
    return { stub: rawStub(triton.ports.grpc!) };
  }

  const streamRequest = (id: string, value: number, emptyFinal = false) => ({
    model_name: 'streamer', id,
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1] }],
    raw_input_contents: [Buffer.from(Float32Array.from([value]).buffer)],
    parameters: emptyFinal ? { triton_enable_empty_final_response: { bool_param: true } } : {},
  });

  const first = (r: StreamResponse): number => r.infer_response!.raw_output_contents[0].readFloatLE(0);
  const isFinal = (r: StreamResponse): boolean | undefined => r.infer_response!.parameters.triton_final_response?.bool_param;

  test('every response as it is produced with triton_final_response, an empty final one only when asked, requests interleaved', async () => {
    const { stub } = await grpcServed(counting);
    const call = stub.ModelStreamInfer();
    const responses: StreamResponse[] = [];
    call.on('data', (r: StreamResponse) => responses.push(r));
    const ended = new Promise((resolve) => call.on('status', resolve));
    call.write(streamRequest('a', 3, true));
    call.write(streamRequest('b', 2));
    call.write(streamRequest('z', 0, true));
    call.end();
    await ended;
    stub.close();
    const byId = (id: string) => responses.filter((r) => r.infer_response?.id === id);
    expect(responses.every((r) => r.error_message === '')).toBe(true);
    expect(byId('a').map((r) => (isFinal(r) ? 'final' : first(r)))).toEqual([30, 31, 32, 'final']);
    expect(byId('a').slice(0, 3).map(isFinal)).toEqual([false, false, false]);
    expect(byId('a')[3].infer_response).toMatchObject({ model_name: 'streamer', model_version: '1', raw_output_contents: [] });
    expect(byId('b').map((r) => [first(r), isFinal(r)])).toEqual([[20, false], [21, false]]);
    expect(byId('z').map(isFinal)).toEqual([true]);
  });

  test('an error mid-stream is answered in band with the request id; the stream stays open', async () => {
    const { stub } = await grpcServed(function* (requests: Request[]) {
      yield requests.map(() => ({ OUT: f32(7) }));
      if ((requests[0].data.IN.data as Float32Array)[0] === 1) throw new Error('model failure mid-stream');
    });
    const call = stub.ModelStreamInfer();
    const responses: StreamResponse[] = [];
    call.on('data', (r: StreamResponse) => responses.push(r));
    const ended = new Promise((resolve) => call.on('status', resolve));
    call.write(streamRequest('bad', 1));
    await waitFor(() => responses.length === 2, 'the response and the error');
    call.write(streamRequest('good', 0, true));
    call.end();
    await ended;
    stub.close();
    expect(responses.map((r) => [r.infer_response!.id, r.error_message])).toEqual([
      ['bad', ''], ['bad', 'model failure mid-stream'], ['good', ''], ['good', ''],
    ]);
  });

  test('a client that stops reading: the request is cancelled past maxQueuedResponses, not buffered without bound', async () => {
    triton = inProcessTriton({ allowGrpc: true, grpcPort: 0, grpcAddress: '127.0.0.1', logInfo: false, maxQueuedResponses: 8 });
    let produced = 0;
    triton.bind({
      modelName: 'flood', inputs: [IN], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }], config: { decoupled: true },
      inferFunc: (async function* (requests: Request[]) {
        for (;;) {
          produced++;
          await new Promise((resolve) => setImmediate(resolve));
          yield requests.map(() => ({ OUT: new NDArray('FP32', [1, 4096], new Float32Array(4096)) }));
        }
      }) as never,
    });
    await triton.run();
    const stub = rawStub(triton.ports.grpc!);
    const call = stub.ModelStreamInfer();
    const responses: StreamResponse[] = [];
    call.on('data', (r: StreamResponse) => responses.push(r));
    call.on('error', () => undefined);
    call.pause();
    call.write({ ...streamRequest('flood', 0), model_name: 'flood' });
    await waitFor(() => triton.model('flood').stats().failures.CANCELED === 1, 'the request to be cancelled', 20_000);
    const producedAtCancel = produced;
    call.resume();
    await waitFor(() => responses.some((r) => r.error_message !== ''), 'the in-band error');
    call.end();
    stub.close();
    const error = responses.find((r) => r.error_message !== '')!;
    expect(error.error_message).toBe("request for model 'flood' was cancelled: its reader fell more than 8 responses behind (maxQueuedResponses)");
    // What was produced is bounded by the transport's buffers plus the queue, not by time.
    expect(producedAtCancel).toBeLessThan(200);
    expect(produced).toBeLessThanOrEqual(producedAtCancel + 1);
  });

  test('cancelling the call stops the generator and frees the request', async () => {
    let finished = false;
    const { stub } = await grpcServed(async function* (requests: Request[]) {
      try {
        for (let k = 0; ; k++) {
          await new Promise((resolve) => setImmediate(resolve));
          yield requests.map(() => ({ OUT: f32(k) }));
        }
      } finally {
        finished = true;
      }
    });
    const call = stub.ModelStreamInfer();
    let count = 0;
    call.on('data', () => { count++; });
    call.on('error', () => undefined);
    call.write(streamRequest('endless', 0));
    await waitFor(() => count >= 3, 'a few responses');
    call.cancel();
    await waitFor(() => finished && triton.model('streamer').stats().pending === 0, 'the generator to stop');
    stub.close();
    expect(triton.model('streamer').stats().failures.CANCELED).toBe(1);
  });
});

test('context.isCancelled() tells a polling callable that its request was cancelled', async () => {
  let sawCancel = false;
  triton = inProcessTriton();
  triton.bind({
    modelName: 'worker', inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 },
    // Works until cancelled (bounded, so a broken isCancelled fails the test instead of hanging it).
    inferFunc: (async (requests: Request[], context: { isCancelled?: (i?: number) => boolean }) => {
      const until = Date.now() + 10_000;
      while (!context.isCancelled!(0) && Date.now() < until) await new Promise((resolve) => setImmediate(resolve));
      sawCancel = context.isCancelled!(0);
      return requests.map((r) => ({ OUT: r.data.IN }));
    }) as never,
  });
  await triton.run();
  const controller = new AbortController();
  const pending = triton.infer('worker', { IN: f32(1) }, { signal: controller.signal });
  await waitFor(() => triton.model('worker').stats().queued === 0 && triton.model('worker').stats().pending === 1, 'the callable to run');
  controller.abort();
  await expectRejects(pending, 'CANCELLED', 'cancelled');
  await waitFor(() => triton.model('worker').stats().pending === 0, 'the callable to stop early');
  expect(sawCancel).toBe(true);
});

describe('execution and completion are separate', () => {
  test('an instance takes the next batch as soon as the callable returned; earlier requests keep streaming', async () => {
    const release = gate();
    const order: string[] = [];
    const t = await bindStreamer(async function* (requests: Request[]) {
      const n = (requests[0].data.IN.data as Float32Array)[0];
      order.push(`start ${n}`);
      yield requests.map(() => ({ OUT: f32(n) }));
      if (n === 1) await release.promise;  // the first request streams on, waiting
      order.push(`end ${n}`);
    }, { maxBatchSize: 1 });
    const first = t.inferStream('streamer', { IN: f32(1) });
    expect(valueOf((await first.next()).value)).toBe(1);
    // One instance, and request 1 is still open: request 2 runs anyway.
    expect(await collect(t.inferStream('streamer', { IN: f32(2) }))).toEqual([2]);
    expect(t.model('streamer').stats().pending).toBe(1);
    release.open();
    expect((await first.next()).done).toBe(true);
    expect(order).toEqual(['start 1', 'start 2', 'end 2', 'end 1']);
    await waitFor(() => t.model('streamer').stats().pending === 0, 'request 1 to be handed back');
    expect(t.model('streamer').stats().success.count).toBe(2);
  });

  test('request.responseSender sends responses after the callable returned; final ends the request', async () => {
    const senders: NonNullable<Request['responseSender']>[] = [];
    const t = await bindStreamer((requests) => {
      for (const r of requests) senders.push(r.responseSender!);
      return undefined;
    });
    const stream = t.inferStream('streamer', { IN: f32(0) });
    await waitFor(() => senders.length === 1, 'the callable to run');
    senders[0].send({ OUT: f32(5) });
    senders[0].send({ OUT: f32(6) });
    senders[0].send(null, { final: true });
    expect(await collect(stream)).toEqual([5, 6]);
    expect(senders[0].isCancelled()).toBe(true);  // ended: nothing more goes out
    senders[0].send({ OUT: f32(7) });

    const failing = t.inferStream('streamer', { IN: f32(0) });
    await waitFor(() => senders.length === 2, 'the second call');
    senders[1].send({ OUT: f32(1) });
    senders[1].sendError(new InferenceServerError('UNAVAILABLE', 'backend went away'));
    const seen: number[] = [];
    await expect((async () => { for await (const o of failing) seen.push(valueOf(o)); })()).rejects.toThrow('backend went away');
    expect(seen).toEqual([1]);
  });

  test('a sender sees a cancelled request as cancelled; stop() fails requests still open', async () => {
    const senders: NonNullable<Request['responseSender']>[] = [];
    const t = await bindStreamer((requests) => {
      for (const r of requests) senders.push(r.responseSender!);
    }, {}, { exitTimeoutSecs: 0 });
    const controller = new AbortController();
    const cancelled = t.inferStream('streamer', { IN: f32(0) }, { signal: controller.signal });
    const open = t.inferStream('streamer', { IN: f32(0) });
    await waitFor(() => senders.length === 2, 'both requests to run');
    controller.abort();
    expect(senders[0].isCancelled()).toBe(true);
    expect(senders[1].isCancelled()).toBe(false);
    await expect(cancelled.next()).rejects.toThrow('cancelled');
    // The cancelled request is handed back at once, although its sender never sends final.
    await waitFor(() => t.model('streamer').stats().pending === 1, 'the cancelled request to be handed back');
    expect(t.model('streamer').stats().failures.CANCELED).toBe(1);
    const pendingOpen = open.next();
    await t.stop();
    await expect(pendingOpen).rejects.toThrow("model 'streamer' was stopped before the request completed");
    expect(senders[1].isCancelled()).toBe(true);
  });
});
