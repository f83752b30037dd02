/**
 * The sequence batcher in process (`bind()` with `sequenceBatcher`, `triton.infer()` with
 * `sequenceId/Start/End`), through the real native scheduler: per-sequence implicit state, the
 * control inputs a model sees, direct slots with null rows, the oldest strategy's batches, the
 * backlog, idle expiry, cancellation, iterative sequences (also decoupled), Triton's errors,
 * and the README's example. The frontends' side: sequence-frontends.test.ts; an ONNX RNN:
 * repository/sequence-rnn.test.ts.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Triton } from '../../ts/triton';
import { Request, type ResponseOutputs, type TritonContext } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import type { SequenceBatcher } from '../../ts/config/types';
import { expectRejects, fp32, gate, inProcessTriton, sleep, waitFor, type Gate } from './helpers';

let triton: Triton;

beforeEach(() => {
  triton = inProcessTriton();
});

afterEach(async () => {
  await triton.stop();
});

const IN = { name: 'IN', dtype: 'FP32' as const, shape: [1] };
const OUT = { name: 'OUT', dtype: 'FP32' as const, shape: [1] };

/** START/END/READY (INT32 0/1), CORRID (UINT64) and a running sum kept as implicit state. */
const ACCUMULATOR: SequenceBatcher = {
  maxSequenceIdleMicroseconds: 5_000_000,
  controlInputs: [
    { name: 'START', kind: 'CONTROL_SEQUENCE_START', int32FalseTrue: [0, 1] },
    { name: 'END', kind: 'CONTROL_SEQUENCE_END', int32FalseTrue: [0, 1] },
    { name: 'READY', kind: 'CONTROL_SEQUENCE_READY', int32FalseTrue: [0, 1] },
    { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'UINT64' },
  ],
  states: [{ inputName: 'SUM_IN', outputName: 'SUM_OUT', dtype: 'FP32', shape: [1] }],
};

/** What the model saw of one row: its control inputs, state in, and whether it was a null row. */
interface Row {
  value: number;
  start: number;
  end: number;
  ready: number;
  corrid: bigint;
  sum: number;
  nullRow: boolean;
}

/** An accumulator model: OUT = SUM_OUT = SUM_IN + IN. Records every batch; `hold()` keeps the next one. */
class Accumulator {
  readonly batches: Row[][] = [];
  readonly #holds: Gate[] = [];

  hold(): Gate {
    const g = gate();
    this.#holds.push(g);
    return g;
  }

  readonly func = async (requests: Request[]): Promise<ResponseOutputs[]> => {
    const n = (r: Request, name: string): number => Number(r.data[name].data[0]);
    this.batches.push(requests.map((r) => ({
      value: n(r, 'IN'), start: n(r, 'START'), end: n(r, 'END'), ready: n(r, 'READY'),
      corrid: (r.data.CORRID.data as BigUint64Array)[0], sum: n(r, 'SUM_IN'), nullRow: r.sequence?.ready === false,
    })));
    const held = this.#holds.shift();
    if (held) await held.promise;
    return requests.map((r) => {
      const sum = new Float32Array([n(r, 'SUM_IN') + n(r, 'IN')]);
      return { OUT: sum, SUM_OUT: sum };
    });
  };

  /** Rows of every batch that were not null rows. */
  get rows(): Row[] {
    return this.batches.flat().filter((r) => !r.nullRow);
  }
}

function bindAccumulator(acc: Accumulator, sequenceBatcher: SequenceBatcher = ACCUMULATOR, maxBatchSize = 4): void {
  triton.bind({ modelName: 'acc', inferFunc: acc.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize, sequenceBatcher } });
}

async function step(id: number | bigint | string, value: number, flags: { start?: boolean; end?: boolean } = {}): Promise<number> {
  const out = await triton.infer('acc', { IN: fp32(value) }, { sequenceId: id, sequenceStart: flags.start, sequenceEnd: flags.end });
  return Number(out.OUT.data[0]);
}

describe('state and control inputs', () => {
  test('interleaved sequences keep separate state; START resets it; the model sees START/END/READY/CORRID', async () => {
    const acc = new Accumulator();
    bindAccumulator(acc);
    await triton.run();
    expect(await step(11, 1, { start: true })).toBe(1);
    expect(await step(22, 100, { start: true })).toBe(100);
    expect(await step(11, 2)).toBe(3);
    expect(await step(22, 200)).toBe(300);
    expect(await step(11, 3, { end: true })).toBe(6);
    expect(await step(22, 5, { start: true })).toBe(5);  // START again: the state begins anew
    expect(acc.rows.map(({ value, start, end, ready, corrid }) => [value, start, end, ready, corrid])).toEqual([
      [1, 1, 0, 1, 11n], [100, 1, 0, 1, 22n], [2, 0, 0, 1, 11n], [200, 0, 0, 1, 22n], [3, 0, 1, 1, 11n], [5, 1, 0, 1, 22n],
    ]);
    // The state output is the model's business: clients get only the declared outputs.
    const out = await triton.infer('acc', { IN: fp32(1) }, { sequenceId: 22 });
    expect(Object.keys(out)).toEqual(['OUT']);
  });

  test("after END, and for an id never started, a request without START gets Triton's error", async () => {
    bindAccumulator(new Accumulator());
    await triton.run();
    await expectRejects(step(5, 1), 'INVALID_ARG',
      "inference request for sequence 5 to model 'acc' must specify the START flag on the first request of the sequence");
    await step(5, 1, { start: true, end: true });
    await expectRejects(step(5, 1), 'INVALID_ARG', /sequence 5 .* must specify the START flag/);
    await expectRejects(step(0, 1, { start: true }), 'INVALID_ARG',
      "inference request to model 'acc' must specify a non-zero or non-empty correlation ID");
    await expectRejects(step('text', 1, { start: true }), 'INVALID_ARG',
      "sequence batching control 'CORRID' data-type is 'BYTES', but model 'acc' expects 'UINT64'");
    await expectRejects(triton.infer('acc', { IN: fp32(1, 2) }, { sequenceId: 6, sequenceStart: true }), 'INVALID_ARG',
      "inference request to model 'acc' must specify batch-size 1 due to requirements of sequence batcher");
    await expectRejects(step(-1, 1, { start: true }), 'INVALID_ARG', /unsigned 64-bit integer or a string/);
  });

  test('string ids with a STRING CORRID, and uint64 ids beyond 2^53, reach the model exactly', async () => {
    const seen: (string | bigint)[] = [];
    const echo = (requests: Request[]): ResponseOutputs[] => requests.map((r) => {
      const id = r.data.CORRID;
      seen.push(id.dtype === 'BYTES' ? (id.data[0] as Uint8Array).toString() : (id.data as BigUint64Array)[0]);
      return { OUT: r.data.IN };
    });
    const corrid = (dataType: 'BYTES' | 'UINT64'): SequenceBatcher => ({
      controlInputs: [{ name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', dataType }],
    });
    triton.bind({ modelName: 'by_text', inferFunc: echo, inputs: [IN], outputs: [OUT], config: { sequenceBatcher: corrid('BYTES') } });
    triton.bind({ modelName: 'by_number', inferFunc: echo, inputs: [IN], outputs: [OUT], config: { sequenceBatcher: corrid('UINT64') } });
    await triton.run();
    const big = 2n ** 64n - 2n;
    await triton.infer('by_text', { IN: fp32(1) }, { sequenceId: 'caller-7', sequenceStart: true });
    await triton.infer('by_number', { IN: fp32(1) }, { sequenceId: big, sequenceStart: true });
    await triton.infer('by_number', { IN: fp32(2) }, { sequenceId: big });
    expect(seen).toEqual(['caller-7', big, big]);
    await expectRejects(triton.infer('by_text', { IN: fp32(1) }, { sequenceId: 7, sequenceStart: true }), 'INVALID_ARG',
      "sequence batching control 'CORRID' data-type is 'UINT64', but model 'by_text' expects 'BYTES'");
  });
});

describe('variable-size state', () => {
  test('a state with a dynamic dim takes the shape of the output that replaces it; rows of one batch agree on it', async () => {
    const batches: number[][] = [];
    // HIST grows by one value per step: the sequence's history so far.
    const history = (requests: Request[]): ResponseOutputs[] => {
      batches.push(requests.map((r) => r.data.HIST_IN.shape[1]));
      return requests.map((r) => {
        const hist = Float32Array.from([...(r.data.HIST_IN.data as Float32Array), Number(r.data.IN.data[0])]);
        return { OUT: new Float32Array([hist.reduce((a, b) => a + b, 0)]), HIST_OUT: new NDArray('FP32', [1, hist.length], hist) };
      });
    };
    triton.bind({
      modelName: 'history', inferFunc: history, inputs: [IN], outputs: [OUT],
      config: { maxBatchSize: 4, sequenceBatcher: { states: [{ inputName: 'HIST_IN', outputName: 'HIST_OUT', dtype: 'FP32', shape: [-1] }] } },
    });
    await triton.run();
    const send = async (id: number, value: number, start = false): Promise<number> =>
      Number((await triton.infer('history', { IN: fp32(value) }, { sequenceId: id, sequenceStart: start })).OUT.data[0]);
    expect(await send(1, 1, true)).toBe(1);   // history [1]
    expect(await send(1, 2)).toBe(3);         // [1, 2]
    expect(await send(2, 10, true)).toBe(10); // [10]
    // Both ready at once, with histories of 2 and 1 values: they cannot share a batch.
    expect(await Promise.all([send(1, 3), send(2, 20)])).toEqual([6, 30]);
    // HIST_IN lengths per row. Sequence 2 holds slot 1: below it, sequence 1's slot gets a null
    // row shaped like the batch's first ready row (its state too).
    expect(batches).toEqual([[0], [1], [0, 0], [2, 2], [1, 1]]);
  });
});

describe('batching sequences', () => {
  test('direct: each sequence keeps its slot row; empty slots below a busy one are READY = 0 null rows', async () => {
    const acc = new Accumulator();
    bindAccumulator(acc);
    await triton.run();
    // Three sequences take slots 0, 1, 2; then only the sequence of slot 2 has a next step.
    await Promise.all([step(1, 1, { start: true }), step(2, 2, { start: true }), step(3, 3, { start: true })]);
    expect(await step(3, 30)).toBe(33);
    const last = acc.batches[acc.batches.length - 1];
    expect(last.map((r) => [r.nullRow, r.ready, r.value, r.corrid])).toEqual([
      [true, 0, 0, 0n], [true, 0, 0, 0n], [false, 1, 30, 3n],
    ]);
    // Null rows get no response and are not counted as inferences.
    const stats = triton.model('acc').stats();
    expect(stats.inferenceCount).toBe(4);
  });

  test('direct: steps of concurrent sequences queued while the instance is busy run as one batch, in slot order', async () => {
    const acc = new Accumulator();
    bindAccumulator(acc);
    await triton.run();
    const release = acc.hold();
    const first = step(1, 1, { start: true });
    await waitFor(() => acc.batches.length === 1, 'the first step to execute');
    const queued = [step(3, 3, { start: true }), step(2, 2, { start: true }), step(1, 10)];
    await sleep(20);
    release.open();
    expect(await Promise.all([first, ...queued])).toEqual([1, 3, 2, 11]);
    expect(acc.batches.map((b) => b.map((r) => (r.nullRow ? null : r.corrid)))).toEqual([[1n], [1n, 3n, 2n]]);
  });

  test('oldest: a batch takes at most one request per sequence, oldest first', async () => {
    const acc = new Accumulator();
    bindAccumulator(acc, { ...ACCUMULATOR, strategy: 'oldest', maxCandidateSequences: 4 }, 4);
    await triton.run();
    const release = acc.hold();
    const first = step(9, 0, { start: true });
    await waitFor(() => acc.batches.length === 1, 'the first step to execute');
    const queued = [
      step(1, 1, { start: true }), step(1, 10), step(2, 2, { start: true }), step(1, 100), step(2, 20),
    ];
    await sleep(20);
    release.open();
    expect(await Promise.all([first, ...queued])).toEqual([0, 1, 11, 2, 111, 22]);
    expect(acc.batches.map((b) => b.map((r) => r.value))).toEqual([[0], [1, 2], [10, 20], [100]]);
    expect(acc.batches.flat().some((r) => r.nullRow)).toBe(false);
  });

  test('a START with no free slot waits in the backlog until a sequence ends', async () => {
    const acc = new Accumulator();
    bindAccumulator(acc, ACCUMULATOR, 1);  // one slot
    await triton.run();
    expect(await step(1, 1, { start: true })).toBe(1);
    let secondDone = false;
    const second = step(2, 5, { start: true }).then((v) => { secondDone = true; return v; });
    await sleep(30);
    expect(secondDone).toBe(false);  // sequence 1 holds the only slot
    expect(await step(1, 1, { end: true })).toBe(2);
    expect(await second).toBe(5);
  });
});

describe('lifetime', () => {
  test('a sequence idle longer than maxSequenceIdleMicroseconds is released', async () => {
    bindAccumulator(new Accumulator(), { ...ACCUMULATOR, maxSequenceIdleMicroseconds: 20_000 });
    await triton.run();
    // No check here needs two steps within the 20 ms idle time: on a loaded machine two
    // consecutive steps can be further apart than that.
    expect(await step(4, 1, { start: true })).toBe(1);
    await sleep(100);  // past the idle time: expiry is applied when the next request arrives
    await expectRejects(step(4, 1), 'INVALID_ARG', /sequence 4 .* must specify the START flag/);
    expect(await step(4, 7, { start: true, end: true })).toBe(7);
  });

  test('cancelling a queued request cancels the queued requests of its sequence; others go on', async () => {
    const acc = new Accumulator();
    bindAccumulator(acc);
    await triton.run();
    const release = acc.hold();
    const busy = step(1, 1, { start: true });
    await waitFor(() => acc.batches.length === 1, 'the first step to execute');
    const controller = new AbortController();
    const cancelled = triton.infer('acc', { IN: fp32(2) }, { sequenceId: 1, signal: controller.signal });
    const successor = step(1, 3);
    const other = step(2, 5, { start: true });
    controller.abort();
    await expectRejects(cancelled, 'CANCELLED');
    await expectRejects(successor, 'CANCELLED');
    release.open();
    expect(await busy).toBe(1);
    expect(await other).toBe(5);
    await expectRejects(step(1, 1), 'INVALID_ARG', /must specify the START flag/);  // the sequence was released
  });
});

describe('iterative sequences', () => {
  test('request.reschedule() runs a request again, batched with requests that arrive meanwhile', async () => {
    const steps: number[][] = [];
    const countdown = (requests: Request[]): ResponseOutputs[] => {
      steps.push(requests.map((r) => Number(r.data.LEFT_IN.data[0])));
      return requests.map((r) => {
        const left = r.sequence!.start ? Number(r.data.IN.data[0]) : Number(r.data.LEFT_IN.data[0]) - 1;
        if (left > 0) r.reschedule();
        return { OUT: new Float32Array([left]), LEFT_OUT: new Float32Array([left]) };
      });
    };
    triton.bind({
      modelName: 'countdown', inferFunc: countdown, inputs: [IN], outputs: [OUT],
      config: {
        maxBatchSize: 4,
        sequenceBatcher: { iterativeSequence: true, states: [{ inputName: 'LEFT_IN', outputName: 'LEFT_OUT', dtype: 'FP32', shape: [1] }] },
      },
    });
    await triton.run();
    // No sequence id: the iterative sequencer makes each request a sequence of its own.
    const results = await Promise.all([triton.infer('countdown', { IN: fp32(3) }), triton.infer('countdown', { IN: fp32(1) })]);
    expect(results.map((r) => r.OUT.data[0])).toEqual([0, 0]);
    expect(steps.flat().length).toBe(6);  // 4 executions of the first, 2 of the second
    expect(Math.max(...steps.map((s) => s.length))).toBe(2);  // the two shared batches
    expect(() => new Request({}).reschedule()).toThrow(/iterative sequence model/);
  });

  test('a decoupled iterative model streams one response per step until the request ends', async () => {
    // A decoupled model keeps its per-request progress itself: the Request object is the same at every step.
    const left = new WeakMap<Request, number>();
    const tokens = (requests: Request[], context: TritonContext): void => {
      requests.forEach((r, i) => {
        if (context.isCancelled?.(i)) return;
        const now = r.sequence!.start ? Number(r.data.IN.data[0]) : left.get(r)! - 1;
        left.set(r, now);
        r.responseSender!.send({ OUT: new Float32Array([now]) }, { final: now === 0 });
        if (now > 0) r.reschedule();
      });
    };
    triton.bind({
      modelName: 'tokens', inferFunc: tokens as never, inputs: [IN], outputs: [OUT],
      config: {
        maxBatchSize: 4, decoupled: true,
        sequenceBatcher: { iterativeSequence: true },
      },
    });
    await triton.run();
    const got: number[] = [];
    for await (const response of triton.inferStream('tokens', { IN: fp32(3) })) got.push(Number(response.OUT.data[0]));
    expect(got).toEqual([3, 2, 1, 0]);
  });
});

describe('ensembles', () => {
  test("an ensemble passes the request's sequence id and flags to a sequence step model", async () => {
    const acc = new Accumulator();
    bindAccumulator(acc);
    const double = (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({
      OUT: new Float32Array([Number(r.data.IN.data[0]) * 2]),
    }));
    triton.bind({ modelName: 'double', inferFunc: double, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 4 } });
    triton.bind({
      modelName: 'double_then_sum', inputs: [{ ...IN, name: 'X' }], outputs: [{ ...OUT, name: 'Y' }],
      config: {
        maxBatchSize: 4,
        ensembleScheduling: {
          step: [
            { modelName: 'double', inputMap: { IN: 'X' }, outputMap: { OUT: 'D' } },
            { modelName: 'acc', inputMap: { IN: 'D' }, outputMap: { OUT: 'Y' } },
          ],
        },
      },
    });
    await triton.run();
    const run = async (value: number, flags: { sequenceStart?: boolean; sequenceEnd?: boolean }): Promise<number> =>
      Number((await triton.infer('double_then_sum', { X: fp32(value) }, { sequenceId: 77, ...flags })).Y.data[0]);
    expect(await run(1, { sequenceStart: true })).toBe(2);
    expect(await run(2, {})).toBe(6);
    expect(await run(3, { sequenceEnd: true })).toBe(12);
    expect(acc.rows.map((r) => [r.corrid, r.start, r.end])).toEqual([[77n, 1, 0], [77n, 0, 0], [77n, 0, 1]]);
  });
});

/**
 * The README's stateful-model example (an ES module block), copied verbatim: it must appear in
 * README.md as is. test/docs runs every README block; this test also checks what it prints, with
 * the import standing in as a require of this checkout.
 */
const README_IMPORT = "import { Triton, NDArray } from 'infernode';";
const README_SEQUENCE_EXAMPLE = String.raw`import { Triton, NDArray } from 'infernode';

const triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
triton.bind({
  modelName: 'running_sum',
  inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
  outputs: [{ name: 'sum', dtype: 'FP32', shape: [1] }],
  config: {
    maxBatchSize: 8,
    sequenceBatcher: {
      // The sum so far lives in the server, per sequence: 'sum_in' in, 'sum_out' back.
      states: [{ inputName: 'sum_in', outputName: 'sum_out', dtype: 'FP32', shape: [1] }],
    },
  },
  inferFunc: (requests) => requests.map((r) => {
    const sum = new Float32Array([r.data.sum_in.data[0] + r.data.x.data[0]]);
    return { sum, sum_out: sum };
  }),
});
await triton.run();
const x = (v) => ({ x: new NDArray('FP32', [1, 1], new Float32Array([v])) });
await triton.infer('running_sum', x(1), { sequenceId: 42, sequenceStart: true });
await triton.infer('running_sum', x(2), { sequenceId: 42 });
const { sum } = await triton.infer('running_sum', x(3), { sequenceId: 42, sequenceEnd: true });
console.log(sum.data[0]); // 6
await triton.stop();`;

test('README: the stateful model example runs as written', async () => {
  const readme = readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
  expect(readme).toContain(README_SEQUENCE_EXAMPLE);
  const logged: unknown[] = [];
  const log = jest.spyOn(console, 'log').mockImplementation((...args: unknown[]) => { logged.push(...args); });
  try {
    const body = README_SEQUENCE_EXAMPLE.replace(README_IMPORT, "const { Triton, NDArray } = require('infernode');");
    const run = new Function('require', `return (async () => {\n${body}\n})();`) as (r: (id: string) => unknown) => Promise<void>;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the README block's own require(), mapped to this checkout
    await run((id: string) => (id === 'infernode' ? require('../../ts/index') : require(id)));
  } finally {
    log.mockRestore();
  }
  expect(logged).toEqual([6]);
});
