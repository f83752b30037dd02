/**
 * The server of the ensemble bench, run as a child process so its CPU time and event-loop delay
 * are its own: one infernode serving the ensemble repository over HTTP — `preprocess` (ONNX,
 * dynamic batching), `mlp_bench` (ONNX, dynamic batching) and the ensemble `pipeline`
 * (preprocess → mlp_bench). Both client modes talk to this same process.
 *
 * IPC: the child sends {port} once listening (or exits non-zero with the reason on stderr); the
 * parent sends 'reset' (clear the delay histogram), 'report' (→ EnsembleServerReport) and 'stop'.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Triton } from '../triton';

/** Names of the models in the bench repository. */
export const PREPROCESS_MODEL = 'preprocess';
export const MLP_MODEL = 'mlp_bench';
export const ENSEMBLE_MODEL = 'pipeline';

/** Rows and executions so far of one step model (its own statistics: direct and ensemble traffic). */
export interface Executions {
  rows: number;
  executions: number;
}

export interface EnsembleServerReport {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Process CPU time (user + system) since start, µs. */
  cpuUs: number;
  preprocess: Executions;
  mlp: Executions;
}

async function main(): Promise<void> {
  const repository = process.argv[2]!;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const triton = new Triton({ config: {
    httpAddress: '127.0.0.1', httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false,
  } });
  triton.useRepository({ repositories: [repository] });
  await triton.run();  // throws UNAVAILABLE with the reason when a model does not load
  const executions = (model: string): Executions => {
    const s = triton.model(model).stats();
    return { rows: s.inferenceCount, executions: s.executionCount };
  };
  process.on('message', (message: string) => {
    if (message === 'reset') delay.reset();
    else if (message === 'report') {
      const cpu = process.cpuUsage();
      const report: EnsembleServerReport = {
        p50Ms: delay.percentile(50) / 1e6, p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6,
        cpuUs: cpu.user + cpu.system, preprocess: executions(PREPROCESS_MODEL), mlp: executions(MLP_MODEL),
      };
      process.send!(report);
    } else if (message === 'stop') {
      void triton.stop().then(() => process.exit(0));
    }
  });
  process.send!({ port: triton.ports.http! });
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`ensemble bench server failed to start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
