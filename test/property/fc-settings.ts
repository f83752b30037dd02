/**
 * How every property suite runs fast-check: a fixed seed by default, so `npm test` is
 * deterministic and a failure reproduces exactly; FC_SEED=<n> replays a reported failure,
 * FC_SEED=random explores new inputs (the seed is printed by fast-check with any failure, and
 * logged here up front), and FC_RUNS=<factor> multiplies every suite's run count for longer
 * fuzzing sessions (docs/testing.md).
 */
import fc from 'fast-check';

function seedFromEnv(): number {
  const value = process.env.FC_SEED;
  if (value === undefined || value === '') return 0x1f2e3d4c;
  if (value === 'random') return (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`FC_SEED must be an integer or 'random', got '${value}'`);
  return n;
}

/** The seed of this jest process's properties. */
export const SEED = seedFromEnv();
const FACTOR = Number(process.env.FC_RUNS ?? '1') > 0 ? Number(process.env.FC_RUNS ?? '1') : 1;
if (process.env.FC_SEED === 'random') console.log(`fast-check seed: ${SEED} (replay with FC_SEED=${SEED})`);

/** Run count for a property: `base` times FC_RUNS. */
export function runs(base: number): number {
  return Math.max(1, Math.round(base * FACTOR));
}

/** The options every `fc.assert` gets: the seed, the run count, and a failure report naming both. */
export function settings<T>(numRuns: number): fc.Parameters<T> {
  return { seed: SEED, numRuns: runs(numRuns), verbose: 1 };
}
