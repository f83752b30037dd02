/**
 * What `infernode perf` prints and writes, in perf_analyzer's layouts: the per-level report
 * (client and server sections), the closing "Inferences/Second vs. Client ... Latency" lines,
 * the CSV of -f (perf_analyzer's columns, rows by increasing throughput, times in µs) and an SVG
 * chart of latency against throughput next to it.
 */
import { clientAverages } from './client-times';
import { percentileOf, type LevelResult, type Window } from './measure';
import { zeroCounters, type ComposingStats, type ServerCounters } from './server-stats';

/** µs as perf_analyzer prints them: whole, truncated (its integer divisions). */
const whole = (v: number): number => Math.max(0, Math.trunc(v));
const us = (v: number): string => String(whole(v));

/** A throughput as perf_analyzer's streams print a double: six significant digits. */
const rate = (v: number): string => String(Number(v.toPrecision(6)));

/** Server-side averages (µs per request) of a level's merged windows, each truncated to whole µs as perf_analyzer's. */
export interface ServerBreakdown {
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  /** The three compute times together, per computed request. */
  computeUs: number;
  cacheHitUs: number;
  cacheMissUs: number;
  /** Cache hits, misses and computing together, per request that hit or computed (perf_analyzer's "cache hit/miss"). */
  cacheComputeUs: number;
}

const perCount = (ns: number, count: number): number => (count > 0 ? whole(ns / count / 1000) : 0);

export function serverBreakdown(s: ServerCounters): ServerBreakdown {
  const computeNs = s.computeInputNs + s.computeInferNs + s.computeOutputNs;
  return {
    requestUs: perCount(s.successNs, s.successCount),
    queueUs: perCount(s.queueNs, s.queueCount),
    computeInputUs: perCount(s.computeInputNs, s.computeInputCount),
    computeInferUs: perCount(s.computeInferNs, s.computeInferCount),
    computeOutputUs: perCount(s.computeOutputNs, s.computeOutputCount),
    computeUs: perCount(computeNs, s.computeInputCount),
    cacheHitUs: perCount(s.cacheHitNs, s.cacheHitCount),
    cacheMissUs: perCount(s.cacheMissNs, s.cacheMissCount),
    cacheComputeUs: perCount(s.cacheHitNs + s.cacheMissNs + computeNs, s.computeInputCount + s.cacheHitCount),
  };
}

/** The latency a level is summarized by: the average, or the --percentile. */
export function summaryLatencyUs(r: LevelResult, percentile: number | undefined): number {
  return percentile === undefined ? r.avgUs : r.percentilesUs.get(percentile) ?? 0;
}

export type Mode = 'concurrency' | 'rate';

/** Whose client timers a report shows: perf_analyzer's HTTP or gRPC client library, or triton.infer(). */
export type ClientLibrary = 'HTTP' | 'gRPC' | 'in-process';

/** The library of a target's kind ("HTTP", "gRPC", "gRPC streaming", "in-process"). */
export function clientLibrary(kind: string): ClientLibrary {
  if (kind.startsWith('gRPC')) return 'gRPC';
  return kind === 'in-process' ? 'in-process' : 'HTTP';
}

/**
 * The last line of the Client section, perf_analyzer's: the average time of a request in the
 * client library, split into send + receive and the wait for the response between them (-v:
 * send, wait and receive apart). The wait is the rest, so the parts add up to the whole.
 * perf_analyzer prints no such line for its in-process mode (the C API); this one has the HTTP
 * line's form.
 */
function clientLibraryText(r: LevelResult, library: ClientLibrary, verbose: boolean): string {
  const c = clientAverages(r.client);
  const request = whole(c.requestUs);
  const send = whole(c.sendUs);
  const recv = whole(c.recvUs);
  const wait = Math.max(0, request - send - recv);
  if (library === 'gRPC') {
    return `    Avg gRPC time: ${request} usec (` + (verbose
      ? `marshal ${send} usec + response wait ${wait} usec + unmarshal ${recv} usec)`
      : `(un)marshal request/response ${send + recv} usec + response wait ${wait} usec)`);
  }
  return `    Avg ${library} time: ${request} usec (` + (verbose
    ? `send ${send} usec + response wait ${wait} usec + receive ${recv} usec)`
    : `send/recv ${send + recv} usec + response wait ${wait} usec)`);
}

/** What a report shows besides the numbers: perf_analyzer's switches. */
export interface ReportOptions {
  /** -v: the client library's parts apart. */
  verbose?: boolean;
  /** --percentile: the report leaves out the average latency, which stability no longer uses. */
  percentile?: number;
  /** A decoupled model: responses per second too. */
  decoupled?: boolean;
  /**
   * The model's config enables the response cache, or a composing model's does: the server
   * section splits hits and misses, and the CSV has their columns.
   */
  responseCache?: boolean;
  /** The model's own config enables it (an ensemble's server line then has no breakdown, as perf_analyzer's). */
  topLevelCache?: boolean;
}

/** The line that opens a level, printed before its windows are measured (as perf_analyzer). */
export function levelHeader(value: number, mode: Mode): string {
  return mode === 'concurrency' ? `Request concurrency: ${value}` : `Request Rate: ${value} inference requests per second`;
}

/** A model's statistics over a level, with its composing models' (none but an ensemble's or a BLS model's). */
interface ServerNode {
  server: ServerCounters;
  composing: ComposingStats[];
}

/** The composing models' times summed (perf_analyzer's EnsembleDurations), µs per request, each term truncated. */
interface EnsembleDurations {
  queueUs: number;
  computeUs: number;
  cacheHitUs: number;
  cacheMissUs: number;
  /** Each composing model's cache hit/miss and compute per request that hit or computed, summed. */
  cacheComputeUs: number;
}

/**
 * perf_analyzer's GetTotalEnsembleDurations: the ensemble's own cache hit and miss averages (its
 * top-level response cache), plus, for each composing model, its averages (queue, compute,
 * cache hit, cache miss, cache and compute together), or a composing ensemble's sums, recursively.
 */
function ensembleDurations(node: ServerNode): EnsembleDurations {
  const d: EnsembleDurations = {
    queueUs: 0, computeUs: 0, cacheComputeUs: 0,
    cacheHitUs: perCount(node.server.cacheHitNs, node.server.cacheHitCount),
    cacheMissUs: perCount(node.server.cacheMissNs, node.server.cacheMissCount),
  };
  for (const m of node.composing) {
    let add: EnsembleDurations;
    if (m.composing.length > 0) {
      add = ensembleDurations(m);
    } else {
      const b = serverBreakdown(m.server);
      add = { queueUs: b.queueUs, computeUs: b.computeUs, cacheHitUs: b.cacheHitUs, cacheMissUs: b.cacheMissUs, cacheComputeUs: b.cacheComputeUs };
    }
    d.queueUs += add.queueUs;
    d.computeUs += add.computeUs;
    d.cacheHitUs += add.cacheHitUs;
    d.cacheMissUs += add.cacheMissUs;
    d.cacheComputeUs += add.cacheComputeUs;
  }
  return d;
}

/** How the server section is laid out: perf_analyzer's ResponseCacheEnabled and TopLevelResponseCachingEnabled. */
interface ServerLayout {
  responseCache: boolean;
  topLevelCache: boolean;
}

/**
 * A model's part of the Server section, perf_analyzer's ReportServerSideStats at depth
 * `iteration` (1 for the measured model; its lines indented by 2 × iteration + 2 spaces). An
 * ensemble's request latency is split into the sums of its composing models' queue and compute
 * times (ensembleDurations), then come its composing models, each under "name, version: V" and
 * laid out the same way one level deeper.
 */
function serverText(node: ServerNode, layout: ServerLayout, iteration = 1): string[] {
  const ident = ' '.repeat(2 * iteration);
  const s = node.server;
  if (s.successCount === 0) return [`${ident}  Request count: 0`];
  const requestUs = perCount(s.successNs, s.successCount);
  const overhead = (queue: number, accounted: number): number => Math.max(0, requestUs - queue - accounted);
  const lines = [`${ident}  Inference count: ${s.inferenceCount}`, `${ident}  Execution count: ${s.executionCount}`];
  if (layout.responseCache) lines.push(`${ident}  Cache hit count: ${s.cacheHitCount}`, `${ident}  Cache miss count: ${s.cacheMissCount}`);
  lines.push(`${ident}  Successful request count: ${s.successCount}`);
  const latency = `${ident}  Avg request latency: ${requestUs} usec`;
  if (node.composing.length === 0) {
    const b = serverBreakdown(s);
    if (layout.responseCache) {
      lines.push(
        `${latency} (overhead ${overhead(b.queueUs, b.cacheComputeUs)} usec + queue ${b.queueUs} usec + cache hit/miss ${b.cacheComputeUs} usec)`,
        `${ident}${ident}  Average Cache Hit Latency: ${b.cacheHitUs} usec`,
        `${ident}${ident}  Average Cache Miss Latency: ${b.cacheMissUs + b.computeUs} usec (cache lookup/insertion ${b.cacheMissUs} usec + ` +
          `compute input ${b.computeInputUs} usec + compute infer ${b.computeInferUs} usec + compute output ${b.computeOutputUs} usec)`,
      );
    } else {
      lines.push(`${latency} (overhead ${overhead(b.queueUs, b.computeUs)} usec + queue ${b.queueUs} usec + ` +
        `compute input ${b.computeInputUs} usec + compute infer ${b.computeInferUs} usec + compute output ${b.computeOutputUs} usec)`);
    }
    return lines;
  }
  const e = ensembleDurations(node);
  if (layout.responseCache) {
    // perf_analyzer prints no breakdown where the ensemble's own config enables the cache (its FIXME).
    lines.push(layout.topLevelCache ? latency
      : `${latency} (overhead ${overhead(e.queueUs, e.cacheComputeUs)} usec + queue ${e.queueUs} usec + cache hit/miss ${e.cacheComputeUs} usec)`);
    lines.push(`${ident}${ident}  Average Cache Hit Latency: ${e.cacheHitUs} usec`,
      `${ident}${ident}  Average Cache Miss Latency: ${e.cacheMissUs + e.computeUs} usec `, '');
  } else {
    lines.push(`${latency} (overhead ${overhead(e.queueUs, e.computeUs)} usec + queue ${e.queueUs} usec + compute ${e.computeUs} usec)`, '');
  }
  lines.push(`${ident}Composing models: `);
  for (const m of node.composing) lines.push(`${ident}${m.name}, version: ${m.version}`, ...serverText(m, layout, iteration + 1));
  return lines;
}

/** The report of one level after its header, as perf_analyzer prints it. */
export function levelText(r: LevelResult, library: ClientLibrary, o: ReportOptions = {}): string {
  const lines = ['  Client: ', `    Request count: ${r.requestCount}`, `    Throughput: ${rate(r.throughput)} infer/sec`];
  if (o.decoupled) lines.push(`    Response Throughput: ${rate(r.responseThroughput)} infer/sec`);
  if (o.percentile === undefined) lines.push(`    Avg latency: ${us(r.avgUs)} usec (standard deviation ${us(r.stdUs)} usec)`);
  // p50, p90, p95, p99 and --percentile, in increasing order.
  for (const [p, v] of r.percentilesUs) lines.push(`    p${p} latency: ${us(v)} usec`);
  lines.push(clientLibraryText(r, library, o.verbose === true), '  Server: ',
    ...serverText(r, { responseCache: o.responseCache === true, topLevelCache: o.topLevelCache === true }));
  return lines.join('\n');
}

/** -v: one line per measurement window, as perf_analyzer's passes (the --percentile's latency when given). */
export function passText(trial: number, w: Window, batchSize: number, percentile?: number): string {
  const n = w.latenciesUs.length;
  const head = `  Pass [${trial}] throughput: ${rate(w.seconds > 0 ? (n * batchSize) / w.seconds : 0)} infer/sec. `;
  if (percentile !== undefined) return `${head}p${percentile} latency: ${us(percentileOf([...w.latenciesUs].sort((a, b) => a - b), percentile))} usec`;
  const avg = n === 0 ? 0 : w.latenciesUs.reduce((a, b) => a + b, 0) / n;
  const std = n < 2 ? 0 : Math.sqrt(w.latenciesUs.reduce((a, b) => a + (b - avg) ** 2, 0) / (n - 1));
  return `${head}Avg latency: ${us(avg)} usec (std ${us(std)} usec). `;
}

/** The closing summary: one line per level. */
export function summaryText(results: LevelResult[], mode: Mode, percentile: number | undefined): string {
  const what = percentile === undefined ? 'Average' : `p${percentile}`;
  return [
    `Inferences/Second vs. Client ${what} Batch Latency`,
    ...results.map((r) => `${mode === 'concurrency' ? 'Concurrency' : 'Request Rate'}: ${r.value}, ` +
      `throughput: ${rate(r.throughput)} infer/sec, latency ${us(summaryLatencyUs(r, percentile))} usec`),
  ].join('\n');
}

/** perf_analyzer's CSV columns after the first (Concurrency or Request Rate), without the options' extra ones. */
export const CSV_COLUMNS = [
  'Inferences/Second', 'Client Send', 'Network+Server Send/Recv', 'Server Queue', 'Server Compute Input',
  'Server Compute Infer', 'Server Compute Output', 'Client Recv', 'p50 latency', 'p90 latency', 'p95 latency', 'p99 latency',
];

/** perf_analyzer's columns of a model whose config enables the response cache: two more before Client Recv. */
export const CSV_CACHE_COLUMNS = [...CSV_COLUMNS.slice(0, 7), 'Server Cache Hit', 'Server Cache Miss', ...CSV_COLUMNS.slice(7)];

/**
 * perf_analyzer's CSV (report_writer.cc). After the first column: Inferences/Second; Response
 * Throughput for a decoupled model; Client Send; the server's columns, with Server Cache Hit and
 * Server Cache Miss where the config enables the response cache; Client Recv; then a `pN
 * latency` column for each of p50, p90, p95, p99 and --percentile, in increasing order. Times
 * are whole µs. Client Send and Client Recv are the client timers' averages. Network+Server
 * Send/Recv is what the others leave of the average latency, as perf_analyzer computes it: the
 * latency less client send, client recv, the server's queue and compute (and cache hit and
 * miss), never below 0. It is taken from the columns as written, so a row's times add up to the
 * average latency (unless it was floored at 0).
 */
export function csvText(results: LevelResult[], mode: Mode, o: ReportOptions = {}): string {
  const percentiles = results.length > 0 ? [...results[0].percentilesUs.keys()] : [50, 90, 95, 99];
  const rows = [...results].sort((a, b) => a.throughput - b.throughput).map((r) => {
    const b = serverBreakdown(r.server);
    const c = clientAverages(r.client);
    const send = whole(c.sendUs);
    const recv = whole(c.recvUs);
    const queueCompute = [b.queueUs, b.computeInputUs, b.computeInferUs, b.computeOutputUs];
    const cache = [b.cacheHitUs, b.cacheMissUs];  // 0 without a cache
    const accounted = [send, recv, ...queueCompute, ...cache].reduce((x, y) => x + y, 0);
    const network = Math.max(0, whole(r.avgUs) - accounted);
    return [
      String(r.value), rate(r.throughput), ...(o.decoupled ? [rate(r.responseThroughput)] : []), String(send), String(network),
      ...queueCompute.map(String), ...(o.responseCache ? cache.map(String) : []), String(recv),
      ...percentiles.map((p) => us(r.percentilesUs.get(p) ?? 0)),
    ].join(',');
  });
  const columns = [
    mode === 'concurrency' ? 'Concurrency' : 'Request Rate', 'Inferences/Second', ...(o.decoupled ? ['Response Throughput'] : []),
    'Client Send', 'Network+Server Send/Recv', 'Server Queue', 'Server Compute Input', 'Server Compute Infer', 'Server Compute Output',
    ...(o.responseCache ? ['Server Cache Hit', 'Server Cache Miss'] : []), 'Client Recv', ...percentiles.map((p) => `p${p} latency`),
  ];
  return [columns.join(','), ...rows, ''].join('\n');
}

/** ns per count, truncated as perf_analyzer's integer division (0 without a count). */
const nsPer = (ns: number, count: number): number => (count > 0 ? Math.trunc(ns / count) : 0);

/** A composing model's CSV: its file name's prefix (perf_analyzer's `<name>_v<version>.`) and text. */
export interface ComposingCsv {
  name: string;
  version: string;
  text: string;
}

/**
 * perf_analyzer's CSVs of an ensemble's composing models (report_writer.cc): one per composing
 * model of the first level (those of the lowest-throughput level, by name and version; a
 * composing ensemble's own steps get none), rows by increasing throughput as in the main CSV.
 * Columns: the level; Inferences/Second, the client's throughput times the model's successful
 * requests over the ensemble's; Client Send 0; Network+Server Send/Recv, the model's average
 * request time less its queue, compute and cache hit and miss averages (its server overhead,
 * never below 0); Server Queue and Compute Input, Infer and Output (Server Cache Hit and Miss
 * where the cache is enabled); Client Recv 0. No latency columns.
 */
export function composingCsvs(results: LevelResult[], mode: Mode, o: ReportOptions = {}): ComposingCsv[] {
  const sorted = [...results].sort((a, b) => a.throughput - b.throughput);
  if (sorted.length === 0) return [];
  const columns = [
    mode === 'concurrency' ? 'Concurrency' : 'Request Rate', 'Inferences/Second', 'Client Send', 'Network+Server Send/Recv', 'Server Queue',
    'Server Compute Input', 'Server Compute Infer', 'Server Compute Output', ...(o.responseCache ? ['Server Cache Hit', 'Server Cache Miss'] : []),
    'Client Recv',
  ];
  return sorted[0].composing.map(({ name, version }) => {
    const rows = sorted.map((r) => {
      const s = r.composing.find((m) => m.name === name && m.version === version)?.server ?? zeroCounters();
      const queueNs = nsPer(s.queueNs, s.queueCount);
      const computeNs = nsPer(s.computeInputNs + s.computeInferNs + s.computeOutputNs, s.computeInputCount);
      const hitNs = nsPer(s.cacheHitNs, s.cacheHitCount);
      const missNs = nsPer(s.cacheMissNs, s.cacheMissCount);
      const overheadNs = Math.max(0, nsPer(s.successNs, s.successCount) - (queueNs + computeNs + hitNs + missNs));
      const ratio = r.server.successCount > 0 ? s.successCount / r.server.successCount : 0;
      return [
        String(r.value), rate(ratio * r.throughput), '0', us(overheadNs / 1000), us(queueNs / 1000),
        us(nsPer(s.computeInputNs, s.computeInputCount) / 1000), us(nsPer(s.computeInferNs, s.computeInferCount) / 1000),
        us(nsPer(s.computeOutputNs, s.computeOutputCount) / 1000), ...(o.responseCache ? [us(hitNs / 1000), us(missNs / 1000)] : []), '0',
      ].join(',');
    });
    return { name, version, text: [columns.join(','), ...rows, ''].join('\n') };
  });
}

const escapeXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** An SVG line chart of the summary latency (ms) against throughput, each point labelled with its level. */
export function chartSvg(results: LevelResult[], mode: Mode, percentile: number | undefined, title: string): string {
  const width = 640;
  const height = 400;
  const pad = { left: 70, right: 30, top: 36, bottom: 50 };
  const points = [...results].sort((a, b) => a.throughput - b.throughput)
    .map((r) => ({ x: r.throughput, y: summaryLatencyUs(r, percentile) / 1000, label: String(r.value) }));
  const maxX = Math.max(...points.map((p) => p.x), 1e-9) * 1.1;
  const maxY = Math.max(...points.map((p) => p.y), 1e-9) * 1.1;
  const xAt = (v: number): number => pad.left + (v / maxX) * (width - pad.left - pad.right);
  const yAt = (v: number): number => height - pad.bottom - (v / maxY) * (height - pad.top - pad.bottom);
  const ticks = [0, 0.25, 0.5, 0.75, 1].flatMap((f) => {
    const yv = (maxY / 1.1) * f;
    const xv = (maxX / 1.1) * f;
    return [
      `<line x1="${pad.left}" x2="${width - pad.right}" y1="${yAt(yv).toFixed(1)}" y2="${yAt(yv).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${pad.left - 8}" y="${(yAt(yv) + 4).toFixed(1)}" text-anchor="end" font-size="11">${yv.toPrecision(3)}</text>`,
      `<text x="${xAt(xv).toFixed(1)}" y="${height - pad.bottom + 18}" text-anchor="middle" font-size="11">${xv.toPrecision(3)}</text>`,
    ];
  });
  const line = `<polyline fill="none" stroke="#2a7" stroke-width="2.5" points="${points.map((p) => `${xAt(p.x).toFixed(1)},${yAt(p.y).toFixed(1)}`).join(' ')}"/>`;
  const dots = points.flatMap((p) => [
    `<circle cx="${xAt(p.x).toFixed(1)}" cy="${yAt(p.y).toFixed(1)}" r="4" fill="#2a7"/>`,
    `<text x="${(xAt(p.x) + 6).toFixed(1)}" y="${(yAt(p.y) - 6).toFixed(1)}" font-size="11">${escapeXml(p.label)}</text>`,
  ]);
  const latency = percentile === undefined ? 'average latency' : `p${percentile} latency`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="13">${escapeXml(title)}: ${latency} vs throughput (points: ${mode === 'concurrency' ? 'concurrency' : 'request rate'})</text>`,
    ...ticks, line, ...dots,
    `<text x="${width / 2}" y="${height - 12}" text-anchor="middle" font-size="12">throughput (infer/sec)</text>`,
    `<text x="16" y="${height / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 16 ${height / 2})">${latency} (ms)</text>`,
    '</svg>',
    '',
  ].join('\n');
}
