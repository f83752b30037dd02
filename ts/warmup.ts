/**
 * Model warm-up as PyTriton does it: before a bound model is marked ready, each `ModelWarmup`
 * builds `count` synthetic requests and calls every instance's callable directly. Failures are
 * logged and ignored (PyTriton's behaviour); async callables are awaited.
 */
import { readFileSync } from 'node:fs';
import type { NormalizedModelConfig } from './config/normalize';
import type { ModelWarmup, WarmupInput } from './config/types';
import { invalidArg } from './errors';
import { Request, type InferFunc } from './request';
import {
  NDArray, deserializeBytes, elementCount, parseDataType, typedArrayFor, type DataType, type TypedArray,
} from './tensor';

function fill(dtype: Exclude<DataType, 'BYTES'>, count: number, random: boolean): TypedArray {
  const data = new (typedArrayFor(dtype))(count);
  if (!random) return data;
  for (let i = 0; i < count; i++) {
    if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(Math.floor(Math.random() * 100));
    else if (data instanceof Float32Array || data instanceof Float64Array) data[i] = Math.random();
    else data[i] = dtype === 'BOOL' ? Math.round(Math.random()) : Math.floor(Math.random() * 100);
  }
  return data;
}

/** The warm-up data of one input, batch axis included when the model batches. */
export function warmupInputArray(input: WarmupInput, batchSize: number, batching: boolean, name: string): NDArray {
  const sources = [input.zeroData, input.randomData, input.inputDataFile !== undefined].filter(Boolean).length;
  if (sources !== 1) throw invalidArg(`warm-up input '${name}' needs exactly one of zeroData, randomData, inputDataFile`);
  const dtype = parseDataType(input.dtype);
  const shape = batching ? [batchSize, ...input.shape] : [...input.shape];
  const count = elementCount(shape);
  if (dtype === 'BYTES') {
    const items = input.inputDataFile
      ? deserializeBytes(readFileSync(input.inputDataFile), count, `warm-up input '${name}'`)
      : Array.from({ length: count }, () => Buffer.from(input.randomData ? String(Math.random()) : ''));
    return new NDArray('BYTES', shape, items);
  }
  if (!input.inputDataFile) return new NDArray(dtype, shape, fill(dtype, count, Boolean(input.randomData)));
  const raw = readFileSync(input.inputDataFile);
  const Ctor = typedArrayFor(dtype);
  const needed = count * Ctor.BYTES_PER_ELEMENT;
  if (raw.length < needed) throw invalidArg(`warm-up file ${input.inputDataFile} has ${raw.length} bytes, needs ${needed}`);
  const copy = new Uint8Array(needed);
  copy.set(raw.subarray(0, needed));
  return new NDArray(dtype, shape, new Ctor(copy.buffer));
}

async function runOne(config: NormalizedModelConfig, warmup: ModelWarmup, funcs: InferFunc[]): Promise<void> {
  const batching = config.maxBatchSize > 0;
  const data: Record<string, NDArray> = {};
  for (const [name, input] of Object.entries(warmup.inputs)) {
    data[name] = warmupInputArray(input, warmup.batchSize, batching, name);
  }
  // Triton's count: 0 (the default) runs the sample once.
  const count = Math.max(1, warmup.count ?? 0);
  for (let instance = 0; instance < funcs.length; instance++) {
    for (let i = 0; i < count; i++) {
      await funcs[instance]([new Request(data)], { modelConfig: config, instanceIndex: instance });
    }
  }
}

/** Runs every warm-up of the model; logs (and otherwise ignores) failures. */
export async function runWarmups(config: NormalizedModelConfig, funcs: InferFunc[]): Promise<void> {
  for (const warmup of config.modelWarmup) {
    try {
      await runOne(config, warmup, funcs);
    } catch (err) {
      console.warn(`infernode: warm-up '${warmup.name}' of model '${config.name}' failed: ${(err as Error).message}`);
    }
  }
}
