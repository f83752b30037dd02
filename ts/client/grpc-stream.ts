/**
 * Pulling the responses of one ModelStreamInfer call at the reader's pace (the async iterators
 * of `GrpcInferenceServerClient.streamInfer`). grpc-js pushes decoded messages as they arrive;
 * past READ_AHEAD unread ones the call is paused, so grpc-js stops reading from the connection
 * and HTTP/2 flow control slows the server (which takes a decoupled model's next response only
 * once the previous one was written) instead of this process buffering without bound.
 * Everything here runs on the event loop thread; grpc-js emits its events there.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import type { StreamResponseMessage } from '../server/grpc/infer-codec';

/** Decoded responses that may wait for the reader before reading pauses. */
const READ_AHEAD = 16;

/** What `next` answers when no response arrived within its timeout. */
export const TIMED_OUT = Symbol('timed out');

export class StreamReader {
  readonly #call: ClientDuplexStream<Buffer, StreamResponseMessage>;
  readonly #queue: StreamResponseMessage[] = [];
  /** Whether the call ended (its status arrived); messages may still sit in the readable's buffer. */
  #ended = false;
  #error: ServiceError | null = null;
  #wake: (() => void) | null = null;

  constructor(call: ClientDuplexStream<Buffer, StreamResponseMessage>) {
    this.#call = call;
    call.on('data', (message: StreamResponseMessage) => {
      this.#queue.push(message);
      if (this.#queue.length >= READ_AHEAD) call.pause();
      this.#notify();
    });
    // grpc-js emits 'error' (non-OK status) and then 'status', both after pushing the end; the
    // messages received before the status may still be buffered, so they are read first.
    call.on('error', (err: ServiceError) => { this.#error = err; });
    call.on('status', () => {
      this.#ended = true;
      call.resume();
      this.#notify();
    });
    call.on('end', () => this.#notify());
  }

  /** Whether the call's status arrived. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * The next response in arrival order; null once the call ended with OK; rejects with the
   * call's ServiceError (after the responses received before it); TIMED_OUT when `timeoutMs`
   * passed without a response.
   */
  async next(timeoutMs?: number): Promise<StreamResponseMessage | null | typeof TIMED_OUT> {
    for (;;) {
      const message = this.#queue.shift();
      if (message) {
        if (this.#queue.length < READ_AHEAD / 2 && this.#call.isPaused()) this.#call.resume();
        return message;
      }
      if (this.#ended && this.#call.readableLength === 0) {
        if (this.#error) throw this.#error;
        return null;
      }
      if (!(await this.#wait(timeoutMs))) return TIMED_OUT;
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  /** Resolves true on the next event of the call, false when `timeoutMs` passed first. */
  #wait(timeoutMs: number | undefined): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
        this.#wake = null;
        resolve(false);
      }, timeoutMs);
      this.#wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}
