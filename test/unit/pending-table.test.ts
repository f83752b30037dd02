/**
 * PendingTable (a model's requests by id): behaves as a Map under the operations BoundModel
 * makes — ids that only increase, deletes in any order, clustered and wrapping probe runs,
 * growth — checked against a Map step by step.
 */
import { PendingTable } from '../../ts/pending-table';

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function expectSame(table: PendingTable<string>, map: Map<number, string>, probe: number[]): void {
  expect(table.size).toBe(map.size);
  for (const id of probe) expect(table.get(id)).toBe(map.get(id));
}

test('set, get, replace and delete answer as a Map does', () => {
  const table = new PendingTable<string>();
  expect(table.get(1)).toBeUndefined();
  expect(table.delete(1)).toBe(false);
  table.set(1, 'a');
  table.set(9, 'b');  // the same home slot as 1 in 8 slots
  table.set(1, 'c');  // a replacement does not count twice
  expect(table.size).toBe(2);
  expect(table.get(1)).toBe('c');
  expect(table.delete(1)).toBe(true);
  expect(table.get(9)).toBe('b');  // moved back over the hole, still found
  expect(table.delete(1)).toBe(false);
  expect(table.size).toBe(1);
});

test('keeps every entry reachable through collisions, wrap-around and growth', () => {
  const table = new PendingTable<string>(8);
  const map = new Map<number, string>();
  // Ids that all share home slots in small tables, some landing on the last slot (wrap-around).
  const ids = [7, 15, 23, 31, 8, 16, 39, 47, 55, 63, 64, 128, 1023, 2047, 4095];
  for (const id of ids) {
    table.set(id, `v${id}`);
    map.set(id, `v${id}`);
    expectSame(table, map, ids);
  }
  for (const id of [15, 7, 1023, 64, 55]) {
    expect(table.delete(id)).toBe(map.delete(id));
    expectSame(table, map, ids);
  }
});

test('matches a Map under the churn of a model: increasing ids, deletes in random order', () => {
  const rand = random(42);
  const table = new PendingTable<string>();
  const map = new Map<number, string>();
  let next = 1;
  const live: number[] = [];
  let failedDeletes = 0;
  for (let step = 0; step < 100_000; step++) {
    // In flight between 0 and ~600, with bursts: grows, shrinks and wraps around repeatedly.
    const target = 300 + 300 * Math.sin(step / 2500);
    if (live.length < target || rand() < 0.5) {
      const id = next;
      next += 1 + Math.floor(rand() * 3);  // several models share the id counter: gaps
      table.set(id, `v${id}`);
      map.set(id, `v${id}`);
      live.push(id);
    } else if (live.length > 0) {
      const at = Math.floor(rand() * live.length);
      const id = live[at];
      live[at] = live[live.length - 1];
      live.pop();
      if (!table.delete(id)) failedDeletes++;
      map.delete(id);
    }
    if (step % 4999 === 0) expectSame(table, map, [...live, next, next + 1, 0.5 * next]);
  }
  expect(failedDeletes).toBe(0);
  expectSame(table, map, live);
  for (const id of live) expect(table.delete(id)).toBe(true);
  expect(table.size).toBe(0);
  expect(table.get(live[0] ?? 1)).toBeUndefined();
});
