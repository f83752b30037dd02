/**
 * Prometheus text exposition (format 0.0.4) of the per-model families, which a prom-client
 * Registry cannot write: their series differ in labels (metric_tags) and, for a histogram, in
 * buckets (model_metrics), and prom-client fixes both per metric. Lines are written as
 * Triton's prometheus-cpp writes them: labels sorted by name (its std::map), then `le` or
 * `quantile`; a family without series is left out.
 */

export type Labels = Record<string, string>;

export interface Sample {
  /** The series' name: the family's, or its `_bucket`, `_sum` or `_count`. */
  name: string;
  labels: Labels;
  /** `le` or `quantile`, written after the sorted labels. */
  last?: [string, string | number];
  value: number;
}

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'summary';

const escapeHelp = (text: string): string => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (text: string): string => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function valueText(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function labelText(sample: Sample): string {
  const { labels, last } = sample;
  const pairs = Object.keys(labels).sort().map((name) => `${name}="${escapeLabel(labels[name])}"`);
  if (last) pairs.push(`${last[0]}="${escapeLabel(String(last[1]))}"`);
  return pairs.join(',');
}

/** One family: its HELP and TYPE lines, then a line per sample; '' when it has no sample. */
export function familyText(name: string, help: string, type: FamilyType, samples: readonly Sample[]): string {
  if (samples.length === 0) return '';
  const lines = [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`];
  for (const sample of samples) lines.push(`${sample.name}{${labelText(sample)}} ${valueText(sample.value)}`);
  return `${lines.join('\n')}\n`;
}
