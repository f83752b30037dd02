/**
 * JSON infer bodies of millions of arrays, at the default 64 MiB body limit: nested tensor data
 * are read in time linear in their bytes (ts/server/http/json-scan.ts), as Triton's RapidJSON
 * reads them, and arrays anywhere else are refused past 65,536. A 64 MiB body of 16M one-element
 * arrays (`[[0],[0],...]`) held the event loop for ~25 s as an input's data (JSON.parse alone
 * ~16 s, 1.3-1.9 GB) and ~12 s in a field the server ignores: no health check was answered all
 * that time. Now: ~1.6 s (health answered within ~1.3 s), and ~0.6 s for the refusal.
 */
import { createHash } from 'node:crypto';
import { NDArray } from '../../../ts/tensor';
import type { Request } from '../../../ts/request';
import { closeAgent, get, post, serve, type Reply, type Served, type WireOutput } from './http-helpers';

let s: Served;

/** The SHA-256 of a tensor's bytes, as the model answers it. */
const digest = (data: ArrayBufferView): string =>
  createHash('sha256').update(Buffer.from(data.buffer, data.byteOffset, data.byteLength)).digest('hex');

beforeAll(async () => {
  // A model of shape [-1, 1] that answers the digest of what it received: the answer is small
  // whatever the input, and says exactly which tensor the server decoded.
  s = await serve((t) => t.bind({
    modelName: 'digest',
    inferFunc: (requests: Request[]) => requests.map((r) => ({
      DIGEST: new NDArray('BYTES', [1], [Buffer.from(digest(r.data.IN.data as Float32Array))]),
    })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1, 1] }], outputs: [{ name: 'DIGEST', dtype: 'BYTES', shape: [1] }],
    config: { batching: false },
  }));
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

const DIGEST = '/v2/models/digest/infer';
/** Rows of a 64 MiB body of `[0],` (the default --http-max-input-size), less room for the rest. */
const ROWS = (1 << 24) - 32;

/** A request for the digest model of `rows` rows whose data is the JSON text `data`, then `extra` members. */
const request = (rows: number, data: string, extra = ''): Buffer =>
  Buffer.from(`{"inputs":[{"name":"IN","datatype":"FP32","shape":[${rows},1],"data":${data}}]${extra}}`);

/** JSON text of `n` one-element arrays, in an array: `[[v(0)],[v(1)],...]`. */
function nestedRows(n: number, value: (i: number) => number | string = () => 0): string {
  const rows = new Array<string>(n);
  for (let i = 0; i < n; i++) rows[i] = `[${value(i)}]`;
  return `[${rows.join(',')}]`;
}

const answerOf = (r: Reply): string => (r.json().outputs as WireOutput[])[0].data![0] as string;

/**
 * Posts `body`, meanwhile asking /v2/health/ready from another connection, again 20 ms after each
 * answer: the reply, how long it took, and the longest time without a health answer (the server
 * is in this process: its event loop's longest stall, from the start to the last answer).
 */
async function postWhileProbing(path: string, body: Buffer): Promise<{ reply: Reply; ms: number; healthGapMs: number }> {
  let finished = false;
  const started = Date.now();
  let lastAnswer = started;
  let healthGapMs = 0;
  const probing = (async () => {
    while (!finished) {
      const probe = await get(s.port, '/v2/health/ready');
      expect(probe.status).toBe(200);
      healthGapMs = Math.max(healthGapMs, Date.now() - lastAnswer);
      lastAnswer = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const reply = await post(s.port, path, body);
  const ms = Date.now() - started;
  finished = true;
  await probing;
  return { reply, ms, healthGapMs };
}

describe('64 MiB of one-element arrays: answered in a moment, health checks answered meanwhile', () => {
  // The guards are about half the defect's cost, so that a loaded machine does not turn them red.
  test('as an input\'s nested data (shape [N,1]): the tensor of N zeros', async () => {
    const body = request(ROWS, `[${'[0],'.repeat(ROWS - 1)}[0]]`);
    expect(body.length).toBeLessThanOrEqual(1 << 26);
    const { reply, ms, healthGapMs } = await postWhileProbing(DIGEST, body);
    expect(reply.status).toBe(200);
    expect(answerOf(reply)).toBe(digest(new Float32Array(ROWS)));
    // ~25 s and as long without a health answer before (JSON.parse alone ~16 s); ~2 s now.
    expect({ ms: ms < 12_000, healthGapMs: healthGapMs < 10_000 }).toEqual({ ms: true, healthGapMs: true });
  }, 120_000);

  test('in a field the server ignores: refused, naming the bound on arrays outside tensor data', async () => {
    const body = request(2, '[[1],[2]]', `,"x":[${'[0],'.repeat(ROWS - 1)}[0]]`);
    expect(body.length).toBeLessThanOrEqual(1 << 26);
    const { reply, ms, healthGapMs } = await postWhileProbing(DIGEST, body);
    expect({ status: reply.status, error: reply.error }).toEqual({
      status: 400,
      error: "the inference request for model 'digest' holds more than 65536 JSON arrays outside its inputs' 'data'; at most " +
        "65536 are supported (nested tensor data belong in an input's 'data', or in the binary tensor extension)",
    });
    // ~12 s and as long without a health answer before; refused at once now (the upload takes ~0.5 s).
    expect({ ms: ms < 6_000, healthGapMs: healthGapMs < 5_000 }).toEqual({ ms: true, healthGapMs: true });
  }, 120_000);

  test('in a management body: refused past 1,048,576 arrays', async () => {
    const body = Buffer.from(`{"ready":[${'[0],'.repeat(ROWS - 1)}[0]]}`);
    expect(body.length).toBeLessThanOrEqual(1 << 26);
    const { reply, ms, healthGapMs } = await postWhileProbing('/v2/repository/index', body);
    expect({ status: reply.status, error: reply.error }).toEqual({
      status: 400, error: 'the request holds more than 1048576 JSON arrays; at most 1048576 are supported',
    });
    // ~12 s and as long without a health answer before; refused at once now.
    expect({ ms: ms < 6_000, healthGapMs: healthGapMs < 5_000 }).toEqual({ ms: true, healthGapMs: true });
  }, 120_000);
});

describe('nested data are still taken, as Triton takes them', () => {
  test('shape [1M,1] as a million one-element arrays is the same tensor as the flat form', async () => {
    const rows = 1_000_000;
    const value = (i: number): number => (i % 1021) / 8 - 60;
    const expected = digest(Float32Array.from({ length: rows }, (_, i) => value(i)));
    const nested = await post(s.port, DIGEST, request(rows, nestedRows(rows, value)));
    const flat = await post(s.port, DIGEST, request(rows, `[${Array.from({ length: rows }, (_, i) => value(i)).join(',')}]`));
    expect({ nested: nested.status, flat: flat.status }).toEqual({ nested: 200, flat: 200 });
    expect({ nested: answerOf(nested), flat: answerOf(flat) }).toEqual({ nested: expected, flat: expected });
  }, 60_000);
});
