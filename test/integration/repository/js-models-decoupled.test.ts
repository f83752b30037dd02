/**
 * Decoupled JS models in a repository (`model_transaction_policy { decoupled: true }`): execute
 * returns a generator of per-step lists, one iterable per request, or answers through
 * request.responseSender; errors keep the Triton status their `code` names; warm-up reads the
 * streams; an ONNX model cannot be decoupled; unload and reload while streams are open end every
 * stream (finished or failed), and finalize runs after the last one.
 */
import type { InferenceServerError } from '../../../ts/errors';
import { NDArray } from '../../../ts/tensor';
import { waitFor } from '../helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repo-helpers';

let repo: TempRepo;
let served: Served | undefined;

interface Events {
  log: string[];
}

declare global {
  var __decoupledEvents: Events | undefined;
}

beforeEach(() => {
  repo = new TempRepo('jsdecoupled');
  globalThis.__decoupledEvents = { log: [] };
});

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  delete globalThis.__decoupledEvents;
  repo.cleanup();
});

const events = (): Events => globalThis.__decoupledEvents!;

const CONFIG = (extra = ''): string => `
  backend: "js"
  max_batch_size: 4
  input [ { name: "N", data_type: TYPE_INT32, dims: [ 1 ] } ]
  output [ { name: "K", data_type: TYPE_INT32, dims: [ 1 ] } ]
  model_transaction_policy { decoupled: true }
  ${extra}`;

const n = (value: number): NDArray => new NDArray('INT32', [1, 1], new Int32Array([value]));

async function collect(stream: AsyncIterable<Record<string, NDArray>>): Promise<number[]> {
  const values: number[] = [];
  for await (const { K } of stream) values.push((K.data as Int32Array)[0]);
  return values;
}

async function serveModel(source: string, extra = '', options: Parameters<typeof startRepoTriton>[1] = {}): Promise<Served> {
  repo.config('counter', CONFIG(extra));
  repo.write('counter/1/model.js', source);
  served = await startRepoTriton(repo.root, options);
  return served;
}

describe('execute forms', () => {
  test('a generator yielding one list per step (PyTriton form): N responses 0..N-1, then the end', async () => {
    const { triton } = await serveModel(`
      exports.execute = function* (requests) {
        const counts = requests.map((r) => r.data.N.data[0]);
        for (let k = 0; k < Math.max(...counts); k++) {
          yield counts.map((c) => (k < c ? { K: new Int32Array([k]) } : null));
        }
      };`);
    expect(await collect(triton.inferStream('counter', { N: n(3) }))).toEqual([0, 1, 2]);
    expect(await collect(triton.inferStream('counter', { N: n(0) }))).toEqual([]);
    expect(triton.model('counter').config.decoupled).toBe(true);
  });

  test('one async iterable per request, and request.responseSender after execute returned', async () => {
    const { triton } = await serveModel(`
      exports.execute = (requests) => {
        if (requests[0].parameters.sender) {
          for (const r of requests) {
            setTimeout(() => {
              r.responseSender.send({ K: new Int32Array([7]) });
              r.responseSender.send(null, { final: true });
            }, 5);
          }
          return undefined;
        }
        return requests.map(async function* (r) {
          for (let k = 0; k < r.data.N.data[0]; k++) yield { K: new Int32Array([k * 10]) };
        });
      };`);
    expect(await collect(triton.inferStream('counter', { N: n(2) }))).toEqual([0, 10]);
    expect(await collect(triton.inferStream('counter', { N: n(1) }, { parameters: { sender: true } }))).toEqual([7]);
  });

  test('an error thrown mid-stream keeps the status its code names', async () => {
    const { triton } = await serveModel(`
      exports.execute = function* (requests) {
        yield requests.map(() => ({ K: new Int32Array([1]) }));
        throw Object.assign(new Error('N is out of range'), { code: 'INVALID_ARG' });
      };`);
    const seen: number[] = [];
    let caught: InferenceServerError | undefined;
    try {
      for await (const { K } of triton.inferStream('counter', { N: n(5) })) seen.push((K.data as Int32Array)[0]);
    } catch (err) {
      caught = err as InferenceServerError;
    }
    expect(seen).toEqual([1]);
    expect({ code: caught?.code, message: caught?.message }).toEqual({ code: 'INVALID_ARG', message: 'N is out of range' });
  });

  test('warm-up reads a decoupled model\'s responses before the model is ready', async () => {
    const { triton } = await serveModel(`
      exports.execute = function* (requests) {
        globalThis.__decoupledEvents.log.push('execute');
        yield requests.map(() => ({ K: new Int32Array([1]) }));
        globalThis.__decoupledEvents.log.push('streamed');
      };`, `model_warmup [ { name: "w", batch_size: 1, inputs { key: "N", value: { data_type: TYPE_INT32, dims: [ 1 ], zero_data: true } } } ]`);
    expect(events().log).toEqual(['execute', 'streamed']);
    expect(triton.model('counter').stats().success.count).toBe(1);
  });
});

test('an ONNX model cannot be decoupled: the load fails, saying why and what to do', async () => {
  repo.onnx('add', 1, addConstModel(1));
  repo.config('add', `
    platform: "onnxruntime_onnx"
    max_batch_size: 4
    input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
    output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
    model_transaction_policy { decoupled: true }`);
  served = await startRepoTriton(repo.root);
  const entry = served.triton.repositoryIndex().find((e) => e.name === 'add');
  expect(entry?.state).toBe('UNAVAILABLE');
  expect(entry?.reason).toContain('model_transaction_policy { decoupled: true } cannot be served by the onnxruntime backend');
});

describe('unload and reload while streams are open', () => {
  /**
   * Streams N responses tag + k, one per turn of the event loop. The tag is the config's
   * parameter, read by initialize and captured by each stream when it starts (a reload in this
   * realm keeps the module, so it is the config that tells the versions apart); finalize is
   * recorded with the tag.
   */
  const PACED = `
    let tag = 0;
    exports.initialize = (args) => { tag = Number(args.parameters.tag); };
    exports.execute = (requests) => requests.map(async function* (r) {
      const base = tag;
      for (let k = 0; k < r.data.N.data[0]; k++) {
        await new Promise((resolve) => setImmediate(resolve));
        yield { K: new Int32Array([base + k]) };
      }
    });
    exports.finalize = (args) => { globalThis.__decoupledEvents.log.push('finalize ' + args.parameters.tag); };`;
  const tagged = (tag: number): string => `parameters { key: "tag", value: { string_value: "${tag}" } }`;

  test('unload lets open streams finish, refuses new requests, then finalizes', async () => {
    const { triton, manager } = await serveModel(PACED, tagged(0), { controlMode: 'explicit', loadModels: ['counter'] });
    const streams = [40, 60].map((count) => collect(triton.inferStream('counter', { N: n(count) })));
    await waitFor(() => triton.model('counter').stats().pending === 2, 'both streams to be open');
    const unloaded = manager.unload('counter');
    const results = await Promise.all(streams);
    expect(results.map((r) => r.length)).toEqual([40, 60]);
    await unloaded;
    expect(events().log).toEqual(['finalize 0']);
    await expect(collect(triton.inferStream('counter', { N: n(1) }))).rejects.toThrow(/counter/);
  });

  test('a reload serves new streams from the new version while the old ones finish on the old one', async () => {
    const { triton, manager } = await serveModel(PACED, tagged(0), { controlMode: 'explicit', loadModels: ['counter'] });
    const old = collect(triton.inferStream('counter', { N: n(50) }));
    await waitFor(() => triton.model('counter').stats().pending === 1, 'the old stream to be open');
    repo.config('counter', CONFIG(tagged(1000)));
    await manager.load('counter');
    const fresh = await collect(triton.inferStream('counter', { N: n(2) }));
    expect(fresh).toEqual([1000, 1001]);
    const oldValues = await old;
    expect(oldValues).toHaveLength(50);
    expect(oldValues[0]).toBe(0);
    await waitFor(() => events().log.includes('finalize 0'), 'the old version to be finalized');
  });

  test('stop() bounded by the exit timeout fails a stream that never ends, without hanging', async () => {
    const { triton } = await serveModel(`
      exports.execute = (requests) => requests.map(async function* () {
        for (let k = 0; ; k++) {
          await new Promise((resolve) => setImmediate(resolve));
          yield { K: new Int32Array([k]) };
        }
      });`, '', { config: { exitTimeoutSecs: 0 } });
    const endless = collect(triton.inferStream('counter', { N: n(1) }));
    await waitFor(() => triton.model('counter').stats().pending === 1, 'the stream to be open');
    await triton.stop();
    served = undefined;
    await expect(endless).rejects.toThrow(/stopped|shutting down|exit/i);
  });
});
