/**
 * Decoding an HTTP infer request (KServe v2 JSON and Triton's binary tensor data extension,
 * triton-protocol.md §1.3-1.4) into the InferenceCall that InferenceService runs (the gRPC
 * frontend decodes its messages into the same shape):
 *
 * - JSON only: tensors in `data` (flat or nested). A large body is read without JSON.parse
 *   making its data arrays (json-scan.ts).
 * - JSON + binary: `Inference-Header-Content-Length` bytes of JSON, then the raw tensors of the
 *   inputs that carry `parameters.binary_data_size`, in input order. They become views of the
 *   body (tensor-codec's tensorFromBytes), never decoded element by element.
 * - Raw binary (`Inference-Header-Content-Length: 0`): the whole body is the data of the model's
 *   only input; every output comes back binary.
 *
 * Every field is checked before use and every error names the input or output and the model.
 */
import { clip, InferenceServerError, invalidArg } from '../../errors';
import { describeValue } from '../../describe-value';
import { dataTypeByteSize, type NDArray, type DataType } from '../../tensor';
import type { DeviceTensor } from '../../device-tensor';
import type { InferenceCall, OutputRequest } from '../inference-service';
import { markBigIntegers, unmarkOutside } from '../big-integers';
import { checkJsonObjects } from '../../json-bounds';
import { needsScan, placeholderData, scanInferJson, type ScannedInfer } from './json-scan';
import { JsonTensorData, tensorFromJsonData } from './json-tensor-data';
import { checkForwardedHeader, compileHeaderForwardPattern, exactSequenceId, splitRequestParameters } from '../parameters';
import { shmRefFromParameters, type ShmRef } from '../shared-memory';
import { tensorFromBytes, tensorFromJson, wireDataType, wireShape } from '../tensor-codec';

/** The model's only input, for raw binary requests. */
export interface RawInputSpec {
  name: string;
  dtype: DataType;
  /** Config dims, without the batch axis. */
  dims: readonly number[];
  batching: boolean;
  /** How many inputs the model declares (a raw request needs exactly one). */
  inputCount: number;
}

/** Where decoding finds what the bytes do not carry; one per frontend, not per request. */
export interface InferSources {
  /** Reads an input from shared memory; null where no shared memory is served (the bench's bare server). */
  sharedMemoryInput: ((what: string, dtype: DataType, shape: number[], ref: ShmRef) => NDArray | DeviceTensor) | null;
  /** The model's input, for raw binary requests (resolves the model: may throw NOT_FOUND). */
  rawInput: (model: string, version?: string) => RawInputSpec;
  /** Headers whose names match are passed to the model as request parameters. */
  forwardHeaders: RegExp | null;
}

/** What one request's decoding needs besides the bytes. */
export interface InferDecodeOptions {
  modelName: string;
  modelVersion?: string;
  /** Request headers as received (name, value, ...), for header forwarding. */
  rawHeaders?: readonly string[];
  sources: InferSources;
}

export interface DecodedInfer {
  call: InferenceCall;
  /** Outputs the request did not list come back binary (binary_data_output, raw requests). */
  binaryByDefault: boolean;
}

const INT32_MAX = 2 ** 31 - 1;

/**
 * Reads `Inference-Header-Content-Length`: null when absent; INVALID_ARG unless it is an int32
 * in [0, bodyLength] (bodyLength unknown before the body is read: pass Infinity).
 */
export function parseHeaderLength(value: string | string[] | undefined, bodyLength = Infinity): number | null {
  if (value === undefined) return null;
  const text = Array.isArray(value) ? value[0] : value;
  const n = /^\s*[0-9]{1,10}\s*$/.test(text) ? Number(text) : NaN;
  if (!(n <= INT32_MAX)) {
    throw invalidArg(`Unable to parse Inference-Header-Content-Length '${text}': expected an integer between 0 and ${INT32_MAX}`);
  }
  checkHeaderLength(n, bodyLength);
  return n;
}

/** INVALID_ARG when an Inference-Header-Content-Length of `n` bytes does not fit the body read. */
export function checkHeaderLength(n: number, bodyLength: number): void {
  if (n > bodyLength) {
    throw invalidArg(`Unable to parse Inference-Header-Content-Length: ${n} is larger than the request body of ${bodyLength} bytes`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** INVALID_ARG for a JSON body JSON.parse (or the scan, json-scan.ts) refused with `err`. */
function unparsable(model: string, err: unknown): InferenceServerError {
  return invalidArg(`failed to parse the request JSON buffer for model '${model}': ${(err as Error).message}`);
}

/**
 * Whether `err` is V8 refusing to make a string past its longest (2^29 - 24 characters): Node's
 * ERR_STRING_TOO_LONG from Buffer.toString, or a RangeError when one is built up.
 */
function isStringTooLong(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ERR_STRING_TOO_LONG' ||
    (err instanceof RangeError && err.message === 'Invalid string length');
}

function parseHeader(body: Buffer, length: number, model: string): Record<string, unknown> {
  const what = `the inference request for model '${clip(model)}'`;
  checkJsonObjects(body, 0, length, what);
  let header: unknown;
  let scanned: ScannedInfer | null = null;
  try {
    // A body of many arrays (or a huge one) is checked and its inputs' data set apart first:
    // JSON.parse would make a JS array of every nested data array (json-scan.ts).
    if (needsScan(body, length)) scanned = scanInferJson(body, length, what);
    const text = scanned ? scanned.header : body.toString('utf8', 0, length);
    const marked = markBigIntegers(text);
    header = JSON.parse(marked);
    // Only inputs' data and tensors' shared-memory offsets and sizes keep exact 64-bit marks
    // (the tensor decoder and shmRefFromParameters read them). No client string can spell a mark
    // (ts/exact-json.ts: MARK holds a random nonce).
    if (marked !== text) header = unmarkOutside(header, keepsMarks);
  } catch (err) {
    if (err instanceof InferenceServerError) throw err;
    throw unparsable(model, err);
  }
  if (!isObject(header)) throw invalidArg(`the inference request for model '${model}' must be a JSON object`);
  if (scanned && Array.isArray(header.inputs)) {
    for (const input of header.inputs as unknown[]) {
      if (isObject(input)) input.data = placeholderData(input.data, scanned) ?? input.data;
    }
  }
  return header;
}

/** The paths of the header whose long integers stay exact (marked): see parseHeader. */
function keepsMarks(p: readonly (string | number)[]): boolean {
  if (p.length === 3) return p[0] === 'inputs' && p[2] === 'data';
  return p.length === 4 && (p[0] === 'inputs' || p[0] === 'outputs') && p[2] === 'parameters' &&
    (p[3] === 'shared_memory_offset' || p[3] === 'shared_memory_byte_size');
}

/** A byte count from a tensor's parameters: an exact non-negative integer. */
function byteCount(value: unknown, key: string, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidArg(`${what}: parameter '${key}' must be a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}

/** Decodes the inputs; `binary` is the binary part of the body, consumed in input order. */
function decodeInputs(list: unknown, binary: Buffer, opts: InferDecodeOptions): InferenceCall['inputs'] {
  const model = opts.modelName;
  if (!Array.isArray(list)) throw invalidArg(`the inference request for model '${model}' must have an 'inputs' list`);
  const inputs: InferenceCall['inputs'] = [];
  let offset = 0;
  for (let i = 0; i < list.length; i++) {
    const input: unknown = list[i];
    if (!isObject(input) || typeof input.name !== 'string') {
      throw invalidArg(`input ${i} of the inference request for model '${model}' must be an object with a string 'name'`);
    }
    const what = `input '${clip(input.name)}' for model '${clip(model)}'`;
    const dtype = wireDataType(input.datatype, what);
    const shape = wireShape(input.shape, what, false, dtype);
    const params = input.parameters;
    if (params !== undefined && !isObject(params)) throw invalidArg(`${what}: 'parameters' must be an object`);
    const size = params?.binary_data_size;
    const shm = shmRefFromParameters(params, what);
    const sources = (input.data !== undefined ? 1 : 0) + (size !== undefined ? 1 : 0) + (shm ? 1 : 0);
    if (sources !== 1) {
      throw invalidArg(`${what}: ${sources === 0 ? 'no tensor data. ' : ''}Input must set only one of the following fields: ` +
        `'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'`);
    }
    let tensor: NDArray | DeviceTensor;
    if (size !== undefined) {
      const n = byteCount(size, 'binary_data_size', what);
      if (n > binary.length - offset) {
        throw invalidArg(`${what}: binary_data_size ${n} exceeds the ${binary.length - offset} bytes of binary data left in the request`);
      }
      tensor = tensorFromBytes(what, dtype, shape, binary.subarray(offset, offset + n));
      offset += n;
    } else if (shm) {
      const read = opts.sources.sharedMemoryInput;
      if (!read) throw invalidArg(`${what}: shared memory is not served here`);
      // The region is named with the input: the request holds it until it settles.
      inputs.push({ name: input.name, tensor: read(what, dtype, shape, shm), region: shm.region });
      continue;
    } else {
      tensor = input.data instanceof JsonTensorData ? tensorFromJsonData(what, dtype, shape, input.data)
        : tensorFromJson(what, dtype, shape, input.data);
    }
    inputs.push({ name: input.name, tensor });
  }
  if (offset !== binary.length) {
    throw invalidArg(`the inference request for model '${model}' carries ${binary.length} bytes of binary data ` +
      `after its JSON header, but its inputs' binary_data_size add up to ${offset}`);
  }
  return inputs;
}

function decodeOutputs(list: unknown, model: string): OutputRequest[] | null {
  if (list === undefined) return null;
  if (!Array.isArray(list)) throw invalidArg(`'outputs' of the inference request for model '${model}' must be a list`);
  return list.map((output: unknown, i): OutputRequest => {
    if (!isObject(output) || typeof output.name !== 'string') {
      throw invalidArg(`requested output ${i} for model '${model}' must be an object with a string 'name'`);
    }
    const what = `output '${clip(output.name)}' for model '${clip(model)}'`;
    const params = output.parameters;
    if (params === undefined) return { name: output.name };
    if (!isObject(params)) throw invalidArg(`${what}: 'parameters' must be an object`);
    const request: OutputRequest = { name: output.name, shm: shmRefFromParameters(params, what) };
    if (params.binary_data !== undefined) {
      if (typeof params.binary_data !== 'boolean') throw invalidArg(`${what}: parameter 'binary_data' must be a boolean`);
      request.binaryData = params.binary_data;
    }
    if (params.classification !== undefined) {
      if (typeof params.classification !== 'number' || !Number.isSafeInteger(params.classification) || params.classification <= 0) {
        throw invalidArg(`${what}: parameter 'classification' must be a positive integer, got ${describeValue(params.classification)}`);
      }
      request.classification = params.classification;
    }
    return request;
  });
}

/** Raw binary request: the body is the data of the model's only input (Triton's rules). */
function decodeRaw(body: Buffer, opts: InferDecodeOptions): DecodedInfer {
  const spec = opts.sources.rawInput(opts.modelName, opts.modelVersion);
  const model = opts.modelName;
  if (spec.inputCount !== 1) {
    throw invalidArg(`Raw request must only have 1 input (found 1) to be deduced but got ${spec.inputCount} inputs in '${model}' model configuration`);
  }
  const what = `raw input '${spec.name}' for model '${model}'`;
  const shape = spec.batching ? [1, ...spec.dims] : [...spec.dims];
  const variable = shape.filter((d) => d < 0).length;
  let tensor: NDArray;
  if (spec.dtype === 'BYTES') {
    if (variable > 0 || shape.reduce((a, b) => a * b, 1) !== 1) {
      throw invalidArg(`For BYTE datatype raw input '${spec.name}', the model must have input shape [1] (model '${model}')`);
    }
    tensor = tensorFromBytes(what, 'BYTES', shape, lengthPrefixed(body));
  } else {
    if (variable > 1) {
      throw invalidArg(`The shape of the raw input '${spec.name}' can not be deduced because there are more than one variable-sized dimension`);
    }
    if (variable === 1) {
      const fixed = shape.reduce((a, d) => (d < 0 ? a : a * d), 1) * dataTypeByteSize(spec.dtype);
      if (fixed === 0 || body.length % fixed !== 0) {
        throw invalidArg(`${what}: ${body.length} bytes do not make whole elements of shape [${spec.dims.join(',')}]`);
      }
      shape[shape.indexOf(-1)] = body.length / fixed;
    }
    tensor = tensorFromBytes(what, spec.dtype, shape, body);
  }
  return {
    call: {
      modelName: model, modelVersion: opts.modelVersion, inputs: [{ name: spec.name, tensor }], outputs: null,
      parameters: splitRequestParameters(undefined),
    },
    binaryByDefault: true,
  };
}

/** One BYTES element holding the whole body (Triton prepends the 4-byte length). */
function lengthPrefixed(body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32LE(body.length, 0);
  body.copy(out, 4);
  return out;
}

function forwardHeaders(custom: Record<string, string | number | boolean>, opts: InferDecodeOptions): void {
  const pattern = opts.sources.forwardHeaders;
  const raw = opts.rawHeaders;
  if (!pattern || !raw) return;
  for (let i = 0; i < raw.length; i += 2) {
    if (!pattern.test(raw[i])) continue;
    checkForwardedHeader(raw[i]);
    custom[raw[i]] = raw[i + 1];
  }
}

/** Decodes an infer request body; `headerLength` is Inference-Header-Content-Length (null: all JSON). */
export function decodeInferRequest(body: Buffer, headerLength: number | null, opts: InferDecodeOptions): DecodedInfer {
  if (headerLength === 0) return decodeRaw(body, opts);
  try {
    return decodeJson(body, headerLength, opts);
  } catch (err) {
    // Text past V8's longest string (512 MiB, with --http-max-input-size raised) is no JS
    // string: parseHeader refuses such a body when JSON.parse's path reads it. The scan reads
    // numeric data of any length, but BYTES data, objects in data and the text searched for
    // sequence_id's spelling are strings: refused in the same words, where the Error (no
    // InferenceServerError) was answered 500.
    throw isStringTooLong(err) ? unparsable(opts.modelName, err) : err;
  }
}

/** decodeInferRequest for a body with JSON (all JSON when `headerLength` is null). */
function decodeJson(body: Buffer, headerLength: number | null, opts: InferDecodeOptions): DecodedInfer {
  const jsonLength = headerLength ?? body.length;
  const header = parseHeader(body, jsonLength, opts.modelName);
  if (header.id !== undefined && typeof header.id !== 'string') {
    throw invalidArg(`'id' of the inference request for model '${opts.modelName}' must be a string`);
  }
  const binary = body.subarray(jsonLength);
  const requestParameters = header.parameters as Record<string, unknown> | undefined;
  if (isObject(requestParameters) && typeof requestParameters.sequence_id === 'number') {
    requestParameters.sequence_id = exactSequenceId(body.toString('utf8', 0, jsonLength), requestParameters.sequence_id);
  }
  const parameters = splitRequestParameters(requestParameters);
  forwardHeaders(parameters.custom, opts);
  const call: InferenceCall = {
    modelName: opts.modelName,
    modelVersion: opts.modelVersion,
    id: header.id,
    inputs: decodeInputs(header.inputs, binary, opts),
    outputs: decodeOutputs(header.outputs, opts.modelName),
    parameters,
  };
  return { call, binaryByDefault: parameters.binaryDataOutput };
}

/** The forwarding pattern of --http-header-forward-pattern (ts/server/parameters.ts). */
export function compileForwardPattern(pattern: string | undefined): RegExp | null {
  return compileHeaderForwardPattern(pattern, 'http header forward pattern');
}
