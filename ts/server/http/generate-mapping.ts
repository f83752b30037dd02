/**
 * Triton's generate extension mapping (docs/protocol/extension_generate.md; src/http_server.cc,
 * GenerateRequestClass), between its flat, text-oriented JSON and tensors:
 *
 * Request: every top-level key that names a model input becomes that input (a value or a flat
 * list; strings for BYTES), with the datatype from the model and a shape derived from the
 * model's metadata shape (batch dimension included, as `-1`) by Triton's two passes: the fixed
 * dimensions divide the element count, the innermost variable dimension takes what is left and
 * the other variable dimensions are 1. Every other key becomes a request parameter (string,
 * number or boolean). `parameters` is a nested object mapped by the same rule. `id` is the
 * request id (and, not being an input, also a parameter, as in Triton).
 *
 * Response: `{"id"?, "model_name", "model_version", <output>: <value>...}`, each output by name
 * as a flat list, or its only element when it has exactly one.
 */
import { clip, clipShape, InferenceServerError, invalidArg } from '../../errors';
import { describeValue } from '../../describe-value';
import type { BoundModel } from '../../model';
import type { Parameters } from '../../request';
import { dataTypeByteSize, type DataType, type NDArray } from '../../tensor';
import type { InferenceCall } from '../inference-service';
import { tensorFromJson, tensorToJsonText } from '../tensor-codec';
import { checkJsonArrays, checkJsonObjects } from '../../json-bounds';
import { needsGenerateScan, placeholderData, scanGenerateJson, type ScannedInfer } from './json-scan';
import { JsonTensorData, tensorFromJsonData } from './json-tensor-data';

/** The nested object whose keys map like top-level keys (Triton's reserved `parameters` schema). */
const PARAMETERS_KEY = 'parameters';

interface InputSpec {
  dtype: DataType;
  /** The metadata shape: config dims, behind a -1 batch dimension when the model batches. */
  shape: readonly number[];
}

/** What one request's conversion needs and accumulates. */
interface Conversion {
  modelName: string;
  specs: Map<string, InputSpec>;
  maxInputSize: number;
  /** Bytes of the inputs converted so far (Triton bounds their sum by --http-max-input-size). */
  consumed: number;
  inputs: InferenceCall['inputs'];
  custom: Parameters;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof JsonTensorData);
}

/**
 * Parses a generate body: a JSON object; an empty body is `{}` (Triton allows it). A large body
 * is scanned (json-scan.ts): each list that is the value of a top-level or `parameters` member
 * comes back as a JsonTensorData, read straight into its tensor if it is an input.
 */
export function parseGenerateBody(body: Buffer, modelName: string): Record<string, unknown> {
  if (body.length === 0) return {};
  const what = `the generate request for model '${clip(modelName)}'`;
  checkJsonObjects(body, 0, body.length, what);
  // An input takes a value or a flat list: no request needs more arrays than this.
  checkJsonArrays(body, 0, body.length, what);
  let value: unknown;
  let scanned: ScannedInfer | null = null;
  try {
    if (needsGenerateScan(body.length)) scanned = scanGenerateJson(body, body.length, what);
    value = JSON.parse(scanned ? scanned.header : body.toString('utf8'));
  } catch (err) {
    if (err instanceof InferenceServerError) throw err;
    throw invalidArg(`failed to parse the generate request JSON buffer for model '${clip(modelName)}': ${(err as Error).message}`);
  }
  if (!isObject(value)) {
    throw invalidArg(`the generate request for model '${clip(modelName)}' must be a JSON object, got ${describeValue(value)}`);
  }
  if (scanned) restoreLists(value, scanned);
  return value;
}

/** Puts the scanned lists where their placeholders are: top-level members and `parameters`' members. */
function restoreLists(request: Record<string, unknown>, scanned: ScannedInfer): void {
  const restore = (o: Record<string, unknown>): void => {
    for (const key of Object.keys(o)) o[key] = placeholderData(o[key], scanned) ?? o[key];
  };
  restore(request);
  const nested = request[PARAMETERS_KEY];
  if (isObject(nested)) restore(nested);
}

/** A scanned list as JSON.parse makes it: for values that are no input (an error names them). */
function listValue(data: JsonTensorData): unknown {
  return JSON.parse(data.body.toString('utf8', data.start, data.end));
}

/** `v`, a scanned list read as JSON.parse reads it. */
function plainValue(v: unknown): unknown {
  return v instanceof JsonTensorData ? listValue(v) : v;
}

/**
 * Triton's shape derivation for a generate input: fixed dimensions divide `count`, the innermost
 * variable (-1) dimension takes the rest, every other variable dimension is 1.
 */
export function generateInputShape(metadataShape: readonly number[], count: number, name: string, model: string): number[] {
  const shape = [...metadataShape];
  let rest = count;
  const refuse = (): never => {
    throw invalidArg(`The schema can not convert input '${clip(name)}' to tensor with proper shape: model '${clip(model)}' ` +
      `expects shape ${clipShape(metadataShape)}, the request gives ${count} element${count === 1 ? '' : 's'}`);
  };
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === -1) continue;
    if (shape[i] === 0 || rest % shape[i] !== 0) refuse();
    rest /= shape[i];
  }
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== -1) continue;
    shape[i] = rest;
    rest = 1;
  }
  if (rest !== 1) refuse();
  return shape;
}

/** Bytes an input's values occupy as a tensor (BYTES: 4-byte length + UTF-8 per element). */
function valuesByteSize(dtype: DataType, values: readonly unknown[]): number {
  if (dtype !== 'BYTES') return values.length * dataTypeByteSize(dtype);
  let total = 0;
  for (const v of values) total += 4 + (typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : 0);
  return total;
}

const notFlat = (what: string): InferenceServerError =>
  invalidArg(`${what}: the generate endpoint takes a value or a flat list of values for an input`);

/** Counts an input's `size` bytes against the request's bound (Triton bounds their sum by --http-max-input-size). */
function consume(c: Conversion, name: string, size: number): void {
  if (c.consumed + size > c.maxInputSize) {
    throw invalidArg(`request size of ${c.consumed} bytes with input '${clip(name)}' of size ${size} bytes exceeds the ` +
      `maximum allowed input size of ${c.maxInputSize}. Use --http-max-input-size to increase the limit.`);
  }
  c.consumed += size;
}

function addInput(c: Conversion, name: string, spec: InputSpec, value: unknown): void {
  const what = `input '${clip(name)}' for model '${clip(c.modelName)}'`;
  // BYTES lists are strings JSON.parse reads as fast as anything (and their sizes need them).
  if (value instanceof JsonTensorData && spec.dtype !== 'BYTES') {
    addScannedInput(c, name, spec, value, what);
    return;
  }
  value = plainValue(value);
  const values = Array.isArray(value) ? value : [value];
  if (values.some((v) => Array.isArray(v) || isObject(v))) throw notFlat(what);
  const size = valuesByteSize(spec.dtype, values);
  consume(c, name, size);
  const shape = generateInputShape(spec.shape, values.length, name, c.modelName);
  c.inputs.push({ name, tensor: tensorFromJson(what, spec.dtype, shape, values) });
}

/** addInput for a scanned list of a numeric or BOOL input: the same checks in the same order, no JS array. */
function addScannedInput(c: Conversion, name: string, spec: InputSpec, data: JsonTensorData, what: string): void {
  if (data.nested || data.objects) throw notFlat(what);
  const size = data.elements * dataTypeByteSize(spec.dtype);
  consume(c, name, size);
  const shape = generateInputShape(spec.shape, data.elements, name, c.modelName);
  c.inputs.push({ name, tensor: tensorFromJsonData(what, spec.dtype, shape, data) });
}

function addParameter(c: Conversion, name: string, value: unknown): void {
  value = plainValue(value);
  const scalar = typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
  if (!scalar) {
    throw invalidArg(`parameter '${clip(name)}' has invalid type. It should be either 'int', 'bool', or 'string'. ` +
      `(model '${clip(c.modelName)}' has no input '${clip(name)}'; got ${describeValue(value)})`);
  }
  // An own property: assigning `__proto__` would set the prototype instead.
  Object.defineProperty(c.custom, name, { value, enumerable: true, writable: true, configurable: true });
}

/** One key of the request (or of its `parameters`): an input when the model has one by that name, else a parameter. */
function mapKey(c: Conversion, name: string, value: unknown): void {
  const spec = c.specs.get(name);
  if (spec) addInput(c, name, spec, value);
  else addParameter(c, name, value);
}

/** The inference a generate request asks for (outputs: all of the model's). */
export function decodeGenerateRequest(
  request: Record<string, unknown>, model: BoundModel, modelVersion: string | undefined, maxInputSize: number,
): InferenceCall {
  const config = model.config;
  const batching = config.maxBatchSize > 0;
  const specs = new Map<string, InputSpec>();
  for (const t of config.inputs) specs.set(t.name, { dtype: t.dtype, shape: batching ? [-1, ...t.dims] : t.dims });
  const c: Conversion = { modelName: model.name, specs, maxInputSize, consumed: 0, inputs: [], custom: {} };
  const id = plainValue(request.id);
  if (id !== undefined && typeof id !== 'string') {
    throw invalidArg(`Unable to parse 'id': the generate request for model '${clip(model.name)}' must give a string, ` +
      `got ${describeValue(id)}`);
  }
  for (const key of Object.keys(request)) {
    const value = request[key];
    if (key !== PARAMETERS_KEY) {
      mapKey(c, key, value);
      continue;
    }
    if (specs.has(key)) throw invalidArg(`Keyword '${key}' for nested schema also given as input tensor name`);
    if (!isObject(value)) throw invalidArg(`Expected JSON object for keyword: '${key}'`);
    try {
      for (const nested of Object.keys(value)) mapKey(c, nested, value[nested]);
    } catch (err) {
      if (err instanceof Error) err.message = `Converting keyword: '${key}': ${err.message}`;
      throw err;
    }
  }
  return {
    modelName: model.name,
    modelVersion,
    id: id === '' ? undefined : id,
    inputs: c.inputs,
    outputs: null,
    parameters: { priority: 0, timeoutMicroseconds: 0, binaryDataOutput: false, custom: c.custom },
  };
}

/** One output's value: the flat list, or its only element. */
function outputValue(tensor: NDArray, what: string): string {
  const list = tensorToJsonText(tensor, what);
  return tensor.size === 1 ? list.slice(1, -1) : list;
}

/**
 * A generate response object (JSON text). `outputs`: by name, written in the model's output
 * order. Throws INVALID_ARG for an output JSON cannot carry (FP16, BF16).
 */
export function encodeGenerateResponse(
  model: BoundModel, id: string | undefined, outputs: Record<string, NDArray>,
): string {
  const quote = JSON.stringify;
  let json = '{';
  if (id) json += `"id":${quote(id)},`;
  json += `"model_name":${quote(model.name)},"model_version":${quote(String(model.version))}`;
  for (const { name } of model.config.outputs) {
    const tensor = outputs[name];
    // The response's own fields win over an output of the same name, as in Triton.
    if (!tensor || name === 'model_name' || name === 'model_version' || (id && name === 'id')) continue;
    json += `,${quote(name)}:${outputValue(tensor, `output '${name}' of model '${model.name}'`)}`;
  }
  return `${json}}`;
}
