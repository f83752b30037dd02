/**
 * `batch`, `sample` and `groupByKeys`: the decorators that turn a request list into named inputs
 * (and back), and group requests by the inputs they carry.
 */
import type { NormalizedModelConfig } from '../config/normalize';
import type { InferFunc, Request, ResponseOutputs, TritonContext } from '../request';
import { NDArray, concatRows } from '../tensor';
import type { Awaitable, BatchedInferFunc, BatchedResult, Kwargs, OutputsOfResult, NamedInputs, RequestsInferFunc, StreamedSteps } from './types';
import {
  ENDED, applyPerStep, asBatchArray, convertOutput, getInferenceRequestBatchSize, invalidArgError, mapSequential,
  modelOutputError, shapeString, decoupledSteps, thenApply, zipSteps, type Round,
} from './util';

/** Checks that every request carries the same input names; returns the first request's. */
function commonInputNames(config: NormalizedModelConfig, requests: readonly Request[]): string[] {
  const names = Object.keys(requests[0].data);
  for (let i = 1; i < requests.length; i++) {
    const other = Object.keys(requests[i].data);
    if (other.length !== names.length || other.some((n) => !(n in requests[0].data))) {
      throw invalidArgError(config, 'batch', `cannot batch requests with different sets of inputs: request 0 has ` +
        `[${names.join(', ')}], request ${i} has [${other.join(', ')}] (put groupByKeys above batch)`);
    }
  }
  return names;
}

/** Each input concatenated along axis 0 over the requests (the request's own arrays for one request). */
function concatInputs(config: NormalizedModelConfig, requests: readonly Request[], names: readonly string[]): Kwargs {
  const inputs: Kwargs = {};
  if (requests.length === 1) {
    for (const name of names) inputs[name] = requests[0].data[name];
    return inputs;
  }
  for (const name of names) {
    try {
      inputs[name] = concatRows(requests.map((r) => r.data[name]));
    } catch (err) {
      throw invalidArgError(config, 'batch', `cannot concatenate input '${name}' over ${requests.length} requests: ` +
        (err as Error).message);
    }
  }
  return inputs;
}

function batchSizes(config: NormalizedModelConfig, requests: readonly Request[]): number[] {
  return requests.map((r, i) => {
    try {
      return getInferenceRequestBatchSize(r);
    } catch {
      throw invalidArgError(config, 'batch', `request ${i} has no inputs, so its batch size is unknown`);
    }
  });
}

/** Checks every output has `total` rows and splits the outputs into one object per request. */
function splitOutputs(config: NormalizedModelConfig, result: unknown, rows: readonly number[], total: number): ResponseOutputs[] {
  const outputs = convertOutput(result, config, 'batch');
  const arrays: [string, NDArray][] = [];
  const wrong: string[] = [];
  for (const name in outputs) {
    const arr = asBatchArray(config, 'batch', name, outputs[name], total);
    if (arr.shape.length === 0 || arr.shape[0] !== total) wrong.push(`'${name}' has shape ${shapeString(arr.shape)}`);
    arrays.push([name, arr]);
  }
  if (wrong.length > 0) {
    throw modelOutputError(config, 'batch', `every output needs ${total} rows (the sum of the batch sizes of ` +
      `${rows.length} request${rows.length === 1 ? '' : 's'}: ${rows.join('+')}), but output ${wrong.join(', output ')}`);
  }
  const perRequest: ResponseOutputs[] = [];
  let start = 0;
  for (const count of rows) {
    const outs: Record<string, NDArray> = {};
    for (const [name, arr] of arrays) outs[name] = rows.length === 1 ? arr : arr.sliceRows(start, start + count);
    perRequest.push(outs);
    start += count;
  }
  return perRequest;
}

/**
 * PyTriton's `@batch`: concatenates each input of the requests along the batch axis, calls
 * `fn(inputs, context)` once for the whole batch, checks that every output has one row per
 * input row and splits the outputs back into one outputs object per request (zero-copy views).
 * When `fn` is a generator or async generator (a decoupled model), each yielded result is
 * checked and split the same way: the decorated callable yields, per step, one outputs object
 * per request.
 *
 * The requests must all carry the same input names (INVALID_ARG otherwise; put `groupByKeys`
 * above `batch` when optional inputs vary). `fn` may return outputs by name or an array of
 * outputs in the order of the declared outputs, sync or async. Request parameters are not
 * passed on (as in PyTriton; read them in an undecorated callable).
 */
export function batch<K extends NamedInputs<K> = Kwargs, Ret extends BatchedResult = BatchedResult>(
  fn: (inputs: K, context: TritonContext) => Ret,
): InferFunc<K, OutputsOfResult<Ret>>;
/** Any `BatchedInferFunc` (e.g. a union of callables): outputs typed as `ResponseOutputs`. */
export function batch<K extends NamedInputs<K> = Kwargs>(fn: BatchedInferFunc<K>): InferFunc<K>;
export function batch<K extends NamedInputs<K>>(fn: BatchedInferFunc<K>): InferFunc<K> {
  return ((requests: Request[], context: TritonContext) => {
    if (requests.length === 0) return [];
    const config = context.modelConfig;
    const names = commonInputNames(config, requests);
    const rows = batchSizes(config, requests);
    let total = 0;
    for (const r of rows) total += r;
    const result = fn(concatInputs(config, requests, names) as K, context);
    return applyPerStep(config, 'batch', result, (value) => splitOutputs(config, value, rows, total)) as ResponseOutputs[];
  }) as unknown as InferFunc<K>;  // each request's outputs are the batch's, split by rows: typed as `fn`'s
}

/**
 * PyTriton's `@sample`: passes only the first request's inputs to `fn(inputs, context)` and
 * returns its result as the only response. For models that do not batch (one request per
 * execution). An array result is mapped onto the declared outputs in order. A generator (a
 * decoupled model) yields one result per step, each that step's response (PyTriton's decorator
 * does not handle generators; this is infernode's extension).
 */
export function sample<K extends NamedInputs<K> = Kwargs, Ret extends BatchedResult = BatchedResult>(
  fn: (inputs: K, context: TritonContext) => Ret,
): InferFunc<K, OutputsOfResult<Ret>>;
/** Any `BatchedInferFunc` (e.g. a union of callables): outputs typed as `ResponseOutputs`. */
export function sample<K extends NamedInputs<K> = Kwargs>(fn: BatchedInferFunc<K>): InferFunc<K>;
export function sample<K extends NamedInputs<K>>(fn: BatchedInferFunc<K>): InferFunc<K> {
  return ((requests: Request[], context: TritonContext) => {
    if (requests.length === 0) return [];
    const result = fn({ ...requests[0].data } as K, context);
    const config = context.modelConfig;
    return applyPerStep(config, 'sample', result, (value) => [convertOutput(value, config, 'sample')]) as ResponseOutputs[];
  }) as unknown as InferFunc<K>;  // the one request's outputs are `fn`'s
}

/** Indices of the requests grouped by their sorted input names; groups ordered by those names. */
function groupIndicesByKeys(requests: readonly Request[]): number[][] {
  const groups = new Map<string, { names: string[]; indices: number[] }>();
  requests.forEach((r, i) => {
    const names = Object.keys(r.data).sort();
    const key = names.join('\u0000');
    const group = groups.get(key);
    if (group) group.indices.push(i);
    else groups.set(key, { names, indices: [i] });
  });
  return [...groups.values()].sort((a, b) => compareNames(a.names, b.names)).map((g) => g.indices);
}

/** Python's ordering of tuples of strings. */
function compareNames(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

/** The group results in the original request order: group `g` answered the requests `groups[g]`. */
function reorder(config: NormalizedModelConfig, groups: readonly number[][], perGroup: readonly unknown[], count: number): ResponseOutputs[] {
  const ordered = new Array<ResponseOutputs>(count);
  groups.forEach((indices, g) => {
    const outs = perGroup[g];
    if (!Array.isArray(outs) || outs.length !== indices.length) {
      throw modelOutputError(config, 'groupByKeys', `the callable must return one outputs object per ` +
        `request of its group (${indices.length}), got ${Array.isArray(outs) ? `an array of ${outs.length}` : typeof outs}`);
    }
    indices.forEach((index, j) => { ordered[index] = outs[j] as ResponseOutputs; });
  });
  return ordered;
}

/**
 * The groups' generators merged step by step: step k of the result holds, for each request, what
 * step k of its group's generator yielded for it, or null (no response this step) once that
 * group's generator has ended.
 */
function mergeGroupSteps(
  config: NormalizedModelConfig, groups: readonly number[][], steps: readonly StreamedSteps<unknown>[], count: number,
): unknown {
  return zipSteps(steps, (round: Round, step) => {
    const merged = new Array<ResponseOutputs | null>(count).fill(null);
    round.forEach((list, g) => {
      if (list === ENDED) return;
      const indices = groups[g];
      if (!Array.isArray(list) || list.length !== indices.length) {
        throw modelOutputError(config, 'groupByKeys', `step ${step} of a group's generator must yield one outputs ` +
          `object (or null) per request of its group (${indices.length}), got ` +
          `${Array.isArray(list) ? `an array of ${list.length}` : list === null ? 'null' : typeof list}`);
      }
      indices.forEach((index, j) => { merged[index] = (list[j] ?? null) as ResponseOutputs | null; });
    });
    return merged;
  });
}

/**
 * PyTriton's `@group_by_keys`: groups the requests by their (sorted) set of input names, calls
 * `fn` once per group (one after the other, each awaited when async) and reassembles the
 * results in the original request order. Use it above `batch` when optional inputs vary.
 *
 * When `fn` returns generators (a decoupled model), they are advanced together: each step
 * yields one list in the original request order, holding what every group's generator yielded
 * for its requests at that step (null for the requests of a group whose generator has ended).
 * PyTriton's decorator does not handle generators; this is infernode's extension.
 */
export function groupByKeys(fn: RequestsInferFunc): InferFunc {
  return (requests: Request[], context: TritonContext) => {
    const groups = groupIndicesByKeys(requests);
    if (groups.length <= 1) return fn(requests, context) as ResponseOutputs[];
    const config = context.modelConfig;
    const results = mapSequential(groups, (indices) => fn(indices.map((i) => requests[i]), context) as Awaitable<unknown>);
    return thenApply(results, (perGroup) => {
      const steps = perGroup.map((value) => decoupledSteps(config, 'groupByKeys', value));
      if (steps.every((s) => s === null)) return reorder(config, groups, perGroup, requests.length);
      const plain = steps.findIndex((s) => s === null);
      if (plain >= 0) {
        throw modelOutputError(config, 'groupByKeys', `the callable returned a generator for some groups and a list for ` +
          `group ${plain}; it must stream for every group or for none`);
      }
      return mergeGroupSteps(config, groups, steps as StreamedSteps<unknown>[], requests.length);
    }) as ResponseOutputs[];
  };
}
