/**
 * Triton's auto-complete for ONNX models (without --strict-model-config): inputs, outputs and
 * max_batch_size come from the model file when config.pbtxt leaves them out, and a derived
 * max_batch_size > 1 gets `dynamic_batching {}`. Works on the protobuf-JSON form of the config
 * (snake_case field names) before normalization. A config that contradicts the model file is an
 * INVALID_ARG load error naming the tensor; the one datatype difference allowed is TYPE_FP32 for
 * an FP16 or BF16 tensor (the server converts).
 */
import { invalidArg } from '../errors';
import type { OnnxTensorInfo } from '../native';

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

function checkAgainstModel(model: string, kind: string, declared: ConfigTensor[], actual: OnnxTensorInfo[], batching: boolean): void {
  for (const tensor of declared) {
    const match = actual.find((t) => t.name === tensor.name);
    if (!match) {
      throw invalidArg(`model '${model}': ${kind} '${tensor.name}' is not in the ONNX model (it has ${actual.map((t) => t.name).join(', ')})`);
    }
    if (tensor.data_type && tensor.data_type !== tritonType(match.dtype) && !isCastPair(tensor.data_type, match.dtype)) {
      throw invalidArg(`model '${model}': ${kind} '${tensor.name}' is declared ${tensor.data_type}, the ONNX model has ${tritonType(match.dtype)}`);
    }
    const modelDims = batching ? match.dims.slice(1) : match.dims;
    const dims = (tensor.dims ?? []).map(Number);
    const compatible = dims.length === modelDims.length && dims.every((d, i) => modelDims[i] === -1 || d === -1 || d === modelDims[i]);
    if (tensor.dims && !compatible && !tensor.reshape) {
      throw invalidArg(`model '${model}': ${kind} '${tensor.name}' has dims [${dims.join(',')}], the ONNX model has ` +
        `[${modelDims.join(',')}]${batching ? ' (after the batch dimension)' : ''}`);
    }
  }
}

function fromModel(tensors: OnnxTensorInfo[], batching: boolean): ConfigTensor[] {
  return tensors.map((t) => ({ name: t.name, data_type: tritonType(t.dtype), dims: batching ? t.dims.slice(1) : t.dims }));
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
 * Returns the config with what the model file implies filled in. Inputs the sequence batcher
 * feeds (control inputs, state input_name) and outputs it takes (state output_name) are not
 * auto-completed into `input` / `output`, nor required there.
 */
export function autoCompleteOnnxConfig(
  model: string, config: RawModelConfig, inputs: OnnxTensorInfo[], outputs: OnnxTensorInfo[],
): RawModelConfig {
  const out: RawModelConfig = { ...config };
  if (out.max_batch_size === undefined) {
    out.max_batch_size = allBatched(inputs) && allBatched(outputs) ? DEFAULT_MAX_BATCH_SIZE : 0;
    const scheduled = out.dynamic_batching || out.sequence_batching || out.ensemble_scheduling;
    if (Number(out.max_batch_size) > 1 && !scheduled) out.dynamic_batching = {};
  }
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
  checkAgainstModel(model, 'input', out.input, inputs, batching);
  checkAgainstModel(model, 'output', out.output, outputs, batching);
  // Every input the model requires must be declared or fed by the sequence batcher (ONNX
  // Runtime would fail each request otherwise); a config may serve a subset of the outputs.
  const missing = requestInputs.filter((t) => !out.input!.some((declared) => declared.name === t.name));
  if (missing.length > 0) {
    throw invalidArg(`model '${model}': the ONNX model's input${missing.length > 1 ? 's' : ''} ` +
      `${missing.map((t) => `'${t.name}'`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} not in the config ` +
      `(declare every input, or none to have them all auto-completed)`);
  }
  return out;
}
