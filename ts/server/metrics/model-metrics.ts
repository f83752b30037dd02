/**
 * Triton's per-model inference metrics (triton-protocol.md §4), as Triton's core reports them
 * (src/metric_model_reporter.cc, src/infer_stats.cc). Labels: `model`, `version`, and `_<key>`
 * for each `metric_tags` entry of the model's config (`reason` on failures).
 *
 * The counters and gauges are read from the models' statistics at scrape time, in one snapshot
 * per scrape, so the request path pays nothing for them; the duration counters are the
 * statistics' whole-microsecond sums (NativeDuration.us), which add each request's duration
 * rounded down, as Triton adds `duration_ns / 1000` per request.
 *
 * The opt-in summaries and first-response histogram are observed per request: each model's
 * successful requests go to its ModelSeries (a RequestSink, handed to the model when it is
 * published) only when one of them is enabled. Models with the same labels share one series,
 * as Triton's reporters are shared by label set; a series goes when no served model has its
 * labels. A reload that keeps the labels keeps the series, counters included (Triton's new
 * version takes the reporter its old one still holds); an unload, then a load, starts a new one.
 *
 * The text of these families is written by exposition.ts, not a prom-client Registry: their
 * series differ per model in labels and buckets. The summaries are summary.ts's; prom-client's
 * Histogram observes the first responses, one unlabelled metric per model, in no registry.
 */
import { Histogram } from 'prom-client';
import type { BoundModel } from '../../model';
import type { ModelStats, RequestSink } from '../../cache/model-cache';
import type { NativeDuration } from '../../native';
import { histogramBuckets } from '../../config/metric-settings';
import type { ServedTriton } from '../served-triton';
import type { MetricsSettings } from './config';
import { familyText, type FamilyType, type Labels, type Sample } from './exposition';
import { WindowedSummary } from './summary';

/** Triton's default buckets of nv_inference_first_response_histogram_ms. */
export const FIRST_RESPONSE_BUCKETS_MS = [100, 500, 2000, 5000];
const FIRST_RESPONSE = 'nv_inference_first_response_histogram_ms';
const FIRST_RESPONSE_HELP = 'Duration from request to first response in milliseconds';

const FAILURE_REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'] as const;

/** What the per-model counters read of a model's statistics. */
type Counts = Pick<ModelStats, 'success' | 'queue' | 'computeInput' | 'computeInfer' | 'computeOutput' | 'cacheHit' | 'cacheMiss' |
  'inferenceCount' | 'executionCount' | 'failures'>;

const zeroDuration = (): NativeDuration => ({ count: 0, ns: 0, us: 0 });
const plus = (a: NativeDuration, b: NativeDuration): NativeDuration => ({ count: a.count + b.count, ns: a.ns + b.ns, us: a.us + b.us });

const ZERO_COUNTS: Counts = {
  success: zeroDuration(), queue: zeroDuration(), computeInput: zeroDuration(), computeInfer: zeroDuration(),
  computeOutput: zeroDuration(), cacheHit: zeroDuration(), cacheMiss: zeroDuration(), inferenceCount: 0, executionCount: 0,
  failures: { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 },
};

function addCounts(a: Counts, b: Counts): Counts {
  return {
    success: plus(a.success, b.success), queue: plus(a.queue, b.queue), computeInput: plus(a.computeInput, b.computeInput),
    computeInfer: plus(a.computeInfer, b.computeInfer), computeOutput: plus(a.computeOutput, b.computeOutput),
    cacheHit: plus(a.cacheHit, b.cacheHit), cacheMiss: plus(a.cacheMiss, b.cacheMiss),
    inferenceCount: a.inferenceCount + b.inferenceCount, executionCount: a.executionCount + b.executionCount,
    failures: {
      REJECTED: a.failures.REJECTED + b.failures.REJECTED, CANCELED: a.failures.CANCELED + b.failures.CANCELED,
      BACKEND: a.failures.BACKEND + b.failures.BACKEND, OTHER: a.failures.OTHER + b.failures.OTHER,
    },
  };
}

/** Triton's summary families (metrics.cc), by what they observe. */
const SUMMARIES = {
  request: ['nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)'],
  queue: ['nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)'],
  computeInput: ['nv_inference_compute_input_summary_us', 'Cumulative compute input duration in microseconds (does not include cached requests)'],
  computeInfer: ['nv_inference_compute_infer_summary_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)'],
  computeOutput: ['nv_inference_compute_output_summary_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)'],
  cacheHit: ['nv_cache_hit_summary_per_model', 'Summary of cache hit counts/durations per model, in microseconds.'],
  cacheMiss: ['nv_cache_miss_summary_per_model', 'Summary of cache miss counts/durations per model, in microseconds.'],
} as const;
type SummaryKind = keyof typeof SUMMARIES;

/** Whole microseconds of a duration, as Triton observes it (`duration_ns / 1000`). */
const us = (ns: number): number => Math.floor(ns / 1000);

/** Triton's labels of a model's series (GetMetricLabels). */
function labelsOf(model: BoundModel): Labels {
  const labels: Labels = { model: model.name, version: String(model.version) };
  for (const [key, value] of Object.entries(model.config.metricTags ?? {})) labels[`_${key}`] = value;
  return labels;
}

/**
 * The observed series of one label set (Triton's MetricModelReporter): the summaries Triton
 * creates for it (no request summary when the model's config enables the response cache: hits
 * and misses would make it misleading; cache hit and miss summaries only then) and the
 * first-response histogram with the model's buckets.
 */
class ModelSeries implements RequestSink {
  readonly summaries: Partial<Record<SummaryKind, WindowedSummary>> = {};
  readonly firstResponseMs: Histogram | null = null;
  /**
   * The models counted here: the one served, and those a reload replaced until their last
   * request ended (Triton's reporter counts them all while any of them holds it).
   */
  readonly members = new Set<BoundModel>();
  /** What the members let go of counted. */
  #retired: Counts = ZERO_COUNTS;

  constructor(readonly labels: Labels, model: BoundModel, settings: MetricsSettings, buckets: number[]) {
    if (settings.summaryLatencies) {
      const cached = model.config.responseCache;
      const kinds: SummaryKind[] = cached
        ? ['queue', 'computeInput', 'computeInfer', 'computeOutput', 'cacheHit', 'cacheMiss']
        : ['request', 'queue', 'computeInput', 'computeInfer', 'computeOutput'];
      const quantiles = settings.summaryQuantiles.map(([q]) => q);
      for (const kind of kinds) this.summaries[kind] = new WindowedSummary(quantiles);
    }
    if (settings.histogramLatencies) {
      this.firstResponseMs = new Histogram({ name: FIRST_RESPONSE, help: FIRST_RESPONSE_HELP, registers: [], buckets });
    }
  }

  executed(requestNs: number, queueNs: number, computeInputNs: number, computeInferNs: number, computeOutputNs: number): void {
    const s = this.summaries;
    s.request?.observe(us(requestNs));
    s.queue?.observe(us(queueNs));
    s.computeInput?.observe(us(computeInputNs));
    s.computeInfer?.observe(us(computeInferNs));
    s.computeOutput?.observe(us(computeOutputNs));
  }

  cacheHit(requestNs: number, queueNs: number, hitNs: number): void {
    this.summaries.queue?.observe(us(queueNs));
    this.summaries.cacheHit?.observe(us(hitNs));
    this.firstResponseMs?.observe(Math.floor(requestNs / 1e6));
  }

  cacheMiss(missNs: number): void {
    this.summaries.cacheMiss?.observe(us(missNs));
  }

  /**
   * Whole milliseconds, as Triton's (now_ns - infer_start_ns) / NANOS_PER_MILLIS. Told by the
   * model per request, not decided here from a model's `decoupled`: models of one label set share
   * this series, and a reload may change `decoupled` while it lives on.
   */
  firstResponse(ms: number): void {
    this.firstResponseMs?.observe(Math.floor(ms));
  }

  /**
   * The counters of this label set, and its queue depth: every member's statistics, plus what
   * the members let go of counted. A member no longer `served` whose requests have all ended is
   * let go of now, its counts kept.
   */
  counts(served: ReadonlySet<BoundModel>): { counts: Counts; queued: number } {
    this.retire(served);
    let counts = this.#retired;
    let queued = 0;
    for (const model of this.members) {
      const stats = model.stats();
      counts = addCounts(counts, stats);
      queued += stats.queued;
    }
    return { counts, queued };
  }

  /** Lets go of the members no longer `served` whose requests have all ended, keeping their counts. */
  retire(served: ReadonlySet<BoundModel>): void {
    for (const model of this.members) {
      if (served.has(model) || model.pendingCount > 0) continue;
      this.#retired = addCounts(this.#retired, model.stats());
      this.members.delete(model);
    }
  }
}

interface Snapshot {
  series: ModelSeries;
  /** The label set's counters (ModelSeries.counts). */
  counts: Counts;
  /** Requests queued now in the label set's models. */
  queued: number;
  /** BoundModel.loadDurationSeconds. */
  loadSeconds: number;
  /** The model's config enables the response cache (Triton reports nv_cache_* for it then). */
  responseCache: boolean;
}

/** A histogram's samples (prom-client's), with its series' labels. */
async function histogramSamples(histogram: Histogram, labels: Labels): Promise<Sample[]> {
  const { values } = await histogram.get();
  return values.map((v): Sample => {
    const le = (v.labels as { le?: string | number }).le;
    return { name: v.metricName ?? FIRST_RESPONSE, labels, last: le === undefined ? undefined : ['le', le], value: v.value };
  });
}

/** A summary's samples as prometheus-cpp writes them: _count, _sum, then each quantile. */
function summarySamples(name: string, summary: WindowedSummary, labels: Labels): Sample[] {
  const values = summary.values();
  return [
    { name: `${name}_count`, labels, value: summary.count },
    { name: `${name}_sum`, labels, value: summary.sum },
    ...summary.quantiles.map((q, i): Sample => ({ name, labels, last: ['quantile', q], value: values[i] })),
  ];
}

export class ModelMetrics {
  #snapshot: Snapshot[] = [];
  readonly #series = new Map<string, ModelSeries>();

  constructor(
    private readonly triton: ServedTriton, private readonly settings: MetricsSettings,
    private readonly logWarning: (line: string) => void,
  ) {}

  /** True when per-request observations are wanted (an opt-in summary or histogram is on). */
  get observing(): boolean {
    return this.settings.summaryLatencies || this.settings.histogramLatencies;
  }

  /** Where `model` reports its successful requests: its series when observing, else nowhere. */
  sinkFor(model: BoundModel): RequestSink | null {
    const series = this.#seriesOf(model);
    return this.observing ? series : null;
  }

  /**
   * The series of `model`'s labels, made on first use (with Triton's warning for an unknown
   * model_metrics family); `model` counts in it from now on. A series none of whose models is
   * served any more (unloaded since the last scrape) is not reused: Triton's reporter went with
   * its last model.
   */
  #seriesOf(model: BoundModel): ModelSeries {
    const labels = labelsOf(model);
    const key = JSON.stringify(Object.entries(labels).sort());
    let series = this.#series.get(key);
    if (series && !series.members.has(model)) {
      const served = new Set(this.triton.models());
      if (![...series.members].some((m) => served.has(m))) series = undefined;
      // Reloads between scrapes would otherwise keep every version they replaced here.
      else series.retire(served);
    }
    if (!series) {
      const { buckets, unknown } = histogramBuckets(model.config.modelMetrics);
      for (const family of unknown) {
        this.logWarning(`Metric family '${family}' in 'metric_identifier' is not a customizable metric in Triton core.`);
      }
      series = new ModelSeries(labels, model, this.settings, buckets.get(FIRST_RESPONSE) ?? FIRST_RESPONSE_BUCKETS_MS);
      this.#series.set(key, series);
    }
    series.members.add(model);
    return series;
  }

  /** Reads every model's statistics once, for the next `text()`; series no served model has any more go. */
  refresh(): void {
    const models = this.triton.models();
    const served = new Set(models);
    this.#snapshot = models.map((m) => {
      const series = this.#seriesOf(m);
      return { series, ...series.counts(served), loadSeconds: m.loadDurationSeconds, responseCache: m.config.responseCache };
    });
    const kept = new Set(this.#snapshot.map((s) => s.series));
    for (const [key, series] of this.#series) if (!kept.has(series)) this.#series.delete(key);
  }

  /** The text of the per-model families, from the last `refresh()`. */
  async text(): Promise<string> {
    const snapshot = this.#snapshot;
    const out: string[] = [];
    const family = (
      name: string, help: string, type: FamilyType, value: (s: Counts, m: Snapshot) => number, only = (_: Snapshot): boolean => true,
    ): void => {
      out.push(familyText(name, help, type, snapshot.filter(only).map((m) => ({ name, labels: m.series.labels, value: value(m.counts, m) }))));
    };
    family('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', 'counter', (s) => s.success.count);
    out.push(familyText('nv_inference_request_failure', 'Number of failed inference requests, all batch sizes', 'counter',
      snapshot.flatMap(({ series, counts }) => FAILURE_REASONS.map((reason) => ({
        name: 'nv_inference_request_failure', labels: { ...series.labels, reason }, value: counts.failures[reason],
      })))));
    family('nv_inference_count', 'Number of inferences performed (does not include cached requests)', 'counter', (s) => s.inferenceCount);
    family('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', 'counter', (s) => s.executionCount);
    if (this.settings.counterLatencies) {
      family('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)', 'counter', (s) => s.success.us);
      family('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', 'counter', (s) => s.queue.us);
      family('nv_inference_compute_input_duration_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', 'counter', (s) => s.computeInput.us);
      family('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)', 'counter', (s) => s.computeInfer.us);
      family('nv_inference_compute_output_duration_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)', 'counter', (s) => s.computeOutput.us);
      // Triton reports these for the models whose config enables the cache, with the latency counters.
      const cached = (s: Snapshot): boolean => s.responseCache;
      family('nv_cache_num_hits_per_model', 'Number of cache hits per model', 'counter', (s) => s.cacheHit.count, cached);
      family('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds', 'counter', (s) => s.cacheHit.us, cached);
      family('nv_cache_num_misses_per_model', 'Number of cache misses per model', 'counter', (s) => s.cacheMiss.count, cached);
      family('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds', 'counter', (s) => s.cacheMiss.us, cached);
    }
    family('nv_inference_pending_request_count', 'Instantaneous number of pending requests awaiting execution per-model.', 'gauge', (_, m) => m.queued);
    family('nv_model_load_duration_secs', 'Model load time in seconds', 'gauge', (_, m) => m.loadSeconds);
    out.push(await this.#observedText(snapshot));
    return out.join('');
  }

  /** The first-response histogram and the summaries, each family with every series that has it. */
  async #observedText(snapshot: Snapshot[]): Promise<string> {
    const out: string[] = [];
    const histograms = snapshot.flatMap(({ series }) => series.firstResponseMs ? [histogramSamples(series.firstResponseMs, series.labels)] : []);
    out.push(familyText(FIRST_RESPONSE, FIRST_RESPONSE_HELP, 'histogram', (await Promise.all(histograms)).flat()));
    for (const kind of Object.keys(SUMMARIES) as SummaryKind[]) {
      const [name, help] = SUMMARIES[kind];
      const samples = snapshot.flatMap(({ series }) => {
        const summary = series.summaries[kind];
        return summary ? summarySamples(name, summary, series.labels) : [];
      });
      out.push(familyText(name, help, 'summary', samples));
    }
    return out.join('');
  }
}
