/**
 * Triton's CUDA shared-memory extension end to end, on a real device: a client process (the
 * peer, test/gpu/fixtures/cuda_ipc_peer.cu, built here with nvcc) cudaMallocs a region and
 * exports its cudaIpcMemHandle_t; a real server (HTTP and gRPC on loopback, client shared
 * memory allowed) registers it, reads inputs from it and writes outputs into it for an ONNX
 * model (add_sub, native ONNX Runtime engine) and a bound JS model; the peer reads the results
 * back out of its own device memory. Also status, bounds, unregister, double registration, bad
 * handles and sizes, and stop() closing the regions.
 *
 * Skipped, with a line saying why, without a CUDA device or without nvcc to build the peer.
 */
import * as grpc from '@grpc/grpc-js';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { native } from '../../ts/native';
import { addSubModel } from '../../ts/tools/onnx';
import { Triton } from '../../ts/triton';
import { rawStub, unary, type Stub } from '../integration/grpc/helpers';
import { closeAgent, get, post } from '../integration/http/http-helpers';
import { TempRepo } from '../integration/repository/repo-helpers';
import type { Request } from '../../ts/request';

const PEER_SOURCE = path.join(__dirname, 'fixtures', 'cuda_ipc_peer.cu');
const REGION_BYTES = 4096;

function whySkipped(): string | null {
  const info = native().buildInfo();
  if (info.cudaDeviceCount === 0) return `no CUDA device (addon built ${info.cuda ? 'with' : 'without'} CUDA)`;
  if (spawnSync('nvcc', ['--version']).status !== 0) return 'nvcc is not on PATH (it builds the client peer, test/gpu/fixtures/cuda_ipc_peer.cu)';
  return null;
}
const skipped = whySkipped();
if (skipped) console.warn(`CUDA shared memory GPU suite skipped: ${skipped}`);
const describeGpu = skipped ? describe.skip : describe;

const fp32 = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);
const floats = (bytes: Buffer): number[] => [...new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))];

/** The client process owning the device region; one answer line per command, in order. */
class CudaPeer {
  private readonly answers: string[] = [];
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly exited: Promise<number | null>;
  handle = Buffer.alloc(0);

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const next = this.waiting.shift();
      if (next) next(line);
      else this.answers.push(line);
    });
    void this.exited.then((code) => {
      for (const w of this.waiting.splice(0)) w(`error peer exited with ${code}: ${stderr}`);
    });
  }

  static async start(binary: string, byteSize: number): Promise<CudaPeer> {
    const peer = new CudaPeer(spawn(binary, [String(byteSize), '0']));
    const first = await peer.nextLine();
    if (!first.startsWith('handle ')) throw new Error(`the CUDA IPC peer did not start: ${first}`);
    peer.handle = Buffer.from(first.slice('handle '.length), 'hex');
    return peer;
  }

  private nextLine(): Promise<string> {
    const ready = this.answers.shift();
    return ready !== undefined ? Promise.resolve(ready) : new Promise((resolve) => this.waiting.push(resolve));
  }

  private async command(line: string): Promise<string> {
    this.child.stdin.write(`${line}\n`);
    const answer = await this.nextLine();
    if (answer.startsWith('error')) throw new Error(`CUDA IPC peer: '${line.slice(0, 40)}': ${answer}`);
    return answer;
  }

  async write(offset: number, bytes: Buffer): Promise<void> {
    expect(await this.command(`write ${offset} ${bytes.toString('hex')}`)).toBe('ok');
  }

  async read(offset: number, byteSize: number): Promise<Buffer> {
    return Buffer.from(await this.command(`read ${offset} ${byteSize}`), 'hex');
  }

  async quit(): Promise<void> {
    this.child.stdin.end('quit\n');
    await this.exited;
  }
}

const identity = (requests: Request[]) => requests.map((r) => ({ OUT: r.data.IN }));

function startTriton(repository: string): Triton {
  const triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false,
      allowClientShm: true, logInfo: false, logWarning: false,
    },
  });
  triton.useRepository({ repositories: [repository] });
  triton.bind({
    modelName: 'identity', inferFunc: identity,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  return triton;
}

const ADD_SUB_CONFIG = `
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] }, { name: "INPUT1", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] }, { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 4 ] } ]
`;

/** HTTP shared-memory tensor parameters. */
const shm = (region: string, offset: number, byteSize: number) =>
  ({ shared_memory_region: region, shared_memory_offset: offset, shared_memory_byte_size: byteSize });
/** gRPC shared-memory tensor parameters. */
const grpcShm = (region: string, offset: number, byteSize: number) => ({
  shared_memory_region: { string_param: region }, shared_memory_offset: { int64_param: offset },
  shared_memory_byte_size: { int64_param: byteSize },
});

describeGpu('CUDA shared memory', () => {
  let workDir: string;
  let repo: TempRepo;
  let peerBinary: string;
  let peer: CudaPeer;
  let triton: Triton;
  let http: number;
  let stub: Stub;

  const register = (name: string, byteSize = REGION_BYTES, handle = peer.handle, deviceId = 0) =>
    post(http, `/v2/cudasharedmemory/region/${name}/register`, { raw_handle: { b64: handle.toString('base64') }, device_id: deviceId, byte_size: byteSize });

  beforeAll(async () => {
    workDir = mkdtempSync(path.join(os.tmpdir(), 'infernode-cuda-ipc-'));
    peerBinary = path.join(workDir, 'cuda_ipc_peer');
    const built = spawnSync('nvcc', ['-O2', '-o', peerBinary, PEER_SOURCE], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`nvcc could not build ${PEER_SOURCE}: ${built.stderr}`);
    repo = new TempRepo('cuda-shm');
    repo.onnx('add_sub', 1, addSubModel('FP32', [4]));
    repo.config('add_sub', ADD_SUB_CONFIG);
    triton = startTriton(repo.root);
    await triton.run();
    http = triton.ports.http!;
    stub = rawStub(triton.ports.grpc!);
    peer = await CudaPeer.start(peerBinary, REGION_BYTES);
  }, 240_000);

  afterAll(async () => {
    stub?.close();
    await triton?.stop();
    await peer?.quit();
    closeAgent();
    repo?.cleanup();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  afterEach(async () => {
    await post(http, '/v2/cudasharedmemory/unregister');
  });

  test('HTTP: an ONNX model reads its inputs from the region and writes its outputs into it', async () => {
    await peer.write(0, Buffer.concat([fp32([1, 2, 3, 4]), fp32([10, 20, 30, 40])]));
    expect((await register('cuda_io')).status).toBe(200);
    expect((await get(http, '/v2/cudasharedmemory/status')).json<unknown[]>())
      .toEqual([{ name: 'cuda_io', device_id: 0, byte_size: REGION_BYTES }]);
    expect((await get(http, '/v2/cudasharedmemory/region/cuda_io/status')).json<unknown[]>()).toHaveLength(1);
    const r = await post(http, '/v2/models/add_sub/infer', {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('cuda_io', 0, 16) },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('cuda_io', 16, 16) },
      ],
      outputs: [
        { name: 'OUTPUT0', parameters: shm('cuda_io', 64, 16) },
        { name: 'OUTPUT1', parameters: shm('cuda_io', 128, 16) },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json().outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('cuda_io', 64, 16) },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('cuda_io', 128, 16) },
    ]);
    expect(floats(await peer.read(64, 16))).toEqual([11, 22, 33, 44]);
    expect(floats(await peer.read(128, 16))).toEqual([-9, -18, -27, -36]);
  });

  test('gRPC: a bound JS model reads from and writes into the region; status; unregister releases', async () => {
    await peer.write(256, fp32([0.5, -1.5, 2.5, 1e6]));
    const registered = await unary(stub, 'CudaSharedMemoryRegister', { name: 'g', raw_handle: peer.handle, device_id: 0, byte_size: REGION_BYTES });
    expect(registered.error).toBeUndefined();
    expect((await unary(stub, 'CudaSharedMemoryStatus', { name: 'g' })).response?.regions)
      .toEqual({ g: { name: 'g', device_id: '0', byte_size: String(REGION_BYTES) } });
    const infer = () => unary(stub, 'ModelInfer', {
      model_name: 'identity',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: grpcShm('g', 256, 16) }],
      outputs: [{ name: 'OUT', parameters: grpcShm('g', 512, 16) }],
    });
    const r = await infer();
    expect(r.error).toBeUndefined();
    expect(r.response?.outputs).toEqual([expect.objectContaining({ name: 'OUT', datatype: 'FP32', shape: ['1', '4'] })]);
    expect(r.response?.raw_output_contents).toEqual([Buffer.alloc(0)]);
    expect(floats(await peer.read(512, 16))).toEqual([0.5, -1.5, 2.5, 1e6]);

    expect((await unary(stub, 'CudaSharedMemoryUnregister', { name: 'g' })).error).toBeUndefined();
    expect((await unary(stub, 'CudaSharedMemoryStatus', {})).response?.regions).toEqual({});
    const after = await infer();
    expect({ code: after.error?.code, details: after.error?.details }).toEqual({
      code: grpc.status.NOT_FOUND, details: expect.stringContaining("Unable to find shared memory region: 'g'"),
    });
    const status = await unary(stub, 'CudaSharedMemoryStatus', { name: 'g' });
    expect(status.error?.code).toBe(grpc.status.NOT_FOUND);
    expect(status.error?.details).toContain("Unable to find cuda shared memory region: 'g'");
  });

  test('offsets and sizes past the region are refused with Triton\'s text, over HTTP and gRPC', async () => {
    // Registered smaller than the allocation: the registered size is the bound, not the allocation.
    expect((await register('small', 64)).status).toBe(200);
    const overInput = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shm('small', 56, 16) }],
    });
    expect(overInput.status).toBe(400);
    expect(overInput.error).toContain("Invalid offset + byte size for shared memory region: 'small'");
    expect(overInput.error).toContain('exceeds the 64 bytes');
    const overOutput = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      outputs: [{ name: 'OUT', parameters: shm('small', 64, 16) }],
    });
    expect(overOutput.status).toBe(400);
    expect(overOutput.error).toContain("Invalid offset + byte size for shared memory region: 'small'");
    const tooSmall = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      outputs: [{ name: 'OUT', parameters: shm('small', 0, 8) }],
    });
    expect(tooSmall.status).toBe(400);
    expect(tooSmall.error).toContain('should be at least 16 bytes to hold the results');
    const overGrpc = await unary(stub, 'ModelInfer', {
      model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: grpcShm('small', 2 ** 40, 16) }],
    });
    expect(overGrpc.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(overGrpc.error?.details).toContain("Invalid offset + byte size for shared memory region: 'small'");
  });

  test('registering a name twice is refused; the first registration stays usable', async () => {
    expect((await register('twice')).status).toBe(200);
    const again = await register('twice');
    expect(again.status).toBe(400);
    expect(again.error).toContain("shared memory region 'twice' already in manager");
    const grpcAgain = await unary(stub, 'CudaSharedMemoryRegister', { name: 'twice', raw_handle: peer.handle, device_id: 0, byte_size: 16 });
    expect(grpcAgain.error?.code).toBe(grpc.status.ALREADY_EXISTS);
    await peer.write(1024, fp32([7, 8, 9, 10]));
    const r = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shm('twice', 1024, 16) }],
    });
    expect(r.status).toBe(200);
    expect(r.json<{ outputs: { data: number[] }[] }>().outputs[0].data).toEqual([7, 8, 9, 10]);
  });

  test('the same handle under two names: unregistering one leaves the other working', async () => {
    expect((await register('first')).status).toBe(200);
    expect((await register('second')).status).toBe(200);
    expect((await post(http, '/v2/cudasharedmemory/region/first/unregister')).status).toBe(200);
    await peer.write(2048, fp32([3, 1, 4, 1]));
    const r = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shm('second', 2048, 16) }],
      outputs: [{ name: 'OUT', parameters: shm('second', 2048 + 16, 16) }],
    });
    expect(r.status).toBe(200);
    expect(floats(await peer.read(2048 + 16, 16))).toEqual([3, 1, 4, 1]);
  });

  test('bad registrations are refused clearly and the server keeps serving', async () => {
    const zeros = await register('zeros', 16, Buffer.alloc(64));
    expect(zeros.status).toBe(400);
    expect(zeros.error).toContain('unable to open the CUDA IPC handle');
    const short = await register('short', 16, peer.handle.subarray(0, 32));
    expect(short.status).toBe(400);
    expect(short.error).toContain('CUDA IPC handle must be 64 bytes, got 32');
    const device = await register('device', 16, peer.handle, 99);
    expect(device.status).toBe(400);
    expect(device.error).toContain('invalid CUDA device id 99');
    // Past the allocation, copies would reach whatever the server has mapped next.
    const oversized = await register('oversized', 1 << 30);
    expect(oversized.status).toBe(400);
    expect(oversized.error).toContain('exceeds the');
    expect(oversized.error).toContain('bytes of the CUDA allocation the IPC handle refers to');
    const grpcZeros = await unary(stub, 'CudaSharedMemoryRegister', { name: 'z', raw_handle: Buffer.alloc(64), device_id: 0, byte_size: 16 });
    expect(grpcZeros.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcZeros.error?.details).toContain('unable to open the CUDA IPC handle');
    expect((await get(http, '/v2/cudasharedmemory/status')).json<unknown[]>()).toEqual([]);
    // The failed opens left no CUDA error behind: a good registration and a copy still work.
    expect((await register('good')).status).toBe(200);
    await peer.write(3072, fp32([1, 1, 2, 3]));
    const r = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shm('good', 3072, 16) }],
    });
    expect(r.json<{ outputs: { data: number[] }[] }>().outputs[0].data).toEqual([1, 1, 2, 3]);
  });

  test('stopping a server closes its regions', async () => {
    const own = startTriton(repo.root);
    await own.run();
    try {
      const port = own.ports.http!;
      const r = await post(port, '/v2/cudasharedmemory/region/kept/register',
        { raw_handle: { b64: peer.handle.toString('base64') }, device_id: 0, byte_size: REGION_BYTES });
      expect(r.status).toBe(200);
      const manager = own.server!.sharedMemory;
      expect(manager.cudaStatus()).toHaveLength(1);
      await own.stop();
      expect(manager.cudaStatus()).toEqual([]);
    } finally {
      await own.stop();
    }
    // This process's other mapping of the same allocation (the main server's) is unaffected.
    expect((await register('still')).status).toBe(200);
    await peer.write(3584, fp32([2, 7, 1, 8]));
    const r = await post(http, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shm('still', 3584, 16) }],
    });
    expect(r.json<{ outputs: { data: number[] }[] }>().outputs[0].data).toEqual([2, 7, 1, 8]);
  });
});

// Runs everywhere, so jest shows the skip line above (it hides the output of a wholly skipped file).
test('the suite runs, or says why not', () => {
  expect(skipped === null || /no CUDA device|nvcc/.test(skipped)).toBe(true);
});
