/**
 * One model's use of the server's response cache, in front of its scheduler: a hit answers at
 * once (it never enters the queue), a miss is computed and its answer inserted. It also keeps
 * the model's cache statistics as Triton's stats aggregator does (src/infer_stats.cc):
 *  - a hit is a success: success += 1 with the request's duration, queue += 1 with the time
 *    before the lookup (hashing the request), cache_hit += 1 with the lookup's duration
 *    (finding the entry and copying it out); inference_count, execution_count and compute_*
 *    do not change;
 *  - a miss whose answer is inserted (or found too large to insert) is cache_miss += 1 with
 *    lookup + insert duration, also added to the request's success duration; one whose key was
 *    inserted meanwhile by an identical request counts neither (Triton's ALREADY_EXISTS);
 *  - failed requests are not cached and count no miss.
 * Each duration also goes into the `us` sums in whole microseconds (NativeDuration.us), and to
 * the model's RequestSink when it has one.
 * Runs on the main JS thread only (see response-cache.ts). The statistics types a model reports
 * (ModelStats, RequestSink) live here too, below model.ts (docs/architecture.md, "Layers of ts/").
 */
import type { NormalizedModelConfig } from '../config/normalize';
import type { NativeDuration, NativeModelStats } from '../native';
import type { Parameters } from '../request';
import type { NDArray } from '../tensor';
import { responseCacheKey } from './key';
import type { ResponseCache } from './response-cache';

/** A model's statistics with its response cache's figures (zeros when it has none). */
export interface ModelStats extends NativeModelStats {
  cacheHit: NativeDuration;
  cacheMiss: NativeDuration;
}

/**
 * Told of each request of one model that succeeded, with the durations the model's statistics
 * counted (ns), and of each accepted request's first response, an error included: the metrics
 * frontend's per-request latency summaries and first-response histogram, as Triton's metric reporter observes them (core src/infer_stats.cc). A model
 * without one pays nothing per request. Public in the declarations: BoundModel names it.
 */
export interface RequestSink {
  /** A request the model executed (an ensemble's: its steps did); its first response is told apart (firstResponse). */
  executed(requestNs: number, queueNs: number, computeInputNs: number, computeInferNs: number, computeOutputNs: number): void;
  /** A request answered from the response cache: its whole time, the part before the lookup, the lookup. */
  cacheHit(requestNs: number, queueNs: number, hitNs: number): void;
  /** A request whose answer was computed and inserted into the response cache: lookup + insert. */
  cacheMiss(missNs: number): void;
  /**
   * A request sent its first response, `ms` after it was queued: a decoupled model's when it
   * sends it, any other's when it completes; the error of a request that fails before sending
   * any is its first response (the model decides which, per request: a label set's
   * sink outlives the model that made it, and a reload may change `decoupled`).
   */
  firstResponse(ms: number): void;
}

/** What the cache reads of a request's options (BoundModel's InferOptions). */
export interface CachedRequestOptions {
  parameters?: Parameters;
  outputs?: string[];
}

type Outputs = Record<string, NDArray>;

/** Numbers the models' uses of a cache: each load of a model gets its own (see `generation`). */
let nextGeneration = 1;

const nsSince = (startMs: number, endMs: number): number => Math.max(0, Math.round((endMs - startMs) * 1e6));

/** Counts one request's `ns` in `to` (its whole microseconds too, as native statistics do). */
export function addDuration(to: NativeDuration, ns: number): void {
  to.count++;
  to.ns += ns;
  to.us += Math.floor(ns / 1000);
}

export const zeroDuration = (): NativeDuration => ({ count: 0, ns: 0, us: 0 });

/** `a` with `b`'s durations added, and `count` (default `b.count`) requests. */
const plus = (a: NativeDuration, b: NativeDuration, count = b.count): NativeDuration =>
  ({ count: a.count + count, ns: a.ns + b.ns, us: a.us + b.us });

export class ModelResponseCache {
  /**
   * Part of every key of this model: a model loaded again (the same name and version with new
   * files, a poll-mode reload) never answers from the entries of its earlier load, which age
   * out of the LRU instead. (Triton's key has no such part.)
   */
  readonly #generation = nextGeneration++;
  readonly #hit = zeroDuration();
  readonly #miss = zeroDuration();
  /** Request and queue durations of the hits, which native statistics never see. */
  readonly #hitRequest = zeroDuration();
  readonly #hitQueue = zeroDuration();

  constructor(private readonly config: NormalizedModelConfig, readonly cache: ResponseCache) {}

  /**
   * Answers from the cache, or through `compute` (the model's scheduler) and caches the
   * answer. The answer is the caller's to keep and change. `sink`: the model's, told of each
   * hit and counted miss.
   */
  infer(inputs: Outputs, options: CachedRequestOptions, compute: () => Promise<Outputs>, sink: RequestSink | null): Promise<Outputs> {
    const started = performance.now();
    let key: string;
    try {
      key = responseCacheKey({
        model: this.config.name, version: this.config.version, generation: this.#generation, inputs,
        outputs: options.outputs ?? null, parameters: options.parameters ?? {},
      });
    } catch {
      return compute();  // not hashable (not NDArrays): the model's checks say what is wrong
    }
    const lookupStarted = performance.now();
    const cached = this.cache.lookup(key);
    const lookupEnded = performance.now();
    if (cached) {
      const hitNs = nsSince(lookupStarted, lookupEnded);
      const queueNs = nsSince(started, lookupStarted);
      const requestNs = nsSince(started, lookupEnded);  // the answer is ready when the lookup ends
      addDuration(this.#hit, hitNs);
      addDuration(this.#hitQueue, queueNs);
      addDuration(this.#hitRequest, requestNs);
      sink?.cacheHit(requestNs, queueNs, hitNs);
      return Promise.resolve(cached);
    }
    const lookupNs = nsSince(lookupStarted, lookupEnded);
    return compute().then((outputs) => {
      const insertStarted = performance.now();
      const result = this.cache.insert(key, outputs);
      if (result !== 'exists') {
        const missNs = lookupNs + nsSince(insertStarted, performance.now());
        addDuration(this.#miss, missNs);
        sink?.cacheMiss(missNs);
      }
      return outputs;
    });
  }

  /** The model's native statistics with the cache's hits and misses added as Triton counts them. */
  addTo(stats: NativeModelStats): ModelStats {
    return {
      ...stats,
      // A miss's lookup + insert lengthens its request, already counted.
      success: plus(plus(stats.success, this.#hitRequest), this.#miss, 0),
      queue: plus(stats.queue, this.#hitQueue),
      cacheHit: { ...this.#hit },
      cacheMiss: { ...this.#miss },
    };
  }
}

/** Statistics of a model without a response cache: Triton's zeros for cache_hit and cache_miss. */
export function withoutCacheStats(stats: NativeModelStats): ModelStats {
  return { ...stats, cacheHit: zeroDuration(), cacheMiss: zeroDuration() };
}

/**
 * The model's view of the server's cache, or null when it does not use one. Triton caches a
 * model's answers only when both the server has a cache and the model enables it
 * (`response_cache { enable: true }`); a model that enables it on a server without a cache is
 * served uncached, without a warning, as in Triton (dynamic_batch_scheduler.cc). Decoupled
 * models never reach here: their configs are refused when they enable the cache.
 */
export function modelCacheFor(config: NormalizedModelConfig, cache: ResponseCache | null): ModelResponseCache | null {
  if (!cache || !config.responseCache || config.decoupled) return null;
  return new ModelResponseCache(config, cache);
}
