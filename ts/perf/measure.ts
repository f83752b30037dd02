/**
 * The load and the measurement windows of `infernode perf`, as perf_analyzer runs them: for each
 * concurrency (closed loop: that many requests always in flight) or request rate (open loop:
 * requests sent on a fixed schedule, whether or not earlier ones answered), measurement windows
 * of --measurement-interval ms until the last three agree within --stability-percentage on
 * throughput and on latency (average, or the --percentile), or --max-trials windows ran. As in
 * perf_analyzer, three windows agree when the largest is at most (1 + P%) times the smallest. The
 * result of a level merges its last three windows. Server-side numbers are deltas of the
 * model's statistics over the same windows (for an ensemble or a BLS model, every model's, and
 * each composing model's summarized: server-stats.ts), and the client library's timers (send,
 * receive) are deltas of the target's sums, read with the latencies.
 *
 * Everything runs on the event loop thread: the workers are async loops, a window is a timer.
 */
import { performance } from 'node:perf_hooks';
import type { NDArray } from '../tensor';
import { addClientTimes, clientTimesDelta, zeroClientTimes, type ClientTimes } from './client-times';
import {
  addCounters, addModelCounters, composingStats, counterDelta, countersByModel, modelCountersDelta, namesOf, serverCounters, topCounters,
  zeroCounters, type ComposingMap, type ComposingStats, type ModelCounters, type ServerCounters,
} from './server-stats';
import type { PerfTarget } from './target';

/** One measurement window (or the merge of the last three). */
export interface Window {
  seconds: number;
  /** Latencies (µs) of the requests that completed in the window. */
  latenciesUs: number[];
  /** Responses of those requests (a decoupled model's 0..N each; 1 each otherwise). */
  responses: number;
  server: ServerCounters;
  /** With composing models: the deltas of every version of the model and of each composing model. */
  models?: ModelCounters;
  /** The target's client timers over the window. */
  client: ClientTimes;
}

/** What perf reports for one concurrency or request rate. */
export interface LevelResult {
  /** The concurrency or the request rate (requests/s). */
  value: number;
  stable: boolean;
  windows: number;
  requestCount: number;
  /** Inferences per second: requests × batch size ÷ seconds. */
  throughput: number;
  /** Responses per second (perf_analyzer's Response Throughput of a decoupled model). */
  responseThroughput: number;
  avgUs: number;
  stdUs: number;
  /** Percentile → latency (µs): 50, 90, 95, 99 and --percentile. */
  percentilesUs: Map<number, number>;
  server: ServerCounters;
  /** The composing models' statistics (an ensemble's steps, recursively); empty for other models. */
  composing: ComposingStats[];
  client: ClientTimes;
  /** Requests sent and completed at this level, windows or not (the server counted all of them). */
  sent: number;
}

/** perf_analyzer's --request-distribution: how request rate mode spaces its requests. */
export type RequestDistribution = 'constant' | 'poisson';

export interface MeasureSettings {
  mode: 'concurrency' | 'rate';
  /** Request rate mode: constant gaps (the default) or exponential ones (a Poisson process). */
  distribution?: RequestDistribution;
  batchSize: number;
  intervalMs: number;
  percentile?: number;
  stabilityPercentage: number;
  maxTrials: number;
  /**
   * A model with composing models (an ensemble, a BLS model): the statistics of every model are
   * read at each window's edge, and each composing model's summarized, as perf_analyzer does.
   */
  composition?: { model: string; version?: string; map: ComposingMap };
  /** Called at each window's end (the progress line, -v's pass lines). */
  onWindow?: (value: number, trial: number, window: Window) => void;
}

/** The value at percentile `p` of sorted values: perf_analyzer's index, p/100 × (n − 1) rounded. */
export function percentileOf(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.floor((p / 100) * (sorted.length - 1) + 0.5)];
}

/**
 * The send times (ms after the start) of request rate mode, one per call, as perf_analyzer's
 * ScheduleDistribution draws them: every 1/rate s, or after exponential gaps of mean 1/rate s.
 */
export function rateSchedule(rate: number, distribution: RequestDistribution = 'constant'): () => number {
  const meanMs = 1000 / rate;
  let n = 0;
  let t = 0;
  if (distribution === 'constant') return () => ++n * meanMs;
  return () => {
    t += -Math.log(1 - Math.random()) * meanMs;
    return t;
  };
}

/** What completed since the last take: the latencies, and the responses. */
interface Taken {
  latencies: number[];
  responses: number;
}

/**
 * Drives the load: `start` begins sending, `take` returns what completed since the last take,
 * `stop` resolves once every request sent has answered (so the count of sent requests matches
 * what the server counted). The first failure stops the load and is rethrown by stop.
 */
class Load {
  #latencies: number[] = [];
  #responses = 0;
  #stopping = false;
  #failure: unknown = null;
  #inFlight = new Set<Promise<void>>();
  #workers: Promise<void>[] = [];
  #next = 0;
  sent = 0;

  constructor(private readonly target: PerfTarget, private readonly inputSets: Record<string, NDArray>[]) {}

  /**
   * One request; its latency is recorded when it completes: until its answer, or a decoupled
   * model's last response. A decoupled request that ended without a response has no latency
   * (perf_analyzer leaves it out too).
   */
  #one(): Promise<void> {
    const inputs = this.inputSets[this.#next++ % this.inputSets.length];
    this.sent++;
    const t0 = performance.now();
    return this.target.infer(inputs).then(
      (stream) => {
        if (stream && stream.responses === 0) return;
        this.#latencies.push(((stream ? stream.lastResponseMs : performance.now()) - t0) * 1000);
        this.#responses += stream ? stream.responses : 1;
      },
      (err: unknown) => {
        if (this.#failure === null) this.#failure = err;
        this.#stopping = true;
      },
    );
  }

  /** Closed loop: `concurrency` workers each send the next request when the previous answered. */
  startConcurrency(concurrency: number): void {
    this.#workers = Array.from({ length: concurrency }, async () => {
      let yielded = performance.now();
      while (!this.#stopping) {
        await this.#one();
        // A target that answers within microtasks (in-process) would starve the window's timer.
        if (performance.now() - yielded > YIELD_EVERY_MS) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          yielded = performance.now();
        }
      }
    });
  }

  /**
   * Open loop: requests at the times of `rateSchedule` (constant or Poisson), whether or not
   * earlier ones answered. A request whose time passed while the timer was late goes at once.
   */
  startRate(rate: number, distribution: RequestDistribution | undefined): void {
    const nextAt = rateSchedule(rate, distribution);
    const t0 = performance.now();
    let due = nextAt();
    this.#workers = [new Promise<void>((resolve) => {
      const tick = (): void => {
        if (this.#stopping) {
          resolve();
          return;
        }
        for (let now = performance.now() - t0; due <= now; due = nextAt()) {
          const p = this.#one();
          this.#inFlight.add(p);
          void p.then(() => this.#inFlight.delete(p));
        }
        setTimeout(tick, Math.max(0, due - (performance.now() - t0)));
      };
      setTimeout(tick, due);
    })];
  }

  take(): Taken {
    const taken = { latencies: this.#latencies, responses: this.#responses };
    this.#latencies = [];
    this.#responses = 0;
    return taken;
  }

  get failed(): boolean {
    return this.#failure !== null;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers);
    await Promise.all([...this.#inFlight]);
    if (this.#failure !== null) throw this.#failure;
  }
}

/** How long a closed-loop worker runs before letting timers and I/O in. */
const YIELD_EVERY_MS = 5;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function merge(windows: Window[]): Window {
  return {
    seconds: windows.reduce((s, w) => s + w.seconds, 0),
    latenciesUs: windows.flatMap((w) => w.latenciesUs),
    responses: windows.reduce((s, w) => s + w.responses, 0),
    server: windows.reduce((s, w) => addCounters(s, w.server), zeroCounters()),
    models: windows.reduce<ModelCounters>((s, w) => addModelCounters(s, w.models ?? new Map()), new Map()),
    client: windows.reduce((s, w) => addClientTimes(s, w.client), zeroClientTimes()),
  };
}

function average(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

/** The latency stability is judged on: the average, or the --percentile. */
function stabilizingLatency(w: Window, percentile: number | undefined): number {
  if (percentile === undefined) return average(w.latenciesUs);
  return percentileOf([...w.latenciesUs].sort((a, b) => a - b), percentile);
}

/**
 * perf_analyzer's rule (DetermineStability): over the last three windows, the largest throughput
 * at most (1 + stability%) times the smallest, none of them 0, and the same for latency.
 */
export function isStable(windows: readonly Window[], s: Pick<MeasureSettings, 'percentile' | 'stabilityPercentage'>): boolean {
  if (windows.length < 3) return false;
  const last = windows.slice(-3);
  if (last.some((w) => w.latenciesUs.length === 0)) return false;
  const within = (values: number[]): boolean => Math.max(...values) <= Math.min(...values) * (1 + s.stabilityPercentage / 100);
  return within(last.map((w) => w.latenciesUs.length / w.seconds)) && within(last.map((w) => stabilizingLatency(w, s.percentile)));
}

/** The result of a level: its last three windows merged (all of them when fewer). */
export function levelResult(value: number, windows: Window[], stable: boolean, sent: number, s: MeasureSettings): LevelResult {
  const merged = merge(windows.slice(-3));
  const sorted = [...merged.latenciesUs].sort((a, b) => a - b);
  const avg = average(sorted);
  // perf_analyzer's standard deviation is the sample one.
  const variance = sorted.length > 1 ? sorted.reduce((sum, x) => sum + (x - avg) ** 2, 0) / (sorted.length - 1) : 0;
  const percentiles = new Map<number, number>();
  // p50, p90, p95, p99 and --percentile, in increasing order (perf_analyzer keeps them in a std::set).
  const wanted = [...new Set([50, 90, 95, 99, ...(s.percentile === undefined ? [] : [s.percentile])])].sort((a, b) => a - b);
  for (const p of wanted) percentiles.set(p, percentileOf(sorted, p));
  const perSecond = (n: number): number => (merged.seconds > 0 ? n / merged.seconds : 0);
  return {
    value, stable, windows: windows.length, requestCount: sorted.length,
    throughput: perSecond(sorted.length * s.batchSize), responseThroughput: perSecond(merged.responses),
    avgUs: avg, stdUs: Math.sqrt(variance), percentilesUs: percentiles, server: merged.server,
    composing: s.composition ? composingStats(s.composition.model, s.composition.map, merged.models ?? new Map()) : [],
    client: merged.client, sent,
  };
}

/** Measures one concurrency or request rate until stable or --max-trials windows. */
export async function measureLevel(
  target: PerfTarget, inputSets: Record<string, NDArray>[], value: number, s: MeasureSettings,
): Promise<LevelResult> {
  const load = new Load(target, inputSets);
  if (s.mode === 'concurrency') load.startConcurrency(value);
  else load.startRate(value, s.distribution);
  const windows: Window[] = [];
  const c = s.composition;
  const names = c ? namesOf(c.model, c.map) : new Set<string>();
  // The model's statistics; with composing models, every model's (one call, so all are read at once).
  const read = async (): Promise<{ top: ServerCounters; models?: ModelCounters }> => {
    if (!c) return { top: serverCounters(await target.modelStatistics()) };
    const models = countersByModel(await target.allModelStatistics(), names);
    return { top: topCounters(models, c.model, c.version), models };
  };
  try {
    let before = await read();
    load.take();  // what completed before the first window belongs to none
    // Read with the latencies (same tick): both cover the same completed requests.
    let clientBefore = { ...target.clientTimes };
    let t0 = performance.now();
    while (windows.length < s.maxTrials && !isStable(windows, s) && !load.failed) {
      await sleep(s.intervalMs);
      const taken = load.take();
      const clientAfter = { ...target.clientTimes };
      const t1 = performance.now();
      const after = await read();
      const window: Window = {
        seconds: (t1 - t0) / 1000, latenciesUs: taken.latencies, responses: taken.responses,
        server: counterDelta(after.top, before.top), client: clientTimesDelta(clientAfter, clientBefore),
        ...(after.models && before.models ? { models: modelCountersDelta(after.models, before.models) } : {}),
      };
      windows.push(window);
      s.onWindow?.(value, windows.length, window);
      // What completes while the statistics call runs belongs to the next window, which starts at t1.
      before = after;
      clientBefore = clientAfter;
      t0 = t1;
    }
  } finally {
    await load.stop();
  }
  return levelResult(value, windows, isStable(windows, s), load.sent, s);
}
