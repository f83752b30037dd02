/**
 * An ensemble request checked against the ensemble's own config before any step runs, as
 * Triton's InferenceRequest::Normalize checks every model's requests, an ensemble's included:
 * inputs known and present, datatypes, shapes against the declared dims, one batch size across
 * the inputs, 1 <= batch size <= max_batch_size. A plain model's requests are checked by native
 * code (cpp/scheduling/request_validator.cc); an ensemble's never reach it, so this is that
 * file's check in TypeScript, with its texts word for word: a client reads the same error from
 * an ensemble as from any model.
 */
import { InferenceServerError, clip, clipShape } from '../errors';
import type { NormalizedModelConfig, NormalizedTensor } from '../config/normalize';
import { NDArray } from '../tensor';

const invalid = (message: string): InferenceServerError => new InferenceServerError('INVALID_ARG', message);

function inputLabel(config: NormalizedModelConfig, name: string): string {
  return `input '${clip(name)}' for model '${config.name}'`;
}

/** Each declared dim matches (-1 matches any). */
function shapeMatches(dims: readonly number[], shape: readonly number[]): boolean {
  return dims.length === shape.length && dims.every((d, i) => d === -1 || d === shape[i]);
}

/** Datatype and shape of one input; returns its batch size (1 for a model that does not batch). */
function checkInput(config: NormalizedModelConfig, spec: NormalizedTensor, arr: NDArray): number | InferenceServerError {
  const label = inputLabel(config, spec.name);
  if (arr.dtype !== spec.dtype) return invalid(`unexpected datatype ${arr.dtype} for ${label}, expected ${spec.dtype}`);
  const batching = config.maxBatchSize > 0;
  if (batching && arr.shape.length === 0) {
    return invalid(`unexpected shape for ${label}: missing the batch dimension, expected ${clipShape([-1, ...spec.dims])}`);
  }
  const dims = batching ? arr.shape.slice(1) : arr.shape;
  if (!shapeMatches(spec.dims, dims)) {
    const expected = batching ? [-1, ...spec.dims] : spec.dims;
    // As native code says it: a shape that is one sample without its batch axis is named so.
    const oneSample = batching && shapeMatches(spec.dims, arr.shape);
    return invalid(`unexpected shape for ${label}. Expected ${clipShape(expected)}, got ${clipShape(arr.shape)}` +
      (oneSample ? ` (one sample without the batch dimension: give it shape [1,${clipShape(arr.shape).slice(1)})` : ''));
  }
  return batching ? arr.shape[0] : 1;
}

/**
 * The error that refuses `given` for ensemble `config`, or null when it is a valid request.
 * Checks in native code's order, so the first problem named is the one a plain model names.
 */
export function checkEnsembleRequest(config: NormalizedModelConfig, given: Record<string, unknown>): InferenceServerError | null {
  let batch = -1;
  for (const name of Object.keys(given)) {
    const arr = given[name];
    if (arr === undefined) continue;  // as if absent
    const spec = config.inputs.find((t) => t.name === name);
    if (!spec) return invalid(`unexpected inference input '${clip(name)}' for model '${config.name}'`);
    if (!(arr instanceof NDArray)) return invalid(`${inputLabel(config, name)} must be an NDArray`);
    const rows = checkInput(config, spec, arr);
    if (rows instanceof InferenceServerError) return rows;
    if (batch >= 0 && rows !== batch) {
      return invalid(`${inputLabel(config, name)} has batch size ${rows}, other inputs have ${batch}`);
    }
    batch = rows;
  }
  for (const spec of config.inputs) {
    if (given[spec.name] === undefined && !spec.optional) {
      return invalid(`expected ${config.inputs.length} inputs but missing input '${spec.name}' for model '${config.name}'`);
    }
  }
  if (batch === -1) return invalid(`request for model '${config.name}' has no inputs`);
  if (config.maxBatchSize > 0) {
    if (batch < 1) return invalid(`inference request batch-size must be >= 1 for model '${config.name}'`);
    if (batch > config.maxBatchSize) {
      return invalid(`inference request batch-size must be <= ${config.maxBatchSize} for '${config.name}', got ${batch}`);
    }
  }
  return null;
}
