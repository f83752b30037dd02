/**
 * Ready-made ONNX models for examples, tests and the benchmark: identity, add/sub, a seeded
 * MLP, a scale-and-shift preprocessing step and one step of a GRU-like recurrent cell. Every
 * model's first dimension is the symbolic batch dimension "batch".
 */
import type { DataType } from '../../tensor';
import { ElemType, ElemTypeValue, encodeModel, Dim, Node, Tensor } from './model';

/** Triton datatype names accepted by the factories; STRING is an alias of BYTES. */
export type ModelDatatype = DataType | 'STRING';

/** ONNX element type of each Triton datatype. */
export const ONNX_ELEM_TYPE: Readonly<Record<ModelDatatype, ElemTypeValue>> = {
  BOOL: ElemType.BOOL,
  UINT8: ElemType.UINT8,
  UINT16: ElemType.UINT16,
  UINT32: ElemType.UINT32,
  UINT64: ElemType.UINT64,
  INT8: ElemType.INT8,
  INT16: ElemType.INT16,
  INT32: ElemType.INT32,
  INT64: ElemType.INT64,
  FP16: ElemType.FLOAT16,
  FP32: ElemType.FLOAT,
  FP64: ElemType.DOUBLE,
  BYTES: ElemType.STRING,
  STRING: ElemType.STRING,
  BF16: ElemType.BFLOAT16,
};

/** Name of the symbolic batch dimension every factory model uses. */
export const BATCH_DIM = 'batch';

function elemType(dtype: ModelDatatype): ElemTypeValue {
  const t = ONNX_ELEM_TYPE[dtype];
  if (t === undefined) throw new Error(`unknown datatype ${String(dtype)}`);
  return t;
}

/**
 * One Identity node: INPUT0 → OUTPUT0, shape `[batch, ...dims]`. `dims` are the per-request
 * dimensions (as in a Triton config with max_batch_size > 0); a string names a symbolic
 * dimension, null leaves one unknown.
 */
export function identityModel(dtype: ModelDatatype, dims: readonly Dim[] = [16]): Buffer {
  const t = elemType(dtype);
  const shape = [BATCH_DIM, ...dims];
  return encodeModel({
    graph: {
      name: `identity_${dtype.toLowerCase()}`,
      nodes: [{ opType: 'Identity', name: 'identity', inputs: ['INPUT0'], outputs: ['OUTPUT0'] }],
      inputs: [{ name: 'INPUT0', elemType: t, dims: shape }],
      outputs: [{ name: 'OUTPUT0', elemType: t, dims: shape }],
    },
    docString: `Identity ${dtype} model made by infernode's ONNX writer`,
  });
}

/**
 * Triton's "simple" model: INPUT0, INPUT1 of shape `[batch, ...dims]` → OUTPUT0 = INPUT0 + INPUT1,
 * OUTPUT1 = INPUT0 − INPUT1 (ONNX Add/Sub: numeric types only).
 */
export function addSubModel(dtype: ModelDatatype, dims: readonly Dim[] = [16]): Buffer {
  const t = elemType(dtype);
  const shape = [BATCH_DIM, ...dims];
  return encodeModel({
    graph: {
      name: `add_sub_${dtype.toLowerCase()}`,
      nodes: [
        { opType: 'Add', name: 'add', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT0'] },
        { opType: 'Sub', name: 'sub', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT1'] },
      ],
      inputs: [{ name: 'INPUT0', elemType: t, dims: shape }, { name: 'INPUT1', elemType: t, dims: shape }],
      outputs: [{ name: 'OUTPUT0', elemType: t, dims: shape }, { name: 'OUTPUT1', elemType: t, dims: shape }],
    },
    docString: `Add/Sub ${dtype} model made by infernode's ONNX writer`,
  });
}

/** Weights of an MLP: `weights[i]` is row-major `[layers[i], layers[i+1]]`, `biases[i]` is `[layers[i+1]]`. */
export interface MlpWeights {
  layers: readonly number[];
  weights: Float32Array[];
  biases: Float32Array[];
}

/**
 * Deterministic MLP parameters: uniform in ±1/sqrt(fan_in) (PyTorch's Linear default range)
 * from a mulberry32 generator seeded with `seed`. The same layers and seed give the same bits.
 */
export function mlpWeights(layers: readonly number[], seed = 0): MlpWeights {
  if (layers.length < 2 || layers.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new Error(`an MLP needs at least two positive integer layer sizes, got [${layers.join(', ')}]`);
  }
  const random = mulberry32(seed);
  const weights: Float32Array[] = [];
  const biases: Float32Array[] = [];
  for (let l = 0; l + 1 < layers.length; l++) {
    const fanIn = layers[l]!;
    const fanOut = layers[l + 1]!;
    const bound = 1 / Math.sqrt(fanIn);
    const w = new Float32Array(fanIn * fanOut);
    for (let i = 0; i < w.length; i++) w[i] = (random() * 2 - 1) * bound;
    const b = new Float32Array(fanOut);
    for (let i = 0; i < b.length; i++) b[i] = (random() * 2 - 1) * bound;
    weights.push(w);
    biases.push(b);
  }
  return { layers: [...layers], weights, biases };
}

/** Names and metadata of an MLP model. */
export interface MlpOptions {
  /** Graph name (default "mlp"). */
  name?: string;
  /** Input name (default "input"). */
  inputName?: string;
  /** Output name (default "logits"). */
  outputName?: string;
}

/**
 * A multi-layer perceptron: `input [batch, layers[0]]` → (MatMul + Add, Relu between layers)
 * → `logits [batch, layers[last]]`, FP32 weights from {@link mlpWeights}. The weight bytes are
 * referenced, not copied, until the single final concatenation, so e.g. [256, 2048, 2048,
 * 2048, 10] (about 36 MB) is written quickly.
 */
export function mlpModel(layers: readonly number[], seed = 0, options: MlpOptions = {}): Buffer {
  const { weights, biases } = mlpWeights(layers, seed);
  const inputName = options.inputName ?? 'input';
  const outputName = options.outputName ?? 'logits';
  const nodes: Node[] = [];
  const initializers: Tensor[] = [];
  let current = inputName;
  const count = layers.length - 1;
  for (let l = 0; l < count; l++) {
    const last = l === count - 1;
    const w = `fc${l}.weight`;
    const b = `fc${l}.bias`;
    initializers.push(
      { name: w, elemType: ElemType.FLOAT, dims: [layers[l]!, layers[l + 1]!], raw: weights[l]! },
      { name: b, elemType: ElemType.FLOAT, dims: [layers[l + 1]!], raw: biases[l]! },
    );
    const product = `fc${l}.matmul`;
    const sum = last ? outputName : `fc${l}.out`;
    nodes.push({ opType: 'MatMul', name: `fc${l}/MatMul`, inputs: [current, w], outputs: [product] });
    nodes.push({ opType: 'Add', name: `fc${l}/Add`, inputs: [product, b], outputs: [sum] });
    current = sum;
    if (!last) {
      const relu = `relu${l}.out`;
      nodes.push({ opType: 'Relu', name: `relu${l}`, inputs: [current], outputs: [relu] });
      current = relu;
    }
  }
  return encodeModel({
    graph: {
      name: options.name ?? 'mlp',
      nodes,
      initializers,
      inputs: [{ name: inputName, elemType: ElemType.FLOAT, dims: [BATCH_DIM, layers[0]!] }],
      outputs: [{ name: outputName, elemType: ElemType.FLOAT, dims: [BATCH_DIM, layers[count]!] }],
    },
    docString: `MLP [${layers.join(', ')}] (seed ${seed}) made by infernode's ONNX writer`,
  });
}

/** Layer sizes of the example classifier (small enough to commit). */
export const CLASSIFIER_LAYERS: readonly number[] = [16, 32, 4];
/** Seed of the example classifier's weights. */
export const CLASSIFIER_SEED = 7;
/** Layer sizes of the benchmark MLP: weights (~36 MB) that do not fit in cache. */
export const BENCH_MLP_LAYERS: readonly number[] = [256, 2048, 2048, 2048, 10];
/** Seed of the benchmark MLP's weights. */
export const BENCH_MLP_SEED = 1;

/** The example classifier: MLP [16, 32, 4], input "input" [batch, 16], output "logits" [batch, 4]. */
export function classifierModel(): Buffer {
  return mlpModel(CLASSIFIER_LAYERS, CLASSIFIER_SEED, { name: 'mlp_classifier' });
}

/** The benchmark MLP: [256, 2048, 2048, 2048, 10], input "input" [batch, 256], output "logits" [batch, 10]. */
export function benchMlpModel(hidden = BENCH_MLP_LAYERS[1]!): Buffer {
  return mlpModel([256, hidden, hidden, hidden, 10], BENCH_MLP_SEED, { name: 'mlp_bench' });
}

// ---- the preprocessing model (the ensemble bench's first step) ----

/** Per-feature constants of a scale-and-shift preprocessing step: out = (x − mean) · invStd. */
export interface PreprocessParams {
  mean: Float32Array;
  invStd: Float32Array;
}

/** Seed of the ensemble bench's preprocessing constants. */
export const PREPROCESS_BENCH_SEED = 5;

/**
 * Deterministic preprocessing constants for `features` features from mulberry32(seed): means
 * uniform in [−0.5, 0.5), inverse standard deviations uniform in [0.5, 2).
 */
export function preprocessParams(features: number, seed = PREPROCESS_BENCH_SEED): PreprocessParams {
  if (!Number.isInteger(features) || features < 1) throw new Error(`a preprocessing model needs a positive integer feature count, got ${features}`);
  const random = mulberry32(seed);
  const mean = Float32Array.from({ length: features }, () => random() - 0.5);
  const invStd = Float32Array.from({ length: features }, () => 0.5 + random() * 1.5);
  return { mean, invStd };
}

/** Names of a preprocessing model. */
export interface PreprocessOptions {
  /** Graph name (default "preprocess"). */
  name?: string;
  /** Input name (default "raw"). */
  inputName?: string;
  /** Output name (default "features"). */
  outputName?: string;
}

/**
 * Standardization as a model: `raw [batch, features]` → Sub(mean) → Mul(invStd) →
 * `features [batch, features]`, FP32, the constants from {@link preprocessParams} as
 * initializers broadcast over the batch. {@link preprocess} is the same computation in JS.
 */
export function preprocessModel(features: number, seed = PREPROCESS_BENCH_SEED, options: PreprocessOptions = {}): Buffer {
  const { mean, invStd } = preprocessParams(features, seed);
  const inputName = options.inputName ?? 'raw';
  const outputName = options.outputName ?? 'features';
  return encodeModel({
    graph: {
      name: options.name ?? 'preprocess',
      nodes: [
        { opType: 'Sub', name: 'center', inputs: [inputName, 'mean'], outputs: ['centered'] },
        { opType: 'Mul', name: 'scale', inputs: ['centered', 'inv_std'], outputs: [outputName] },
      ],
      initializers: [
        { name: 'mean', elemType: ElemType.FLOAT, dims: [features], raw: mean },
        { name: 'inv_std', elemType: ElemType.FLOAT, dims: [features], raw: invStd },
      ],
      inputs: [{ name: inputName, elemType: ElemType.FLOAT, dims: [BATCH_DIM, features] }],
      outputs: [{ name: outputName, elemType: ElemType.FLOAT, dims: [BATCH_DIM, features] }],
    },
    docString: `Preprocessing (x - mean) * inv_std over ${features} features (seed ${seed}) made by infernode's ONNX writer`,
  });
}

/**
 * {@link preprocessModel}'s computation in JS on rows of `params.mean.length` features; each op
 * rounds to FP32 as ONNX Runtime's does, so the result is bit-identical.
 */
export function preprocess(params: PreprocessParams, x: Float32Array): Float32Array {
  const features = params.mean.length;
  if (x.length % features !== 0) throw new Error(`preprocess expects rows of ${features} features; got ${x.length} values`);
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const j = i % features;
    out[i] = Math.fround(Math.fround(x[i]! - params.mean[j]!) * params.invStd[j]!);
  }
  return out;
}

/** mulberry32: a small, fast 32-bit PRNG returning floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- the recurrent step model (stateful models, the sequence bench) ----

/**
 * Weights of a GRU-like cell. Input-side matrices are row-major `[inputSize, hidden]`, state-side
 * ones `[hidden, hidden]`, biases `[hidden]`; z is the update gate, r the reset gate, n the candidate.
 */
export interface RnnWeights {
  inputSize: number;
  hidden: number;
  wz: Float32Array; wr: Float32Array; wn: Float32Array;
  uz: Float32Array; ur: Float32Array; un: Float32Array;
  bz: Float32Array; br: Float32Array; bn: Float32Array;
}

/** Sizes of the sequence bench's RNN: 64 features in, 256 of state. */
export const RNN_BENCH_INPUT_SIZE = 64;
export const RNN_BENCH_HIDDEN = 256;
/** Seed of the sequence bench's RNN weights. */
export const RNN_BENCH_SEED = 3;

/**
 * Deterministic cell parameters: uniform in ±1/sqrt(hidden) (PyTorch's GRU default range) from
 * mulberry32(seed), drawn in the order of the {@link RnnWeights} fields.
 */
export function rnnWeights(inputSize = RNN_BENCH_INPUT_SIZE, hidden = RNN_BENCH_HIDDEN, seed = RNN_BENCH_SEED): RnnWeights {
  if (![inputSize, hidden].every((n) => Number.isInteger(n) && n >= 1)) {
    throw new Error(`an RNN needs positive integer sizes, got inputSize ${inputSize}, hidden ${hidden}`);
  }
  const random = mulberry32(seed);
  const bound = 1 / Math.sqrt(hidden);
  const draw = (n: number): Float32Array => Float32Array.from({ length: n }, () => (random() * 2 - 1) * bound);
  return {
    inputSize, hidden,
    wz: draw(inputSize * hidden), wr: draw(inputSize * hidden), wn: draw(inputSize * hidden),
    uz: draw(hidden * hidden), ur: draw(hidden * hidden), un: draw(hidden * hidden),
    bz: draw(hidden), br: draw(hidden), bn: draw(hidden),
  };
}

/** Sizes, seed and name of an RNN step model. */
export interface RnnOptions {
  /** Features per step (default 64). */
  inputSize?: number;
  /** State width (default 256). */
  hidden?: number;
  /** Weight seed (default {@link RNN_BENCH_SEED}). */
  seed?: number;
  /** Graph name (default "rnn_step"). */
  name?: string;
}

/**
 * One step of a GRU-like recurrent cell, batched along dim 0 ("batch"):
 *   z  = sigmoid(x·Wz + h·Uz + bz)            update gate
 *   r  = sigmoid(x·Wr + h·Ur + br)            reset gate
 *   n  = tanh(x·Wn + (r ⊙ h)·Un + bn)         candidate
 *   h' = n + z ⊙ (h − n)                      = (1 − z) ⊙ n + z ⊙ h
 * Inputs `INPUT` [batch, inputSize] and `STATE_IN` [batch, hidden]; outputs `OUTPUT` and
 * `STATE_OUT`, both h' [batch, hidden]. Rows are independent, so a batch of sequences computes
 * what each would alone. {@link rnnStep} is the same computation in JS.
 */
export function rnnStepModel(options: RnnOptions = {}): Buffer {
  const w = rnnWeights(options.inputSize, options.hidden, options.seed);
  const { inputSize, hidden } = w;
  const weight = (name: keyof RnnWeights, rows: number): Tensor =>
    ({ name, elemType: ElemType.FLOAT, dims: rows === 1 ? [hidden] : [rows, hidden], raw: w[name] as Float32Array });
  const initializers = [
    weight('wz', inputSize), weight('wr', inputSize), weight('wn', inputSize),
    weight('uz', hidden), weight('ur', hidden), weight('un', hidden),
    weight('bz', 1), weight('br', 1), weight('bn', 1),
  ];
  const op = (opType: string, inputs: string[], output: string): Node => ({ opType, name: output, inputs, outputs: [output] });
  /** x·W + s·U + b, each op's result rounded to FP32 as ONNX Runtime does. */
  const preactivation = (gate: 'z' | 'r' | 'n', state: string): Node[] => [
    op('MatMul', ['INPUT', `w${gate}`], `${gate}_x`),
    op('MatMul', [state, `u${gate}`], `${gate}_s`),
    op('Add', [`${gate}_x`, `${gate}_s`], `${gate}_xs`),
    op('Add', [`${gate}_xs`, `b${gate}`], `${gate}_pre`),
  ];
  const nodes: Node[] = [
    ...preactivation('z', 'STATE_IN'), op('Sigmoid', ['z_pre'], 'z'),
    ...preactivation('r', 'STATE_IN'), op('Sigmoid', ['r_pre'], 'r'),
    op('Mul', ['r', 'STATE_IN'], 'r_state'),
    ...preactivation('n', 'r_state'), op('Tanh', ['n_pre'], 'n'),
    op('Sub', ['STATE_IN', 'n'], 'h_minus_n'),
    op('Mul', ['z', 'h_minus_n'], 'z_h_minus_n'),
    op('Add', ['n', 'z_h_minus_n'], 'STATE_OUT'),
    op('Identity', ['STATE_OUT'], 'OUTPUT'),
  ];
  const rows = (name: string, width: number) => ({ name, elemType: ElemType.FLOAT, dims: [BATCH_DIM, width] });
  return encodeModel({
    graph: {
      name: options.name ?? 'rnn_step',
      nodes,
      initializers,
      inputs: [rows('INPUT', inputSize), rows('STATE_IN', hidden)],
      outputs: [rows('OUTPUT', hidden), rows('STATE_OUT', hidden)],
    },
    docString: `GRU-like RNN step, input ${inputSize}, hidden ${hidden} (seed ${options.seed ?? RNN_BENCH_SEED}) made by infernode's ONNX writer`,
  });
}

/**
 * {@link rnnStepModel}'s computation in JS: `x` is [batch, inputSize] and `h` [batch, hidden]
 * (row-major, batch = x.length / inputSize); returns h' [batch, hidden]. Each ONNX op's result
 * is rounded to FP32 (Math.fround) where the model's op ends; dot products sum in float64, so the
 * difference from ONNX Runtime is its own FP32 accumulation (a few 1e-7 relative).
 */
export function rnnStep(weights: RnnWeights, x: Float32Array, h: Float32Array): Float32Array {
  const { inputSize, hidden } = weights;
  const batch = x.length / inputSize;
  if (!Number.isInteger(batch) || h.length !== batch * hidden) {
    throw new Error(`rnnStep expects x of [batch, ${inputSize}] and h of [batch, ${hidden}]; got ${x.length} and ${h.length} values`);
  }
  const f = Math.fround;
  const out = new Float32Array(batch * hidden);
  const rh = new Float32Array(hidden);
  /** fround(fround(fround(x·W) + fround(s·U)) + b) for column j of one row. */
  const pre = (xr: Float32Array, W: Float32Array, s: Float32Array, U: Float32Array, b: Float32Array, j: number): number => {
    let xw = 0;
    for (let i = 0; i < inputSize; i++) xw += xr[i]! * W[i * hidden + j]!;
    let su = 0;
    for (let i = 0; i < hidden; i++) su += s[i]! * U[i * hidden + j]!;
    return f(f(f(xw) + f(su)) + b[j]!);
  };
  const sigmoid = (v: number): number => f(1 / (1 + Math.exp(-v)));
  for (let row = 0; row < batch; row++) {
    const xr = x.subarray(row * inputSize, (row + 1) * inputSize);
    const hr = h.subarray(row * hidden, (row + 1) * hidden);
    for (let j = 0; j < hidden; j++) rh[j] = f(sigmoid(pre(xr, weights.wr, hr, weights.ur, weights.br, j)) * hr[j]!);
    for (let j = 0; j < hidden; j++) {
      const z = sigmoid(pre(xr, weights.wz, hr, weights.uz, weights.bz, j));
      const n = f(Math.tanh(pre(xr, weights.wn, rh, weights.un, weights.bn, j)));
      out[row * hidden + j] = f(n + f(z * f(hr[j]! - n)));
    }
  }
  return out;
}
