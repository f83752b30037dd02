/**
 * TurnQueue (the HTTP frontend's per-turn start of inferences) and DisconnectSignal (its light
 * cancellation signal): calls of one turn start together after the poll phase, in order, and
 * each settles as its own promise does; a disconnect tells its listeners once.
 */
import { TurnQueue } from '../../ts/server/turn';
import { DisconnectSignal } from '../../ts/server/http/disconnect';
import { native } from '../../ts/native';
import { ANSWER_BUDGET_MS, answerPace } from '../../ts/server/answer-pace';
import { performance } from 'node:perf_hooks';

describe('loopTurns (the event loop\'s iteration count TurnQueue reads)', () => {
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  test('is one number for a whole callback and grows by one per turn of the loop', async () => {
    const turns = native().loopTurns();
    await nextTurn();
    const first = turns[0];
    expect(turns[0]).toBe(first);  // no iteration passes within one callback
    await nextTurn();
    expect(turns[0]).toBe(first + 1);
    await nextTurn();
    expect(turns[0]).toBe(first + 2);
  });

  test('is shared: every view of the environment reads the same count', async () => {
    await nextTurn();
    expect(native().loopTurns()[0]).toBe(native().loopTurns()[0]);
  });
});

describe('TurnQueue', () => {
  test('idle, the first call starts at once; the calls after it in its turn start together in the check phase, in order', async () => {
    const turn = new TurnQueue();
    const started: number[] = [];
    const results = [1, 2, 3].map((n) => turn.run(async () => {
      started.push(n);
      return n * 10;
    }));
    expect(started).toEqual([1]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1, 2, 3]);
    expect(await Promise.all(results)).toEqual([10, 20, 30]);
  });

  test('after a turn that started two or more calls, the next turn gathers from its first call; after a quiet turn, at once again', async () => {
    const turn = new TurnQueue();
    const started: string[] = [];
    const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    await Promise.all([turn.run(async () => { started.push('a1'); }), turn.run(async () => { started.push('a2'); })]);
    await nextTurn();
    const b = turn.run(async () => { started.push('b'); });  // the previous turn started two: b gathers
    expect(started).toEqual(['a1', 'a2']);
    await b;
    expect(started).toEqual(['a1', 'a2', 'b']);
    await nextTurn();
    void turn.run(async () => { started.push('c'); });  // b's turn started one: c starts at once
    expect(started).toEqual(['a1', 'a2', 'b', 'c']);
  });

  test('a call started at once never settles before a gathered one whose work finished first (a stream keeps its order)', async () => {
    const turn = new TurnQueue();
    const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    await Promise.all([turn.run(async () => 0), turn.run(async () => 0)]);  // a busy turn: the next gathers
    await nextTurn();
    let finishGathered!: () => void;
    let finishAtOnce!: () => void;
    const settled: string[] = [];
    const gathered = turn.run(() => new Promise<void>((resolve) => { finishGathered = resolve; }))
      .then(() => { settled.push('gathered'); });
    await nextTurn();  // the gathered call started at its turn's end; that turn started one
    const atOnce = turn.run(() => new Promise<void>((resolve) => { finishAtOnce = resolve; }))
      .then(() => { settled.push('at once'); });
    finishGathered();
    finishAtOnce();
    await Promise.all([gathered, atOnce]);
    expect(settled).toEqual(['gathered', 'at once']);
  });

  test('a call started at once schedules nothing: no setImmediate per call at low load', async () => {
    const turn = new TurnQueue();
    await new Promise((resolve) => setImmediate(resolve));
    const spy = jest.spyOn(global, 'setImmediate');
    try {
      await turn.run(async () => 1);
      expect(spy).not.toHaveBeenCalled();
      void turn.run(async () => 2);  // a second call in the same turn gathers: one setImmediate
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  test('a call that throws or rejects fails alone', async () => {
    const turn = new TurnQueue();
    const thrown = turn.run((): Promise<number> => { throw new Error('sync'); });
    const rejected = turn.run(() => Promise.reject(new Error('async')));
    const fine = turn.run(async () => 'ok');
    await expect(thrown).rejects.toThrow('sync');
    await expect(rejected).rejects.toThrow('async');
    await expect(fine).resolves.toBe('ok');
  });

  test('a call queued while a turn flushes waits for the next turn', async () => {
    const turn = new TurnQueue();
    const order: string[] = [];
    let inner: Promise<void> | undefined;
    await turn.run(async () => {
      order.push('first');
      inner = turn.run(async () => { order.push('second'); });
      await Promise.resolve();
      order.push('first done');
    });
    await inner;
    expect(order).toEqual(['first', 'first done', 'second']);
  });
});

describe('answer pacing (answer-pace.ts, through TurnQueue.run)', () => {
  const turns = native().loopTurns();
  /** A continuation that holds the loop for `ms`, as writing an answer does. */
  const hold = (ms: number): void => {
    const start = performance.now();
    while (performance.now() - start < ms) { /* busy: the time a write takes */ }
  };

  test('answers that settle together reach their continuations in settling order, a bounded time per turn of the loop', async () => {
    const turn = new TurnQueue();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const seen: { index: number; turn: number }[] = [];
    const answered = Array.from({ length: 30 }, async (_, index) => {
      const value = await turn.run(() => gate.then(() => index));
      hold(0.3);
      seen.push({ index: value, turn: turns[0] });
    });
    await new Promise((resolve) => setImmediate(resolve));
    release();  // all 30 settle in one microtask burst, as a completed batch does
    await Promise.all(answered);
    expect(seen.map((s) => s.index)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    const perTurn = new Map<number, number>();
    for (const s of seen) perTurn.set(s.turn, (perTurn.get(s.turn) ?? 0) + 1);
    // 0.3 ms an answer: at most ceil(budget / 0.3) start within a turn's budget (0.5 ms: at 0 and 0.3 ms).
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(Math.ceil(ANSWER_BUDGET_MS / 0.3));
    expect(perTurn.size).toBeGreaterThanOrEqual(Math.ceil(30 / Math.ceil(ANSWER_BUDGET_MS / 0.3)));
    expect(perTurn.size).toBeGreaterThan(1);  // 9 ms of writes never go in one turn
  });

  test('timers and I/O callbacks run between the turns of a long burst of answers', async () => {
    const turn = new TurnQueue();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    let done = 0;
    const answered = Array.from({ length: 40 }, async () => {
      await turn.run(() => gate);
      hold(0.3);
      done++;
    });
    await new Promise((resolve) => setImmediate(resolve));
    let doneWhenTimerRan = -1;
    setTimeout(() => { doneWhenTimerRan = done; }, 1);
    release();
    await Promise.all(answered);
    expect(doneWhenTimerRan).toBeGreaterThan(0);
    expect(doneWhenTimerRan).toBeLessThan(40);
  });

  test('a backlog that never empties keeps the queue bounded (delivered slots are dropped)', async () => {
    // Each answer handed on settles another, so ten stay queued for 5,000 deliveries.
    let left = 5000;
    let maxSlots = 0;
    await new Promise<void>((done) => {
      const settleOne = (): void => answerPace.deliver(() => {
        maxSlots = Math.max(maxSlots, answerPace.slots);
        if (--left === 0) done();
        else if (left >= 10) settleOne();
      });
      for (let i = 0; i < 10; i++) settleOne();
    });
    expect(maxSlots).toBeGreaterThan(10);
    expect(maxSlots).toBeLessThan(2 * 1024 + 20);
  });

  test('failures wait their turn too: a rejection is handed on in settling order with the answers around it', async () => {
    const turn = new TurnQueue();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const order: string[] = [];
    const calls = Array.from({ length: 12 }, (_, i) => turn.run(() => gate.then(() => {
      if (i % 3 === 1) throw new Error(`failed ${i}`);
      return i;
    })).then((v) => { hold(0.3); order.push(`ok ${v}`); }, (e: Error) => { hold(0.3); order.push(e.message); }));
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await Promise.all(calls);
    expect(order).toEqual(Array.from({ length: 12 }, (_, i) => (i % 3 === 1 ? `failed ${i}` : `ok ${i}`)));
  });
});

describe('DisconnectSignal', () => {
  test('listeners hear the disconnect once; late listeners are ignored once aborted', () => {
    const signal = new DisconnectSignal();
    const heard: string[] = [];
    signal.addEventListener('abort', () => heard.push('a'));
    signal.addEventListener('abort', () => heard.push('b'));
    expect(signal.aborted).toBe(false);
    signal.abort();
    signal.abort();
    signal.addEventListener('abort', () => heard.push('late'));
    expect(signal.aborted).toBe(true);
    expect(heard).toEqual(['a', 'b']);
  });
});
