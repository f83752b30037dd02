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
 */
export class TurnQueue {
  #calls: (() => void)[] = [];
  #scheduled = false;
  /** Calls this turn started at once (0 or 1), counted with the gathered ones when it ends. */
  #startedAtOnce = 0;
  /** How many calls the previous turn started. */
  #lastTurnSize = 0;

  readonly #flush = (): void => {
    this.#scheduled = false;
    const calls = this.#calls;
    this.#calls = [];
    this.#lastTurnSize = this.#startedAtOnce + calls.length;
    this.#startedAtOnce = 0;
    for (const call of calls) call();
  };

  #schedule(): void {
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  /** Runs `task` with the other tasks of this turn. */
  submit(task: () => void): void {
    this.#calls.push(task);
    this.#schedule();
  }

  /**
   * Runs `start` with the other calls of this turn (at once when the previous turn was quiet);
   * settles as its promise does.
   */
  run<T>(start: () => Promise<T>): Promise<T> {
    // Both ways settle through the same number of promise hops: the answers of one gRPC stream
    // are written in the order they settle, and a sequence's responses must keep their order
    // when one call started at once and the one before it had gathered.
    return new Promise<T>((resolve, reject) => {
      const call = (): void => {
        callStart(start).then(resolve, reject);
      };
      if (!this.#scheduled && this.#lastTurnSize <= 1) {
        this.#startedAtOnce = 1;
        this.#schedule();  // the turn's end, where it is counted; later calls of this turn gather
        call();
      } else {
        this.submit(call);
      }
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
