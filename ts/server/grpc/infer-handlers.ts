/**
 * ModelInfer and ModelStreamInfer. A call's cancellation (client cancel, deadline, connection
 * loss) aborts its request: a queued request leaves the queue, a running one's result is dropped.
 * The stream answers each request once, in completion order; a failed request is answered in
 * band with `error_message` (and its id) and the stream stays open, unless the client opened the
 * stream with the `triton_grpc_error: true` header, which ends the stream with the error's status.
 */
import { batchWrites } from './batched-writes';
import type { Deadline, ServerDuplexStream, ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import type { ServerContext } from '../context';
import { DisconnectSignal } from '../http/disconnect';
import type { InferenceAnswer } from '../inference-service';
import type { Trace } from '../trace';
import { decodeRefusal, metadataValue, refusal, statusOf, type CallStatus } from './call-status';
import type { InferRequestMessage, ParamMap } from './infer-codec';
import type { InferResponseFields } from './infer-encode';
import { inferenceCall, inferResponse } from './infer-request';
import { isDecodeFailure } from './protos';
import type { TurnQueue } from '../turn';

/** Triton's answer (UNIMPLEMENTED) to unary ModelInfer on a decoupled model. */
const DECOUPLED_REFUSAL = "ModelInfer RPC doesn't support models with decoupled transaction policy";

/** Per-stream bound on requests being answered (queued, running, or whose response is unsent). */
export const STREAM_MAX_IN_FLIGHT = 1024;

export interface InferHandlerOptions {
  ctx: ServerContext;
  /** Starts the inferences read in one event-loop turn together (see TurnQueue). */
  turns: TurnQueue;
  forwardPattern: RegExp | null;
  /** Open streams, so shutdown can end them. */
  streams: Set<{ close(status: CallStatus): void }>;
}

function deadlineMs(deadline: Deadline): number {
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/**
 * Runs one decoded request; rejects with an InferenceServerError (or a bug's Error). `signal`
 * is a DisconnectSignal (two fields) rather than an AbortController, which costs microseconds
 * per request to create and listen to.
 */
function run(
  o: InferHandlerOptions, msg: InferRequestMessage, call: ServerUnaryCall<unknown, unknown> | ServerDuplexStream<unknown, unknown>,
  signal: DisconnectSignal, trace: Trace | null, decoupledRefusal?: string,
): Promise<InferenceAnswer> {
  try {
    const request = inferenceCall(o.ctx, msg, {
      metadata: call.metadata, forwardPattern: o.forwardPattern, deadline: deadlineMs(call.getDeadline()), signal,
    });
    request.trace = trace;
    return o.turns.run(() => {
      trace?.mark('REQUEST_START');
      return o.ctx.inference.infer(request, decoupledRefusal);
    });
  } catch (err) {
    return Promise.reject(err);
  }
}

/** The ModelInfer handler. */
export function modelInfer(o: InferHandlerOptions) {
  return (call: ServerUnaryCall<unknown, InferResponseFields>, callback: sendUnaryData<InferResponseFields>): void => {
    const refused = refusal(o.ctx, 'inference', call.metadata) ?? decodeRefusal(o.ctx, call.request);
    if (refused) {
      callback(refused);
      return;
    }
    // Cancelled between the request's arrival and this handler (a loaded event loop runs it late):
    // grpc-js has emitted 'cancelled' already, so no listener would see it; nobody waits for an answer.
    if (call.cancelled) return;
    const msg = call.request as InferRequestMessage;
    const trace = o.ctx.tracer.begin(msg.modelName, 'GRPC_WAITREAD_END');
    const signal = new DisconnectSignal();
    // grpc-js emits 'cancelled' at the end of every call, so the listener stays and checks
    // whether the call is still being answered (cheaper than once() and off()).
    let answered = false;
    call.on('cancelled', () => {
      if (!answered) signal.abort();
    });
    run(o, msg, call, signal, trace, DECOUPLED_REFUSAL).then((answer) => {
      answered = true;
      trace?.mark('REQUEST_END');
      if (call.cancelled) return;
      trace?.mark('GRPC_SEND_START');
      callback(null, inferResponse(answer));
      trace?.mark('GRPC_SEND_END');
      trace?.end(answer.modelVersion);
    }, (err: unknown) => {
      answered = true;
      trace?.end('');
      if (!call.cancelled) callback(statusOf(o.ctx, err));
    });
  };
}

/** The request parameter asking for an empty final response from a decoupled model. */
const EMPTY_FINAL = 'triton_enable_empty_final_response';

/** The two parameter maps a decoupled model's responses carry (shared: encoding only reads them). */
const FINAL: ParamMap = new Map([['triton_final_response', { kind: 'bool', value: true }]]);
const NOT_FINAL: ParamMap = new Map([['triton_final_response', { kind: 'bool', value: false }]]);

/** A decoupled model's response carries whether it completes its request, as in Triton. */
function finalFlag(response: InferResponseFields, final: boolean): InferResponseFields {
  response.parameters = final ? FINAL : NOT_FINAL;
  return response;
}

/** The ModelStreamInfer handler. */
export function modelStreamInfer(o: InferHandlerOptions) {
  return (call: ServerDuplexStream<unknown, unknown>): void => {
    const refused = refusal(o.ctx, 'inference', call.metadata);
    if (refused) {
      call.emit('error', refused);
      return;
    }
    new StreamSession(o, call).start();
  };
}

/** One open ModelStreamInfer call. */
class StreamSession {
  readonly #closeOnError: boolean;
  /** The cancellation signals of the requests in flight: the stream's end cancels them. */
  readonly #signals = new Set<DisconnectSignal>();
  #inFlight = 0;
  #paused = false;
  #halfClosed = false;
  #finished = false;
  /** The status the server's stop ends this stream with once its answers are written (see #closeForStop). */
  #stopping: CallStatus | null = null;
  readonly #entry = { close: (status: CallStatus): void => this.#closeForStop(status) };

  constructor(private readonly o: InferHandlerOptions, private readonly call: ServerDuplexStream<unknown, unknown>) {
    this.#closeOnError = metadataValue(call.metadata, 'triton_grpc_error') === 'true';
  }

  start(): void {
    this.o.streams.add(this.#entry);
    batchWrites(this.call);
    this.call.on('data', (request: unknown) => this.#onRequest(request));
    this.call.on('end', () => {
      this.#halfClosed = true;
      this.#maybeFinish();
    });
    this.call.on('cancelled', () => {
      this.#finished = true;
      this.#cancelAll();
      this.o.streams.delete(this.#entry);
    });
  }

  #onRequest(request: unknown): void {
    if (this.#finished) return;
    this.#inFlight++;
    if (this.#inFlight >= STREAM_MAX_IN_FLIGHT && !this.#paused) {
      this.#paused = true;
      this.call.pause();
    }
    const refused = refusal(this.o.ctx, 'inference', this.call.metadata) ?? decodeRefusal(this.o.ctx, request);
    if (refused) {
      // With the request's id when it decoded, so the client can match the refusal (Triton's too).
      this.#answerError(refused, isDecodeFailure(request) ? '' : (request as InferRequestMessage).id ?? '');
      return;
    }
    const msg = request as InferRequestMessage;
    const signal = new DisconnectSignal();
    if (this.o.ctx.inference.isDecoupled(msg.modelName, msg.modelVersion)) {
      this.#signals.add(signal);
      void this.#stream(msg, signal);
      return;
    }
    const trace = this.o.ctx.tracer.begin(msg.modelName, 'GRPC_WAITREAD_END');
    this.#signals.add(signal);
    run(this.o, msg, this.call, signal, trace).then((answer) => {
      this.#signals.delete(signal);
      trace?.mark('REQUEST_END');
      trace?.mark('GRPC_SEND_START');
      this.#write({ inferResponse: inferResponse(answer) }, () => {
        trace?.mark('GRPC_SEND_END');
        trace?.end(answer.modelVersion);
      });
    }, (err: unknown) => {
      this.#signals.delete(signal);
      trace?.end('');
      this.#answerError(statusOf(this.o.ctx, err), msg.id);
    });
  }

  /**
   * A request of a decoupled model: each response is written as the model produces it, with
   * `triton_final_response: false`; while the call's write buffer is full (a client reading
   * slowly) no more are taken from the model, so its bounded response queue fills, and past the
   * bound the request is cancelled (in-band error) instead of the server buffering without bound. The request ends flag-only;
   * the client sees that end as an empty final response only if it asked for one
   * (`triton_enable_empty_final_response`), as in Triton.
   */
  async #stream(msg: InferRequestMessage, signal: DisconnectSignal): Promise<void> {
    const emptyFinal = msg.parameters?.get(EMPTY_FINAL)?.value === true;
    let modelVersion = msg.modelVersion ?? '';
    try {
      const request = inferenceCall(this.o.ctx, msg, {
        metadata: this.call.metadata, forwardPattern: this.o.forwardPattern, deadline: deadlineMs(this.call.getDeadline()), signal,
      });
      for await (const answer of this.o.ctx.inference.inferStream(request)) {
        modelVersion = answer.modelVersion;
        if (this.#finished) break;  // the stream is gone: leaving the loop cancels the request
        if (!this.#writeResponse({ inferResponse: finalFlag(inferResponse(answer), false) })) await this.#drained();
      }
    } catch (err) {
      this.#signals.delete(signal);
      this.#answerError(statusOf(this.o.ctx, err), msg.id);
      return;
    }
    this.#signals.delete(signal);
    if (!emptyFinal) {
      this.#requestDone();
      return;
    }
    const final: InferResponseFields = { modelName: msg.modelName, modelVersion, id: msg.id, outputs: [], rawOutputContents: [] };
    this.#write({ inferResponse: finalFlag(final, true) });
  }

  #answerError(status: CallStatus, id: string): void {
    if (this.#closeOnError) {
      this.#inFlight--;
      this.#fail(status);
      return;
    }
    // Triton's in-band error: the message, and the failed request's id so the client can match it.
    const response: InferResponseFields = { modelName: '', modelVersion: '', id, outputs: [], rawOutputContents: [] };
    this.#write({ errorMessage: status.details, inferResponse: response });
  }

  /**
   * Writes one answer. With `last` (every answer but a decoupled model's non-final responses)
   * the request stops counting once it left (flow control bounds memory).
   */
  #write(message: { errorMessage?: string; inferResponse: InferResponseFields }, sent?: () => void, last = true): void {
    if (this.#finished) {
      if (last) this.#inFlight--;
      sent?.();
      return;
    }
    this.call.write(message, () => {
      sent?.();
      if (last) this.#requestDone();
    });
  }

  /**
   * Writes one non-final response of a decoupled request; false when the call's write buffer is
   * full (the client reads slowly): the caller then waits for #drained before taking more.
   */
  #writeResponse(message: { inferResponse: InferResponseFields }): boolean {
    if (this.#finished) return true;
    return this.call.write(message);
  }

  /** Resolves once the call's write buffer drained, or the call ended (nothing more will drain). */
  #drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        for (const event of ['drain', 'close', 'cancelled', 'error']) this.call.off(event, done);
        resolve();
      };
      for (const event of ['drain', 'close', 'cancelled', 'error']) this.call.once(event, done);
    });
  }

  /** A request's last answer left: it stops counting, and reading resumes below half the bound. */
  #requestDone(): void {
    this.#inFlight--;
    if (this.#paused && this.#inFlight < STREAM_MAX_IN_FLIGHT / 2) {
      this.#paused = false;
      this.call.resume();
    }
    this.#maybeFinish();
  }

  #maybeFinish(): void {
    if (this.#finished || this.#inFlight > 0) return;
    if (this.#halfClosed) {
      this.#finished = true;
      this.o.streams.delete(this.#entry);
      this.call.end();
    } else if (this.#stopping) {
      this.#fail(this.#stopping);
    }
  }

  /**
   * The server is stopping; its models have drained, so every request this stream accepted has
   * its answer written or being written. Reading goes on: a request read from now on is refused
   * in-band (refusal() says the server is shutting down, with the request's id), and a half-close
   * queued behind the last request is still seen (a paused stream never emits 'end', so pausing
   * here turned a client's clean half-close into a failed stream whenever the server had not read
   * to it yet). Once the answers have left, a stream the client half-closed ends with OK, as it
   * would have anyway; one the client keeps open ends with `status`. Not before: a grpc-js client
   * hands a non-OK status to the caller at once and drops the messages it has received but not
   * yet delivered (its subchannel call outputs a non-OK status without waiting for them), so
   * failing the stream while its answers were on their way lost them at a client that read
   * slowly. A client that reads nothing, or keeps sending, is ended by the server's close grace
   * (server.ts).
   */
  #closeForStop(status: CallStatus): void {
    if (this.#finished || this.#stopping) return;
    this.#stopping = status;
    this.#maybeFinish();
  }

  /** Ends the stream with an error status; requests still in flight are cancelled. */
  #fail(status: CallStatus): void {
    if (this.#finished) return;
    this.#finished = true;
    this.o.streams.delete(this.#entry);
    this.#cancelAll();
    this.call.emit('error', status);
  }

  #cancelAll(): void {
    const signals = [...this.#signals];
    this.#signals.clear();
    for (const signal of signals) signal.abort();
  }
}
