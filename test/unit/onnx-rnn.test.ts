/**
 * The recurrent step model of the ONNX writer (rnnStepModel) against its JS reference (rnnStep):
 * the model runs in onnxruntime-node for several steps, its STATE_OUT fed back as STATE_IN, and
 * every step's OUTPUT and STATE_OUT match the reference run on its own chain of states.
 *
 * onnxruntime-node runs in a child process, as in onnx-writer.test.ts: its ONNX Runtime must not
 * share a process with the one infernode's addon loads, and under Jest's sandbox its outputs
 * would be typed arrays of another realm. Data crosses by structured clone.
 */
import { startOrtChild, type OrtChild } from './ort-child';
import {
  BATCH_DIM, RNN_BENCH_HIDDEN, RNN_BENCH_INPUT_SIZE, mulberry32, rnnStep, rnnStepModel, rnnWeights,
} from '../../ts/tools/onnx';

/** What the child answers: the session's names and, per step, OUTPUT and STATE_OUT. */
interface Steps {
  inputNames: string[];
  outputNames: string[];
  steps: { output: Float32Array; state: Float32Array; dims: number[] }[];
}

// The child loads the model once and runs the steps in order, feeding each STATE_OUT back as
// the next STATE_IN (zeros at the first step), as a sequence batcher with implicit state does.
const ORT_CHILD = `
const ort = require(process.argv[1]);
process.on('message', async ({ id, model, batch, hidden, inputs }) => {
  try {
    const session = await ort.InferenceSession.create(model);
    let state = new Float32Array(batch * hidden);
    const steps = [];
    for (const x of inputs) {
      const out = await session.run({
        INPUT: new ort.Tensor('float32', x, [batch, x.length / batch]),
        STATE_IN: new ort.Tensor('float32', state, [batch, hidden]),
      });
      steps.push({ output: out.OUTPUT.data, state: out.STATE_OUT.data, dims: out.OUTPUT.dims });
      state = out.STATE_OUT.data;
    }
    process.send({ id, result: { inputNames: session.inputNames, outputNames: session.outputNames, steps } });
    await session.release();
  } catch (e) {
    process.send({ id, error: String((e && e.stack) || e) });
  }
});
process.on('disconnect', () => process.exit(0));`;

let ort: OrtChild<{ model: Buffer; batch: number; hidden: number; inputs: Float32Array[] }, Steps>;

beforeAll(() => {
  ort = startOrtChild(ORT_CHILD);
});
afterAll(() => ort.close());

function runSteps(model: Buffer, batch: number, hidden: number, inputs: Float32Array[]): Promise<Steps> {
  return ort.run({ model, batch, hidden, inputs });
}

/** Step inputs in ±2 (large enough to drive the gates towards saturation and back). */
function stepInputs(steps: number, batch: number, inputSize: number, seed: number): Float32Array[] {
  const random = mulberry32(seed);
  return Array.from({ length: steps }, () => Float32Array.from({ length: batch * inputSize }, () => (random() * 2 - 1) * 2));
}

/**
 * Largest |got − want| over the row, relative to the row's largest |want|: normwise, because a
 * state element that cancels to near zero carries the FP32 rounding of its terms (about 2e-7
 * absolute for hidden 256), which no elementwise relative bound can hold.
 */
function worstRelative(got: Float32Array, want: Float32Array, width: number): number {
  let worst = 0;
  for (let row = 0; row * width < want.length; row++) {
    let scale = 0;
    let diff = 0;
    for (let i = row * width; i < (row + 1) * width; i++) {
      scale = Math.max(scale, Math.abs(want[i]!));
      diff = Math.max(diff, Math.abs(got[i]! - want[i]!));
    }
    worst = Math.max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

describe('rnnStepModel in onnxruntime-node', () => {
  it.each([
    ['the bench sizes', RNN_BENCH_INPUT_SIZE, RNN_BENCH_HIDDEN, undefined, 4],
    ['small sizes, another seed', 8, 16, 42, 3],
    ['one sequence', 5, 32, 7, 1],
  ] as const)('matches rnnStep for 6 steps with %s', async (_name, inputSize, hidden, seed, batch) => {
    const inputs = stepInputs(6, batch, inputSize, 100 + batch);
    const run = await runSteps(rnnStepModel({ inputSize, hidden, seed }), batch, hidden, inputs);
    expect(run.inputNames).toEqual(['INPUT', 'STATE_IN']);
    expect(run.outputNames).toEqual(['OUTPUT', 'STATE_OUT']);
    const weights = rnnWeights(inputSize, hidden, seed);
    let state: Float32Array = new Float32Array(batch * hidden);
    for (const [k, x] of inputs.entries()) {
      const want = rnnStep(weights, x, state);
      const got = run.steps[k]!;
      expect(got.dims).toEqual([batch, hidden]);
      expect(Array.from(got.output)).toEqual(Array.from(got.state));
      expect(worstRelative(got.state, want, hidden)).toBeLessThanOrEqual(1e-6);
      // The state moves: a model that ignored STATE_IN or INPUT would not keep matching.
      expect(want.some((v, i) => v !== state[i])).toBe(true);
      state = want;
    }
  });

  it('computes each row of a batch as that sequence alone', async () => {
    const [inputSize, hidden, batch] = [RNN_BENCH_INPUT_SIZE, RNN_BENCH_HIDDEN, 3];
    const inputs = stepInputs(4, batch, inputSize, 9);
    const together = await runSteps(rnnStepModel(), batch, hidden, inputs);
    for (let row = 0; row < batch; row++) {
      const alone = await runSteps(rnnStepModel(), 1, hidden, inputs.map((x) => x.slice(row * inputSize, (row + 1) * inputSize)));
      for (const [k, step] of alone.steps.entries()) {
        const slice = together.steps[k]!.state.subarray(row * hidden, (row + 1) * hidden);
        expect(worstRelative(slice, step.state, hidden)).toBeLessThanOrEqual(1e-6);
      }
    }
  });
});

describe('rnnStepModel and rnnWeights', () => {
  it('are deterministic in the seed', () => {
    expect(rnnStepModel({ seed: 5 }).equals(rnnStepModel({ seed: 5 }))).toBe(true);
    expect(rnnStepModel({ seed: 5 }).equals(rnnStepModel({ seed: 6 }))).toBe(false);
    const w = rnnWeights(4, 8, 1);
    expect(w.wz).toHaveLength(32);
    expect(w.uz).toHaveLength(64);
    expect(w.bn).toHaveLength(8);
    expect(Math.max(...[w.wz, w.ur, w.bn].flatMap((a) => Array.from(a, Math.abs)))).toBeLessThanOrEqual(1 / Math.sqrt(8));
  });

  it('declare the batch dimension symbolic', () => {
    expect(rnnStepModel().includes(Buffer.from(BATCH_DIM))).toBe(true);
  });

  it('refuse mismatched sizes with what was expected', () => {
    const w = rnnWeights(4, 8, 1);
    expect(() => rnnStep(w, new Float32Array(6), new Float32Array(8)))
      .toThrow('rnnStep expects x of [batch, 4] and h of [batch, 8]; got 6 and 8 values');
    expect(() => rnnWeights(0, 8)).toThrow('an RNN needs positive integer sizes, got inputSize 0, hidden 8');
  });
});
