/**
 * Triton's per-model inference metrics (triton-protocol.md §4), labelled `model` and `version`
 * (and `reason` on failures). The counters and the pending gauge are read from the native
 * statistics at scrape time, in one snapshot per scrape, so the request path pays nothing for
 * them. The opt-in summaries and the first-response histogram need one observation per
 * request: InferenceService reports each successful request to `observe` only when one of
 * them is enabled.
 */
import { Counter, Gauge, Histogram, Summary, type Registry } from 'prom-client';
import type { BoundModel } from '../../model';
import type { ModelStats } from '../../cache/model-cache';
import type { ServedTriton } from '../served-triton';
import type { MetricsSettings } from './config';

const LABELS = ['model', 'version'] as const;
type Labels = { model: string; version: string };

interface Snapshot {
  labels: Labels;
  stats: ModelStats;
  /** BoundModel.loadDurationSeconds. */
  loadSeconds: number;
  /** The model's config enables the response cache (Triton reports nv_cache_* for it then). */
  responseCache: boolean;
}

/** Triton's default buckets of nv_inference_first_response_histogram_ms. */
export const FIRST_RESPONSE_BUCKETS_MS = [100, 500, 2000, 5000];

const FAILURE_REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'] as const;

export class ModelMetrics {
  #snapshot: Snapshot[] = [];
  readonly #requestSummary: Summary<'model' | 'version'> | null = null;
  readonly #firstResponse: Histogram<'model' | 'version'> | null = null;

  constructor(private readonly triton: ServedTriton, registry: Registry, settings: MetricsSettings) {
    const counter = (
      name: string, help: string, value: (s: ModelStats) => number, only: (s: Snapshot) => boolean = () => true,
    ): void => {
      const read = (): Snapshot[] => this.#snapshot.filter(only);
      new Counter({
        name, help, labelNames: LABELS, registers: [registry],
        collect() {
          this.reset();
          for (const { labels, stats } of read()) this.inc(labels, value(stats));
        },
      });
    };
    counter('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', (s) => s.success.count);
    this.#failureCounter(registry);
    counter('nv_inference_count', 'Number of inferences performed (does not include cached requests)', (s) => s.inferenceCount);
    counter('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', (s) => s.executionCount);
    if (settings.counterLatencies) {
      // Whole microseconds, as Triton's reporter counts them.
      const us = (ns: number): number => Math.floor(ns / 1000);
      counter('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)', (s) => us(s.success.ns));
      counter('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', (s) => us(s.queue.ns));
      counter('nv_inference_compute_input_duration_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', (s) => us(s.computeInput.ns));
      counter('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)', (s) => us(s.computeInfer.ns));
      counter('nv_inference_compute_output_duration_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)', (s) => us(s.computeOutput.ns));
      // Triton reports these for the models whose config enables the cache, with the latency counters.
      const cached = (s: Snapshot): boolean => s.responseCache;
      counter('nv_cache_num_hits_per_model', 'Number of cache hits per model', (s) => s.cacheHit.count, cached);
      counter('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds', (s) => us(s.cacheHit.ns), cached);
      counter('nv_cache_num_misses_per_model', 'Number of cache misses per model', (s) => s.cacheMiss.count, cached);
      counter('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds', (s) => us(s.cacheMiss.ns), cached);
    }
    const read = (): Snapshot[] => this.#snapshot;
    new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of pending requests awaiting execution per-model.',
      labelNames: LABELS, registers: [registry],
      collect() {
        this.reset();
        for (const { labels, stats } of read()) this.set(labels, stats.queued);
      },
    });
    new Gauge({
      name: 'nv_model_load_duration_secs',
      help: 'Model load time in seconds',
      labelNames: LABELS, registers: [registry],
      collect() {
        this.reset();
        for (const { labels, loadSeconds } of read()) this.set(labels, loadSeconds);
      },
    });
    if (settings.summaryLatencies) {
      this.#requestSummary = new Summary({
        name: 'nv_inference_request_summary_us',
        help: 'Summary of inference request duration in microseconds (includes cached requests)',
        labelNames: LABELS, registers: [registry],
        percentiles: settings.summaryQuantiles.map(([q]) => q),
        // Triton's summaries (prometheus-cpp) look at the last minute in 5 age buckets.
        maxAgeSeconds: 60, ageBuckets: 5,
      });
    }
    if (settings.histogramLatencies) {
      this.#firstResponse = new Histogram({
        name: 'nv_inference_first_response_histogram_ms',
        help: 'Duration from request to first response in milliseconds',
        labelNames: LABELS, registers: [registry], buckets: FIRST_RESPONSE_BUCKETS_MS,
      });
    }
  }

  #failureCounter(registry: Registry): void {
    const read = (): Snapshot[] => this.#snapshot;
    new Counter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes',
      labelNames: [...LABELS, 'reason'], registers: [registry],
      collect() {
        this.reset();
        for (const { labels, stats } of read()) {
          for (const reason of FAILURE_REASONS) this.inc({ ...labels, reason }, stats.failures[reason]);
        }
      },
    });
  }

  /** True when per-request observations are wanted (an opt-in summary or histogram is on). */
  get observing(): boolean {
    return this.#requestSummary !== null || this.#firstResponse !== null;
  }

  /** One successful request of `model` that took `durationMs` from receipt to response. */
  observe(model: BoundModel, durationMs: number): void {
    const labels = { model: model.name, version: String(model.version) };
    // Triton publishes no request summary for a model whose config enables the response cache
    // (metric_model_reporter.cc: hits and misses would make it misleading).
    if (!model.config.responseCache) this.#requestSummary?.observe(labels, durationMs * 1000);
    this.#firstResponse?.observe(labels, durationMs);
  }

  /** Reads every model's statistics once; the next collection reports them. */
  refresh(): void {
    this.#snapshot = this.triton.models().map((m) => ({
      labels: { model: m.name, version: String(m.version) },
      stats: m.stats(),
      loadSeconds: m.loadDurationSeconds,
      responseCache: m.config.responseCache,
    }));
  }
}
