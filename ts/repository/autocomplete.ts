/**
 * Triton's auto-complete for ONNX models (without --strict-model-config), as its onnxruntime
 * backend does it: when config.pbtxt leaves out the inputs or the outputs, they come from the
 * model file, a max_batch_size of 0 becomes 4 for a model that can batch, and a max_batch_size
 * > 1 gets `dynamic_batching {}`; a config listing both is not completed. Works on the protobuf-JSON form of the config
 * (snake_case field names) before normalization. A config that contradicts the model file is an
 * INVALID_ARG load error naming the tensor; the one datatype difference allowed is TYPE_FP32 for
 * an FP16 or BF16 tensor (the server converts).
 */
import { invalidArg } from '../errors';
import type { OnnxTensorInfo } from '../native';
import type { NormalizedModelConfig, NormalizedTensor } from '../config/normalize';

/** Triton's `--backend-config=default-max-batch-size` default. */
export const DEFAULT_MAX_BATCH_SIZE = 4;

type ConfigTensor = { name: string; data_type?: string; dims?: (number | string)[]; [key: string]: unknown };
export type RawModelConfig = Record<string, unknown> & {
  max_batch_size?: number | string;
  input?: ConfigTensor[];
  output?: ConfigTensor[];
};

const tritonType = (dtype: string): string => (dtype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${dtype}`);

function allBatched(tensors: OnnxTensorInfo[]): boolean {
  return tensors.length > 0 && tensors.every((t) => t.dims.length >= 1 && t.dims[0] === -1);
}

/**
 * Whether a config may serve `served` for a model tensor of `modelDtype`, converted on the way in
 * and out (cpp/core/half_float.h; on a GPU by kernels on the instance's stream): TYPE_FP32 for
 * an FP16 or BF16 tensor, nothing else.
 */
function isCastPair(served: string, modelDtype: string): boolean {
  return served === 'TYPE_FP32' && (modelDtype === 'FP16' || modelDtype === 'BF16');
}

/**
 * The tensors a completed config serves as FP32 while the model computes them in FP16 or BF16
 * (for the load log), e.g. `input 'x' (FP16)`.
 */
export function castTensors(config: RawModelConfig, inputs: OnnxTensorInfo[], outputs: OnnxTensorInfo[]): string[] {
  const cast = (kind: string, declared: ConfigTensor[] | undefined, actual: OnnxTensorInfo[]): string[] =>
    (declared ?? []).flatMap((tensor) => {
      const match = actual.find((t) => t.name === tensor.name);
      return match && tensor.data_type && isCastPair(tensor.data_type, match.dtype) ? [`${kind} '${tensor.name}' (${match.dtype})`] : [];
    });
  return [...cast('input', config.input, inputs), ...cast('output', config.output, outputs)];
}

/**
 * The onnxruntime backend's dims check (onnxruntime_utils.cc CompareDimsSupported), with its
 * texts; a config dim of -1 also matches a fixed model dim (the backend wants them equal).
 */
function checkDims(model: string, name: string, modelDims: number[], dims: number[], batching: boolean): void {
  const shape = (d: number[]): string => `[${d.join(',')}]`;
  if (batching && (modelDims.length === 0 || modelDims[0] !== -1)) {
    throw invalidArg(`model '${model}', tensor '${name}': for the model to support batching the shape should have at least 1 ` +
      `dimension and the first dimension must be -1; but shape expected by the model is ${shape(modelDims)}`);
  }
  if (!batching && modelDims.length === 0) {
    // A scalar (rank 0) in a model that does not batch: served as dims of 1s (onnxruntime
    // backend's ValidateInputs / ValidateOutputs), fed to ONNX Runtime as rank 0.
    if (dims.every((d) => d === 1)) return;
    throw invalidArg(`unable to load model '${model}', scalar tensor '${name}', should only provide 1 in the model ` +
      `configuration when the model doesn't support batching. Model configuration provided: ${shape(dims)}.`);
  }
  const full = batching ? [-1, ...dims] : dims;
  const fits = full.length === modelDims.length && full.every((d, i) => modelDims[i] === -1 || d === -1 || d === modelDims[i]);
  if (fits) return;
  throw invalidArg(`model '${model}', tensor '${name}': the model expects ${modelDims.length} dimensions (shape ` +
    `${shape(modelDims)}) but the model configuration specifies ${full.length} dimensions ` + (batching
    ? `(an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape ${shape(full)})`
    : `(shape ${shape(full)})`));
}

/** Each declared tensor against the model's, as the onnxruntime backend's ValidateInputs/ValidateOutputs do, with their texts. */
function checkAgainstModel(model: string, kind: string, declared: ConfigTensor[], actual: OnnxTensorInfo[], batching: boolean): void {
  for (const tensor of declared) {
    const match = actual.find((t) => t.name === tensor.name);
    if (!match) {
      throw invalidArg(`model '${model}': unexpected inference ${kind} '${tensor.name}', allowed ${kind}s are: ${actual.map((t) => t.name).join(', ')}`);
    }
    if (tensor.data_type && tensor.data_type !== tritonType(match.dtype) && !isCastPair(tensor.data_type, match.dtype)) {
      throw invalidArg(`unable to load model '${model}', configuration expects datatype ${tensor.data_type} for ${kind} ` +
        `'${tensor.name}', model provides ${tritonType(match.dtype)}`);
    }
    if (tensor.dims && !tensor.reshape) checkDims(model, tensor.name, match.dims, tensor.dims.map(Number), batching);
  }
}

/**
 * The onnxruntime backend's AutoCompleteMaxBatch: a model whose every tensor has a dynamic
 * first dimension can batch, and a max_batch_size of 0 (left out, or 0: the backend cannot
 * tell them apart) becomes the default 4; any size above 1 gets `dynamic_batching {}` when no
 * scheduler is set. A model that cannot batch with a non-zero max_batch_size fails with its text.
 */
function completeMaxBatch(model: string, out: RawModelConfig, inputs: OnnxTensorInfo[], outputs: OnnxTensorInfo[]): void {
  const size = Number(out.max_batch_size ?? 0);
  if (!(allBatched(inputs) && allBatched(outputs))) {
    if (size !== 0) {
      throw invalidArg(`autofill failed for model '${model}': model does not support batching while non-zero max_batch_size is specified`);
    }
    out.max_batch_size = 0;
    return;
  }
  if (size === 0) out.max_batch_size = DEFAULT_MAX_BATCH_SIZE;
  const scheduled = out.dynamic_batching || out.sequence_batching || out.ensemble_scheduling;
  if (Number(out.max_batch_size) > 1 && !scheduled) out.dynamic_batching = {};
}

/** Config tensors for the model's, as AutoCompleteIO writes them: a scalar gets dims [1] (a model with one cannot batch). */
function fromModel(tensors: OnnxTensorInfo[], batching: boolean): ConfigTensor[] {
  return tensors.map((t) => ({
    name: t.name, data_type: tritonType(t.dtype), dims: t.dims.length === 0 ? [1] : batching ? t.dims.slice(1) : t.dims,
  }));
}

/**
 * Marks the tensors a model that does not batch has as scalars (rank 0) and the config serves
 * with dims of 1s: the engine sees them through an empty reshape (it feeds and reads rank 0),
 * which the served config does not print (Triton's config has none: its backend does this).
 */
export function markScalarTensors(config: NormalizedModelConfig, inputs: OnnxTensorInfo[], outputs: OnnxTensorInfo[]): void {
  if (config.maxBatchSize > 0) return;
  const mark = (tensors: NormalizedTensor[], model: OnnxTensorInfo[]): void => {
    for (const t of tensors) {
      if (t.reshape === undefined && model.find((m) => m.name === t.name)?.dims.length === 0) {
        t.reshape = [];
        t.scalar = true;
      }
    }
  };
  mark(config.inputs, inputs);
  mark(config.outputs, outputs);
}

/** A tensor the sequence batcher feeds (an input) or takes (an output), with the datatype the config gives it. */
interface FedTensor {
  name: string;
  /** `TYPE_*`; undefined when the config leaves it out (its own check reports that). */
  dataType?: string;
  what: string;
}

const CONTROL_TYPES: Record<string, string> = { int32_false_true: 'TYPE_INT32', fp32_false_true: 'TYPE_FP32', bool_false_true: 'TYPE_BOOL' };

function controlDataType(control: Record<string, unknown>): string | undefined {
  if (control.kind === 'CONTROL_SEQUENCE_CORRID') return control.data_type as string | undefined;
  const list = Object.keys(CONTROL_TYPES).find((key) => Array.isArray(control[key]) && (control[key] as unknown[]).length > 0);
  return list ? CONTROL_TYPES[list] : undefined;
}

/** The control and state tensors of `sequence_batching`: inputs the batcher feeds, outputs it keeps. */
function sequenceTensors(config: RawModelConfig): { inputs: FedTensor[]; outputs: FedTensor[] } {
  const sb = config.sequence_batching as Record<string, unknown> | undefined;
  const inputs: FedTensor[] = [];
  const outputs: FedTensor[] = [];
  if (!sb) return { inputs, outputs };
  for (const ci of (sb.control_input ?? []) as Record<string, unknown>[]) {
    const control = ((ci.control ?? []) as Record<string, unknown>[])[0] ?? {};
    inputs.push({ name: String(ci.name ?? ''), dataType: controlDataType(control), what: `control input (${String(control.kind ?? 'CONTROL_SEQUENCE_START')})` });
  }
  for (const st of (sb.state ?? []) as Record<string, unknown>[]) {
    const dataType = st.data_type as string | undefined;
    inputs.push({ name: String(st.input_name ?? ''), dataType, what: 'state input_name' });
    outputs.push({ name: String(st.output_name ?? ''), dataType, what: 'state output_name' });
  }
  return { inputs, outputs };
}

/**
 * Each tensor the sequence batcher feeds or takes must be one of the ONNX model's, with the
 * same datatype (Triton's onnxruntime backend: "configuration specified sequence control ...,
 * but model does not provide that input").
 */
function checkFedAgainstModel(model: string, kind: 'input' | 'output', fed: FedTensor[], actual: OnnxTensorInfo[]): void {
  for (const tensor of fed) {
    const match = actual.find((t) => t.name === tensor.name);
    if (!match) {
      throw invalidArg(`model '${model}': sequence_batching ${tensor.what} '${tensor.name}' is not an ${kind} of the ONNX ` +
        `model (its ${kind}s: ${actual.map((t) => t.name).join(', ')})`);
    }
    if (tensor.dataType && tensor.dataType !== 'TYPE_INVALID' && tensor.dataType !== tritonType(match.dtype)) {
      throw invalidArg(`model '${model}': sequence_batching ${tensor.what} '${tensor.name}' is ${tensor.dataType}, but the ` +
        `ONNX model's ${kind} '${tensor.name}' is ${tritonType(match.dtype)}`);
    }
  }
}

/**
 * Returns the config with what the model file implies filled in, as the onnxruntime backend's
 * AutoCompleteConfig does: nothing when the config lists inputs (or batch inputs) and outputs
 * (max_batch_size stays as given, 0 when left out); otherwise max_batch_size (completeMaxBatch)
 * and the lists it leaves out. Then the config is checked against the model with the backend's
 * texts. Inputs the sequence batcher feeds (control inputs, state input_name) and outputs it
 * takes (state output_name) are not auto-completed into `input` / `output`, nor required there.
 */
export function autoCompleteOnnxConfig(
  model: string, config: RawModelConfig, inputs: OnnxTensorInfo[], outputs: OnnxTensorInfo[],
): RawModelConfig {
  const out: RawModelConfig = { ...config };
  // (batch_input, which the backend counts as an input here, is refused before: config-source.ts.)
  if ((out.input?.length ?? 0) === 0 || (out.output?.length ?? 0) === 0) completeMaxBatch(model, out, inputs, outputs);
  else out.max_batch_size ??= 0;
  const batching = Number(out.max_batch_size) > 0;
  if (batching && !(allBatched(inputs) && allBatched(outputs))) {
    throw invalidArg(`model '${model}': max_batch_size is ${out.max_batch_size}, but the ONNX model has a tensor ` +
      'whose first dimension is not dynamic, so it cannot batch');
  }
  const fed = sequenceTensors(out);
  checkFedAgainstModel(model, 'input', fed.inputs, inputs);
  checkFedAgainstModel(model, 'output', fed.outputs, outputs);
  const requestInputs = inputs.filter((t) => !fed.inputs.some((f) => f.name === t.name));
  const requestOutputs = outputs.filter((t) => !fed.outputs.some((f) => f.name === t.name));
  if (!out.input || out.input.length === 0) out.input = fromModel(requestInputs, batching);
  if (!out.output || out.output.length === 0) out.output = fromModel(requestOutputs, batching);
  // Every input the model takes is declared or fed by the sequence batcher (ONNX Runtime would
  // fail each request otherwise); a config may serve a subset of the outputs. As in the backend,
  // an optional input that is no graph input (an overridable initializer) does not count.
  const graphInput = (name: string): boolean => inputs.some((t) => t.name === name);
  const expected = out.input.filter((t) => t.optional !== true || graphInput(t.name)).length + fed.inputs.length;
  if (expected !== inputs.length) {
    throw invalidArg(`unable to load model '${model}', configuration expects ${expected} inputs, model provides ${inputs.length}`);
  }
  checkAgainstModel(model, 'input', out.input, inputs, batching);
  checkAgainstModel(model, 'output', out.output, outputs, batching);
  return out;
}
