/**
 * The soak: a real `infernode serve` child process on a temporary repository, mixed load over
 * HTTP, gRPC (unary and streams) and in process (a Triton in this process), clients that cancel
 * and disconnect, the cycled models loaded/unloaded/reloaded every ~200 ms, the server's RSS,
 * threads and file descriptors sampled every second, and at the end SIGTERM under load.
 *
 * It passes when: no request failed (every answer right, every error an expected one), every
 * request sent settled, the server exited with code 0 after SIGTERM and logged no internal
 * error, RSS/threads/fds are flat after warm-up (process-stats.ts), and every channel served.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import { HttpInferenceServerClient } from '../client/http';
import { Triton } from '../triton';
import { checkFlat, sampleProcess, type FlatnessCheck, type ProcessSample } from './process-stats';
import { SOAK_MODELS, writeSoakRepository } from './repository';
import { grpcSequenceWorker, httpSequenceWorker, streamSequenceWorker } from './sequences';
import {
  SoakState, bindInProcessModel, classifyError, disconnectWorker, grpcWorker, httpWorker, inProcessWorker, streamWorker,
} from './traffic';

export interface SoakOptions {
  /** Seconds of load before SIGTERM. */
  seconds: number;
  /** Milliseconds between repository operations on the cycled models. */
  reloadEveryMs: number;
  httpWorkers: number;
  grpcWorkers: number;
  streamWorkers: number;
  inProcessWorkers: number;
  /** The sequence clients (sequences.ts): one per channel, HTTP, gRPC ModelInfer, ModelStreamInfer. */
  sequences: boolean;
  /** Progress lines on stderr. */
  log: (line: string) => void;
}

export const DEFAULT_SOAK_OPTIONS: SoakOptions = {
  seconds: 120, reloadEveryMs: 200, httpWorkers: 4, grpcWorkers: 3, streamWorkers: 2, inProcessWorkers: 2, sequences: true, log: () => undefined,
};

export interface SoakReport {
  passed: boolean;
  problems: string[];
  seconds: number;
  requestsSent: number;
  outcomes: Record<string, number>;
  failures: string[];
  repositoryOperations: number;
  unsettled: number;
  exit: { code: number | null; signal: string | null; afterSigtermMs: number | null };
  server: { first: ProcessSample | null; last: ProcessSample | null; max: Omit<ProcessSample, 't'> | null; samples: number };
  flatness: FlatnessCheck[];
}

const CLI = path.join(__dirname, '..', 'cli', 'main.js');

/** `infernode serve` on loopback with free ports; resolves once it prints them. */
function startServer(repository: string, output: { text: string }): Promise<{ child: ChildProcess; http: number; grpc: number }> {
  const child = spawn(process.execPath, [
    CLI, 'serve', '--model-repository', repository, '--model-control-mode', 'explicit', '--load-model', '*',
    '--http-address', '127.0.0.1', '--http-port', '0', '--grpc-address', '127.0.0.1', '--grpc-port', '0',
    '--allow-metrics=false', '--exit-timeout-secs', '30',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const append = (d: Buffer): void => {
    // Keep the start and the last 64 KiB: enough to explain a failure, bounded however long it runs.
    output.text = (output.text + d.toString()).slice(-65536);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not start within 60 s:\n${output.text}`));
    }, 60_000);
    const onExit = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code} before serving:\n${output.text}`));
    };
    child.once('exit', onExit);
    const poll = setInterval(() => {
      const http = /http on port (\d+)/.exec(output.text);
      const grpc = /grpc on port (\d+)/.exec(output.text);
      if (!http || !grpc) return;
      clearInterval(poll);
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({ child, http: Number(http[1]), grpc: Number(grpc[1]) });
    }, 50);
  });
}

/** Unload, load, reload (load of a loaded model) of the cycled models, one operation every `everyMs`. */
async function controlLoop(state: SoakState, port: number, everyMs: number, until: () => boolean): Promise<number> {
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`, { timeoutMs: 60_000 });
  const cycled = SOAK_MODELS.filter((m) => m.cycled);
  const steps = ['unload', 'load', 'load'] as const;
  let operations = 0;
  for (let i = 0; !until(); i++) {
    const model = cycled[i % cycled.length];
    const step = steps[Math.floor(i / cycled.length) % steps.length];
    const sentAt = Date.now();
    try {
      await state.track(step === 'unload' ? client.unloadModel(model.name) : client.loadModel(model.name));
      operations++;
      state.record('control', 'ok');
    } catch (err) {
      const { outcome, detail } = classifyError(state, null, sentAt, false, err);
      state.record('control', outcome, `${step} ${model.name}: ${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return operations;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<{ code: number | null; signal: string | null } | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

/** Waits (bounded) for every tracked request to settle; returns how many never did. */
async function settleAll(state: SoakState, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (state.pending.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return state.pending.size;
}

export async function runSoak(options: Partial<SoakOptions> = {}): Promise<SoakReport> {
  const o = { ...DEFAULT_SOAK_OPTIONS, ...options };
  const repository = writeSoakRepository();
  const output = { text: '' };
  const started = Date.now();
  // Workers stop by themselves at the latest a minute after the planned end (SIGTERM and drain included).
  const state = new SoakState(started + (o.seconds + 90) * 1000);
  const problems: string[] = [];
  const { child, http, grpc } = await startServer(repository, output);
  const inProcess = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false, logInfo: false } });
  bindInProcessModel(inProcess);
  await inProcess.run();
  o.log(`soak: server pid ${child.pid} (http ${http}, grpc ${grpc}); ${o.seconds} s of load`);

  const samples: ProcessSample[] = [];
  const sampler = setInterval(() => {
    const s = state.sigtermAt === null ? sampleProcess(child.pid!, (Date.now() - started) / 1000) : null;
    if (s) samples.push(s);
  }, 1000);
  const progress = setInterval(() => {
    o.log(`soak: ${Math.round((Date.now() - started) / 1000)} s, ${state.sent} requests, ${state.total('ok')} ok, ` +
      `${state.total('failure')} failed${samples.length ? `, server RSS ${samples[samples.length - 1].rssMiB.toFixed(0)} MiB` : ''}`);
  }, 10_000);

  const loadEnds = started + o.seconds * 1000;
  const workers: Promise<void>[] = [
    ...Array.from({ length: o.httpWorkers }, () => httpWorker(state, http)),
    ...Array.from({ length: o.grpcWorkers }, () => grpcWorker(state, grpc)),
    ...Array.from({ length: o.streamWorkers }, (_, i) => streamWorker(state, grpc, i)),
    ...Array.from({ length: o.inProcessWorkers }, () => inProcessWorker(state, inProcess)),
    disconnectWorker(state, http),
    ...(o.sequences ? [httpSequenceWorker(state, http), grpcSequenceWorker(state, grpc), streamSequenceWorker(state, grpc)] : []),
  ].map((w) => w.catch((err: Error) => { state.record('control', 'failure', `a worker crashed: ${err.stack ?? err.message}`); }));
  const control = controlLoop(state, http, o.reloadEveryMs, () => Date.now() >= loadEnds || state.stopped);

  const operations = await control;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, loadEnds - Date.now())));

  // SIGTERM under load (the workers keep sending); the in-process Triton stops at the same moment.
  clearInterval(sampler);
  state.sigtermAt = Date.now();
  o.log(`soak: SIGTERM after ${state.sent} requests`);
  child.kill('SIGTERM');
  const stopInProcess = inProcess.stop();
  const exit = await waitForExit(child, 60_000);
  const exitedAt = Date.now();
  state.serverExited = true;
  await stopInProcess;
  await Promise.all(workers);
  const unsettled = await settleAll(state, 30_000);
  clearInterval(progress);
  if (!exit) {
    child.kill('SIGKILL');
    problems.push('the server did not exit within 60 s of SIGTERM');
  } else if (exit.code !== 0) {
    problems.push(`the server exited with code ${exit.code} (signal ${exit.signal}) after SIGTERM`);
  }
  rmSync(repository, { recursive: true, force: true });

  const failures = state.total('failure');
  if (failures > 0) problems.push(`${failures} request(s) failed`);
  if (unsettled > 0) problems.push(`${unsettled} request(s) never settled`);
  const internal = output.text.split('\n').filter((l) => /internal error|uncaught|unhandled/i.test(l));
  if (internal.length > 0) problems.push(`the server logged ${internal.length} internal error(s): ${internal.slice(0, 3).join(' | ')}`);
  const channels = ['http', 'grpc', 'stream', 'inprocess', ...(o.sequences ? ['seq-http', 'seq-grpc', 'seq-stream'] : [])];
  for (const channel of channels) {
    if ((state.counts.get(`${channel}:ok`) ?? 0) === 0) problems.push(`no ${channel} request succeeded`);
  }
  if (operations === 0) problems.push('no repository operation succeeded');
  const flatness = checkFlat(samples);
  for (const f of flatness) {
    if (!f.ok) problems.push(`${f.metric} grew: median ${f.last.toFixed(1)} in the last third vs ${f.middle.toFixed(1)} in the middle third (limit ${f.limit.toFixed(1)}, ${samples.length} samples)`);
  }
  const max = samples.length === 0 ? null : {
    rssMiB: Math.max(...samples.map((s) => s.rssMiB)), threads: Math.max(...samples.map((s) => s.threads)), fds: Math.max(...samples.map((s) => s.fds)),
  };
  return {
    passed: problems.length === 0,
    problems,
    seconds: (Date.now() - started) / 1000,
    requestsSent: state.sent,
    outcomes: Object.fromEntries([...state.counts].sort(([a], [b]) => a.localeCompare(b))),
    failures: state.failures,
    repositoryOperations: operations,
    unsettled,
    exit: { code: exit?.code ?? null, signal: exit?.signal ?? null, afterSigtermMs: exit ? exitedAt - state.sigtermAt : null },
    server: { first: samples[0] ?? null, last: samples[samples.length - 1] ?? null, max, samples: samples.length },
    flatness,
  };
}
