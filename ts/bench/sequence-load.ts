/**
 * The sequence bench's load generator, run as a child process so clients never share a server's
 * event loop. Each of `sequences` workers opens one ModelStreamInfer call (node:http2 directly,
 * as stream-load.ts does) and runs sequences of `steps` steps on it, one after another: each
 * step is one request carrying `sequence_id` (uint64_param), `sequence_start` / `sequence_end`
 * (bool_param) and INPUT [1, inputSize]; the next step leaves when the previous step's response
 * has come. The state is the server's business (infernode's implicit state, the naive server's
 * Map), so both servers get the same bytes.
 *
 * During warm-up every worker checks its first whole sequence against the JS reference
 * (rnnStep), so a server that mixed up or dropped state would show as mismatches, not as speed.
 * When the window closes a worker ends its open sequence with one unmeasured END step, so the
 * server's slots are free for the next cell.
 *
 * Protocol with the parent (bench/sequence.ts): argv = port, model, sequences, steps, inputSize,
 * hidden, id base; the child warms up and sends {type:'ready'}; on {type:'go', durationMs} it
 * measures and sends {type:'result'} (latencies as a Float64Array: fork with advanced
 * serialization).
 */
import { connect, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { decodeStreamResponse, type InferParam, type ParamMap } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';
import { rnnStep, rnnWeights, RNN_BENCH_SEED } from '../tools/onnx/factories';
import { Deframer } from './stream-load';

export interface SequenceChildResult {
  type: 'result';
  steps: number;
  sequences: number;
  errors: number;
  /** The first error message seen, to tell why (e.g. the model refused sequence batching). */
  firstError: string;
  seconds: number;
  /** Per measured step: send → response (µs). */
  stepUs: Float64Array;
  /** Warm-up sequences checked against rnnStep, and how many of them differed. */
  verified: number;
  mismatches: number;
}

/** Inputs of the bench: step k of a sequence whose id ≡ v (mod VARIANTS) gets inputs[v][k]. */
const VARIANTS = 7;

/** Warm-up: at least this long, and until every worker has verified one whole sequence. */
const WARMUP_MS = 1000;

/** Normwise tolerance of the warm-up check: ONNX Runtime's FP32 sums over many steps, not a bit match. */
const VERIFY_TOLERANCE = 1e-4;

export interface StepReply {
  ok: boolean;
  error: string;
  output: Float32Array | null;
}

/** One ModelStreamInfer call on its own connection; steps go one at a time (also used by the sequence tests). */
export class SequenceStream {
  readonly #session: ClientHttp2Session;
  readonly #stream: ClientHttp2Stream;
  #waiting: ((reply: StepReply) => void) | null = null;

  constructor(port: number) {
    this.#session = connect(`http://127.0.0.1:${port}`);
    this.#stream = this.#session.request({
      ':method': 'POST', ':path': '/inference.GRPCInferenceService/ModelStreamInfer', 'content-type': 'application/grpc', te: 'trailers',
    });
    const deframer = new Deframer();
    this.#stream.on('data', (chunk: Buffer) => deframer.push(chunk, (message) => {
      const response = decodeStreamResponse(message);
      const raw = response.inferResponse?.rawOutputContents[0];
      const output = raw ? new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)) : null;
      this.#settle({ ok: !response.errorMessage && output !== null, error: response.errorMessage || (output ? '' : 'no OUTPUT'), output });
    }));
    const closed = (): void => this.#settle({ ok: false, error: 'the stream closed', output: null });
    this.#stream.on('error', closed);
    this.#stream.on('close', closed);
  }

  #settle(reply: StepReply): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.(reply);
  }

  step(framed: Buffer): Promise<StepReply> {
    return new Promise((resolve) => {
      this.#waiting = resolve;
      this.#stream.write(framed);
    });
  }

  close(): void {
    this.#stream.end();
    this.#session.close();
  }
}

/** A gRPC frame (flag 0, big-endian length) around one ModelInferRequest. */
function frame(body: Buffer): Buffer {
  const framed = Buffer.alloc(5 + body.length);
  framed.writeUInt32BE(body.length, 1);
  body.copy(framed, 5);
  return framed;
}

export function stepRequest(model: string, id: bigint, start: boolean, end: boolean, input: Float32Array): Buffer {
  // Both flags on every request, as tritonclient sends them for a sequence request.
  const parameters: ParamMap = new Map<string, InferParam>([
    ['sequence_id', { kind: 'uint64', value: id }],
    ['sequence_start', { kind: 'bool', value: start }],
    ['sequence_end', { kind: 'bool', value: end }],
  ]);
  return frame(encodeInferRequest({
    modelName: model, parameters,
    inputs: [{ name: 'INPUT', datatype: 'FP32', shape: [1, input.length] }],
    outputs: [{ name: 'OUTPUT' }],
    rawInputContents: [new Uint8Array(input.buffer, input.byteOffset, input.byteLength)],
  }));
}

/** Largest |got − want| relative to the largest |want| (state elements near zero carry rounding). */
export function normwiseError(got: Float32Array, want: Float32Array): number {
  let scale = 0;
  let diff = 0;
  for (let i = 0; i < want.length; i++) {
    scale = Math.max(scale, Math.abs(want[i]!));
    diff = Math.max(diff, Math.abs((got[i] ?? NaN) - want[i]!));
  }
  return got.length === want.length ? diff / (scale || 1) : Infinity;
}

function main(): void {
  const [port, model, sequences, steps, inputSize, hidden, idBase] = [
    Number(process.argv[2]), process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]),
    Number(process.argv[6]), Number(process.argv[7]), BigInt(process.argv[8]!),
  ];
  const inputs = Array.from({ length: VARIANTS }, (_, v) => Array.from({ length: steps }, (_, k) =>
    Float32Array.from({ length: inputSize }, (_, i) => Math.sin(0.37 * i + 1.3 * k + 2.1 * v) * 1.5)));
  const weights = rnnWeights(inputSize, hidden, RNN_BENCH_SEED);
  // The JS reference's states per variant, computed once: every sequence of a variant gets the
  // same inputs, so its outputs must match the same states (rnnStep of the large model costs
  // milliseconds, and 32 workers each recomputing it made warm-up outlast the bench's limit).
  const reference = inputs.map((): Float32Array[] => []);
  const expected = (v: number, k: number): Float32Array => {
    const states = reference[v]!;
    while (states.length <= k) states.push(rnnStep(weights, inputs[v]![states.length]!, states.at(-1) ?? new Float32Array(hidden)));
    return states[k]!;
  };
  let phase: 'warmup' | 'measure' | 'done' = 'warmup';
  let measureEnd = 0;
  let nextId = idBase;
  const latencies: number[] = [];
  const counts = { steps: 0, sequences: 0, errors: 0, verified: 0, mismatches: 0, firstError: '' };
  let warmedUp = 0;

  const fail = (reply: StepReply): void => {
    if (phase !== 'measure') return;
    counts.errors++;
    if (!counts.firstError) counts.firstError = reply.error;
  };

  /** One worker: sequences back to back until the window closes; the first one verified. */
  const worker = async (): Promise<void> => {
    const stream = new SequenceStream(port);
    let verify = true;
    while (phase !== 'done') {
      const id = nextId++;
      const v = Number(id % BigInt(VARIANTS));
      const variant = inputs[v]!;
      let mismatch = false;
      let k = 0;
      for (; k < steps && phase !== 'done'; k++) {
        const request = stepRequest(model, id, k === 0, k === steps - 1, variant[k]!);
        const measured = phase === 'measure';
        const t0 = performance.now();
        const reply = await stream.step(request);
        const t1 = performance.now();
        if (!reply.ok) {
          fail(reply);
          if (phase === 'warmup' && !counts.firstError) counts.firstError = reply.error;
          break;
        }
        if (measured && t1 <= measureEnd) {
          counts.steps++;
          latencies.push((t1 - t0) * 1000);
        } else if (measured) {
          phase = 'done';
        }
        if (verify && reply.output && normwiseError(reply.output, expected(v, k)) > VERIFY_TOLERANCE) mismatch = true;
      }
      if (k === steps) {
        if (phase === 'measure') counts.sequences++;
      } else if (k > 0) {
        // Closed mid-sequence (window over, or an error): END it so its slot is freed now.
        await stream.step(stepRequest(model, id, false, true, variant[Math.min(k, steps - 1)]!));
      }
      if (verify && k === steps) {
        verify = false;
        counts.verified++;
        if (mismatch) counts.mismatches++;
        warmedUp++;
      } else if (verify && phase === 'warmup') {
        // The verified sequence failed: count it as warmed up so the bench goes on and reports the error.
        verify = false;
        warmedUp++;
      }
    }
    stream.close();
  };

  const running = Promise.all(Array.from({ length: sequences }, () => worker()));
  const warmupEnd = performance.now() + WARMUP_MS;
  const ready = setInterval(() => {
    if (warmedUp < sequences || performance.now() < warmupEnd) return;
    clearInterval(ready);
    process.send!({ type: 'ready' });
  }, 200);
  process.on('message', (m: { type: string; durationMs: number }) => {
    if (m.type !== 'go') return;
    const start = performance.now();
    measureEnd = start + m.durationMs;
    phase = 'measure';
    setTimeout(() => { phase = 'done'; }, m.durationMs).unref();
    void running.then(() => {
      const result: SequenceChildResult = {
        type: 'result', ...counts, seconds: m.durationMs / 1000, stepUs: Float64Array.from(latencies),
      };
      process.send!(result, () => process.exit(0));
    });
  });
}

if (require.main === module) main();
