/**
 * `metricsConfig` (tritonserver's --metrics-config `<setting>=<value>`): which latency metrics
 * the metrics frontend reports. Unknown settings and bad values fail start-up (a bad
 * summary_quantiles pair is logged and skipped, as Triton does).
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

/** Triton's default summary quantiles (metric_model_reporter.h MetricReporterConfig::quantiles_). */
export const DEFAULT_QUANTILES: [number, number][] = [[0.5, 0.05], [0.9, 0.01], [0.95, 0.001], [0.99, 0.001], [0.999, 0.001]];

function bool(key: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw invalidArg(`metrics config '${key}' must be true or false, got '${value}'`);
}

/**
 * `summary_quantiles` as Triton reads it (metric_model_reporter.cc ParseQuantiles): each number
 * is its leading numeric text (std::stod: `0.0.1` is 0.0), and a pair that cannot be read is
 * logged and skipped, never a start-up failure (qa/L0_metrics starts with `0.1:0.0.1,...`).
 * Pairs outside (0, 1) / [0, 1) are skipped too (a summary cannot use them). None left: the
 * defaults.
 */
function quantiles(value: string, logError: (line: string) => void): [number, number][] {
  const pairs: [number, number][] = [];
  for (const pair of value.split(',')) {
    const colon = pair.indexOf(':');
    const q = parseFloat(pair.slice(0, colon));
    const e = parseFloat(pair.slice(colon + 1));
    if (colon < 0) logError(`Invalid option: [${pair}]. No ':' delimiter found. Expected format is <quantile>:<error>`);
    else if (!(q > 0 && q < 1) || !(e >= 0 && e < 1)) logError(`Invalid option: [${pair}]. Expected a quantile in (0, 1) and an error in [0, 1)`);
    else pairs.push([q, e]);
  }
  return pairs.length > 0 ? pairs : DEFAULT_QUANTILES;
}

/**
 * Parses the entries; INVALID_ARG for unknown settings or values, except `summary_quantiles`,
 * whose unreadable pairs go to `logError` and are skipped, as in Triton.
 */
export function parseMetricsConfig(entries: readonly string[] | undefined, logError: (line: string) => void = () => undefined): MetricsSettings {
  const out: MetricsSettings = {
    counterLatencies: true, summaryLatencies: false, summaryQuantiles: DEFAULT_QUANTILES, histogramLatencies: false,
  };
  for (const entry of entries ?? []) {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq).trim();
    const value = entry.slice(eq + 1).trim();
    // What tritonserver refuses (ParseMetricsConfigOption), with its text: no '=', an empty
    // setting or value, a ',' before the '=' (a per-name setting, which it does not support).
    if (eq < 0 || key === '' || value === '' || key.includes(',')) {
      throw invalidArg(`--metrics-config option format is <setting>=<value>. Got ${entry}`);
    }
    switch (key) {
      case 'counter_latencies': out.counterLatencies = bool(key, value); break;
      case 'summary_latencies': out.summaryLatencies = bool(key, value); break;
      case 'summary_quantiles': out.summaryQuantiles = quantiles(value, logError); break;
      case 'histogram_latencies': out.histogramLatencies = bool(key, value); break;
      default:
        throw invalidArg(`unknown metrics config '${key}' (known: counter_latencies, summary_latencies, ` +
          'summary_quantiles, histogram_latencies)');
    }
  }
  return out;
}
