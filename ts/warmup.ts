/**
 * Model warm-up as Triton does it: before a model is ready, each `ModelWarmup` sample runs
 * `count` times on every instance through the model's own scheduler; a failure fails the load
 * (a repository model's load, a bound model's run()).
 */
import { readFileSync } from 'node:fs';
import { instancesOf } from './config/instances';
import type { NormalizedModelConfig } from './config/normalize';
import type { WarmupInput } from './config/types';
import { InferenceServerError, invalidArg, toInferenceServerError } from './errors';
import type { BoundModel, InferOptions } from './model';
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

/** `sample` repeated `times` times, one after another. */
function repeat<T extends TypedArray>(sample: T, times: number): T {
  const out = new (sample.constructor as new (n: number) => T)(sample.length * times);
  for (let i = 0; i < times; i++) (out as unknown as { set(a: T, at: number): void }).set(sample, i * sample.length);
  return out;
}

/**
 * The warm-up data of one input, batch axis included when the model batches. As Triton's
 * GenerateWarmupData: `dims` (without the batch axis) is one sample; a file holds one sample
 * (the first bytes it needs; for BYTES, the whole file), repeated `batch_size` times; BYTES
 * random_data is zero data (empty strings).
 */
export function warmupInputArray(input: WarmupInput, batchSize: number, batching: boolean, name: string): NDArray {
  const sources = [input.zeroData, input.randomData, input.inputDataFile !== undefined].filter(Boolean).length;
  if (sources !== 1) throw invalidArg(`warm-up input '${name}' needs exactly one of zeroData, randomData, inputDataFile`);
  const dtype = parseDataType(input.dtype);
  const times = batching ? batchSize : 1;
  const shape = batching ? [batchSize, ...input.shape] : [...input.shape];
  const sampleCount = elementCount([...input.shape]);
  if (dtype === 'BYTES') {
    const sample = input.inputDataFile
      ? deserializeBytes(readFileSync(input.inputDataFile), sampleCount, `warm-up input '${name}'`)
      : Array.from({ length: sampleCount }, () => Buffer.alloc(0));
    return new NDArray('BYTES', shape, Array.from({ length: times }, () => sample).flat());
  }
  if (!input.inputDataFile) return new NDArray(dtype, shape, fill(dtype, sampleCount * times, Boolean(input.randomData)));
  const raw = readFileSync(input.inputDataFile);
  const Ctor = typedArrayFor(dtype);
  const needed = sampleCount * Ctor.BYTES_PER_ELEMENT;
  if (raw.length < needed) {
    throw invalidArg(`warmup setting expects ${needed} bytes, but the data provided from ${input.inputDataFile} only has ${raw.length} bytes`);
  }
  const copy = new Uint8Array(needed);
  copy.set(raw.subarray(0, needed));
  return new NDArray(dtype, shape, repeat(new Ctor(copy.buffer), times));
}

let nextWarmupSequence = 1;

/**
 * A sequence model's warm-up request is a sequence of its own (START and END), with an id of
 * the model's correlation id type far from any a client picks.
 */
function warmupSequence(config: NormalizedModelConfig): Pick<InferOptions, 'sequenceId' | 'sequenceStart' | 'sequenceEnd'> {
  const seq = config.sequenceBatching;
  if (!seq) return {};
  const n = nextWarmupSequence++;
  const stringIds = seq.controls.some((c) => c.kind === 'CONTROL_SEQUENCE_CORRID' && c.dtype === 'BYTES');
  return { sequenceId: stringIds ? `infernode-warmup-${n}` : (1n << 62n) + BigInt(n), sequenceStart: true, sequenceEnd: true };
}

/** One warm-up request through the model's queue; a decoupled model's responses are read to its end. */
async function warmupRequest(model: BoundModel, inputs: Record<string, NDArray>, instance: number): Promise<void> {
  const options: InferOptions = { inputsOwned: true, instance, ...warmupSequence(model.config) };
  if (!model.config.decoupled) {
    await model.infer(inputs, options);
    return;
  }
  for await (const _ of model.inferStream(inputs, options)) {
    // every response is read and dropped, as Triton's warm-up does
  }
}

/** Where warm-up says what it runs: the server log at verbose level 1. */
export type WarmupLog = (line: string) => void;

/**
 * Runs the model's warm-ups through its own scheduler before it serves, as Triton does: each
 * sample `count` times (at least once) on every instance, instance by instance. Each run is
 * logged (verbose) and the first failure rejects, both in Triton's words, which tools and
 * Triton's QA (L0_warmup) look for: "is running warmup sample '<name>' for iteration <n>",
 * "failed to run warmup sample '<name>': <reason>;", after the model and version (the load then
 * fails with that reason).
 */
export async function warmUp(model: BoundModel, log: WarmupLog = () => undefined): Promise<void> {
  const config = model.config;
  const instances = instancesOf(config.name, config.instanceGroup);
  for (const warmup of config.modelWarmup) {
    let instance = 0;
    try {
      const inputs: Record<string, NDArray> = {};
      for (const [name, input] of Object.entries(warmup.inputs)) {
        inputs[name] = warmupInputArray(input, warmup.batchSize, config.maxBatchSize > 0, name);
      }
      for (instance = 0; instance < instances.length; instance++) {
        for (let iteration = 1; iteration <= Math.max(1, warmup.count ?? 0); iteration++) {
          log(`model '${config.name}' instance ${instances[instance].name} is running warmup sample '${warmup.name}' for iteration ${iteration}`);
          await warmupRequest(model, inputs, instance);
        }
      }
    } catch (err) {
      log(`model '${config.name}' instance ${instances[instance]?.name ?? ''} failed to run warmup sample '${warmup.name}'`);
      throw new InferenceServerError('INVALID_ARG', `model '${config.name}' version ${config.version}: ` +
        `failed to run warmup sample '${warmup.name}': ${toInferenceServerError(err).message};`);
    }
  }
}
