/**
 * One inference as both frontends run it, after decoding their wire format: resolve the model
 * and version, hand the inputs to the model's native queue, then shape the outputs the client
 * asked for (classification, shared memory). The frontends only translate to and from bytes.
 */
import { InferenceServerError, clip, invalidArg } from '../errors';
import type { ResponseStream } from '../decoupled';
import type { BoundModel, CancelSignal, InferOptions, ModelInputs } from '../model';
import { DeviceTensor, writtenOnDevice, type DeviceOutput } from '../device-tensor';
import type { NDArray, DataType } from '../tensor';
import type { ServedTriton } from './served-triton';
import { classify } from './classification';
import type { RequestParameters } from './parameters';
import { tensorFromBytes, tensorToBytes, wireByteSize } from './tensor-codec';
import type { RegionHold, SharedMemoryManager, ShmRef } from './shared-memory';
import type { Trace } from './trace';

/** An output the client listed, with what it asked for it. */
export interface OutputRequest {
  name: string;
  /** Top-N classes instead of the raw tensor. */
  classification?: number;
  /** Write the output into this shared-memory region instead of the response. */
  shm?: ShmRef | null;
  /** HTTP: return it as binary data. */
  binaryData?: boolean;
}

/** A decoded request. */
export interface InferenceCall {
  modelName: string;
  /** '' or undefined: the latest version. */
  modelVersion?: string;
  id?: string;
  /**
   * A DeviceTensor for an input in CUDA shared memory (read to the host where the model needs
   * it). `region`: the shared-memory region the input was read from, held (still registered,
   * and listed by status) until the request settles, as the regions of its outputs are.
   */
  inputs: { name: string; tensor: NDArray | DeviceTensor; region?: string }[];
  /** null: every output of the model. */
  outputs: OutputRequest[] | null;
  parameters: RequestParameters;
  /** Aborted when the client goes away: a queued request is removed, a running one's result dropped. */
  signal?: CancelSignal;
  /** The request's trace when sampling picked it (level TENSORS records its tensors). */
  trace?: Trace | null;
}

export interface AnsweredOutput {
  name: string;
  datatype: DataType;
  shape: number[];
  /** null when the output was written to shared memory. */
  data: NDArray | null;
  /** Where it was written (`byteSize` = bytes written). */
  shm?: ShmRef;
  /** What the client asked for this output, when it listed it. */
  request?: OutputRequest;
}

export interface InferenceAnswer {
  modelName: string;
  modelVersion: string;
  id?: string;
  outputs: AnsweredOutput[];
}

/** Resolves `name` and a protocol version string ('' = latest; digits otherwise). */
export function resolveModel(triton: ServedTriton, name: string, version?: string): BoundModel {
  if (version === undefined || version === '') return triton.model(name);
  if (!/^[0-9]+$/.test(version)) throw invalidArg(`invalid version '${clip(version)}' for model '${clip(name)}': expected digits`);
  return triton.model(name, Number(version));
}

export class InferenceService {
  constructor(private readonly triton: ServedTriton, private readonly sharedMemory: SharedMemoryManager) {}

  /**
   * The tensor an input names in shared memory: a copy of a system region's bytes; for a CUDA
   * region, a DeviceTensor (nothing read yet: #inputsOf decides once the model is known).
   */
  inputFromSharedMemory(what: string, datatype: DataType, shape: number[], ref: ShmRef): NDArray | DeviceTensor {
    return this.sharedMemory.deviceTensor(ref, what, datatype, shape) ??
      tensorFromBytes(what, datatype, shape, this.sharedMemory.read(ref, what));
  }

  /**
   * One request, one answer. `decoupledRefusal`: the text a frontend that cannot stream answers
   * for a decoupled model (Triton's, per endpoint), with UNSUPPORTED.
   */
  infer(call: InferenceCall, decoupledRefusal?: string): Promise<InferenceAnswer> {
    // One promise per request, no async function: this is every HTTP and gRPC inference's path.
    let model: BoundModel;
    let requested: OutputRequest[] | null;
    let hold: RegionHold | null;
    let results: Promise<Record<string, NDArray>>;
    try {
      model = resolveModel(this.triton, call.modelName, call.modelVersion);
      if (decoupledRefusal && model.config.decoupled) throw new InferenceServerError('UNSUPPORTED', decoupledRefusal);
      requested = call.outputs ? checkRequestedOutputs(call.outputs, model.name) : null;
      hold = this.#holdRegions(call, requested);
      try {
        results = this.#start(call, model, requested);
      } catch (err) {
        hold?.release();
        throw err;
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return results.then((outputs) => {
      try {
        return this.#answer(call, model, requested, outputs);
      } finally {
        hold?.release();
      }
    }, (err: unknown) => {
      hold?.release();
      throw err;
    });
  }

  /** Queues the request on its model; the outputs as the model returns them. */
  #start(call: InferenceCall, model: BoundModel, requested: OutputRequest[] | null): Promise<Record<string, NDArray>> {
    const inputs = this.#inputsOf(call, model);
    if (call.trace) {
      // The model receives the tensors as queued: both of Triton's input activities show them
      // (read to the host: a traced request has no DeviceTensor, see #inputsOf).
      const tensors = Object.keys(inputs).map((name) => ({ name, tensor: inputs[name] as NDArray }));
      call.trace.tensors('TENSOR_QUEUE_INPUT', tensors);
      call.trace.tensors('TENSOR_BACKEND_INPUT', tensors);
    }
    const queued = model.infer(inputs, this.#optionsOf(call, requested, model));
    if (!call.trace) return queued;
    return queued.then((results) => {
      call.trace?.tensors('TENSOR_BACKEND_OUTPUT', Object.entries(results).map(([name, tensor]) => ({ name, tensor })));
      return results;
    });
  }

  /**
   * The regions the request reads its inputs from and writes its outputs into stay registered
   * (an unregister only marks them) until it is answered, as Triton's frontends hold every
   * region a request uses; null when it names none.
   */
  #holdRegions(call: InferenceCall, requested: OutputRequest[] | null): RegionHold | null {
    let names: string[] | null = null;
    for (const input of call.inputs) if (input.region !== undefined) (names ??= []).push(input.region);
    if (requested) for (const output of requested) if (output.shm) (names ??= []).push(output.shm.region);
    return names ? this.sharedMemory.hold(names) : null;
  }

  /** True when `name` (and version) is a decoupled model; false for anything else, unknown names included. */
  isDecoupled(name: string, version?: string): boolean {
    try {
      return resolveModel(this.triton, name, version).config.decoupled;
    } catch {
      return false;
    }
  }

  /**
   * One request of a decoupled model: each response as an answer, as the model produces it.
   * The iteration ends after the final response (whose outputs, if any, were the last answer)
   * or throws the request's error; leaving it early cancels the request.
   */
  async *inferStream(call: InferenceCall): AsyncGenerator<InferenceAnswer> {
    const model = resolveModel(this.triton, call.modelName, call.modelVersion);
    const requested = call.outputs ? checkRequestedOutputs(call.outputs, model.name) : null;
    const hold = this.#holdRegions(call, requested);
    let responses: ReturnType<InferenceService['openStream']>;
    try {
      responses = this.#open(call, model, requested);
    } catch (err) {
      hold?.release();
      throw err;
    }
    try {
      for await (const results of responses) yield this.#answer(call, model, requested, results);
    } finally {
      hold?.release();
      await responses.return();
    }
  }

  /**
   * Queues one request of a decoupled model at once and returns its stream of responses (each
   * one's outputs, as the model produced them): for frontends that shape responses themselves
   * and must tell a refusal (the stream fails before its first response) from a model's error.
   */
  openStream(call: InferenceCall): ResponseStream {
    const model = resolveModel(this.triton, call.modelName, call.modelVersion);
    return this.#open(call, model, call.outputs ? checkRequestedOutputs(call.outputs, model.name) : null);
  }

  #open(call: InferenceCall, model: BoundModel, requested: OutputRequest[] | null): ResponseStream {
    return model.inferStream(this.#inputsOf(call, model), {
      ...this.#optionsOf(call, requested, model), maxQueuedResponses: this.triton.config.maxQueuedResponses,
    });
  }

  /**
   * The request's inputs by name. One in CUDA shared memory stays there for a model that reads
   * it in place (an ONNX model without a response cache); for any other model, or a traced
   * request (whose tensors the trace records), its bytes are read to the host here.
   */
  #inputsOf(call: InferenceCall, model: BoundModel): ModelInputs {
    const inputs: ModelInputs = {};
    const inPlace = !call.trace && model.acceptsDeviceInputs;
    for (const { name, tensor } of call.inputs) {
      if (Object.prototype.hasOwnProperty.call(inputs, name)) {
        throw new InferenceServerError('INVALID_ARG', `input '${name}' already exists in request for model '${model.name}'`);
      }
      inputs[name] = tensor instanceof DeviceTensor && !inPlace ? this.sharedMemory.readDevice(tensor) : tensor;
    }
    return inputs;
  }

  /**
   * The outputs the client wants in a CUDA region, for a model whose GPU instances write them
   * there themselves (acceptsDeviceInputs; not traced, not classified). Undefined when none.
   */
  #deviceOutputsOf(call: InferenceCall, model: BoundModel, requested: OutputRequest[] | null): DeviceOutput[] | undefined {
    if (!requested || call.trace || !model.acceptsDeviceInputs) return undefined;
    let found: DeviceOutput[] | undefined;
    for (const output of requested) {
      if (!output.shm || output.classification !== undefined) continue;
      const target = this.sharedMemory.cudaTarget(output.shm);
      if (target) (found ??= []).push({ name: output.name, ...target });
    }
    return found;
  }

  #optionsOf(call: InferenceCall, requested: OutputRequest[] | null, model: BoundModel): InferOptions {
    return {
      priority: call.parameters.priority,
      timeoutMicroseconds: call.parameters.timeoutMicroseconds,
      parameters: call.parameters.custom,
      outputs: requested?.map((o) => o.name),
      signal: call.signal,
      sequenceId: call.parameters.sequenceId,
      sequenceStart: call.parameters.sequenceStart,
      sequenceEnd: call.parameters.sequenceEnd,
      inputsOwned: true,  // views of the received body or message, held until the request settles
      deviceOutputs: this.#deviceOutputsOf(call, model, requested),
    };
  }

  #answer(call: InferenceCall, model: BoundModel, requested: OutputRequest[] | null, results: Record<string, NDArray>): InferenceAnswer {
    const order = requested ?? allOutputsOf(model.config);
    const outputs: AnsweredOutput[] = [];
    for (const request of order) {
      const tensor = results[request.name];
      if (tensor) outputs.push(this.#shape(model, tensor, request, call.outputs !== null));
    }
    return { modelName: model.name, modelVersion: String(model.version), id: call.id, outputs };
  }

  #shape(model: BoundModel, tensor: NDArray, request: OutputRequest, listed: boolean): AnsweredOutput {
    let data = tensor;
    if (request.classification !== undefined) {
      const labels = model.config.outputs.find((t) => t.name === request.name)?.labels;
      data = classify(tensor, request.classification, model.config.maxBatchSize > 0, labels, outputLabel(model, request));
    }
    const answered: AnsweredOutput = {
      name: request.name, datatype: data.dtype, shape: data.shape, data, request: listed ? request : undefined,
    };
    if (request.shm && data === tensor && writtenOnDevice.has(tensor)) {
      // The GPU instance wrote it into the region itself (it fit the region's byte size).
      answered.data = null;
      answered.shm = { ...request.shm, byteSize: wireByteSize(tensor) };
    } else if (request.shm) {
      const bytes = tensorToBytes(data);
      this.sharedMemory.write(request.shm, bytes, outputLabel(model, request));
      answered.data = null;
      answered.shm = { ...request.shm, byteSize: bytes.byteLength };
    }
    return answered;
  }
}

/** How a message names an output: "output 'y' of model 'm'". */
function outputLabel(model: BoundModel, request: OutputRequest): string {
  return `output '${request.name}' of model '${model.name}'`;
}

/** Every declared output, in config order: what a request that lists none gets (made once per config). */
const allOutputs = new WeakMap<BoundModel['config'], readonly OutputRequest[]>();

function allOutputsOf(config: BoundModel['config']): readonly OutputRequest[] {
  let order = allOutputs.get(config);
  if (!order) allOutputs.set(config, order = config.outputs.map((t) => ({ name: t.name })));
  return order;
}

function checkRequestedOutputs(outputs: OutputRequest[], model: string): OutputRequest[] {
  // A request lists a few outputs: a scan costs less than a Set, which only long lists need.
  const seen = outputs.length > 8 ? new Set<string>() : null;
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i];
    if (typeof o.name !== 'string') throw invalidArg(`requested outputs of model '${model}' need a name`);
    if (seen ? seen.has(o.name) : outputs.findIndex((other) => other.name === o.name) < i) {
      throw invalidArg(`output '${o.name}' already exists in request (model '${model}')`);
    }
    seen?.add(o.name);
    if (o.shm && (o.classification !== undefined || o.binaryData)) {
      throw invalidArg(`output '${o.name}' of model '${model}' cannot combine shared_memory_region with binary_data or classification`);
    }
  }
  return outputs;
}
