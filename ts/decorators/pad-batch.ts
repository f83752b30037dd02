/**
 * `padBatch`: pads a batch to the next preferred (or the maximum) batch size.
 */
import type { NormalizedModelConfig } from '../config/normalize';
import type { TritonContext } from '../request';
import { NDArray } from '../tensor';
import { repeatLastRow } from './padding';
import type { BatchedInferFunc, Kwargs, NamedInputs, OutputValue } from './types';
import { applyPerStep, convertOutput, invalidArgError, tensorEntries } from './util';

/** The smallest of (preferred sizes ∪ {maxBatchSize}) that is ≥ `size`; `size` when none is. */
export function paddedBatchSize(config: NormalizedModelConfig, size: number): number {
  let best = Infinity;
  for (const candidate of [...(config.dynamicBatching?.preferredBatchSize ?? []), config.maxBatchSize]) {
    if (candidate >= size && candidate < best) best = candidate;
  }
  return best === Infinity ? size : best;
}

/** Outputs with `padded` rows cut back to the first `rows` rows (zero-copy views). */
function trimOutputs(config: NormalizedModelConfig, result: unknown, padded: number, rows: number): Record<string, OutputValue> {
  const outputs = convertOutput(result, config, 'padBatch');
  const trimmed: Record<string, OutputValue> = {};
  for (const name in outputs) {
    const value = outputs[name];
    if (value instanceof NDArray) {
      trimmed[name] = value.shape.length > 0 && value.rows === padded ? value.sliceRows(0, rows) : value;
    } else if (ArrayBuffer.isView(value) && value.length % padded === 0) {
      trimmed[name] = value.subarray(0, (value.length / padded) * rows);
    } else {
      trimmed[name] = value;
    }
  }
  return trimmed;
}

/**
 * PyTriton's `@pad_batch`: pads the batch by repeating its last row up to the smallest of
 * (`preferredBatchSize` ∪ {`maxBatchSize`}) that is ≥ the current batch size, so that `fn`
 * always sees one of those sizes. Unlike PyTriton, outputs that come back with the padded
 * number of rows are cut back to the original rows (views), so that `batch` above it can
 * split them into the clients' responses. A decoupled model's generator has each yielded
 * result cut back the same way.
 *
 * It must sit below `batch` (it takes the kwargs object) and needs a batching model.
 */
export function padBatch<K extends NamedInputs<K> = Kwargs>(fn: BatchedInferFunc<K>): BatchedInferFunc<K> {
  return (inputs: K, context: TritonContext) => {
    const config = context.modelConfig;
    if (Array.isArray(inputs)) {
      throw invalidArgError(config, 'padBatch', 'it must sit below batch (it received a request list, not named inputs)');
    }
    if (config.maxBatchSize === 0) {
      throw invalidArgError(config, 'padBatch', 'it can only be used with models that batch (maxBatchSize > 0)');
    }
    const tensors = tensorEntries(inputs);
    const rows = tensors.length === 0 ? 0 : tensors[0][1].rows;
    const padded = rows === 0 ? 0 : paddedBatchSize(config, rows);
    if (padded === rows) return fn(inputs, context);
    const bigger: Kwargs = { ...inputs };
    for (const [name, arr] of tensors) bigger[name] = repeatLastRow(arr, padded);
    return applyPerStep(config, 'padBatch', fn(bigger as K, context), (result) => trimOutputs(config, result, padded, rows)) as
      Record<string, OutputValue>;
  };
}
