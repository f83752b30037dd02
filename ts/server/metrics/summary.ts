/**
 * A Prometheus summary of whole-number observations (µs), as Triton's reports them: `_count` and
 * `_sum` of every observation, and quantiles over the last minute, which prometheus-cpp keeps in
 * 5 age buckets of 12 s (its TimeWindowQuantiles).
 *
 * Each age bucket counts its observations in bins: one per value below 256, then 128 per power
 * of two (a quantile is then within 0.4 % of the observed value it stands for), and keeps its
 * least and greatest observation, which bound every quantile (so one observation, or many of one
 * value, is its own quantiles, as prometheus-cpp's exact samples give). An observation
 * costs one Map increment; prom-client's Summary (a t-digest per age bucket, each observation
 * pushed into all 5) cost about 4 µs, 20 µs per request for Triton's five summaries.
 */

const EXACT = 256;
const EXACT_BITS = 8;
const PER_OCTAVE = 128;
const AGE_BUCKETS = 5;
const MAX_AGE_MS = 60_000;
const AGE_MS = MAX_AGE_MS / AGE_BUCKETS;

/** The bin of a non-negative whole number. */
function binOf(value: number): number {
  if (value < EXACT) return value;
  const octave = Math.floor(Math.log2(value));
  return EXACT + (octave - EXACT_BITS) * PER_OCTAVE + Math.floor((value / 2 ** octave - 1) * PER_OCTAVE);
}

/** The value a bin stands for: itself below 256, else the middle of its range. */
function valueOf(bin: number): number {
  if (bin < EXACT) return bin;
  const octave = EXACT_BITS + Math.floor((bin - EXACT) / PER_OCTAVE);
  return 2 ** octave * (1 + ((bin - EXACT) % PER_OCTAVE + 0.5) / PER_OCTAVE);
}

export class WindowedSummary {
  count = 0;
  sum = 0;
  /** Counts by bin, per age bucket; `#current` takes observations until `#currentEnds`. */
  readonly #ages: Map<number, number>[] = Array.from({ length: AGE_BUCKETS }, () => new Map());
  /** Each age bucket's least and greatest observation. */
  readonly #mins: number[] = new Array<number>(AGE_BUCKETS).fill(Infinity);
  readonly #maxes: number[] = new Array<number>(AGE_BUCKETS).fill(-Infinity);
  #current = 0;
  #currentEnds = Date.now() + AGE_MS;

  constructor(readonly quantiles: readonly number[]) {}

  observe(value: number): void {
    this.count++;
    this.sum += value;
    this.#rotate(Date.now());
    const counts = this.#ages[this.#current];
    const bin = binOf(value);
    counts.set(bin, (counts.get(bin) ?? 0) + 1);
    if (value < this.#mins[this.#current]) this.#mins[this.#current] = value;
    if (value > this.#maxes[this.#current]) this.#maxes[this.#current] = value;
  }

  /** Each quantile's value over the last minute (NaN without observations, as prometheus-cpp). */
  values(): number[] {
    this.#rotate(Date.now());
    const merged = new Map<number, number>();
    for (const counts of this.#ages) for (const [bin, n] of counts) merged.set(bin, (merged.get(bin) ?? 0) + n);
    const bins = [...merged.keys()].sort((a, b) => a - b);
    let total = 0;
    for (const n of merged.values()) total += n;
    const min = Math.min(...this.#mins);
    const max = Math.max(...this.#maxes);
    const within = (bin: number): number => Math.min(max, Math.max(min, valueOf(bin)));
    return this.quantiles.map((q) => {
      if (total === 0) return NaN;
      const rank = Math.max(1, Math.ceil(q * total));
      let seen = 0;
      for (const bin of bins) {
        seen += merged.get(bin)!;
        if (seen >= rank) return within(bin);
      }
      return within(bins[bins.length - 1]);
    });
  }

  /** Starts a new age bucket (clearing the oldest) every 12 s. */
  #rotate(now: number): void {
    for (let k = 0; k < AGE_BUCKETS && now >= this.#currentEnds; k++) {
      this.#current = (this.#current + 1) % AGE_BUCKETS;
      this.#ages[this.#current].clear();
      this.#mins[this.#current] = Infinity;
      this.#maxes[this.#current] = -Infinity;
      this.#currentEnds += AGE_MS;
    }
    if (now >= this.#currentEnds) this.#currentEnds = now + AGE_MS;  // idle for over a minute: all cleared
  }
}
