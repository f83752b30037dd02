/**
 * Triton's generate extension over real HTTP (issue 9): POST .../generate (exactly one
 * response) and .../generate_stream (server-sent events) on decoupled and non-decoupled bound
 * models — Triton's JSON mapping (inputs by key, shapes from the model's metadata, parameters,
 * id), 0, 1 and many responses, errors before inference (JSON) and mid-stream (an event),
 * cancellation by closing the socket, a client that does not read, interleaved streams.
 */
import * as http from 'node:http';
import { NDArray } from '../../../ts/tensor';
import type { Request } from '../../../ts/request';
import { waitFor } from '../helpers';
import { closeAgent, post, serve, type Reply, type Served } from './http-helpers';

let s: Served;

/** What the decoupled models' generators did, for the cancellation and slow-reader tests. */
const runs = { foreverSteps: 0, foreverStopped: 0, floodSteps: 0, floodStopped: 0, tokensStopped: 0 };

const text = (value: string): NDArray => new NDArray('BYTES', [1, 1], [Buffer.from(value)]);
const int32 = (value: number): NDArray => new NDArray('INT32', [1, 1], Int32Array.of(value));
const str = (arr: NDArray, i = 0): string => Buffer.from((arr.data as Uint8Array[])[i]).toString('utf8');
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `tokens` (PyTriton's generator form: one list per step, an entry per request of the batch):
 * request k gets N responses "<PROMPT> <i>"; parameter fail_at makes step fail_at throw.
 */
async function* tokens(requests: Request[]): AsyncGenerator<(Record<string, NDArray> | null)[]> {
  const counts = requests.map((r) => (r.data.N.data as Int32Array)[0]);
  try {
    for (let i = 0; i < Math.max(0, ...counts); i++) {
      const failing = requests.find((r, k) => r.parameters.fail_at === i && i < counts[k]);
      if (failing) throw new Error(`tokens failed at step ${i}`);
      yield requests.map((r, k) => (i < counts[k] ? { TEXT: text(`${str(r.data.PROMPT)} ${i}`), STEP: int32(i) } : null));
      await nextTurn();
    }
  } finally {
    runs.tokensStopped++;
  }
}

/** `forever`: responses until cancelled. */
async function* forever(requests: Request[]): AsyncGenerator<Record<string, NDArray>[]> {
  try {
    for (;;) {
      runs.foreverSteps++;
      yield requests.map(() => ({ TEXT: text(`step ${runs.foreverSteps}`) }));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    runs.foreverStopped++;
  }
}

/** `flood`: 4 KiB responses as fast as they are taken, until cancelled. */
async function* flood(requests: Request[]): AsyncGenerator<Record<string, NDArray>[]> {
  const payload = 'x'.repeat(4096);
  try {
    for (;;) {
      runs.floodSteps++;
      yield requests.map(() => ({ TEXT: text(payload) }));
      await nextTurn();
    }
  } finally {
    runs.floodStopped++;
  }
}

beforeAll(async () => {
  s = await serve((t) => {
    t.bind({
      modelName: 'tokens',
      inferFunc: tokens as never,
      inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }, { name: 'N', dtype: 'INT32', shape: [1] }],
      outputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }, { name: 'STEP', dtype: 'INT32', shape: [1] }],
      config: { decoupled: true, maxBatchSize: 8 },
    });
    for (const [name, gen] of [['forever', forever], ['flood', flood]] as const) {
      t.bind({
        modelName: name,
        inferFunc: gen as never,
        inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }],
        outputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
        config: { decoupled: true, maxBatchSize: 8 },
      });
    }
    // Non-decoupled, no batching: shapes come straight from the dims ([-1, 2] for M).
    t.bind({
      modelName: 'upper',
      inferFunc: (requests: Request[]) => requests.map((r) => ({
        OUT: new NDArray('BYTES', [1], [Buffer.from(str(r.data.PROMPT).toUpperCase())]),
        M_SHAPE: new NDArray('INT32', [r.data.M.shape.length], Int32Array.from(r.data.M.shape)),
        M_SUM: new NDArray('FP32', [1], Float32Array.of((Array.from(r.data.M.data as Int32Array)).reduce((a, b) => a + b, 0))),
        PARAMS: new NDArray('BYTES', [1], [Buffer.from(JSON.stringify(r.parameters))]),
        FLAGS: r.data.FLAGS ?? new NDArray('BOOL', [0], new Uint8Array(0)),
      })),
      inputs: [
        { name: 'PROMPT', dtype: 'BYTES', shape: [1] }, { name: 'M', dtype: 'INT32', shape: [-1, 2] },
        { name: 'FLAGS', dtype: 'BOOL', shape: [-1], optional: true },
      ],
      outputs: [
        { name: 'OUT', dtype: 'BYTES', shape: [1] }, { name: 'M_SHAPE', dtype: 'INT32', shape: [-1] },
        { name: 'M_SUM', dtype: 'FP32', shape: [1] }, { name: 'PARAMS', dtype: 'BYTES', shape: [1] },
        { name: 'FLAGS', dtype: 'BOOL', shape: [-1] },
      ],
      config: { batching: false },
    });
  });
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

const generate = (model: string, body: unknown): Promise<Reply> => post(s.port, `/v2/models/${model}/generate`, body as object);
const generateStream = (model: string, body: unknown): Promise<Reply> =>
  post(s.port, `/v2/models/${model}/generate_stream`, body as object);

/** The events of a whole SSE body (a reply's, or bytes read), each `data: {...}` parsed. */
function events(r: Reply | Buffer): Record<string, unknown>[] {
  const body = (Buffer.isBuffer(r) ? r : r.body).toString('utf8');
  if (body === '') return [];
  expect(body.endsWith('\n\n')).toBe(true);
  return body.slice(0, -2).split('\n\n').map((chunk) => {
    expect(chunk.startsWith('data: ')).toBe(true);
    return JSON.parse(chunk.slice(6)) as Record<string, unknown>;
  });
}

const SSE = 'text/event-stream; charset=utf-8';
const stats = (model: string) => s.triton.model(model).stats();

describe('generate_stream', () => {
  test('many responses: one event each, in order, then the stream ends', async () => {
    const r = await generateStream('tokens', { PROMPT: 'hi', N: 3, id: 'req-7' });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe(SSE);
    expect(events(r)).toEqual([0, 1, 2].map((i) => ({
      id: 'req-7', model_name: 'tokens', model_version: '1', TEXT: `hi ${i}`, STEP: i,
    })));
  });

  test('one response, and zero responses (200, no event)', async () => {
    expect(events(await generateStream('tokens', { PROMPT: 'one', N: 1 }))).toEqual([
      { model_name: 'tokens', model_version: '1', TEXT: 'one 0', STEP: 0 },
    ]);
    const none = await generateStream('tokens', { PROMPT: 'none', N: 0 });
    expect([none.status, none.headers['content-type'], none.body.length]).toEqual([200, SSE, 0]);
  });

  test('a non-decoupled model streams its one response', async () => {
    const r = await generateStream('upper', { PROMPT: 'abc', M: [1, 2] });
    expect([r.status, r.headers['content-type']]).toEqual([200, SSE]);
    expect(events(r)).toEqual([expect.objectContaining({ model_name: 'upper', OUT: 'ABC', M_SHAPE: [1, 2], M_SUM: 3 })]);
  });

  test('an error after a response is an error event under 200, and the stream ends', async () => {
    const r = await generateStream('tokens', { PROMPT: 'p', N: 3, fail_at: 1 });
    expect(r.status).toBe(200);
    expect(events(r)).toEqual([
      expect.objectContaining({ TEXT: 'p 0' }),
      { error: 'tokens failed at step 1' },
    ]);
  });

  test("the model's first answer an error: the error event under the error's status (Triton sets it with the first response)", async () => {
    const r = await generateStream('tokens', { PROMPT: 'p', N: 3, fail_at: 0 });
    expect([r.status, r.headers['content-type']]).toEqual([500, SSE]);
    expect(events(r)).toEqual([{ error: 'tokens failed at step 0' }]);
  });

  test('errors before inference are a plain JSON error with their status', async () => {
    const cases: [string, unknown, number, string][] = [
      ['tokens', { PROMPT: 'p' }, 400, "expected 2 inputs but got 1 inputs for model 'tokens'. Got input(s) ['PROMPT'], but missing required input(s) ['N']. Please provide all required input(s)."],
      ['tokens', { PROMPT: 7, N: 1 }, 400, "input 'PROMPT' for model 'tokens'"],
      ['nope', { PROMPT: 'p' }, 404, 'nope'],
      ['tokens', '{"PROMPT": ', 400, 'failed to parse the generate request JSON'],
    ];
    for (const [model, body, status, message] of cases) {
      const r = await generateStream(model, body);
      expect([r.status, r.headers['content-type']]).toEqual([status, 'application/json']);
      expect(r.error).toContain(message);
    }
  });

  test('interleaved concurrent streams each get exactly their own responses', async () => {
    const prompts = ['a', 'b', 'c', 'd'];
    const replies = await Promise.all(prompts.map((p) => generateStream('tokens', { PROMPT: p, N: 5 })));
    replies.forEach((r, k) => {
      expect(events(r).map((e) => e.TEXT)).toEqual([0, 1, 2, 3, 4].map((i) => `${prompts[k]} ${i}`));
    });
  });

  test('closing the socket mid-stream stops the generator (its finally runs) and counts the request as cancelled', async () => {
    const before = { stopped: runs.foreverStopped, cancelled: stats('forever').failures.CANCELED };
    const body = JSON.stringify({ PROMPT: 'p' });
    const firstEvents = await new Promise<string>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1', port: s.port, method: 'POST', path: '/v2/models/forever/generate_stream', agent: false,
        headers: { 'Content-Length': Buffer.byteLength(body) },
      }, (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => {
          data += chunk.toString('utf8');
          if (data.split('\n\n').length > 2) {
            req.destroy();  // two events arrived: the client goes away
            resolve(data);
          }
        });
      });
      req.on('error', (err) => {
        if (!req.destroyed) reject(err);
      });
      req.end(body);
    });
    expect(firstEvents.startsWith('data: {"model_name":"forever"')).toBe(true);
    await waitFor(() => runs.foreverStopped === before.stopped + 1 && stats('forever').pending === 0, 'the generator to stop');
    expect(stats('forever').failures.CANCELED).toBe(before.cancelled + 1);
  });

  test('a client that does not read is cancelled once the bounded queue is full (no unbounded buffering), then reads the error event', async () => {
    const before = runs.floodStopped;
    const body = JSON.stringify({ PROMPT: 'p' });
    let res!: http.IncomingMessage;
    await new Promise<void>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1', port: s.port, method: 'POST', path: '/v2/models/flood/generate_stream', agent: false,
        headers: { 'Content-Length': Buffer.byteLength(body) },
      }, (response) => {
        res = response;
        res.pause();  // the client reads nothing: the socket's buffers fill, then the server stops writing
        resolve();
      });
      req.on('error', reject);
      req.end(body);
    });
    // The model stops on its own while the client is still not reading: its reader fell
    // 1024 responses behind and the request was cancelled. The steps it ran are bounded.
    await waitFor(() => runs.floodStopped === before + 1, 'the flood generator to be cancelled', 20_000);
    expect(runs.floodSteps).toBeLessThan(100_000);
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.resume();
    await new Promise((resolve) => res.on('end', resolve));
    const all = events(Buffer.concat(chunks));
    expect(all.length).toBeGreaterThan(1024);
    expect(all.slice(0, -1).every((e) => typeof e.TEXT === 'string' && (e.TEXT as string).length === 4096)).toBe(true);
    expect(all[all.length - 1].error).toMatch(/its reader fell more than 1024 responses behind/);
  });
});

describe('generate', () => {
  test('a non-decoupled model: the one response, Triton mapping (shapes from the model, unwrapped scalars, parameters, id)', async () => {
    const r = await generate('upper', {
      id: '42', PROMPT: 'hello', M: [1, 2, 3, 4], FLAGS: [true, false, true], temperature: 0.5, stream: false,
      parameters: { top_k: 3, note: 'x' },
    });
    expect([r.status, r.headers['content-type']]).toEqual([200, 'application/json']);
    const body = r.json();
    expect(body).toEqual({
      id: '42', model_name: 'upper', model_version: '1', OUT: 'HELLO', M_SHAPE: [2, 2], M_SUM: 10, FLAGS: [true, false, true],
      PARAMS: expect.any(String),
    });
    // Every key that is no input is a parameter, `id` included (as in Triton).
    expect(JSON.parse(body.PARAMS as string)).toEqual({ id: '42', temperature: 0.5, stream: false, top_k: 3, note: 'x' });
  });

  test('a scalar fills a shape; a batching model gets its batch dimension of 1', async () => {
    const r = await generate('tokens', { PROMPT: 'solo', N: 1 });
    expect(r.json()).toEqual({ model_name: 'tokens', model_version: '1', TEXT: 'solo 0', STEP: 0 });
    const one = await generate('upper', { PROMPT: 'x', M: [5, 6], FLAGS: true });
    expect(one.json()).toMatchObject({ M_SHAPE: [1, 2], FLAGS: true });
  });

  test('an empty id is not echoed; a version in the path is served', async () => {
    const r = await post(s.port, '/v2/models/tokens/versions/1/generate', { PROMPT: 'v', N: 1, id: '' });
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ model_name: 'tokens', model_version: '1', TEXT: 'v 0', STEP: 0 });
  });

  test("a decoupled model with zero or several responses: Triton's error; at the second response the request is cancelled", async () => {
    const expected = 'generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses';
    const zero = await generate('tokens', { PROMPT: 'p', N: 0 });
    expect([zero.status, zero.error]).toEqual([500, expected]);
    const stopped = runs.tokensStopped;
    const many = await generate('tokens', { PROMPT: 'p', N: 1000 });
    expect([many.status, many.headers['content-type'], many.error]).toEqual([500, 'application/json', expected]);
    await waitFor(() => runs.tokensStopped === stopped + 1 && stats('tokens').pending === 0, 'the generator to stop');
  });

  test('a failing decoupled model: its error as JSON with its status', async () => {
    const r = await generate('tokens', { PROMPT: 'p', N: 2, fail_at: 0 });
    expect([r.status, r.error]).toEqual([500, 'tokens failed at step 0']);
  });

  test("mapping errors, with Triton's texts", async () => {
    const cases: [string, unknown, string][] = [
      ['upper', { PROMPT: 'p', M: [1, 2, 3] }, "The schema can not convert input 'M' to tensor with proper shape"],
      ['upper', { PROMPT: 'p', M: [1, 2], PARAMS: { a: 1 } }, "parameter 'PARAMS' has invalid type. It should be either 'int', 'bool', or 'string'."],
      ['upper', { PROMPT: 'p', M: [1, 2], parameters: 1 }, "Expected JSON object for keyword: 'parameters'"],
      ['upper', { PROMPT: 'p', M: [1, 2], parameters: { nested: { twice: 1 } } },
        "Converting keyword: 'parameters': parameter 'nested' has invalid type."],
      ['upper', { PROMPT: 'p', M: [[1, 2]] }, "input 'M' for model 'upper': the generate endpoint takes a value or a flat list"],
      ['upper', { PROMPT: 'p', M: [1, 2], id: 5 }, "Unable to parse 'id'"],
      ['upper', [1, 2], "the generate request for model 'upper' must be a JSON object"],
      ['upper', {}, "expected number of inputs between 2 and 3 but got 0 inputs for model 'upper'. Got input(s) [], but missing required input(s) ['PROMPT','M']"],
    ];
    for (const [model, body, message] of cases) {
      const r = await generate(model, body);
      expect([r.status, r.headers['content-type']]).toEqual([400, 'application/json']);
      expect(r.error).toContain(message);
    }
  });

  test('inputs larger than --http-max-input-size once expanded are refused before they are built', async () => {
    const small = await serve((t) => {
      t.bind({
        modelName: 'wide', inferFunc: (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN })),
        inputs: [{ name: 'IN', dtype: 'INT64', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'INT64', shape: [-1] }],
        config: { batching: false },
      });
    }, { httpMaxInputSize: 4096 });
    try {
      // 1000 one-digit numbers: ~2 KB of JSON, 8000 bytes as INT64.
      const r = await post(small.port, '/v2/models/wide/generate', { IN: new Array(1000).fill(1) });
      expect(r.status).toBe(400);
      expect(r.error).toBe("request size of 0 bytes with input 'IN' of size 8000 bytes exceeds the maximum allowed input size " +
        'of 4096. Use --http-max-input-size to increase the limit.');
    } finally {
      await small.triton.stop();
    }
  });

  test('only POST; /infer on a decoupled model stays refused (501)', async () => {
    const get = await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: s.port, path: '/v2/models/tokens/generate', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    expect(get).toBe(405);
    const infer = await post(s.port, '/v2/models/tokens/infer', { inputs: [] });
    expect(infer.status).toBe(501);
  });
});
