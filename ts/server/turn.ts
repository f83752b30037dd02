/**
 * Hands the inferences that arrive during one event-loop turn to the models together; both
 * frontends use it.
 *
 * Triton's frontends run several threads that enqueue concurrently, so its dynamic batcher
 * finds the requests of a burst queued together. In Node, each HTTP request's body (and each
 * HTTP/2 stream of a gRPC call, delivered by nghttp2) completes in its own callback, and a
 * model dispatches what is queued at the end of each callback (a microtask), so requests from
 * different connections would never share a batch. Starting every inference of a turn from
 * one callback in the check phase (setImmediate, right after the poll phase that read them)
 * restores what the batcher sees, at the cost of one setImmediate per turn, not per request.
 *
 * At low load that setImmediate is a hop with nothing to gather: when the previous turn started
 * at most one call, the first call of a turn starts at once, in the callback that read it; calls
 * after it in the same turn wait for the check phase as before, and once a turn has started two
 * or more, the next turns gather again. Concurrency 1 skips the hop; a burst loses nothing but
 * its first call, which the instance takes alone while the rest gather (a native instance is
 * busy with it anyway). "In flight" would be the wrong signal: a JS model answers within the
 * callback's microtasks, so nothing is ever in flight at the next callback and no batch would form.
 *
 * Which turn a call arrives in is read from the loop's iteration count (native loopTurns(), a
 * number in shared memory), so a call that starts at once schedules nothing: a setImmediate per
 * call only to learn where its turn ended cost more than the rest of the frontend at
 * concurrency 1.
 *
 * The other half, the answers: each call settles through answer-pace.ts, which hands the answers
 * of a completing batch to their continuations a bounded time per turn rather than all at once.
 */
import { answerPace } from './answer-pace';
import { currentTurn } from './loop-turn';

export class TurnQueue {
  #calls: (() => void)[] = [];
  #scheduled = false;
  /** The turn the latest call arrived in, and how many calls arrived in it. */
  #turn = -1;
  #turnSize = 0;
  /** How many calls the turn with calls before `#turn` had. */
  #lastTurnSize = 0;

  readonly #flush = (): void => {
    this.#scheduled = false;
    const calls = this.#calls;
    this.#calls = [];
    for (const call of calls) call();
  };

  /** Counts a call in its turn; true when it may start at once (the first of a turn after a quiet one). */
  #count(): boolean {
    const turn = currentTurn();
    if (turn !== this.#turn) {
      this.#lastTurnSize = this.#turnSize;
      this.#turn = turn;
      this.#turnSize = 0;
    }
    return this.#turnSize++ === 0 && this.#lastTurnSize <= 1;
  }

  /** Runs `task` with the other tasks of this turn, in the check phase. */
  submit(task: () => void): void {
    this.#calls.push(task);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  /**
   * Runs `start` with the other calls of this turn (at once when the previous turn was quiet);
   * settles as its promise does.
   */
  run<T>(start: () => Promise<T>): Promise<T> {
    // Both ways settle through the same number of promise hops: the answers of one gRPC stream
    // are written in the order they settle, and a sequence's responses must keep their order
    // when one call started at once and the one before it had gathered. answerPace hands them
    // on in the order they settled.
    return new Promise<T>((resolve, reject) => {
      const call = (): void => {
        callStart(start).then(
          (value) => answerPace.deliver(() => resolve(value)),
          (err: unknown) => answerPace.deliver(() => reject(err)),
        );
      };
      if (this.#count()) call();
      else this.submit(call);
    });
  }
}

/** `start()`, a synchronous throw as a rejection. */
function callStart<T>(start: () => Promise<T>): Promise<T> {
  try {
    return start();
  } catch (err) {
    return Promise.reject(err);
  }
}
