/**
 * `POST /v2/models/{m}[/versions/{v}]/generate` and `/generate_stream`: Triton's generate
 * extension (generate-mapping.ts holds the JSON mapping), for decoupled and non-decoupled models.
 *
 * - `generate`: exactly one response, as `application/json`. A decoupled model that sends no
 *   response or a second one fails with Triton's text (INTERNAL, 500); at the second response
 *   the request is cancelled, since its answer can only be that error.
 * - `generate_stream`: server-sent events, `data: {...}\n\n` per response, the stream ends
 *   after the final response. An error after the first event is one more event,
 *   `data: {"error": "..."}`, under the 200 already sent; an error as the model's first answer is
 *   that event under the error's status (the status line goes out with the first event, as in
 *   Triton). Errors before inference (parsing, mapping, validation when queued, unknown model)
 *   are a plain JSON error with its status.
 *
 * Backpressure: the next response is taken from the model's response stream only once the
 * previous event was written (`write()` returned true, or 'drain' came), so a client that reads
 * slowly makes the stream's bounded queue fill, and past its bound the model cancels the request
 * (an error event the client reads after the events before it). The server holds at most that
 * queue and the socket's buffers for a stream.
 *
 * Cancellation: a client that closes its connection aborts the call's DisconnectSignal (the
 * server's one 'close' listener): a queued request leaves the queue, a running decoupled
 * request is cancelled (its generator is stopped at its next response), nothing more is written
 * and the model counts the request as cancelled.
 *
 * Threads: everything here runs on the JS main thread.
 */
import type { ServerResponse } from 'node:http';
import { InferenceServerError, boundMessage, toInferenceServerError } from '../../../errors';
import type { BoundModel } from '../../../model';
import type { NDArray } from '../../../tensor';
import type { InferenceCall } from '../../inference-service';
import { resolveModel } from '../../inference-service';
import { exitingRefusal } from '../../exiting';
import { readBody } from '../body';
import type { HttpCall } from '../call';
import { DisconnectSignal } from '../disconnect';
import { decodeGenerateRequest, encodeGenerateResponse, parseGenerateBody } from '../generate-mapping';
import { sendBody } from '../respond';

/** Triton's text (src/http_server.cc) when `generate` does not get exactly one response. */
export const NOT_ONE_RESPONSE = 'generate expects model to produce exactly 1 response, use generate stream for model that ' +
  'generates various number of responses';

const SSE_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' };

/** The responses of one request: each item one response's outputs. */
type Responses = AsyncIterator<Record<string, NDArray>>;

/** A decoded generate request (its signal aborted when the connection closes) and its model. */
interface Prepared {
  model: BoundModel;
  request: InferenceCall;
}

export function generate(call: HttpCall): Promise<void> {
  return serve(call, false);
}

export function generateStream(call: HttpCall): Promise<void> {
  return serve(call, true);
}

async function serve(call: HttpCall, streaming: boolean): Promise<void> {
  const { ctx } = call;
  const refused = exitingRefusal(ctx, 'HTTP');
  if (refused) throw refused;
  const prepared = await prepare(call);
  if (!prepared.model.config.decoupled) {
    const answer = await call.settings.turn.run(() => ctx.inference.infer(prepared.request));
    if (call.res.destroyed) return;
    const outputs: Record<string, NDArray> = {};
    for (const o of answer.outputs) if (o.data) outputs[o.name] = o.data;
    const text = encodeGenerateResponse(prepared.model, prepared.request.id, outputs);
    if (streaming) return sendEvents(call.res, [event(text)]);
    return sendJsonBody(call, text);
  }
  const responses = ctx.inference.openStream(prepared.request);
  // A request refused when queued (missing inputs, wrong shapes, model stopped) is refused
  // before inference: a plain JSON error, as Triton's TRITONSERVER_ServerInferAsync failure.
  if (responses.closed) await firstFailure(responses);
  if (streaming) return streamEvents(call, prepared, responses);
  return oneResponse(call, prepared, responses);
}

/** Reads the body and maps it onto the model's inputs and parameters. */
async function prepare(call: HttpCall): Promise<Prepared> {
  const { ctx, req, params, settings } = call;
  const model = resolveModel(ctx.triton, params.model!, params.version);
  const body = await readBody(req, settings.maxInputSize);
  const request = decodeGenerateRequest(parseGenerateBody(body, model.name), model, params.version, settings.maxInputSize);
  call.disconnect = new DisconnectSignal();
  request.signal = call.disconnect;
  return { model, request };
}

/** Rethrows the error a stream failed with before it was read. */
async function firstFailure(responses: Responses): Promise<never> {
  await responses.next();
  throw new InferenceServerError('INTERNAL', 'a refused request stream ended without its error');
}

/** `generate` on a decoupled model: its only response, or Triton's error for none or more. */
async function oneResponse(call: HttpCall, { model, request }: Prepared, responses: Responses): Promise<void> {
  let only: Record<string, NDArray> | undefined;
  for (;;) {
    const step = await responses.next();
    if (step.done) break;
    if (only !== undefined) {
      await responses.return?.();  // the answer can only be the error: stop the model's work now
      throw new InferenceServerError('INTERNAL', NOT_ONE_RESPONSE);
    }
    only = step.value;
  }
  if (only === undefined) throw new InferenceServerError('INTERNAL', NOT_ONE_RESPONSE);
  if (call.res.destroyed) return;
  sendJsonBody(call, encodeGenerateResponse(model, request.id, only));
}

function sendJsonBody(call: HttpCall, text: string): void {
  sendBody(call.req, call.res, 200, { 'Content-Type': 'application/json' }, Buffer.from(text, 'utf8'));
}

/** One server-sent event carrying a JSON object. */
function event(json: string): string {
  return `data: ${json}\n\n`;
}

function errorEvent(err: InferenceServerError): string {
  return event(JSON.stringify({ error: boundMessage(err.message) }));
}

/**
 * The events of one stream, written in batches: the events produced in one turn of the event
 * loop (a generator's steps arrive within one) leave in one write of one string, at the end of
 * the turn's ticks (or as soon as they reach FLUSH_BYTES). A write per event, or one writev of
 * many small chunks, cost more than the rest of the response's path.
 */
class EventWriter {
  #pending = '';
  #scheduled = false;
  /** Set while the socket's buffer is full: resolves true on 'drain', false on 'close'. */
  #drained: Promise<boolean> | null = null;

  constructor(private readonly res: ServerResponse) {}

  /** Queues one event: true when the next may follow at once, else a promise of the same (false: closed). */
  write(text: string): true | Promise<boolean> {
    if (this.res.destroyed) return Promise.resolve(false);
    this.#pending += text;
    if (this.#pending.length >= FLUSH_BYTES) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      process.nextTick(() => this.flush());
    }
    return this.#drained ?? true;
  }

  /** Writes what is pending now (also before the stream ends). */
  flush(): void {
    this.#scheduled = false;
    if (this.#pending === '' || this.res.destroyed) return;
    const text = this.#pending;
    this.#pending = '';
    if (this.res.write(text) || this.#drained) return;
    this.#drained = new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.res.off('close', done);
        this.#drained = null;
        resolve(!this.res.destroyed);
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Ends the response with `last` after what is pending. */
  end(last = ''): void {
    const text = this.#pending + last;
    this.#pending = '';
    this.res.end(text);
  }
}

/** Pending event text written at once, without waiting for the end of the turn. */
const FLUSH_BYTES = 64 * 1024;

/** A complete event stream of known events (a non-decoupled model's one response). */
function sendEvents(res: ServerResponse, events: string[]): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(200, SSE_HEADERS);
  res.end(events.join(''));
}

/** `generate_stream` on a decoupled model: one event per response, pulled only after the last was written. */
async function streamEvents(call: HttpCall, { model, request }: Prepared, responses: Responses): Promise<void> {
  const { res } = call;
  const writer = new EventWriter(res);
  let started = false;
  try {
    for (;;) {
      const step = await responses.next();
      if (step.done) break;
      if (res.destroyed) break;
      const text = event(encodeGenerateResponse(model, request.id, step.value));
      if (!started) res.writeHead(200, SSE_HEADERS);
      started = true;
      const ready = writer.write(text);
      if (ready !== true && !(await ready)) break;
    }
  } catch (err) {
    // The model failed (or cancelled) the request, or a response could not be encoded.
    await responses.return?.();
    if (res.destroyed) return;
    const error = toInferenceServerError(err);
    if (!started) res.writeHead(error.httpStatus, SSE_HEADERS);
    writer.end(errorEvent(error));
    return;
  }
  // Left early (the client went away): leaving cancels the request.
  await responses.return?.();
  if (res.destroyed) return;
  if (!started) res.writeHead(200, SSE_HEADERS);
  writer.end();
}
