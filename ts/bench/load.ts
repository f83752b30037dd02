/**
 * A closed-loop load generator shared by the bench scenarios: `concurrency` workers each issue
 * the next request as soon as the previous one settles, for a fixed duration.
 *
 * Latencies go into a log-scale histogram of fixed size (1 % wide buckets, HdrHistogram's
 * idea), updated in the loop itself, not into a list of every sample: a list of hundreds of
 * thousands of numbers (a JS array grown by push(), or a large Float64Array) kept V8's
 * incremental marking busy, under which the young generation promoted ~40 times more, and the
 * collector's pauses then measured the load generator rather than the server (Node 20, an
 * identity model at concurrency 256: 5 MB promoted in 2.3 s without a list, 230 MB with one).
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

/** Bucket i holds latencies in [GROWTH^i - 1, GROWTH^(i+1) - 1) µs; the last one everything above (~7 min). */
const GROWTH = 1.01;
const BUCKETS = 2700;
const PER_LOG = 1 / Math.log(GROWTH);

function bucketOf(us: number): number {
  return Math.min(BUCKETS - 1, Math.floor(Math.log1p(us) * PER_LOG));
}

/** The latency at percentile `p` of the histogram: the middle of its bucket (within 0.5 %). */
function percentile(histogram: Float64Array, count: number, p: number): number {
  if (count === 0) return 0;
  const rank = Math.min(count - 1, Math.floor((p / 100) * count));
  let seen = 0;
  for (let i = 0; i < BUCKETS; i++) {
    seen += histogram[i];
    if (seen > rank) return (GROWTH ** i + GROWTH ** (i + 1)) / 2 - 1;
  }
  return GROWTH ** BUCKETS - 1;
}

/** Runs `call` from `concurrency` workers for `durationMs` (after `warmupMs` unmeasured). */
export async function runLoad(
  call: () => Promise<unknown>, concurrency: number, durationMs: number, warmupMs = 300,
): Promise<LoadResult> {
  const warmEnd = performance.now() + warmupMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < warmEnd) await call();
  }));
  const histogram = new Float64Array(BUCKETS);
  let count = 0;
  let sum = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await call();
      } catch {
        errors++;
        continue;
      }
      const us = (performance.now() - t0) * 1000;
      histogram[bucketOf(us)]++;
      sum += us;
      count++;
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  return {
    concurrency,
    requests: count,
    errors,
    seconds,
    requestsPerSecond: count / seconds,
    p50Us: percentile(histogram, count, 50),
    p99Us: percentile(histogram, count, 99),
    meanUs: count ? sum / count : 0,
  };
}
