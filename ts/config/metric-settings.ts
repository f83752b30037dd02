/**
 * A model config's metric settings: `metric_tags` (an extra label `_<key>` on each of the
 * model's per-model metrics) and `model_metrics` (histogram buckets per metric family), as
 * Triton's core reads them (src/metric_model_reporter.cc, src/model_config_utils.cc).
 *
 * Checked at load with Triton's texts (ValidateModelMetrics). What Triton leaves to
 * prometheus-cpp 1.0.1, which throws from inside the model's load ("Invalid label name",
 * "Bucket Boundaries must be strictly sorted"), is refused here too, with the model and field
 * named. An unknown family loads, with Triton's warning when the metrics frontend reads the
 * buckets (`histogramBuckets`).
 */
import { invalidArg } from '../errors';
import type { ProtoJsonObject } from './proto-schema';

/** The histogram families whose buckets `model_metrics` may set (Triton's metric_map_). */
export const CUSTOMIZABLE_HISTOGRAMS: readonly string[] = ['nv_inference_first_response_histogram_ms'];

/** A Prometheus label name, which the `_<key>` of a tag must be (and not `__...`, reserved). */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface MetricControl {
  metric_identifier?: { family?: string };
  histogram_options?: { buckets?: number[] };
}

const controls = (metrics: ProtoJsonObject | undefined): MetricControl[] =>
  (metrics?.metric_control ?? []) as MetricControl[];

/** INVALID_ARG for a `model_metrics` Triton refuses, or whose buckets are not strictly increasing. */
export function checkModelMetrics(model: string, metrics: ProtoJsonObject | undefined): void {
  controls(metrics).forEach((control, i) => {
    const refuse = (text: string): Error => invalidArg(`model '${model}': model_metrics.metric_control[${i}]: ${text}`);
    if (!control.metric_identifier) throw refuse("metric control must specify 'metric_identifier'");
    if (!control.metric_identifier.family) throw refuse("metric identifier must specify non-empty 'family'");
    if (!control.histogram_options) throw refuse("metric control must specify 'histogram_options'");
    const buckets = control.histogram_options.buckets ?? [];
    if (buckets.length === 0) throw refuse("histogram options must specify non-empty 'buckets'");
    // A repeated or unordered bound would repeat or misplace an `le` series; +Inf is always the last one.
    if (!buckets.every((b, j) => Number.isFinite(b) && (j === 0 || b > buckets[j - 1]))) {
      throw refuse(`histogram_options.buckets must be finite numbers in strictly increasing order, got [${buckets.join(', ')}]`);
    }
  });
}

/** INVALID_ARG for a `metric_tags` key whose label `_<key>` Prometheus would not take. */
export function checkMetricTags(model: string, tags: Record<string, string> | undefined): void {
  for (const key of Object.keys(tags ?? {})) {
    const label = `_${key}`;
    if (!LABEL_NAME.test(label) || label.startsWith('__')) {
      throw invalidArg(`model '${model}': metric_tags key '${key}' makes the label '${label}', which is not a valid ` +
        "Prometheus label name: use letters, digits and '_', not starting with '_'");
    }
  }
}

/**
 * The buckets `model_metrics` sets per customizable family (a later entry for a family wins,
 * as in Triton), and the families it names that are not customizable.
 */
export function histogramBuckets(metrics: ProtoJsonObject | undefined): { buckets: Map<string, number[]>; unknown: string[] } {
  const buckets = new Map<string, number[]>();
  const unknown: string[] = [];
  for (const control of controls(metrics)) {
    const family = control.metric_identifier?.family ?? '';
    if (CUSTOMIZABLE_HISTOGRAMS.includes(family)) buckets.set(family, control.histogram_options?.buckets ?? []);
    else unknown.push(family);
  }
  return { buckets, unknown };
}
