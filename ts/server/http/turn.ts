/**
 * Hands the inferences that arrive during one event-loop turn to the models together.
 *
 * Triton's HTTP frontend runs several threads that enqueue concurrently, so its dynamic batcher
 * finds the requests of a burst queued together. In Node, each request's body completes in its
 * own socket callback, and a model dispatches what is queued at the end of each callback (a
 * microtask), so requests from different connections would never share a batch. Starting
 * every inference of a turn from one callback in the check phase (setImmediate, right after
 * the poll phase that read them) restores what the batcher sees, at the cost of one
 * setImmediate per turn, not per request.
 */
export class TurnQueue {
  #calls: (() => void)[] = [];
  #scheduled = false;

  readonly #flush = (): void => {
    this.#scheduled = false;
    const calls = this.#calls;
    this.#calls = [];
    for (const call of calls) call();
  };

  /** Runs `start` with the other calls of this turn; settles as its promise does. */
  run<T>(start: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#calls.push(() => {
        try {
          start().then(resolve, reject);
        } catch (err) {
          reject(err);
        }
      });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }
}
