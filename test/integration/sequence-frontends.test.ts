/**
 * The sequence batcher end to end through the frontends (issue 8): a real Triton on loopback
 * (HTTP and gRPC, ports 0) serving bound JS callables with `sequenceBatcher` and a repository
 * ONNX model with implicit state, driven by raw HTTP JSON (where the wire matters: exact uint64
 * ids), the project's HTTP client (binary tensors) and its gRPC client (ModelInfer and
 * ModelStreamInfer). Per frontend: separate state of interleaved sequences, START resetting it,
 * END releasing the id, uint64 and string ids, every admission error with Triton's text, the
 * control tensors as the model sees them, idle expiry. Over gRPC streams: `direct` vs `oldest`
 * batch composition, cancellation of queued sequence requests, statistics. Iterative decoupled
 * sequences over ModelStreamInfer and generate_stream, batched continuously.
 * The in-process rules are test/integration/sequence.test.ts's; the parameter parsing is
 * sequence-parameters.test.ts's; the recurrent ONNX model is repository/sequence-rnn.test.ts's.
 */
import { NDArray } from '../../ts/tensor';
import type { Request, ResponseOutputs } from '../../ts/request';
import { Triton } from '../../ts/triton';
import { InferenceServerError } from '../../ts/errors';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { GrpcInferenceServerClient } from '../../ts/client/grpc';
import type { SequenceOptions } from '../../ts/client/sequence';
import type { ClientStreamResult } from '../../ts/client/types';
import type { SequenceControlInput } from '../../ts/config/types';
import { addSubModel } from '../../ts/tools/onnx';
import { TempRepo } from './repository/repo-helpers';
import { closeAgent, get, post } from './http/http-helpers';
import { gate, sleep, waitFor, type Gate } from './helpers';

// ---------------------------------------------------------------------------------------------
// Models

/** START int32 [0, 1], END fp32 [0.5, 2], READY bool: the model must see each pair's own values. */
const FLAG_CONTROLS: SequenceControlInput[] = [
  { name: 'START', kind: 'CONTROL_SEQUENCE_START', int32FalseTrue: [0, 1] },
  { name: 'END', kind: 'CONTROL_SEQUENCE_END', fp32FalseTrue: [0.5, 2] },
  { name: 'READY', kind: 'CONTROL_SEQUENCE_READY', boolFalseTrue: [false, true] },
];

/** The correlation id as the CORRID control carries it, as text (exact for uint64 and strings). */
function corridOf(r: Request): string {
  const t = r.data.CORRID;
  return t.dtype === 'BYTES' ? Buffer.from((t.data as Uint8Array[])[0]).toString('utf8') : String((t.data as BigUint64Array)[0]);
}

const int32 = (value: number): NDArray => new NDArray('INT32', [1, 1], Int32Array.of(value));

/**
 * The accumulator: SUM = SUM_IN (the implicit state) + IN, returned as the next state too;
 * CTRL = the START, END and READY values it saw; CORRID_OUT = the id it saw.
 */
function accumulator(requests: Request[]): ResponseOutputs[] {
  return requests.map((r) => {
    const sum = (r.data.SUM_IN.data as Int32Array)[0] + (r.data.IN.data as Int32Array)[0];
    const ctrl = ['START', 'END', 'READY'].map((name) => Number(r.data[name].data[0]));
    return {
      SUM: int32(sum), SUM_OUT: int32(sum),
      CTRL: new NDArray('FP32', [1, 3], Float32Array.from(ctrl)),
      CORRID_OUT: new NDArray('BYTES', [1, 1], [Buffer.from(corridOf(r))]),
    };
  });
}

function bindAccumulator(t: Triton, name: string, corrid: 'UINT64' | 'BYTES', idleMicroseconds = 30_000_000): void {
  t.bind({
    modelName: name, inferFunc: accumulator,
    inputs: [{ name: 'IN', dtype: 'INT32', shape: [1] }],
    outputs: [
      { name: 'SUM', dtype: 'INT32', shape: [1] }, { name: 'CTRL', dtype: 'FP32', shape: [3] },
      { name: 'CORRID_OUT', dtype: 'BYTES', shape: [1] },
    ],
    config: {
      maxBatchSize: 4,
      sequenceBatcher: {
        maxSequenceIdleMicroseconds: idleMicroseconds,
        controlInputs: [...FLAG_CONTROLS, { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', dataType: corrid }],
        states: [{ inputName: 'SUM_IN', outputName: 'SUM_OUT', dtype: 'INT32', shape: [1], initialState: { zeroData: true } }],
      },
    },
  });
}

/** One row of an execution as a composer model saw it: CORRID, READY and IN, and `request.sequence.ready`. */
interface Row { id: string; ready: number; x: number; sequenceReady: boolean }

/** Per composer model: its executions' rows, and a gate its next execution waits on when armed. */
const executions: Record<string, Row[][]> = {};
const holds: Record<string, { gate: Gate; entered: boolean } | undefined> = {};

/** Arms `model`'s next execution to wait on a gate; `entered` turns true when it waits. */
function hold(model: string): { gate: Gate; entered: boolean } {
  const h = { gate: gate(), entered: false };
  holds[model] = h;
  return h;
}

/** OUT = IN (and the running sum as state); records each execution's rows, waits on an armed hold. */
function composer(model: string) {
  return async (requests: Request[]): Promise<ResponseOutputs[]> => {
    (executions[model] ??= []).push(requests.map((r) => ({
      id: corridOf(r), ready: (r.data.READY.data as Int32Array)[0], x: (r.data.IN.data as Int32Array)[0], sequenceReady: r.sequence!.ready,
    })));
    const h = holds[model];
    if (h) {
      holds[model] = undefined;
      h.entered = true;
      await h.gate.promise;
    }
    return requests.map((r) => {
      const sum = (r.data.SUM_IN.data as Int32Array)[0] + (r.data.IN.data as Int32Array)[0];
      return { OUT: r.data.IN, SUM_OUT: int32(sum) };
    });
  };
}

function bindComposer(t: Triton, name: string, strategy: 'direct' | 'oldest'): void {
  t.bind({
    modelName: name, inferFunc: composer(name),
    inputs: [{ name: 'IN', dtype: 'INT32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'INT32', shape: [1] }],
    config: {
      maxBatchSize: 4,
      sequenceBatcher: {
        strategy, maxSequenceIdleMicroseconds: 30_000_000,
        controlInputs: [
          { name: 'READY', kind: 'CONTROL_SEQUENCE_READY', int32FalseTrue: [0, 1] },
          { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'UINT64' },
        ],
        states: [{ inputName: 'SUM_IN', outputName: 'SUM_OUT', dtype: 'INT32', shape: [1], initialState: { zeroData: true } }],
      },
    },
  });
}

/** The iterative model's executions: the ids of the ready rows of each. */
const iterativeExecutions: string[][] = [];
/** The START control each ready row of the iterative model saw, by id, in execution order. */
const iterativeStarts = new Map<string, number[]>();
/** When armed, the iterative model's first execution holding a request at step 1 waits on it. */
let iterativeHold: { gate: Gate; entered: boolean } | undefined;
/** Steps done per running request (by its CORRID, which the iterative sequencer assigns). */
const iterativeProgress = new Map<string, number>();

/**
 * An iterative, decoupled model: IN = how many steps a request runs; each execution sends one
 * response STEP = k per request, reschedules it until its last step, and ends it with that step.
 */
async function iterative(requests: Request[]): Promise<undefined> {
  const ready = requests.filter((r) => r.sequence?.ready);
  iterativeExecutions.push(ready.map(corridOf));
  for (const r of ready) {
    const starts = iterativeStarts.get(corridOf(r)) ?? [];
    iterativeStarts.set(corridOf(r), [...starts, (r.data.START.data as Int32Array)[0]]);
  }
  const h = iterativeHold;
  if (h && ready.some((r) => iterativeProgress.get(corridOf(r)) === 1)) {
    iterativeHold = undefined;
    h.entered = true;
    await h.gate.promise;
  }
  for (const r of ready) {
    const id = corridOf(r);
    const k = iterativeProgress.get(id) ?? 0;
    const last = k + 1 >= (r.data.IN.data as Int32Array)[0];
    if (last) {
      iterativeProgress.delete(id);
    } else {
      iterativeProgress.set(id, k + 1);
      r.reschedule();
    }
    r.responseSender!.send({ STEP: int32(k) }, { final: last });
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Server

const ONNX_CONFIG = `
  platform: "onnxruntime_onnx"
  max_batch_size: 4
  input [ { name: "INPUT0", data_type: TYPE_INT32, dims: [ 1 ] } ]
  output [ { name: "OUTPUT1", data_type: TYPE_INT32, dims: [ 1 ] } ]
  sequence_batching {
    max_sequence_idle_microseconds: 30000000
    direct { }
    state [ {
      input_name: "INPUT1" output_name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ]
      initial_state: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "zero" }
    } ]
  }
  instance_group [ { count: 1, kind: KIND_CPU } ]`;

let triton: Triton;
let repo: TempRepo;
let httpPort: number;
let grpcPort: number;
let httpClient: HttpInferenceServerClient;
let grpcClient: GrpcInferenceServerClient;

beforeAll(async () => {
  repo = new TempRepo('sequence-frontends');
  // OUTPUT0 = INPUT0 + INPUT1 (state in) is the next state; OUTPUT1 = INPUT0 - INPUT1 shows it.
  repo.onnx('onnx_acc', 1, addSubModel('INT32', [1]));
  repo.config('onnx_acc', ONNX_CONFIG);
  triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0,
      allowMetrics: false, logInfo: false, logWarning: false, exitOnError: true,
    },
  });
  triton.useRepository({ repositories: [repo.root], controlMode: 'none', pollSecs: 0, log: () => undefined });
  bindAccumulator(triton, 'acc', 'UINT64');
  bindAccumulator(triton, 'acc_str', 'BYTES');
  bindAccumulator(triton, 'acc_idle', 'UINT64', 20_000);
  bindComposer(triton, 'direct_m', 'direct');
  bindComposer(triton, 'oldest_m', 'oldest');
  bindComposer(triton, 'cancel_m', 'direct');
  triton.bind({
    modelName: 'iter_m', inferFunc: iterative as never,  // decoupled: answers through responseSender
    inputs: [{ name: 'IN', dtype: 'INT32', shape: [1] }], outputs: [{ name: 'STEP', dtype: 'INT32', shape: [1] }],
    config: {
      maxBatchSize: 4, decoupled: true,
      sequenceBatcher: {
        iterativeSequence: true, maxSequenceIdleMicroseconds: 30_000_000,
        controlInputs: [
          { name: 'START', kind: 'CONTROL_SEQUENCE_START', int32FalseTrue: [0, 1] },
          { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'UINT64' },
        ],
      },
    },
  });
  await triton.run();
  httpPort = triton.ports.http!;
  grpcPort = triton.ports.grpc!;
  httpClient = new HttpInferenceServerClient(`127.0.0.1:${httpPort}`);
  grpcClient = new GrpcInferenceServerClient(`127.0.0.1:${grpcPort}`);
});

afterAll(async () => {
  await httpClient?.close();
  await grpcClient?.close();
  await triton?.stop();
  closeAgent();
  repo?.cleanup();
});

// ---------------------------------------------------------------------------------------------
// Frontends: one request, answered as output values by name, or an error with its code.

type Values = Record<string, (number | string)[]>;
type Answer = { values: Values } | { code: string; message: string };

interface Step {
  model: string;
  /** The input's name (IN for the JS models, INPUT0 for the ONNX one). */
  input?: string;
  /** The input's values; more than one is a batch of that many rows. */
  x: number[];
  seq: SequenceOptions;
}

interface Frontend {
  name: string;
  infer(step: Step): Promise<Answer>;
}

function valuesOf(outputs: Record<string, NDArray>): Values {
  const values: Values = {};
  for (const [name, t] of Object.entries(outputs)) {
    values[name] = t.dtype === 'BYTES'
      ? (t.data as Uint8Array[]).map((b) => Buffer.from(b).toString('utf8'))
      : Array.from(t.data as ArrayLike<number>, Number);
  }
  return values;
}

function failure(err: unknown): Answer {
  if (err instanceof InferenceServerError) return { code: err.code, message: err.message };
  throw err;
}

const inputsOf = (step: Step): Record<string, NDArray> =>
  ({ [step.input ?? 'IN']: new NDArray('INT32', [step.x.length, 1], Int32Array.from(step.x)) });

/**
 * Raw HTTP JSON: the body is written by hand so a uint64 id travels as its exact digits; the
 * status is the one on the wire (400 is INVALID_ARG).
 */
const httpJson: Frontend = {
  name: 'HTTP JSON',
  async infer(step) {
    const { sequenceId: id, sequenceStart, sequenceEnd } = step.seq;
    const idText = typeof id === 'string' ? JSON.stringify(id) : String(id);
    const parameters = id === undefined ? '' : `"parameters":{"sequence_id":${idText},"sequence_start":${Boolean(sequenceStart)},` +
      `"sequence_end":${Boolean(sequenceEnd)}},`;
    const body = `{${parameters}"inputs":[{"name":"${step.input ?? 'IN'}","datatype":"INT32","shape":[${step.x.length},1],` +
      `"data":${JSON.stringify(step.x)}}]}`;
    const r = await post(httpPort, `/v2/models/${step.model}/infer`, body, { 'Content-Type': 'application/json' });
    if (r.status !== 200) return { code: r.status === 400 ? 'INVALID_ARG' : `HTTP ${r.status}`, message: r.error };
    const values: Values = {};
    for (const o of r.json<{ outputs: { name: string; data: (number | string)[] }[] }>().outputs) values[o.name] = o.data;
    return { values };
  },
};

/** The project's HTTP client: binary tensors both ways. */
const httpBinary: Frontend = {
  name: 'HTTP binary',
  async infer(step) {
    try {
      return { values: valuesOf((await httpClient.infer({ modelName: step.model, inputs: inputsOf(step), ...step.seq })).outputs) };
    } catch (err) {
      return failure(err);
    }
  },
};

const grpcUnary: Frontend = {
  name: 'gRPC ModelInfer',
  async infer(step) {
    try {
      return { values: valuesOf((await grpcClient.infer({ modelName: step.model, inputs: inputsOf(step), ...step.seq })).outputs) };
    } catch (err) {
      return failure(err);
    }
  },
};

/** ModelStreamInfer, a call per request (the client's streamInfer): the one response of a non-decoupled model. */
const grpcStream: Frontend = {
  name: 'gRPC ModelStreamInfer',
  async infer(step) {
    try {
      const results: ClientStreamResult[] = [];
      for await (const result of grpcClient.streamInfer({ modelName: step.model, inputs: inputsOf(step), ...step.seq })) results.push(result);
      expect(results.map((r) => r.final)).toEqual([true]);
      return { values: valuesOf(results[0].outputs) };
    } catch (err) {
      return failure(err);
    }
  },
};

const FRONTENDS: [string, Frontend, number][] = [
  [httpJson.name, httpJson, 1], [httpBinary.name, httpBinary, 2], [grpcUnary.name, grpcUnary, 3], [grpcStream.name, grpcStream, 4],
];

function valuesOrThrow(answer: Answer, what: string): Values {
  if ('code' in answer) throw new Error(`${what} failed: ${answer.code} ${answer.message}`);
  return answer.values;
}

const startError = (id: number | bigint | string, model: string): Answer => ({
  code: 'INVALID_ARG',
  message: expect.stringContaining(`inference request for sequence ${String(id)} to model '${model}' must specify the START flag ` +
    'on the first request of the sequence') as unknown as string,
});

const errorWith = (text: string): Answer => ({ code: 'INVALID_ARG', message: expect.stringContaining(text) as unknown as string });

// ---------------------------------------------------------------------------------------------
// Per frontend

describe.each(FRONTENDS)('%s', (_name, frontend, n) => {
  /** Ids of this frontend's sequences: distinct per frontend, all frontends share the server. */
  const id = (k: number): number => n * 1000 + k;
  const step = (model: string, seqId: number | bigint | string, x: number, flags: { start?: boolean; end?: boolean } = {},
    input?: string): Promise<Answer> =>
    frontend.infer({ model, input, x: [x], seq: { sequenceId: seqId, sequenceStart: flags.start, sequenceEnd: flags.end } });
  const sumOf = async (answer: Promise<Answer>): Promise<number> => valuesOrThrow(await answer, frontend.name).SUM[0] as number;

  test('JS accumulator: interleaved sequences keep separate state, START resets it, END releases the id', async () => {
    const [a, b] = [id(1), id(2)];
    expect(await sumOf(step('acc', a, 1, { start: true }))).toBe(1);
    expect(await sumOf(step('acc', b, 10, { start: true }))).toBe(10);
    expect(await sumOf(step('acc', a, 2))).toBe(3);
    expect(await sumOf(step('acc', b, 20))).toBe(30);
    // START with a live id: the same slot, the state from initial_state again.
    expect(await sumOf(step('acc', a, 5, { start: true }))).toBe(5);
    expect(await sumOf(step('acc', a, 1, { end: true }))).toBe(6);
    expect(await sumOf(step('acc', b, 3))).toBe(33);
    // a ended: a request without START is refused; b is untouched by it.
    expect(await step('acc', a, 1)).toEqual(startError(a, 'acc'));
    expect(await sumOf(step('acc', b, 4, { end: true }))).toBe(37);
    expect(await step('acc', b, 1, { end: true })).toEqual(startError(b, 'acc'));
    // A sequence never started.
    expect(await step('acc', id(3), 1)).toEqual(startError(id(3), 'acc'));
    // START after END begins a new sequence under the same id.
    expect(await sumOf(step('acc', a, 7, { start: true, end: true }))).toBe(7);
  });

  test('ONNX add/sub with INPUT1 ← OUTPUT0 as implicit state: interleaved sequences, START resets, END releases', async () => {
    // OUTPUT1 = x - (the sum before this step): the state the model was fed.
    const out1 = async (answer: Promise<Answer>): Promise<number> => valuesOrThrow(await answer, frontend.name).OUTPUT1[0] as number;
    const [a, b] = [id(11), id(12)];
    const onnx = (seqId: number, x: number, flags: { start?: boolean; end?: boolean } = {}) => step('onnx_acc', seqId, x, flags, 'INPUT0');
    expect(await out1(onnx(a, 1, { start: true }))).toBe(1);    // sum 1
    expect(await out1(onnx(b, 100, { start: true }))).toBe(100); // sum 100
    expect(await out1(onnx(a, 2))).toBe(2 - 1);                  // sum 3
    expect(await out1(onnx(b, 5))).toBe(5 - 100);                // sum 105
    expect(await out1(onnx(a, 4))).toBe(4 - 3);                  // sum 7
    expect(await out1(onnx(a, 9, { start: true }))).toBe(9);     // reset: sum 9
    expect(await out1(onnx(a, 1, { end: true }))).toBe(1 - 9);
    expect(await out1(onnx(b, 1, { end: true }))).toBe(1 - 105);
    expect(await onnx(a, 1)).toEqual(startError(a, 'onnx_acc'));
    expect(await onnx(b, 1)).toEqual(startError(b, 'onnx_acc'));
  });

  test('the control tensors as the model sees them: START on the first, END on the last, READY true, CORRID the id', async () => {
    const seqId = id(21);
    const ctrl = async (x: number, flags: { start?: boolean; end?: boolean }): Promise<Values> =>
      valuesOrThrow(await step('acc', seqId, x, flags), frontend.name);
    // [START, END, READY] with START int32 [0, 1], END fp32 [0.5, 2], READY bool.
    expect(await ctrl(1, { start: true })).toMatchObject({ CTRL: [1, 0.5, 1], CORRID_OUT: [String(seqId)] });
    expect(await ctrl(1, {})).toMatchObject({ CTRL: [0, 0.5, 1], CORRID_OUT: [String(seqId)] });
    expect(await ctrl(1, { end: true })).toMatchObject({ CTRL: [0, 2, 1], CORRID_OUT: [String(seqId)], SUM: [3] });
    // One request both first and last.
    expect(await ctrl(4, { start: true, end: true })).toMatchObject({ CTRL: [1, 2, 1], SUM: [4] });
  });

  test('uint64 ids above 2^53 are exact: 2^53 and 2^53 + 1 are two sequences; 2^64 - 1 reaches CORRID', async () => {
    // Distinct per frontend, far above 2^53: a double would merge 2^53 + 2k and 2^53 + 2k + 1.
    const low = 2n ** 53n + BigInt(n * 10);
    const high = low + 1n;
    const top = 2n ** 64n - BigInt(n);
    const values = async (seqId: bigint, x: number, flags: { start?: boolean; end?: boolean } = {}) =>
      valuesOrThrow(await step('acc', seqId, x, flags), frontend.name);
    expect(await values(low, 1, { start: true })).toMatchObject({ SUM: [1], CORRID_OUT: [String(low)] });
    expect(await values(high, 100, { start: true })).toMatchObject({ SUM: [100], CORRID_OUT: [String(high)] });
    expect(await values(low, 2)).toMatchObject({ SUM: [3], CORRID_OUT: [String(low)] });
    expect(await values(high, 200, { end: true })).toMatchObject({ SUM: [300], CORRID_OUT: [String(high)] });
    expect(await values(low, 3, { end: true })).toMatchObject({ SUM: [6], CORRID_OUT: [String(low)] });
    expect(await step('acc', high, 1)).toEqual(startError(high, 'acc'));
    expect(await values(top, 5, { start: true })).toMatchObject({ SUM: [5], CORRID_OUT: [String(top)] });
    expect(await values(top, 6, { end: true })).toMatchObject({ SUM: [11], CORRID_OUT: [String(top)] });
  });

  test('string ids with a STRING CORRID: interleaved sequences, CORRID the string, END releases', async () => {
    const [a, b] = [`user-${n}-a`, `user-${n}-b`];
    const values = async (seqId: string, x: number, flags: { start?: boolean; end?: boolean } = {}) =>
      valuesOrThrow(await step('acc_str', seqId, x, flags), frontend.name);
    expect(await values(a, 1, { start: true })).toMatchObject({ SUM: [1], CORRID_OUT: [a], CTRL: [1, 0.5, 1] });
    expect(await values(b, 10, { start: true })).toMatchObject({ SUM: [10], CORRID_OUT: [b] });
    expect(await values(a, 2)).toMatchObject({ SUM: [3], CORRID_OUT: [a], CTRL: [0, 0.5, 1] });
    expect(await values(b, 20, { end: true })).toMatchObject({ SUM: [30], CORRID_OUT: [b], CTRL: [0, 2, 1] });
    expect(await step('acc_str', b, 1)).toEqual(startError(b, 'acc_str'));
    expect(await values(a, 3, { end: true })).toMatchObject({ SUM: [6] });
  });

  test('Triton\'s admission errors: id type against CORRID, no id, a batch of 2 rows', async () => {
    expect(await step('acc', `s-${n}`, 1, { start: true })).toEqual(
      errorWith("sequence batching control 'CORRID' data-type is 'BYTES', but model 'acc' expects 'UINT64'"));
    expect(await step('acc_str', id(31), 1, { start: true })).toEqual(
      errorWith("sequence batching control 'CORRID' data-type is 'UINT64', but model 'acc_str' expects 'BYTES'"));
    // Id 0 and "" mean "not a sequence": the clients send no sequence parameters at all.
    for (const sequenceId of [0, '']) {
      expect(await frontend.infer({ model: 'acc', x: [1], seq: { sequenceId, sequenceStart: true } })).toEqual(
        errorWith("inference request to model 'acc' must specify a non-zero or non-empty correlation ID"));
    }
    expect(await frontend.infer({ model: 'acc', x: [1, 2], seq: { sequenceId: id(32), sequenceStart: true } })).toEqual(
      errorWith("inference request to model 'acc' must specify batch-size 1 due to requirements of sequence batcher"));
    // None of them started a sequence.
    expect(await step('acc', id(32), 1)).toEqual(startError(id(32), 'acc'));
  });

  test('idle expiry: a sequence idle past max_sequence_idle_microseconds (20 ms) is released', async () => {
    const seqId = id(41);
    expect(await sumOf(step('acc_idle', seqId, 1, { start: true }))).toBe(1);
    // Expiry is applied when the next request arrives: waiting a few idle times is enough.
    await sleep(100);
    expect(await step('acc_idle', seqId, 2)).toEqual(startError(seqId, 'acc_idle'));
    // A new START works and begins from the initial state. One request (START and END): two
    // consecutive steps could themselves be further apart than the 20 ms idle time on a
    // loaded machine, so none of this test's checks needs two steps within it.
    expect(await sumOf(step('acc_idle', seqId, 5, { start: true, end: true }))).toBe(5);
  });
});

// ---------------------------------------------------------------------------------------------
// Batch composition over gRPC streams

/** One sequence's own ModelStreamInfer stream (the client's startStream), collecting answers. */
class SequenceStream {
  readonly client = new GrpcInferenceServerClient(`127.0.0.1:${grpcPort}`);
  readonly answers: (ClientStreamResult | InferenceServerError)[] = [];

  constructor(readonly model: string, readonly id: number) {
    this.client.startStream({ onResponse: (result, error) => this.answers.push(result ?? error!) });
  }

  send(x: number, flags: { start?: boolean; end?: boolean } = {}): void {
    this.client.asyncStreamInfer({
      modelName: this.model, inputs: { IN: int32(x) }, sequenceId: this.id, sequenceStart: flags.start, sequenceEnd: flags.end,
    });
  }

  outs(): unknown[] {
    return this.answers.map((a) => (a instanceof InferenceServerError ? a.message : (a.outputs.OUT.data as Int32Array)[0]));
  }

  async close(): Promise<void> {
    await this.client.stopStream();
    await this.client.close();
  }
}

/**
 * Holds `model`'s instance with sequence A's first step, queues steps of B, C and D one by one
 * (each queued before the next is sent, so the order is known), releases, and waits for every
 * answer. Returns the executions after the held one.
 */
async function composeUnderLoad(model: string, base: number): Promise<{ executions: Row[][]; streams: SequenceStream[] }> {
  const bound = triton.model(model);
  const [a, b, c, d] = [1, 2, 3, 4].map((k) => new SequenceStream(model, base + k));
  const held = hold(model);
  executions[model] = [];
  a.send(1, { start: true });
  await waitFor(() => held.entered, `${model} holding A's first step`);
  let queued = 1;
  for (const [stream, x, start] of [[b, 10, true], [c, 20, true], [b, 11, false], [c, 21, false], [d, 30, true]] as const) {
    stream.send(x, { start });
    queued++;
    await waitFor(() => bound.pendingCount === queued, `${model}: ${queued} requests queued`);
  }
  held.gate.open();
  await waitFor(() => bound.pendingCount === 0, `${model}: every request answered`);
  await waitFor(() => a.answers.length + b.answers.length + c.answers.length + d.answers.length === 6, `${model}: every answer read`);
  return { executions: executions[model].slice(1), streams: [a, b, c, d] };
}

/** Ends each stream's sequence (freeing its slot) and closes the streams. */
async function endAll(streams: SequenceStream[]): Promise<void> {
  for (const s of streams) {
    const answered = s.answers.length;
    s.send(0, { end: true });
    await waitFor(() => s.answers.length === answered + 1, `the END of sequence ${s.id}`);
    await s.close();
  }
}

const ready = (id: number, x: number): Row => ({ id: String(id), ready: 1, x, sequenceReady: true });
/** A direct slot with nothing ready: zeros, READY = 0, CORRID 0. */
const nullRow: Row = { id: '0', ready: 0, x: 0, sequenceReady: false };

describe('batch composition under concurrent sequences (gRPC streams)', () => {
  test('direct: each sequence in its own slot\'s row, READY = 0 null rows for idle slots below the highest', async () => {
    const base = 5000;
    const { executions: batches, streams } = await composeUnderLoad('direct_m', base);
    try {
      // Slots: A 0, B 1, C 2, D 3 (lowest free slot, in arrival order). A has nothing queued.
      expect(batches).toEqual([
        [nullRow, ready(base + 2, 10), ready(base + 3, 20), ready(base + 4, 30)],
        [nullRow, ready(base + 2, 11), ready(base + 3, 21)],
      ]);
      expect(streams.map((s) => s.outs())).toEqual([[1], [10, 11], [20, 21], [30]]);
      // Statistics count the 6 sequence requests in 3 executions, not the 2 null rows.
      const http = (await get(httpPort, '/v2/models/direct_m/stats')).json<{ model_stats: Record<string, unknown>[] }>().model_stats[0];
      expect(http).toMatchObject({ inference_count: 6, execution_count: 3, inference_stats: { success: { count: 6 }, fail: { count: 0 } } });
      const grpc = (await grpcClient.modelStatistics('direct_m')).model_stats[0];
      expect({ inference: Number(grpc.inference_count), executions: Number(grpc.execution_count) }).toEqual({ inference: 6, executions: 3 });
    } finally {
      await endAll(streams);
    }
  });

  test('oldest: at most one request per sequence per batch, no null rows', async () => {
    const base = 6000;
    const { executions: batches, streams } = await composeUnderLoad('oldest_m', base);
    try {
      expect(batches).toEqual([
        [ready(base + 2, 10), ready(base + 3, 20), ready(base + 4, 30)],
        [ready(base + 2, 11), ready(base + 3, 21)],
      ]);
      expect(streams.map((s) => s.outs())).toEqual([[1], [10, 11], [20, 21], [30]]);
      const http = (await get(httpPort, '/v2/models/oldest_m/stats')).json<{ model_stats: Record<string, unknown>[] }>().model_stats[0];
      expect(http).toMatchObject({ inference_count: 6, execution_count: 3 });
    } finally {
      await endAll(streams);
    }
  });

  test('a new sequence with every slot taken waits in the backlog and takes the first slot freed', async () => {
    const model = 'direct_m';
    const bound = triton.model(model);
    executions[model] = [];
    const streams = [1, 2, 3, 4].map((k) => new SequenceStream(model, 6200 + k));
    const waiting = new SequenceStream(model, 6205);
    try {
      for (const [k, s] of streams.entries()) s.send(k + 1, { start: true });
      await waitFor(() => streams.every((s) => s.answers.length === 1), 'four sequences started (4 slots taken)');
      waiting.send(50, { start: true });
      await waitFor(() => bound.pendingCount === 1, 'the fifth sequence queued');
      // Its slot comes from sequence 6202's END: it runs after that END, in slot 1's row.
      streams[1].send(0, { end: true });
      await waitFor(() => waiting.answers.length === 1 && streams[1].answers.length === 2, 'the END and the backlogged START answered');
      expect(waiting.outs()).toEqual([50]);
      const after = executions[model].slice(executions[model].findIndex((rows) => rows.some((r) => r.id === '6202' && r.x === 0)));
      expect(after[0].filter((r) => r.sequenceReady).map((r) => r.id)).toEqual(['6202']);
      expect(after.slice(1).flat().filter((r) => r.sequenceReady)).toEqual([ready(6205, 50)]);
      expect(after[1].findIndex((r) => r.sequenceReady)).toBe(1);
    } finally {
      await endAll([streams[0], streams[2], streams[3], waiting]);
      await streams[1].close();
    }
  });

  test('a refused sequence request on an open stream is answered in band; the stream goes on', async () => {
    const stream = new SequenceStream('direct_m', 6100);
    try {
      stream.send(1);  // no START
      stream.send(2, { start: true });
      stream.send(3, { end: true });
      await waitFor(() => stream.answers.length === 3, 'three answers on the stream');
      expect(stream.outs()).toEqual([
        "inference request for sequence 6100 to model 'direct_m' must specify the START flag on the first request of the sequence",
        2, 3,
      ]);
    } finally {
      await stream.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Cancellation

describe('cancellation through gRPC', () => {
  test('cancelling a queued sequence request cancels the sequence\'s queued requests; the server keeps serving', async () => {
    const model = 'cancel_m';
    const bound = triton.model(model);
    const [x, y] = [7001, 7002];
    const held = hold(model);
    executions[model] = [];
    /** One request on a ModelStreamInfer call of its own (the client's streamInfer), cancellable. */
    const call = (seqId: number, value: number, start: boolean) => {
      const controller = new AbortController();
      const done = (async () => {
        const outs: number[] = [];
        for await (const r of grpcClient.streamInfer({
          modelName: model, inputs: { IN: int32(value) }, sequenceId: seqId, sequenceStart: start, signal: controller.signal,
        })) outs.push((r.outputs.OUT.data as Int32Array)[0]);
        return outs;
      })().then((outs) => ({ outs }), (err: unknown) => failure(err));
      return { controller, done };
    };
    const x0 = call(x, 1, true);
    await waitFor(() => held.entered, 'cancel_m holding x');
    const ys = [call(y, 10, true)];
    await waitFor(() => bound.pendingCount === 2, 'y0 queued');
    ys.push(call(y, 11, false));
    await waitFor(() => bound.pendingCount === 3, 'y1 queued');
    ys.push(call(y, 12, false));
    await waitFor(() => bound.pendingCount === 4, 'y2 queued');

    ys[1].controller.abort();
    // The server ends y's queued requests (y1 cancelled by its client; y0 and y2 with it).
    await waitFor(() => bound.pendingCount === 1, 'y\'s requests ended');
    expect(await ys[1].done).toMatchObject({ code: 'CANCELLED' });
    expect(await ys[2].done).toMatchObject({ code: 'CANCELLED' });
    expect(await ys[0].done).toMatchObject({ code: 'CANCELLED' });
    // Statistics count them as failures.
    const stats = (await grpcClient.modelStatistics(model)).model_stats[0] as { inference_stats: Record<string, { count: unknown }> };
    expect(Number(stats.inference_stats.fail.count)).toBe(3);

    held.gate.open();
    expect(await x0.done).toEqual({ outs: [1] });
    // y never reached the model; its id was released; x goes on.
    expect(executions[model].flat().filter((r) => r.id === String(y))).toEqual([]);
    const again = (value: number, start: boolean) => grpcUnary.infer({ model, x: [value], seq: { sequenceId: y, sequenceStart: start } });
    expect(await again(5, false)).toEqual(startError(y, model));
    expect(valuesOrThrow(await again(5, true), 'y restarted').OUT).toEqual([5]);
    expect(valuesOrThrow(await grpcUnary.infer({ model, x: [2], seq: { sequenceId: x, sequenceEnd: true } }), 'x').OUT).toEqual([2]);
  });
});

// ---------------------------------------------------------------------------------------------
// Iterative sequences

/** Runs one iterative request of `steps` steps through a streaming frontend; resolves with the STEP values. */
type IterativeRun = (steps: number) => Promise<number[]>;

const overGrpcStream: IterativeRun = async (steps) => {
  const outs: number[] = [];
  for await (const r of grpcClient.streamInfer({ modelName: 'iter_m', inputs: { IN: int32(steps) } })) {
    outs.push((r.outputs.STEP.data as Int32Array)[0]);
  }
  return outs;
};

const overGenerateStream: IterativeRun = async (steps) => {
  const outs: number[] = [];
  for await (const r of httpClient.generateStream('iter_m', { IN: steps })) outs.push((r as Record<string, unknown>).STEP as number);
  return outs;
};

describe.each<[string, IterativeRun, IterativeRun]>([
  ['gRPC ModelStreamInfer', overGrpcStream, overGrpcStream],
  ['HTTP generate_stream', overGenerateStream, overGenerateStream],
  ['gRPC ModelStreamInfer, then HTTP generate_stream', overGrpcStream, overGenerateStream],
])('iterative decoupled sequences over %s', (_name, run, runLater) => {
  test('one response per step; a request started later joins the running one\'s batches (continuous batching)', async () => {
    const bound = triton.model('iter_m');
    iterativeExecutions.length = 0;
    iterativeStarts.clear();
    const held = { gate: gate(), entered: false };
    iterativeHold = held;
    const first = run(5);
    // The first request's second step waits; the second request arrives meanwhile.
    await waitFor(() => held.entered, 'iter_m holding step 1');
    const second = runLater(3);
    await waitFor(() => bound.pendingCount === 2, 'the second request queued');
    held.gate.open();
    expect(await first).toEqual([0, 1, 2, 3, 4]);
    expect(await second).toEqual([0, 1, 2]);
    const ids = [...new Set(iterativeExecutions.flat())];
    expect(ids).toHaveLength(2);
    const [r1, r2] = ids;
    // Ids from the iterative sequencer: far above any a client picks (2^63 + k).
    expect(BigInt(r1) >= 2n ** 63n).toBe(true);
    expect(iterativeExecutions).toEqual([[r1], [r1], [r1, r2], [r1, r2], [r1, r2]]);
    // START only on a request's first step (the iterative sequencer gives it START).
    expect([iterativeStarts.get(r1), iterativeStarts.get(r2)]).toEqual([[1, 0, 0, 0, 0], [1, 0, 0]]);
  });
});
