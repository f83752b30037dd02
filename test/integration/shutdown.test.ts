/**
 * Graceful stop (triton-protocol.md §6.10: in-flight requests finish, new ones fail), seen from
 * outside: every request in flight when stop() is called completes or fails; none hangs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Triton } from '../../ts/triton';
import type { TritonConfig } from '../../ts/config/types';
import type { Tensor } from '../../ts/config/types';
import type { Request, ResponseOutputs } from '../../ts/request';
import { Recorder, expectRejects, expectThrows, fp32, settleLoop, sleep, tagOf, track, waitFor, inProcessTriton } from './helpers';

let triton: Triton;

function start(config: TritonConfig = {}): Triton {
  triton = inProcessTriton(config);
  return triton;
}

beforeEach(() => {
  start();
});

afterEach(async () => {
  await triton.stop();
});

const IN: Tensor = { name: 'IN', dtype: 'FP32', shape: [1] };
const OUT: Tensor = { name: 'OUT', dtype: 'FP32', shape: [1] };
const identity = (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({ OUT: r.data.IN }));
const never = (): Promise<ResponseOutputs[]> => new Promise(() => {});

test('stop() with a request executing and others queued: the queued ones drain and complete once the callable finishes', async () => {
  const rec = new Recorder();
  triton.bind({ modelName: 'm', inferFunc: rec.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 2 } });
  await triton.run();
  const release = rec.hold();
  const executing = triton.infer('m', { IN: fp32(0) }).then(tagOf);
  await waitFor(() => rec.active === 1, 'the instance to be busy');
  const queued = [1, 2, 3].map((v) => triton.infer('m', { IN: fp32(v) }).then(tagOf));
  const stopping = track(triton.stop());
  await settleLoop(50);
  expect(stopping.settled).toBe(false);  // waits for the executing batch
  expect(triton.isConnected()).toBe(false);
  release.open();
  expect(await Promise.all([executing, ...queued])).toEqual([0, 1, 2, 3]);
  expect(await stopping.promise).toBe(true);
  expect(rec.batchSizes).toEqual([1, 2, 1]);
  expect(triton.model('m').pendingCount).toBe(0);
});

test('stop() sends queued requests without waiting out the queue delay', async () => {
  const rec = new Recorder();
  triton.bind({
    modelName: 'slow_window', inferFunc: rec.func, inputs: [IN], outputs: [OUT],
    config: { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 60_000_000 } },
  });
  await triton.run();
  const waiting = track(triton.infer('slow_window', { IN: fp32(5) }).then(tagOf));
  await settleLoop(50);
  expect(waiting.settled).toBe(false);  // held back by the 60 s window
  const begin = performance.now();
  expect(await triton.stop()).toBe(true);
  expect(await waiting.promise).toBe(5);
  expect(performance.now() - begin).toBeLessThan(10_000);
});

test('a callable that never returns: its requests and those queued behind it fail with UNAVAILABLE after exitTimeoutSecs', async () => {
  start({ exitTimeoutSecs: 1 });
  let calls = 0;
  triton.bind({
    modelName: 'stuck', inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 },
    inferFunc: () => { calls++; return never(); },
  });
  await triton.run();
  const executing = triton.infer('stuck', { IN: fp32(0) });
  await waitFor(() => calls === 1, 'the callable to be entered');
  const queued = [triton.infer('stuck', { IN: fp32(1) }), triton.infer('stuck', { IN: fp32(2) })];
  const begin = performance.now();
  const stopping = triton.stop();
  for (const p of [executing, ...queued]) await expectRejects(p, 'UNAVAILABLE', "model 'stuck' was stopped");
  expect(await stopping).toBe(true);
  const elapsed = performance.now() - begin;
  expect(elapsed).toBeGreaterThanOrEqual(900);
  expect(elapsed).toBeLessThan(10_000);
  expect(calls).toBe(1);
  expect(triton.model('stuck').pendingCount).toBe(0);
});

test('a callable that finishes after the exit timeout: its requests already failed and the late result is dropped quietly', async () => {
  start({ exitTimeoutSecs: 1 });
  const rec = new Recorder();
  triton.bind({ modelName: 'late', inferFunc: rec.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
  await triton.run();
  const release = rec.hold();
  const executing = triton.infer('late', { IN: fp32(0) });
  await waitFor(() => rec.active === 1, 'the instance to be busy');
  const stopping = triton.stop();
  await expectRejects(executing, 'UNAVAILABLE');
  expect(await stopping).toBe(true);
  release.open();
  await waitFor(() => rec.active === 0, 'the callable to return');
  await settleLoop(50);
  expect(triton.model('late').pendingCount).toBe(0);
  expect(rec.calls).toHaveLength(1);
});

test('stop() across models: requests of a finishing model complete, those of a stuck model fail; stop() resolves', async () => {
  // 2 s for the finishing model's two requests, released after stop() began: ample on a stalled machine.
  start({ exitTimeoutSecs: 2 });
  const rec = new Recorder();
  let stuckCalls = 0;
  triton.bind({ modelName: 'fine', inferFunc: rec.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
  triton.bind({
    modelName: 'stuck', inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 },
    inferFunc: () => { stuckCalls++; return never(); },
  });
  await triton.run();
  const release = rec.hold();
  const fine = [0, 1].map((v) => triton.infer('fine', { IN: fp32(v) }).then(tagOf));
  const stuck = [0, 1].map((v) => triton.infer('stuck', { IN: fp32(v) }));
  await waitFor(() => rec.active === 1 && stuckCalls === 1, 'both models to be busy');
  const stopping = triton.stop();
  await sleep(20);
  release.open();
  expect(await Promise.all(fine)).toEqual([0, 1]);
  for (const p of stuck) await expectRejects(p, 'UNAVAILABLE');
  expect(await stopping).toBe(true);
});

test('infer after stop() is refused with UNAVAILABLE', async () => {
  triton.bind({ modelName: 'm', inferFunc: identity, inputs: [IN], outputs: [OUT] });
  await triton.run();
  expect(tagOf(await triton.infer('m', { IN: fp32(1) }))).toBe(1);
  await triton.stop();
  const err = await expectRejects(triton.infer('m', { IN: fp32(1) }), 'UNAVAILABLE');
  expect(err.httpStatus).toBe(503);
});

test('bind after stop() fails with UNAVAILABLE', async () => {
  await triton.run();
  await triton.stop();
  expectThrows(() => triton.bind({ modelName: 'm', inferFunc: identity, inputs: [IN], outputs: [OUT] }), 'UNAVAILABLE');
  expect(triton.models()).toHaveLength(0);
});

test('stop() twice: the second call returns false, also while the first is still draining', async () => {
  const rec = new Recorder();
  triton.bind({ modelName: 'm', inferFunc: rec.func, inputs: [IN], outputs: [OUT] });
  await triton.run();
  const release = rec.hold();
  const executing = triton.infer('m', { IN: fp32(3) }).then(tagOf);
  await waitFor(() => rec.active === 1, 'the instance to be busy');
  const first = triton.stop();
  expect(await triton.stop()).toBe(false);
  release.open();
  expect(await first).toBe(true);
  expect(await executing).toBe(3);
  expect(await triton.stop()).toBe(false);
});

test('serve() ends when stop() is called from elsewhere, once that stop has drained, and leaves no signal listener', async () => {
  const rec = new Recorder();
  triton.bind({ modelName: 'm', inferFunc: rec.func, inputs: [IN], outputs: [OUT] });
  const listeners = process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');
  let served = false;
  const serving = triton.serve().then(() => { served = true; });
  await waitFor(() => triton.isConnected(), 'the server to run');
  const release = rec.hold();
  const executing = triton.infer('m', { IN: fp32(5) }).then(tagOf);
  await waitFor(() => rec.active === 1, 'the instance to be busy');
  const stopping = triton.stop();
  await settleLoop();
  expect(served).toBe(false);  // the request in flight is still draining
  release.open();
  await Promise.all([serving, stopping]);
  expect(await executing).toBe(5);
  expect(process.listenerCount('SIGINT') + process.listenerCount('SIGTERM')).toBe(listeners);
});

test('stop() on a Triton with nothing in flight resolves true at once', async () => {
  triton.bind({ modelName: 'idle', inferFunc: identity, inputs: [IN], outputs: [OUT] });
  await triton.run();
  expect(triton.isConnected()).toBe(true);
  expect(await triton.stop()).toBe(true);
  expect(triton.isConnected()).toBe(false);
});

test('stop() resolves once the log file holds every line logged before it; later lines are appended at once (50 rounds)', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-log-'));
  try {
    for (let i = 0; i < 50; i++) {
      const logFile = path.join(dir, `server-${i}.log`);
      const t = inProcessTriton({ logFile });
      await t.run();
      for (let j = 0; j < 20; j++) t.logger.info(`round ${i} line ${j}`);
      t.logger.error(`round ${i}: the last line before stop()`);
      expect(await t.stop()).toBe(true);
      const logged = readFileSync(logFile, 'utf8');
      expect(logged).toContain(`round ${i}: the last line before stop()`);
      t.logger.info(`round ${i}: a line after stop()`);
      expect(readFileSync(logFile, 'utf8')).toContain(`round ${i}: a line after stop()`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
