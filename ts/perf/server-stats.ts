/**
 * The server-side statistics `infernode perf` reads, as perf_analyzer reads them: a model's
 * counters (Triton's ModelStatistics, summed over versions), and, for an ensemble or a BLS model,
 * its composing models' and their statistics.
 *
 * Composing models, as perf_analyzer finds and summarizes them:
 *
 * - model_parser.cc (DetermineComposingModelMap, AddEnsembleComposingModels,
 *   AddBLSComposingModels): a model whose config has `platform: "ensemble"` is composed of its
 *   `ensemble_scheduling.step[]` models (name, and version; -1 is "unspecified"), read again from
 *   each step model's config, recursively. A BLS model is composed of the models the user names
 *   (--bls-composing-models), each of which may be an ensemble. The map goes from a model's name
 *   to its composing models, each once, ordered by name then version (a std::set). The response
 *   cache counts as enabled when any model of the map enables it (GetComposingSchedulerType), or
 *   the model itself.
 * - inference_profiler.cc (GetServerSideStatus, SummarizeServerStats, DetermineStatsModelVersion):
 *   with composing models, the statistics of every model are read at each window's edge; each
 *   composing model's are the deltas of its version (the one given, or else the highest version
 *   whose queue count went up), and each composing ensemble has its own composing models below it.
 */

/** The server statistics perf reads, summed over the model's versions. */
export interface ServerCounters {
  inferenceCount: number;
  executionCount: number;
  successCount: number;
  successNs: number;
  queueNs: number;
  queueCount: number;
  computeInputNs: number;
  computeInputCount: number;
  computeInferNs: number;
  computeInferCount: number;
  computeOutputNs: number;
  computeOutputCount: number;
  cacheHitCount: number;
  cacheHitNs: number;
  cacheMissCount: number;
  cacheMissNs: number;
}

export function zeroCounters(): ServerCounters {
  return {
    inferenceCount: 0, executionCount: 0, successCount: 0, successNs: 0, queueNs: 0, queueCount: 0,
    computeInputNs: 0, computeInputCount: 0, computeInferNs: 0, computeInferCount: 0, computeOutputNs: 0,
    computeOutputCount: 0, cacheHitCount: 0, cacheHitNs: 0, cacheMissCount: 0, cacheMissNs: 0,
  };
}

type Duration = { count?: unknown; ns?: unknown } | undefined;

/** The counters of `stats` (Triton's ModelStatistics; gRPC gives 64-bit numbers as strings). */
export function serverCounters(stats: { model_stats: Record<string, unknown>[] }): ServerCounters {
  const sum = zeroCounters();
  for (const m of stats.model_stats) {
    const s = (m.inference_stats ?? {}) as Record<string, Duration>;
    const n = (d: Duration, key: 'count' | 'ns'): number => Number(d?.[key] ?? 0);
    sum.inferenceCount += Number(m.inference_count ?? 0);
    sum.executionCount += Number(m.execution_count ?? 0);
    sum.successCount += n(s.success, 'count');
    sum.successNs += n(s.success, 'ns');
    sum.queueNs += n(s.queue, 'ns');
    sum.queueCount += n(s.queue, 'count');
    sum.computeInputNs += n(s.compute_input, 'ns');
    sum.computeInputCount += n(s.compute_input, 'count');
    sum.computeInferNs += n(s.compute_infer, 'ns');
    sum.computeInferCount += n(s.compute_infer, 'count');
    sum.computeOutputNs += n(s.compute_output, 'ns');
    sum.computeOutputCount += n(s.compute_output, 'count');
    sum.cacheHitCount += n(s.cache_hit, 'count');
    sum.cacheHitNs += n(s.cache_hit, 'ns');
    sum.cacheMissCount += n(s.cache_miss, 'count');
    sum.cacheMissNs += n(s.cache_miss, 'ns');
  }
  return sum;
}

export function counterDelta(after: ServerCounters, before: ServerCounters): ServerCounters {
  const d = zeroCounters();
  for (const key of Object.keys(d) as (keyof ServerCounters)[]) d[key] = after[key] - before[key];
  return d;
}

export function addCounters(a: ServerCounters, b: ServerCounters): ServerCounters {
  const d = zeroCounters();
  for (const key of Object.keys(d) as (keyof ServerCounters)[]) d[key] = a[key] + b[key];
  return d;
}

/** A model and version; version '' is perf_analyzer's "unspecified" (a step's model_version -1). */
export interface ModelId {
  name: string;
  version: string;
}

/** A model's name → its composing models (perf_analyzer's ComposingModelMap), each list ordered by name, then version. */
export type ComposingMap = Map<string, ModelId[]>;

/** std::string's order, which perf_analyzer's std::map and std::set keep (byte order for ASCII names). */
const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function compareIds(a: ModelId, b: ModelId): number {
  return compareText(a.name, b.name) || compareText(a.version, b.version);
}

/** Adds `id` to `name`'s set, kept ordered and without duplicates. */
function addComposing(map: ComposingMap, name: string, id: ModelId): void {
  const list = map.get(name) ?? [];
  if (!list.some((x) => x.name === id.name && x.version === id.version)) {
    list.push(id);
    list.sort(compareIds);
  }
  map.set(name, list);
}

/** A step's model_version as perf_analyzer reads it: a number or its digits (gRPC and JSON give int64 as text); -1 is ''. */
function stepVersion(value: unknown, model: string): string {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : typeof value === 'number' ? value : value === undefined ? -1 : NaN;
  if (!Number.isSafeInteger(n)) {
    throw new Error(`the ensemble step of model '${model}' has model_version ${JSON.stringify(value)}: expected an integer`);
  }
  return n === -1 ? '' : String(n);
}

const cacheEnabled = (config: Record<string, unknown>): boolean =>
  (config.response_cache as { enable?: boolean } | undefined)?.enable === true;

/** What perf_analyzer's ModelParser learns of the composing models. */
export interface Composition {
  map: ComposingMap;
  /** The top model's config or any composing model's enables the response cache (perf_analyzer's ResponseCacheEnabled). */
  responseCache: boolean;
  /** The top model's own config enables it (perf_analyzer's TopLevelResponseCachingEnabled). */
  topLevelCache: boolean;
}

/** Reads a model's config in Triton's JSON form. */
export type ConfigReader = (name: string, version: string | undefined) => Promise<Record<string, unknown>>;

/**
 * The composing models of model `top`, whose config is `config`: its ensemble steps
 * (recursively) and the `bls` models (each of them an ensemble perhaps), as perf_analyzer's
 * ModelParser finds them, reading each step model's config with `configOf`. An empty map: a
 * model without composing models.
 */
export async function findComposingModels(
  top: string, config: Record<string, unknown>, bls: ModelId[], configOf: ConfigReader,
): Promise<Composition> {
  const map: ComposingMap = new Map();
  const configs: Record<string, unknown>[] = [];
  const visited = new Set<string>();
  const addEnsemble = async (c: Record<string, unknown>, name = String(c.name ?? '')): Promise<void> => {
    // An ensemble is read once; Triton refuses cycles, this keeps a wrong server from looping.
    if (c.platform !== 'ensemble' || visited.has(name)) return;
    visited.add(name);
    const scheduling = c.ensemble_scheduling as { step?: { model_name?: unknown; model_version?: unknown }[] } | undefined;
    for (const step of scheduling?.step ?? []) {
      const id = { name: String(step.model_name ?? ''), version: stepVersion(step.model_version, name) };
      addComposing(map, name, id);
      const stepConfig = await configOf(id.name, id.version || undefined);
      configs.push(stepConfig);
      await addEnsemble(stepConfig);
    }
  };
  for (const id of bls) {
    addComposing(map, top, id);
    const blsConfig = await configOf(id.name, id.version || undefined);
    configs.push(blsConfig);
    await addEnsemble(blsConfig);
  }
  await addEnsemble(config, top);
  const topLevelCache = cacheEnabled(config);
  return { map, responseCache: topLevelCache || configs.some(cacheEnabled), topLevelCache };
}

/** The key of a model version in ModelCounters. */
export const modelKey = (name: string, version: string): string => `${name}\u0000${version}`;

/** Counters by model version (modelKey), of the models that matter to a run. */
export type ModelCounters = Map<string, ServerCounters>;

/** The counters of each version of the `names` models in `stats` (Triton's statistics of every model). */
export function countersByModel(stats: { model_stats: Record<string, unknown>[] }, names: ReadonlySet<string>): ModelCounters {
  const out: ModelCounters = new Map();
  for (const m of stats.model_stats) {
    const name = String(m.name ?? '');
    if (names.has(name)) out.set(modelKey(name, String(m.version ?? '')), serverCounters({ model_stats: [m] }));
  }
  return out;
}

/** Every name in the map, and the top model's. */
export function namesOf(top: string, map: ComposingMap): Set<string> {
  const names = new Set([top]);
  for (const [name, ids] of map) {
    names.add(name);
    for (const id of ids) names.add(id.name);
  }
  return names;
}

/** The counters' deltas, as perf_analyzer takes them: a version missing at the start counts from 0, one missing at the end is left out. */
export function modelCountersDelta(after: ModelCounters, before: ModelCounters): ModelCounters {
  const out: ModelCounters = new Map();
  const zero = zeroCounters();
  for (const [key, a] of after) {
    out.set(key, counterDelta(a, before.get(key) ?? zero));
  }
  return out;
}

/** Sums windows' deltas (the last three of a level). */
export function addModelCounters(a: ModelCounters, b: ModelCounters): ModelCounters {
  const out: ModelCounters = new Map(a);
  for (const [key, y] of b) {
    out.set(key, addCounters(out.get(key) ?? zeroCounters(), y));
  }
  return out;
}

/** The counters of the top model: its version given with -x, or all its versions summed (as for a model without composing models). */
export function topCounters(deltas: ModelCounters, name: string, version: string | undefined): ServerCounters {
  let sum = zeroCounters();
  for (const [key, c] of deltas) {
    const [n, v] = key.split('\u0000');
    if (n === name && (version === undefined || version === '' || v === version)) sum = addCounters(sum, c);
  }
  return sum;
}

/** A composing model's statistics over a level, and its own composing models' (a composing ensemble's). */
export interface ComposingStats {
  name: string;
  /** The version whose statistics these are (perf_analyzer's DetermineStatsModelVersion); '-1' when there were none. */
  version: string;
  server: ServerCounters;
  composing: ComposingStats[];
}

/**
 * The version perf_analyzer reports a composing model's statistics under: the one given, if the
 * statistics have it; else the highest version whose queue count went up. perf_analyzer stops
 * with "missing statistics for requested model" when there is none (unless the top model's config
 * enables the response cache); perf reports zeros under the highest version the statistics have,
 * or under -1 when they have none.
 */
function statsVersion(id: ModelId, deltas: ModelCounters): string {
  const versions = [...deltas.keys()].map((k) => k.split('\u0000')).filter(([n]) => n === id.name).map(([, v]) => v);
  if (id.version !== '') return versions.includes(id.version) ? id.version : '-1';
  const numeric = (vs: string[]): number[] => vs.map(Number).filter(Number.isSafeInteger);
  const active = numeric(versions.filter((v) => (deltas.get(modelKey(id.name, v))?.queueCount ?? 0) > 0));
  if (active.length > 0) return String(Math.max(...active));
  const any = numeric(versions);
  return any.length > 0 ? String(Math.max(...any)) : '-1';
}

/**
 * The statistics of `name`'s composing models over a level, recursively (perf_analyzer's
 * SummarizeServerStats), ordered by name then version (its std::map). Two steps that resolve to
 * the same version are one entry.
 */
export function composingStats(name: string, map: ComposingMap, deltas: ModelCounters, above: ReadonlySet<string> = new Set()): ComposingStats[] {
  const out: ComposingStats[] = [];
  const path = new Set([...above, name]);
  for (const id of map.get(name) ?? []) {
    const version = statsVersion(id, deltas);
    if (out.some((s) => s.name === id.name && s.version === version)) continue;
    out.push({
      name: id.name, version, server: deltas.get(modelKey(id.name, version)) ?? zeroCounters(),
      composing: path.has(id.name) ? [] : composingStats(id.name, map, deltas, path),
    });
  }
  return out.sort(compareIds);
}
