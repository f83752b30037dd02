/**
 * The soak's clients and how their answers are judged. Every request is tracked from the moment
 * it is sent until it settles; its outcome is one of:
 * - ok: answered, and every output element is the model's exact result;
 * - unavailable-reload: UNAVAILABLE/NOT_FOUND from a model that the control loop is cycling;
 * - cancelled: the client cancelled it (aborted the HTTP request, cancelled the gRPC call or
 *   the stream) — whatever it got is fine, provided an answer that came is right;
 * - disconnected: a raw connection closed mid-request on purpose (nothing to answer);
 * - shutdown: sent after SIGTERM, and refused (UNAVAILABLE) or cut (connection error);
 * - expired / released: a sequence step refused with Triton's START error because its sequence
 *   idled past max_sequence_idle / was cancelled (sequences.ts says when that is expected);
 * - failure: anything else, a wrong answer first of all.
 * Each worker sends one request at a time, so the load is bounded by the worker count, and stops
 * at the soak's deadline or once the server has exited.
 */
import { Client, Metadata, credentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import * as net from 'node:net';
import { GrpcInferenceServerClient } from '../client/grpc';
import { inferRequestFields, inferResult } from '../client/grpc-convert';
import { HttpInferenceServerClient } from '../client/http';
import { InferenceServerError } from '../errors';
import { decodeStreamResponse, type StreamResponseMessage } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';
import { NDArray } from '../tensor';
import type { Triton } from '../triton';
import { SOAK_MODELS, WIDTH, type SoakModel } from './repository';

export type Outcome = 'ok' | 'unavailable-reload' | 'cancelled' | 'disconnected' | 'shutdown' | 'expired' | 'released' | 'failure';
/** The sequence clients' channels (sequences.ts). */
export type SequenceChannel = 'seq-http' | 'seq-grpc' | 'seq-stream';
export type Channel = 'http' | 'grpc' | 'stream' | 'inprocess' | 'raw' | 'control' | SequenceChannel;

/** What every worker shares: the clock of the shutdown, the counts, the requests not yet settled. */
export class SoakState {
  /** Date.now() when SIGTERM was sent (and the in-process Triton began stopping); null before. */
  sigtermAt: number | null = null;
  serverExited = false;
  /** Hard stop for every loop, whatever happens. */
  readonly deadline: number;
  readonly counts = new Map<string, number>();
  readonly failures: string[] = [];
  readonly pending = new Set<Promise<unknown>>();
  sent = 0;

  constructor(deadline: number) {
    this.deadline = deadline;
  }

  /** Whether traffic should stop: the server is gone, or the time is up. */
  get stopped(): boolean {
    return this.serverExited || Date.now() > this.deadline;
  }

  record(channel: Channel, outcome: Outcome, detail = ''): void {
    const key = `${channel}:${outcome}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    // The wall-clock time says which failures came together (the server's log has the same clock).
    if (outcome === 'failure' && this.failures.length < 50) this.failures.push(`${new Date().toISOString().slice(11, 23)} ${channel}: ${detail}`);
  }

  /** Tracks a request (`requests`: how many it carries) until it settles (for "every accepted request settled"). */
  track<T>(promise: Promise<T>, requests = 1): Promise<T> {
    this.sent += requests;
    this.pending.add(promise);
    const forget = (): void => { this.pending.delete(promise); };
    promise.then(forget, forget);
    return promise;
  }

  total(outcome: Outcome): number {
    let n = 0;
    for (const [key, count] of this.counts) if (key.endsWith(`:${outcome}`)) n += count;
    return n;
  }
}

const CANCEL_FRACTION = 0.05;

const random = (n: number): number => Math.floor(Math.random() * n);
const pick = <T>(list: readonly T[]): T => list[random(list.length)];

/** A batch of 1-4 rows of small integers (exact in FP32 through every model's arithmetic). */
function randomInput(): Float32Array {
  const data = new Float32Array((1 + random(4)) * WIDTH);
  for (let i = 0; i < data.length; i++) data[i] = random(2001) - 1000;
  return data;
}

/** Null when `output` is exactly the model's answer to `input`, else what is wrong. */
export function wrongAnswer(model: Pick<SoakModel, 'name' | 'expected'>, input: Float32Array, output: NDArray | undefined): string | null {
  if (!output) return `${model.name}: no output`;
  const rows = input.length / WIDTH;
  if (output.dtype !== 'FP32' || output.shape.join(',') !== `${rows},${WIDTH}`) {
    return `${model.name}: got ${output.dtype} [${output.shape.join(',')}], expected FP32 [${rows},${WIDTH}]`;
  }
  const data = output.data as Float32Array;
  for (let i = 0; i < input.length; i++) {
    const want = Math.fround(model.expected(input[i]));
    if (data[i] !== want) return `${model.name}: element ${i} is ${data[i]}, expected ${want} (input ${input[i]})`;
  }
  return null;
}

function isConnectionError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ECONNABORTED|ERR_SOCKET_CLOSED|UND_ERR_SOCKET)$/.test(code) ||
    /socket hang up|ECONNREFUSED|ECONNRESET|No connection established|Connection dropped/i.test(String((err as Error | undefined)?.message));
}

/** The outcome of a request that failed. */
export function classifyError(
  state: SoakState, model: { cycled: boolean } | null, sentAt: number, cancelled: boolean, err: unknown,
): { outcome: Outcome; detail: string } {
  const detail = err instanceof Error ? `${(err as InferenceServerError).code ?? err.name}: ${err.message}` : String(err);
  if (cancelled) return { outcome: 'cancelled', detail };
  const code = err instanceof InferenceServerError ? err.code : null;
  const refused = code === 'UNAVAILABLE' || code === 'NOT_FOUND' || isConnectionError(err);
  if (state.sigtermAt !== null && sentAt >= state.sigtermAt && refused) return { outcome: 'shutdown', detail };
  // Sent just before SIGTERM, read by the server just after it: refused as the server stops.
  if (state.sigtermAt !== null && code === 'UNAVAILABLE' && /exiting|shutting down|stopp/i.test(detail)) return { outcome: 'shutdown', detail };
  if (model?.cycled && (code === 'UNAVAILABLE' || code === 'NOT_FOUND')) return { outcome: 'unavailable-reload', detail };
  // A draining server answers UNAVAILABLE for every model it had, never NOT_FOUND (issue 16 item
  // 12): a NOT_FOUND at shutdown is a failure like any other.
  return { outcome: 'failure', detail: `${detail} (sent ${state.sigtermAt === null ? 'before SIGTERM' : `${sentAt - state.sigtermAt} ms after SIGTERM`})` };
}

/** Sends one request through `send`, judges the answer with `check`, records the outcome. */
async function judged<T>(
  state: SoakState, channel: Channel, model: SoakModel, cancelled: () => boolean,
  send: () => Promise<T>, check: (answer: T) => string | null,
): Promise<void> {
  const sentAt = Date.now();
  try {
    const answer = await state.track(send());
    const wrong = check(answer);
    if (wrong) state.record(channel, 'failure', `wrong answer: ${wrong}`);
    else state.record(channel, cancelled() ? 'cancelled' : 'ok');
  } catch (err) {
    const { outcome, detail } = classifyError(state, model, sentAt, cancelled(), err);
    state.record(channel, outcome, `${model.name}: ${detail}`);
  }
}

/**
 * Node's HTTP/2 server (nghttp2's rapid-reset protection, CVE-2023-44487; grpc-js's server has no
 * setting for it) ends a connection with GOAWAY(INTERNAL_ERROR) once its client has reset more
 * than 1000 streams plus 33 a second, and every call on it fails ("Received RST_STREAM with
 * code 2"). A soak gRPC client that cancels calls therefore has a connection of its own
 * (grpc-js would otherwise share one between clients of the same address and options) and
 * cancels only while this budget, well under the server's, allows.
 */
export class ResetBudget {
  static readonly BURST = 300;
  static readonly PER_SECOND = 15;
  private tokens = ResetBudget.BURST;
  private refilledAt = Date.now();

  /** Whether one more reset fits (and counts it). */
  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(ResetBudget.BURST, this.tokens + ((now - this.refilledAt) / 1000) * ResetBudget.PER_SECOND);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }
}

/** grpc-js channel options for a connection of the client's own (see ResetBudget). */
export const OWN_CONNECTION = { 'grpc.use_local_subchannel_pool': 1 } as const;

/** An AbortController that fires within a few milliseconds, for CANCEL_FRACTION of the requests. */
function maybeCancel(budget?: ResetBudget): { signal?: AbortSignal; cancelled: () => boolean } {
  if (Math.random() >= CANCEL_FRACTION || (budget && !budget.take())) return { cancelled: () => false };
  const controller = new AbortController();
  setTimeout(() => controller.abort(), random(4));
  return { signal: controller.signal, cancelled: () => controller.signal.aborted };
}

/** One HTTP client: binary tensors, some requests aborted mid-flight. */
export async function httpWorker(state: SoakState, port: number): Promise<void> {
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`, { timeoutMs: 60_000, binaryInputs: Math.random() < 0.5 });
  try {
    while (!state.stopped) {
      const model = pick(SOAK_MODELS);
      const input = randomInput();
      const { signal, cancelled } = maybeCancel();
      await judged(state, 'http', model, cancelled,
        () => client.infer({ modelName: model.name, inputs: { [model.input]: new NDArray('FP32', [input.length / WIDTH, WIDTH], input) }, signal }),
        (r) => wrongAnswer(model, input, r.outputs[model.output]));
    }
  } finally {
    await client.close?.();
  }
}

/** One gRPC client (its own channel): unary ModelInfer, some calls cancelled. */
export async function grpcWorker(state: SoakState, port: number): Promise<void> {
  const client = new GrpcInferenceServerClient(`127.0.0.1:${port}`, { timeoutMs: 60_000, channelOptions: OWN_CONNECTION });
  const budget = new ResetBudget();
  try {
    while (!state.stopped) {
      const model = pick(SOAK_MODELS);
      const input = randomInput();
      const { signal, cancelled } = maybeCancel(budget);
      await judged(state, 'grpc', model, cancelled,
        () => client.infer({ modelName: model.name, inputs: { [model.input]: new NDArray('FP32', [input.length / WIDTH, WIDTH], input) }, signal }),
        (r) => wrongAnswer(model, input, r.outputs[model.output]));
    }
  } finally {
    await client.close();
  }
}

const STREAM_PATH = '/inference.GRPCInferenceService/ModelStreamInfer';

/**
 * ModelStreamInfer: streams of 1-8 requests (ids name them), answers matched by id; one stream
 * in five is cancelled by the client after some of its answers (within its ResetBudget).
 */
export async function streamWorker(state: SoakState, port: number, worker: number): Promise<void> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), OWN_CONNECTION);
  const budget = new ResetBudget();
  let streamNo = 0;
  try {
    while (!state.stopped) await state.track(oneStream(state, client, `${worker}.${streamNo++}`, budget), 0);
  } finally {
    client.close();
  }
}

interface StreamRequest {
  model: SoakModel;
  input: Float32Array;
  sentAt: number;
}

function oneStream(state: SoakState, client: Client, streamId: string, budget: ResetBudget): Promise<void> {
  const count = 1 + random(8);
  const cancelAfter = Math.random() < 0.2 && budget.take() ? random(count) : -1;
  const call: ClientDuplexStream<Buffer, StreamResponseMessage> = client.makeBidiStreamRequest(
    STREAM_PATH, (b: Buffer) => b, decodeStreamResponse, new Metadata(), { deadline: Date.now() + 120_000 });
  const pending = new Map<string, StreamRequest>();
  let answered = 0;
  let cancelled = false;
  return new Promise((resolve) => {
    let finished = false;
    const finish = (err?: ServiceError): void => {
      if (finished) return;
      finished = true;
      for (const [id, req] of pending) {
        const { outcome, detail } = classifyError(state, req.model, req.sentAt, cancelled,
          err ? new InferenceServerError(err.code === 14 ? 'UNAVAILABLE' : err.code === 1 ? 'CANCELLED' : 'UNKNOWN', err.details) : new Error('the stream ended without answering'));
        state.record('stream', outcome, `${req.model.name} (stream ${streamId}, request ${id}): ${detail}`);
      }
      pending.clear();
      resolve();
    };
    call.on('data', (message: StreamResponseMessage) => {
      const id = message.inferResponse?.id ?? '';
      const req = pending.get(id);
      if (!req) {
        state.record('stream', 'failure', `stream ${streamId}: an answer for unknown request id '${id}'`);
        return;
      }
      pending.delete(id);
      if (message.errorMessage) {
        // In-band errors carry a message only; the reload and shutdown ones say what they are.
        const err = new InferenceServerError(/not found|unknown model/i.test(message.errorMessage) ? 'NOT_FOUND'
          : /unavailable|not ready|unload|exiting|shutting down/i.test(message.errorMessage) ? 'UNAVAILABLE' : 'UNKNOWN', message.errorMessage);
        const { outcome, detail } = classifyError(state, req.model, req.sentAt, cancelled, err);
        state.record('stream', outcome, `${req.model.name}: ${detail}`);
      } else {
        let wrong: string | null;
        try {
          wrong = wrongAnswer(req.model, req.input, inferResult(message.inferResponse!).outputs[req.model.output]);
        } catch (err) {
          wrong = `undecodable answer: ${(err as Error).message}`;
        }
        state.record('stream', wrong ? 'failure' : cancelled ? 'cancelled' : 'ok', wrong ?? '');
      }
      if (++answered === cancelAfter) {
        cancelled = true;
        call.cancel();
      }
    });
    call.on('error', (err: ServiceError) => finish(err));
    call.on('end', () => finish());
    call.on('status', () => setImmediate(() => finish()));
    for (let i = 0; i < count; i++) {
      const model = pick(SOAK_MODELS);
      const input = randomInput();
      const id = `${streamId}-${i}`;
      pending.set(id, { model, input, sentAt: Date.now() });
      state.sent++;
      call.write(encodeInferRequest(inferRequestFields({
        modelName: model.name, id, inputs: { [model.input]: new NDArray('FP32', [input.length / WIDTH, WIDTH], input) },
      })));
    }
    call.end();
  });
}

/** The in-process model of the soak process's own Triton: OUT = IN × 2. */
export const IN_PROCESS_MODEL = { name: 'inprocess_double', input: 'IN', output: 'OUT', expected: (x: number) => x * 2, cycled: false };

export function bindInProcessModel(triton: Triton): void {
  triton.bind({
    modelName: IN_PROCESS_MODEL.name,
    inferFunc: (requests) => requests.map((r) => {
      const x = r.data.IN;
      return { OUT: new NDArray('FP32', x.shape, (x.data as Float32Array).map((v) => v * 2)) };
    }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [WIDTH] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [WIDTH] }],
    config: { maxBatchSize: 8 },
  });
}

/** `triton.infer()` in the soak process, some requests aborted. */
export async function inProcessWorker(state: SoakState, triton: Triton): Promise<void> {
  const model = IN_PROCESS_MODEL as SoakModel;
  while (!state.stopped) {
    const input = randomInput();
    const { signal, cancelled } = maybeCancel();
    await judged(state, 'inprocess', model, cancelled,
      () => triton.infer(model.name, { IN: new NDArray('FP32', [input.length / WIDTH, WIDTH], input) }, { signal }),
      (outputs) => wrongAnswer(model, input, outputs.OUT));
    // Paced (about 1000 requests/s per worker): in-process calls cost microseconds and would
    // otherwise take this process's CPU from the network clients that load the server.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/**
 * Clients that go away mid-request over raw sockets: a body cut short, a whole request and then
 * gone before the answer, a connection closed without a byte. Runs until SIGTERM.
 */
export async function disconnectWorker(state: SoakState, port: number): Promise<void> {
  let n = 0;
  while (!state.stopped && state.sigtermAt === null) {
    const model = pick(SOAK_MODELS);
    const body = Buffer.from(JSON.stringify({ inputs: [{ name: model.input, datatype: 'FP32', shape: [1, WIDTH], data: [1, 2, 3, 4] }] }));
    const head = `POST /v2/models/${model.name}/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const kind = n++ % 3;
    await state.track(new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      const done = (): void => {
        socket.destroy();
        resolve();
      };
      socket.on('error', done);
      socket.on('close', done);
      socket.on('connect', () => {
        if (kind === 0) socket.write(Buffer.concat([Buffer.from(head), body.subarray(0, body.length >> 1)]));
        else if (kind === 1) socket.write(Buffer.concat([Buffer.from(head), body]));
        setTimeout(done, random(3));
      });
    }));
    state.record('raw', 'disconnected');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
