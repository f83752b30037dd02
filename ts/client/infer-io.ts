/**
 * tritonclient's request and result helpers, camelCased: `InferInput` (an input's name, shape,
 * datatype and data, or a shared-memory region), `InferRequestedOutput` (an output to return:
 * binary or JSON, classification, shared memory) and `InferResult` (`asNDArray` ↔ as_numpy,
 * `getOutput`, `getResponse`). One set serves both clients: the HTTP-only knobs (binary data)
 * are ignored over gRPC, as tritonclient.grpc has no such choice.
 *
 * ```ts
 * const input = new InferInput('IN', [1, 3], 'FP32').setData(new Float32Array([1, 2, 3]));
 * const result = await client.infer('model', [input], { outputs: [new InferRequestedOutput('OUT')] });
 * result.asNDArray('OUT');
 * ```
 *
 * Plain objects owned by the caller; nothing here touches a socket.
 */
import { NDArray, checkTensorData, parseDataType, type DataType, type TypedArray } from '../tensor';
import { tensorFromJson } from '../server/tensor-codec';
import { InferenceServerError } from '../errors';
import { ClientValueError } from './errors';
import type { ClientInferResult, ClientStreamResult } from './types';

/** Where a tensor's data lies in a registered shared-memory region. */
export interface SharedMemoryRef {
  regionName: string;
  byteSize: number;
  offset: number;
}

/** What `InferInput.setData` accepts: an NDArray, a TypedArray, or (nested) JS values. */
export type InferInputData = NDArray | TypedArray | readonly unknown[];

function sharedMemoryRef(regionName: string, byteSize: number, offset: number, what: string): SharedMemoryRef {
  if (typeof regionName !== 'string' || regionName === '') throw new ClientValueError(`${what}: the shared-memory region name must be a non-empty string`);
  for (const [key, value] of [['byteSize', byteSize], ['offset', offset]] as const) {
    if (!Number.isSafeInteger(value) || value < 0) throw new ClientValueError(`${what}: ${key} must be a non-negative integer, got ${String(value)}`);
  }
  return { regionName, byteSize, offset };
}

const sameShape = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === b[i]);

/** One input of a request (tritonclient's InferInput). */
export class InferInput {
  readonly #name: string;
  readonly #datatype: DataType;
  #shape: number[];
  #data: NDArray | null = null;
  #binaryData = true;
  #sharedMemory: SharedMemoryRef | null = null;

  /** `datatype`: Triton's name ('FP32', 'BYTES', ...). */
  constructor(name: string, shape: readonly number[], datatype: DataType | string) {
    if (typeof name !== 'string' || name === '') throw new ClientValueError('InferInput: the name must be a non-empty string');
    this.#name = name;
    this.#datatype = parseDataType(datatype);
    this.#shape = [...shape];
  }

  name(): string {
    return this.#name;
  }

  datatype(): DataType {
    return this.#datatype;
  }

  shape(): number[] {
    return [...this.#shape];
  }

  /** Changes the shape (data set before must be set again for the new shape). */
  setShape(shape: readonly number[]): this {
    this.#shape = [...shape];
    return this;
  }

  /**
   * The input's data (tritonclient's set_data_from_numpy): an NDArray whose datatype and shape
   * must be the input's. `binaryData` (HTTP only): send it after the JSON header (default) or
   * as JSON `data`.
   */
  setDataFromNDArray(tensor: NDArray, binaryData = true): this {
    const what = `InferInput '${this.#name}'`;
    if (!(tensor instanceof NDArray)) throw new ClientValueError(`${what}: setDataFromNDArray takes an NDArray; use setData for a TypedArray or an array`);
    if (tensor.dtype !== this.#datatype) {
      throw new ClientValueError(`${what}: got unexpected datatype ${tensor.dtype} from the NDArray, expected ${this.#datatype}`);
    }
    if (!sameShape(tensor.shape, this.#shape)) {
      throw new ClientValueError(`${what}: got unexpected NDArray shape [${tensor.shape.join(', ')}], expected [${this.#shape.join(', ')}]`);
    }
    if (!binaryData && (this.#datatype === 'FP16' || this.#datatype === 'BF16')) {
      throw new ClientValueError(`${what}: ${this.#datatype} inputs must be sent as binary data over HTTP: set binaryData to true`);
    }
    this.#data = tensor;
    this.#binaryData = binaryData;
    this.#sharedMemory = null;
    return this;
  }

  /** tritonclient's name for setDataFromNDArray. */
  setDataFromNumpy(tensor: NDArray, binaryData = true): this {
    return this.setDataFromNDArray(tensor, binaryData);
  }

  /**
   * The input's data from a TypedArray or JS values (nested or flat; strings or byte arrays for
   * BYTES, booleans for BOOL, numbers or bigints for INT64), laid out in the input's shape and
   * datatype; an NDArray goes to setDataFromNDArray.
   */
  setData(data: InferInputData, binaryData = true): this {
    if (data instanceof NDArray) return this.setDataFromNDArray(data, binaryData);
    return this.setDataFromNDArray(this.#tensorOf(data), binaryData);
  }

  #tensorOf(data: TypedArray | readonly unknown[]): NDArray {
    const what = `InferInput '${this.#name}'`;
    try {
      if (ArrayBuffer.isView(data)) {
        checkTensorData(this.#datatype, this.#shape, data, what);
        return new NDArray(this.#datatype, this.#shape, data);
      }
      if (!Array.isArray(data)) throw new ClientValueError(`${what}: setData takes an NDArray, a TypedArray or an array, got ${typeof data}`);
      const flat = (data as unknown[]).flat(Infinity);
      if ((this.#datatype === 'INT64' || this.#datatype === 'UINT64') && flat.some((v) => typeof v === 'bigint')) {
        return this.#int64Tensor(flat, what);
      }
      if (this.#datatype === 'BYTES' && flat.some((v) => v instanceof Uint8Array)) {
        const items = flat.map((v) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v));
        checkTensorData('BYTES', this.#shape, items, what);
        return new NDArray('BYTES', this.#shape, items as Uint8Array[]);
      }
      return tensorFromJson(what, this.#datatype, this.#shape, flat);
    } catch (err) {
      if (err instanceof ClientValueError || !(err instanceof InferenceServerError)) throw err;
      throw new ClientValueError(err.message);
    }
  }

  /** INT64/UINT64 values given (partly) as bigints, which the JSON reader does not take. */
  #int64Tensor(values: unknown[], what: string): NDArray {
    const out = this.#datatype === 'INT64' ? new BigInt64Array(values.length) : new BigUint64Array(values.length);
    values.forEach((v, i) => {
      if (typeof v !== 'bigint' && !Number.isSafeInteger(v)) {
        throw new ClientValueError(`${what}: element ${i} is ${String(v)}, expected an integer (number or bigint) for ${this.#datatype}`);
      }
      out[i] = BigInt(v as number | bigint);
    });
    checkTensorData(this.#datatype, this.#shape, out, what);
    return new NDArray(this.#datatype, this.#shape, out);
  }

  /** Reads the input from a registered shared-memory region instead of sending data. */
  setSharedMemory(regionName: string, byteSize: number, offset = 0): this {
    this.#sharedMemory = sharedMemoryRef(regionName, byteSize, offset, `InferInput '${this.#name}'`);
    this.#data = null;
    return this;
  }

  /** The data set (null when none, or when the input reads shared memory). */
  data(): NDArray | null {
    return this.#data;
  }

  /** HTTP: whether the data travels as binary (true) or as JSON. */
  binaryData(): boolean {
    return this.#binaryData;
  }

  sharedMemory(): SharedMemoryRef | null {
    return this.#sharedMemory ? { ...this.#sharedMemory } : null;
  }
}

export interface InferRequestedOutputOptions {
  /** HTTP: return the output as binary data (default true) or as JSON. */
  binaryData?: boolean;
  /** Return the top `classCount` classes instead of the tensor (Triton's classification extension). */
  classCount?: number;
}

/** One output to return (tritonclient's InferRequestedOutput). */
export class InferRequestedOutput {
  readonly #name: string;
  readonly #binaryData: boolean;
  readonly #classCount: number;
  #sharedMemory: SharedMemoryRef | null = null;

  /**
   * `new InferRequestedOutput(name, binaryData = true, classCount = 0)` as tritonclient.http,
   * or `new InferRequestedOutput(name, { binaryData, classCount })`.
   */
  constructor(name: string, binaryData: boolean | InferRequestedOutputOptions = true, classCount = 0) {
    if (typeof name !== 'string' || name === '') throw new ClientValueError('InferRequestedOutput: the name must be a non-empty string');
    const options = typeof binaryData === 'object' ? binaryData : { binaryData, classCount };
    const count = options.classCount ?? 0;
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new ClientValueError(`InferRequestedOutput '${name}': classCount must be a non-negative integer, got ${String(count)}`);
    }
    this.#name = name;
    this.#binaryData = options.binaryData ?? true;
    this.#classCount = count;
  }

  name(): string {
    return this.#name;
  }

  binaryData(): boolean {
    return this.#binaryData;
  }

  /** 0: the tensor itself. */
  classCount(): number {
    return this.#classCount;
  }

  /** Writes the output into a registered shared-memory region (the result then holds no data for it). */
  setSharedMemory(regionName: string, byteSize: number, offset = 0): this {
    this.#sharedMemory = sharedMemoryRef(regionName, byteSize, offset, `InferRequestedOutput '${this.#name}'`);
    return this;
  }

  unsetSharedMemory(): this {
    this.#sharedMemory = null;
    return this;
  }

  sharedMemory(): SharedMemoryRef | null {
    return this.#sharedMemory ? { ...this.#sharedMemory } : null;
  }
}

/**
 * A response as the server described it: Triton's JSON form over HTTP (the header before the
 * binary data), the same fields decoded from the ModelInferResponse over gRPC.
 */
export interface InferResponseJson {
  model_name: string;
  model_version: string;
  id?: string;
  parameters?: Record<string, unknown>;
  outputs: { name: string; datatype: string; shape: number[]; parameters?: Record<string, unknown> }[];
}

/** The result of an inference (tritonclient's InferResult); also the ClientInferResult of `infer(request)`. */
export class InferResult implements ClientInferResult {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id?: string;
  /** Outputs by name; outputs written to shared memory have no entry. */
  readonly outputs: Record<string, NDArray>;
  readonly #response: InferResponseJson;

  constructor(result: ClientInferResult, response: InferResponseJson) {
    this.modelName = result.modelName;
    this.modelVersion = result.modelVersion;
    if (result.id !== undefined) this.id = result.id;
    this.outputs = result.outputs;
    this.#response = response;
  }

  /** The output's tensor (tritonclient's as_numpy); null when the response has no data for it. */
  asNDArray(name: string): NDArray | null {
    return Object.prototype.hasOwnProperty.call(this.outputs, name) ? this.outputs[name] : null;
  }

  /** tritonclient's name for asNDArray. */
  asNumpy(name: string): NDArray | null {
    return this.asNDArray(name);
  }

  /** The output's description in the response (name, datatype, shape, parameters); null when absent. */
  getOutput(name: string): InferResponseJson['outputs'][number] | null {
    return this.#response.outputs.find((o) => o.name === name) ?? null;
  }

  /** The whole response's description (Triton's JSON form, without tensor data). */
  getResponse(): InferResponseJson {
    return this.#response;
  }
}

/** One response of a stream: an InferResult that also says whether it completes its request. */
export class StreamInferResult extends InferResult implements ClientStreamResult {
  readonly final: boolean;
  readonly parameters: Record<string, boolean | number | bigint | string>;

  constructor(result: ClientInferResult, response: InferResponseJson, final: boolean, parameters: Record<string, boolean | number | bigint | string>) {
    super(result, response);
    this.final = final;
    this.parameters = parameters;
  }
}
