/**
 * `infernode perf` on an ensemble (ts/perf/server-stats.ts, ts/perf/report.ts) against
 * perf_analyzer's source: how model_parser.cc finds the composing models from the configs
 * (recursively, BLS models too, the response cache of any of them), how inference_profiler.cc
 * picks the version whose statistics it reports (DetermineStatsModelVersion) and orders them, and
 * the Server section's response cache form for an ensemble (ReportServerSideStats,
 * GetTotalEnsembleDurations). The form without a cache is checked against a real ensemble in
 * test/integration/perf.test.ts.
 */
import { zeroClientTimes } from '../../ts/perf/client-times';
import { levelResult, type LevelResult } from '../../ts/perf/measure';
import { parseBlsComposingModels } from '../../ts/perf/options';
import { levelText } from '../../ts/perf/report';
import {
  composingStats, findComposingModels, modelKey, zeroCounters, type ComposingMap, type ServerCounters,
} from '../../ts/perf/server-stats';

const step = (model_name: string, model_version: unknown): Record<string, unknown> => ({ model_name, model_version });
const ensemble = (name: string, steps: Record<string, unknown>[], cache = false): Record<string, unknown> =>
  ({ name, platform: 'ensemble', ensemble_scheduling: { step: steps }, response_cache: { enable: cache } });
const plain = (name: string, cache = false): Record<string, unknown> => ({ name, platform: '', backend: 'js', response_cache: { enable: cache } });

test('composing models: an ensemble\'s steps, recursively, each once, by name then version; -1 (or "-1") is unspecified', async () => {
  const configs: Record<string, Record<string, unknown>> = {
    outer: ensemble('outer', [step('z', '-1'), step('inner', -1), step('a', 2), step('a', '2')]),
    inner: ensemble('inner', [step('b', '-1'), step('a', -1)]),
    z: plain('z'), a: plain('a'), b: plain('b'),
  };
  const asked: string[] = [];
  const c = await findComposingModels('outer', configs.outer, [], async (name, version) => {
    asked.push(`${name}:${version ?? ''}`);
    return configs[name];
  });
  expect([...c.map]).toEqual([
    ['outer', [{ name: 'a', version: '2' }, { name: 'inner', version: '' }, { name: 'z', version: '' }]],
    ['inner', [{ name: 'a', version: '' }, { name: 'b', version: '' }]],
  ]);
  // Each step's config is read with its version (perf_analyzer's backend->ModelConfig).
  expect(asked).toContain('a:2');
  expect(asked).toContain('inner:');
  expect(c.responseCache).toBe(false);

  // A model that is no ensemble has none.
  expect((await findComposingModels('a', configs.a, [], async () => ({}))).map.size).toBe(0);
});

test('the response cache counts as enabled when any composing model enables it; the top level apart', async () => {
  const configs: Record<string, Record<string, unknown>> = {
    e: ensemble('e', [step('inner', -1)]), inner: ensemble('inner', [step('cached', -1)]), cached: plain('cached', true),
    top: ensemble('top', [step('a', -1)], true), a: plain('a'),
  };
  const read = async (name: string): Promise<Record<string, unknown>> => configs[name];
  expect(await findComposingModels('e', configs.e, [], read)).toMatchObject({ responseCache: true, topLevelCache: false });
  expect(await findComposingModels('top', configs.top, [], read)).toMatchObject({ responseCache: true, topLevelCache: true });
});

test('--bls-composing-models: the named models compose the BLS model, and an ensemble among them its steps', async () => {
  expect(parseBlsComposingModels('modelA:3, modelB')).toEqual([{ name: 'modelA', version: '3' }, { name: 'modelB', version: '' }]);
  expect(() => parseBlsComposingModels('a,,b')).toThrow(/--bls-composing-models got 'a,,b': expected a comma-separated list/);
  expect(() => parseBlsComposingModels('a:x')).toThrow(/--bls-composing-models/);
  const configs: Record<string, Record<string, unknown>> = { e: ensemble('e', [step('s', -1)]), s: plain('s'), bls: plain('bls') };
  const c = await findComposingModels('bls', configs.bls, parseBlsComposingModels('e,s:1'), async (name) => configs[name]);
  expect([...c.map]).toEqual([
    ['bls', [{ name: 'e', version: '' }, { name: 's', version: '1' }]],
    ['e', [{ name: 's', version: '' }]],
  ]);
});

const counters = (fields: Partial<ServerCounters>): ServerCounters => ({ ...zeroCounters(), ...fields });

test('a composing model\'s statistics: the version given, else the highest whose queue count went up; ordered by name then version', () => {
  const map: ComposingMap = new Map([['top', [{ name: 'a', version: '' }, { name: 'b', version: '10' }, { name: 'b', version: '9' }, { name: 'gone', version: '' }]]]);
  const deltas = new Map([
    [modelKey('a', '1'), counters({ queueCount: 3, successCount: 3 })],
    [modelKey('a', '2'), counters({ queueCount: 5, successCount: 5 })],
    [modelKey('a', '3'), counters({})],
    [modelKey('b', '9'), counters({ successCount: 7 })],
    [modelKey('b', '10'), counters({ successCount: 8 })],
  ]);
  const stats = composingStats('top', map, deltas);
  // std::map order: "10" before "9". A model with no statistics at all: zeros under version -1
  // (perf_analyzer stops there with "missing statistics for requested model").
  expect(stats.map((s) => [s.name, s.version, s.server.successCount])).toEqual([['a', '2', 5], ['b', '10', 8], ['b', '9', 7], ['gone', '-1', 0]]);
  // No version's queue went up: the highest version the statistics have, with its (zero) deltas.
  expect(composingStats('top', new Map([['top', [{ name: 'a', version: '' }]]]), new Map([[modelKey('a', '1'), counters({})], [modelKey('a', '4'), counters({})]]))
    .map((s) => s.version)).toEqual(['4']);
});

/** A level whose server statistics are `server` and `composing`, for levelText. */
function level(server: ServerCounters, composing: LevelResult['composing']): LevelResult {
  const r = levelResult(1, [{ seconds: 1, latenciesUs: [1000], responses: 1, server, client: zeroClientTimes() }], true, 1,
    { mode: 'concurrency', batchSize: 1, intervalMs: 1, stabilityPercentage: 10, maxTrials: 1 });
  return { ...r, composing };
}

const serverSection = (text: string): string => text.slice(text.indexOf('  Server: \n') + '  Server: \n'.length);

describe('the Server section of an ensemble with a response cache (perf_analyzer\'s ReportServerSideStats)', () => {
  // a: 6 hits (60 µs), 4 misses (80 µs) and 4 computed (1.6 ms): hit 10, miss 20, compute 400, cache and compute (1.74 ms / 10) 174.
  const a = counters({
    inferenceCount: 4, executionCount: 4, successCount: 10, successNs: 2_000_000, queueCount: 10, queueNs: 1_000_000,
    computeInputCount: 4, computeInputNs: 400_000, computeInferCount: 4, computeInferNs: 800_000, computeOutputCount: 4, computeOutputNs: 400_000,
    cacheHitCount: 6, cacheHitNs: 60_000, cacheMissCount: 4, cacheMissNs: 80_000,
  });
  // b: no cache; queue 50, compute 220.
  const b = counters({
    inferenceCount: 10, executionCount: 10, successCount: 10, successNs: 3_000_000, queueCount: 10, queueNs: 500_000,
    computeInputCount: 10, computeInputNs: 100_000, computeInferCount: 10, computeInferNs: 2_000_000, computeOutputCount: 10, computeOutputNs: 100_000,
  });
  const e = counters({ inferenceCount: 10, executionCount: 10, successCount: 10, successNs: 7_000_000, queueCount: 10, queueNs: 100_000 });
  const composing = [{ name: 'a', version: '1', server: a, composing: [] }, { name: 'b', version: '1', server: b, composing: [] }];
  const steps = [
    '  Composing models: ',
    '  a, version: 1',
    '      Inference count: 4',
    '      Execution count: 4',
    '      Cache hit count: 6',
    '      Cache miss count: 4',
    '      Successful request count: 10',
    '      Avg request latency: 200 usec (overhead 0 usec + queue 100 usec + cache hit/miss 174 usec)',
    '          Average Cache Hit Latency: 10 usec',
    '          Average Cache Miss Latency: 420 usec (cache lookup/insertion 20 usec + compute input 100 usec + compute infer 200 usec + compute output 100 usec)',
    '  b, version: 1',
    '      Inference count: 10',
    '      Execution count: 10',
    '      Cache hit count: 0',
    '      Cache miss count: 0',
    '      Successful request count: 10',
    '      Avg request latency: 300 usec (overhead 30 usec + queue 50 usec + cache hit/miss 220 usec)',
    '          Average Cache Hit Latency: 0 usec',
    '          Average Cache Miss Latency: 220 usec (cache lookup/insertion 0 usec + compute input 10 usec + compute infer 200 usec + compute output 10 usec)',
  ];
  const head = ['    Inference count: 10', '    Execution count: 10', '    Cache hit count: 0', '    Cache miss count: 0', '    Successful request count: 10'];

  test('a composing model enables it: the composing models\' queue (150) and cache hit/miss (174 + 220) summed; their hit and miss latencies', () => {
    expect(serverSection(levelText(level(e, composing), 'HTTP', { responseCache: true }))).toBe([
      ...head,
      '    Avg request latency: 700 usec (overhead 156 usec + queue 150 usec + cache hit/miss 394 usec)',
      '      Average Cache Hit Latency: 10 usec',
      '      Average Cache Miss Latency: 640 usec ',
      '',
      ...steps,
    ].join('\n'));
  });

  test('the ensemble\'s own config enables it: no breakdown of its request latency, its own hits added', () => {
    const own = { ...e, cacheHitCount: 2, cacheHitNs: 10_000 };
    expect(serverSection(levelText(level(own, composing), 'HTTP', { responseCache: true, topLevelCache: true }))).toBe([
      ...head.slice(0, 2), '    Cache hit count: 2', ...head.slice(3),
      '    Avg request latency: 700 usec',
      '      Average Cache Hit Latency: 15 usec',
      '      Average Cache Miss Latency: 640 usec ',
      '',
      ...steps,
    ].join('\n'));
  });

  test('no request in the windows: "Request count: 0" and no composing models, as perf_analyzer', () => {
    expect(serverSection(levelText(level(zeroCounters(), composing), 'HTTP', {}))).toBe('    Request count: 0');
  });
});
