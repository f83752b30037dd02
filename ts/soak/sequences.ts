/**
 * The soak's sequence clients: stateful traffic to the running-sum models of repository.ts
 * (SUM = the sum of the sequence's inputs so far, CORRID_OUT = the id the model saw), checked
 * at every step. One worker per channel (HTTP, gRPC ModelInfer, gRPC ModelStreamInfer), each
 * with a few lanes; a lane runs sequences one after another, one request at a time, so each
 * lane's sequence waits only for its own answers. A sequence: START, random length, END, a
 * random id (uint64, half of them above 2^53, or a string for the STRING-CORRID model). Besides:
 * - abandoned sequences: a lane stops a sequence without END; once the idle time has surely
 *   passed, a step without START for its id must get Triton's START error (`expired`);
 * - aborted steps: the client cancels a step within 0-3 ms (`cancelled`). The step may never
 *   have reached the server, been cancelled in the queue (which releases the sequence), or have
 *   run; so the next step (not aborted, without START) must either get the START error or a
 *   CANCELLED error (it was queued behind the cancelled one: `released`, the sequence is over),
 *   or the sum with or without the aborted step's input (`ok`, the sequence goes on). Anything
 *   else is a failure.
 * Outcomes are recorded on the soak's SoakState like every other request's.
 */
import { Client, Metadata, credentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { GrpcInferenceServerClient } from '../client/grpc';
import { errorFromStatus, inferRequestFields, inferResult } from '../client/grpc-convert';
import { HttpInferenceServerClient } from '../client/http';
import type { SequenceOptions } from '../client/sequence';
import type { ClientInferRequest } from '../client/types';
import { InferenceServerError } from '../errors';
import { decodeStreamResponse, type StreamResponseMessage } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';
import { NDArray } from '../tensor';
import { SEQUENCE_IDLE_MS, SEQUENCE_MODELS, type SequenceModel } from './repository';
import { OWN_CONNECTION, ResetBudget, classifyError, type SequenceChannel, type SoakState } from './traffic';

/** Lanes (concurrent sequences) per sequence worker. */
const LANES = 2;
const MAX_STEPS = 12;
/** Per step: the lane abandons its sequence (no END) / aborts the step. */
const ABANDON_FRACTION = 0.04;
const ABORT_FRACTION = 0.05;
/** An abandoned id is probed this long after its last answer: the server's idle time has surely passed. */
const PROBE_AFTER_MS = 2 * SEQUENCE_IDLE_MS;

const random = (n: number): number => Math.floor(Math.random() * n);

/** One step as a channel answers it: the running sum and the id the model saw. */
interface StepAnswer {
  sum: number;
  corrid: string;
}

/** Sends one step of a sequence; throws the client's error (an InferenceServerError with Triton's code). */
type SendStep = (model: SequenceModel, x: number, sequence: SequenceOptions, signal?: AbortSignal) => Promise<StepAnswer>;

function request(model: SequenceModel, x: number, sequence: SequenceOptions, signal?: AbortSignal): ClientInferRequest {
  return { modelName: model.name, inputs: { IN: new NDArray('INT32', [1, 1], Int32Array.of(x)) }, ...sequence, signal };
}

function answerOf(outputs: Record<string, NDArray>): StepAnswer {
  const sum = outputs.SUM;
  const corrid = outputs.CORRID_OUT;
  if (!sum || !corrid) throw new Error(`the answer lacks SUM or CORRID_OUT: got ${Object.keys(outputs).join(', ')}`);
  return { sum: (sum.data as Int32Array)[0], corrid: Buffer.from((corrid.data as Uint8Array[])[0]).toString('utf8') };
}

/** A fresh correlation id: a string for a STRING CORRID; else a uint64, half of them above 2^53. */
function newId(model: SequenceModel, lane: string, n: number): number | bigint | string {
  if (model.corrid === 'STRING') return `soak-${lane}-${n}-${randomBytes(4).toString('hex')}`;
  if (Math.random() < 0.5) return 1 + random(Number.MAX_SAFE_INTEGER - 1);
  const id = randomBytes(8).readBigUInt64BE() | (1n << 53n);  // >= 2^53
  return id;
}

const isStartError = (err: unknown): boolean =>
  err instanceof InferenceServerError && err.code === 'INVALID_ARG' && /must specify the START flag/.test(err.message);
/** CANCELLED; over HTTP a 400 (Triton's HTTP status for a cancelled request), which the client reads as INVALID_ARG. */
const isCancelledError = (err: unknown): boolean => err instanceof InferenceServerError &&
  (err.code === 'CANCELLED' || (err.code === 'INVALID_ARG' && /was cancelled/.test(err.message)));

function maybeAbort(budget: ResetBudget | null): { signal?: AbortSignal; aborted: () => boolean } {
  if (Math.random() >= ABORT_FRACTION || (budget && !budget.take())) return { aborted: () => false };
  const controller = new AbortController();
  setTimeout(() => controller.abort(), random(4));
  return { signal: controller.signal, aborted: () => controller.signal.aborted };
}

/** A sequence a lane runs: what the server must hold for it. */
interface LiveSequence {
  model: SequenceModel;
  id: number | bigint | string;
  length: number;
  /** Steps answered. */
  done: number;
  /** The sum the server holds, when known. */
  sum: number;
  /** After an aborted step: the sums the server may hold (the step ran or did not); null when known. */
  maybeSums: number[] | null;
  /** Date.now() when the last answer came. */
  answeredAt: number;
  /** When the last answered step was sent: before the server finished it and its idle time began. */
  stepSentAt: number;
}

/** Sequences stopped without END, waiting to be probed. */
interface Abandoned {
  model: SequenceModel;
  id: number | bigint | string;
  at: number;
}

class Lane {
  private n = 0;
  private readonly abandoned: Abandoned[] = [];

  /** `resetBudget`: the gRPC connection's (shared by the worker's lanes); null over HTTP. */
  constructor(private readonly state: SoakState, private readonly channel: SequenceChannel, private readonly name: string,
    private readonly send: SendStep, private readonly resetBudget: ResetBudget | null) {}

  async run(): Promise<void> {
    while (!this.state.stopped) {
      const due = this.abandoned.length > 0 && Date.now() - this.abandoned[0].at >= PROBE_AFTER_MS ? this.abandoned.shift()! : null;
      if (due) await this.probeAbandoned(due);
      else await this.runSequence();
    }
  }

  private record(outcome: Parameters<SoakState['record']>[1], seq: { model: SequenceModel; id: unknown }, detail = ''): void {
    this.state.record(this.channel, outcome, `${seq.model.name} sequence ${String(seq.id)}: ${detail}`);
  }

  private async runSequence(): Promise<void> {
    const model = SEQUENCE_MODELS[Math.random() < 0.7 ? 0 : 1];
    const seq: LiveSequence = {
      model, id: newId(model, this.name, this.n++), length: 1 + random(MAX_STEPS), done: 0, sum: 0, maybeSums: null, answeredAt: 0, stepSentAt: 0,
    };
    while (!this.state.stopped && seq.done < seq.length) {
      if (seq.done > 0 && seq.maybeSums === null && Math.random() < ABANDON_FRACTION) {
        this.abandoned.push({ model, id: seq.id, at: seq.answeredAt });
        return;
      }
      if (!(await this.step(seq))) return;
    }
  }

  /** One step of `seq`; false when the sequence is over (released, or an error ended it). */
  private async step(seq: LiveSequence): Promise<boolean> {
    const x = random(2001) - 1000;
    const uncertain = seq.maybeSums;
    // The first step is START; after an aborted START the server may hold the sequence or not,
    // and the next step (without START) tells which.
    const start = seq.done === 0 && uncertain === null && seq.answeredAt === 0;
    const end = seq.done + 1 === seq.length;
    const { signal, aborted } = uncertain ? { signal: undefined, aborted: () => false } : maybeAbort(this.resetBudget);
    const sentAt = Date.now();
    let answer: StepAnswer;
    try {
      answer = await this.state.track(this.send(seq.model, x, { sequenceId: seq.id, sequenceStart: start, sequenceEnd: end }, signal));
    } catch (err) {
      return this.stepFailed(seq, { x, start, end, sentAt, aborted: aborted() }, err);
    }
    seq.answeredAt = Date.now();
    seq.stepSentAt = sentAt;
    const expected = (uncertain ?? [start ? 0 : seq.sum]).map((s) => s + x);
    const wrong = answer.corrid !== String(seq.id) ? `the model saw CORRID ${answer.corrid}`
      : !expected.includes(answer.sum) ? `SUM is ${answer.sum} at step ${seq.done + 1}, expected ${expected.join(' or ')} (input ${x})`
        : null;
    if (wrong) {
      this.record('failure', seq, `wrong answer: ${wrong}`);
      return false;
    }
    this.record(aborted() ? 'cancelled' : 'ok', seq);
    seq.sum = answer.sum;
    seq.maybeSums = null;
    seq.done++;
    return !end;
  }

  private stepFailed(seq: LiveSequence, step: { x: number; start: boolean; end: boolean; sentAt: number; aborted: boolean }, err: unknown): boolean {
    if (step.aborted) {
      // Cancelled by this client: the next step tells whether it ran. A cancelled END either ran
      // (the sequence is over: START error next) or did not; a cancelled START ran (sum x) or not.
      this.record('cancelled', seq);
      seq.maybeSums = step.start ? [step.x] : step.end ? [seq.sum] : [seq.sum, seq.sum + step.x];
      seq.answeredAt = Date.now();
      seq.stepSentAt = step.sentAt;
      return true;
    }
    if (seq.maybeSums !== null && (isStartError(err) || isCancelledError(err))) {
      this.record('released', seq);
      return false;
    }
    // Refused as expired when the server may have been idle for the sequence longer than the idle
    // time. The server counts from when it finished the previous step (after this client sent it)
    // to when it queued this one (before this refusal came back), so the time from sending the
    // previous step to this refusal bounds it: a server whose event loop stalled after this step
    // was sent (a busy 2-core CI machine) expires the sequence rightly, and only a refusal that
    // came back sooner than the idle time is a failure.
    const refusedAt = Date.now();
    if (isStartError(err) && seq.answeredAt > 0 && refusedAt - seq.stepSentAt > SEQUENCE_IDLE_MS) {
      this.record('expired', seq, `refused ${refusedAt - seq.stepSentAt} ms after sending its previous step`);
      return false;
    }
    const { outcome, detail } = classifyError(this.state, { cycled: false }, step.sentAt, false, err);
    this.record(outcome, seq, `step ${seq.done + 1}/${seq.length}${step.start ? ' (START)' : ''}` +
      `${seq.answeredAt > 0 ? `, ${step.sentAt - seq.answeredAt} ms after its last answer, refused ${refusedAt - seq.stepSentAt} ms ` +
        'after sending its previous step' : ''}: ${detail}`);
    return false;
  }

  /** A step without START for an abandoned id, past its idle time: Triton's START error. */
  private async probeAbandoned(seq: Abandoned): Promise<void> {
    const sentAt = Date.now();
    try {
      const answer = await this.state.track(this.send(seq.model, 1, { sequenceId: seq.id }));
      this.record('failure', seq, `abandoned ${sentAt - seq.at} ms ago (max_sequence_idle ${SEQUENCE_IDLE_MS} ms), ` +
        `it still answered (SUM ${answer.sum}) instead of refusing a step without START`);
    } catch (err) {
      if (isStartError(err)) {
        this.record('expired', seq);
        return;
      }
      const { outcome, detail } = classifyError(this.state, { cycled: false }, sentAt, false, err);
      this.record(outcome, seq, `probe of the abandoned sequence: ${detail}`);
    }
  }
}

/** Runs the lanes of one worker; `sendFor` gives each lane its way to send a step. */
async function runLanes(state: SoakState, channel: SequenceChannel, sendFor: () => SendStep, resetBudget: ResetBudget | null): Promise<void> {
  await Promise.all(Array.from({ length: LANES }, (_, i) => new Lane(state, channel, `${channel}.${i}`, sendFor(), resetBudget).run()));
}

/** Sequences over HTTP (binary tensors; uint64 ids above 2^53 travel exactly). */
export async function httpSequenceWorker(state: SoakState, port: number): Promise<void> {
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`, { timeoutMs: 60_000 });
  try {
    await runLanes(state, 'seq-http', () => async (model, x, sequence, signal) =>
      answerOf((await client.infer(request(model, x, sequence, signal))).outputs), null);
  } finally {
    await client.close?.();
  }
}

/** Sequences over gRPC ModelInfer. */
export async function grpcSequenceWorker(state: SoakState, port: number): Promise<void> {
  const client = new GrpcInferenceServerClient(`127.0.0.1:${port}`, { timeoutMs: 60_000, channelOptions: OWN_CONNECTION });
  try {
    await runLanes(state, 'seq-grpc', () => async (model, x, sequence, signal) =>
      answerOf((await client.infer(request(model, x, sequence, signal))).outputs), new ResetBudget());
  } finally {
    await client.close();
  }
}

/**
 * One ModelStreamInfer call carrying a lane's steps, one at a time, with `triton_grpc_error: true`
 * so an error ends the call with its status and Triton's code. A fresh call after an error or an
 * abort (which cancels the call); a lane's sequence may so span calls, as a client's may.
 * The call is half-closed, never cancelled, when the lane is done with it: resets are counted
 * (ResetBudget in traffic.ts).
 */
class StepStream {
  private call: ClientDuplexStream<Buffer, StreamResponseMessage> | null = null;
  private waiting: { id: string; resolve: (m: StreamResponseMessage) => void; reject: (e: unknown) => void } | null = null;
  private n = 0;

  constructor(private readonly client: Client) {}

  send(model: SequenceModel, x: number, sequence: SequenceOptions, signal?: AbortSignal): Promise<StepAnswer> {
    const call = this.call ?? this.open();
    const id = String(this.n++);
    const onAbort = (): void => {
      this.drop(call, new InferenceServerError('CANCELLED', `ModelStreamInfer step of model '${model.name}' was cancelled`));
      call.cancel();
    };
    return new Promise<StreamResponseMessage>((resolve, reject) => {
      this.waiting = { id, resolve, reject };
      signal?.addEventListener('abort', onAbort, { once: true });
      call.write(encodeInferRequest(inferRequestFields({ ...request(model, x, sequence), id })));
    }).finally(() => signal?.removeEventListener('abort', onAbort)).then((message) => {
      if (message.errorMessage) throw new InferenceServerError('UNKNOWN', message.errorMessage);
      return answerOf(inferResult(message.inferResponse!).outputs);
    });
  }

  /** Half-closes the call (the server ends it once it has answered). */
  end(): void {
    this.call?.end();
    this.call = null;
  }

  private open(): ClientDuplexStream<Buffer, StreamResponseMessage> {
    const metadata = new Metadata();
    metadata.set('triton_grpc_error', 'true');
    const call: ClientDuplexStream<Buffer, StreamResponseMessage> = this.client.makeBidiStreamRequest(
      STREAM_PATH, (b: Buffer) => b, decodeStreamResponse, metadata, { deadline: Date.now() + 600_000 });
    this.call = call;
    call.on('data', (message: StreamResponseMessage) => {
      const waiting = this.waiting;
      if (this.call !== call || !waiting) return;
      this.waiting = null;
      if ((message.inferResponse?.id ?? '') !== waiting.id) {
        waiting.reject(new Error(`ModelStreamInfer answered request '${message.inferResponse?.id ?? ''}', expected '${waiting.id}'`));
      } else {
        waiting.resolve(message);
      }
    });
    const ended = (err?: ServiceError): void => {
      this.drop(call, err ? errorFromStatus(err, 'ModelStreamInfer') : new Error('the stream ended without answering'));
    };
    call.on('error', (err: ServiceError) => ended(err));
    call.on('status', () => setImmediate(() => ended()));
    return call;
  }

  /** `call` is over: fails the step waiting on it; the next step opens a fresh call. */
  private drop(call: ClientDuplexStream<Buffer, StreamResponseMessage>, err: unknown): void {
    if (this.call !== call) return;
    this.call = null;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(err);
  }
}

const STREAM_PATH = '/inference.GRPCInferenceService/ModelStreamInfer';

/** Sequences over gRPC ModelStreamInfer: a call per lane, kept across steps and sequences. */
export async function streamSequenceWorker(state: SoakState, port: number): Promise<void> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), OWN_CONNECTION);
  const streams: StepStream[] = [];
  try {
    await runLanes(state, 'seq-stream', () => {
      const stream = new StepStream(client);
      streams.push(stream);
      return (model, x, sequence, signal) => stream.send(model, x, sequence, signal);
    }, new ResetBudget());
  } finally {
    for (const stream of streams) stream.end();
    client.close();
  }
}
