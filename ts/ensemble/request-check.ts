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
 * Triton's count check (infer_request.cc ValidateRequestInputs), in native code's words: too few
 * inputs for the required ones, or more than the config has.
 */
function inputCountError(config: NormalizedModelConfig, present: readonly string[]): InferenceServerError | null {
  const required = config.inputs.filter((t) => !t.optional);
  if (present.length <= config.inputs.length && present.length >= required.length) return null;
  const quoted = (names: readonly string[]): string => `[${names.map((n) => `'${clip(n)}'`).join(',')}]`;
  const missing = required.filter((t) => !present.includes(t.name)).map((t) => t.name);
  const expected = required.length === config.inputs.length
    ? `expected ${config.inputs.length} inputs`
    : `expected number of inputs between ${required.length} and ${config.inputs.length}`;
  return invalid(`${expected} but got ${present.length} inputs for model '${config.name}'. Got input(s) ${quoted(present)}, ` +
    `but missing required input(s) ${quoted(missing)}. Please provide all required input(s).`);
}

/**
 * The error that refuses `given` for ensemble `config`, or null when it is a valid request.
 * Checks in a plain model's order (unknown names in JS, then native code's count and per-input
 * checks), so the first problem named is the one a plain model names.
 */
export function checkEnsembleRequest(config: NormalizedModelConfig, given: Record<string, unknown>): InferenceServerError | null {
  const present = Object.keys(given).filter((name) => given[name] !== undefined);  // undefined: as if absent
  for (const name of present) {
    if (!config.inputs.some((t) => t.name === name)) return invalid(`unexpected inference input '${clip(name)}' for model '${config.name}'`);
  }
  const counted = inputCountError(config, present);
  if (counted) return counted;
  let batch = -1;
  for (const name of present) {
    const arr = given[name];
    const spec = config.inputs.find((t) => t.name === name)!;
    if (!(arr instanceof NDArray)) return invalid(`${inputLabel(config, name)} must be an NDArray`);
    const rows = checkInput(config, spec, arr);
    if (rows instanceof InferenceServerError) return rows;
    if (batch >= 0 && rows !== batch) {
      return invalid(`${inputLabel(config, name)} has batch size ${rows}, other inputs have ${batch}`);
    }
    batch = rows;
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
