/**
 * `infernode perf` as a process (node lib/cli/main.js perf) against a real infernode on loopback
 * (HTTP, gRPC, gRPC streaming) and in process (--in-process on the same repository): the report
 * and CSV in perf_analyzer's layout, every option, request counts that match the server's own
 * statistics, every datatype and the input data modes reaching the model, and the errors (unknown
 * model, bad shapes, unreachable servers, bad ranges) exiting 1 with a clear message and no stack.
 * The client timers (Client Send, Client Recv, the "Avg HTTP/gRPC time" line) are checked for
 * being measured (> 0) and for agreeing with the rest of the report, never for their size.
 *
 * The server runs in this process (ports 0), so perf runs asynchronously (spawn): the event loop
 * must keep serving while perf loads it. Windows are short (-p 100) to keep the file quick.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { ensureLib, LIB } from './lib-build';
import { TempRepo, startRepoTriton, type Served } from './repository/repo-helpers';
import { CSV_CACHE_COLUMNS, CSV_COLUMNS } from '../../ts/perf/report';
import type { PerfOptions } from '../../ts/perf/options';
import { runOnTarget, type PerfSummary } from '../../ts/perf/run';
import { InProcessTarget, openTarget, type PerfTarget } from '../../ts/perf/target';
import { Triton } from '../../ts/triton';

const MAIN = path.join(LIB, 'cli', 'main.js');

/** What the models saw (they run in this realm: the repository loads model.js here). */
interface Seen {
  texts: Set<string>;
  textLengths: Set<number>;
  inValues: Set<number>;
  /** echo: each request's TXT elements joined (the rows of its batch), the first 60 requests. */
  batches: string[];
  /** types: the datatypes of the last request, and whether all its numeric values were 0. */
  dtypes: string[];
  allZero: boolean[];
}

declare global {
  var __perfSeen: Seen | undefined;
}

/** IN (FP32, free dim) and TXT (BYTES) → OUT = IN; records what arrived. */
const ECHO = `
exports.execute = (requests) => requests.map((r) => {
  const seen = globalThis.__perfSeen;
  if (seen) {
    for (const t of r.data.TXT.data) {
      seen.textLengths.add(t.length);
      if (seen.texts.size < 100) seen.texts.add(Buffer.from(t).toString('utf8'));
    }
    for (const v of r.data.IN.data) if (seen.inValues.size < 100) seen.inValues.add(v);
    if (seen.batches.length < 60) seen.batches.push(r.data.TXT.data.map((t) => Buffer.from(t).toString('utf8')).join(''));
  }
  return { OUT: r.data.IN.data };
});`;

const DTYPES = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES', 'BF16'];

/** One input per datatype (no batching); records the datatypes and whether the data were zeros. */
const TYPES = `
exports.execute = (requests) => requests.map((r) => {
  const seen = globalThis.__perfSeen;
  if (seen) {
    seen.dtypes = Object.keys(r.data).sort().map((k) => k + ':' + r.data[k].dtype + ':' + r.data[k].shape.join('x'));
    seen.allZero = Object.keys(r.data).filter((k) => k !== 'IN_BYTES').map((k) => Array.from(r.data[k].data).every((v) => Number(v) === 0));
  }
  return { OUT: new Float32Array([1]) };
});`;

let repo: TempRepo;
let served: Served;
let httpUrl: string;
let grpcUrl: string;
let seen: Seen;

beforeAll(async () => {
  ensureLib();
  repo = new TempRepo('perf');
  repo.config('echo', `backend: "js"
    max_batch_size: 8
    input [ { name: "IN", data_type: TYPE_FP32, dims: [ -1 ] }, { name: "TXT", data_type: TYPE_STRING, dims: [ 1 ] } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ -1 ] } ]
    dynamic_batching { }`);
  repo.write('echo/1/model.js', ECHO);
  const inputs = DTYPES.map((t) => `{ name: "IN_${t}", data_type: TYPE_${t === 'BYTES' ? 'STRING' : t}, dims: [ 2 ] }`).join(', ');
  repo.config('types', `backend: "js"
    max_batch_size: 0
    input [ ${inputs} ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]`);
  repo.write('types/1/model.js', TYPES);
  // The inputs of docs/perf.md's input data example.
  repo.config('doc_example', `backend: "js"
    max_batch_size: 4
    input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1 ] }, { name: "TEXT", data_type: TYPE_STRING, dims: [ 1 ] } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ -1 ] } ]`);
  repo.write('doc_example/1/model.js', `exports.execute = (requests) => requests.map((r) => {
    if (globalThis.__perfSeen) for (const t of r.data.TEXT.data) globalThis.__perfSeen.texts.add(Buffer.from(t).toString());
    return { OUT: r.data.INPUT0.data };
  });`);
  // Answers from the response cache after the first request of each input.
  repo.config('cached', `backend: "js"
    max_batch_size: 4
    input [ { name: "IN", data_type: TYPE_FP32, dims: [ 4 ] } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 4 ] } ]
    response_cache { enable: true }`);
  repo.write('cached/1/model.js', 'exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN.data }));');
  // Fails every request after its 40th: a server error in the middle of a run.
  repo.config('flaky', `backend: "js"
    max_batch_size: 0
    input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]`);
  repo.write('flaky/1/model.js', `let n = 0;
  exports.execute = (requests) => requests.map((r) => {
    if (++n > 40) throw new Error('flaky fails after 40 requests');
    return { OUT: r.data.IN.data };
  });`);
  // An optional input a data file may leave out.
  repo.config('optional', `backend: "js"
    max_batch_size: 4
    input [ { name: "A", data_type: TYPE_FP32, dims: [ 1 ] }, { name: "B", data_type: TYPE_FP32, dims: [ 1 ], optional: true } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]`);
  repo.write('optional/1/model.js', `exports.execute = (requests) => requests.map((r) => {
    if (globalThis.__perfSeen) globalThis.__perfSeen.texts.add(Object.keys(r.data).sort().join('+') + ':' + r.data.A.shape.join('x'));
    return { OUT: r.data.A.data };
  });`);
  // Decoupled: three responses per request.
  repo.config('counter', `backend: "js"
    max_batch_size: 4
    input [ { name: "N", data_type: TYPE_INT32, dims: [ 1 ] } ]
    output [ { name: "K", data_type: TYPE_INT32, dims: [ 1 ] } ]
    model_transaction_policy { decoupled: true }`);
  repo.write('counter/1/model.js', `exports.execute = function* (requests) {
    for (let k = 0; k < 3; k++) yield requests.map(() => ({ K: new Int32Array([k]) }));
  };`);
  // Two JS steps (inc: IN + 1, dbl: IN × 2), an ensemble of them, and an ensemble that nests it before inc again.
  for (const [name, body] of [['inc', 'v + 1'], ['dbl', 'v * 2']]) {
    repo.config(name, `backend: "js"
      max_batch_size: 8
      input [ { name: "IN", data_type: TYPE_FP32, dims: [ 4 ] } ]
      output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 4 ] } ]
      dynamic_batching { }`);
    repo.write(`${name}/1/model.js`, `exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN.data.map((v) => ${body}) }));`);
  }
  const ensemble = (name: string, steps: string[]): void => {
    repo.config(name, `platform: "ensemble"
      max_batch_size: 8
      input [ { name: "X", data_type: TYPE_FP32, dims: [ 4 ] } ]
      output [ { name: "Y", data_type: TYPE_FP32, dims: [ 4 ] } ]
      ensemble_scheduling { step [ ${steps.map((m, i) => `{ model_name: "${m}" model_version: -1
        input_map { key: "${m === 'pipeline' ? 'X' : 'IN'}" value: "${i === 0 ? 'X' : `t${i}`}" }
        output_map { key: "${m === 'pipeline' ? 'Y' : 'OUT'}" value: "${i === steps.length - 1 ? 'Y' : `t${i + 1}`}" } }`).join(', ')} ] }`);
    repo.mkdir(`${name}/1`);
  };
  ensemble('pipeline', ['inc', 'dbl']);
  ensemble('nested', ['pipeline', 'inc']);
  served = await startRepoTriton(repo.root, {
    config: {
      cacheConfig: ['local,size=1048576'],
      allowHttp: true, httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: true, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false,
      logInfo: false, logWarning: false,
    },
  });
  httpUrl = `127.0.0.1:${served.triton.ports.http}`;
  grpcUrl = `127.0.0.1:${served.triton.ports.grpc}`;
}, 120_000);

afterAll(async () => {
  await served?.triton.stop();
  repo?.cleanup();
});

beforeEach(() => {
  seen = { texts: new Set(), textLengths: new Set(), inValues: new Set(), batches: [], dtypes: [], allZero: [] };
  globalThis.__perfSeen = seen;
});

afterEach(() => {
  delete globalThis.__perfSeen;
});

interface PerfRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `infernode perf ...` to its end without blocking this process's event loop (it serves). */
function perf(args: string[], env: Record<string, string> = {}): Promise<PerfRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'perf', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const FAST = ['-p', '100', '--max-trials', '4'];

/** The "Requests sent: N" perf reports at its end. */
function requestsSent(stdout: string): number {
  const m = /^Requests sent: (\d+) \((\d+) inferences/m.exec(stdout);
  if (!m) throw new Error(`no "Requests sent" line in:\n${stdout}`);
  return Number(m[1]);
}

const inferenceCount = (model: string): number => served.triton.model(model).stats().inferenceCount;

/** perf's run, with the model's inference_count before and after it. */
async function perfCounted(model: string, args: string[]): Promise<PerfRun & { inferences: number }> {
  const before = inferenceCount(model);
  const run = await perf(args);
  return { ...run, inferences: inferenceCount(model) - before };
}

function expectOk(run: PerfRun): void {
  if (run.status !== 0) throw new Error(`perf exited ${run.status}:\n${run.stdout}\n${run.stderr}`);
}

/** The per-level sections of the report. */
function sections(stdout: string, heading: RegExp): string[] {
  return stdout.split(/\n(?=Request concurrency: |Request Rate: )/).filter((s) => heading.test(s));
}

/** The client library line of a level (perf_analyzer's "Avg HTTP time" / "Avg gRPC time"), the last of its Client section. */
interface ClientLine {
  request: number;
  /** send + receive ((un)marshal for gRPC). */
  sendRecv: number;
  wait: number;
}

const CLIENT_LINES: Record<'HTTP' | 'gRPC' | 'in-process', { plain: RegExp; verbose: RegExp }> = {
  'HTTP': {
    plain: /\n {4}Avg HTTP time: (\d+) usec \(send\/recv (\d+) usec \+ response wait (\d+) usec\)\n {2}Server: /,
    verbose: /\n {4}Avg HTTP time: (\d+) usec \(send (\d+) usec \+ response wait (\d+) usec \+ receive (\d+) usec\)\n {2}Server: /,
  },
  'gRPC': {
    plain: /\n {4}Avg gRPC time: (\d+) usec \(\(un\)marshal request\/response (\d+) usec \+ response wait (\d+) usec\)\n {2}Server: /,
    verbose: /\n {4}Avg gRPC time: (\d+) usec \(marshal (\d+) usec \+ response wait (\d+) usec \+ unmarshal (\d+) usec\)\n {2}Server: /,
  },
  'in-process': {
    plain: /\n {4}Avg in-process time: (\d+) usec \(send\/recv (\d+) usec \+ response wait (\d+) usec\)\n {2}Server: /,
    verbose: /\n {4}Avg in-process time: (\d+) usec \(send (\d+) usec \+ response wait (\d+) usec \+ receive (\d+) usec\)\n {2}Server: /,
  },
};

function clientLine(level: string, library: keyof typeof CLIENT_LINES, verbose = false): ClientLine {
  const m = CLIENT_LINES[library][verbose ? 'verbose' : 'plain'].exec(level);
  if (!m) throw new Error(`no ${verbose ? 'verbose ' : ''}${library} client line before "Server:" in:\n${level}`);
  const n = m.slice(1).map(Number);
  return verbose ? { request: n[0], sendRecv: n[1] + n[3], wait: n[2] } : { request: n[0], sendRecv: n[1], wait: n[2] };
}

const SERVER_COLUMNS = ['Server Queue', 'Server Compute Input', 'Server Compute Infer', 'Server Compute Output', 'Server Cache Hit', 'Server Cache Miss'];

/**
 * The client timers of a run, in the CSV and the report: for each row, Client Send measured
 * (> 0), Client Recv measured (> 0) or, where nothing is received (in process), 0;
 * Network+Server Send/Recv what the level's average latency leaves after the row's other times,
 * floored at 0 (perf_analyzer's definition; with --percentile the report prints no average, and
 * the column is only checked for being there); and the level's client line adding up, its
 * send/recv the CSV's two. Rows and levels are matched by their concurrency or rate.
 */
function expectClientTimes(stdout: string, csvFile: string, library: keyof typeof CLIENT_LINES, o: { recv?: boolean; verbose?: boolean } = {}): void {
  const [head, ...rows] = readFileSync(csvFile, 'utf8').trim().split('\n');
  const columns = head.split(',');
  const levels = new Map(sections(stdout, /^Request (concurrency|Rate): [\d.]+( inference requests per second)?\n/)
    .map((s) => [Number(/^Request (?:concurrency|Rate): ([\d.]+)/.exec(s)![1]), s]));
  expect(rows.length).toBe(levels.size);
  for (const row of rows) {
    const values = row.split(',').map(Number);
    const at = (column: string): number => values[columns.indexOf(column)];
    const level = levels.get(values[0]);
    if (!level) throw new Error(`no report section for the CSV row ${row}`);
    const avg = / {4}Avg latency: (\d+) usec/.exec(level);
    const send = at('Client Send');
    const recv = at('Client Recv');
    expect(send).toBeGreaterThan(0);
    if (o.recv === false) expect(recv).toBe(0);
    else expect(recv).toBeGreaterThan(0);
    const server = SERVER_COLUMNS.filter((c) => columns.includes(c)).reduce((sum, c) => sum + at(c), 0);
    if (avg) expect(at('Network+Server Send/Recv')).toBe(Math.max(0, Number(avg[1]) - send - recv - server));
    else expect(at('Network+Server Send/Recv')).toBeGreaterThanOrEqual(0);
    const line = clientLine(level, library, o.verbose);
    expect(line.sendRecv).toBe(send + recv);
    expect(line.wait).toBe(Math.max(0, line.request - line.sendRecv));
  }
}

describe('HTTP', () => {
  test('a concurrency range: report, CSV and SVG in perf_analyzer\'s layout; counts match the server\'s', async () => {
    const csv = repo.path('out', 'http.csv');
    const run = await perfCounted('echo', ['-m', 'echo', '-u', httpUrl, '-i', 'http', '--shape', 'IN:3', '-b', '2',
      '--concurrency-range', '1:3:2', '-f', csv, ...FAST]);
    expectOk(run);
    expect(run.stdout).toMatch(/\*\*\* Measurement Settings \*\*\*\n {2}Batch size: 2\n {2}Service Kind: HTTP \(http:\/\/127\.0\.0\.1:\d+\)/);
    expect(run.stdout).toContain('Measurement window: 100 msec');
    const levels = sections(run.stdout, /^Request concurrency: \d+\n/);
    expect(levels.map((s) => s.split('\n')[0])).toEqual(['Request concurrency: 1', 'Request concurrency: 3']);
    for (const level of levels) {
      expect(level).toMatch(/ {2}Client: \n {4}Request count: \d+\n {4}Throughput: [\d.]+ infer\/sec\n {4}Avg latency: \d+ usec \(standard deviation \d+ usec\)\n {4}p50 latency: \d+ usec\n {4}p90 latency: \d+ usec\n {4}p95 latency: \d+ usec\n {4}p99 latency: \d+ usec/);
      expect(level).toMatch(/ {2}Server: \n {4}Inference count: \d+\n {4}Execution count: \d+\n {4}Successful request count: \d+\n {4}Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute input \d+ usec \+ compute infer \d+ usec \+ compute output \d+ usec\)/);
      // Batch 2: the server counts two inferences per request.
      const requests = Number(/Successful request count: (\d+)/.exec(level)![1]);
      expect(Number(/Inference count: (\d+)/.exec(level)![1])).toBe(2 * requests);
    }
    expect(run.stdout).toMatch(/Inferences\/Second vs\. Client Average Batch Latency\nConcurrency: 1, throughput: [\d.]+ infer\/sec, latency \d+ usec\nConcurrency: 3, /);
    // Every request perf sent reached the server, and nothing else did.
    expect(run.inferences).toBe(2 * requestsSent(run.stdout));
    expect(seen.inValues.size).toBeGreaterThan(0);
    expect([...seen.textLengths]).toEqual([128]);  // random BYTES of --string-length's default

    const lines = readFileSync(csv, 'utf8').trim().split('\n');
    expect(lines[0]).toBe(`Concurrency,${CSV_COLUMNS.join(',')}`);
    expect(lines[0]).toBe('Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,' +
      'Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency');
    const rows = lines.slice(1).map((l) => l.split(',').map(Number));
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r[0]).sort()).toEqual([1, 3]);
    for (const r of rows) {
      expect(r).toHaveLength(13);
      expect(r.every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
      expect(r[9]).toBeLessThanOrEqual(r[12]);  // p50 ≤ p99
    }
    expect(rows[0][1]).toBeLessThanOrEqual(rows[1][1]);  // sorted by throughput, as perf_analyzer
    expectClientTimes(run.stdout, csv, 'HTTP');
    const svg = readFileSync(repo.path('out', 'http.svg'), 'utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg).toContain('<polyline');
    expect(svg.match(/<circle /g)).toHaveLength(2);
    // Not a terminal: no progress line.
    expect(run.stderr).not.toContain('window 1 of');
  });

  // util-linux `script` gives perf a terminal, as a user's shell would.
  const hasScript = spawnSync('script', ['--version']).status === 0;
  (hasScript ? test : test.skip)('the progress line goes to stderr when it is a terminal', async () => {
    const command = [process.execPath, MAIN, 'perf', '-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', ...FAST].map((a) => `'${a}'`).join(' ');
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d: Buffer) => { text += d.toString(); });
      child.on('error', reject);
      child.on('close', (status) => (status === 0 ? resolve(text) : reject(new Error(`perf exited ${status}:\n${text}`))));
    });
    expect(output).toContain('\r\x1b[2Kinfernode perf: concurrency 1, window 1 of at most 4');
    expect(output).toContain('Request concurrency: 1');
  });

  test('the server section shows response cache hits and misses; the CSV has perf_analyzer\'s cache columns', async () => {
    const csv = repo.path('out', 'cached.csv');
    const run = await perf(['-m', 'cached', '-u', httpUrl, '--input-data', 'zero', '-f', csv, ...FAST]);
    expectOk(run);
    expect(readFileSync(csv, 'utf8').split('\n')[0]).toBe(`Concurrency,${CSV_CACHE_COLUMNS.join(',')}`);
    expect(CSV_CACHE_COLUMNS.slice(6, 10)).toEqual(['Server Compute Output', 'Server Cache Hit', 'Server Cache Miss', 'Client Recv']);
    expectClientTimes(run.stdout, csv, 'HTTP');
    const level = sections(run.stdout, /^Request concurrency: 1\n/)[0];
    // perf_analyzer's layout for a model whose config enables the cache: hits and misses before
    // the request count, the request latency split into queue and cache hit/miss, then each apart.
    expect(level).toMatch(new RegExp(' {2}Server: \\n {4}Inference count: \\d+\\n {4}Execution count: \\d+\\n' +
      ' {4}Cache hit count: \\d+\\n {4}Cache miss count: \\d+\\n {4}Successful request count: \\d+\\n' +
      ' {4}Avg request latency: \\d+ usec \\(overhead \\d+ usec \\+ queue \\d+ usec \\+ cache hit/miss \\d+ usec\\)\\n' +
      ' {6}Average Cache Hit Latency: \\d+ usec\\n' +
      ' {6}Average Cache Miss Latency: \\d+ usec \\(cache lookup/insertion \\d+ usec \\+ compute input \\d+ usec \\+ ' +
      'compute infer \\d+ usec \\+ compute output \\d+ usec\\)'));
    // Every request sends the same zeros: after the first (which may fall in the first window), each is a hit.
    const [request, overhead, queue, hitMiss] = / {4}Avg request latency: (\d+) usec \(overhead (\d+) usec \+ queue (\d+) usec \+ cache hit\/miss (\d+)/
      .exec(level)!.slice(1).map(Number);
    expect(overhead).toBe(Math.max(0, request - queue - hitMiss));
    const hits = Number(/Cache hit count: (\d+)/.exec(level)![1]);
    expect(hits).toBeGreaterThan(0);
    expect(hits).toBeGreaterThanOrEqual(Number(/Successful request count: (\d+)/.exec(level)![1]) - 1);
  });

  test('every datatype, with zero data, on a model that does not batch', async () => {
    const run = await perfCounted('types', ['-m', 'types', '-u', httpUrl, '--input-data', 'zero', '--string-length', '5', ...FAST]);
    expectOk(run);
    expect(run.inferences).toBe(requestsSent(run.stdout));
    expect(seen.dtypes).toEqual(DTYPES.map((t) => `IN_${t}:${t}:2`).sort());
    expect(seen.allZero.every((z) => z)).toBe(true);
  });

  test('every datatype with random data', async () => {
    const run = await perf(['-m', 'types', '-u', httpUrl, '--input-data', 'random', ...FAST]);
    expectOk(run);
    expect(seen.dtypes).toHaveLength(DTYPES.length);
    expect(seen.allZero.some((z) => !z)).toBe(true);
  });

  test('-v prints each window; --stability-percentage and --max-trials decide how many', async () => {
    // Any three windows agree within 1000%: stable at the third.
    const looseCsv = repo.path('out', 'verbose.csv');
    const loose = await perf(['-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', '-p', '200', '-v', '-s', '1000', '-r', '6', '-f', looseCsv]);
    expectOk(loose);
    expectClientTimes(loose.stdout, looseCsv, 'HTTP', { verbose: true });  // -v: send, wait and receive apart
    expect(loose.stdout.match(/^ {2}Pass \[\d+\] throughput: [\d.]+ infer\/sec\. Avg latency: \d+ usec \(std \d+ usec\)\. $/gm)).toHaveLength(3);
    // As perf_analyzer: the level's header, then its passes, then its report.
    expect(loose.stdout).toMatch(/\nRequest concurrency: 1\n {2}Pass \[1\] [^\n]*\n {2}Pass \[2\] [^\n]*\n {2}Pass \[3\] [^\n]*\n {2}Client: \n/);
    expect(loose.stderr).not.toContain('stable measurement');
    // No two windows agree within 0.000001%: unstable after --max-trials windows, reported anyway.
    const strict = await perf(['-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', '-p', '100', '-v', '-s', '0.000001', '-r', '4']);
    expectOk(strict);
    expect(strict.stdout.match(/^ {2}Pass \[\d+\]/gm)).toHaveLength(4);
    expect(strict.stderr).toContain('failed to obtain a stable measurement within 4 measurement windows for concurrency 1');
    expect(strict.stdout).toContain('Request concurrency: 1');
  });
});

describe('gRPC', () => {
  test('a request rate range with --percentile and a JSON input data file; counts match the server\'s', async () => {
    const data = repo.write('data.json', JSON.stringify({
      data: [
        { IN: [1, 2, 3], TXT: ['first'] },
        { IN: { content: [[4, 5], [6, 7]], shape: [4] }, TXT: { content: ['second'], shape: [1] } },
        // BYTES as b64 of the binary form: a 4-byte little-endian length, then the bytes.
        { IN: [8, 9, 10], TXT: { b64: Buffer.concat([Buffer.from([5, 0, 0, 0]), Buffer.from('third')]).toString('base64') } },
      ],
    }));
    const csv = repo.path('out', 'rate.csv');
    const run = await perfCounted('echo', ['-m', 'echo', '-u', grpcUrl, '-i', 'grpc', '--shape', 'IN:3', '--input-data', data,
      '--request-rate-range', '50:100:50', '--percentile', '90', '-f', csv, ...FAST]);
    expectOk(run);
    expect(run.stdout).toMatch(/Service Kind: gRPC \(grpc:\/\/127\.0\.0\.1:\d+\)/);
    expect(run.stdout).toContain('Stabilizing using p90 latency');
    expect(run.stdout).toContain('  Using uniform distribution on request generation');
    expect(sections(run.stdout, /^Request Rate: [\d.]+ inference requests per second\n/).map((s) => s.split('\n')[0]))
      .toEqual(['Request Rate: 50 inference requests per second', 'Request Rate: 100 inference requests per second']);
    expect(run.stdout).toMatch(/Inferences\/Second vs\. Client p90 Batch Latency\nRequest Rate: 50, throughput: [\d.]+ infer\/sec, latency \d+ usec\nRequest Rate: 100, /);
    expect(run.inferences).toBe(requestsSent(run.stdout));
    expect([...seen.texts].sort()).toEqual(['first', 'second', 'third']);
    expect([...seen.inValues].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const lines = readFileSync(csv, 'utf8').trim().split('\n');
    expect(lines[0]).toBe(`Request Rate,${CSV_COLUMNS.join(',')}`);
    expect(lines.slice(1).map((l) => Number(l.split(',')[0])).sort((a, b) => a - b)).toEqual([50, 100]);
    expectClientTimes(run.stdout, csv, 'gRPC');
  });

  test('--streaming sends each request on ModelStreamInfer; counts match the server\'s', async () => {
    const csv = repo.path('out', 'streaming.csv');
    const run = await perfCounted('echo', ['-m', 'echo', '-u', grpcUrl, '-i', 'grpc', '--streaming', '--shape', 'IN:2',
      '-b', '4', '--concurrency-range', '2', '-v', '-f', csv, ...FAST]);
    expectOk(run);
    expect(run.stdout).toMatch(/Service Kind: gRPC streaming/);
    expect(run.stdout).toContain('Request concurrency: 2');
    expect(run.inferences).toBe(4 * requestsSent(run.stdout));
    expectClientTimes(run.stdout, csv, 'gRPC', { verbose: true });
  });
});

// Over https:// perf infers through the HTTP client's transport (node:https), not the raw sockets.
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
(hasOpenssl ? describe : describe.skip)('HTTPS', () => {
  let tls: Triton | undefined;
  let cert: string;

  beforeAll(async () => {
    const key = repo.path('out', 'tls-server.key');
    cert = repo.write('out/tls-server.crt', '');
    // Self-signed for 127.0.0.1; perf trusts it through NODE_EXTRA_CA_CERTS.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'pipe' });
    tls = new Triton({
      config: {
        allowHttp: true, httpAddress: '127.0.0.1', httpPort: 0, httpUseSsl: true, httpServerCert: cert, httpServerKey: key,
        allowGrpc: false, allowMetrics: false, logInfo: false, logWarning: false,
      },
    });
    tls.bind({
      modelName: 'identity',
      inferFunc: (requests) => requests.map((r) => ({ OUT: r.data.IN })),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [4] }],
      outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
      config: { maxBatchSize: 8 },
    });
    await tls.run();
  }, 60_000);

  afterAll(async () => {
    await tls?.stop();
  });

  test('the client timers: send (encoding, handing to node:https), receive (the answer\'s body read and decoded)', async () => {
    const csv = repo.path('out', 'https.csv');
    const run = await perf(['-m', 'identity', '-u', `https://127.0.0.1:${tls!.ports.http}`, '--concurrency-range', '1:2', '-f', csv, ...FAST],
      { NODE_EXTRA_CA_CERTS: cert });
    expectOk(run);
    expect(run.stdout).toMatch(/Service Kind: HTTP \(https:\/\/127\.0\.0\.1:\d+\)/);
    expectClientTimes(run.stdout, csv, 'HTTP');
  });
});

describe('a decoupled model', () => {
  test('--streaming waits for each request\'s last response; counts match the server\'s', async () => {
    const csv = repo.path('out', 'decoupled.csv');
    const run = await perfCounted('counter', ['-m', 'counter', '-u', grpcUrl, '-i', 'grpc', '--streaming', '--concurrency-range', '2', '-f', csv, ...FAST]);
    expectOk(run);
    expect(run.inferences).toBe(requestsSent(run.stdout));
    // Client Recv: unmarshalling the request's three responses and its empty final one.
    expectClientTimes(run.stdout, csv, 'gRPC');
    // perf_analyzer's Response Throughput, in the report and the CSV: three responses per request
    // (the empty final one is none).
    expect(run.stdout).toContain('  Detected decoupled model, using the last response of each request for measuring latency');
    const level = sections(run.stdout, /^Request concurrency: 2\n/)[0];
    const [throughput, responses] = / {4}Throughput: ([\d.]+) infer\/sec\n {4}Response Throughput: ([\d.]+) infer\/sec\n/.exec(level)!.slice(1).map(Number);
    expect(responses / throughput).toBeCloseTo(3, 2);
    const [head, row] = readFileSync(csv, 'utf8').trim().split('\n');
    expect(head).toBe('Concurrency,Inferences/Second,Response Throughput,Client Send,Network+Server Send/Recv,Server Queue,' +
      'Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency');
    expect(row.split(',').slice(0, 3).map(Number)).toEqual([2, throughput, responses]);
  });

  test('in process, through triton.inferStream()', async () => {
    const run = await perf(['-m', 'counter', '--in-process', '--model-repository', repo.root, ...FAST]);
    expectOk(run);
    expect(run.stdout).toContain('Request concurrency: 1');
    const [throughput, responses] = / {4}Throughput: ([\d.]+) infer\/sec\n {4}Response Throughput: ([\d.]+) infer\/sec\n/.exec(run.stdout)!.slice(1).map(Number);
    expect(responses / throughput).toBeCloseTo(3, 2);
  });

  test('without --streaming: refused, saying what to use', async () => {
    const run = await perf(['-m', 'counter', '-u', httpUrl]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/model 'counter' is decoupled \(0\.\.N responses per request\): measure it with -i grpc --streaming/);
  });
});

describe('--in-process', () => {
  test('measures triton.infer() on a repository in the perf process, with no socket', async () => {
    const before = inferenceCount('echo');
    const csv = repo.path('out', 'inprocess.csv');
    const run = await perf(['-m', 'echo', '--in-process', '--model-repository', repo.root, '--shape', 'IN:4', '-b', '2',
      '--concurrency-range', '1:2', '-f', csv, ...FAST]);
    expectOk(run);
    expect(run.stdout).toContain(`Service Kind: in-process (${repo.root})`);
    expect(sections(run.stdout, /^Request concurrency: \d+\n/)).toHaveLength(2);
    // The server's statistics are the perf process's own Triton: inference count = 2 × requests.
    for (const level of sections(run.stdout, /^Request concurrency: \d+\n/)) {
      const requests = Number(/Successful request count: (\d+)/.exec(level)![1]);
      expect(requests).toBeGreaterThan(0);
      expect(Number(/Inference count: (\d+)/.exec(level)![1])).toBe(2 * requests);
    }
    // Send: the triton.infer() call (checking, copying, queueing); nothing to receive.
    expectClientTimes(run.stdout, csv, 'in-process', { recv: false });
    expect(inferenceCount('echo')).toBe(before);  // nothing went to the server

    const alias = await perf(['-m', 'echo', '-i', 'in-process', '--model-repository', repo.root, '--shape', 'IN:1', ...FAST]);
    expectOk(alias);
    expect(alias.stdout).toContain('Service Kind: in-process');
  });
});

describe('as perf_analyzer', () => {
  test('--percentile 85: no average line, p85 among the other percentiles in order, a p85 latency CSV column; -v passes show p85', async () => {
    const csv = repo.path('out', 'p85.csv');
    const run = await perf(['-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', '--percentile', '85', '-v', '-f', csv, ...FAST]);
    expectOk(run);
    const level = sections(run.stdout, /^Request concurrency: 1\n/)[0];
    expect(level).not.toContain('Avg latency');
    expect(level).toMatch(/\n {4}Throughput: [\d.]+ infer\/sec\n {4}p50 latency: \d+ usec\n {4}p85 latency: \d+ usec\n {4}p90 latency: \d+ usec\n {4}p95 latency: \d+ usec\n {4}p99 latency: \d+ usec\n {4}Avg HTTP time: /);
    expect(level).toMatch(/^ {2}Pass \[1\] throughput: [\d.]+ infer\/sec\. p85 latency: \d+ usec$/m);
    const p85 = Number(/ {4}p85 latency: (\d+) usec/.exec(level)![1]);
    expect(run.stdout).toMatch(new RegExp(`Inferences/Second vs\\. Client p85 Batch Latency\nConcurrency: 1, throughput: [\\d.]+ infer/sec, latency ${p85} usec`));
    const [head, row] = readFileSync(csv, 'utf8').trim().split('\n');
    expect(head).toBe('Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,' +
      'Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p85 latency,p90 latency,p95 latency,p99 latency');
    expect(Number(row.split(',')[10])).toBe(p85);
    expectClientTimes(run.stdout, csv, 'HTTP', { verbose: true });
  });

  test('-b with a JSON file: request k is made of the entries k×b to k×b + b − 1, round the list', async () => {
    const data = repo.write('abc.json', JSON.stringify({ data: ['a', 'b', 'c'].map((t, i) => ({ IN: [i], TXT: [t] })) }));
    const run = await perfCounted('echo', ['-m', 'echo', '-u', httpUrl, '--input-data', data, '-b', '2', ...FAST]);
    expectOk(run);
    expect(run.inferences).toBe(2 * requestsSent(run.stdout));
    // Concurrency 1: the requests arrive in order, ab, ca, bc, ab, ... (the warm-up included).
    expect(seen.batches.slice(0, 6)).toEqual(['ab', 'ca', 'bc', 'ab', 'ca', 'bc']);
  });

  test('a data file of streams (lists of entries) is sent its first stream, as to a model without sequences', async () => {
    const data = repo.write('streams.json', JSON.stringify({ data: [[{ IN: [1], TXT: ['s0'] }, { IN: [2], TXT: ['s0b'] }], [{ IN: [3], TXT: ['s1'] }]] }));
    const run = await perf(['-m', 'echo', '-u', httpUrl, '--input-data', data, ...FAST]);
    expectOk(run);
    expect([...seen.texts].sort()).toEqual(['s0', 's0b']);
  });

  test('an optional input may be left out of a data file\'s entries', async () => {
    const data = repo.write('optional.json', JSON.stringify({ data: [{ A: [1] }, { A: [2], B: [3] }, { A: [4], model: 'optional' }] }));
    const run = await perf(['-m', 'optional', '-u', httpUrl, '--input-data', data, ...FAST]);
    expectOk(run);
    // Each entry one row of -b 1; the model saw requests with and without B.
    expect([...seen.texts].sort()).toEqual(['A+B:1x1', 'A:1x1']);
  });

  test('--request-distribution poisson: exponential gaps, the settings say so; counts match the server\'s', async () => {
    const run = await perfCounted('echo', ['-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', '--request-rate-range', '200',
      '--request-distribution', 'poisson', ...FAST]);
    expectOk(run);
    expect(run.stdout).toContain('  Using poisson distribution on request generation');
    expect(run.stdout).toContain('Request Rate: 200 inference requests per second');
    expect(run.inferences).toBe(requestsSent(run.stdout));
  });

  test('a request the server fails in the middle of a run: exit 1 with the server\'s text', async () => {
    const run = await perf(['-m', 'flaky', '-u', httpUrl, '-p', '500', '--max-trials', '4']);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/inference at concurrency 1 of model 'flaky' \(HTTP, http:\/\/127\.0\.0\.1:\d+\): flaky fails after 40 requests \[INTERNAL\]/);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.stdout).not.toContain('  Client: ');
  });
});

/** Triton's statistics of every model, as one read of them answers. */
type StatsRead = { model_stats: Record<string, unknown>[] };

/** One model version's counters in a read: the fields of perf_analyzer's ServerSideStats. */
interface Side {
  infer: number; exec: number; success: number; cumm: number; queueCount: number; queueNs: number;
  ciCount: number; ciNs: number; cinfCount: number; cinfNs: number; coCount: number; coNs: number;
}

function side(read: StatsRead, name: string): Side {
  const m = read.model_stats.find((x) => x.name === name && String(x.version) === '1');
  if (!m) throw new Error(`no statistics of ${name} version 1`);
  const s = m.inference_stats as Record<string, { count: number; ns: number }>;
  return {
    infer: Number(m.inference_count), exec: Number(m.execution_count), success: s.success.count, cumm: s.success.ns,
    queueCount: s.queue.count, queueNs: s.queue.ns, ciCount: s.compute_input.count, ciNs: s.compute_input.ns,
    cinfCount: s.compute_infer.count, cinfNs: s.compute_infer.ns, coCount: s.compute_output.count, coNs: s.compute_output.ns,
  };
}

const minus = (a: Side, b: Side): Side =>
  Object.fromEntries(Object.keys(a).map((k) => [k, a[k as keyof Side] - b[k as keyof Side]])) as unknown as Side;

/** perf_analyzer's AverageDurationInUs: ns / (count × 1000), an integer division; 0 without a count. */
const avgUs = (ns: number, count: number): number => (count === 0 ? 0 : Math.floor(ns / (count * 1000)));

/** A model and its composing models (an ensemble's steps, by name). */
interface Tree { name: string; composing: Tree[] }
const INC: Tree = { name: 'inc', composing: [] };
const PIPELINE: Tree = { name: 'pipeline', composing: [{ name: 'dbl', composing: [] }, INC] };
const NESTED: Tree = { name: 'nested', composing: [INC, PIPELINE] };

/** perf_analyzer's GetTotalEnsembleDurations without a response cache: its leaves' queue and compute averages, summed. */
function ensembleTimes(tree: Tree, d: (name: string) => Side): { queue: number; compute: number } {
  let queue = 0;
  let compute = 0;
  for (const c of tree.composing) {
    const s = d(c.name);
    const t = c.composing.length > 0 ? ensembleTimes(c, d)
      : { queue: avgUs(s.queueNs, s.queueCount), compute: avgUs(s.ciNs + s.cinfNs + s.coNs, s.ciCount) };
    queue += t.queue;
    compute += t.compute;
  }
  return { queue, compute };
}

/** perf_analyzer's ReportServerSideStats (inference_profiler.cc), written out from its source, for models without a response cache. */
function expectedServer(tree: Tree, d: (name: string) => Side, iteration = 1): string[] {
  const ident = ' '.repeat(2 * iteration);
  const s = d(tree.name);
  if (s.success === 0) return [`${ident}  Request count: 0`];
  const request = avgUs(s.cumm, s.success);
  const lines = [`${ident}  Inference count: ${s.infer}`, `${ident}  Execution count: ${s.exec}`, `${ident}  Successful request count: ${s.success}`];
  if (tree.composing.length === 0) {
    const queue = avgUs(s.queueNs, s.queueCount);
    const compute = avgUs(s.ciNs + s.cinfNs + s.coNs, s.ciCount);
    lines.push(`${ident}  Avg request latency: ${request} usec (overhead ${Math.max(0, request - queue - compute)} usec + queue ${queue} usec + ` +
      `compute input ${avgUs(s.ciNs, s.ciCount)} usec + compute infer ${avgUs(s.cinfNs, s.cinfCount)} usec + compute output ${avgUs(s.coNs, s.coCount)} usec)`);
    return lines;
  }
  const t = ensembleTimes(tree, d);
  lines.push(`${ident}  Avg request latency: ${request} usec (overhead ${Math.max(0, request - t.queue - t.compute)} usec + queue ${t.queue} usec + ` +
    `compute ${t.compute} usec)`, '', `${ident}Composing models: `);
  for (const c of tree.composing) lines.push(`${ident}${c.name}, version: 1`, ...expectedServer(c, d, iteration + 1));
  return lines;
}

/**
 * perf on `target` (runOnTarget, as the CLI runs it) at concurrency 1 and 2, exactly three
 * windows each (--max-trials 3), with every read of the statistics kept: level k's numbers are
 * then read 4k + 3 less read 4k.
 */
async function recordedRun(target: PerfTarget, tree: Tree, csv: string): Promise<{ summary: PerfSummary; out: string[]; reads: StatsRead[] }> {
  const reads: StatsRead[] = [];
  const recorder = new Proxy(target, {
    get(t, prop) {
      if (prop === 'allModelStatistics') {
        return async () => {
          const read = await t.allModelStatistics();
          reads.push(JSON.parse(JSON.stringify(read)) as StatsRead);
          return read;
        };
      }
      const value = Reflect.get(t, prop, t) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
  const o: PerfOptions = {
    modelName: tree.name, url: httpUrl, protocol: 'http', inProcess: false, batchSize: 1, concurrencyRange: { start: 1, end: 2, step: 1 },
    shapes: new Map(), inputData: { kind: 'random' }, stringLength: 128, measurementIntervalMs: 100, stabilityPercentage: 10,
    maxTrials: 3, streaming: false, verbose: false, latencyReportFile: csv,
  };
  const out: string[] = [];
  const summary = await runOnTarget(recorder, o, { out: (text) => out.push(text), warn: () => undefined });
  return { summary, out, reads };
}

/**
 * A recorded run's report and CSVs against perf_analyzer's formulas applied to the recorded
 * statistics: each level's Server section as ReportServerSideStats prints it; the CSV's server
 * columns the ensemble's own averages (report_writer.cc takes status.server_stats, the
 * ensemble's); a CSV per first-level composing model, its rows perf_analyzer's.
 */
function expectPerfAnalyzersNumbers(run: { summary: PerfSummary; out: string[]; reads: StatsRead[] }, tree: Tree, csv: string): void {
  const levels = run.out.filter((t) => t.startsWith('  Client: '));
  expect(levels).toHaveLength(2);
  expect(run.reads).toHaveLength(8);
  const deltas = (k: number) => (name: string): Side => minus(side(run.reads[4 * k + 3], name), side(run.reads[4 * k], name));
  for (const [k, text] of levels.entries()) {
    expect(text.slice(text.indexOf('  Server: \n') + '  Server: \n'.length)).toBe(`${expectedServer(tree, deltas(k)).join('\n')}\n`);
  }
  const [head, ...rows] = readFileSync(csv, 'utf8').trim().split('\n');
  const columns = head.split(',');
  expect(rows).toHaveLength(2);
  const order = rows.map((r) => Number(r.split(',')[0]));
  for (const row of rows) {
    const values = row.split(',').map(Number);
    const e = deltas(values[0] - 1)(tree.name);
    expect(['Server Queue', 'Server Compute Input', 'Server Compute Infer', 'Server Compute Output'].map((c) => values[columns.indexOf(c)]))
      .toEqual([avgUs(e.queueNs, e.queueCount), avgUs(e.ciNs, e.ciCount), avgUs(e.cinfNs, e.cinfCount), avgUs(e.coNs, e.coCount)]);
  }
  const nsPer = (ns: number, count: number): number => (count === 0 ? 0 : Math.floor(ns / count));
  for (const c of tree.composing) {
    const [cHead, ...cRows] = readFileSync(path.join(path.dirname(csv), `${c.name}_v1.${path.basename(csv)}`), 'utf8').trim().split('\n');
    expect(cHead).toBe('Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,' +
      'Server Compute Infer,Server Compute Output,Client Recv');
    expect(cRows.map((r) => Number(r.split(',')[0]))).toEqual(order);
    for (const row of cRows) {
      const level = Number(row.split(',')[0]);
      const s = deltas(level - 1)(c.name);
      const e = deltas(level - 1)(tree.name);
      const queueNs = nsPer(s.queueNs, s.queueCount);
      const computeNs = nsPer(s.ciNs + s.cinfNs + s.coNs, s.ciCount);
      const throughput = run.summary.results.find((r) => r.value === level)!.throughput;
      expect(row).toBe([level, Number((s.success / e.success * throughput).toPrecision(6)), 0,
        Math.floor(Math.max(0, nsPer(s.cumm, s.success) - queueNs - computeNs) / 1000), Math.floor(queueNs / 1000),
        avgUs(s.ciNs, s.ciCount), avgUs(s.cinfNs, s.cinfCount), avgUs(s.coNs, s.coCount), 0].join(','));
    }
  }
}

describe('an ensemble: the server section per composing model, as perf_analyzer', () => {
  test('over HTTP: the report and the CSVs are perf_analyzer\'s formulas applied to the statistics of every model at the windows\' edges', async () => {
    const csv = repo.path('out', 'recorded-http.csv');
    const target = await openTarget({ modelName: 'pipeline', url: httpUrl, protocol: 'http', inProcess: false } as PerfOptions);
    try {
      const run = await recordedRun(target, PIPELINE, csv);
      expect(run.out.join('\n')).toContain('  Composing models: \n  dbl, version: 1\n      Inference count: ');
      expectPerfAnalyzersNumbers(run, PIPELINE, csv);
    } finally {
      await target.close();
    }
  });

  test('a nested ensemble in process: its composing ensemble\'s steps one level deeper, each from its own statistics', async () => {
    const csv = repo.path('out', 'recorded-inprocess.csv');
    const o = { modelName: 'nested', inProcess: true } as PerfOptions;
    // The served Triton itself, in this process (not closed: the other tests use it).
    const run = await recordedRun(new InProcessTarget('served', served.triton, o), NESTED, csv);
    expect(run.out.join('\n')).toContain('\n  Composing models: \n  inc, version: 1\n      Inference count: ');
    expect(run.out.join('\n')).toContain('\n  pipeline, version: 1\n      Inference count: ');
    expect(run.out.join('\n')).toContain('\n    Composing models: \n    dbl, version: 1\n        Inference count: ');
    expectPerfAnalyzersNumbers(run, NESTED, csv);
  });

  test('the CLI over HTTP, gRPC and --in-process: composing model lines; the step models counted each request once per step', async () => {
    const stepCounts = (): number[] => ['pipeline', 'inc', 'dbl'].map(inferenceCount);
    const csv = repo.path('out', 'ensemble.csv');
    for (const args of [['-u', httpUrl, '-f', csv], ['-u', grpcUrl, '-i', 'grpc']]) {
      const before = stepCounts();
      const run = await perf(['-m', 'pipeline', ...args, ...FAST]);
      expectOk(run);
      const after = stepCounts();
      // Every request perf sent ran each step once, and nothing else reached them.
      expect(after.map((n, i) => n - before[i])).toEqual([1, 1, 1].map(() => requestsSent(run.stdout)));
      const level = sections(run.stdout, /^Request concurrency: 1\n/)[0];
      expect(level).toMatch(new RegExp(' {2}Server: \\n {4}Inference count: \\d+\\n {4}Execution count: \\d+\\n {4}Successful request count: (\\d+)\\n' +
        ' {4}Avg request latency: \\d+ usec \\(overhead \\d+ usec \\+ queue \\d+ usec \\+ compute \\d+ usec\\)\\n\\n {2}Composing models: \\n' +
        ' {2}dbl, version: 1\\n {6}Inference count: \\d+\\n {6}Execution count: \\d+\\n {6}Successful request count: \\d+\\n' +
        ' {6}Avg request latency: \\d+ usec \\(overhead \\d+ usec \\+ queue \\d+ usec \\+ compute input \\d+ usec \\+ compute infer \\d+ usec \\+ compute output \\d+ usec\\)\\n' +
        ' {2}inc, version: 1\\n {6}Inference count: \\d+\\n'));
      // A step's count over the windows may differ from the ensemble's by the requests between steps at a window's edge.
      const [ensembleCount, ...stepCount] = [...level.matchAll(/Successful request count: (\d+)/g)].map((m) => Number(m[1]));
      for (const n of stepCount) expect(Math.abs(n - ensembleCount)).toBeLessThanOrEqual(1);
    }
    expect(readFileSync(repo.path('out', 'dbl_v1.ensemble.csv'), 'utf8')).toMatch(/^Concurrency,Inferences\/Second,Client Send,/);
    expect(readFileSync(repo.path('out', 'inc_v1.ensemble.csv'), 'utf8').trim().split('\n')).toHaveLength(2);

    const run = await perf(['-m', 'nested', '--in-process', '--model-repository', repo.root, ...FAST]);
    expectOk(run);
    const level = sections(run.stdout, /^Request concurrency: 1\n/)[0];
    expect(level).toContain('\n  Composing models: \n  inc, version: 1\n');
    expect(level).toContain('\n  pipeline, version: 1\n');
    expect(level).toContain('\n    Composing models: \n    dbl, version: 1\n        Inference count: ');
    // inc runs twice per request of nested: once as its step, once as pipeline's.
    const counts = [...level.matchAll(/Successful request count: (\d+)/g)].map((m) => Number(m[1]));
    const [nested, inc, pipeline, dbl, incInPipeline] = counts;
    expect(counts).toHaveLength(5);
    expect(inc).toBe(incInPipeline);
    for (const n of [pipeline, dbl]) expect(Math.abs(n - nested)).toBeLessThanOrEqual(1);
    expect(Math.abs(inc - 2 * nested)).toBeLessThanOrEqual(2);
  });

  test('--bls-composing-models: the models a BLS model calls are reported as its composing models; a bound ensemble\'s steps too', async () => {
    const file = repo.write('bind-bls.js', `module.exports = (triton) => {
      const tensor = (name) => ({ name, dtype: 'FP32', shape: [4] });
      triton.bind({ modelName: 'step', inferFunc: (requests) => requests.map((r) => ({ OUT: r.data.IN })),
        inputs: [tensor('IN')], outputs: [tensor('OUT')], config: { maxBatchSize: 8 } });
      // A BLS model: it calls step for each request it gets.
      triton.bind({ modelName: 'bls', inputs: [tensor('IN')], outputs: [tensor('OUT')], config: { maxBatchSize: 8 },
        inferFunc: (requests) => Promise.all(requests.map(async (r) => ({ OUT: (await triton.infer('step', { IN: r.data.IN })).OUT }))) });
      // A bound ensemble of step.
      triton.bind({ modelName: 'bound_ensemble', inputs: [tensor('X')], outputs: [tensor('Y')], config: { maxBatchSize: 8,
        ensembleScheduling: { step: [{ modelName: 'step', inputMap: { IN: 'X' }, outputMap: { OUT: 'Y' } }] } } });
    };`);
    const run = await perf(['--in-process', '--bind-module', file, '-m', 'bls', '--bls-composing-models', 'step:1', ...FAST]);
    expectOk(run);
    const level = sections(run.stdout, /^Request concurrency: 1\n/)[0];
    expect(level).toMatch(/ {4}Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute \d+ usec\)\n\n {2}Composing models: \n {2}step, version: 1\n {6}Inference count: \d+\n/);
    const [bls, step] = [...level.matchAll(/Successful request count: (\d+)/g)].map((m) => Number(m[1]));
    expect(Math.abs(step - bls)).toBeLessThanOrEqual(1);

    // A bound ensemble (triton.bind with ensembleScheduling) is found from its config as a repository's is.
    const bound = await perf(['--in-process', '--bind-module', file, '-m', 'bound_ensemble', ...FAST]);
    expectOk(bound);
    expect(sections(bound.stdout, /^Request concurrency: 1\n/)[0]).toMatch(/\n {2}Composing models: \n {2}step, version: 1\n {6}Inference count: [1-9]/);
  });
});

/** The first fenced block of `lang` in docs/perf.md that contains `marker`. */
function docsBlock(lang: string, marker: string): string {
  const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'perf.md'), 'utf8');
  const block = [...doc.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]).find((b) => b.includes(marker));
  if (!block) throw new Error(`docs/perf.md has no ${lang} block containing ${marker}`);
  return block;
}

describe('docs/perf.md, as written', () => {
  test('the bind module measures in process with --bind-module', async () => {
    const file = repo.write('bind-identity.js', docsBlock('js', 'module.exports'));
    const run = await perf(['--in-process', '--bind-module', file, '-m', 'identity', '-b', '8', ...FAST]);
    expectOk(run);
    expect(run.stdout).toContain(`Service Kind: in-process (${file})`);
    const level = sections(run.stdout, /^Request concurrency: 1\n/)[0];
    const requests = Number(/Successful request count: (\d+)/.exec(level)![1]);
    expect(requests).toBeGreaterThan(0);
    expect(Number(/Inference count: (\d+)/.exec(level)![1])).toBe(8 * requests);
  });

  test('the input data example', async () => {
    const data = repo.write('doc-data.json', docsBlock('json', '"data"'));
    const run = await perfCounted('doc_example', ['-m', 'doc_example', '-u', httpUrl, '--input-data', data, ...FAST]);
    expectOk(run);
    expect(run.inferences).toBe(requestsSent(run.stdout));
    expect([...seen.texts].sort()).toEqual(['hello', 'world']);
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A perf_analyzer input data file of `entries` in the test repository. */
const dataFile = (name: string, entries: unknown[]): string => repo.write(name, JSON.stringify({ data: entries }));

describe('errors exit 1 with a clear message and no stack trace', () => {
  const cases: [string, () => string[], RegExp][] = [
    ['unknown model (HTTP, the server\'s 404 text)', () => ['-m', 'nope', '-u', httpUrl],
      /model 'nope' \(HTTP, http:\/\/127\.0\.0\.1:\d+\): Request for unknown model: 'nope' is not found \[NOT_FOUND\]/],
    ['unknown model (gRPC)', () => ['-m', 'nope', '-u', grpcUrl, '-i', 'grpc'], /Request for unknown model: 'nope' is not found \[NOT_FOUND\]/],
    ['a variable dim without --shape', () => ['-m', 'echo', '-u', httpUrl],
      /input 'IN' of model 'echo' has a variable dimension \[-1\]: give its dims with --shape IN:N/],
    ['a --shape of the wrong rank', () => ['-m', 'echo', '-u', httpUrl, '--shape', 'IN:2,2'],
      /--shape IN:2,2 does not fit input 'IN' of model 'echo', whose dims \(without the batch dimension\) are \[-1\]/],
    ['a --shape naming no input', () => ['-m', 'echo', '-u', httpUrl, '--shape', 'INPUT9:2'],
      /--shape names input 'INPUT9', which model 'echo' does not have; its inputs: IN, TXT/],
    ['a malformed --shape', () => ['-m', 'echo', '-u', httpUrl, '--shape', 'IN:two'],
      /--shape got 'IN:two': expected NAME:D1,D2,\.\.\./],
    ['-b beyond max_batch_size', () => ['-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', '-b', '9'],
      /-b 9 exceeds the max_batch_size of model 'echo' \(8\)/],
    ['-b on a model that does not batch', () => ['-m', 'types', '-u', httpUrl, '-b', '2'],
      /can not specify batch size > 1 as the model does not support batching: model 'types' has max_batch_size 0, so -b must be 1, got 2/],
    ['a concurrency range going down', () => ['-m', 'echo', '--concurrency-range', '4:2'],
      /--concurrency-range got '4:2': expected START\[:END\[:STEP\]\] with positive integers, END ≥ START.*END 2 is below START 4/],
    ['a zero concurrency', () => ['-m', 'echo', '--concurrency-range', '0:2'], /--concurrency-range got '0:2'/],
    ['a request rate that is not a number', () => ['-m', 'echo', '--request-rate-range', 'fast'], /--request-rate-range got 'fast'/],
    ['both load modes', () => ['-m', 'echo', '--concurrency-range', '1', '--request-rate-range', '10'],
      /--concurrency-range and --request-rate-range cannot be used together/],
    ['--streaming over HTTP', () => ['-m', 'echo', '--streaming'], /--streaming needs gRPC: add -i grpc/],
    ['--in-process without a repository', () => ['-m', 'echo', '--in-process'], /--in-process needs --model-repository DIR or --bind-module FILE\.js/],
    ['a bind module that exports no function', () => ['-m', 'echo', '--in-process', '--bind-module', repo.write('nothing.js', 'exports.x = 1;')],
      /--bind-module .*nothing\.js must export a function \(triton\) => void that binds models, got undefined/],
    ['an unknown model in process', () => ['-m', 'nope', '--in-process', '--model-repository', repo.root],
      /--in-process: cannot load model 'nope' from /],
    ['a bad input data file', () => ['-m', 'echo', '-u', httpUrl, '--shape', 'IN:1', '--input-data', repo.write('bad.json', '{"data": [{"IN": [1]}]}')],
      /data\[0\] has no value for input 'TXT'/],
    ['a data file entry whose shape does not fit the input',
      () => ['-m', 'echo', '-u', httpUrl, '--input-data', dataFile('bad-shape.json', [{ IN: { content: [1, 2, 3, 4], shape: [2, 2] }, TXT: ['x'] }])],
      /data\[0\]\.IN: "shape" \[2,2\] does not fit input 'IN' of model 'echo', whose dims \(without the batch dimension\) are \[-1\]/],
    ['entries of different shapes in one batch',
      () => ['-m', 'echo', '-u', httpUrl, '-b', '2', '--input-data', dataFile('ragged.json', [{ IN: [1], TXT: ['a'] }, { IN: [1, 2], TXT: ['b'] }])],
      /can not batch tensors with different shapes together: input 'IN' is \[1\] in data\[0\] and \[2\] in data\[1\], which go in one batch of -b 2/],
    ['a --request-distribution that is neither', () => ['-m', 'echo', '--request-rate-range', '10', '--request-distribution', 'gamma'],
      /--request-distribution.*'gamma' is invalid\. Allowed choices are constant, poisson/],
  ];

  test.each(cases)('%s', async (_, args, message) => {
    const run = await perf(args());
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.stdout).not.toContain('Request concurrency');
  });

  test.each([['http', []], ['grpc', ['-i', 'grpc']]] as const)('an unreachable %s server', async (kind, extra) => {
    const port = await closedPort();
    const run = await perf(['-m', 'echo', '-u', `127.0.0.1:${port}`, ...extra]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`cannot reach the ${kind === 'http' ? 'HTTP' : 'gRPC'} server at ${kind}://127\\.0\\.0\\.1:${port} \\(.*ECONNREFUSED.*\\) \\[UNAVAILABLE\\]\\. Is it running`));
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});

test('perf --help names every option', async () => {
  const run = await perf(['--help']);
  expect(run.status).toBe(0);
  for (const flag of ['-m, --model-name', '-u, --url', '-i, --protocol', '--in-process', '--model-repository', '--bind-module', '-b, --batch-size',
    '--concurrency-range', '--request-rate-range', '--request-distribution', '--shape', '--input-data', '--string-length', '-p, --measurement-interval',
    '--percentile', '-s, --stability-percentage', '-r, --max-trials', '--streaming', '-v, --verbose', '-f, --latency-report-file',
    '--bls-composing-models']) {
    expect(run.stdout).toContain(flag);
  }
});
