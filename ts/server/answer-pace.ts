/**
 * Spreads the answers that settle together over turns of the event loop, so that a large batch
 * completing does not hold the loop for the whole of its writes.
 *
 * A batch of 32 requests completes in one callback, and each answer's continuation (encoding and
 * writing an HTTP response or a gRPC message) runs in that callback's microtasks. On a machine
 * whose client shares the cores, each write also hands the core to the woken client: one batch
 * held the loop for 3–6 ms, and every timer, health check and new request waited behind it. Here
 * the answers are handed to their continuations one at a time, in the order they settled, and
 * once a turn of the loop has spent ANSWER_BUDGET_MS on them the rest wait for the check phase of
 * the next turn, after that turn's timers and reads. One answer per turn (low load) goes at once,
 * through the same promise hops as before.
 *
 * One pace per JS environment (module state): the budget is the loop's, whichever frontend
 * writes. The queue holds one entry per settled answer not yet handed on, so it is bounded by the
 * requests in flight, which the frontends bound.
 */
import { performance } from 'node:perf_hooks';
import { currentTurn } from './loop-turn';

/** What one turn of the loop may spend handing answers to their continuations (ms). */
export const ANSWER_BUDGET_MS = 0.5;

type Delivery = () => void;

const RESOLVED = Promise.resolve();

/** Delivered slots at the queue's head that are dropped at once when a backlog never empties. */
const COMPACT_AFTER = 1024;

class AnswerPace {
  #queue: (Delivery | undefined)[] = [];
  #head = 0;
  /** A delivery is under way: a microtask or a setImmediate will take the next. */
  #active = false;
  /** The turn the budget belongs to, and when (performance.now()) it runs out. */
  #turn = -1;
  #until = 0;

  readonly #next = (): void => this.#deliverNext();

  /** Slots the queue holds, delivered ones not yet dropped included (tests: it stays bounded). @internal */
  get slots(): number {
    return this.#queue.length;
  }

  /** Runs `delivery` (which settles one answer) now, or after the answers that settled before it. */
  deliver(delivery: Delivery): void {
    this.#queue.push(delivery);
    if (!this.#active) {
      this.#active = true;
      this.#deliverNext();
    }
  }

  /**
   * Resolves once every answer settled so far has been handed to its continuation (answers
   * settling later queue behind it, so this is bounded). Shutdown waits for it before ending
   * what is left: a paced answer would otherwise be cut by a close that a drained model let run.
   */
  flushed(): Promise<void> {
    if (!this.#active) return RESOLVED;
    return new Promise((resolve) => this.deliver(resolve));
  }

  #deliverNext(): void {
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
      this.#active = false;
      return;
    }
    const turn = currentTurn();
    const now = performance.now();
    if (turn !== this.#turn) {
      this.#turn = turn;
      this.#until = now + ANSWER_BUDGET_MS;
    } else if (now >= this.#until) {
      setImmediate(this.#next);  // in the next turn's check phase: its turn differs
      return;
    }
    const delivery = this.#queue[this.#head]!;
    this.#queue[this.#head++] = undefined;
    // Under a backlog that never empties the array would only grow at its tail: drop the
    // delivered head once it is most of the array (amortized O(1) per answer).
    if (this.#head >= COMPACT_AFTER && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    try {
      delivery();
    } finally {
      // Queued after the continuation that delivery() just released, so it runs once that
      // continuation has written its answer and the time it took is on the clock. A reaction of
      // a settled promise rather than queueMicrotask, which makes an AsyncResource per call. In
      // `finally`: a delivery that threw must not stop the ones behind it.
      void RESOLVED.then(this.#next);
    }
  }
}

export const answerPace = new AnswerPace();
