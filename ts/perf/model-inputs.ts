/**
 * The requests `infernode perf` sends, built from the model's metadata and config: every input
 * the model declares, of its datatype, with its variable dims taken from --shape (or from the
 * input data file), filled with zeros, random values (generated once, as perf_analyzer does) or
 * the entries of a JSON file in perf_analyzer's format:
 *
 *   {"data": [{"INPUT0": [1, 2, 3, 4], "INPUT1": {"content": [...], "shape": [2, 2]}}, ...]}
 *
 * (an input's value may also be {"b64": "<its raw bytes, base64>"}). Requests cycle through the
 * file's entries. With batching (max_batch_size > 0) each tensor gets the batch dimension -b: as
 * perf_analyzer, request k is made of the entries k×b to k×b + b − 1 (round the list), and
 * generated data has its one row repeated.
 */
import { readFileSync } from 'node:fs';
import type { ModelMetadata, TensorMetadata } from '../client/types';
import { bfloat16Bits, float16Bits } from '../decorators/padding';
import { tensorFromJson } from '../server/tensor-codec';
import {
  NDArray, deserializeBytes, elementCount, parseDataType, typedArrayFor, type DataType, type TypedArray,
} from '../tensor';
import type { InputDataMode } from './options';

/** One input as perf sends it. */
export interface InputSpec {
  name: string;
  dtype: DataType;
  /** Dims of one batch row (without the batch dimension); -1 where the model leaves a dim free. */
  dims: number[];
  /** The config marks it optional: a data file's entries may leave it out. */
  optional?: boolean;
}

/** Why perf cannot build requests; the CLI prints the message and exits 1. */
export class PerfInputError extends Error {}

/** What perf needs of the model: its inputs and whether it batches. */
export interface ModelShape {
  inputs: InputSpec[];
  maxBatchSize: number;
  decoupled: boolean;
  /** Whether its config enables the response cache (the CSV then has perf_analyzer's cache columns). */
  responseCache: boolean;
}

/** The inputs and batching of a model, from its metadata and config. */
export function modelShape(metadata: ModelMetadata, config: Record<string, unknown>): ModelShape {
  const maxBatchSize = Number(config.max_batch_size ?? 0);
  const policy = config.model_transaction_policy as { decoupled?: boolean } | undefined;
  const cache = config.response_cache as { enable?: boolean } | undefined;
  const configInputs = (config.input ?? []) as { name?: string; optional?: boolean }[];
  const inputs = metadata.inputs.map((t: TensorMetadata) => {
    const shape = t.shape.map(Number);
    const optional = configInputs.some((c) => c.name === t.name && c.optional === true);
    return { name: t.name, dtype: parseDataType(t.datatype), dims: maxBatchSize > 0 ? shape.slice(1) : shape, optional };
  });
  return { inputs, maxBatchSize, decoupled: policy?.decoupled === true, responseCache: cache?.enable === true };
}

/** Checks -b against the model's batching. */
export function checkBatchSize(model: string, shape: ModelShape, batchSize: number): void {
  if (batchSize > 1 && shape.maxBatchSize === 0) {
    // perf_analyzer's text, then which model and which -b.
    throw new PerfInputError(`can not specify batch size > 1 as the model does not support batching: model '${model}' has ` +
      `max_batch_size 0, so -b must be 1, got ${batchSize}`);
  }
  if (shape.maxBatchSize > 0 && batchSize > shape.maxBatchSize) {
    throw new PerfInputError(`-b ${batchSize} exceeds the max_batch_size of model '${model}' (${shape.maxBatchSize}): use -b 1 to ${shape.maxBatchSize}`);
  }
}

const fmtDims = (dims: readonly number[]): string => `[${dims.join(',')}]`;

/**
 * The dims of each input with --shape applied: a free (-1) dim needs a --shape naming the input;
 * a --shape must name an input of the model and agree with its fixed dims.
 */
export function resolveDims(model: string, inputs: InputSpec[], shapes: Map<string, number[]>): Map<string, number[] | null> {
  const names = inputs.map((i) => i.name);
  for (const name of shapes.keys()) {
    if (!names.includes(name)) {
      throw new PerfInputError(`--shape names input '${name}', which model '${model}' does not have; its inputs: ${names.join(', ')}`);
    }
  }
  const resolved = new Map<string, number[] | null>();
  for (const input of inputs) {
    const given = shapes.get(input.name);
    if (given === undefined) {
      resolved.set(input.name, input.dims.includes(-1) ? null : input.dims);
      continue;
    }
    const fits = given.length === input.dims.length && given.every((d, i) => input.dims[i] === -1 || input.dims[i] === d);
    if (!fits) {
      throw new PerfInputError(`--shape ${input.name}:${given.join(',')} does not fit input '${input.name}' of model '${model}', ` +
        `whose dims (without the batch dimension) are ${fmtDims(input.dims)}: give ${input.dims.length} dims, -1 marking the free ones`);
    }
    resolved.set(input.name, given);
  }
  return resolved;
}

function missingShape(model: string, input: InputSpec): PerfInputError {
  return new PerfInputError(`input '${input.name}' of model '${model}' has a variable dimension ${fmtDims(input.dims)}: ` +
    `give its dims with --shape ${input.name}:${input.dims.map((d) => (d === -1 ? 'N' : d)).join(',')}`);
}

/** Random text of `length` characters (letters and digits). */
function randomText(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let s = '';
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

/** One row of an input: zeros, or random values valid for its datatype. */
function generatedRow(dtype: DataType, dims: number[], random: boolean, stringLength: number): NDArray {
  const count = elementCount(dims);
  if (dtype === 'BYTES') {
    const items = Array.from({ length: count }, () => Buffer.from(random ? randomText(stringLength) : '0'.repeat(stringLength)));
    return new NDArray('BYTES', dims, items);
  }
  const data = new (typedArrayFor(dtype))(count);
  if (random) {
    for (let i = 0; i < count; i++) {
      const u = Math.random();
      switch (dtype) {
        case 'BOOL': (data as Uint8Array)[i] = u < 0.5 ? 0 : 1; break;
        case 'FP16': (data as Uint16Array)[i] = float16Bits(u); break;
        case 'BF16': (data as Uint16Array)[i] = bfloat16Bits(u); break;
        case 'FP32': case 'FP64': (data as Float64Array)[i] = u; break;
        case 'INT64': case 'UINT64': (data as BigInt64Array)[i] = BigInt(Math.floor(u * 128)); break;
        // Small values fit every integer type, signed or not.
        default: (data as Int32Array)[i] = Math.floor(u * 128);
      }
    }
  }
  return new NDArray(dtype, dims, data);
}

/** `rows` (of one input, each of the same dims) stacked along a new batch dimension. */
function batchOf(rows: NDArray[]): NDArray {
  const first = rows[0];
  const shape = [rows.length, ...first.shape];
  if (first.dtype === 'BYTES') return new NDArray('BYTES', shape, rows.flatMap((r) => r.data as Uint8Array[]));
  const length = (first.data as TypedArray).length;
  const out = new ((first.data as TypedArray).constructor as new (n: number) => TypedArray)(length * rows.length);
  rows.forEach((r, i) => (out as Uint8Array).set(r.data as Uint8Array, i * length));
  return new NDArray(first.dtype, shape, out);
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The batches of -b `batchSize` made of `entries` as perf_analyzer makes them: request k takes
 * the entries k×b to k×b + b − 1, round the list, so the batches repeat after n / gcd(n, b).
 * The entries of a batch must give each input the same dims, and the same optional inputs.
 */
function batchesOf(entries: Record<string, NDArray>[], batchSize: number, what: string): Record<string, NDArray>[] {
  const n = entries.length;
  return Array.from({ length: n / gcd(n, batchSize) }, (_, k) => {
    const indexes = Array.from({ length: batchSize }, (__, i) => (k * batchSize + i) % n);
    const rows = indexes.map((i) => entries[i]);
    const names = Object.keys(rows[0]);
    const batch: Record<string, NDArray> = {};
    for (const [j, row] of rows.entries()) {
      if (Object.keys(row).length !== names.length || !names.every((name) => name in row)) {
        throw new PerfInputError(`${what}: data[${indexes[0]}] and data[${indexes[j]}] go in one batch of -b ${batchSize} but give ` +
          'different inputs: for batch sizes larger than 1, every entry of a batch must give the same inputs');
      }
      for (const name of names) {
        if (row[name].shape.join() !== rows[0][name].shape.join()) {
          throw new PerfInputError(`${what}: can not batch tensors with different shapes together: input '${name}' is ` +
            `${fmtDims(rows[0][name].shape)} in data[${indexes[0]}] and ${fmtDims(row[name].shape)} in data[${indexes[j]}], ` +
            `which go in one batch of -b ${batchSize}`);
        }
      }
    }
    for (const name of names) batch[name] = batchOf(rows.map((r) => r[name]));
    return batch;
  });
}

/** JSON values of an FP16/BF16 input (numbers) as their 16-bit patterns. */
function halfFromJson(what: string, dtype: 'FP16' | 'BF16', dims: number[], values: unknown): NDArray {
  const flat = Array.isArray(values) ? (values as unknown[]).flat(Infinity) : [values];
  if (flat.length !== elementCount(dims)) {
    throw new PerfInputError(`${what}: dims ${fmtDims(dims)} hold ${elementCount(dims)} elements, the data has ${flat.length}`);
  }
  const toBits = dtype === 'FP16' ? float16Bits : bfloat16Bits;
  return new NDArray(dtype, dims, Uint16Array.from(flat, (v, i) => {
    if (typeof v !== 'number') throw new PerfInputError(`${what}: element ${i} is not a number`);
    return toBits(v);
  }));
}

/** Raw tensor bytes ({"b64": ...}) as a row of `dims`. */
function rowFromBytes(what: string, dtype: DataType, dims: number[], bytes: Buffer): NDArray {
  const count = elementCount(dims);
  if (dtype === 'BYTES') return new NDArray('BYTES', dims, deserializeBytes(bytes, count, what));
  const Ctor = typedArrayFor(dtype);
  if (bytes.length !== count * Ctor.BYTES_PER_ELEMENT) {
    throw new PerfInputError(`${what}: dims ${fmtDims(dims)} of ${dtype} need ${count * Ctor.BYTES_PER_ELEMENT} bytes, b64 gives ${bytes.length}`);
  }
  const copy = new Uint8Array(bytes);  // aligned for the typed array
  return new NDArray(dtype, dims, new Ctor(copy.buffer, 0, count));
}

/** A list's dims for an input with one free dim: the element count fixes it (null when it cannot). */
function inferredDims(input: InputSpec, content: unknown): number[] | null {
  if (!Array.isArray(content) || input.dims.filter((d) => d === -1).length !== 1) return null;
  const count = (content as unknown[]).flat(Infinity).length;
  const fixed = input.dims.reduce((p, d) => (d === -1 ? p : p * d), 1);
  if (fixed === 0 || count % fixed !== 0) return null;
  return input.dims.map((d) => (d === -1 ? count / fixed : d));
}

/** One input of one entry of a JSON data file. */
function rowFromEntry(what: string, model: string, input: InputSpec, dims: number[] | null, value: unknown): NDArray {
  let content = value;
  let shape = dims;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as { content?: unknown; shape?: unknown; b64?: unknown };
    if (v.shape !== undefined) {
      if (!Array.isArray(v.shape) || !v.shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
        throw new PerfInputError(`${what}: "shape" must be a list of non-negative integers`);
      }
      const given = v.shape as number[];
      if (given.length !== input.dims.length || given.some((d, i) => input.dims[i] !== -1 && input.dims[i] !== d)) {
        throw new PerfInputError(`${what}: "shape" ${fmtDims(given)} does not fit input '${input.name}' of model '${model}', ` +
          `whose dims (without the batch dimension) are ${fmtDims(input.dims)}`);
      }
      shape = given;
    }
    if (shape === null) throw missingShape(model, input);
    if (typeof v.b64 === 'string') return rowFromBytes(what, input.dtype, shape, Buffer.from(v.b64, 'base64'));
    if (v.content === undefined) throw new PerfInputError(`${what}: expected a list of values, {"content": [...], "shape": [...]} or {"b64": "..."}`);
    content = v.content;
  }
  if (shape === null) {
    shape = inferredDims(input, content);
    if (shape === null) throw missingShape(model, input);
  }
  if (input.dtype === 'FP16' || input.dtype === 'BF16') return halfFromJson(what, input.dtype, shape, content);
  // perf_analyzer's files give BOOL as true/false or as 0/1.
  if (input.dtype === 'BOOL' && Array.isArray(content)) content = (content as unknown[]).flat(Infinity).map((x) => (typeof x === 'number' ? x !== 0 : x));
  try {
    return tensorFromJson(what, input.dtype, shape, content);
  } catch (err) {
    throw new PerfInputError((err as Error).message);
  }
}

/** The rows of each entry of a perf_analyzer JSON data file. */
function rowsFromFile(file: string, model: string, inputs: InputSpec[], dims: Map<string, number[] | null>): Record<string, NDArray>[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new PerfInputError(`--input-data ${file}: cannot read it as JSON: ${(err as Error).message}`);
  }
  let data = (parsed as { data?: unknown } | null)?.data;
  const usage = 'expected {"data": [{"<input>": [...], ...}, ...]} with at least one entry';
  if (!Array.isArray(data) || data.length === 0) throw new PerfInputError(`--input-data ${file}: ${usage}`);
  // A list of lists gives streams of steps, which perf_analyzer uses for sequence models; a model
  // without sequences is sent the first stream's steps, as there.
  if (data.every((stream) => Array.isArray(stream))) {
    data = data[0] as unknown[];
    if ((data as unknown[]).length === 0) throw new PerfInputError(`--input-data ${file}: data[0] (the first stream) has no entry`);
  } else if (data.some((stream) => Array.isArray(stream))) {
    throw new PerfInputError(`--input-data ${file}: data mixes entries (objects) and streams (lists); ${usage}`);
  }
  return (data as unknown[]).map((entry: unknown, i) => {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new PerfInputError(`--input-data ${file}: data[${i}] must be an object of inputs`);
    }
    const record = entry as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      // perf_analyzer also lets an entry name its "model" (and ignores it).
      if (key !== 'model' && !inputs.some((x) => x.name === key)) {
        throw new PerfInputError(`--input-data ${file}: data[${i}] names '${key}', which model '${model}' does not have; its inputs: ${inputs.map((x) => x.name).join(', ')}`);
      }
    }
    const rows: Record<string, NDArray> = {};
    for (const input of inputs) {
      if (!(input.name in record)) {
        if (input.optional) continue;  // not sent with this entry
        throw new PerfInputError(`--input-data ${file}: data[${i}] has no value for input '${input.name}'`);
      }
      rows[input.name] = rowFromEntry(`--input-data ${file}: data[${i}].${input.name}`, model, input, dims.get(input.name) ?? null, record[input.name]);
    }
    return rows;
  });
}

export interface RequestInputsOptions {
  model: string;
  shape: ModelShape;
  shapes: Map<string, number[]>;
  inputData: InputDataMode;
  batchSize: number;
  stringLength: number;
}

/** The input sets requests cycle through (one for zero and random data, one per file entry). */
export function requestInputs(o: RequestInputsOptions): Record<string, NDArray>[] {
  const dims = resolveDims(o.model, o.shape.inputs, o.shapes);
  if (o.inputData.kind === 'file') {
    const entries = rowsFromFile(o.inputData.path, o.model, o.shape.inputs, dims);
    return o.shape.maxBatchSize === 0 ? entries : batchesOf(entries, o.batchSize, `--input-data ${o.inputData.path}`);
  }
  const row: Record<string, NDArray> = {};
  for (const input of o.shape.inputs) {
    const d = dims.get(input.name);
    if (!d) throw missingShape(o.model, input);
    row[input.name] = generatedRow(input.dtype, d, o.inputData.kind === 'random', o.stringLength);
  }
  if (o.shape.maxBatchSize === 0) return [row];
  return [Object.fromEntries(Object.entries(row).map(([name, r]) => [name, batchOf(Array.from({ length: o.batchSize }, () => r))]))];
}
