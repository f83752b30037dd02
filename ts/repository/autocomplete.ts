/**
 * Triton's auto-complete for ONNX models (without --strict-model-config): inputs, outputs and
 * max_batch_size come from the model file when config.pbtxt leaves them out, and a derived
 * max_batch_size > 1 gets `dynamic_batching {}`. Works on the protobuf-JSON form of the config
 * (snake_case field names) before normalization. A config that contradicts the model file is an
 * INVALID_ARG load error naming the tensor.
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

function checkAgainstModel(model: string, kind: string, declared: ConfigTensor[], actual: OnnxTensorInfo[], batching: boolean): void {
  for (const tensor of declared) {
    const match = actual.find((t) => t.name === tensor.name);
    if (!match) {
      throw invalidArg(`model '${model}': ${kind} '${tensor.name}' is not in the ONNX model (it has ${actual.map((t) => t.name).join(', ')})`);
    }
    if (tensor.data_type && tensor.data_type !== tritonType(match.dtype)) {
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

/** Returns the config with what the model file implies filled in. */
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
  if (!out.input || out.input.length === 0) out.input = fromModel(inputs, batching);
  if (!out.output || out.output.length === 0) out.output = fromModel(outputs, batching);
  checkAgainstModel(model, 'input', out.input, inputs, batching);
  checkAgainstModel(model, 'output', out.output, outputs, batching);
  // Every input the model requires must be declared (ONNX Runtime would fail each request
  // otherwise); a config may serve a subset of the outputs.
  const missing = inputs.filter((t) => !out.input!.some((declared) => declared.name === t.name));
  if (missing.length > 0) {
    throw invalidArg(`model '${model}': the ONNX model's input${missing.length > 1 ? 's' : ''} ` +
      `${missing.map((t) => `'${t.name}'`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} not in the config ` +
      `(declare every input, or none to have them all auto-completed)`);
  }
  return out;
}
