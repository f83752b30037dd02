/**
 * An inference input left where a client put it: in a CUDA shared-memory region (Triton's CUDA
 * shared-memory extension), decoded without reading its bytes. The server hands it as it is to
 * a model whose engine is native (ONNX): a GPU instance on the region's device reads it there —
 * in place when it is the whole input, else gathered on the device with the batch's other rows —
 * and a CPU instance copies it to the host on its own thread, off the event loop. Every other
 * consumer (JS models, ensembles, the response cache, tracing) gets the bytes read to the host
 * first (InferenceService), as Triton's backends that need CPU memory do.
 */
import type { CudaSharedMemory } from './native';
import type { DataType, NDArray } from './tensor';

/** An input in a CUDA shared-memory region, not read (see the file's comment); made by the server only. */
export class DeviceTensor {
  /**
   * `memory`: the registered region, `offset` and `byteSize`: the input's bytes in it (checked
   * against the region and the shape before this is made); `what`: how messages name it.
   */
  constructor(
    readonly dtype: Exclude<DataType, 'BYTES'>,
    readonly shape: number[],
    readonly memory: CudaSharedMemory,
    readonly offset: number,
    readonly byteSize: number,
    readonly what: string,
  ) {}
}

/**
 * An output the client wants in a CUDA shared-memory region, for a model that acceptsDeviceInputs:
 * a GPU instance on the region's device writes its rows there device to device when they fit.
 */
export interface DeviceOutput {
  name: string;
  memory: CudaSharedMemory;
  offset: number;
  byteSize: number;
}

/**
 * The outputs a native engine has already written into their request's DeviceOutput (NativeOutput
 * `onDevice`): the server answers them without copying them in again.
 */
export const writtenOnDevice = new WeakSet<NDArray>();
