/**
 * The metrics' summary (ts/server/metrics/summary.ts): exact quantiles below 256, within 0.4 %
 * above, over the last minute in 5 age buckets of 12 s as Triton's prometheus-cpp; _count and
 * _sum of every observation.
 */
import { WindowedSummary } from '../../ts/server/metrics/summary';

const QUANTILES = [0.5, 0.9, 0.95, 0.99, 0.999];

/** The observed value at rank ceil(q * n), what each quantile stands for. */
function exact(sorted: number[], q: number): number {
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1];
}

afterEach(() => {
  jest.useRealTimers();
});

test('values below 256 are their own quantiles; _count and _sum are exact', () => {
  const summary = new WindowedSummary(QUANTILES);
  for (let v = 1; v <= 200; v++) summary.observe(v);
  expect(summary.values()).toEqual([100, 180, 190, 198, 200]);
  expect([summary.count, summary.sum]).toEqual([200, 20100]);
});

test('larger values: each quantile within 0.4 % of the observed value at its rank', () => {
  const summary = new WindowedSummary(QUANTILES);
  const observed: number[] = [];
  let seed = 7;
  for (let i = 0; i < 5000; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const v = 256 + (seed % 5_000_000);
    observed.push(v);
    summary.observe(v);
  }
  observed.sort((a, b) => a - b);
  summary.values().forEach((value, i) => {
    const want = exact(observed, QUANTILES[i]);
    expect(Math.abs(value - want) / want).toBeLessThanOrEqual(0.004);
  });
});

test('quantiles cover the last minute only (NaN once it is empty); _count and _sum keep everything', () => {
  jest.useFakeTimers({ now: 1_000_000 });
  const summary = new WindowedSummary([0.5]);
  for (let i = 0; i < 10; i++) summary.observe(100);
  jest.setSystemTime(1_000_000 + 30_000);
  for (let i = 0; i < 30; i++) summary.observe(5);
  expect(summary.values()).toEqual([5]);
  for (let i = 0; i < 30; i++) summary.observe(200);
  expect(summary.values()).toEqual([100]);
  // The first ten are over a minute old: gone; the later ones are within the minute.
  jest.setSystemTime(1_000_000 + 65_000);
  expect(summary.values()).toEqual([5]);
  jest.setSystemTime(1_000_000 + 200_000);
  expect(summary.values()).toEqual([NaN]);
  expect([summary.count, summary.sum]).toEqual([70, 10 * 100 + 30 * 5 + 30 * 200]);
});

test('one observation, or many of one value, is its own quantiles at any size; no quantile is past the window\'s ' +
  'least or greatest observation', () => {
  // Were 329, 1001472 and 9042383626829824: the middle of the value's bin.
  for (const v of [0, 7, 328, 1_000_003, 2 ** 53]) {
    const one = new WindowedSummary(QUANTILES);
    one.observe(v);
    expect(one.values()).toEqual(QUANTILES.map(() => v));
    const same = new WindowedSummary(QUANTILES);
    for (let i = 0; i < 1000; i++) same.observe(v);
    expect(same.values()).toEqual(QUANTILES.map(() => v));
  }
  const spread = new WindowedSummary([0.001, 0.5, 0.9995]);
  spread.observe(1_000_003);
  for (let i = 0; i < 998; i++) spread.observe(5000);
  spread.observe(300);
  const [low, median, high] = spread.values();
  for (const [got, want] of [[low, 300], [median, 5000], [high, 1_000_003]]) expect(Math.abs(got - want) / want).toBeLessThanOrEqual(0.004);
  expect(high).toBeLessThanOrEqual(1_000_003);
});

test('the least and greatest observation leave the window with their age bucket', () => {
  jest.useFakeTimers({ now: 1_000_000 });
  const summary = new WindowedSummary([0.999]);
  summary.observe(1_000_003);
  jest.setSystemTime(1_000_000 + 30_000);
  for (let i = 0; i < 10; i++) summary.observe(999_999);
  expect(summary.values()).toEqual([1_000_003]);
  jest.setSystemTime(1_000_000 + 65_000);
  // Only the 999,999s are left: their bin's middle is above them, the greatest observation is 999,999.
  expect(summary.values()).toEqual([999_999]);
});
