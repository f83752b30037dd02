/**
 * A real recurrent ONNX model behind the sequence batcher (issue 8): the project's RNN step
 * (rnnStepModel: INPUT, STATE_IN → OUTPUT, STATE_OUT) served from a repository with
 * `sequence_batching { direct, state [STATE_IN ← STATE_OUT, zeros at START] }`. Interleaved
 * sequences, whose steps run batched together, each match the same steps run alone by the JS
 * reference (rnnStep) within 1e-6 (normwise: largest difference over the largest value), in
 * process and over gRPC ModelStreamInfer with the sequence_id / sequence_start / sequence_end
 * request parameters; START with a live id begins again from the initial state.
 */
import { NDArray } from '../../../ts/tensor';
import { RNN_BENCH_HIDDEN, RNN_BENCH_INPUT_SIZE, rnnStep, rnnStepModel, rnnWeights } from '../../../ts/tools/onnx';
import { SequenceStream, normwiseError, stepRequest } from '../../../ts/bench/sequence-load';
import { TempRepo, startRepoTriton, type Served } from './repo-helpers';

const [INPUT_SIZE, HIDDEN, SEED] = [RNN_BENCH_INPUT_SIZE, RNN_BENCH_HIDDEN, 11];
const MODEL = 'rnn';
const STEPS = 5;

const CONFIG = `
  platform: "onnxruntime_onnx"
  max_batch_size: 8
  input [ { name: "INPUT", data_type: TYPE_FP32, dims: [ ${INPUT_SIZE} ] } ]
  output [ { name: "OUTPUT", data_type: TYPE_FP32, dims: [ ${HIDDEN} ] } ]
  sequence_batching {
    max_sequence_idle_microseconds: 5000000
    direct { }
    state [ {
      input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ ${HIDDEN} ]
      initial_state: { data_type: TYPE_FP32 dims: [ ${HIDDEN} ] zero_data: true name: "zeros" }
    } ]
  }
  instance_group [ { count: 1, kind: KIND_CPU } ]`;

const weights = rnnWeights(INPUT_SIZE, HIDDEN, SEED);

/** Step k of sequence s: distinct per sequence and step, so swapped states would show. */
const inputOf = (s: number, k: number): Float32Array =>
  Float32Array.from({ length: INPUT_SIZE }, (_, i) => Math.sin(0.37 * i + 1.3 * k + 2.1 * s) * 1.5);

/** The outputs each sequence should produce: rnnStep chained from zeros, one sequence alone. */
function expectedChain(s: number): Float32Array[] {
  const chain: Float32Array[] = [];
  let state: Float32Array = new Float32Array(HIDDEN);
  for (let k = 0; k < STEPS; k++) chain.push(state = rnnStep(weights, inputOf(s, k), state));
  return chain;
}

let repo: TempRepo;
let served: Served | undefined;

beforeEach(() => {
  repo = new TempRepo('sequence-rnn');
  repo.onnx(MODEL, 1, rnnStepModel({ inputSize: INPUT_SIZE, hidden: HIDDEN, seed: SEED }));
  repo.config(MODEL, CONFIG);
});

/** Serves the repository; the model must load (its index entry's reason tells why not). */
async function serveRnn(config: Parameters<typeof startRepoTriton>[1] = {}): Promise<Served> {
  served = await startRepoTriton(repo.root, config);
  const entry = served.manager.index().find((e) => e.name === MODEL);
  expect({ state: entry?.state, reason: entry?.reason }).toEqual({ state: 'READY', reason: '' });
  return served;
}

afterEach(async () => {
  await served?.triton.stop();
  served = undefined;
  repo.cleanup();
});

test('in process: interleaved sequences, batched step by step, each match rnnStep alone', async () => {
  const { triton } = await serveRnn();
  const sequences = [1, 2, 3, 4];
  const expected = sequences.map(expectedChain);
  for (let k = 0; k < STEPS; k++) {
    // Every sequence's step k is in flight at once: they share batches.
    const outputs = await Promise.all(sequences.map((s) => triton.infer(MODEL,
      { INPUT: new NDArray('FP32', [1, INPUT_SIZE], inputOf(s, k)) },
      { sequenceId: BigInt(1000 + s), sequenceStart: k === 0, sequenceEnd: k === STEPS - 1 })));
    for (const [i, out] of outputs.entries()) {
      expect(out.OUTPUT.shape).toEqual([1, HIDDEN]);
      expect(normwiseError(out.OUTPUT.data as Float32Array, expected[i]![k]!)).toBeLessThanOrEqual(1e-6);
    }
  }
  const stats = triton.model(MODEL).stats();
  expect(stats.inferenceCount).toBe(sequences.length * STEPS);
});

test('gRPC ModelStreamInfer: sequences on their own streams match rnnStep; START with a live id begins again', async () => {
  const { triton } = await serveRnn({ config: { allowGrpc: true, grpcAddress: '127.0.0.1', grpcPort: 0 } });
  const port = triton.ports.grpc!;
  const sequences = [5, 6, 7];
  const streams = sequences.map(() => new SequenceStream(port));
  try {
    const expected = sequences.map(expectedChain);
    for (let k = 0; k < STEPS; k++) {
      const replies = await Promise.all(sequences.map((s, i) =>
        streams[i]!.step(stepRequest(MODEL, BigInt(s), k === 0, false, inputOf(s, k)))));
      for (const [i, reply] of replies.entries()) {
        expect(reply.error).toBe('');
        expect(normwiseError(reply.output!, expected[i]![k]!)).toBeLessThanOrEqual(1e-6);
      }
    }
    // Sequence 5 starts again under the same id: its first step is step 0 from zeros again.
    const again = await streams[0]!.step(stepRequest(MODEL, 5n, true, true, inputOf(5, 0)));
    expect(again.error).toBe('');
    expect(normwiseError(again.output!, expected[0]![0]!)).toBeLessThanOrEqual(1e-6);
    for (const [i, s] of sequences.slice(1).entries()) {
      const end = await streams[i + 1]!.step(stepRequest(MODEL, BigInt(s), false, true, inputOf(s, STEPS)));
      expect(end.error).toBe('');
    }
  } finally {
    for (const stream of streams) stream.close();
  }
});
