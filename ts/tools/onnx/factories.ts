/**
 * Ready-made ONNX models for examples, tests and the benchmark: identity, add/sub and a
 * seeded MLP. Every model's first dimension is the symbolic batch dimension "batch".
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
