/**
 * `groupByValues` and `ConstantPadder`: split a batch into sub-batches whose rows share the
 * values of selected inputs, call the model per sub-batch, and merge the results back.
 */
import type { NormalizedModelConfig } from '../config/normalize';
import { InferenceServerError } from '../errors';
import { NDArray } from '../tensor';
import { padArray } from './padding';
import {
  TRITON_CONTEXT_KEY, type BatchedInferFunc, type GroupByValuesOptions, type KwargsDecorator, type Kwargs,
  type NamedInputs, type PadFn, type StreamedSteps, type SubBatchOutputs,
} from './types';
import {
  ENDED, allocate, asBatchArray, checkDeclaredKeys, convertOutput, copyRow, invalidArgError, mapSequential,
  modelOutputError, rowKey, rowSizeOf, shapeString, splitKeysAndOptions, decoupledSteps, takeRows, tensorEntries, thenApply,
  zipSteps,
} from './util';

/** The arguments of `groupByValues`: input names, optionally followed by options. */
export type GroupByValuesArgs = string[] | [...keys: string[], options: GroupByValuesOptions];

/** Row indices grouped by the bytes of the `keys` inputs' rows, in order of first appearance. */
function groupRows(tensors: readonly [string, NDArray][], keys: readonly string[], size: number): number[][] {
  const keyed = tensors.filter(([name]) => keys.includes(name)).map(([, arr]) => arr);
  if (keyed.length === 0) return [Array.from({ length: size }, (_, i) => i)];
  const groups = new Map<string, number[]>();
  for (let row = 0; row < size; row++) {
    let key = '';
    for (const arr of keyed) key += rowKey(arr, row);
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return [...groups.values()];
}

function applyPadFn(config: NormalizedModelConfig, padFn: PadFn, results: SubBatchOutputs[]): SubBatchOutputs[] {
  let padded: SubBatchOutputs[];
  try {
    padded = typeof padFn === 'function' ? padFn(results) : padFn.pad(results);
  } catch (err) {
    const e = err instanceof InferenceServerError ? err : new InferenceServerError('INTERNAL', (err as Error).message);
    throw new InferenceServerError(e.code, `model '${config.name}': groupByValues padFn: ${e.message}`);
  }
  if (!Array.isArray(padded) || padded.length !== results.length) {
    throw modelOutputError(config, 'groupByValues', `padFn must return one outputs object per sub-batch (${results.length})`);
  }
  return padded;
}

/** Writes every sub-batch's outputs into full-size arrays at the sub-batch's rows. */
function scatter(
  config: NormalizedModelConfig, groups: readonly number[][], results: readonly SubBatchOutputs[], size: number,
): Record<string, NDArray> {
  const merged: Record<string, NDArray> = {};
  groups.forEach((indices, g) => {
    for (const name in results[g]) {
      const arr = results[g][name];
      if (arr.shape.length === 0 || arr.rows !== indices.length) {
        throw modelOutputError(config, 'groupByValues', `output '${name}' of a sub-batch of ${indices.length} rows ` +
          `has shape ${shapeString(arr.shape)}`);
      }
      const target = (merged[name] ??= allocate(arr.dtype, [size, ...arr.shape.slice(1)]));
      if (target.dtype !== arr.dtype || shapeString(target.shape.slice(1)) !== shapeString(arr.shape.slice(1))) {
        throw modelOutputError(config, 'groupByValues', `output '${name}' is ${arr.dtype}${shapeString(arr.shape)} in one ` +
          `sub-batch and ${target.dtype}${shapeString([indices.length, ...target.shape.slice(1)])} in another; ` +
          'pass a padFn (e.g. new ConstantPadder()) to merge outputs of different shapes');
      }
      const rowSize = rowSizeOf(arr);
      indices.forEach((row, j) => copyRow(arr, j, target, row, rowSize));
    }
  });
  return merged;
}

/** "1 row", "2 rows" */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** The sub-batches' results (one per group) as one outputs object for the whole batch of `size` rows. */
function mergeSubBatches(
  config: NormalizedModelConfig, groups: readonly number[][], values: readonly unknown[], size: number, padFn: PadFn | undefined,
): Record<string, NDArray> {
  let outputs = values.map((value, g): SubBatchOutputs => {
    const named = convertOutput(value, config, 'groupByValues');
    const arrays: SubBatchOutputs = {};
    for (const name in named) arrays[name] = asBatchArray(config, 'groupByValues', name, named[name], groups[g].length);
    return arrays;
  });
  if (padFn) outputs = applyPadFn(config, padFn, outputs);
  return scatter(config, groups, outputs, size);
}

/**
 * The sub-batches' generators advanced together: step k of the result merges step k of every
 * sub-batch. Each step answers the whole batch, so every generator must yield as many steps.
 */
function mergeSubBatchSteps(
  config: NormalizedModelConfig, groups: readonly number[][], steps: readonly StreamedSteps<unknown>[], size: number,
  padFn: PadFn | undefined,
): unknown {
  return zipSteps(steps, (round, step) => {
    const ended = round.indexOf(ENDED);
    if (ended >= 0) {
      const going = round.findIndex((value) => value !== ENDED);
      throw modelOutputError(config, 'groupByValues', `the sub-batches' generators must yield the same number of steps ` +
        `(each step answers the whole batch): sub-batch ${ended} (${plural(groups[ended].length, 'row')}) ended after ` +
        `${plural(step, 'step')}, sub-batch ${going} (${plural(groups[going].length, 'row')}) yielded step ${step + 1}`);
    }
    return mergeSubBatches(config, groups, round, size, padFn);
  });
}

/**
 * PyTriton's `@group_by_values(*keys, pad_fn=None)`: splits the batch into sub-batches whose
 * rows hold identical values (compared byte by byte) in the inputs named by `keys`, calls `fn`
 * once per sub-batch (one after the other), optionally runs `padFn` over the sub-batches'
 * results (e.g. `new ConstantPadder()`), and scatters them back into full-size outputs in the
 * original row order. Sub-batches are formed in order of first appearance; an absent key input
 * (an optional input) does not split the batch; a key that is not a declared input fails the
 * requests with INVALID_ARG.
 *
 * It must sit below `batch`: it takes the kwargs object, not a request list.
 *
 * When `fn` is a generator (a decoupled model), the sub-batches' generators are advanced
 * together and each step's results are padded and merged as above: the decorated callable
 * yields one full-batch result per step. Every sub-batch's generator must yield the same number
 * of steps (INTERNAL otherwise). PyTriton's decorator does not handle generators; this is
 * infernode's extension.
 */
export function groupByValues(...args: GroupByValuesArgs): KwargsDecorator {
  const { keys, options } = splitKeysAndOptions<GroupByValuesOptions>('groupByValues', args);
  const padFn = options?.padFn;
  if (padFn !== undefined && typeof padFn !== 'function' && typeof padFn?.pad !== 'function') {
    throw new InferenceServerError('INVALID_ARG', 'groupByValues: padFn must be a function or an object with a pad() method');
  }
  const checked = new WeakSet<NormalizedModelConfig>();
  const decorate = <K extends NamedInputs<K> = Kwargs>(fn: BatchedInferFunc<K>): BatchedInferFunc<K> => (inputs, context) => {
    const config = context.modelConfig;
    if (Array.isArray(inputs)) {
      throw invalidArgError(config, 'groupByValues', 'it must sit below batch (it received a request list, not named inputs)');
    }
    checkDeclaredKeys(config, 'groupByValues', keys, checked);
    const tensors = tensorEntries(inputs);
    const size = tensors.length === 0 ? 0 : tensors[0][1].rows;
    const groups = size === 0 ? [] : groupRows(tensors, keys, size);
    if (groups.length === 0 || (groups.length === 1 && !padFn)) return fn(inputs, context);
    const subBatches = groups.map((indices) => {
      const sub: Kwargs = {};
      for (const [name, arr] of tensors) sub[name] = takeRows(arr, indices);
      if (TRITON_CONTEXT_KEY in inputs) (sub as Record<string, unknown>)[TRITON_CONTEXT_KEY] = inputs[TRITON_CONTEXT_KEY];
      return sub as K;
    });
    const results = mapSequential(subBatches, (sub) => fn(sub, context));
    return thenApply(results, (values) => {
      const steps = values.map((value) => decoupledSteps(config, 'groupByValues', value));
      if (steps.every((s) => s === null)) return mergeSubBatches(config, groups, values, size, padFn);
      const plain = steps.findIndex((s) => s === null);
      if (plain >= 0) {
        throw modelOutputError(config, 'groupByValues', `the callable returned a generator for some sub-batches and ` +
          `outputs for sub-batch ${plain}; it must stream for every sub-batch or for none`);
      }
      return mergeSubBatchSteps(config, groups, steps as StreamedSteps<unknown>[], size, padFn) as Record<string, NDArray>;
    });
  };
  return decorate;
}

/**
 * PyTriton's `ConstantPadder(pad_value=0)`, a `padFn` for `groupByValues`: pads every output
 * across the sub-batches to the largest non-batch shape, filling with `padValue` (empty byte
 * strings for BYTES), so that sub-batches whose outputs differ in size can be merged. The
 * outputs of one name must share their datatype and rank (INTERNAL otherwise).
 */
export class ConstantPadder {
  /** @param padValue the fill value; for FP16/BF16 it is converted to the 16-bit format. */
  constructor(readonly padValue: number | bigint = 0) {}

  /** Pads `results` (one outputs object per sub-batch); outputs already of the largest shape are kept as they are. */
  pad(results: SubBatchOutputs[]): SubBatchOutputs[] {
    const padded = results.map((r) => ({ ...r }));
    const names = [...new Set(results.flatMap((r) => Object.keys(r)))];
    for (const name of names) {
      const present = results.map((r) => r[name]).filter((a): a is NDArray => a !== undefined);
      const first = present[0];
      const target = first.shape.slice(1);
      for (const arr of present) {
        if (arr.dtype !== first.dtype) {
          throw new InferenceServerError('INTERNAL', `ConstantPadder: output '${name}' has datatype ${first.dtype} in one ` +
            `sub-batch and ${arr.dtype} in another; all must share one datatype`);
        }
        if (arr.shape.length !== first.shape.length) {
          throw new InferenceServerError('INTERNAL', `ConstantPadder: output '${name}' has shape ${shapeString(first.shape)} ` +
            `in one sub-batch and ${shapeString(arr.shape)} in another; the ranks must agree`);
        }
        arr.shape.slice(1).forEach((d, i) => { target[i] = Math.max(target[i], d); });
      }
      results.forEach((r, i) => {
        const arr = r[name];
        if (arr !== undefined) padded[i][name] = padArray(arr, target, this.padValue);
      });
    }
    return padded;
  }
}
