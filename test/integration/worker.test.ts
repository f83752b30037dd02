/**
 * The addon in worker_threads Workers: its state is per environment, so each worker loads it,
 * serves on its own, and exits (or is terminated) without disturbing the main thread. The
 * worker script (fixtures/native-worker.js) drives NativeModel through ts/native.ts's contract.
 */
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Triton } from '../../ts/triton';
import type { Request, ResponseOutputs } from '../../ts/request';
import { fp32, sleep, tagOf, inProcessTriton } from './helpers';

const SCRIPT = path.join(__dirname, 'fixtures', 'native-worker.js');

interface WorkerMessage {
  type: 'result' | 'ready' | 'error';
  [key: string]: unknown;
}

interface Running {
  worker: Worker;
  messages: WorkerMessage[];
  exited: Promise<number>;
  next(type: WorkerMessage['type']): Promise<WorkerMessage>;
}

function startWorker(mode: 'serve' | 'hang'): Running {
  const worker = new Worker(SCRIPT, { workerData: { mode } });
  const messages: WorkerMessage[] = [];
  const waiters: (() => boolean)[] = [];
  worker.on('message', (m: WorkerMessage) => {
    messages.push(m);
    waiters.splice(0, waiters.length, ...waiters.filter((w) => !w()));
  });
  const exited = new Promise<number>((resolve, reject) => {
    worker.once('exit', resolve);
    worker.once('error', reject);
  });
  const next = (type: WorkerMessage['type']): Promise<WorkerMessage> => new Promise((resolve, reject) => {
    const check = (): boolean => {
      const error = messages.find((m) => m.type === 'error');
      if (error) { reject(new Error(`worker failed: ${String(error.message)}`)); return true; }
      const found = messages.find((m) => m.type === type);
      if (found) resolve(found);
      return Boolean(found);
    };
    if (!check()) waiters.push(check);
    exited.then(() => { if (!check()) reject(new Error(`worker exited before sending '${type}'`)); }, reject);
  });
  return { worker, messages, exited, next };
}

let triton: Triton;
const running: Running[] = [];

beforeEach(() => {
  triton = inProcessTriton();
});

afterEach(async () => {
  await triton.stop();
  await Promise.all(running.splice(0).map(async (r) => {
    await r.worker.terminate();
    await r.exited.catch(() => undefined);
  }));
});

function launch(mode: 'serve' | 'hang'): Running {
  const r = startWorker(mode);
  running.push(r);
  return r;
}

/** A main-thread model, to show the main environment is unaffected. */
async function mainThreadServes(name = 'main'): Promise<void> {
  triton.bind({
    modelName: name,
    inferFunc: (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({ OUT: r.data.IN })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }],
    outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
  });
  await triton.run();
  const tags = await Promise.all([1, 2, 3, 4, 5].map((v) => triton.infer(name, { IN: fp32(v) }).then(tagOf)));
  expect(tags).toEqual([1, 2, 3, 4, 5]);
}

test('a worker loads the addon, serves through NativeModel (inline, batcher thread, errors, timeouts) and exits by itself', async () => {
  const w = launch('serve');
  const { result } = (await w.next('result')) as unknown as { result: Record<string, any> };
  expect(await w.exited).toBe(0);

  expect(result.turnsAdvanced).toBe(1);
  expect(result.inlineBatches).toEqual([[1, 2, 3, 4], [5, 6]]);
  expect(result.pumpOwed).toEqual([1, 0]);  // 5 and 6 still queued after the first; nothing after the second
  const inline = result.inlineResponses as { id: number; code: number; message?: string }[];
  expect(inline.filter((r) => r.id <= 6).map((r) => [r.id, r.code])).toEqual([[1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [6, 0]]);
  expect(inline.find((r) => r.id === 7)).toEqual({ id: 7, code: 2, message: 'boom in worker' });
  expect(result.invalid).toEqual({ isClass: true, code: 4, message: "unexpected datatype INT32 for input 'IN' for model 'inline', expected FP32" });
  expect(result.inlineStats).toEqual({ executionCount: 2, inferenceCount: 6 });

  expect(result.delayedPump).toBe(true);
  expect(result.delayedBatches).toEqual([[21, 22]]);
  expect(result.delayedResponses.map((r: { id: number; code: number }) => [r.id, r.code])).toEqual([[21, 0], [22, 0]]);

  expect(result.timeoutResponse).toEqual({ id: 32, code: 5, message: 'Request timeout expired' });
  expect(result.timeoutResponses.map((r: { id: number; code: number }) => [r.id, r.code])).toEqual([[32, 5], [31, 0]]);

  expect(result.stopped).toEqual([null, null, null]);
  expect(result.keptInputs).toBe(0);
});

test('several workers and the main thread serve at the same time, each with its own addon state', async () => {
  const workers = [launch('serve'), launch('serve'), launch('serve')];
  await mainThreadServes();
  const results = await Promise.all(workers.map((w) => w.next('result')));
  for (const r of results) {
    expect((r as unknown as { result: { inlineBatches: number[][] } }).result.inlineBatches).toEqual([[1, 2, 3, 4], [5, 6]]);
  }
  expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
  expect(tagOf(await triton.infer('main', { IN: fp32(9) }))).toBe(9);
});

test('terminating a worker with a batch executing and requests queued leaves the main process healthy', async () => {
  const w = launch('hang');
  const ready = await w.next('ready');
  expect(ready.executing).toEqual([1]);
  expect(ready.pending).toBe(5);
  // Its outstanding requests keep the worker alive...
  const early = await Promise.race([w.exited.then(() => 'exited'), sleep(100).then(() => 'alive')]);
  expect(early).toBe('alive');
  // ...until it is terminated: the addon's cleanup joins its batcher threads.
  await w.worker.terminate();
  expect(await w.exited).toBe(1);
  await mainThreadServes();
  // A fresh worker loads the addon again and serves.
  const again = launch('serve');
  await again.next('result');
  expect(await again.exited).toBe(0);
});
