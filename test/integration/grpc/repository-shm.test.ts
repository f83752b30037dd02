/**
 * The repository and shared-memory RPCs against real resources: a model repository in explicit
 * control mode (load, load with a config and files sent as bytes_param, unload), and POSIX
 * shared-memory regions (/dev/shm) carrying inputs and outputs.
 */
import { status } from '@grpc/grpc-js';
import { cpSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync, closeSync, readSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GrpcInferenceServerClient } from '../../../ts/client/grpc';
import { toModelConfigJson } from '../../../ts/config/model-config-json';
import { NDArray } from '../../../ts/tensor';
import { bindStandardModels, fails, fp32Bytes, ok, serve, unary, type Served } from './helpers';
import { Recorder, waitFor } from '../helpers';

describe('model repository, explicit control mode', () => {
  let s: Served;
  let client: GrpcInferenceServerClient;
  let repo: string;

  beforeAll(async () => {
    repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-grpc-repo-'));
    cpSync(path.join(__dirname, '..', '..', '..', 'examples', 'models', 'add_sub'), path.join(repo, 'add_sub'), { recursive: true });
    s = await serve((t) => t.useRepository({ repositories: [repo], controlMode: 'explicit' }));
    client = new GrpcInferenceServerClient(`127.0.0.1:${s.port}`);
  });
  afterAll(async () => {
    await client.close();
    await s.close();
    rmSync(repo, { recursive: true, force: true });
  });

  test('load, serve, read the config (a uint64-keyed map included), unload', async () => {
    expect((await ok(s.stub, 'RepositoryIndex', {})).models).toEqual([{ name: 'add_sub', version: '', state: 'UNAVAILABLE', reason: 'unloaded' }]);
    await ok(s.stub, 'RepositoryModelLoad', { model_name: 'add_sub' });
    expect((await ok(s.stub, 'ModelReady', { name: 'add_sub' })).ready).toBe(true);
    const config = await client.modelConfig('add_sub');
    expect(config).toEqual(toModelConfigJson(s.triton.model('add_sub').config));
    expect(Object.keys((config.dynamic_batching as { priority_queue_policy: object }).priority_queue_policy)).toEqual(['2']);
    const a = new NDArray('FP32', [1, 2], new Float32Array([5, 7]));
    const b = new NDArray('FP32', [1, 2], new Float32Array([1, 2]));
    const r = await client.infer({ modelName: 'add_sub', inputs: { INPUT0: a, INPUT1: b } });
    expect([...r.outputs.OUTPUT0.data as Float32Array]).toEqual([6, 9]);
    expect([...r.outputs.OUTPUT1.data as Float32Array]).toEqual([4, 5]);
    await ok(s.stub, 'RepositoryModelUnload', { model_name: 'add_sub' });
    expect((await ok(s.stub, 'ModelReady', { name: 'add_sub' })).ready).toBe(false);
  });

  test('load with a config and model files sent as bytes_param', async () => {
    const config = JSON.stringify({
      backend: 'js', max_batch_size: 0,
      input: [{ name: 'X', data_type: 'TYPE_INT32', dims: [2] }], output: [{ name: 'Y', data_type: 'TYPE_INT32', dims: [2] }],
    });
    const code = 'exports.execute = (requests) => requests.map((r) => ({ Y: r.data.X.data.map((v) => v * 10) }));\n';
    await ok(s.stub, 'RepositoryModelLoad', {
      model_name: 'sent', parameters: { config: { string_param: config }, 'file:1/model.js': { bytes_param: Buffer.from(code) } },
    });
    const r = await client.infer({ modelName: 'sent', inputs: { X: new NDArray('INT32', [2], new Int32Array([1, 2])) } });
    expect([...r.outputs.Y.data as Int32Array]).toEqual([10, 20]);
    await client.unloadModel('sent');
  });

  test('bad loads: NOT_FOUND for unknown models, INVALID_ARGUMENT for parameters of the wrong type', async () => {
    await fails(s.stub, 'RepositoryModelLoad', { model_name: 'nope' }, status.NOT_FOUND, "failed to load 'nope'");
    await fails(s.stub, 'RepositoryModelLoad', { model_name: 'add_sub', parameters: { config: { int64_param: 1 } } },
      status.INVALID_ARGUMENT, "load parameter 'config' must be a string_param");
    await fails(s.stub, 'RepositoryModelLoad', { model_name: 'add_sub', parameters: { 'file:1/model.js': { string_param: 'x' } } },
      status.INVALID_ARGUMENT, "load parameter 'file:1/model.js' must be a bytes_param");
    await fails(s.stub, 'RepositoryModelLoad', {
      model_name: 'evil', parameters: { config: { string_param: '{"backend":"js"}' }, 'file:../x.js': { bytes_param: Buffer.from('') } },
    }, status.INVALID_ARGUMENT, "Invalid file parameter 'file:../x.js' with normalized path '../x.js' must stay within model directory.");
  });
});

describe('system shared memory', () => {
  const key = `/infernode-grpc-test-${process.pid}`;
  const file = `/dev/shm${key}`;
  let s: Served;

  beforeAll(async () => {
    writeFileSync(file, Buffer.alloc(64));
    s = await serve(bindStandardModels, { allowClientShm: true });
  });
  afterAll(async () => {
    await s.close();
    rmSync(file, { force: true });
  });

  const shmParams = (region: string, byteSize: number, offset: number) => ({
    shared_memory_region: { string_param: region }, shared_memory_byte_size: { int64_param: byteSize },
    shared_memory_offset: { int64_param: offset },
  });

  test('register, read inputs from and write outputs to a region, status, unregister', async () => {
    await ok(s.stub, 'SystemSharedMemoryRegister', { name: 'r', key, offset: 0, byte_size: 64 });
    expect((await ok(s.stub, 'SystemSharedMemoryStatus', {})).regions).toEqual({ r: { name: 'r', key, offset: '0', byte_size: '64' } });
    const fd = openSync(file, 'r+');
    writeFileSync(fd, fp32Bytes([1.5, 2.5, 3.5, 4.5]));
    const r = await ok(s.stub, 'ModelInfer', {
      model_name: 'identity',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shmParams('r', 16, 0) }],
      outputs: [{ name: 'OUT', parameters: shmParams('r', 16, 32) }],
    });
    expect(r.outputs).toEqual([expect.objectContaining({ name: 'OUT', datatype: 'FP32', shape: ['1', '4'] })]);
    expect(r.raw_output_contents).toEqual([Buffer.alloc(0)]);
    const out = Buffer.alloc(16);
    readSync(fd, out, 0, 16, 32);
    closeSync(fd);
    expect(out).toEqual(fp32Bytes([1.5, 2.5, 3.5, 4.5]));
    await ok(s.stub, 'SystemSharedMemoryUnregister', { name: 'r' });
    expect((await ok(s.stub, 'SystemSharedMemoryStatus', {})).regions).toEqual({});
    expect(readFileSync(file).length).toBe(64);
  });

  test('errors: duplicate names, unknown regions, bounds, contents with a region, bad keys', async () => {
    await ok(s.stub, 'SystemSharedMemoryRegister', { name: 'e', key, offset: 0, byte_size: 32 });
    try {
      await fails(s.stub, 'SystemSharedMemoryRegister', { name: 'e', key, byte_size: 32 }, status.ALREADY_EXISTS, "'e' already in manager");
      await fails(s.stub, 'SystemSharedMemoryStatus', { name: 'nope' }, status.NOT_FOUND, "Unable to find system shared memory region: 'nope'");
      const input = (params: object, extra: object = {}) => ({
        model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: params, ...extra }],
      });
      await fails(s.stub, 'ModelInfer', input(shmParams('e', 16, 24)), status.INVALID_ARGUMENT, 'exceeds the 32 bytes of region');
      // Triton's texts (qa L0_shared_memory test_infer_offset_out_of_bound, gRPC: offset = region size;
      // test_register_out_of_bound).
      await fails(s.stub, 'ModelInfer', input(shmParams('e', 16, 32)), status.INVALID_ARGUMENT,
        "Invalid offset for shared memory region: 'e'");
      await fails(s.stub, 'SystemSharedMemoryRegister', { name: 'big', key, offset: 1, byte_size: 64 }, status.INVALID_ARGUMENT,
        "failed to register shared memory region 'big': invalid args");
      await fails(s.stub, 'ModelInfer', input(shmParams('gone', 16, 0)), status.NOT_FOUND, "Unable to find shared memory region: 'gone'");
      await fails(s.stub, 'ModelInfer', input(shmParams('e', 16, 0), { contents: { fp32_contents: [1, 2, 3, 4] } }), status.INVALID_ARGUMENT,
        "unexpected 'content' provided when using shared memory for input tensor 'IN' for model 'identity'");
      await fails(s.stub, 'SystemSharedMemoryRegister', { name: 'k', key: 'no-slash', byte_size: 8 }, status.INVALID_ARGUMENT, "invalid shared memory key 'no-slash'");
    } finally {
      await ok(s.stub, 'SystemSharedMemoryUnregister', {});
    }
  });

  // A client shrinking its object after registering it used to kill the server with SIGBUS on the
  // next read of the mapping; now the request fails with INVALID_ARGUMENT and the server lives on.
  test('an object truncated after registration: INVALID_ARGUMENT naming region, key and sizes, no crash', async () => {
    const shrinking = `${key}-shrink`;
    writeFileSync(`/dev/shm${shrinking}`, Buffer.alloc(64 * 1024));
    try {
      await ok(s.stub, 'SystemSharedMemoryRegister', { name: 's', key: shrinking, offset: 4096, byte_size: 60 * 1024 });
      truncateSync(`/dev/shm${shrinking}`, 0);
      await fails(s.stub, 'ModelInfer', {
        model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shmParams('s', 16, 8192) }],
      }, status.INVALID_ARGUMENT, `input 'IN' for model 'identity': shared memory region 's' (key '${shrinking}') needs 12304 bytes ` +
        'of its shared memory object, but the object now holds 0 bytes');
      await fails(s.stub, 'ModelInfer', {
        model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4] }], raw_input_contents: [fp32Bytes([1, 2, 3, 4])],
        outputs: [{ name: 'OUT', parameters: shmParams('s', 16, 0) }],
      }, status.INVALID_ARGUMENT, "output 'OUT' of model 'identity': shared memory region 's' (key");
      // Restored to its size, the same registration works again.
      truncateSync(`/dev/shm${shrinking}`, 64 * 1024);
      const r = await ok(s.stub, 'ModelInfer', {
        model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4] }], raw_input_contents: [fp32Bytes([1, 2, 3, 4])],
        outputs: [{ name: 'OUT', parameters: shmParams('s', 16, 0) }],
      });
      expect(r.outputs).toEqual([expect.objectContaining({ name: 'OUT' })]);
      expect(readFileSync(`/dev/shm${shrinking}`).subarray(4096, 4096 + 16)).toEqual(fp32Bytes([1, 2, 3, 4]));
    } finally {
      await ok(s.stub, 'SystemSharedMemoryUnregister', {});
      rmSync(`/dev/shm${shrinking}`, { force: true });
    }
  });

  // Unregistering while a request read its input from a region used to close that region at once
  // (only output regions were held). Triton keeps every region a request uses until it completes
  // (shared_memory_manager.cc UnregisterHelper; qa L0_shared_memory _test_shm_found).
  test('unregister while a request reads its input from a region: still listed until the request completes', async () => {
    const recorder = new Recorder();
    const own = await serve((t) => t.bind({
      modelName: 'held', inferFunc: recorder.func,
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 4 },
    }), { allowClientShm: true });
    let opened: ReturnType<Recorder['hold']> | undefined;
    try {
      const fd = openSync(file, 'r+');
      writeFileSync(fd, fp32Bytes([6, 7, 8, 9]));
      closeSync(fd);
      await ok(own.stub, 'SystemSharedMemoryRegister', { name: 'in', key, offset: 0, byte_size: 16 });
      opened = recorder.hold();
      const pending = ok(own.stub, 'ModelInfer', {
        model_name: 'held', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: shmParams('in', 16, 0) }],
      });
      await waitFor(() => recorder.active === 1, 'the request to reach the model');
      await ok(own.stub, 'SystemSharedMemoryUnregister', { name: 'in' });
      expect(Object.keys((await ok(own.stub, 'SystemSharedMemoryStatus', {})).regions as object)).toEqual(['in']);
      opened!.open();
      expect((await pending).raw_output_contents).toEqual([fp32Bytes([6, 7, 8, 9])]);
      expect((await ok(own.stub, 'SystemSharedMemoryStatus', {})).regions).toEqual({});
    } finally {
      opened?.open();
      await own.close();
    }
  });

  test('CUDA regions: status is empty, a registration without a usable device fails with a clear message', async () => {
    expect((await ok(s.stub, 'CudaSharedMemoryStatus', {})).regions).toEqual({});
    const { error } = await unary(s.stub, 'CudaSharedMemoryRegister', {
      name: 'c', raw_handle: Buffer.alloc(64), device_id: 0, byte_size: 16,
    });
    expect(error).toBeDefined();
    expect(error!.code).not.toBe(status.INTERNAL);
    expect(error!.details).toMatch(/CUDA|cuda/);
  });
});
