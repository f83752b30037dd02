/**
 * The response cache in process (issue 10): hits answer without running the model and are
 * byte-identical to the computed answer (and the caller's own copy), LRU eviction within the
 * byte budget, answers larger than the budget not stored, keys that tell parameters, shapes,
 * datatypes and requested outputs apart, concurrent identical requests, failures not cached,
 * Triton's statistics after a known sequence, the server/model switches, the configuration
 * errors, decoupled and sequence models refused, and a repository ONNX model served from it.
 */
import { InferenceServerError } from '../../ts/errors';
import { responseCacheKey } from '../../ts/cache/key';
import { native } from '../../ts/native';
import { ENTRY_OVERHEAD_BYTES, OUTPUT_OVERHEAD_BYTES } from '../../ts/cache/response-cache';
import type { Request } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import type { Triton } from '../../ts/triton';
import type { ModelConfig, TritonConfig } from '../../ts/config/types';
import { statistics } from '../../ts/server/metadata';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { tritonConfigFromOptions, type ServeOptions } from '../../ts/cli/main';
import { expectRejects, expectThrows, gate, inProcessTriton, waitFor } from './helpers';
import { ensureLib, LIB } from './lib-build';
import { TempRepo, addConstModel, startRepoTriton } from './repository/repo-helpers';

let triton: Triton | undefined;

afterEach(async () => {
  await triton?.stop();
  triton = undefined;
});

/** Requests the callable of `cached` ran, in order (each its IN values). */
let computed: number[][];

/**
 * OUT = IN, RUN = the number of the request in the order the callable saw it: an answer
 * computed again differs from a cached one in RUN.
 */
function stamping(requests: Request[]): Record<string, NDArray>[] {
  return requests.map((r) => {
    const values = Array.from(r.data.IN.data as Float32Array);
    computed.push(values);
    return { OUT: r.data.IN, RUN: new NDArray('INT32', [r.data.IN.rows, 1], new Int32Array(r.data.IN.rows).fill(computed.length)) };
  });
}

const TENSORS = {
  inputs: [{ name: 'IN', dtype: 'FP32' as const, shape: [-1] }],
  outputs: [{ name: 'OUT', dtype: 'FP32' as const, shape: [-1] }, { name: 'RUN', dtype: 'INT32' as const, shape: [1] }],
};

async function serve(tritonConfig: TritonConfig = { cacheConfig: ['local,size=1048576'] }, config: ModelConfig = { responseCache: true }): Promise<Triton> {
  computed = [];
  triton = inProcessTriton(tritonConfig);
  triton.bind({ modelName: 'cached', inferFunc: stamping, ...TENSORS, config: { maxBatchSize: 8, ...config } });
  await triton.run();
  return triton;
}

const f32 = (values: number[], shape = [1, values.length]): NDArray => new NDArray('FP32', shape, Float32Array.from(values));
const bytesOf = (outputs: Record<string, NDArray>): Record<string, Buffer> => Object.fromEntries(
  Object.entries(outputs).map(([name, arr]) => {
    const data = arr.data as Float32Array;
    return [name, Buffer.from(data.buffer, data.byteOffset, data.byteLength)];
  }),
);

/** The model's statistics as the HTTP and gRPC frontends report them. */
function stats(name = 'cached'): Record<string, any> {
  return statistics(triton!, name).model_stats[0];
}

describe('hits and misses', () => {
  test('the second identical request is a hit: the model does not run, the answer is byte-identical, shapes and datatypes too', async () => {
    const t = await serve();
    const first = await t.infer('cached', { IN: f32([1, 2, 3]) });
    const second = await t.infer('cached', { IN: f32([1, 2, 3]) });
    expect(computed).toEqual([[1, 2, 3]]);
    expect(bytesOf(second)).toEqual(bytesOf(first));
    expect(second.OUT.shape).toEqual([1, 3]);
    expect(second.RUN.dtype).toBe('INT32');
    expect(Array.from(second.RUN.data as Int32Array)).toEqual([1]);
    const other = await t.infer('cached', { IN: f32([1, 2, 4]) });
    expect(Array.from(other.RUN.data as Int32Array)).toEqual([2]);
  });

  test('a hit hands out its own arrays: changing one answer does not change the next hit (or the cached entry)', async () => {
    const t = await serve();
    const first = await t.infer('cached', { IN: f32([5, 6]) });
    (first.OUT.data as Float32Array).fill(-1);
    const hit = await t.infer('cached', { IN: f32([5, 6]) });
    expect(Array.from(hit.OUT.data as Float32Array)).toEqual([5, 6]);
    (hit.OUT.data as Float32Array).fill(-2);
    const again = await t.infer('cached', { IN: f32([5, 6]) });
    expect(Array.from(again.OUT.data as Float32Array)).toEqual([5, 6]);
    expect(computed).toHaveLength(1);
  });

  test('changing the input array after infer() returned does not change what is cached', async () => {
    const t = await serve();
    const input = f32([7, 8]);
    const pending = t.infer('cached', { IN: input });
    (input.data as Float32Array).fill(0);
    await pending;
    const hit = await t.infer('cached', { IN: f32([7, 8]) });
    expect(Array.from(hit.OUT.data as Float32Array)).toEqual([7, 8]);
    expect(computed).toEqual([[7, 8]]);
  });

  test('different custom parameters, shape or requested outputs miss; priority and timeout do not change the key', async () => {
    const t = await serve();
    await t.infer('cached', { IN: f32([1, 2, 3, 4]) }, { parameters: { scale: 1 } });
    await t.infer('cached', { IN: f32([1, 2, 3, 4]) }, { parameters: { scale: 2 } });
    await t.infer('cached', { IN: f32([1, 2, 3, 4]) }, { parameters: { scale: '1' } });  // a string is not the number
    await t.infer('cached', { IN: f32([1, 2, 3, 4], [2, 2]) }, { parameters: { scale: 1 } });  // same bytes, other shape
    await t.infer('cached', { IN: f32([1, 2, 3, 4]) }, { parameters: { scale: 1 }, outputs: ['OUT'] });
    expect(computed).toHaveLength(5);
    const hit = await t.infer('cached', { IN: f32([1, 2, 3, 4]) }, { parameters: { scale: 1 }, priority: 0, timeoutMicroseconds: 5_000_000 });
    expect(computed).toHaveLength(5);
    expect(Array.from(hit.RUN.data as Int32Array)).toEqual([1]);
    const picked = await t.infer('cached', { IN: f32([1, 2, 3, 4]) }, { parameters: { scale: 1 }, outputs: ['OUT'] });
    expect(Object.keys(picked)).toEqual(['OUT']);
    expect(computed).toHaveLength(5);
  });

  test('the key tells the datatype apart for the same bytes, and the model name and version', () => {
    const bytes = new Uint8Array(new Float32Array([1, 2]).buffer);
    const key = (dtype: 'FP32' | 'INT32', model = 'm', version = 1): string => responseCacheKey({
      model, version, generation: 1, outputs: null, parameters: {},
      inputs: { IN: new NDArray(dtype, [1, 2], dtype === 'FP32' ? new Float32Array(bytes.buffer) : new Int32Array(bytes.buffer)) },
    });
    expect(key('FP32')).not.toBe(key('INT32'));
    expect(key('FP32')).not.toBe(key('FP32', 'n'));
    expect(key('FP32')).not.toBe(key('FP32', 'm', 2));
    expect(key('FP32')).toBe(key('FP32'));
    expect(key('FP32')).toMatch(/^[0-9a-f]{32}$/);
  });

  test('the key reads each input view in place: only its own bytes count, every byte of a large one', () => {
    const key = (data: Float32Array): string => responseCacheKey({
      model: 'm', version: 1, generation: 1, outputs: null, parameters: {}, inputs: { IN: new NDArray('FP32', [1, data.length], data) },
    });
    const backing = new Float32Array([9, 1, 2, 9]);
    // A view in the middle of a larger buffer is keyed by its two elements, not the buffer's four.
    expect(key(backing.subarray(1, 3))).toBe(key(new Float32Array([1, 2])));
    expect(key(backing.subarray(0, 2))).not.toBe(key(new Float32Array([1, 2])));
    // A large input (every byte hashed): one changed element changes the key.
    const large = new Float32Array(65536).map((_, i) => i);
    const before = key(large);
    large[40000] += 1;
    expect(key(large)).not.toBe(before);
    large[40000] -= 1;
    expect(key(large)).toBe(before);
  });

  test('the key tells apart strings that UTF-8 would fold together (a lone surrogate and U+FFFD)', () => {
    const key = (value: string): string => responseCacheKey({
      model: 'm', version: 1, generation: 1, outputs: null, parameters: { p: value },
      inputs: { IN: new NDArray('FP32', [1, 1], new Float32Array([1])) },
    });
    expect(key('\uD800')).not.toBe(key('\uFFFD'));
    expect(key('\uD800')).toBe(key('\uD800'));
  });

  test('native hash128 refuses a part that is neither a string nor a view, naming it', () => {
    const bad = ['header', 42] as unknown as string[];
    expect(() => native().hash128(bad)).toThrow(/part 1 is neither a string nor an ArrayBufferView/);
    const bytes = new Uint8Array([1, 2, 3, 4]);
    expect(native().hash128([new DataView(bytes.buffer, 1, 2)])).toBe(native().hash128([bytes.subarray(1, 3)]));
    expect(native().hash128(['ab', 'c'])).toBe(native().hash128(['abc']));
  });

  test('BYTES inputs and outputs are cached and answered byte-identically', async () => {
    computed = [];
    triton = inProcessTriton({ cacheConfig: ['local,size=65536'] });
    let runs = 0;
    triton.bind({
      modelName: 'strings', inferFunc: (requests: Request[]) => requests.map((r) => { runs++; return { OUT: r.data.IN }; }),
      inputs: [{ name: 'IN', dtype: 'BYTES', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [-1] }],
      config: { maxBatchSize: 4, responseCache: true },
    });
    await triton.run();
    const input = (): NDArray => new NDArray('BYTES', [1, 2], [Buffer.from('héllo'), Buffer.from('')]);
    const first = await triton.infer('strings', { IN: input() });
    const hit = await triton.infer('strings', { IN: input() });
    expect(runs).toBe(1);
    expect(hit.OUT.data).toEqual(first.OUT.data);
    expect(stats('strings').inference_stats.cache_hit.count).toBe(1);
  });
});

/** The bytes an answer of `values` input values takes in the cache: OUT (FP32) and RUN (one INT32) and the bookkeeping. */
const answerBytes = (values: number): number => ENTRY_OVERHEAD_BYTES + 2 * OUTPUT_OVERHEAD_BYTES + 4 * values + 4;
const budget = (bytes: number): TritonConfig => ({ cacheConfig: [`local,size=${bytes}`] });

describe('the byte budget', () => {
  test('least recently used answers are evicted to fit a new one; a hit makes an answer recent', async () => {
    const t = await serve(budget(2 * answerBytes(2)));  // room for two answers
    const run = async (v: number): Promise<number> => (await t.infer('cached', { IN: f32([v, v]) })).RUN.data[0] as number;
    expect(await run(1)).toBe(1);  // miss: [1]
    expect(await run(2)).toBe(2);  // miss: [1, 2]
    expect(await run(1)).toBe(1);  // hit: [2, 1]
    expect(await run(3)).toBe(3);  // miss, evicts 2: [1, 3]
    expect(await run(1)).toBe(1);  // hit
    expect(await run(3)).toBe(3);  // hit
    expect(await run(2)).toBe(4);  // evicted: computed again
    expect(t.responseCache).toMatchObject({ entryCount: 2, usedBytes: 2 * answerBytes(2), evictions: 2 });
  });

  test('an answer larger than the whole budget is not stored (and counts as a miss, as in Triton)', async () => {
    const t = await serve(budget(answerBytes(3)));
    await t.infer('cached', { IN: f32([1, 2, 3]) });  // fits exactly
    await t.infer('cached', { IN: f32([1, 2, 3, 4]) });  // 4 bytes more than the budget: never stored
    await t.infer('cached', { IN: f32([1, 2, 3, 4]) });
    expect(computed).toEqual([[1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4]]);
    expect(t.responseCache).toMatchObject({ entryCount: 1, usedBytes: answerBytes(3), evictions: 0 });
    await t.infer('cached', { IN: f32([1, 2, 3]) });
    expect(computed).toHaveLength(3);
    expect(stats().inference_stats).toMatchObject({ cache_hit: { count: 1 }, cache_miss: { count: 3 } });
  });

  test('size=0 enables a cache that stores nothing', async () => {
    const t = await serve({ cacheConfig: ['local,size=0'] });
    await t.infer('cached', { IN: f32([1]) });
    await t.infer('cached', { IN: f32([1]) });
    expect(computed).toHaveLength(2);
    expect(stats().inference_stats.cache_miss.count).toBe(2);
  });

  test('one cache is shared by every model of a Triton, and the model name is part of the key', async () => {
    const t = await serve(budget(2 * answerBytes(2)));
    t.bind({ modelName: 'twin', inferFunc: stamping, ...TENSORS, config: { maxBatchSize: 8, responseCache: true } });
    await t.infer('cached', { IN: f32([1, 1]) });
    await t.infer('twin', { IN: f32([1, 1]) });
    expect(computed).toHaveLength(2);
    await t.infer('twin', { IN: f32([2, 2]) });  // evicts cached's answer: the budget is shared
    await t.infer('cached', { IN: f32([1, 1]) });
    expect(computed).toHaveLength(4);
  });
});

describe('concurrency and failures', () => {
  test('identical requests in flight together are both computed; the first answer is cached, the second counts no miss', async () => {
    computed = [];
    const release = gate();
    let executing = 0;
    triton = inProcessTriton({ cacheConfig: ['local,size=65536'] });
    triton.bind({
      modelName: 'cached', ...TENSORS, config: { maxBatchSize: 1, responseCache: true },
      inferFunc: [async (requests: Request[]) => { executing++; await release.promise; return stamping(requests); },
        async (requests: Request[]) => { executing++; await release.promise; return stamping(requests); }],
    });
    await triton.run();
    const a = triton.infer('cached', { IN: f32([9]) });
    const b = triton.infer('cached', { IN: f32([9]) });
    await waitFor(() => executing === 2, 'both requests executing');
    release.open();
    const [ra, rb] = await Promise.all([a, b]);
    expect(computed).toEqual([[9], [9]]);
    expect(bytesOf(ra).OUT).toEqual(bytesOf(rb).OUT);
    const hit = await triton.infer('cached', { IN: f32([9]) });
    expect(computed).toHaveLength(2);
    expect([ra.RUN.data[0], rb.RUN.data[0]]).toContain(hit.RUN.data[0]);
    const s = stats();
    expect(s.inference_count).toBe(2);
    expect(s.inference_stats).toMatchObject({ success: { count: 3 }, cache_hit: { count: 1 }, cache_miss: { count: 1 } });
  });

  test('failed requests are not cached and count no miss', async () => {
    computed = [];
    let fail = true;
    triton = inProcessTriton({ cacheConfig: ['local,size=65536'] });
    triton.bind({
      modelName: 'cached', ...TENSORS, config: { maxBatchSize: 4, responseCache: true },
      inferFunc: (requests: Request[]) => {
        if (fail) throw new Error('not yet');
        return stamping(requests);
      },
    });
    await triton.run();
    await expectRejects(triton.infer('cached', { IN: f32([1]) }), 'INTERNAL', 'not yet');
    expect(stats().inference_stats.cache_miss.count).toBe(0);
    fail = false;
    await triton.infer('cached', { IN: f32([1]) });
    await triton.infer('cached', { IN: f32([1]) });
    expect(computed).toEqual([[1]]);
    expect(stats().inference_stats).toMatchObject({ fail: { count: 1 }, cache_hit: { count: 1 }, cache_miss: { count: 1 } });
  });

  test('a stopped model answers no hits: UNAVAILABLE as without a cache', async () => {
    const t = await serve();
    await t.infer('cached', { IN: f32([1]) });
    await t.stop();
    await expectRejects(t.infer('cached', { IN: f32([1]) }), 'UNAVAILABLE');
  });

  test('a request the model refuses (wrong datatype) is refused as without a cache, and not cached', async () => {
    const t = await serve();
    await expectRejects(t.infer('cached', { IN: new NDArray('INT32', [1, 1], new Int32Array([1])) }), 'INVALID_ARG', 'INT32');
    await expectRejects(t.infer('cached', { IN: new NDArray('INT32', [1, 1], new Int32Array([1])) }), 'INVALID_ARG', 'INT32');
    expect(t.responseCache!.entryCount).toBe(0);
  });
});

describe('statistics', () => {
  test("after miss, hit, hit, miss: Triton's counts (hits are successes, not inferences or executions)", async () => {
    const t = await serve();
    await t.infer('cached', { IN: f32([1, 2], [2, 1]) });  // miss, batch of 2 rows
    await t.infer('cached', { IN: f32([1, 2], [2, 1]) });  // hit
    await t.infer('cached', { IN: f32([1, 2], [2, 1]) });  // hit
    await t.infer('cached', { IN: f32([3]) });  // miss
    const s = stats();
    expect(s.inference_count).toBe(3);
    expect(s.execution_count).toBe(2);
    const is = s.inference_stats;
    expect(is.success.count).toBe(4);
    expect(is.queue.count).toBe(4);
    expect(is.compute_infer.count).toBe(2);
    expect(is.cache_hit.count).toBe(2);
    expect(is.cache_miss.count).toBe(2);
    for (const key of ['cache_hit', 'cache_miss']) expect(is[key].ns).toBeGreaterThan(0);
    // Misses' lookup + insert time is part of the request duration, as Triton adds it.
    expect(is.success.ns).toBeGreaterThanOrEqual(is.cache_miss.ns);
  });

  test('without the cache the figures are zeros', async () => {
    await serve({}, { responseCache: true });
    await triton!.infer('cached', { IN: f32([1]) });
    expect(stats().inference_stats).toMatchObject({ cache_hit: { count: 0, ns: 0 }, cache_miss: { count: 0, ns: 0 } });
  });
});

describe('switches', () => {
  test('a model that does not enable the cache is not cached on a server with one', async () => {
    const t = await serve({ cacheConfig: ['local,size=65536'] }, {});
    await t.infer('cached', { IN: f32([1]) });
    await t.infer('cached', { IN: f32([1]) });
    expect(computed).toHaveLength(2);
  });

  test('a model that enables the cache on a server without one is served uncached, without an error (as Triton)', async () => {
    const t = await serve({}, { responseCache: true });
    await t.infer('cached', { IN: f32([1]) });
    await t.infer('cached', { IN: f32([1]) });
    expect(computed).toHaveLength(2);
    expect(t.responseCache).toBeNull();
  });

  test('responseCacheByteSize (deprecated) is local,size=N; 0 is no cache', async () => {
    let t = await serve({ responseCacheByteSize: 1024 });
    await t.infer('cached', { IN: f32([1]) });
    await t.infer('cached', { IN: f32([1]) });
    expect(computed).toHaveLength(1);
    expect(t.responseCache!.byteSize).toBe(1024);
    await t.stop();
    t = await serve({ responseCacheByteSize: 0 });
    expect(t.responseCache).toBeNull();
  });

  test('bad cache configs are refused when the Triton is made, saying what to write', () => {
    const make = (config: TritonConfig) => () => inProcessTriton(config);
    expectThrows(make({ cacheConfig: ['redis,host=localhost'] }), 'UNSUPPORTED', "cache 'redis' is not supported by infernode: only the 'local' cache is");
    expectThrows(make({ cacheConfig: ['local,max=3'] }), 'INVALID_ARG', "config didn't contain a valid 'size' field");
    expectThrows(make({ cacheConfig: ['local,size=1MB'] }), 'INVALID_ARG', "'size' must be a byte count");
    expectThrows(make({ cacheConfig: ['local'] }), 'INVALID_ARG', 'must look like <cache>,<key>=<value>');
    expectThrows(make({ responseCacheByteSize: -1 }), 'INVALID_ARG', 'responseCacheByteSize must be a non-negative integer');
  });

  test('a decoupled model asking for the cache is refused at bind, naming the model and why', () => {
    triton = inProcessTriton({ cacheConfig: ['local,size=65536'] });
    const err = expectThrows(() => triton!.bind({
      modelName: 'streamer', inferFunc: stamping, ...TENSORS, config: { decoupled: true, responseCache: true },
    }), 'INVALID_ARG', 'Response Cache does not currently support model streamer with \'decoupled\' transaction policy');
    expect(err.message).toContain('Please disable the response cache');
  });
});

describe('repository models', () => {
  let repo: TempRepo;

  beforeEach(() => {
    repo = new TempRepo('cache');
  });

  afterEach(() => repo.cleanup());

  test('response_cache { enable: true } caches an ONNX model: a hit never reaches the engine', async () => {
    repo.onnx('add', 1, addConstModel(1));
    repo.config('add', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\nresponse_cache { enable: true }');
    ({ triton } = await startRepoTriton(repo.root, { config: { cacheConfig: ['local,size=65536'] } }));
    const input = (): NDArray => f32([1, 2, 3, 4]);
    const first = await triton.infer('add', { INPUT0: input() });
    const hit = await triton.infer('add', { INPUT0: input() });
    expect(Array.from(hit.OUTPUT0.data as Float32Array)).toEqual([2, 3, 4, 5]);
    expect(bytesOf(hit)).toEqual(bytesOf(first));
    const s = stats('add');
    expect(s.execution_count).toBe(1);
    expect(s.inference_stats).toMatchObject({ success: { count: 2 }, cache_hit: { count: 1 }, cache_miss: { count: 1 } });
  });

  test('a model loaded again with new files never answers from its earlier load', async () => {
    repo.onnx('add', 1, addConstModel(1));
    repo.config('add', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\nresponse_cache { enable: true }');
    ({ triton } = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['add'], config: { cacheConfig: ['local,size=65536'] } }));
    const out = async (): Promise<number[]> => Array.from((await triton!.infer('add', { INPUT0: f32([1, 2, 3, 4]) })).OUTPUT0.data as Float32Array);
    expect(await out()).toEqual([2, 3, 4, 5]);
    expect(await out()).toEqual([2, 3, 4, 5]);
    repo.onnx('add', 1, addConstModel(10));
    await triton.loadModel('add');
    expect(await out()).toEqual([11, 12, 13, 14]);
    expect(stats('add').inference_stats).toMatchObject({ cache_hit: { count: 0 }, cache_miss: { count: 1 } });
    expect(await out()).toEqual([11, 12, 13, 14]);
    expect(stats('add').inference_stats.cache_hit.count).toBe(1);
  });

  test.each([
    ['decoupled', 'model_transaction_policy { decoupled: true }', "with 'decoupled' transaction policy"],
    ['sequence', 'sequence_batching { }', 'with sequence batching scheduler'],
  ])('a %s model with response_cache is a load error naming the model and why', async (_kind, setting, why) => {
    repo.onnx('m', 1, addConstModel(1));
    repo.config('m', `platform: "onnxruntime_onnx"\nmax_batch_size: 4\nresponse_cache { enable: true }\n${setting}`);
    const served = await startRepoTriton(repo.root, { config: { cacheConfig: ['local,size=65536'] } });
    triton = served.triton;
    const [entry] = triton.repositoryIndex();
    expect(entry).toMatchObject({ name: 'm', state: 'UNAVAILABLE' });
    expect(entry.reason).toContain(`Response Cache does not currently support model m ${why}`);
  });
});

describe('infernode serve', () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(LIB, 'cli', 'main.js'), ...args], { encoding: 'utf8', timeout: 30_000 });

  beforeAll(() => ensureLib(), 120_000);

  test('--help explains --cache-config and --response-cache-byte-size', () => {
    const help = cli('serve', '--help').stdout.replace(/\s+/g, ' ');
    expect(help).toContain('--cache-config <cache,key=value> response cache as tritonserver: local,size=<bytes>');
    expect(help).toContain('--response-cache-byte-size <bytes> deprecated: the same as --cache-config local,size=<bytes>');
  });

  test('the flags become cacheConfig and responseCacheByteSize; a cache other than local fails start-up', () => {
    const config = tritonConfigFromOptions({ cacheConfig: ['local,size=64'], responseCacheByteSize: 32 } as ServeOptions);
    expect(config).toMatchObject({ cacheConfig: ['local,size=64'], responseCacheByteSize: 32 });
    const repo = new TempRepo('cache-cli');
    try {
      const r = cli('serve', '--model-repository', repo.root, '--allow-http=false', '--allow-grpc=false', '--allow-metrics=false',
        '--cache-config', 'redis,host=localhost');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("infernode: cache 'redis' is not supported by infernode: only the 'local' cache is");
    } finally {
      repo.cleanup();
    }
  });
});

test('InferenceServerError is what a refused config throws', () => {
  expect(() => inProcessTriton({ cacheConfig: ['x'] })).toThrow(InferenceServerError);
});

describe('ensembles (top-level cache)', () => {
  test("an ensemble's answer is cached whole: a hit runs no step; statistics count it on the ensemble", async () => {
    computed = [];
    triton = inProcessTriton({ cacheConfig: ['local,size=1048576'] });
    triton.bind({ modelName: 'stamp', inferFunc: stamping, ...TENSORS, config: { maxBatchSize: 8 } });
    triton.bind({
      modelName: 'pipeline', inputs: [{ name: 'X', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'Y', dtype: 'INT32', shape: [1] }],
      config: {
        maxBatchSize: 8, responseCache: true,
        ensembleScheduling: { step: [{ modelName: 'stamp', inputMap: { IN: 'X' }, outputMap: { RUN: 'Y' } }] },
      },
    });
    await triton.run();
    const first = await triton.infer('pipeline', { X: f32([1, 2]) });
    const again = await triton.infer('pipeline', { X: f32([1, 2]) });
    const other = await triton.infer('pipeline', { X: f32([3]) });
    expect(computed).toEqual([[1, 2], [3]]);  // the step ran for the two different requests only
    expect(Array.from(again.Y.data as Int32Array)).toEqual(Array.from(first.Y.data as Int32Array));
    expect(Number(other.Y.data[0])).toBe(2);
    const stats = triton.model('pipeline').stats();
    expect([stats.cacheHit.count, stats.cacheMiss.count, stats.success.count]).toEqual([1, 2, 3]);
    expect(triton.model('stamp').stats().cacheHit.count).toBe(0);
  });

  test('an ensemble with a sequence batcher step cannot enable the cache', () => {
    triton = inProcessTriton({ cacheConfig: ['local,size=1048576'] });
    triton.bind({
      modelName: 'stateful', inferFunc: stamping, ...TENSORS,
      config: { maxBatchSize: 8, sequenceBatcher: {} },
    });
    expectThrows(() => triton!.bind({
      modelName: 'pipeline', inputs: [{ name: 'X', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'Y', dtype: 'INT32', shape: [1] }],
      config: {
        maxBatchSize: 8, responseCache: true,
        ensembleScheduling: { step: [{ modelName: 'stateful', inputMap: { IN: 'X' }, outputMap: { RUN: 'Y' } }] },
      },
    }), 'INVALID_ARG', /response cache cannot be enabled for an ensemble with a sequence batcher step/);
  });
});
