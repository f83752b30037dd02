/**
 * The cancellation signal of an HTTP request: fired when the client's connection closes before
 * the response was sent. A CancelSignal rather than an AbortController: this one costs an object
 * with two fields, an AbortSignal with a listener costs microseconds on every request.
 */
import type { CancelSignal } from '../../model';

export class DisconnectSignal implements CancelSignal {
  aborted = false;
  #listeners: (() => void)[] | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  /** The client went away: tell every listener, once. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners;
    this.#listeners = null;
    for (const listener of listeners ?? []) listener();
  }
}
