/**
 * `metricsConfig` (tritonserver's --metrics-config `<setting>=<value>`): which latency metrics
 * the metrics frontend reports. Unknown settings and bad values fail start-up.
 */
import { invalidArg } from '../../errors';

export interface MetricsSettings {
  /** `nv_inference_*_duration_us` counters. Default true. */
  counterLatencies: boolean;
  /** `nv_inference_*_summary_us` summaries, observed per request. Default false. */
  summaryLatencies: boolean;
  /** quantile → allowed error, as `0.5:0.05,0.9:0.01,...`. */
  summaryQuantiles: [number, number][];
  /** `nv_inference_first_response_histogram_ms`. Default false. */
  histogramLatencies: boolean;
}

/** Triton's default summary quantiles. */
export const DEFAULT_QUANTILES: [number, number][] = [[0.5, 0.05], [0.9, 0.01], [0.95, 0.001], [0.99, 0.001]];

function bool(key: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw invalidArg(`metrics config '${key}' must be true or false, got '${value}'`);
}

function quantiles(value: string): [number, number][] {
  return value.split(',').map((pair) => {
    const [q, e] = pair.split(':').map(Number);
    if (!(q > 0 && q < 1) || !(e >= 0 && e < 1)) {
      throw invalidArg(`metrics config 'summary_quantiles': '${pair}' must be <quantile>:<error> with both in (0, 1)`);
    }
    return [q, e];
  });
}

/** Parses the entries; INVALID_ARG for unknown settings or values. */
export function parseMetricsConfig(entries: readonly string[] | undefined): MetricsSettings {
  const out: MetricsSettings = {
    counterLatencies: true, summaryLatencies: false, summaryQuantiles: DEFAULT_QUANTILES, histogramLatencies: false,
  };
  for (const entry of entries ?? []) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw invalidArg(`metrics config '${entry}' must look like <setting>=<value>`);
    const key = entry.slice(0, eq).trim();
    const value = entry.slice(eq + 1).trim();
    switch (key) {
      case 'counter_latencies': out.counterLatencies = bool(key, value); break;
      case 'summary_latencies': out.summaryLatencies = bool(key, value); break;
      case 'summary_quantiles': out.summaryQuantiles = quantiles(value); break;
      case 'histogram_latencies': out.histogramLatencies = bool(key, value); break;
      default:
        throw invalidArg(`unknown metrics config '${key}' (known: counter_latencies, summary_latencies, ` +
          'summary_quantiles, histogram_latencies)');
    }
  }
  return out;
}
