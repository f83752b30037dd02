/**
 * The engine's own ceiling for the headline bench: ONNX Runtime (onnxruntime-node) called
 * directly in a loop, one run after another, at the batch sizes infernode formed, with
 * infernode's session settings (intra-op threads and spinning, engines/onnx.ts
 * onnxSessionDefaults). No HTTP, queue or scheduler: what the cores give this model per row.
 * Run as a child process after the servers have stopped, so nothing else competes.
 *
 * Protocol: the parent forks this file and sends one CeilingJob; the child answers with one
 * CeilingReport and exits.
 */
import { onnxSessionDefaults } from '../engines/onnx';

export interface CeilingJob {
  modelFile: string;
  /** Rows per run to measure. */
  batches: number[];
  /** Measured time per batch size (after a warm-up of the same length). */
  durationMs: number;
}

export interface CeilingReport {
  intraOpThreads: number;
  /** Whether ONNX Runtime's workers spin between runs (infernode's default). */
  spinning: boolean;
  /** Per batch size: runs per second and rows per second. */
  rows: { batch: number; runsPerSecond: number; rowsPerSecond: number; meanRunUs: number }[];
}

interface OrtModule {
  InferenceSession: { create(path: string, options?: object): Promise<{ run(feeds: object): Promise<unknown> }> };
  Tensor: new (type: string, data: Float32Array, dims: number[]) => unknown;
}

async function runsFor(run: () => Promise<unknown>, ms: number): Promise<{ runs: number; seconds: number }> {
  const start = performance.now();
  let runs = 0;
  while (performance.now() - start < ms) {
    await run();
    ++runs;
  }
  return { runs, seconds: (performance.now() - start) / 1000 };
}

export async function measureCeiling(job: CeilingJob): Promise<CeilingReport> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ort = require('onnxruntime-node') as OrtModule;
  const defaults = onnxSessionDefaults({ instanceCount: 1 });
  const allowSpinning = defaults.sessionConfig!['session.intra_op.allow_spinning'];
  const session = await ort.InferenceSession.create(job.modelFile, {
    intraOpNumThreads: defaults.intraOpThreads,
    extra: { session: { intra_op: { allow_spinning: allowSpinning } } },
  });
  const rows: CeilingReport['rows'] = [];
  for (const batch of job.batches) {
    const input = new ort.Tensor('float32', new Float32Array(batch * 256).map((_, i) => Math.sin(i) * 0.5), [batch, 256]);
    const run = (): Promise<unknown> => session.run({ input });
    await runsFor(run, job.durationMs);
    const { runs, seconds } = await runsFor(run, job.durationMs);
    rows.push({ batch, runsPerSecond: runs / seconds, rowsPerSecond: (runs * batch) / seconds, meanRunUs: (seconds * 1e6) / runs });
  }
  return { intraOpThreads: defaults.intraOpThreads ?? 0, spinning: allowSpinning !== '0', rows };
}

if (require.main === module) {
  process.once('message', (job: CeilingJob) => {
    measureCeiling(job).then((report) => {
      process.send!(report, () => process.exit(0));
    }, (err: unknown) => {
      console.error(err);
      process.exit(1);
    });
  });
}
