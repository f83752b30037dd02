/**
 * Scenario "in-process": `triton.infer()` on an identity JS model, against calling the same
 * callable directly (the floor). Reports per-request overhead at concurrency 1 without batching
 * and throughput at concurrency 1, 16 and 256 with batching on and off.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { Triton } from '../triton';
import { NDArray } from '../tensor';
import type { Request } from '../request';
import { runLoad, type LoadResult } from './load';

export interface InProcessRow extends LoadResult {
  batching: boolean;
  meanBatchSize: number;
  /** V8's pauses during the measured run: how many, their sum and the longest (ms). */
  gc: GcPauses;
}

export interface GcPauses {
  count: number;
  totalMs: number;
  maxMs: number;
}

/** Runs `work` while recording V8's garbage-collection pauses (perf_hooks 'gc' entries). */
async function withGcPauses<T>(work: () => Promise<T>): Promise<[T, GcPauses]> {
  const pauses: GcPauses = { count: 0, totalMs: 0, maxMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      pauses.count++;
      pauses.totalMs += entry.duration;
      pauses.maxMs = Math.max(pauses.maxMs, entry.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    const result = await work();
    await new Promise((resolve) => setTimeout(resolve, 20));  // entries are delivered later, off a timer
    return [result, pauses];
  } finally {
    observer.disconnect();
  }
}

export interface InProcessResult {
  scenario: 'inprocess';
  directCallMeanUs: number;
  overheadUsAtConcurrency1: number;
  rows: InProcessRow[];
  /**
   * Batching on, concurrency 256, in a Triton that also serves HTTP, gRPC and metrics: what an
   * embedding service pays (nothing measurable) for serving the frontends beside.
   */
  withFrontends: InProcessRow;
}

const identity = (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN }));

function bindIdentity(triton: Triton, name: string, batching: boolean): void {
  triton.bind({
    modelName: name,
    inferFunc: identity,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [4] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
    config: batching ? { maxBatchSize: 256, batcher: { maxQueueDelayMicroseconds: 0 } } : { batching: false },
  });
}

/** A Triton for the scenario: an embedding one (no frontends), or one serving them too on free ports. */
function benchTriton(frontends: boolean): Triton {
  return new Triton({
    config: frontends
      ? { httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, metricsPort: 0, logInfo: false }
      : { allowHttp: false, allowGrpc: false, allowMetrics: false },
  });
}

/** Batching on, concurrency 256, in a Triton that serves its frontends as well. */
async function withFrontendsRow(durationMs: number): Promise<InProcessRow> {
  const triton = benchTriton(true);
  bindIdentity(triton, 'identity_batched', true);
  await triton.run();
  try {
    const inputs = { IN: new NDArray('FP32', [1, 4], new Float32Array([1, 2, 3, 4])) };
    const before = triton.model('identity_batched').stats();
    const [result, gc] = await withGcPauses(() => runLoad(() => triton.infer('identity_batched', inputs), 256, durationMs));
    const after = triton.model('identity_batched').stats();
    const executions = after.executionCount - before.executionCount;
    return { ...result, batching: true, meanBatchSize: executions ? (after.inferenceCount - before.inferenceCount) / executions : 0, gc };
  } finally {
    await triton.stop();
  }
}

export async function runInProcessBench(durationMs = 2000): Promise<InProcessResult> {
  // The embedding configuration: a service that calls triton.infer() and serves nothing else.
  const triton = benchTriton(false);
  bindIdentity(triton, 'identity_batched', true);
  bindIdentity(triton, 'identity', false);
  await triton.run();
  const batched = { IN: new NDArray('FP32', [1, 4], new Float32Array([1, 2, 3, 4])) };
  const single = { IN: new NDArray('FP32', [4], new Float32Array([1, 2, 3, 4])) };

  // The floor: the same callable called directly, awaited like infer() is.
  const direct = await runLoad(async () => identity([{ data: single } as unknown as Request]), 1, durationMs / 2);

  const rows: InProcessRow[] = [];
  for (const batching of [false, true]) {
    const name = batching ? 'identity_batched' : 'identity';
    const inputs = batching ? batched : single;
    for (const concurrency of [1, 16, 256]) {
      const before = triton.model(name).stats();
      const [result, gc] = await withGcPauses(() => runLoad(() => triton.infer(name, inputs), concurrency, durationMs));
      const after = triton.model(name).stats();
      const executions = after.executionCount - before.executionCount;
      const inferences = after.inferenceCount - before.inferenceCount;
      rows.push({ ...result, batching, meanBatchSize: executions ? inferences / executions : 0, gc });
    }
  }
  await triton.stop();
  const c1 = rows.find((r) => !r.batching && r.concurrency === 1)!;
  return {
    scenario: 'inprocess',
    directCallMeanUs: direct.meanUs,
    overheadUsAtConcurrency1: c1.meanUs - direct.meanUs,
    rows,
    withFrontends: await withFrontendsRow(durationMs),
  };
}
