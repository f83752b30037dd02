/**
 * Load, unload and poll under traffic (triton-protocol.md §6.10, security.md §2): requests
 * already queued or executing on the old version finish there, new ones go to the new version,
 * and no request fails. The JS-model tests hold the old version's instance on a gate, so the
 * queue state at the swap is exact; the ONNX tests keep a steady stream of requests in flight
 * through several reloads and check every single response.
 */
import { InferenceServerError } from '../../../ts/errors';
import type { BoundModel } from '../../../ts/model';
import { NDArray } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import { expectRejects, gate, settleLoop, track, waitFor, type Gate, type Tracked } from '../helpers';
import { TempRepo, slowAddModel, startRepoTriton, type Served } from './repo-helpers';

interface Events {
  gate?: Promise<void>;
  executed: string[];
  finalized: number[];
}

declare global {
  var __trafficEvents: Events | undefined;
}

let repo: TempRepo;
let served: Served | undefined;
let events: Events;

beforeEach(() => {
  repo = new TempRepo('traffic');
  events = { executed: [], finalized: [] };
  globalThis.__trafficEvents = events;
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  delete globalThis.__trafficEvents;
  repo.cleanup();
});

const JS_CONFIG = `
  backend: "js"
  max_batch_size: 1
  input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
  output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
  dynamic_batching { }
  version_policy { latest { num_versions: 1 } }`;

/**
 * OUT = IN + version. A gated version waits on the test's gate, when one is set, while it runs
 * with max_batch_size 1 (so a reload with another config is not held).
 */
function jsVersion(version: number, gated: boolean): string {
  return `
    const events = () => globalThis.__trafficEvents;
    exports.execute = async (requests, context) => {
      events().executed.push('v${version}:' + requests[0].data.IN.data[0]);
      ${gated ? 'if (events().gate && context.modelConfig.maxBatchSize === 1) await events().gate;' : ''}
      return requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v + ${version}) }));
    };
    exports.finalize = () => { events().finalized.push(${version}); };`;
}

const one = (tag: number): NDArray => new NDArray('FP32', [1, 1], new Float32Array([tag]));

function send(triton: Triton, tag: number): Tracked<number> {
  return track(triton.infer('m', { IN: one(tag) }).then((out) => (out.OUT.data as Float32Array)[0]));
}

/**
 * Version 1 of the JS model is serving with its instance held on a gate: request 100 executing,
 * 101 and 102 queued behind it. Returns the gate and the three requests.
 */
async function heldOnVersion1(options: Parameters<typeof startRepoTriton>[1]): Promise<{ held: Gate; old: Tracked<number>[] }> {
  repo.config('m', JS_CONFIG);
  repo.write('m/1/model.js', jsVersion(1, true));
  served = await startRepoTriton(repo.root, options);
  const held = gate();
  events.gate = held.promise;
  const old = [100, 101, 102].map((tag) => send(served!.triton, tag));
  await waitFor(() => events.executed.length === 1, 'version 1 to execute request 100');
  expect(served.triton.model('m').stats()).toMatchObject({ pending: 3, queued: 2 });
  return { held, old };
}

test('poll swaps in version 2 while version 1 has a request executing and two queued: those finish on version 1, new ones run on version 2', async () => {
  const { held, old } = await heldOnVersion1({ controlMode: 'poll' });
  const { triton, manager } = served!;
  const v1 = triton.model('m');
  repo.write('m/2/model.js', jsVersion(2, false));
  const polling = track(manager.poll());
  await waitFor(() => triton.model('m').version === 2, 'version 2 to be published');
  // Version 1 is draining: the poll waits for it; its requests are untouched.
  const fresh = [200, 201, 202, 203].map((tag) => send(triton, tag));
  expect(await Promise.all(fresh.map((r) => r.promise))).toEqual([202, 203, 204, 205]);
  expect(old.every((r) => !r.settled)).toBe(true);
  expect(polling.settled).toBe(false);
  expect(events.finalized).toEqual([]);
  held.open();
  expect(await Promise.all(old.map((r) => r.promise))).toEqual([101, 102, 103]);
  await polling.promise;
  expect(events.finalized).toEqual([1]);
  expect(events.executed).toEqual(['v1:100', 'v2:200', 'v2:201', 'v2:202', 'v2:203', 'v1:101', 'v1:102']);
  expect(v1.stats()).toMatchObject({ success: { count: 3 }, fail: { count: 0 } });
  expect(triton.model('m').stats()).toMatchObject({ success: { count: 4 }, fail: { count: 0 } });
  await expectRejects(triton.infer('m', { IN: one(0) }, { modelVersion: 1 }), 'NOT_FOUND');
});

test('explicit load of a new version under traffic: the same guarantees', async () => {
  const { held, old } = await heldOnVersion1({ controlMode: 'explicit', loadModels: ['m'] });
  const { triton } = served!;
  repo.write('m/2/model.js', jsVersion(2, false));
  const loading = track(triton.loadModel('m'));
  await waitFor(() => triton.model('m').version === 2, 'version 2 to be published');
  expect(await send(triton, 7).promise).toBe(9);
  held.open();
  expect(await Promise.all(old.map((r) => r.promise))).toEqual([101, 102, 103]);
  await loading.promise;
  expect(triton.repositoryIndex()).toEqual([{ name: 'm', version: '2', state: 'READY', reason: '' }]);
});

test('a config change of the same version reloads it under traffic: the old load finishes what it holds', async () => {
  const { held, old } = await heldOnVersion1({ controlMode: 'poll' });
  const { triton, manager } = served!;
  const before = triton.model('m');
  // Same version, new config: max_batch_size 4. (A changed model.js at the same path is
  // re-read by Node's loader, which jest's module registry replaces: js-models-node.test.ts.)
  repo.config('m', JS_CONFIG.replace('max_batch_size: 1', 'max_batch_size: 4'));
  const polling = track(manager.poll());
  await waitFor(() => triton.model('m') !== before, 'the reloaded version 1 to be published');
  expect(triton.model('m').config.maxBatchSize).toBe(4);
  expect(await send(triton, 5).promise).toBe(6);
  expect(old.every((r) => !r.settled)).toBe(true);
  expect(polling.settled).toBe(false);
  held.open();
  expect(await Promise.all(old.map((r) => r.promise))).toEqual([101, 102, 103]);
  await polling.promise;
});

test('unload under traffic: the executing and queued requests finish, new ones are NOT_FOUND at once', async () => {
  const { held, old } = await heldOnVersion1({ controlMode: 'explicit', loadModels: ['m'] });
  const { triton } = served!;
  const unloading = track(triton.unloadModel('m'));
  await settleLoop(20);
  await expectRejects(triton.infer('m', { IN: one(1) }), 'NOT_FOUND', "Request for unknown model: 'm' is not found");
  expect(unloading.settled).toBe(false);
  expect(old.every((r) => !r.settled)).toBe(true);
  held.open();
  expect(await Promise.all(old.map((r) => r.promise))).toEqual([101, 102, 103]);
  await unloading.promise;
  expect(events.finalized).toEqual([1]);
});

test('a failed reload under traffic leaves version 1 serving every request', async () => {
  const { held, old } = await heldOnVersion1({ controlMode: 'poll' });
  const { triton, manager } = served!;
  repo.write('m/2/model.js', 'this is not javascript (');
  await manager.poll();
  expect(triton.model('m').version).toBe(1);
  const more = send(triton, 300);
  held.open();
  expect(await Promise.all([...old, more].map((r) => r.promise))).toEqual([101, 102, 103, 301]);
  expect(triton.repositoryIndex()[0]).toMatchObject({ version: '1', state: 'READY', reason: expect.stringMatching(/^reload failed: /) });
});

/**
 * A steady stream of requests to the ONNX model 'm' (`concurrency` in flight), recording for
 * each request the BoundModel it was routed to and the constant it came back with.
 */
class Traffic {
  /**
   * Per request: where it was routed, what came back, and where requests were routed at the
   * moment it was answered (another model or null: it was in flight when the routing changed).
   */
  readonly results: { model: BoundModel | null; value?: number; error?: InferenceServerError; routedAtAnswer?: BoundModel | null }[] = [];
  #running = true;
  #inFlight = new Set<Promise<void>>();
  readonly #input = new NDArray('FP32', [1, 16, 16], new Float32Array(256));

  constructor(private readonly triton: Triton, concurrency: number) {
    for (let i = 0; i < concurrency; i++) this.#next();
  }

  #next(): void {
    if (!this.#running) return;
    const model = this.#routed();  // the same routing infer() does, in the same tick
    const entry: Traffic['results'][number] = { model };
    this.results.push(entry);
    const p = this.triton.infer('m', { INPUT0: this.#input }).then(
      (out) => { entry.value = (out.OUTPUT0.data as Float32Array)[0]; },
      (err: InferenceServerError) => { entry.error = err; },
    ).finally(() => {
      entry.routedAtAnswer = this.#routed();
      this.#inFlight.delete(p);
      // An answer is replaced at once, so `concurrency` requests are in flight at every turn of
      // the event loop; after a refusal (settled in a microtask) the next request waits for a new
      // macrotask, so a loop of refusals cannot starve the timers the test waits with.
      if (entry.error) setImmediate(() => this.#next());
      else this.#next();
    });
    this.#inFlight.add(p);
  }

  #routed(): BoundModel | null {
    try {
      return this.triton.model('m');
    } catch {
      return null;
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('ONNX: three reloads under a steady stream of requests: zero failures, each request answered by the version it was routed to', async () => {
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\ndynamic_batching { }\nparameters { key: "intra_op_thread_count", value: { string_value: "1" } }');
  repo.onnx('m', 1, slowAddModel(1, 16, 24));
  served = await startRepoTriton(repo.root, { controlMode: 'poll' });
  const { triton, manager } = served;
  const constant = new Map<BoundModel, number>([[triton.model('m'), 1]]);
  const traffic = new Traffic(triton, 8);
  const boundaries: number[] = [];
  for (const version of [2, 3, 4]) {
    await waitFor(() => traffic.results.length >= boundaries.length * 40 + 40, 'traffic on the current version', 10000);
    repo.onnx('m', version, slowAddModel(version, 16, 24));
    await manager.poll();
    constant.set(triton.model('m'), version);
    boundaries.push(traffic.results.length);
  }
  await waitFor(() => traffic.results.length >= boundaries[2] + 40, 'traffic on the last version', 10000);
  await traffic.stop();

  const failed = traffic.results.filter((r) => r.error);
  expect(failed.map((r) => r.error!.message)).toEqual([]);
  expect(traffic.results.every((r) => r.value !== undefined)).toBe(true);
  // Each request was answered by exactly the version it was routed to.
  const mismatches = traffic.results.filter((r) => r.value !== constant.get(r.model!));
  expect(mismatches).toEqual([]);
  // Requests sent after a reload resolved never reach an older version.
  boundaries.forEach((start, i) => {
    const later = traffic.results.slice(start);
    expect(later.every((r) => r.value! >= i + 2)).toBe(true);
  });
  // Every version served, and the old versions were retired (only version 4 remains).
  expect(new Set(traffic.results.map((r) => r.value))).toEqual(new Set([1, 2, 3, 4]));
  expect(triton.repositoryIndex()).toEqual([{ name: 'm', version: '4', state: 'READY', reason: '' }]);
  // At each swap, requests routed to the old version were in flight: they were answered (by the
  // old version) when requests were already routed to the new one.
  const straddling = [1, 2, 3].map((version) => traffic.results.filter((r) =>
    r.value === version && r.routedAtAnswer !== r.model).length);
  expect(straddling.map((n) => n > 0)).toEqual([true, true, true]);
});

test('ONNX: unload under a steady stream: requests routed before the unload all succeed, every later one is NOT_FOUND', async () => {
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\ndynamic_batching { }\nparameters { key: "intra_op_thread_count", value: { string_value: "1" } }');
  repo.onnx('m', 1, slowAddModel(1, 16, 24));
  served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['m'] });
  const { triton } = served;
  const traffic = new Traffic(triton, 8);
  await waitFor(() => traffic.results.length >= 40, 'traffic', 10000);
  await triton.unloadModel('m');
  await waitFor(() => traffic.results.filter((r) => r.model === null).length >= 20, 'requests after the unload', 10000);
  await traffic.stop();
  const routed = traffic.results.filter((r) => r.model !== null);
  const after = traffic.results.filter((r) => r.model === null);
  expect(routed.length).toBeGreaterThanOrEqual(40);
  expect(routed.filter((r) => r.error)).toEqual([]);
  expect(routed.every((r) => r.value === 1)).toBe(true);
  expect(after.every((r) => r.error?.code === 'NOT_FOUND')).toBe(true);
  expect(routed.length + after.length).toBe(traffic.results.length);
  // The unload did not cut off the requests in flight when it began: all 8 were answered (by
  // version 1) after the model had left the routing table.
  expect(routed.filter((r) => r.routedAtAnswer === null).length).toBe(8);
});
