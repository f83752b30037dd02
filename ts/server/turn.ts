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

  /** Runs `task` with the other tasks of this turn. */
  submit(task: () => void): void {
    this.#calls.push(task);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  /** Runs `start` with the other calls of this turn; settles as its promise does. */
  run<T>(start: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.submit(() => {
        try {
          start().then(resolve, reject);
        } catch (err) {
          reject(err);
        }
      });
    });
  }
}
