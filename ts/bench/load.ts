/**
 * A closed-loop load generator shared by the bench scenarios: `concurrency` workers each issue
 * the next request as soon as the previous one settles, for a fixed duration.
 */
import { performance } from 'node:perf_hooks';

export interface LoadResult {
  concurrency: number;
  requests: number;
  errors: number;
  seconds: number;
  requestsPerSecond: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs `call` from `concurrency` workers for `durationMs` (after `warmupMs` unmeasured). */
export async function runLoad(
  call: () => Promise<unknown>, concurrency: number, durationMs: number, warmupMs = 300,
): Promise<LoadResult> {
  const warmEnd = performance.now() + warmupMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < warmEnd) await call();
  }));
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await call();
        latencies.push((performance.now() - t0) * 1000);
      } catch {
        errors++;
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  const sum = latencies.reduce((a, b) => a + b, 0);
  return {
    concurrency,
    requests: latencies.length,
    errors,
    seconds,
    requestsPerSecond: latencies.length / seconds,
    p50Us: percentile(sorted, 50),
    p99Us: percentile(sorted, 99),
    meanUs: latencies.length ? sum / latencies.length : 0,
  };
}
