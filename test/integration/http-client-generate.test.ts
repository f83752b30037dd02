/**
 * HttpInferenceServerClient.generate() and generateStream() against a real server (issue 9):
 * the one response, the streamed responses as they come, the server's errors thrown (before the
 * stream, as its first answer, mid-stream), and leaving or aborting a stream cancelling the
 * request on the server (the model's generator stops, the request counts as cancelled).
 */
import { InferenceServerError } from '../../ts/errors';
import { HttpInferenceServerClient } from '../../ts/client/http';
import type { GenerateResponse } from '../../ts/client/http-generate';
import { NDArray } from '../../ts/tensor';
import type { Request } from '../../ts/request';
import { waitFor } from './helpers';
import { serve, type Served } from './http/http-helpers';

let s: Served;
let client: HttpInferenceServerClient;
let endlessStopped = 0;

const text = (value: string): NDArray => new NDArray('BYTES', [1, 1], [Buffer.from(value)]);
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** PyTriton's generator form: N responses "<PROMPT> <i>" per request; fail_at makes that step throw. */
async function* words(requests: Request[]): AsyncGenerator<({ WORD: NDArray } | null)[]> {
  const counts = requests.map((r) => (r.data.N.data as Int32Array)[0]);
  for (let i = 0; i < Math.max(0, ...counts); i++) {
    if (requests.some((r, k) => r.parameters.fail_at === i && i < counts[k])) throw new Error(`words failed at step ${i}`);
    yield requests.map((r, k) => (i < counts[k] ? { WORD: text(`${Buffer.from((r.data.PROMPT.data as Uint8Array[])[0]).toString()} ${i}`) } : null));
    await nextTurn();
  }
}

async function* endless(requests: Request[]): AsyncGenerator<{ WORD: NDArray }[]> {
  try {
    for (let i = 0; ; i++) {
      yield requests.map(() => ({ WORD: text(`w${i}`) }));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    endlessStopped++;
  }
}

beforeAll(async () => {
  s = await serve((t) => {
    t.bind({
      modelName: 'words', inferFunc: words as never,
      inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }, { name: 'N', dtype: 'INT32', shape: [1] }],
      outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
      config: { decoupled: true, maxBatchSize: 4 },
    });
    t.bind({
      modelName: 'endless', inferFunc: endless as never,
      inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }], outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
      config: { decoupled: true, maxBatchSize: 4 },
    });
    t.bind({
      modelName: 'length',
      inferFunc: (requests: Request[]) => requests.map((r) => ({
        LEN: new NDArray('INT32', [1, 1], Int32Array.of((r.data.PROMPT.data as Uint8Array[])[0].length)),
      })),
      inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }], outputs: [{ name: 'LEN', dtype: 'INT32', shape: [1] }],
      config: { maxBatchSize: 4 },
    });
  });
  client = new HttpInferenceServerClient(`127.0.0.1:${s.port}`);
});

afterAll(async () => {
  await client.close();
  await s.triton.stop();
});

async function all(stream: AsyncIterable<GenerateResponse>): Promise<GenerateResponse[]> {
  const out: GenerateResponse[] = [];
  for await (const response of stream) out.push(response);
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<InferenceServerError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(InferenceServerError);
    return err as InferenceServerError;
  }
  throw new Error('expected a rejection');
}

describe('generate', () => {
  test('the one response of a non-decoupled model and of a decoupled model sending one', async () => {
    expect(await client.generate('length', { PROMPT: 'four', id: 'x1' })).toEqual({
      id: 'x1', model_name: 'length', model_version: '1', LEN: 4,
    });
    expect(await client.generate('words', { PROMPT: 'hi', N: 1 }, { modelVersion: '1' })).toEqual({
      model_name: 'words', model_version: '1', WORD: 'hi 0',
    });
  });

  test("the server's errors: several responses, a failing model, a missing input, an unknown model", async () => {
    const many = await rejection(client.generate('words', { PROMPT: 'hi', N: 2 }));
    expect([many.code, many.message]).toEqual(['INTERNAL',
      'generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses']);
    const failing = await rejection(client.generate('words', { PROMPT: 'hi', N: 1, fail_at: 0 }));
    expect([failing.code, failing.message]).toEqual(['INTERNAL', 'words failed at step 0']);
    expect((await rejection(client.generate('words', { PROMPT: 'hi' }))).code).toBe('INVALID_ARG');
    expect((await rejection(client.generate('nope', {}))).code).toBe('NOT_FOUND');
  });
});

describe('generateStream', () => {
  test('many, one and zero responses, each as it comes', async () => {
    expect((await all(client.generateStream('words', { PROMPT: 'a', N: 3, id: 's' }))).map((r) => [r.id, r.WORD]))
      .toEqual([['s', 'a 0'], ['s', 'a 1'], ['s', 'a 2']]);
    expect(await all(client.generateStream('words', { PROMPT: 'b', N: 1 }))).toEqual([
      { model_name: 'words', model_version: '1', WORD: 'b 0' },
    ]);
    expect(await all(client.generateStream('words', { PROMPT: 'c', N: 0 }))).toEqual([]);
    expect(await all(client.generateStream('length', { PROMPT: 'abc' }))).toEqual([
      { model_name: 'length', model_version: '1', LEN: 3 },
    ]);
  });

  test('an error event is thrown after the responses before it; errors before the stream are thrown with their code', async () => {
    const seen: unknown[] = [];
    const midStream = await rejection((async () => {
      for await (const r of client.generateStream('words', { PROMPT: 'p', N: 3, fail_at: 2 })) seen.push(r.WORD);
    })());
    expect(seen).toEqual(['p 0', 'p 1']);
    expect([midStream.code, midStream.message]).toEqual(['UNKNOWN', 'words failed at step 2']);
    const first = await rejection(all(client.generateStream('words', { PROMPT: 'p', N: 3, fail_at: 0 })));
    expect([first.code, first.message]).toEqual(['INTERNAL', 'words failed at step 0']);
    const invalid = await rejection(all(client.generateStream('words', { PROMPT: 'p', N: 'three' })));
    expect(invalid.code).toBe('INVALID_ARG');
    expect(invalid.message).toContain("input 'N' for model 'words'");
  });

  test('leaving the loop early closes the connection: the server stops the generator and counts the request cancelled', async () => {
    const before = { stopped: endlessStopped, cancelled: s.triton.model('endless').stats().failures.CANCELED };
    const got: unknown[] = [];
    for await (const r of client.generateStream('endless', { PROMPT: 'p' })) {
      got.push(r.WORD);
      if (got.length === 3) break;
    }
    expect(got).toEqual(['w0', 'w1', 'w2']);
    await waitFor(() => endlessStopped === before.stopped + 1 && s.triton.model('endless').stats().pending === 0, 'the generator to stop');
    expect(s.triton.model('endless').stats().failures.CANCELED).toBe(before.cancelled + 1);
  });

  test('aborting the signal mid-stream throws CANCELLED and cancels the request on the server', async () => {
    const before = endlessStopped;
    const controller = new AbortController();
    let count = 0;
    const err = await rejection((async () => {
      for await (const _ of client.generateStream('endless', { PROMPT: 'p' }, { signal: controller.signal })) {
        if (++count === 2) controller.abort();
      }
    })());
    expect(err.code).toBe('CANCELLED');
    await waitFor(() => endlessStopped === before + 1 && s.triton.model('endless').stats().pending === 0, 'the generator to stop');
    // The client still works for the next call.
    expect(await client.generate('length', { PROMPT: 'ok' })).toMatchObject({ LEN: 2 });
  });
});

describe('server-sent event parsing', () => {
  test('events split anywhere across chunks, CRLF, CR and LF line ends, comments and multi-line data', async () => {
    const { Readable } = await import('node:stream');
    const { serverSentData } = await import('../../ts/client/http-generate');
    const wire = ': comment\r\ndata: {"a":1}\r\n\r\nevent: x\ndata:{"b":\ndata: 2}\n\ndata: {"c":"é"}\r\r';
    const bytes = Buffer.from(wire);
    // Every split point, one byte at a time included (the é's two bytes are split too).
    for (const size of [1, 2, 3, 7, bytes.length]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      const data: string[] = [];
      for await (const d of serverSentData(Readable.from(chunks))) data.push(d);
      expect(data).toEqual(['{"a":1}', '{"b":\n2}', '{"c":"é"}']);
    }
  });
});
