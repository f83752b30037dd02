/**
 * Model names from clients (issue 16, item 7): no state is kept per unknown name, and every name
 * is bounded (MAX_MODEL_NAME_LENGTH, a file name's limit) wherever it arrives — the repository
 * API, inference and metadata over HTTP and gRPC, in-process infer() and bind() — with
 * INVALID_ARG naming the limit, before the name is stored, hashed into a map or echoed whole.
 * Real server on loopback (HTTP and gRPC on free ports) over a real repository.
 */
import { status } from '@grpc/grpc-js';
import { MAX_MODEL_NAME_LENGTH } from '../../../ts/model-name';
import { expectRejects, expectThrows, fp32 } from '../helpers';
import { fp32Bytes, rawStub, unary, type Stub } from '../grpc/helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repo-helpers';

let repo: TempRepo;
let served: Served;
let stub: Stub;
let httpPort: number;

beforeEach(async () => {
  repo = new TempRepo('names');
  repo.onnx('add', 1, addConstModel(1));
  repo.config('add', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
  served = await startRepoTriton(repo.root, {
    controlMode: 'explicit', loadModels: ['add'],
    config: { httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowHttp: true, allowGrpc: true, logInfo: false },
  });
  httpPort = served.triton.ports.http!;
  stub = rawStub(served.triton.ports.grpc!);
});

afterEach(async () => {
  stub.close();
  await served.triton.stop();
  repo.cleanup();
});

const LIMIT = `at most ${MAX_MODEL_NAME_LENGTH} characters`;
const MiB = 1 << 20;

test('100 unloads of distinct unknown names (gRPC and in-process) succeed and leave no state behind', async () => {
  const before = served.manager.namesHeld;
  expect(before).toBe(1);  // 'add'
  for (let i = 0; i < 50; i++) {
    const name = `unknown_${i}_${'x'.repeat(200)}`;
    const { error } = await unary(stub, 'RepositoryModelUnload', { model_name: name });
    expect(error).toBeUndefined();
    await served.triton.unloadModel(`${name}_in_process`);
  }
  expect(served.manager.namesHeld).toBe(before);
  // The model the manager has keeps its state through unloads and loads.
  await served.triton.unloadModel('add');
  await served.triton.loadModel('add');
  expect(served.manager.namesHeld).toBe(before);
  expect(served.triton.repositoryIndex(true).map((e) => e.name)).toEqual(['add']);
});

describe('a name longer than the limit is INVALID_ARG naming the limit, wherever it arrives', () => {
  const huge = 'm'.repeat(MiB);

  test.each([
    ['RepositoryModelUnload', { model_name: huge }],
    ['RepositoryModelLoad', { model_name: huge }],
    ['ModelInfer', { model_name: huge, inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4] }], raw_input_contents: [fp32Bytes([1, 2, 3, 4])] }],
    ['ModelMetadata', { name: huge }],
    ['ModelConfig', { name: huge }],
    ['ModelStatistics', { name: huge }],
    ['TraceSetting', { model_name: huge }],
  ])('gRPC %s', async (rpc, request) => {
    const { error } = await unary(stub, rpc, request);
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toContain(LIMIT);
    expect(error!.details.length).toBeLessThan(1000);  // the name is not echoed whole
    expect(served.manager.namesHeld).toBe(1);
  });

  test('gRPC ModelReady answers false', async () => {
    expect((await unary(stub, 'ModelReady', { name: huge })).response).toEqual({ ready: false });
  });

  test.each([
    ['POST', 'infer'],
    ['GET', ''],
    ['GET', 'config'],
    ['GET', 'stats'],
  ])('HTTP %s /v2/models/<name>/%s', async (method, route) => {
    const name = 'm'.repeat(MAX_MODEL_NAME_LENGTH + 1);
    const r = await fetch(`http://127.0.0.1:${httpPort}/v2/models/${name}${route ? `/${route}` : ''}`, {
      method, body: method === 'POST' ? JSON.stringify({ inputs: [] }) : undefined,
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain(LIMIT);
  });

  test.each(['load', 'unload'])('HTTP /v2/repository/models/<name>/%s', async (action) => {
    const name = 'm'.repeat(MAX_MODEL_NAME_LENGTH + 1);
    const r = await fetch(`http://127.0.0.1:${httpPort}/v2/repository/models/${name}/${action}`, { method: 'POST' });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain(LIMIT);
  });

  test('in-process infer() and bind()', async () => {
    await expectRejects(served.triton.infer(huge, { INPUT0: fp32(1, 1, 4) }), 'INVALID_ARG', LIMIT);
    expectThrows(() => served.triton.bind({
      modelName: 'b'.repeat(MAX_MODEL_NAME_LENGTH + 1), inferFunc: (requests) => requests.map(() => ({})),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    }), 'INVALID_ARG', LIMIT);
  });

  test('a name of exactly the limit is an ordinary (here unknown) name', async () => {
    const name = 'm'.repeat(MAX_MODEL_NAME_LENGTH);
    await expectRejects(served.triton.infer(name, { INPUT0: fp32(1, 1, 4) }), 'NOT_FOUND');
    const { error } = await unary(stub, 'ModelMetadata', { name });
    expect(error?.code).toBe(status.NOT_FOUND);
  });
});
