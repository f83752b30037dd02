/**
 * An ensemble's statistics as Triton reports them, through a real server on loopback (HTTP, gRPC
 * and metrics) over a model repository of ONNX and JS step models. Triton's ensemble keeps, per
 * request, a stats aggregator that each step request also reports to (core
 * src/ensemble_scheduler/ensemble_scheduler.cc, RequestTracker and SetSecondaryStatsAggregator);
 * when the request ends it reports itself with the compute times summed there (src/infer_request.cc
 * ReportStatisticsWithDuration): compute_input/infer/output are its step requests' own, summed;
 * its queue is its own time before its steps were sent (a step's wait in its model's queue is in
 * the step model's queue only); one execution and a batch_stats entry per successful request; a
 * failed request counts its duration only.
 */
import { gate, sleep, waitFor, type Gate } from './helpers';
import { closeAgent, get, post } from './http/http-helpers';
import { fp32Bytes, ok, rawStub } from './grpc/helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repository/repo-helpers';

const WIDTH = 4;
const MS = 1e6;
/**
 * A sleep of N ms may end up to 1 ms early by the statistics' clock: libuv times its timers on
 * its loop time, in whole ms, taken when the turn began. Lower bounds allow that much per sleep.
 */
const SLEEP_SLACK = 1 * MS;
/** How long, at least, the test holds a busy instance with a step queued behind it. */
const HOLD_MS = 200;

/** What holds the busy instance of 'sleeper' (its repository model runs in this realm). */
interface SleeperHold {
  /** Set once the held request executes. */
  entered: boolean;
  /** Opened by the test to let it finish. */
  gate: Gate;
}

declare global {
  var __ensembleStatsHold: SleeperHold | undefined;
}

let repo: TempRepo;
let served: Served | undefined;

beforeEach(() => {
  repo = new TempRepo('ensemble-stats');
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  repo.cleanup();
});

afterAll(() => closeAgent());

/** An ONNX step: OUTPUT0 = INPUT0 + 1, FP32 [-1, 4]. */
function onnxAdd1(name: string): void {
  repo.config(name, `
    platform: "onnxruntime_onnx"
    max_batch_size: 8
    input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    dynamic_batching { }`);
  repo.onnx(name, 1, addConstModel(1, WIDTH));
}

/** A JS step with one instance: OUT = IN, after `body` (which may await and throw). */
function jsStep(name: string, body: string): void {
  repo.config(name, `
    backend: "js"
    max_batch_size: 8
    input [ { name: "IN", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    output [ { name: "OUT", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    instance_group [ { count: 1, kind: KIND_CPU } ]
    dynamic_batching { }`);
  repo.write(`${name}/1/model.js`, `'use strict';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
exports.execute = async (requests) => {
  ${body}
  return requests.map((r) => ({ OUT: r.data.IN.data }));
};
`);
}

/** An ensemble of FP32 [-1, 4] tensors X → Y through `steps` ([model, input, output] in order). */
function ensemble(name: string, steps: [string, string, string][]): void {
  const step = ([model, input, output]: [string, string, string], i: number): string => {
    const from = i === 0 ? 'X' : `t${i}`;
    const to = i === steps.length - 1 ? 'Y' : `t${i + 1}`;
    return `{ model_name: "${model}" model_version: -1 input_map { key: "${input}" value: "${from}" } output_map { key: "${output}" value: "${to}" } }`;
  };
  repo.config(name, `
    platform: "ensemble"
    max_batch_size: 8
    input [ { name: "X", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    output [ { name: "Y", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]
    ensemble_scheduling { step [ ${steps.map(step).join(', ')} ] }`);
  repo.mkdir(`${name}/1`);
}

/** add1 (ONNX) → nap20 (JS, 20 ms) → nap30 (JS, 30 ms; fails a row whose first value is negative). */
function napChain(): void {
  onnxAdd1('add1');
  jsStep('nap20', 'await sleep(20);');
  jsStep('nap30', `await sleep(30);
  if (requests.some((r) => r.data.IN.data[0] < 0)) throw new Error('negative input');`);
  ensemble('chain', [['add1', 'INPUT0', 'OUTPUT0'], ['nap20', 'IN', 'OUT'], ['nap30', 'IN', 'OUT']]);
}

const SERVER = {
  allowHttp: true, httpAddress: '127.0.0.1', httpPort: 0,
  allowGrpc: true, grpcAddress: '127.0.0.1', grpcPort: 0,
  allowMetrics: true, metricsAddress: '127.0.0.1', metricsPort: 0, metricsConfig: ['summary_latencies=true'],
  logInfo: false,
};

type Duration = { count: number; ns: number };
interface Stats {
  name: string;
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'fail' | 'queue' | 'compute_input' | 'compute_infer' | 'compute_output', Duration>;
  batch_stats: ({ batch_size: number } & Record<'compute_input' | 'compute_infer' | 'compute_output', Duration>)[];
}

async function httpStats(model: string): Promise<Stats> {
  const reply = await get(served!.triton.ports.http!, `/v2/models/${model}/stats`);
  expect(reply.status).toBe(200);
  return (reply.json() as { model_stats: Stats[] }).model_stats[0];
}

const httpInfer = (model: string, x: number[]) =>
  post(served!.triton.ports.http!, `/v2/models/${model}/infer`, { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, WIDTH], data: x }] });

/** gRPC's uint64 fields arrive as strings (proto-loader longs: String): as numbers, to compare with HTTP's JSON. */
function numeric(value: unknown): unknown {
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  if (Array.isArray(value)) return value.map(numeric);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, numeric(v)]));
  return value;
}

/** One sample of a Prometheus text exposition: `name{model="m",version="1"...} value`. */
function metric(text: string, name: string, model: string, extra = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`model="${model}"`) && l.includes(extra));
  expect(line).toBeDefined();
  return Number(line!.slice(line!.lastIndexOf(' ') + 1));
}

const PHASES = ['compute_input', 'compute_infer', 'compute_output'] as const;

test("an ensemble's compute times are its step requests' own, summed per request; HTTP, gRPC and metrics agree", async () => {
  napChain();
  served = await startRepoTriton(repo.root, { config: SERVER });
  for (let i = 0; i < 2; i++) {
    const reply = await httpInfer('chain', [0, 1, 2, 3]);
    expect(reply.json()).toMatchObject({ outputs: [{ name: 'Y', data: [1, 2, 3, 4] }] });
  }
  const stub = rawStub(served.triton.ports.grpc!);
  try {
    await ok(stub, 'ModelInfer', {
      model_name: 'chain', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, WIDTH] }], raw_input_contents: [fp32Bytes([0, 1, 2, 3])],
    });
    const chain = await httpStats('chain');
    const steps = await Promise.all(['add1', 'nap20', 'nap30'].map(httpStats));
    // The steps served nothing but the ensemble's three requests: the ensemble's compute times
    // are exactly what its step requests counted in their own models' statistics.
    for (const phase of PHASES) {
      expect(chain.inference_stats[phase]).toEqual({ count: 3, ns: steps.reduce((sum, s) => sum + s.inference_stats[phase].ns, 0) });
    }
    // Each request slept 20 + 30 ms in its JS steps (the callables' time is compute_infer).
    expect(chain.inference_stats.compute_infer.ns).toBeGreaterThanOrEqual(3 * 50 * MS - 6 * SLEEP_SLACK);
    // Its queue is its own time before its steps were sent, once per successful request.
    expect(chain.inference_stats.queue.count).toBe(3);
    expect(chain.inference_stats.queue.ns).toBeLessThan(chain.inference_stats.compute_infer.ns);
    expect(chain.inference_stats.success.count).toBe(3);
    expect(chain.inference_stats.success.ns).toBeGreaterThanOrEqual(chain.inference_stats.queue.ns + chain.inference_stats.compute_infer.ns);
    // One execution per request, with its batch size's entry carrying the same sums.
    expect([chain.execution_count, chain.inference_count]).toEqual([3, 3]);
    expect(chain.batch_stats).toEqual([{
      batch_size: 1,
      compute_input: chain.inference_stats.compute_input,
      compute_infer: chain.inference_stats.compute_infer,
      compute_output: chain.inference_stats.compute_output,
    }]);

    // gRPC ModelStatistics says the same.
    const viaGrpc = await ok(stub, 'ModelStatistics', { name: 'chain', version: '1' });
    expect(numeric((viaGrpc.model_stats as unknown[])[0])).toMatchObject(numeric(chain) as Record<string, unknown>);

    // So do the metrics: the same counters, each request's duration in whole microseconds (3
    // requests: up to 2 µs under the total's).
    const text = (await get(served.triton.ports.metrics!, '/metrics')).body.toString();
    const own = served.triton.model('chain').stats();
    for (const [phase, counted] of [['queue', own.queue], ['compute_input', own.computeInput],
      ['compute_infer', own.computeInfer], ['compute_output', own.computeOutput]] as const) {
      const us = metric(text, `nv_inference_${phase}_duration_us`, 'chain')!;
      expect(us).toBe(counted.us);
      expect(us).toBeLessThanOrEqual(Math.floor(chain.inference_stats[phase].ns / 1000));
      expect(us).toBeGreaterThanOrEqual(Math.floor(chain.inference_stats[phase].ns / 1000) - 2);
      // Its summary observed each request's own (whole-microsecond) duration.
      expect(metric(text, `nv_inference_${phase}_summary_us_sum`, 'chain')).toBe(us);
      expect(metric(text, `nv_inference_${phase}_summary_us_count`, 'chain')).toBe(3);
    }
    // A step model's summaries observe its step requests, as Triton's reporter of that model does.
    for (const step of ['add1', 'nap20', 'nap30']) {
      expect(metric(text, 'nv_inference_compute_infer_summary_us_count', step)).toBe(3);
      expect(metric(text, 'nv_inference_compute_infer_summary_us_sum', step)).toBe(metric(text, 'nv_inference_compute_infer_duration_us', step));
    }
    expect(metric(text, 'nv_inference_compute_infer_duration_us', 'chain')).toBeGreaterThanOrEqual((3 * 50 * MS - 6 * SLEEP_SLACK) / 1000);
    expect(metric(text, 'nv_inference_exec_count', 'chain')).toBe(3);

    // A failed request (its last step throws) counts its duration only: what its first two
    // steps took stays in their models' statistics, not in the ensemble's.
    const failed = await httpInfer('chain', [-5, 0, 0, 0]);
    expect(failed.status).toBe(500);
    const after = await httpStats('chain');
    expect(after.inference_stats.fail.count).toBe(1);
    for (const phase of PHASES) expect(after.inference_stats[phase]).toEqual(chain.inference_stats[phase]);
    expect(after.inference_stats.queue).toEqual(chain.inference_stats.queue);
    expect([after.execution_count, after.inference_count]).toEqual([3, 3]);
    expect((await httpStats('nap20')).inference_stats.compute_infer.count).toBe(4);
  } finally {
    stub.close();
  }
});

test("a step queued behind a busy instance: the wait is the step model's queue time and the ensemble's request time, not its queue or compute time", async () => {
  // sleeper (one instance) sleeps as long as its first input value says, in ms; a negative one
  // holds it until the test opens the gate: the test, not a timer racing a loaded machine,
  // decides how long the ensemble's step waits behind it.
  jsStep('sleeper', `if (requests[0].data.IN.data[0] < 0) {
    globalThis.__ensembleStatsHold.entered = true;
    await globalThis.__ensembleStatsHold.gate.promise;
  } else await sleep(requests[0].data.IN.data[0]);`);
  ensemble('napper', [['sleeper', 'IN', 'OUT']]);
  const hold: SleeperHold = { entered: false, gate: gate() };
  globalThis.__ensembleStatsHold = hold;
  try {
    served = await startRepoTriton(repo.root, { config: SERVER });
    const port = served.triton.ports.http!;
    const direct = post(port, '/v2/models/sleeper/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, WIDTH], data: [-1, 0, 0, 0] }] });
    const sleeper = served.triton.model('sleeper');
    await waitFor(() => hold.entered && sleeper.stats().pending === 1 && sleeper.stats().queued === 0, 'the direct request to execute');
    const posted = performance.now();
    const viaEnsemble = httpInfer('napper', [10, 0, 0, 0]);
    await waitFor(() => sleeper.stats().queued === 1, "the ensemble's step to queue behind it");
    // The ensemble's own queue (from its arrival until its step was sent) lies within this.
    const sendMs = performance.now() - posted;
    // The step waits at least HOLD_MS, and longer than sending it took, so that a wait counted
    // as the ensemble's queue could not pass for its own however slow the machine.
    const holdMs = Math.ceil(Math.max(HOLD_MS, 2 * sendMs));
    await sleep(holdMs);
    hold.gate.open();
    expect((await viaEnsemble).status).toBe(200);
    expect((await direct).status).toBe(200);

    const step = (await httpStats('sleeper')).inference_stats;
    const ens = (await httpStats('napper')).inference_stats;
    const heldNs = holdMs * MS - SLEEP_SLACK;
    // The step request waited for the held execution: in the step model's queue time.
    expect(step.queue.count).toBe(2);
    expect(step.queue.ns).toBeGreaterThanOrEqual(heldNs);
    // The ensemble's compute is its own step's 10 ms sleep, not the held execution it waited
    // behind: the step model's compute is both requests' (the held one's is over heldNs), so the
    // ensemble's fits in what remains of it. Its queue is its own (Triton's: enqueue to its
    // EnsembleContext), once per request: over before its step queued, not the wait after.
    expect(ens.compute_infer.count).toBe(1);
    expect(ens.compute_infer.ns).toBeGreaterThanOrEqual(10 * MS - SLEEP_SLACK);
    expect(step.compute_infer.count).toBe(2);
    expect(ens.compute_infer.ns + heldNs).toBeLessThanOrEqual(step.compute_infer.ns);
    expect(ens.queue.count).toBe(1);
    expect(ens.queue.ns).toBeLessThanOrEqual(sendMs * MS);
    // The wait is in its request duration only.
    expect(ens.success.ns).toBeGreaterThanOrEqual(heldNs + ens.compute_infer.ns);

    const text = (await get(served.triton.ports.metrics!, '/metrics')).body.toString();
    expect(metric(text, 'nv_inference_compute_infer_duration_us', 'napper')).toBe(Math.floor(ens.compute_infer.ns / 1000));
    expect(metric(text, 'nv_inference_queue_duration_us', 'napper')).toBe(Math.floor(ens.queue.ns / 1000));
  } finally {
    // Opened whatever failed, so that stopping the server does not wait on the held request.
    hold.gate.open();
    delete globalThis.__ensembleStatsHold;
  }
});

test("an ensemble that is a step of another: the outer one's compute times are the inner one's, as Triton's nested RequestTrackers sum them", async () => {
  napChain();
  ensemble('outer', [['chain', 'X', 'Y']]);
  served = await startRepoTriton(repo.root, { config: SERVER });
  const reply = await httpInfer('outer', [0, 1, 2, 3]);
  expect(reply.json()).toMatchObject({ outputs: [{ name: 'Y', data: [1, 2, 3, 4] }] });
  const [outer, chain] = await Promise.all([httpStats('outer'), httpStats('chain')]);
  for (const phase of PHASES) expect(outer.inference_stats[phase]).toEqual(chain.inference_stats[phase]);
  expect(outer.inference_stats.compute_infer.ns).toBeGreaterThanOrEqual(50 * MS - 2 * SLEEP_SLACK);
  expect(outer.inference_stats.queue.count).toBe(1);
  // In process too: the same counters.
  expect(served.triton.model('outer').stats().computeInfer).toMatchObject(outer.inference_stats.compute_infer);
});
