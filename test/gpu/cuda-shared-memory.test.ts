/**
 * Triton's CUDA shared-memory extension end to end, on a real device: a client process (the
 * peer, test/gpu/fixtures/cuda_ipc_peer.cu, built here with nvcc) cudaMallocs a region and
 * exports its cudaIpcMemHandle_t; a real server (HTTP and gRPC on loopback, client shared
 * memory allowed) registers it, reads inputs from it and writes outputs into it for an ONNX
 * model (add_sub, native ONNX Runtime engine) and a bound JS model; the peer reads the results
 * back out of its own device memory. Also status, bounds, unregister, double registration, bad
 * handles and sizes, and stop() closing the regions.
 *
 * Inputs stay on the device for ONNX models: a KIND_GPU instance reads a whole input in place
 * and gathers a batch's rows from scattered offsets on the device (cast there for an FP16 model
 * served as FP32), a KIND_CPU instance copies them to the host on its own thread; only a JS
 * model has them read on the event loop (SharedMemoryManager.readDevice, spied on). A region
 * unregistered while a request that reads it is queued stays open (and listed) until the request is done.
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

/**
 * add_sub on one instance of `kind` that batches 6 requests at once (the preferred size ends
 * the 30 s queue delay, so a batch forms only from the requests a test sends together).
 */
const batchedAddSub = (kind: string) => `${ADD_SUB_CONFIG}
instance_group [ { kind: ${kind}, count: 1 } ]
dynamic_batching { preferred_batch_size: [ 6 ], max_queue_delay_microseconds: 30000000 }
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
    repo.onnx('add_sub_gpu', 1, addSubModel('FP32', [4]));
    repo.config('add_sub_gpu', batchedAddSub('KIND_GPU'));
    repo.onnx('add_sub_gpu_alone', 1, addSubModel('FP32', [4]));
    repo.config('add_sub_gpu_alone', `${ADD_SUB_CONFIG}\ninstance_group [ { kind: KIND_GPU } ]\n`);
    repo.onnx('add_sub_cpu', 1, addSubModel('FP32', [4]));
    repo.config('add_sub_cpu', batchedAddSub('KIND_CPU'));
    repo.onnx('half_add_gpu', 1, addSubModel('FP16', [4]));
    repo.config('half_add_gpu', batchedAddSub('KIND_GPU'));
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

  /** How many batches of 6 the model has run (its statistics' batch_stats). */
  async function batchesOf6(model: string): Promise<number> {
    const stats = (await get(http, `/v2/models/${model}/stats`))
      .json<{ model_stats: { batch_stats: { batch_size: number; compute_infer: { count: number } }[] }[] }>();
    return stats.model_stats[0].batch_stats.find((b) => b.batch_size === 6)?.compute_infer.count ?? 0;
  }

  afterEach(async () => {
    jest.restoreAllMocks();
    await post(http, '/v2/cudasharedmemory/unregister');
  });

  /**
   * Six add_sub requests at once (one batch): even ones from the region at odd offsets, with
   * their outputs into it, odd ones as JSON. `onDevice`: the instance writes those outputs there
   * itself (a GPU instance), rather than the server copying them in when it answers.
   */
  async function mixedBatch(model: string, onDevice: boolean): Promise<void> {
    const readDevice = jest.spyOn(triton.server!.sharedMemory, 'readDevice');
    const write = jest.spyOn(triton.server!.sharedMemory, 'write');
    const before = await batchesOf6(model);
    expect((await register('rows')).status).toBe(200);
    const rows = [0, 1, 2, 3, 4, 5].map((i) => [1 + i, -2 * i, 0.5 * i, 100 + i]);
    const offsets = [4, 0, 1204, 0, 2052, 0];  // 4-byte aligned, not 16: rows scattered and misaligned
    for (let i = 0; i < 6; i += 2) await peer.write(offsets[i], Buffer.concat([fp32(rows[i]), fp32([1, 1, 1, 1])]));
    const answers = await Promise.all(rows.map((row, i) => post(http, `/v2/models/${model}/infer`, {
      inputs: i % 2 === 0
        ? [
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('rows', offsets[i], 16) },
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('rows', offsets[i] + 16, 16) },
        ]
        : [
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: row },
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: [1, 1, 1, 1] },
        ],
      outputs: i % 2 === 0
        ? [
          { name: 'OUTPUT0', parameters: shm('rows', offsets[i] + 32, 16) },
          { name: 'OUTPUT1', parameters: shm('rows', offsets[i] + 48, 20) },  // room to spare
        ]
        : undefined,
    })));
    for (let i = 0; i < 6; i++) {
      const r = answers[i];
      expect(r.status).toBe(200);
      const outputs = r.json<{ outputs: { name: string; data?: number[]; parameters?: object }[] }>().outputs;
      if (i % 2 === 0) {
        expect(outputs).toEqual([
          { name: 'OUTPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('rows', offsets[i] + 32, 16) },
          { name: 'OUTPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('rows', offsets[i] + 48, 16) },
        ]);
        expect(floats(await peer.read(offsets[i] + 32, 32))).toEqual([...rows[i].map((v) => v + 1), ...rows[i].map((v) => v - 1)]);
      } else {
        expect(outputs.find((o) => o.name === 'OUTPUT0')?.data).toEqual(rows[i].map((v) => v + 1));
        expect(outputs.find((o) => o.name === 'OUTPUT1')?.data).toEqual(rows[i].map((v) => v - 1));
      }
    }
    expect(await batchesOf6(model)).toBe(before + 1);  // one batch: rows gathered, not run one by one
    expect(readDevice).not.toHaveBeenCalled();  // never read on the event loop
    expect(write).toHaveBeenCalledTimes(onDevice ? 0 : 6);
  }

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

  test('KIND_GPU: a batch gathers its rows from scattered offsets of the region and writes its outputs there, on the device', async () => {
    await mixedBatch('add_sub_gpu', true);
  });

  test('KIND_GPU: a batch whose every request wants its outputs in the region gets them there, with no host copy', async () => {
    const write = jest.spyOn(triton.server!.sharedMemory, 'write');
    const before = await batchesOf6('add_sub_gpu');
    expect((await register('all')).status).toBe(200);
    const rows = [0, 1, 2, 3, 4, 5].map((i) => [i, 2 * i, -i, 0.25 * i]);
    // Request i: INPUT0 and INPUT1 at 100 + 128 i, OUTPUT0 and OUTPUT1 right after them.
    for (let i = 0; i < 6; i++) await peer.write(100 + 128 * i, Buffer.concat([fp32(rows[i]), fp32([2, 2, 2, 2])]));
    const answers = await Promise.all(rows.map((_, i) => post(http, '/v2/models/add_sub_gpu/infer', {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('all', 100 + 128 * i, 16) },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('all', 116 + 128 * i, 16) },
      ],
      outputs: [
        { name: 'OUTPUT0', parameters: shm('all', 132 + 128 * i, 16) },
        { name: 'OUTPUT1', parameters: shm('all', 148 + 128 * i, 16) },
      ],
    })));
    for (let i = 0; i < 6; i++) {
      expect(answers[i].status).toBe(200);
      expect(floats(await peer.read(132 + 128 * i, 32))).toEqual([...rows[i].map((v) => v + 2), ...rows[i].map((v) => v - 2)]);
    }
    expect(write).not.toHaveBeenCalled();
    expect(await batchesOf6('add_sub_gpu')).toBe(before + 1);
  });

  test('KIND_GPU: an FP16 model served as FP32 casts the rows it gathered on the device', async () => {
    await mixedBatch('half_add_gpu', true);
  });

  test('KIND_CPU: the instance copies the rows in the region to the host itself; outputs are copied in when answered', async () => {
    await mixedBatch('add_sub_cpu', false);
  });

  test('KIND_GPU: a whole input is read in place, over gRPC too', async () => {
    const readDevice = jest.spyOn(triton.server!.sharedMemory, 'readDevice');
    await peer.write(3200, Buffer.concat([fp32([1, 2, 3, 4, 5, 6, 7, 8]), fp32([1, 1, 1, 1, 2, 2, 2, 2])]));
    expect((await register('whole')).status).toBe(200);
    // Alone in its batch (no dynamic batching): each input is one row range of the region.
    const r = await unary(stub, 'ModelInfer', {
      model_name: 'add_sub_gpu_alone',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [2, 4], parameters: grpcShm('whole', 3200, 32) },
        { name: 'INPUT1', datatype: 'FP32', shape: [2, 4], parameters: grpcShm('whole', 3232, 32) },
      ],
    });
    expect(r.error).toBeUndefined();
    const raw = r.response!.raw_output_contents as Buffer[];
    expect(floats(raw[0])).toEqual([2, 3, 4, 5, 7, 8, 9, 10]);
    expect(floats(raw[1])).toEqual([0, 1, 2, 3, 3, 4, 5, 6]);
    expect(readDevice).not.toHaveBeenCalled();
    // An output range too small for the rows is refused with Triton's text, as on the host path.
    const small = await unary(stub, 'ModelInfer', {
      model_name: 'add_sub_gpu_alone',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [2, 4], parameters: grpcShm('whole', 3200, 32) },
        { name: 'INPUT1', datatype: 'FP32', shape: [2, 4], parameters: grpcShm('whole', 3232, 32) },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: grpcShm('whole', 3264, 16) }],
    });
    expect(small.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(small.error?.details).toContain('should be at least 32 bytes to hold the results');
  });

  test('a region unregistered while a queued request reads it stays open until that request is done', async () => {
    await peer.write(2560, Buffer.concat([fp32([5, 6, 7, 8]), fp32([1, 2, 3, 4])]));
    expect((await register('held')).status).toBe(200);
    const infer = (parameters: object | null, i: number) => post(http, '/v2/models/add_sub_gpu/infer', {
      inputs: parameters
        ? [
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('held', 2560, 16) },
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('held', 2576, 16) },
        ]
        : [
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [i, i, i, i] },
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: [0, 0, 0, 0] },
        ],
    });
    const queued = infer({}, 0);  // waits for five more requests (preferred batch 6)
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await post(http, '/v2/cudasharedmemory/region/held/unregister')).status).toBe(200);
    // As Triton (UnregisterHelper: awaiting_unregister_): still listed while the request uses it.
    expect((await get(http, '/v2/cudasharedmemory/status')).json<{ name: string }[]>().map((region) => region.name)).toEqual(['held']);
    const others = await Promise.all([1, 2, 3, 4, 5].map((i) => infer(null, i)));
    const r = await queued;
    expect((await get(http, '/v2/cudasharedmemory/status')).json<unknown[]>()).toEqual([]);
    expect(r.status).toBe(200);
    expect(r.json<{ outputs: { data: number[] }[] }>().outputs.map((o) => o.data)).toEqual([[6, 8, 10, 12], [4, 4, 4, 4]]);
    others.forEach((o, i) => expect(o.json<{ outputs: { data: number[] }[] }>().outputs[0].data).toEqual(Array(4).fill(i + 1)));
  });

  test('gRPC: a bound JS model reads from and writes into the region; status; unregister releases', async () => {
    const readDevice = jest.spyOn(triton.server!.sharedMemory, 'readDevice');
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
    expect(readDevice).toHaveBeenCalledTimes(1);  // a JS model reads its inputs on the host

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
    // An offset at or past the end: Triton checks it first (GetMemoryInfo), with its own text.
    expect(overOutput.error).toContain("Invalid offset for shared memory region: 'small'");
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
    expect(overGrpc.error?.details).toContain("Invalid offset for shared memory region: 'small'");
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
