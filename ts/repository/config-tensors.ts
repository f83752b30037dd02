/**
 * `input` / `output` of a repository config → normalized tensors, with Triton's checks
 * (ValidateIOShape): a name and a data_type are required, dims are ≥ 1 or -1, a reshape has the
 * same element count as dims, NHWC/NCHW need 3 dims. The checks bind() shares (unique names,
 * dims) run in `normalizeTensors`. An output's label file is read here, so a missing one fails
 * the load as in Triton.
 */
import { readFileSync } from 'node:fs';
import { invalidArg } from '../errors';
import { parseDataType } from '../tensor';
import { normalizeTensors, type NormalizedTensor } from '../config/normalize';
import type { ProtoTensor } from '../config/model-config-proto';
import type { Tensor } from '../config/types';
import { resolveFileInside } from './model-files';

type Kind = 'input' | 'output';

/** Triton's GetElementCount: 0 for an empty shape, -1 when any dim is variable. */
function elementCount(dims: number[]): number {
  if (dims.length === 0) return 0;
  return dims.includes(-1) ? -1 : dims.reduce((n, d) => n * d, 1);
}

/** Element counts of the runs of fixed dims between variable (-1) dims. */
function fixedRuns(dims: number[]): number[] {
  const runs = [1];
  for (const d of dims) {
    if (d === -1) runs.push(1);
    else runs[runs.length - 1] *= d;
  }
  return runs;
}

function checkReshape(where: string, dims: number[], shape: number[], maxBatchSize: number): void {
  if (shape.length === 0 && maxBatchSize === 0) throw invalidArg(`${where} cannot have an empty reshape in a model that does not batch`);
  if (shape.some((d) => d < 1 && d !== -1)) {
    throw invalidArg(`${where} reshape dimensions must be integers >= 1, or -1 for a variable-size dimension`);
  }
  const dimsCount = elementCount(dims);
  const reshapeCount = elementCount(shape);
  // An empty reshape (a scalar) matches dims with exactly one element.
  if (dimsCount !== reshapeCount && (reshapeCount !== 0 || dimsCount !== 1)) {
    throw invalidArg(`${where} has different sizes for dims [${dims.join(', ')}] and reshape [${shape.join(', ')}]`);
  }
  if (dimsCount === -1) {
    const a = fixedRuns(dims);
    const b = fixedRuns(shape);
    if (a.length !== b.length || a.some((n, i) => n !== b[i])) {
      throw invalidArg(`${where} dims [${dims.join(', ')}] and reshape [${shape.join(', ')}] do not split into the same ` +
        'fixed-size runs around their variable-size dimensions');
    }
  }
}

function toTensorSpec(model: string, t: ProtoTensor, index: number, kind: Kind, maxBatchSize: number): Tensor {
  if (!t.name) throw invalidArg(`model '${model}': ${kind} #${index} must specify 'name'`);
  const where = `model '${model}': ${kind} '${t.name}'`;
  if (!t.data_type || t.data_type === 'TYPE_INVALID') throw invalidArg(`${where} must specify 'data_type'`);
  const dims = t.dims ?? [];
  // Triton requires dims; an empty list is accepted when the model batches (each request row is
  // then a scalar, what Triton spells `dims: [1]` with `reshape: { shape: [] }`).
  if (dims.length === 0 && maxBatchSize === 0) {
    throw invalidArg(`${where} must specify 'dims' (use dims: [ 1 ] with reshape: { shape: [ ] } for a scalar)`);
  }
  if (dims.some((d) => d < 1 && d !== -1)) {
    throw invalidArg(`${where} dims [${dims.join(', ')}]: each dimension must be an integer >= 1, or -1 for a variable-size dimension`);
  }
  if (t.reshape) checkReshape(where, dims, t.reshape.shape ?? [], maxBatchSize);
  if ((t.format === 'FORMAT_NHWC' || t.format === 'FORMAT_NCHW') && dims.length !== 3) {
    throw invalidArg(`${where} has format ${t.format}, which requires 3 dims, got [${dims.join(', ')}]`);
  }
  if (t.is_shape_tensor) throw invalidArg(`${where}: shape tensors (is_shape_tensor) are only supported for TensorRT models, which infernode does not serve`);
  if (t.is_non_linear_format_io) {
    throw invalidArg(`${where}: is_non_linear_format_io is only supported for TensorRT models, which infernode does not serve`);
  }
  return { name: t.name, dtype: parseDataType(t.data_type), shape: dims, optional: t.optional, allowRaggedBatch: t.allow_ragged_batch };
}

/** One label per line, as Triton reads label files (a final newline adds no empty label). */
function readLabels(model: string, modelDirectory: string, output: string, file: string): string[] {
  const full = resolveFileInside(modelDirectory, file, `model '${model}': output '${output}' label_filename`);
  const lines = readFileSync(full, 'utf8').split('\n').map((line) => line.replace(/\r$/, ''));
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * Validates and normalizes a repository config's inputs or outputs, keeping the Triton-only
 * fields for printing and reading output label files from `modelDirectory`.
 */
export function normalizeRawTensors(
  model: string, tensors: ProtoTensor[] | undefined, kind: Kind, maxBatchSize: number, modelDirectory: string,
): NormalizedTensor[] {
  const raw = tensors ?? [];
  const normalized = normalizeTensors(model, raw.map((t, i) => toTensorSpec(model, t, i, kind, maxBatchSize)), kind);
  return normalized.map((tensor, i) => {
    const t = raw[i];
    const extra: Partial<NormalizedTensor> = kind === 'input'
      ? { format: t.format ?? 'FORMAT_NONE' }
      : { labelFilename: t.label_filename ?? '' };
    if (t.reshape) extra.reshape = [...(t.reshape.shape ?? [])];
    if (t.label_filename) extra.labels = readLabels(model, modelDirectory, tensor.name, t.label_filename);
    return { ...tensor, ...extra, isShapeTensor: false, isNonLinearFormatIo: false };
  });
}
