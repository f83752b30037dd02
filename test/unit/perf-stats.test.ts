/**
 * The arithmetic of `infernode perf` (ts/perf/measure.ts) against perf_analyzer's
 * (inference_profiler.cc): when three windows count as stable, which sample a percentile is,
 * the standard deviation of latency, and the request-rate schedules (--request-distribution).
 */
import { isStable, levelResult, percentileOf, rateSchedule, type Window } from '../../ts/perf/measure';
import { zeroClientTimes } from '../../ts/perf/client-times';

/** A one-second window with `n` requests of `latencyUs` each. */
function window(n: number, latencyUs: number): Window {
  return {
    seconds: 1, latenciesUs: Array.from({ length: n }, () => latencyUs), responses: n,
    server: levelResult(0, [], false, 0, { mode: 'concurrency', batchSize: 1, intervalMs: 1, stabilityPercentage: 10, maxTrials: 1 }).server,
    client: zeroClientTimes(),
  };
}

const TEN = { stabilityPercentage: 10 };

test('stable: the largest of the last three windows at most (1 + P%) times the smallest, throughput and latency', () => {
  // perf_analyzer's IsInferWindowStable / IsLatencyWindowStable: max / min <= 1 + threshold.
  expect(isStable([window(100, 1000), window(105, 1000), window(110, 1000)], TEN)).toBe(true);
  // 100, 110, 120 are each within ±10% of their average (110), but 120 / 100 = 1.2.
  expect(isStable([window(100, 1000), window(110, 1000), window(120, 1000)], TEN)).toBe(false);
  expect(isStable([window(100, 1000), window(100, 1100), window(100, 1200)], TEN)).toBe(false);
  expect(isStable([window(100, 1000), window(100, 1050), window(100, 1100)], TEN)).toBe(true);
  // Only the last three count; fewer than three never are.
  expect(isStable([window(1, 1), window(100, 1000), window(100, 1000), window(100, 1000)], TEN)).toBe(true);
  expect(isStable([window(100, 1000), window(100, 1000)], TEN)).toBe(false);
  // A window without a completed request is not stable (its throughput is 0).
  expect(isStable([window(100, 1000), window(0, 0), window(100, 1000)], TEN)).toBe(false);
});

test('a percentile is the sample at index round(p / 100 × (n − 1)) of the sorted latencies', () => {
  // perf_analyzer's SummarizeLatency: index = (p / 100.0) * (size - 1) + 0.5, truncated.
  const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  expect(percentileOf(ten, 50)).toBe(6);   // index 5
  expect(percentileOf(ten, 90)).toBe(9);   // index 8.6 → 8
  expect(percentileOf(ten, 95)).toBe(10);  // index 9.05 → 9
  expect(percentileOf([10, 20], 50)).toBe(20);
  expect(percentileOf([7], 99)).toBe(7);
  expect(percentileOf([], 50)).toBe(0);
});

test('the standard deviation of latency is the sample one (n − 1)', () => {
  const settings = { mode: 'concurrency' as const, batchSize: 1, intervalMs: 1, stabilityPercentage: 10, maxTrials: 1 };
  const w = window(0, 0);
  w.latenciesUs = [1000, 2000, 3000, 4000];
  w.responses = 4;
  const r = levelResult(1, [w], true, 4, settings);
  expect(r.avgUs).toBe(2500);
  // Σ (x − 2500)² = 5,000,000; / 3 → 1290.99 (the population one would be 1118.03).
  expect(r.stdUs).toBeCloseTo(Math.sqrt(5_000_000 / 3), 6);
});

test('--request-distribution: constant sends every 1/rate s; poisson draws exponential gaps of mean 1/rate', () => {
  const constant = rateSchedule(200, 'constant');
  const times = Array.from({ length: 5 }, () => constant());
  expect(times).toEqual([5, 10, 15, 20, 25]);

  const poisson = rateSchedule(200, 'poisson');
  const gaps: number[] = [];
  let last = 0;
  for (let i = 0; i < 20_000; i++) {
    const t = poisson();
    gaps.push(t - last);
    last = t;
  }
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  const sd = Math.sqrt(gaps.reduce((a, b) => a + (b - mean) ** 2, 0) / gaps.length);
  expect(mean).toBeGreaterThan(4.8);
  expect(mean).toBeLessThan(5.2);
  // An exponential distribution's standard deviation equals its mean.
  expect(sd / mean).toBeGreaterThan(0.95);
  expect(sd / mean).toBeLessThan(1.05);
  expect(gaps.every((g) => g >= 0)).toBe(true);
});
