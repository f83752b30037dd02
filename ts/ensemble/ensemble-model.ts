/**
 * An ensemble (Triton's `platform: "ensemble"`): a model to the frontends (name, version, config,
 * infer, stats, stop, pendingCount), whose requests run a DAG of steps. Each step is an ordinary
 * request to the step model's own queue (BoundModel.infer), so it batches with direct traffic to
 * that model; a step starts as soon as the tensors it reads exist, so independent branches run
 * concurrently. Tensors pass between steps as they are: a native engine's outputs are views of
 * native memory and become the next step's inputs without a copy (`inputsOwned`).
 *
 * It extends BoundModel so that it registers and prints like any model (every frontend takes a
 * BoundModel); its own native model has no instances and never sees a request: it only exists
 * because BoundModel's constructor makes one. Everything runs on the JS thread.
 */
import { InferenceServerError, toInferenceServerError } from '../errors';
import type { NormalizedModelConfig } from '../config/normalize';
import { DEFAULT_EXIT_TIMEOUT_MS } from '../config/defaults';
import { BoundModel, type CancelSignal, type InferOptions, type RequestTimes, type StreamOptions } from '../model';
import {
  addDuration as add, modelCacheFor, withoutCacheStats, zeroDuration, type ModelResponseCache, type ModelStats,
} from '../cache/model-cache';
import type { ResponseCache } from '../cache/response-cache';
import type { NativeBatchStats, NativeDuration } from '../native';
import { DEFAULT_MAX_QUEUED_RESPONSES, ResponseStream } from '../decoupled';
import { NDArray, copyNDArray } from '../tensor';
import { holdModel } from './holds';
import { checkEnsembleRequest } from './request-check';
import { stepLabel, validateEnsemble, type EnsemblePlan } from './validate';

/** Resolves a step's model when a request runs (version -1: the latest). */
export type StepModelLookup = (name: string, version: number) => BoundModel;

/** A cancel signal the ensemble aborts itself (a step failed) or forwards (the caller's). */
class StepSignal implements CancelSignal {
  aborted = false;
  readonly #listeners: (() => void)[] = [];
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) listener();
    else this.#listeners.push(listener);
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const l of this.#listeners.splice(0)) l();
  }
}

/** An AbortSignal has removeEventListener; a frontend's lighter CancelSignal may not. */
type CallerSignal = CancelSignal & { removeEventListener?: (type: 'abort', listener: () => void) => void };

/**
 * Forwards the caller's signal to the request's own until the request settles; returns what
 * unhooks it. A signal aborted before the request aborts it at once (an AbortSignal fires
 * 'abort' only once, so a listener added later never runs). Unhooking matters for a long-lived
 * signal shared by many requests (an app's shutdown signal): each request would leave a listener
 * on it, and what the listener holds, for as long as the signal lives.
 */
function forwardAbort(from: CallerSignal | undefined, to: StepSignal): () => void {
  if (!from) return () => undefined;
  if (from.aborted) {
    to.abort();
    return () => undefined;
  }
  const listener = (): void => to.abort();
  from.addEventListener('abort', listener, { once: true });
  return () => from.removeEventListener?.('abort', listener);
}

/** Counts in flight per step and queues what waits (max_inflight_requests); 0 = unbounded. */
class StepGate {
  #inflight = 0;
  readonly #waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  enter(run: () => void): void {
    if (this.limit === 0 || this.#inflight < this.limit) {
      this.#inflight++;
      run();
    } else {
      this.#waiting.push(run);
    }
  }
  leave(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#inflight--;
  }
}

/**
 * What one ensemble request's statistics are made of, as Triton's RequestTracker keeps them
 * (core src/ensemble_scheduler/ensemble_scheduler.cc): its own times, and its step requests'.
 */
interface RequestRecord {
  /** When the request reached the ensemble (performance.now()). */
  started: number;
  /** When its steps started to be sent: its queue time ends here (Triton's compute_start_ns). */
  computeStarted: number;
  /**
   * Its step requests' own times, summed as each succeeds (InferOptions.addTimesTo): Triton's
   * per-request context stats aggregator, the steps' secondary aggregator.
   */
  steps: RequestTimes;
  /**
   * Its batch size (inference_count, batch_stats), taken when it arrived: the caller's inputs
   * object is read no later (it may change it once infer() returned).
   */
  rows: number;
}

function newRecord(rows: number): RequestRecord {
  const now = performance.now();
  return { started: now, computeStarted: now, steps: { queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 }, rows };
}

const toNs = (ms: number): number => Math.max(0, Math.round(ms * 1e6));

const zeroBatchStats = (batchSize: number): NativeBatchStats => ({
  batchSize, computeInput: zeroDuration(), computeInfer: zeroDuration(), computeOutput: zeroDuration(),
});

/**
 * The ensemble tensors of one request. A tensor mapped to `undefined` was produced without data:
 * its step answered without that output (a non-strict JS model may). As in Triton (a placeholder
 * tensor, core #298/#399) it still counts as produced: a step reading it runs with that input
 * absent, and the ensemble's response leaves it out.
 */
type Tensors = Map<string, NDArray | undefined>;

/** A request that passed its checks: its tensors and the ensemble outputs it asked for. */
interface PreparedRequest {
  tensors: Tensors;
  wanted: string[];
}

/** What every continuation of one decoupled ensemble request shares. */
interface Flow {
  options: InferOptions;
  signal: StepSignal;
  /** The ensemble outputs the request asked for. */
  wanted: string[];
  /** Sends one response of the request. */
  emit: (outputs: Record<string, NDArray>) => void;
  /** Fails the request now: no step starts and no response is sent after it. */
  fail: (err: unknown) => void;
  /** Per step, its model as the request resolved it when it started. */
  models: BoundModel[];
  /** Where the request's step requests add their times (RequestRecord.steps). */
  steps: RequestTimes;
}

/** The step models one request holds while it runs (Triton's model handles). */
interface HeldSteps {
  /** Per step, its model, resolved once when the request started. */
  models: BoundModel[];
  release: () => void;
}

/**
 * The response's outputs: each wanted tensor that has data. One a step left out is not in the
 * response (Triton's "Composing models did not output tensor", core #399): a missing key, never
 * an undefined value that a frontend or the response cache would trip over.
 */
function responseOutputs(tensors: Tensors, wanted: string[]): Record<string, NDArray> {
  const outputs: Record<string, NDArray> = {};
  for (const name of wanted) {
    const arr = tensors.get(name);
    if (arr) outputs[name] = arr;
  }
  return outputs;
}

export class EnsembleModel extends BoundModel {
  readonly #plan: EnsemblePlan;
  readonly #lookup: StepModelLookup;
  /**
   * Per step, the config of the step model the DAG was last checked against. A step model
   * reloaded or bound anew with another config is checked again before the ensemble uses it
   * (#recheck), as Triton reloads the ensembles that depend on a model it reloads.
   */
  #checkedConfigs: NormalizedModelConfig[];
  /** The failed recheck's error for the step configs it saw (the ensemble is unavailable), or null. */
  #recheckFailure: { configs: NormalizedModelConfig[]; error: InferenceServerError } | null = null;
  readonly #gates: StepGate[];
  #pending = 0;
  #stopped = false;
  #drained: (() => void) | null = null;
  readonly #success: NativeDuration = zeroDuration();
  readonly #fail: NativeDuration = zeroDuration();
  /** The ensemble's own queue time per successful request (before its steps were sent). */
  readonly #queue: NativeDuration = zeroDuration();
  /** Per successful request, its step requests' compute times summed (Triton's ensemble statistics). */
  readonly #computeInput: NativeDuration = zeroDuration();
  readonly #computeInfer: NativeDuration = zeroDuration();
  readonly #computeOutput: NativeDuration = zeroDuration();
  /** By the request's batch size: one execution per successful request, with those sums. */
  readonly #batchStats = new Map<number, NativeBatchStats>();
  #inferenceCount = 0;
  #lastInferenceMs = 0;
  /** Triton's top-level ensemble cache: the whole DAG's answer, keyed on the ensemble's inputs. */
  #responseCache: ModelResponseCache | null = null;

  constructor(config: NormalizedModelConfig, plan: EnsemblePlan, lookup: StepModelLookup) {
    // A decoupled step makes the ensemble decoupled, as Triton sets it (ensemble_utils.cc).
    super({ ...config, instanceGroup: [], dynamicBatching: null, decoupled: plan.decoupled },
      { kind: 'js', funcs: [], strict: false });
    this.#plan = plan;
    this.#lookup = lookup;
    this.#checkedConfigs = config.ensembleScheduling!.steps.map((step) => lookup(step.modelName, step.modelVersion).config);
    const limit = config.ensembleScheduling!.maxInflightRequests;
    this.#gates = config.ensembleScheduling!.steps.map(() => new StepGate(limit));
  }

  override get pendingCount(): number {
    return this.#pending;
  }

  /**
   * Whether every step model is serving; when one is not (unloaded), the ensemble is not
   * available. Returns the first missing step's error, or null.
   */
  unavailableReason(): InferenceServerError | null {
    const models = this.#stepModels();
    return models instanceof InferenceServerError ? models : null;
  }

  /**
   * Every step's model as it serves now (version -1: the latest), checked against the DAG
   * (#recheck); the first step not serving, or the mismatch, as UNAVAILABLE.
   */
  #stepModels(): BoundModel[] | InferenceServerError {
    const steps = this.config.ensembleScheduling!.steps;
    const models: BoundModel[] = [];
    for (let i = 0; i < steps.length; i++) {
      try {
        models.push(this.#lookup(steps[i].modelName, steps[i].modelVersion));
      } catch (err) {
        return this.#stepUnavailable(i, err);
      }
    }
    return this.#recheck(models) ?? models;
  }

  /**
   * When a step model now serving has another config than the DAG was checked against (it was
   * reloaded, or a new version bound), checks the DAG again: a mismatch makes the ensemble
   * unavailable with the reason (UNAVAILABLE), until a step model that fits serves again; so is
   * a step that became decoupled or stopped being (the ensemble's own config would change: load
   * it again). Null when the DAG fits the models serving.
   */
  #recheck(models: BoundModel[]): InferenceServerError | null {
    const configs = models.map((m) => m.config);
    if (configs.every((c, i) => c === this.#checkedConfigs[i])) return null;
    const failed = this.#recheckFailure;
    if (failed && configs.every((c, i) => c === failed.configs[i])) return failed.error;
    let reason = '';
    try {
      const steps = this.config.ensembleScheduling!.steps;
      const byStep = new Map(steps.map((step, i) => [`${step.modelName}@${step.modelVersion}`, configs[i]]));
      const plan = validateEnsemble(this.config, (name, version) => byStep.get(`${name}@${version}`)!);
      if (plan.decoupledSteps.some((d, i) => d !== this.#plan.decoupledSteps[i])) {
        reason = 'a step model became decoupled or stopped being so; load the ensemble again';
      }
    } catch (err) {
      reason = toInferenceServerError(err).message;
    }
    if (!reason) {
      this.#checkedConfigs = configs;
      this.#recheckFailure = null;
      return null;
    }
    const error = new InferenceServerError('UNAVAILABLE', `ensemble '${this.name}' is not available: a step model ` +
      `changed and no longer fits it (${reason}); load a step model that fits, or change the ensemble`);
    this.#recheckFailure = { configs, error };
    return error;
  }

  #stepUnavailable(i: number, err: unknown): InferenceServerError {
    const step = this.config.ensembleScheduling!.steps[i];
    return new InferenceServerError('UNAVAILABLE', `ensemble '${this.name}' is not available: its ${stepLabel(i, step)} is not ` +
      `serving (${toInferenceServerError(err).message}); load model '${step.modelName}' again`);
  }

  /**
   * A decoupled ensemble's request: plain steps run as in infer(); each response of a decoupled
   * step continues the rest of the DAG on its own (a copy of the tensors so far plus that
   * response's outputs), and every such continuation that produces the ensemble's outputs is one
   * response of the request. The request ends when every continuation has.
   */
  override inferStream(inputs: Record<string, NDArray>, options: StreamOptions = {}): ResponseStream {
    const signal = new StepSignal();
    const stream = new ResponseStream(options.maxQueuedResponses ?? DEFAULT_MAX_QUEUED_RESPONSES, () => signal.abort());
    if (!this.config.decoupled) {
      stream.fail(new InferenceServerError('UNSUPPORTED', `ensemble '${this.name}' is not decoupled: call infer()`));
      return stream;
    }
    if (this.#stopped) {
      stream.fail(new InferenceServerError('UNAVAILABLE', `model '${this.name}' is not ready: it was stopped`));
      return stream;
    }
    const prepared = this.#prepare(inputs, options);
    if (prepared instanceof InferenceServerError) {
      stream.fail(prepared);  // refused at its checks: not counted (#prepare)
      return stream;
    }
    const held = this.#holdSteps();
    const unhook = forwardAbort(options.signal, signal);
    const record = newRecord(this.#rows(inputs));
    this.#pending++;
    // The first failure ends the request at once, as Triton's ensemble_status_ does: the steps
    // in flight are cancelled, none starts, and no later response is sent.
    const fail = (err: unknown): void => {
      signal.abort();
      stream.fail(toInferenceServerError(err));
    };
    let first = true;
    const emit = (outputs: Record<string, NDArray>): void => {
      if (first) this.requestSink?.firstResponse(performance.now() - record.started);
      first = false;
      if (stream.push(outputs)) return;
      fail(new InferenceServerError('UNAVAILABLE', `request for model '${this.name}' was cancelled: its reader fell ` +
        `more than ${stream.maxQueued} responses behind (maxQueuedResponses)`));
    };
    let run: Promise<void>;
    if (held instanceof InferenceServerError) run = Promise.reject(held);
    else if (signal.aborted) run = Promise.reject(this.#cancelled());
    else {
      const flow: Flow = { options, signal, wanted: prepared.wanted, emit, fail, models: held.models, steps: record.steps };
      record.computeStarted = performance.now();
      run = this.#flow(prepared.tensors, this.#prunedSteps(prepared.wanted), flow);
    }
    run.then(() => {
      this.#succeeded(record, options);
      stream.end();
    }, (err: unknown) => {
      this.#failed(record, first);
      fail(err);  // the first failure's error stays the one the reader gets
    }).finally(() => {
      unhook();
      if (!(held instanceof InferenceServerError)) held.release();
      this.#pending--;
      if (this.#pending === 0 && this.#drained) this.#drained();
    });
    return stream;
  }

  /**
   * Runs what can run from `tensors` on: every ready plain step first (their outputs join
   * `tensors`), then the ready decoupled steps, whose responses each continue in a flow of their
   * own. A flow that forks ends there; one that does not emits the ensemble outputs if it has
   * them all. `done` holds the steps this flow (or its ancestors) ran.
   */
  async #flow(tensors: Tensors, done: Set<number>, flow: Flow): Promise<void> {
    const steps = this.config.ensembleScheduling!.steps;
    for (;;) {
      const ready = steps.map((_, i) => i).filter((i) => !done.has(i) &&
        this.#plan.needs[i].every((t) => tensors.has(t) || !this.#isProduced(t)));
      const plain = ready.filter((i) => !this.#plan.decoupledSteps[i]);
      if (plain.length > 0) {
        for (const i of plain) done.add(i);
        const produced = await Promise.all(plain.map((i) => this.#gated(i,
          () => this.#runStep(i, flow.models[i], tensors, flow.options, flow.signal, flow.steps))));
        for (const [tensor, arr] of produced.flat()) tensors.set(tensor, arr);
        continue;
      }
      if (ready.length > 0) {
        for (const i of ready) done.add(i);
        await Promise.all(ready.map((i) => this.#fork(i, tensors, done, flow)));
        return;
      }
      break;
    }
    if (flow.signal.aborted || !flow.wanted.every((name) => tensors.has(name))) return;
    flow.emit(responseOutputs(tensors, flow.wanted));
  }

  /**
   * Runs decoupled step `i`: each of its responses continues the DAG in a flow of its own. With
   * max_inflight_requests N, at most N of this step's continuations run at once and at most N
   * responses wait to be read: the step's generator is held back meanwhile (waitForReader), as
   * Triton's StepInflightRequestLimiter blocks a decoupled step's producer, so memory stays
   * bounded however fast the step answers.
   */
  async #fork(i: number, tensors: Tensors, done: Set<number>, flow: Flow): Promise<void> {
    const step = this.config.ensembleScheduling!.steps[i];
    const window = this.config.ensembleScheduling!.maxInflightRequests;
    const responses = flow.models[i].inferStream(this.#stepInputs(i, tensors), {
      ...this.#stepOptions(flow.options, flow.signal, step.outputMap, flow.steps),
      maxQueuedResponses: window > 0 ? window : DEFAULT_MAX_QUEUED_RESPONSES, waitForReader: window > 0,
    });
    const continuations: Promise<void>[] = [];
    let running = 0;
    let freed: (() => void) | null = null;
    const finished = (): void => {
      running--;
      const wake = freed;
      freed = null;
      wake?.();
    };
    try {
      for await (const outputs of responses) {
        if (flow.signal.aborted) break;
        const next = new Map(tensors);
        for (const [output, tensor] of Object.entries(step.outputMap)) next.set(tensor, outputs[output]);
        const continuation = this.#flow(next, new Set(done), flow);
        // A continuation that fails ends the request now, not once this step's stream ends.
        continuation.catch((err: unknown) => flow.fail(err));
        continuations.push(continuation);
        if (window === 0) continue;
        running++;
        continuation.then(finished, finished);
        // The next response is read only when a continuation has finished: until then the
        // step's stream fills to `window` and its generator waits.
        while (running >= window) await new Promise<void>((resolve) => { freed = resolve; });
      }
    } catch (err) {
      const e = toInferenceServerError(err);
      throw new InferenceServerError(e.code, `in ensemble '${this.name}', ${stepLabel(i, step)} failed: ${e.message}`);
    }
    await Promise.all(continuations);
  }

  /** `run` inside step `i`'s max_inflight_requests gate. */
  #gated<T>(i: number, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#gates[i].enter(() => run().then((value) => {
        this.#gates[i].leave();
        resolve(value);
      }, (err: unknown) => {
        this.#gates[i].leave();
        reject(err);
      }));
    });
  }

  override useResponseCache(cache: ResponseCache | null): void {
    if (this.#responseCache && this.#responseCache.cache === cache) return;
    this.#responseCache = modelCacheFor(this.config, cache);
  }

  override infer(inputs: Record<string, NDArray>, options: InferOptions = {}): Promise<Record<string, NDArray>> {
    const cache = this.#responseCache;
    if (cache && !this.#stopped) return cache.infer(inputs, options, () => this.#inferUncached(inputs, options), this.requestSink);
    return this.#inferUncached(inputs, options);
  }

  #inferUncached(inputs: Record<string, NDArray>, options: InferOptions): Promise<Record<string, NDArray>> {
    if (this.config.decoupled) {
      return Promise.reject(new InferenceServerError('UNSUPPORTED', `model '${this.name}' is decoupled (an ensemble with a ` +
        'decoupled step: 0..N responses per request): call inferStream() in process, or stream over gRPC ModelStreamInfer ' +
        'or HTTP generate_stream'));
    }
    if (this.#stopped) {
      return Promise.reject(new InferenceServerError('UNAVAILABLE', `model '${this.name}' is not ready: it was stopped`));
    }
    const record = newRecord(this.#rows(inputs));
    const prepared = this.#prepare(inputs, options);
    // Refused at its checks: not counted, as inferStream() and Triton (see #prepare).
    if (prepared instanceof InferenceServerError) return Promise.reject(prepared);
    this.#pending++;
    return this.#run(prepared, options, record).then((outputs) => {
      this.#succeeded(record, options);
      return outputs;
    }, (err: unknown) => {
      this.#failed(record, true);
      throw toInferenceServerError(err);
    }).finally(() => {
      this.#pending--;
      if (this.#pending === 0 && this.#drained) this.#drained();
    });
  }

  /**
   * Counts a successful request as Triton's RequestTracker reports it (infer_request.cc
   * ReportStatisticsWithDuration, infer_stats.cc UpdateSuccessWithDuration and
   * UpdateInferBatchStatsWithDuration): its duration; its queue time, the ensemble's own until
   * its steps were sent (a step's wait in its model's queue is in neither); as compute times,
   * its step requests' own summed; inference_count by its rows, one execution, and a batch_stats
   * entry of its batch size with the same sums. A nested ensemble's are its caller's step times.
   */
  #succeeded(record: RequestRecord, options: InferOptions): void {
    const steps = record.steps;
    const queueNs = toNs(record.computeStarted - record.started);
    const requestNs = toNs(performance.now() - record.started);
    add(this.#success, requestNs);
    add(this.#queue, queueNs);
    add(this.#computeInput, steps.computeInputNs);
    add(this.#computeInfer, steps.computeInferNs);
    add(this.#computeOutput, steps.computeOutputNs);
    const rows = record.rows;
    this.#inferenceCount += rows;
    const batchSize = Math.max(1, rows);
    let batch = this.#batchStats.get(batchSize);
    if (!batch) this.#batchStats.set(batchSize, batch = zeroBatchStats(batchSize));
    add(batch.computeInput, steps.computeInputNs);
    add(batch.computeInfer, steps.computeInferNs);
    add(batch.computeOutput, steps.computeOutputNs);
    this.#lastInferenceMs = Date.now();
    this.requestSink?.executed(requestNs, queueNs, steps.computeInputNs, steps.computeInferNs, steps.computeOutputNs);
    // A decoupled ensemble's first response was told when it was sent (inferStream's emit).
    if (!this.config.decoupled) this.requestSink?.firstResponse(requestNs / 1e6);
    const caller = options.addTimesTo;
    if (caller) {
      caller.queueNs += queueNs;
      caller.computeInputNs += steps.computeInputNs;
      caller.computeInferNs += steps.computeInferNs;
      caller.computeOutputNs += steps.computeOutputNs;
    }
  }

  /**
   * Counts a failed request: its duration only (Triton's UpdateFailure); what its steps took is
   * not counted. Its error is its first response when it sent none before
   * (`unanswered`): Triton's ensemble sends it as one, which observes the first-response
   * histogram as any response does (core infer_response.cc UpdateResponseMetrics).
   */
  #failed(record: RequestRecord, unanswered: boolean): void {
    const ms = performance.now() - record.started;
    add(this.#fail, toNs(ms));
    if (unanswered) this.requestSink?.firstResponse(ms);
  }

  /**
   * A request's batch size: its first input's rows. An entry set to undefined counts as absent
   * (checkEnsembleRequest), and this may run before the inputs were checked: only an NDArray
   * counts. (Reading `.rows` of an undefined entry threw when the request succeeded: infer()
   * rejected with a TypeError, and inferStream() left an unhandled rejection that ended the
   * process, its stream never ending.)
   */
  #rows(inputs: Record<string, NDArray>): number {
    if (this.config.maxBatchSize === 0) return 1;
    for (const name in inputs) {
      const arr: unknown = inputs[name];
      if (arr instanceof NDArray) return arr.rows;
    }
    return 1;
  }

  /**
   * The request's tensors (a caller's arrays copied once: steps may run after infer() returned)
   * and the outputs it wants, or the error that refuses it. A refused request (an input missing,
   * unexpected, of another datatype or shape, too many rows, an unknown output) is counted
   * nowhere, by infer() and inferStream() alike: Triton refuses it in InferenceRequest::Normalize,
   * which TRITONSERVER_ServerInferAsync runs before the request reaches any scheduler or its
   * statistics (no inference_stats.fail, no nv_inference_request_failure).
   */
  #prepare(given: Record<string, NDArray>, options: InferOptions): PreparedRequest | InferenceServerError {
    const config = this.config;
    const refused = checkEnsembleRequest(config, given);
    if (refused) return refused;
    const tensors: Tensors = new Map();
    for (const t of config.inputs) {
      const arr = given[t.name];
      if (arr !== undefined) tensors.set(t.name, options.inputsOwned ? arr : copyNDArray(arr));
    }
    const wanted = options.outputs ?? config.outputs.map((t) => t.name);
    for (const name of wanted) {
      if (!config.outputs.some((t) => t.name === name)) {
        return new InferenceServerError('INVALID_ARG', `unexpected inference output '${name}' for model '${this.name}'`);
      }
    }
    return { tensors, wanted };
  }

  /** One checked request through the DAG; rejects with the failing step named. */
  #run(prepared: PreparedRequest, options: InferOptions, record: RequestRecord): Promise<Record<string, NDArray>> {
    const steps = this.config.ensembleScheduling!.steps;
    const { tensors, wanted } = prepared;
    const held = this.#holdSteps();
    if (held instanceof InferenceServerError) return Promise.reject(held);
    const signal = new StepSignal();
    const unhook = forwardAbort(options.signal, signal);
    const waitingFor = this.#plan.needs.map((needs) => needs.filter((n) => !tensors.has(n) && this.#isProduced(n)).length);
    const pruned = this.#prunedSteps(wanted);
    return new Promise<Record<string, NDArray>>((resolve, reject) => {
      let remaining = steps.length - pruned.size;
      let failed = false;
      const finish = (err: InferenceServerError | null): void => {
        if (failed) return;
        if (err) {
          failed = true;
          signal.abort();  // the other steps in flight are cancelled (or their results dropped)
          reject(err);
          return;
        }
        if (--remaining > 0) return;
        resolve(responseOutputs(tensors, wanted));
      };
      const start = (i: number): void => {
        this.#gates[i].enter(() => this.#runStep(i, held.models[i], tensors, options, signal, record.steps).then((produced) => {
          this.#gates[i].leave();
          if (failed) return;
          for (const [tensor, arr] of produced) {
            tensors.set(tensor, arr);
            for (const reader of this.#plan.readers.get(tensor) ?? []) {
              if (--waitingFor[reader] === 0 && !pruned.has(reader)) start(reader);
            }
          }
          finish(null);
        }, (err: InferenceServerError) => {
          this.#gates[i].leave();
          finish(err);
        }));
      };
      if (signal.aborted) {
        finish(this.#cancelled());
        return;
      }
      if (remaining === 0) {
        resolve({});  // no output wanted: no step to run
        return;
      }
      record.computeStarted = performance.now();
      waitingFor.forEach((n, i) => { if (n === 0 && !pruned.has(i)) start(i); });
    }).finally(() => {
      unhook();
      held.release();
    });
  }

  /** A request cancelled before any step ran: the plain model's words for it. */
  #cancelled(): InferenceServerError {
    return new InferenceServerError('CANCELLED', `request for model '${this.name}' was cancelled`);
  }

  /**
   * The steps a request that wants only `wanted` of the outputs does not run: those none of its
   * wanted outputs depends on. Triton's EnsembleContext prunes them too ("Prune ensemble first if
   * not all outputs are requested"), so an unwanted branch neither costs its compute nor fails
   * the request. (Triton prunes backwards from the unwanted outputs; walking back from the
   * wanted ones keeps a step whose unwanted output another kept step also reads.)
   */
  #prunedSteps(wanted: string[]): Set<number> {
    const steps = this.config.ensembleScheduling!.steps;
    const kept = new Set<number>();
    const tensors = [...wanted];
    for (let tensor = tensors.pop(); tensor !== undefined; tensor = tensors.pop()) {
      const step = this.#plan.producers.get(tensor);
      if (step === undefined || kept.has(step)) continue;
      kept.add(step);
      tensors.push(...this.#plan.needs[step]);
    }
    return new Set(steps.map((_, i) => i).filter((i) => !kept.has(i)));
  }

  #isProduced(tensor: string): boolean {
    return !this.config.inputs.some((t) => t.name === tensor);
  }

  /** Runs step `i` as an ordinary request to its model; resolves with ensemble tensor → output. */
  async #runStep(
    i: number, model: BoundModel, tensors: Tensors, options: InferOptions, signal: StepSignal, steps: RequestTimes,
  ): Promise<[string, NDArray | undefined][]> {
    const step = this.config.ensembleScheduling!.steps[i];
    if (signal.aborted) throw new InferenceServerError('CANCELLED', `request for model '${this.name}' was cancelled before ${stepLabel(i, step)}`);
    let outputs: Record<string, NDArray>;
    try {
      outputs = await model.infer(this.#stepInputs(i, tensors), this.#stepOptions(options, signal, step.outputMap, steps));
    } catch (err) {
      const e = toInferenceServerError(err);
      throw new InferenceServerError(e.code, `in ensemble '${this.name}', ${stepLabel(i, step)} failed: ${e.message}`);
    }
    return Object.entries(step.outputMap).map(([output, tensor]) => [tensor, outputs[output]]);
  }

  /**
   * Every step's model as it is when a request starts (a reloaded step model is used by the
   * next request), held until the request releases them: as Triton's EnsembleContext takes the
   * composing models' handles, so unloading or reloading a step model lets a request already
   * running finish on the versions it started with. A step model not serving fails the request
   * before any step runs (UNAVAILABLE, naming the step).
   */
  #holdSteps(): HeldSteps | InferenceServerError {
    const models = this.#stepModels();
    if (models instanceof InferenceServerError) return models;
    const releases = [...new Set(models)].map(holdModel);
    return { models, release: () => { for (const release of releases) release(); } };
  }

  /** Step `i`'s inputs from the ensemble tensors (an optional ensemble input the request left out stays absent). */
  #stepInputs(i: number, tensors: Tensors): Record<string, NDArray> {
    const inputs: Record<string, NDArray> = {};
    for (const [input, tensor] of Object.entries(this.config.ensembleScheduling!.steps[i].inputMap)) {
      const arr = tensors.get(tensor);
      if (arr) inputs[input] = arr;
    }
    return inputs;
  }

  /**
   * What a step request carries of the ensemble request: Triton passes request-level metadata to
   * every step. `steps`: where the step request adds its own times when it succeeds.
   */
  #stepOptions(options: InferOptions, signal: StepSignal, outputMap: Record<string, string>, steps: RequestTimes): InferOptions {
    return {
      inputsOwned: true,  // ensemble tensors are held by this request until it settles
      priority: options.priority,
      timeoutMicroseconds: options.timeoutMicroseconds,
      parameters: options.parameters,
      // A sequence step model keeps the ensemble request's sequence.
      sequenceId: options.sequenceId,
      sequenceStart: options.sequenceStart,
      sequenceEnd: options.sequenceEnd,
      outputs: Object.keys(outputMap),
      signal,
      addTimesTo: steps,
    };
  }

  /**
   * The ensemble's own counters (Triton's per-ensemble statistics: its compute times are its step
   * requests', summed per request); each step model keeps its own.
   */
  override stats(): ModelStats {
    const own = {
      success: { ...this.#success },
      fail: { ...this.#fail },
      queue: { ...this.#queue },
      computeInput: { ...this.#computeInput },
      computeInfer: { ...this.#computeInfer },
      computeOutput: { ...this.#computeOutput },
      inferenceCount: this.#inferenceCount,
      executionCount: this.#success.count,
      lastInferenceMs: this.#lastInferenceMs,
      // Triton's reason for every failed ensemble request, whatever failed (infer_request.cc
      // ReportStatisticsWithDuration, the ensemble's RequestTracker): OTHER. The step models
      // count their own failures with their own reasons.
      failures: { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: this.#fail.count },
      pending: this.#pending,
      queued: 0,
      batchStats: [...this.#batchStats.values()].sort((a, b) => a.batchSize - b.batchSize).map((b) => ({
        batchSize: b.batchSize, computeInput: { ...b.computeInput }, computeInfer: { ...b.computeInfer }, computeOutput: { ...b.computeOutput },
      })),
    };
    return this.#responseCache ? this.#responseCache.addTo(own) : withoutCacheStats(own);
  }

  /** Refuses new requests and waits (up to timeoutMs) for those running; the step models are not stopped. */
  override async stop(timeoutMs = DEFAULT_EXIT_TIMEOUT_MS): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#pending > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.#drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.#drained = null;
    await super.stop(0);
  }
}
