/**
 * bind() and the inference-callable contract (pytriton-api.md §2–5), seen from outside through
 * `new Triton()`, `bind()` and `infer()` with the real native batcher.
 */
import { getEventListeners } from 'node:events';
import { Triton } from '../../ts/triton';
import { InferenceServerError } from '../../ts/errors';
import type { Tensor } from '../../ts/config/types';
import type { Request, ResponseOutputs, TritonContext } from '../../ts/request';
import { NDArray } from '../../ts/tensor';
import {
  Recorder, expectRejects, expectThrows, fp32, gate, settleLoop, tagOf, track, waitFor, inProcessTriton,
} from './helpers';

let triton: Triton;

beforeEach(() => {
  triton = inProcessTriton();
});

afterEach(async () => {
  await triton.stop();
});

const IN: Tensor = { name: 'IN', dtype: 'FP32', shape: [1] };
const OUT: Tensor = { name: 'OUT', dtype: 'FP32', shape: [1] };
const identity = (requests: Request[]): ResponseOutputs[] => requests.map((r) => ({ OUT: r.data.IN }));

describe('bind validation', () => {
  test('an invalid model name is refused with INVALID_ARG', () => {
    for (const modelName of ['bad name', 'a/b', '', 'ünïcode']) {
      expectThrows(() => triton.bind({ modelName, inferFunc: identity, inputs: [IN], outputs: [OUT] }), 'INVALID_ARG', 'invalid model name');
    }
    expect(triton.models()).toHaveLength(0);
  });

  test('maxBatchSize 0 with batching on is refused with INVALID_ARG; with batching off it is the default', () => {
    expectThrows(
      () => triton.bind({ modelName: 'm', inferFunc: identity, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 0 } }),
      'INVALID_ARG', 'maxBatchSize');
    triton.bind({ modelName: 'm', inferFunc: identity, inputs: [IN], outputs: [OUT], config: { batching: false } });
    expect(triton.model('m').config.maxBatchSize).toBe(0);
    expect(triton.model('m').config.dynamicBatching).toBeNull();
  });

  test('binding the same name and version twice (names compared case-insensitively) is refused with ALREADY_EXISTS', () => {
    triton.bind({ modelName: 'Model', inferFunc: identity, inputs: [IN], outputs: [OUT] });
    expectThrows(() => triton.bind({ modelName: 'Model', inferFunc: identity, inputs: [IN], outputs: [OUT] }), 'ALREADY_EXISTS', "'Model'");
    expectThrows(() => triton.bind({ modelName: 'model', inferFunc: identity, inputs: [IN], outputs: [OUT] }), 'ALREADY_EXISTS');
    expectThrows(() => triton.bind({ modelName: 'MODEL', modelVersion: 1, inferFunc: identity, inputs: [IN], outputs: [OUT] }), 'ALREADY_EXISTS');
    // Another version of the same model is fine.
    triton.bind({ modelName: 'model', modelVersion: 2, inferFunc: identity, inputs: [IN], outputs: [OUT] });
    expect(triton.models().map((m) => [m.name, m.version])).toEqual([['Model', 1], ['model', 2]]);
  });

  test('priority levels out of range are refused with INVALID_ARG', () => {
    const bind = (batcher: object): void => triton.bind({
      modelName: 'p', inferFunc: identity, inputs: [IN], outputs: [OUT], config: { batcher },
    });
    expectThrows(() => bind({ priorityLevels: 2, defaultPriorityLevel: 3 }), 'INVALID_ARG', 'defaultPriorityLevel');
    expectThrows(() => bind({ priorityLevels: 2 }), 'INVALID_ARG', 'defaultPriorityLevel');
    expectThrows(() => bind({ priorityLevels: 2, defaultPriorityLevel: 1, priorityQueuePolicy: { 3: { maxQueueSize: 1 } } }),
      'INVALID_ARG', 'priorityQueuePolicy');
    expectThrows(() => bind({ priorityQueuePolicy: { 1: { maxQueueSize: 1 } } }), 'INVALID_ARG', 'priorityQueuePolicy');
    expect(triton.models()).toHaveLength(0);
    bind({ priorityLevels: 2, defaultPriorityLevel: 2, priorityQueuePolicy: { 1: { maxQueueSize: 1 } } });
  });

  test('an optional output is refused with INVALID_ARG', () => {
    expectThrows(() => triton.bind({
      modelName: 'o', inferFunc: identity, inputs: [IN], outputs: [{ ...OUT, optional: true }],
    }), 'INVALID_ARG', "output 'OUT' cannot be optional");
  });

  test('inferFunc must be a function or a non-empty list of functions', () => {
    expectThrows(() => triton.bind({ modelName: 'f', inferFunc: [], inputs: [IN], outputs: [OUT] }), 'INVALID_ARG', 'inferFunc');
    expectThrows(() => triton.bind({ modelName: 'f', inferFunc: 42 as never, inputs: [IN], outputs: [OUT] }), 'INVALID_ARG', 'inferFunc');
  });

  test('unnamed tensors are named INPUT_1.. and OUTPUT_1..', async () => {
    triton.bind({
      modelName: 'unnamed',
      inferFunc: (requests: Request[]) => requests.map((r) => ({
        OUTPUT_1: r.data.INPUT_1, OUTPUT_2: r.data.INPUT_2,
      })),
      inputs: [{ dtype: 'FP32', shape: [1] }, { dtype: 'INT32', shape: [1] }],
      outputs: [{ dtype: 'FP32', shape: [1] }, { dtype: 'INT32', shape: [1] }],
    });
    await triton.run();
    const config = triton.model('unnamed').config;
    expect(config.inputs.map((t) => t.name)).toEqual(['INPUT_1', 'INPUT_2']);
    expect(config.outputs.map((t) => t.name)).toEqual(['OUTPUT_1', 'OUTPUT_2']);
    const out = await triton.infer('unnamed', {
      INPUT_1: fp32(1.5), INPUT_2: new NDArray('INT32', [1, 1], new Int32Array([7])),
    });
    expect(Object.keys(out).sort()).toEqual(['OUTPUT_1', 'OUTPUT_2']);
    expect(out.OUTPUT_1.data[0]).toBe(1.5);
    expect(out.OUTPUT_2.data[0]).toBe(7);
  });
});

describe('instances and callables', () => {
  test('a list of inferFuncs binds that many instances, and they execute concurrently', async () => {
    const rec = new Recorder();
    const holds = [rec.hold(), rec.hold()];
    triton.bind({ modelName: 'pair', inferFunc: [rec.func, rec.func], inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
    await triton.run();
    expect(triton.model('pair').config.instanceGroup).toEqual([{ count: 2, kind: 'KIND_CPU' }]);
    const a = track(triton.infer('pair', { IN: fp32(1) }));
    const b = track(triton.infer('pair', { IN: fp32(2) }));
    // Both are inside their callables at the same time, one per instance.
    await waitFor(() => rec.active === 2, 'both instances to execute');
    expect(rec.calls.map((c) => [c.instance, c.tags[0]])).toEqual([[0, 1], [1, 2]]);
    expect(a.settled || b.settled).toBe(false);
    holds[1].open();
    expect(tagOf(await b.promise)).toBe(2);
    expect(a.settled).toBe(false);
    holds[0].open();
    expect(tagOf(await a.promise)).toBe(1);
  });

  test('each instance runs its own callable', async () => {
    const f0 = (rs: Request[]): ResponseOutputs[] => rs.map(() => ({ OUT: new Float32Array([100]) }));
    const f1 = (rs: Request[]): ResponseOutputs[] => rs.map(() => ({ OUT: new Float32Array([200]) }));
    const release = gate();
    const slow = async (rs: Request[]): Promise<ResponseOutputs[]> => {
      await release.promise;
      return f0(rs);
    };
    triton.bind({ modelName: 'two', inferFunc: [slow, f1], inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
    await triton.run();
    const first = triton.infer('two', { IN: fp32(0) });
    const second = await triton.infer('two', { IN: fp32(0) });  // instance 0 is busy: instance 1
    expect(second.OUT.data[0]).toBe(200);
    release.open();
    expect((await first).OUT.data[0]).toBe(100);
  });

  test('synchronous and asynchronous callables both serve requests', async () => {
    triton.bind({ modelName: 'sync', inferFunc: identity, inputs: [IN], outputs: [OUT] });
    triton.bind({
      modelName: 'async',
      inferFunc: async (requests: Request[]) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return requests.map((r) => ({ OUT: new Float32Array(r.data.IN.data as Float32Array).map((v) => -v) }));
      },
      inputs: [IN],
      outputs: [OUT],
    });
    await triton.run();
    const sync = await Promise.all([1, 2, 3].map((v) => triton.infer('sync', { IN: fp32(v) }).then(tagOf)));
    const asyncResults = await Promise.all([1, 2, 3].map((v) => triton.infer('async', { IN: fp32(v) }).then(tagOf)));
    expect(sync).toEqual([1, 2, 3]);
    expect(asyncResults).toEqual([-1, -2, -3]);
  });
});

describe('callable errors', () => {
  test('an error thrown by the callable fails only that batch\'s requests, with its message; other batches succeed', async () => {
    const release = gate();
    const batches: number[][] = [];
    triton.bind({
      modelName: 'faulty',
      inputs: [IN],
      outputs: [OUT],
      config: { maxBatchSize: 2 },
      inferFunc: async (requests: Request[]) => {
        const tags = requests.map((r) => Number(r.data.IN.data[0]));
        batches.push(tags);
        if (tags[0] === 0) await release.promise;
        const bad = tags.find((t) => t < 0);
        if (bad !== undefined) throw new Error(`negative tag ${bad}`);
        return identity(requests);
      },
    });
    await triton.run();
    const blocker = triton.infer('faulty', { IN: fp32(0) }).then(tagOf);
    await waitFor(() => batches.length === 1, 'the first batch');
    const inBadBatch = [triton.infer('faulty', { IN: fp32(1) }), triton.infer('faulty', { IN: fp32(-2) })];
    const inGoodBatch = [3, 4].map((v) => triton.infer('faulty', { IN: fp32(v) }).then(tagOf));
    await settleLoop();
    release.open();
    for (const p of inBadBatch) await expectRejects(p, 'INTERNAL', 'negative tag -2');
    expect(await Promise.all([blocker, ...inGoodBatch])).toEqual([0, 3, 4]);
    expect(batches).toEqual([[0], [1, -2], [3, 4]]);
    // The model keeps serving.
    expect(tagOf(await triton.infer('faulty', { IN: fp32(5) }))).toBe(5);
  });

  test('a synchronous throw, a rejection with a non-Error, and a thrown InferenceServerError reach the client', async () => {
    triton.bind({
      modelName: 'throws',
      inputs: [IN],
      outputs: [OUT],
      config: { maxBatchSize: 1 },
      inferFunc: (requests: Request[]) => {
        const mode = requests[0].parameters.mode;
        if (mode === 'sync') throw new Error('sync failure');
        if (mode === 'reject') return Promise.reject('plain string reason');
        if (mode === 'typed') throw new InferenceServerError('INVALID_ARG', 'the callable refuses this input');
        return identity(requests);
      },
    });
    await triton.run();
    await expectRejects(triton.infer('throws', { IN: fp32(1) }, { parameters: { mode: 'sync' } }), 'INTERNAL', 'sync failure');
    await expectRejects(triton.infer('throws', { IN: fp32(1) }, { parameters: { mode: 'reject' } }), 'INTERNAL', 'plain string reason');
    await expectRejects(triton.infer('throws', { IN: fp32(1) }, { parameters: { mode: 'typed' } }), 'INVALID_ARG', 'the callable refuses this input');
    expect(tagOf(await triton.infer('throws', { IN: fp32(4) }))).toBe(4);
  });

  test('a callable returning the wrong number of results or non-objects fails the request', async () => {
    const results: Record<string, (requests: Request[]) => unknown> = {
      fewer: () => [],
      more: (rs) => [...identity(rs), ...identity(rs)],
      number: () => 42,
      nullEntry: (rs) => rs.map(() => null),
      stringEntry: (rs) => rs.map(() => 'OUT'),
      badValue: (rs) => rs.map(() => ({ OUT: [1, 2, 3] })),
    };
    triton.bind({
      modelName: 'broken',
      inputs: [IN],
      outputs: [OUT],
      inferFunc: (requests: Request[]) => results[String(requests[0].parameters.mode)](requests) as ResponseOutputs[],
      config: { maxBatchSize: 1 },
    });
    await triton.run();
    const run = (mode: string): Promise<unknown> => triton.infer('broken', { IN: fp32(1) }, { parameters: { mode } });
    await expectRejects(run('fewer'), 'INTERNAL', 'one outputs object per request');
    await expectRejects(run('more'), 'INTERNAL', 'one outputs object per request');
    await expectRejects(run('number'), 'INTERNAL', 'one outputs object per request');
    await expectRejects(run('nullEntry'), 'INTERNAL', 'must be an object');
    await expectRejects(run('stringEntry'), 'INTERNAL', 'must be an object');
    await expectRejects(run('badValue'), 'INTERNAL', "output 'OUT' must be an NDArray or a TypedArray");
  });
});

describe('output validation', () => {
  function bindOutputs(modelName: string, strict: boolean): void {
    triton.bind({
      modelName,
      strict,
      inputs: [IN],
      outputs: [{ name: 'OUT', dtype: 'FP32', shape: [2] }],
      config: { maxBatchSize: 1 },
      inferFunc: (requests: Request[]): ResponseOutputs[] => requests.map((r): ResponseOutputs => {
        switch (r.parameters.mode) {
          case 'undeclared': return { OUT: new Float32Array([1, 2]), EXTRA: new Float32Array([3]) };
          case 'dtype': return { OUT: new Float64Array([1, 2]) };
          case 'shape': return { OUT: new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3])) };
          default: return { OUT: new Float32Array([1, 2]) };
        }
      }),
    });
  }

  test('strict: true rejects undeclared output names, wrong dtypes and wrong shapes', async () => {
    bindOutputs('strict', true);
    await triton.run();
    const run = (mode: string): Promise<Record<string, NDArray>> => triton.infer('strict', { IN: fp32(1) }, { parameters: { mode } });
    await expectRejects(run('undeclared'), 'INTERNAL', "output 'EXTRA' is not declared");
    await expectRejects(run('dtype'), 'INTERNAL', "output 'OUT' has datatype FP64, declared FP32");
    await expectRejects(run('shape'), 'INTERNAL', "output 'OUT' has shape [1,3]");
    const ok = await run('ok');
    expect(ok.OUT.shape).toEqual([1, 2]);
    expect(Array.from(ok.OUT.data as Float32Array)).toEqual([1, 2]);
  });

  test('non-strict casts a Float64Array output to the declared FP32', async () => {
    bindOutputs('lenient', false);
    await triton.run();
    const out = await triton.infer('lenient', { IN: fp32(1) }, { parameters: { mode: 'dtype' } });
    expect(out.OUT.dtype).toBe('FP32');
    expect(out.OUT.data).toBeInstanceOf(Float32Array);
    expect(out.OUT.shape).toEqual([1, 2]);
    expect(Array.from(out.OUT.data as Float32Array)).toEqual([1, 2]);
  });

  test('requested outputs filter the response (and reach Request.requestedOutputNames); an unknown one is INVALID_ARG', async () => {
    const requested: (string[] | null)[] = [];
    triton.bind({
      modelName: 'multi',
      inputs: [IN],
      outputs: [{ name: 'A', dtype: 'FP32', shape: [1] }, { name: 'B', dtype: 'FP32', shape: [1] }],
      inferFunc: (requests: Request[]) => requests.map((r) => {
        requested.push(r.requestedOutputNames);
        return { A: new Float32Array([1]), B: new Float32Array([2]) };
      }),
    });
    await triton.run();
    const all = await triton.infer('multi', { IN: fp32(0) });
    expect(Object.keys(all).sort()).toEqual(['A', 'B']);
    const onlyB = await triton.infer('multi', { IN: fp32(0) }, { outputs: ['B'] });
    expect(Object.keys(onlyB)).toEqual(['B']);
    expect(onlyB.B.data[0]).toBe(2);
    expect(requested).toEqual([null, ['B']]);
    await expectRejects(triton.infer('multi', { IN: fp32(0) }, { outputs: ['C'] }), 'INVALID_ARG', "unexpected inference output 'C'");
    expect(requested).toHaveLength(2);
  });
});

describe('requests', () => {
  test('request parameters reach Request.parameters', async () => {
    const seen: unknown[] = [];
    triton.bind({
      modelName: 'params',
      inputs: [IN],
      outputs: [OUT],
      inferFunc: (requests: Request[]) => {
        for (const r of requests) seen.push(r.parameters);
        return identity(requests);
      },
    });
    await triton.run();
    await triton.infer('params', { IN: fp32(1) }, { parameters: { text: 'hi', n: 3, flag: true } });
    await triton.infer('params', { IN: fp32(1) });
    expect(seen).toEqual([{ text: 'hi', n: 3, flag: true }, {}]);
  });

  test('an unknown model or version is NOT_FOUND; without a version the latest one serves', async () => {
    const constant = (value: number) => (rs: Request[]): ResponseOutputs[] => rs.map(() => ({ OUT: new Float32Array([value]) }));
    triton.bind({ modelName: 'versioned', modelVersion: 1, inferFunc: constant(1), inputs: [IN], outputs: [OUT] });
    triton.bind({ modelName: 'versioned', modelVersion: 3, inferFunc: constant(3), inputs: [IN], outputs: [OUT] });
    await triton.run();
    const err = await expectRejects(triton.infer('nope', { IN: fp32(0) }), 'NOT_FOUND', "'nope'");
    expect(err.httpStatus).toBe(404);
    await expectRejects(triton.infer('versioned', { IN: fp32(0) }, { modelVersion: 2 }), 'NOT_FOUND', 'version 2');
    expect(tagOf(await triton.infer('versioned', { IN: fp32(0) }))).toBe(3);
    expect(tagOf(await triton.infer('versioned', { IN: fp32(0) }, { modelVersion: 1 }))).toBe(1);
  });

  test('input validation: unknown input, missing input, wrong dtype, wrong shape, wrong array kind are INVALID_ARG', async () => {
    const rec = new Recorder();
    triton.bind({
      modelName: 'checked',
      inferFunc: rec.func,
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [2] }, { name: 'AUX', dtype: 'INT32', shape: [1] }],
      outputs: [{ name: 'OUT', dtype: 'FP32', shape: [2] }],
    });
    await triton.run();
    const aux = new NDArray('INT32', [1, 1], new Int32Array([1]));
    const good = new NDArray('FP32', [1, 2], new Float32Array([1, 2]));
    await expectRejects(triton.infer('checked', { IN: good, AUX: aux, NOPE: good }), 'INVALID_ARG', "unexpected inference input 'NOPE'");
    await expectRejects(triton.infer('checked', { IN: good }), 'INVALID_ARG',
      "expected 2 inputs but got 1 inputs for model 'checked'. Got input(s) ['IN'], but missing required input(s) ['AUX']. Please provide all required input(s).");
    await expectRejects(triton.infer('checked', { IN: new NDArray('FP64', [1, 2], new Float64Array(2)), AUX: aux }),
      'INVALID_ARG', 'unexpected datatype FP64');
    await expectRejects(triton.infer('checked', { IN: new NDArray('FP32', [1, 3], new Float32Array(3)), AUX: aux }),
      'INVALID_ARG', 'unexpected shape');
    // Declared FP32, but the data is a Uint8Array: refused before its bytes are counted.
    await expectRejects(triton.infer('checked', { IN: { data: new Uint8Array(2), shape: [1, 2], dtype: 'FP32' }, AUX: aux }),
      'INVALID_ARG', 'FP32 data must be a Float32Array, got Uint8Array');
    await expectRejects(triton.infer('checked', { IN: new NDArray('FP32', [2, 2], new Float32Array(4)), AUX: aux }),
      'INVALID_ARG', 'batch size');
    expect(rec.calls).toHaveLength(0);
    const out = await triton.infer('checked', { IN: good, AUX: aux });
    expect(Array.from(out.OUT.data as Float32Array)).toEqual([1, 2]);
  });

  test('BYTES inputs round trip through an identity model, one request or several batched', async () => {
    const release = gate();
    const batchLengths: number[] = [];
    triton.bind({
      modelName: 'strings',
      inferFunc: async (requests: Request[]) => {
        batchLengths.push(requests.length);
        if (batchLengths.length === 1) await release.promise;
        return requests.map((r) => ({ OUT: r.data.IN }));
      },
      inputs: [{ name: 'IN', dtype: 'BYTES', shape: [-1] }],
      outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [-1] }],
      config: { maxBatchSize: 4 },
    });
    await triton.run();
    const values = [
      ['hello', '', 'w\u00f6rld'],
      ['a\u0000b', 'x'.repeat(1000), ''],
      ['zw\u00f6lf', 'dreizehn'],
      ['', ''],
    ];
    const replies = values.map((v) => triton.infer('strings', { IN: { data: v, shape: [1, v.length] } }));
    const binary = Buffer.from([0, 255, 1, 254, 0]);
    const binaryReply = triton.infer('strings', { IN: new NDArray('BYTES', [1, 1], [binary]) });
    await waitFor(() => batchLengths.length === 1, 'the first request to execute');
    await settleLoop();
    release.open();
    const outputs = await Promise.all(replies);
    outputs.forEach((out, i) => {
      expect(out.OUT.dtype).toBe('BYTES');
      expect(out.OUT.shape).toEqual([1, values[i].length]);
      expect((out.OUT.data as Uint8Array[]).map((b) => Buffer.from(b).toString())).toEqual(values[i]);
    });
    const bin = await binaryReply;
    expect(bin.OUT.shape).toEqual([1, 1]);
    expect(Buffer.from((bin.OUT.data as Uint8Array[])[0]).equals(binary)).toBe(true);
    // Requests of the same shape queued together were batched: [3,3] (held), [2,2], [1].
    expect(batchLengths).toEqual([2, 2, 1]);
  });
});

describe('warm-up and cancellation', () => {
  test('modelWarmup runs the callable on every instance before run() resolves', async () => {
    const calls: { instance: number; shape: number[]; zeros: boolean }[] = [];
    const func = async (requests: Request[], context: TritonContext): Promise<ResponseOutputs[]> => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const input = requests[0].data.IN;
      calls.push({ instance: context.instanceIndex, shape: [...input.shape], zeros: Array.from(input.data as Float32Array).every((v) => v === 0) });
      return identity(requests);
    };
    triton.bind({
      modelName: 'warm',
      inferFunc: [func, func],
      inputs: [IN],
      outputs: [OUT],
      config: {
        modelWarmup: [{ name: 'zeros', batchSize: 3, count: 2, inputs: { IN: { dtype: 'FP32', shape: [1], zeroData: true } } }],
      },
    });
    const running = triton.run();
    expect(calls).toHaveLength(0);
    await running;
    expect(calls).toEqual([
      { instance: 0, shape: [3, 1], zeros: true },
      { instance: 0, shape: [3, 1], zeros: true },
      { instance: 1, shape: [3, 1], zeros: true },
      { instance: 1, shape: [3, 1], zeros: true },
    ]);
    expect(triton.isConnected()).toBe(true);
  });

  test('a failing warm-up makes run() reject with the model, the sample and the reason, as a failed load', async () => {
    const func = (requests: Request[]): ResponseOutputs[] => {
      if ((requests[0].data.IN.data as Float32Array)[0] === 0) throw new Error('zeros are not allowed');
      return identity(requests);
    };
    triton.bind({
      modelName: 'cold', inferFunc: func, inputs: [IN], outputs: [OUT],
      config: { modelWarmup: [{ name: 'zeros', batchSize: 1, count: 1, inputs: { IN: { dtype: 'FP32', shape: [1], zeroData: true } } }] },
    });
    const err = await expectRejects(triton.run(), 'INVALID_ARG');
    expect(err.message).toBe("model 'cold' version 1: failed to run warmup sample 'zeros': zeros are not allowed;");
    expect(triton.isReady()).toBe(false);
  });

  test('warm-up requests go through the scheduler: they are counted in the model statistics', async () => {
    triton.bind({
      modelName: 'counted', inferFunc: [identity, identity], inputs: [IN], outputs: [OUT],
      config: { modelWarmup: [{ name: 'w', batchSize: 2, count: 3, inputs: { IN: { dtype: 'FP32', shape: [1], randomData: true } } }] },
    });
    await triton.run();
    const stats = triton.model('counted').stats();
    expect(stats.executionCount).toBe(6);  // 3 per instance
    expect(stats.inferenceCount).toBe(12);
  });

  test('an AbortSignal cancels a queued request with CANCELLED; the callable never sees it', async () => {
    const rec = new Recorder();
    triton.bind({ modelName: 'cancel', inferFunc: rec.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
    await triton.run();
    const release = rec.hold();
    const blocker = triton.infer('cancel', { IN: fp32(0) }).then(tagOf);
    await waitFor(() => rec.active === 1, 'the instance to be busy');
    const controller = new AbortController();
    const cancelled = triton.infer('cancel', { IN: fp32(1) }, { signal: controller.signal });
    const kept = triton.infer('cancel', { IN: fp32(2) }).then(tagOf);
    await settleLoop();
    controller.abort();
    const err = await expectRejects(cancelled, 'CANCELLED');
    expect(err.httpStatus).toBe(400);
    release.open();
    expect(await Promise.all([blocker, kept])).toEqual([0, 2]);
    expect(rec.tagOrder).toEqual([0, 2]);
    expect(triton.model('cancel').pendingCount).toBe(0);
  });

  test('an already-aborted signal fails at once; aborting an executing request answers CANCELLED without breaking the batch', async () => {
    const rec = new Recorder();
    triton.bind({ modelName: 'abort', inferFunc: rec.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
    await triton.run();
    await expectRejects(triton.infer('abort', { IN: fp32(9) }, { signal: AbortSignal.abort() }), 'CANCELLED');
    const release = rec.hold();
    const controller = new AbortController();
    const executing = triton.infer('abort', { IN: fp32(1) }, { signal: controller.signal });
    const next = triton.infer('abort', { IN: fp32(2) }).then(tagOf);
    await waitFor(() => rec.active === 1, 'request 1 to execute');
    controller.abort();
    await expectRejects(executing, 'CANCELLED');
    release.open();
    expect(await next).toBe(2);
    await waitFor(() => triton.model('abort').pendingCount === 0, 'every request to be handed back');
    expect(rec.tagOrder).toEqual([1, 2]);
  });

  test('one AbortSignal shared by many requests keeps no listener once they are answered, and still cancels the next', async () => {
    triton.bind({ modelName: 'shared', inferFunc: identity, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 8 } });
    await triton.run();
    const controller = new AbortController();
    await Promise.all(Array.from({ length: 200 }, (_, i) => triton.infer('shared', { IN: fp32(i) }, { signal: controller.signal })));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort();
    await expectRejects(triton.infer('shared', { IN: fp32(1) }, { signal: controller.signal }), 'CANCELLED');
  });
});
