/**
 * Triton's rate limiter through real models (issue 10): bound models whose callables are held
 * open by the test, so what runs at the same time is observed, never timed. Two models sharing
 * a resource of count 1 never overlap; a count of 2 lets both run; priority decides who goes
 * first once both wait; `off` ignores rate_limiter; repository models with rate_limiter in
 * config.pbtxt (limits, the served config, load errors); the CLI flags and the errors of bad
 * values.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import type { ModelConfig, RateLimiterConfig, TritonConfig } from '../../ts/config/types';
import { tritonConfigFromOptions, type ServeOptions } from '../../ts/cli/main';
import type { ResponseSender } from '../../ts/decoupled';
import type { Request } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import type { Triton } from '../../ts/triton';
import { expectThrows, gate, inProcessTriton, waitFor, type Gate } from './helpers';
import { ensureLib, LIB } from './lib-build';
import { TempRepo, addConstModel, startRepoTriton } from './repository/repo-helpers';

/** Which models are executing now, the most that ever ran at once, and the order they started. */
interface Activity {
  running: Set<string>;
  maxTogether: number;
  started: string[];
  /** Executions wait for these, one per start, opened by the test (or all at once). */
  gates: Gate[];
  release: boolean;
}

let activity: Activity;
let triton: Triton | undefined;

beforeEach(() => {
  activity = { running: new Set(), maxTogether: 0, started: [], gates: [], release: false };
});

afterEach(async () => {
  activity.release = true;
  for (const g of activity.gates) g.open();
  await triton?.stop();
  triton = undefined;
});

/** A callable for model `name` that records its execution and holds it until its gate opens. */
function held(name: string) {
  return async (requests: Request[]): Promise<Record<string, NDArray>[]> => {
    activity.running.add(name);
    activity.maxTogether = Math.max(activity.maxTogether, activity.running.size);
    activity.started.push(name);
    const g = gate();
    activity.gates.push(g);
    // Released ones still yield to the event loop, so unlimited executions would overlap.
    await (activity.release ? new Promise<void>((resolve) => setImmediate(resolve)) : g.promise);
    activity.running.delete(name);
    return requests.map((r) => ({ OUT: r.data.IN }));
  };
}

const TENSORS = {
  inputs: [{ name: 'IN', dtype: 'FP32' as const, shape: [1] }],
  outputs: [{ name: 'OUT', dtype: 'FP32' as const, shape: [1] }],
};

function bindHeld(t: Triton, name: string, rateLimiter?: RateLimiterConfig, config: ModelConfig = {}): void {
  t.bind({ modelName: name, inferFunc: held(name), ...TENSORS, config: { maxBatchSize: 4, rateLimiter, ...config } });
}

async function serve(config: TritonConfig, bind: (t: Triton) => void): Promise<Triton> {
  triton = inProcessTriton(config);
  bind(triton);
  await triton.run();
  return triton;
}

const infer = (t: Triton, model: string) => t.infer(model, { IN: new NDArray('FP32', [1, 1], Float32Array.of(1)) });

/** True once `model`'s request left its queue: a batch was formed and asked the rate limiter. */
function waitingForGrant(t: Triton, model: string): () => boolean {
  return () => {
    const s = t.model(model).stats();
    return s.queued === 0 && s.pending === 1;
  };
}

const R1: RateLimiterConfig = { resources: [{ name: 'R', count: 1 }] };

describe('bound models', () => {
  test('two models sharing one resource of count 1 never execute at once', async () => {
    const t = await serve({ rateLimit: 'execution_count' }, (x) => { bindHeld(x, 'a', R1); bindHeld(x, 'b', R1); });
    const a = infer(t, 'a');
    await waitFor(() => activity.running.has('a'), 'a to execute');
    const b = infer(t, 'b');
    await waitFor(waitingForGrant(t, 'b'), "b's batch to wait for R");
    expect(activity.running.has('b')).toBe(false);
    activity.gates[0].open();
    await a;
    await waitFor(() => activity.running.has('b'), 'b to execute once a released R');
    activity.gates[1].open();
    await b;
    // Under traffic: every execution released as soon as it starts, and still never two at once.
    activity.release = true;
    await Promise.all(Array.from({ length: 40 }, (_, i) => infer(t, i % 2 === 0 ? 'a' : 'b')));
    expect(activity.maxTogether).toBe(1);
    expect(t.model('a').stats().success.count + t.model('b').stats().success.count).toBe(42);
  });

  test('a resource of count 2 lets both run at once', async () => {
    const t = await serve({ rateLimit: 'execution_count', rateLimitResource: ['R:2'] },
      (x) => { bindHeld(x, 'a', R1); bindHeld(x, 'b', R1); });
    const done = [infer(t, 'a'), infer(t, 'b')];
    await waitFor(() => activity.running.size === 2, 'a and b to execute together');
    for (const g of activity.gates) g.open();
    await Promise.all(done);
  });

  test('the default count is the largest need: an instance asking for 2 excludes both others', async () => {
    const t = await serve({ rateLimit: 'execution_count' }, (x) => {
      bindHeld(x, 'a', R1);
      bindHeld(x, 'b', R1);
      bindHeld(x, 'big', { resources: [{ name: 'R', count: 2 }] });
    });
    const a = infer(t, 'a');
    const b = infer(t, 'b');
    await waitFor(() => activity.running.size === 2, 'a and b to share R (count 2)');
    const big = infer(t, 'big');
    await waitFor(waitingForGrant(t, 'big'), 'big to wait for both units of R');
    activity.gates[0].open();
    await waitFor(() => activity.running.size === 1, 'one of a, b to finish');
    expect(activity.running.has('big')).toBe(false);
    activity.gates[1].open();
    await waitFor(() => activity.running.has('big'), 'big to execute alone');
    expect(activity.running.size).toBe(1);
    activity.gates[2].open();
    await Promise.all([a, b, big]);
  });

  test('priority decides who goes first when both wait (executions x priority, as Triton)', async () => {
    const t = await serve({ rateLimit: 'execution_count' }, (x) => {
      bindHeld(x, 'holder', R1);
      bindHeld(x, 'p1', { ...R1, priority: 1 });
      bindHeld(x, 'p2', { ...R1, priority: 2 });
    });
    // One execution each: scores p1 = 1 x 1, p2 = 1 x 2.
    activity.release = true;
    await infer(t, 'p1');
    await infer(t, 'p2');
    activity.release = false;
    activity.started = [];
    const holder = infer(t, 'holder');
    await waitFor(() => activity.running.has('holder'), 'holder to take R');
    const p2 = infer(t, 'p2');
    await waitFor(waitingForGrant(t, 'p2'), 'p2 to wait');
    const p1 = infer(t, 'p1');
    await waitFor(waitingForGrant(t, 'p1'), 'p1 to wait');
    activity.release = true;
    for (const g of activity.gates) g.open();
    await Promise.all([holder, p1, p2]);
    expect(activity.started).toEqual(['holder', 'p1', 'p2']);
  });

  test("with rateLimit 'off' (the default) rate_limiter is ignored", async () => {
    const t = await serve({}, (x) => { bindHeld(x, 'a', R1); bindHeld(x, 'b', R1); });
    const done = [infer(t, 'a'), infer(t, 'b')];
    await waitFor(() => activity.running.size === 2, 'a and b to execute together');
    for (const g of activity.gates) g.open();
    await Promise.all(done);
    expect(t.rateLimiter).toBeNull();
  });

  test('the time waiting for the rate limiter is queue time, not compute time', async () => {
    const t = await serve({ rateLimit: 'execution_count' }, (x) => { bindHeld(x, 'a', R1); bindHeld(x, 'b', R1); });
    const a = infer(t, 'a');
    await waitFor(() => activity.running.has('a'), 'a to execute');
    const b = infer(t, 'b');
    await waitFor(waitingForGrant(t, 'b'), 'b to wait');
    const waitStarted = process.hrtime.bigint();
    await waitFor(() => Number(process.hrtime.bigint() - waitStarted) > 20e6, '20 ms to pass');
    activity.gates[0].open();
    await a;
    await waitFor(() => activity.gates.length === 2, 'b to execute');
    activity.gates[1].open();
    await b;
    const s = t.model('b').stats();
    // b waited at least the 20 ms a was held after b's batch asked for R (Triton counts it as queue time).
    expect(s.queue.count).toBe(1);
    expect(s.queue.ns).toBeGreaterThanOrEqual(20e6);
  });

  test("a decoupled model's resources go back when its execution returns, not at its last response", async () => {
    const senders: ResponseSender[] = [];
    const t = await serve({ rateLimit: 'execution_count' }, (x) => {
      x.bind({
        modelName: 'stream', ...TENSORS,
        inferFunc: ((requests: Request[]) => { for (const r of requests) senders.push(r.responseSender!); }) as never,
        config: { maxBatchSize: 4, decoupled: true, rateLimiter: R1 },
      });
      bindHeld(x, 'b', R1);
    });
    const stream = t.inferStream('stream', { IN: new NDArray('FP32', [1, 1], Float32Array.of(1)) });
    const first = stream.next();
    await waitFor(() => senders.length === 1, 'the decoupled execution to return, its request still open');
    const b = infer(t, 'b');
    await waitFor(() => activity.running.has('b'), 'b to execute while the stream is open');
    activity.gates[0].open();
    await b;
    senders[0].send({ OUT: new NDArray('FP32', [1, 1], Float32Array.of(7)) }, { final: true });
    expect(Array.from((await first).value!.OUT.data as Float32Array)).toEqual([7]);
    expect((await stream.next()).done).toBe(true);
  });

  test('bad rate limiter settings are refused with the field and what is expected', () => {
    const t = inProcessTriton({ rateLimit: 'execution_count' });
    triton = t;
    expectThrows(() => bindHeld(t, 'neg', { resources: [{ name: 'R', count: -1 }] }), 'INVALID_ARG',
      "model 'neg': config.rateLimiter.resources[0].count (resource 'R') must be an integer between 0 and 4294967295, got -1");
    expectThrows(() => bindHeld(t, 'noname', { resources: [{ name: '', count: 1 }] }), 'INVALID_ARG',
      "model 'noname': config.rateLimiter.resources[0].name must be a non-empty string");
    expectThrows(() => bindHeld(t, 'prio', { resources: [], priority: 1.5 }), 'INVALID_ARG',
      "model 'prio': config.rateLimiter.priority must be an integer between 0 and 4294967295, got 1.5");
    bindHeld(t, 'dev', R1);
    expectThrows(() => bindHeld(t, 'glob', { resources: [{ name: 'R', count: 1, global: true }] }), 'INVALID_ARG',
      "model 'glob': rate limiter: Resource \"R\" is present as both global and device-specific resource");
    const limited = inProcessTriton({ rateLimit: 'execution_count', rateLimitResource: ['R:1'] });
    try {
      expectThrows(() => bindHeld(limited, 'big', { resources: [{ name: 'R', count: 3 }] }), 'INVALID_ARG',
        "model 'big': rate limiter: Resource count for \"R\" is limited to 1 which will prevent scheduling of one or " +
        'more model instances, the minimum required count is 3');
    } finally {
      void limited.stop();
    }
    expectThrows(() => inProcessTriton({ rateLimit: 'sometimes' as TritonConfig['rateLimit'] }), 'INVALID_ARG',
      "invalid argument for --rate-limit (rateLimit): 'sometimes'; expected 'execution_count' or 'off'");
    expectThrows(() => inProcessTriton({ rateLimit: 'execution_count', rateLimitResource: ['R'] }), 'INVALID_ARG',
      "--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got R");
    expectThrows(() => inProcessTriton({ rateLimit: 'execution_count', rateLimitResource: ['R:x'] }), 'INVALID_ARG',
      "--rate-limit-resource 'R:x': the count must be an integer, got 'x'");
    expectThrows(() => inProcessTriton({ rateLimit: 'execution_count', rateLimitResource: ['R:-2'] }), 'INVALID_ARG',
      "--rate-limit-resource 'R:-2': the count must be between 0 and 4294967295, got -2");
  });
});

// Repository JS models hold their executions on this test's activity through a global.
declare global {
  var __rateLimiterHeld: ((name: string) => (requests: Request[]) => Promise<Record<string, NDArray>[]>) | undefined;
}

const HELD_MODEL = `
exports.execute = (requests, context) => globalThis.__rateLimiterHeld(context.modelConfig.name)(requests);`;

function heldRepoModel(repo: TempRepo, name: string, rateLimiter: string): void {
  repo.config(name, `backend: "js"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU ${rateLimiter} } ]
`);
  repo.write(`${name}/1/model.js`, HELD_MODEL);
}

describe('repository models', () => {
  let repo: TempRepo;
  beforeEach(() => {
    repo = new TempRepo('rate-limiter');
    globalThis.__rateLimiterHeld = held;
  });
  afterEach(() => {
    repo.cleanup();
    delete globalThis.__rateLimiterHeld;
  });

  test('rate_limiter in config.pbtxt: models sharing a global resource take turns; the config prints it back', async () => {
    const limiter = 'rate_limiter { resources [ { name: "GPU_MEM" global: true count: 4 } ] priority: 2 }';
    heldRepoModel(repo, 'x', limiter);
    heldRepoModel(repo, 'y', limiter);
    const served = await startRepoTriton(repo.root, { config: { rateLimit: 'execution_count' } });
    triton = served.triton;
    const t = served.triton;
    const x = infer(t, 'x');
    await waitFor(() => activity.running.has('x'), 'x to execute');
    const y = infer(t, 'y');
    await waitFor(waitingForGrant(t, 'y'), 'y to wait for GPU_MEM');
    expect(activity.running.has('y')).toBe(false);
    activity.gates[0].open();
    await x;
    await waitFor(() => activity.running.has('y'), 'y to execute');
    activity.gates[1].open();
    await y;
    expect(activity.maxTogether).toBe(1);
    expect(t.rateLimiter?.available()).toEqual([[-2, 'GPU_MEM', 4]]);
    expect(t.model('x').config.instanceGroup[0].rateLimiter).toEqual({
      resources: [{ name: 'GPU_MEM', global: true, count: 4 }], priority: 2,
    });
  });

  test('unloading a model whose batch waits for a resource: the unload finishes, the waiting request is answered, nothing stays held', async () => {
    const limiter = 'rate_limiter { resources [ { name: "R" global: true count: 1 } ] }';
    heldRepoModel(repo, 'x', limiter);
    heldRepoModel(repo, 'y', limiter);
    const served = await startRepoTriton(repo.root, { config: { rateLimit: 'execution_count' }, controlMode: 'explicit', loadModels: ['x', 'y'] });
    triton = served.triton;
    const t = served.triton;
    const x = infer(t, 'x');
    await waitFor(() => activity.running.has('x'), 'x to execute');
    const y = infer(t, 'y').then(() => 'ok', (e: Error) => e.message);
    await waitFor(waitingForGrant(t, 'y'), 'y to wait for R');
    const unloaded = t.unloadModel('y');
    activity.release = true;  // y's batch, if granted, runs through
    activity.gates[0].open();
    await x;
    await unloaded;
    let timer: NodeJS.Timeout | undefined;
    const answer = await Promise.race([y, new Promise((r) => { timer = setTimeout(() => r('hang'), 5000); })]);
    clearTimeout(timer);
    expect(answer).toBe('ok');  // its batch was granted once x released R and ran before the unload ended
    await infer(t, 'x');
    await infer(t, 'x');
    expect(t.rateLimiter?.available()).toEqual([[-2, 'R', 1]]);
  });

  test('ONNX models sharing a resource: grants cross from ONNX Runtime threads to the other model', async () => {
    for (const name of ['add1', 'add2']) {
      repo.config(name, `platform: "onnxruntime_onnx"
max_batch_size: 8
instance_group [ { count: 2 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 1 } ] } } ]
`);
      repo.onnx(name, 1, addConstModel(name === 'add1' ? 1 : 2));
    }
    const served = await startRepoTriton(repo.root, { config: { rateLimit: 'execution_count' } });
    triton = served.triton;
    const t = served.triton;
    const input = { INPUT0: new NDArray('FP32', [1, 4], Float32Array.of(0, 1, 2, 3)) };
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => t.infer(i % 2 === 0 ? 'add1' : 'add2', input)));
    results.forEach((out, i) => expect(Array.from(out.OUTPUT0.data as Float32Array)).toEqual([0, 1, 2, 3].map((v) => v + 1 + (i % 2))));
    expect(t.model('add1').stats().success.count).toBe(100);
    expect(t.model('add2').stats().success.count).toBe(100);
  });

  test('a model whose need exceeds --rate-limit-resource fails to load with the reason', async () => {
    heldRepoModel(repo, 'big', 'rate_limiter { resources [ { name: "R" count: 2 } ] }');
    heldRepoModel(repo, 'bad', 'rate_limiter { resources [ { name: "" count: 1 } ] }');
    const served = await startRepoTriton(repo.root, { config: { rateLimit: 'execution_count', rateLimitResource: ['R:1'] } });
    triton = served.triton;
    const index = served.manager.index();
    const reason = (name: string) => index.find((e) => e.name === name)?.reason ?? '';
    expect(reason('big')).toContain("model 'big': rate limiter: Resource count for \"R\" is limited to 1");
    expect(reason('bad')).toContain("model 'bad': instance_group 'bad_0' rate_limiter.resources[0].name must be a non-empty string");
  });
});

describe('infernode serve', () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(LIB, 'cli', 'main.js'), ...args], { encoding: 'utf8', timeout: 30_000 });

  beforeAll(() => ensureLib(), 120_000);

  test('--help explains --rate-limit and --rate-limit-resource', () => {
    const help = cli('serve', '--help').stdout.replace(/\s+/g, ' ');
    expect(help).toContain('--rate-limit <mode> rate limiting as tritonserver: off (default');
    expect(help).toContain('--rate-limit-resource <name:count[:device]> how many of a rate limiter resource exist');
  });

  test('the flags become rateLimit and rateLimitResource; a bad value fails start-up with tritonserver\'s message', () => {
    const config = tritonConfigFromOptions({ rateLimit: 'execution_count', rateLimitResource: ['R:2', 'S:1:0'] } as ServeOptions);
    expect(config).toMatchObject({ rateLimit: 'execution_count', rateLimitResource: ['R:2', 'S:1:0'] });
    const repo = new TempRepo('rate-limit-cli');
    try {
      const base = ['serve', '--model-repository', repo.root, '--allow-http=false', '--allow-grpc=false', '--allow-metrics=false'];
      let r = cli(...base, '--rate-limit', 'sometimes');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("invalid argument for --rate-limit (rateLimit): 'sometimes'");
      r = cli(...base, '--rate-limit', 'EXECUTION_COUNT', '--rate-limit-resource', 'R:1:2:3');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got R:1:2:3");
    } finally {
      repo.cleanup();
    }
  });
});
