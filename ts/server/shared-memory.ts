/**
 * Client shared-memory regions (Triton's system and CUDA shared-memory extensions), shared by
 * the HTTP and gRPC frontends: one namespace of region names across both kinds. Off unless the
 * server allows client shared memory (`allowClientShm`, tritonserver's --allow-client-shm).
 *
 * Ownership: a system region is a native object holding the shm object's file descriptor (no
 * mapping: see cpp/memory/system_shared_memory.h). Inputs are copied out of it when a request
 * is decoded and outputs copied in when it is answered, each after an fstat of the object, so a
 * client that shrinks (truncates) its object gets INVALID_ARG rather than crashing the server,
 * and unregistering a region cannot pull memory from under a request that is running: the
 * request owns its copy. Every offset + size is checked against the region before use.
 */
import { describeValue } from '../describe-value';
import { markedInteger } from './big-integers';
import { InferenceServerError, invalidArg } from '../errors';
import { DeviceTensor, type DeviceOutput } from '../device-tensor';
import { native, type CudaSharedMemory, type SystemSharedMemoryRegion } from '../native';
import type { DataType, NDArray } from '../tensor';
import { checkByteSize, tensorFromBytes } from './tensor-codec';

const RESERVED_PREFIX = 'triton_python_backend_shm_region_';

export interface SystemRegionStatus {
  name: string;
  key: string;
  offset: number;
  byteSize: number;
}

export interface CudaRegionStatus {
  name: string;
  deviceId: number;
  byteSize: number;
}

interface SystemRegion extends SystemRegionStatus {
  kind: 'system';
  memory: SystemSharedMemoryRegion;
}

interface CudaRegion extends CudaRegionStatus {
  kind: 'cuda';
  memory: CudaSharedMemory;
}

/**
 * A registered region, and the requests still using it (reading inputs from it or writing
 * outputs into it): an unregister while some do only marks it (Triton's awaiting_unregister;
 * status still lists it, its name stays taken) and the last of them closes it.
 */
type Region = (SystemRegion | CudaRegion) & { holds: number; awaitingUnregister: boolean };

/** The regions a request uses, held from the start of its inference until it settles. */
export interface RegionHold {
  release(): void;
}

/** Where a tensor lives in a region (`shared_memory_region`, `_offset`, `_byte_size`). */
export interface ShmRef {
  region: string;
  /** Beyond 2^53 (past the end of any region), the nearest double: `exact` has the value. */
  offset: number;
  byteSize: number;
  /** Both values exactly, when either is beyond 2^53 (Triton reads them as 64-bit size_t). */
  exact?: { offset: bigint; byteSize: bigint };
}

/** SIZE_MAX on Triton's 64-bit platforms: the largest offset or byte size a request may give. */
const U64_MAX = 0xFFFF_FFFF_FFFF_FFFFn;

/**
 * A tensor's `shared_memory_offset` or `_byte_size`: a number when it is a safe integer, else
 * (up to 2^64 - 1, as Triton's size_t takes it) the exact bigint: a gRPC int64_param beyond
 * 2^53, or an HTTP literal the decoder kept marked (JSON.parse would round it).
 */
function tensorUint(value: unknown, what: string): number | bigint {
  const literal = markedInteger(value);
  const text = literal ?? (typeof value === 'string' ? value : null);
  if (text !== null && /^[0-9]+$/.test(text)) {
    const n = Number(text);
    if (Number.isSafeInteger(n)) return n;
    const big = BigInt(text);
    if (big <= U64_MAX) return big;
  } else if (typeof value === 'bigint' && value >= 0n && value <= U64_MAX) {
    return value;
  } else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
    return value;
  }
  throw invalidArg(`${what} must be a non-negative integer below 2^64, got ${literal ?? describeValue(value)}`);
}

function exactUint(value: unknown, what: string): number {
  const n = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw invalidArg(`${what} must be a non-negative integer, got ${describeValue(value)}`);
  }
  return n;
}

/** Triton's key rules (server src/common.cc, ValidateSharedMemoryKey), with its texts. */
function checkShmKey(name: string, key: string): void {
  const rest = key.replace(/^\/+/, '');
  if (rest.length === 0) throw invalidArg(`cannot register shared memory region '${name}' - invalid shm key '${key}'`);
  if (rest.startsWith(RESERVED_PREFIX)) {
    throw invalidArg(`cannot register shared memory region '${name}' with key '${key}' as the key contains the reserved prefix '${RESERVED_PREFIX}'`);
  }
}

export class SharedMemoryManager {
  readonly #regions = new Map<string, Region>();

  constructor(readonly allowed: boolean) {}

  /**
   * Registering and unregistering need --allow-client-shm; status does not (as Triton, which
   * checks this before reading anything else of the request).
   */
  checkAllowed(): void {
    if (!this.allowed) {
      throw new InferenceServerError('UNSUPPORTED',
        "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.");
    }
  }

  #checkNewName(name: unknown): string {
    if (typeof name !== 'string' || name.length === 0) throw invalidArg('a shared memory region needs a non-empty name');
    if (this.#regions.has(name)) {
      throw new InferenceServerError('ALREADY_EXISTS', `shared memory region '${name}' already in manager`);
    }
    return name;
  }

  /** Registers a POSIX region: `byteSize` bytes at `offset` of the shm_open object `key`. */
  registerSystem(name: unknown, key: unknown, offset: unknown, byteSize: unknown): void {
    this.checkAllowed();
    const regionName = this.#checkNewName(name);
    if (typeof key !== 'string') throw invalidArg(`shared memory region '${regionName}' needs a string key`);
    checkShmKey(regionName, key);
    const off = exactUint(offset ?? 0, `offset of shared memory region '${regionName}'`);
    const size = exactUint(byteSize, `byte_size of shared memory region '${regionName}'`);
    const memory = native().openSystemSharedMemory(regionName, key, off, size);
    this.#regions.set(regionName, {
      kind: 'system', name: regionName, key, offset: off, byteSize: size, memory, holds: 0, awaitingUnregister: false,
    });
  }

  /** Registers a CUDA region from its 64-byte cudaIpcMemHandle_t. */
  registerCuda(name: unknown, rawHandle: Uint8Array, deviceId: unknown, byteSize: unknown): void {
    this.checkAllowed();
    // Triton opens the handle whatever the name, and answers a bad one with this text.
    if (name === '') throw invalidArg('failed to register shared memory region: invalid args (the region needs a non-empty name)');
    const regionName = this.#checkNewName(name);
    const device = exactUint(deviceId ?? 0, `device_id of CUDA shared memory region '${regionName}'`);
    const size = exactUint(byteSize, `byte_size of CUDA shared memory region '${regionName}'`);
    const memory = native().openCudaSharedMemory(rawHandle, device, size);
    this.#regions.set(regionName, {
      kind: 'cuda', name: regionName, deviceId: device, byteSize: size, memory, holds: 0, awaitingUnregister: false,
    });
  }

  /** Unregisters one region of `kind`, or all of them when `name` is empty. */
  unregister(kind: Region['kind'], name?: string): void {
    this.checkAllowed();
    for (const region of [...this.#regions.values()]) {
      if (region.kind !== kind || (name && region.name !== name)) continue;
      // A request still using the region (an input read from it, an output to write into it)
      // keeps it until the request settles, as Triton's (shared_memory_manager.cc
      // UnregisterHelper, awaiting_unregister_).
      if (region.holds > 0) region.awaitingUnregister = true;
      else this.#close(region);
    }
  }

  /** Holds the regions named (the unknown ones are left to fail when used) until released. */
  hold(names: readonly string[]): RegionHold {
    const held = names.map((n) => this.#regions.get(n)).filter((r): r is Region => r !== undefined);
    for (const region of held) region.holds++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        for (const region of held) {
          region.holds--;
          if (region.holds === 0 && region.awaitingUnregister && this.#regions.get(region.name) === region) this.#close(region);
        }
      },
    };
  }

  #close(region: Region): void {
    this.#regions.delete(region.name);
    region.memory.close();
  }

  /**
   * Closes every region of both kinds: the server is stopping (Triton.stop()). Not an API
   * call, so it works whether or not client shared memory is allowed.
   */
  releaseAll(): void {
    for (const region of this.#regions.values()) region.memory.close();
    this.#regions.clear();
  }

  /** Status of one system region (NOT_FOUND when unknown) or of all. */
  systemStatus(name?: string): SystemRegionStatus[] {
    return this.#status('system', name).map((r) => {
      const { name: n, key, offset, byteSize } = r as SystemRegion;
      return { name: n, key, offset, byteSize };
    });
  }

  /** Status of one CUDA region (NOT_FOUND when unknown) or of all. */
  cudaStatus(name?: string): CudaRegionStatus[] {
    return this.#status('cuda', name).map((r) => {
      const { name: n, deviceId, byteSize } = r as CudaRegion;
      return { name: n, deviceId, byteSize };
    });
  }

  #status(kind: Region['kind'], name?: string): Region[] {
    const found = [...this.#regions.values()].filter((r) => r.kind === kind && (!name || r.name === name));
    if (name && found.length === 0) {
      throw new InferenceServerError('NOT_FOUND',
        `Unable to find ${kind === 'cuda' ? 'cuda' : 'system'} shared memory region: '${name}'`);
    }
    return found;
  }

  #lookup(ref: ShmRef, what: string): Region {
    const region = this.#regions.get(ref.region);
    if (!region) {
      // Triton's words first (NOT_FOUND), then which tensor asked.
      throw new InferenceServerError('NOT_FOUND', `Unable to find shared memory region: '${ref.region}' (${what})` +
        (this.allowed ? '' : "; client shared memory is disabled: start the server with '--allow-client-shm=true'"));
    }
    // Triton's checks in its order (server src/shared_memory_manager.cc GetMemoryInfo) and its
    // words first (its clients and QA match them), then the numbers.
    const offset = ref.exact?.offset ?? ref.offset;
    const byteSize = ref.exact?.byteSize ?? ref.byteSize;
    if (ref.offset >= region.byteSize) {
      throw invalidArg(`${what}: Invalid offset for shared memory region: '${ref.region}': ` +
        `offset ${offset} is not within the ${region.byteSize} bytes of region '${ref.region}'`);
    }
    if (ref.exact && ref.exact.byteSize > U64_MAX - ref.exact.offset) {
      throw invalidArg(`${what}: Integer overflow detected: byte_size (${byteSize}) + offset (${offset}) ` +
        `exceeds maximum value (${U64_MAX}) for region '${ref.region}'`);
    }
    if (ref.byteSize > region.byteSize - ref.offset) {
      throw invalidArg(`${what}: Invalid offset + byte size for shared memory region: '${ref.region}': ` +
        `offset ${offset} + byte size ${byteSize} exceeds the ${region.byteSize} bytes of region '${ref.region}'`);
    }
    return region;
  }

  /** A copy of the bytes of an input in shared memory. */
  read(ref: ShmRef, what: string): Buffer {
    const region = this.#lookup(ref, what);
    try {
      return region.memory.read(ref.offset, ref.byteSize);
    } catch (err) {
      throw naming(err, what);
    }
  }

  /**
   * An input in a CUDA region, left there (DeviceTensor): its bounds and byte size are checked
   * now, with the texts of a host read. Null for a system region and for BYTES, which are read.
   */
  deviceTensor(ref: ShmRef, what: string, dtype: DataType, shape: number[]): DeviceTensor | null {
    const region = this.#lookup(ref, what);
    if (region.kind !== 'cuda' || dtype === 'BYTES') return null;
    checkByteSize(what, dtype, shape, ref.byteSize);
    return new DeviceTensor(dtype, shape, region.memory, ref.offset, ref.byteSize, what);
  }

  /**
   * Where an output wanted in a CUDA region goes, for an engine that writes it there itself;
   * null for a system region, an unknown one or a range past its end (answering the output
   * then copies it in, or refuses it with Triton's text, as for any other model).
   */
  cudaTarget(ref: ShmRef): Omit<DeviceOutput, 'name'> | null {
    const region = this.#regions.get(ref.region);
    if (region?.kind !== 'cuda' || ref.offset >= region.byteSize || ref.byteSize > region.byteSize - ref.offset) return null;
    return { memory: region.memory, offset: ref.offset, byteSize: ref.byteSize };
  }

  /** A DeviceTensor's bytes read to the host, for a model that cannot read them in place. */
  readDevice(tensor: DeviceTensor): NDArray {
    let bytes: Buffer;
    try {
      bytes = tensor.memory.read(tensor.offset, tensor.byteSize);
    } catch (err) {
      throw naming(err, tensor.what);
    }
    return tensorFromBytes(tensor.what, tensor.dtype, tensor.shape, bytes);
  }

  /** Writes an output into shared memory; INVALID_ARG when it does not fit the given size. */
  write(ref: ShmRef, data: Uint8Array, what: string): void {
    const region = this.#lookup(ref, what);
    if (data.byteLength > ref.byteSize) {
      throw invalidArg(`shared memory size specified with the request for ${what} (${ref.byteSize} bytes) ` +
        `should be at least ${data.byteLength} bytes to hold the results`);
    }
    try {
      region.memory.write(ref.offset, data);
    } catch (err) {
      throw naming(err, what);
    }
  }
}

/** A native region error with the tensor it was for in front ("input 'X' of model 'm': ..."). */
function naming(err: unknown, what: string): unknown {
  return err instanceof InferenceServerError ? new InferenceServerError(err.code, `${what}: ${err.message}`) : err;
}

/** Reads `shared_memory_region/_offset/_byte_size` from tensor parameters; null when absent. */
export function shmRefFromParameters(params: Record<string, unknown> | undefined, what: string): ShmRef | null {
  const region = params?.shared_memory_region;
  if (region === undefined) {
    if (params?.shared_memory_byte_size !== undefined || params?.shared_memory_offset !== undefined) {
      throw invalidArg(`${what}: shared_memory_byte_size/offset given without shared_memory_region`);
    }
    return null;
  }
  if (typeof region !== 'string' || region.length === 0) throw invalidArg(`${what}: shared_memory_region must be a region name`);
  if (params?.shared_memory_byte_size === undefined) {
    throw invalidArg(`${what}: shared_memory_byte_size is required with shared_memory_region`);
  }
  const offset = tensorUint(params.shared_memory_offset ?? 0, `${what}: shared_memory_offset`);
  const byteSize = tensorUint(params.shared_memory_byte_size, `${what}: shared_memory_byte_size`);
  const ref: ShmRef = { region, offset: Number(offset), byteSize: Number(byteSize) };
  if (typeof offset === 'bigint' || typeof byteSize === 'bigint') ref.exact = { offset: BigInt(offset), byteSize: BigInt(byteSize) };
  return ref;
}
