/**
 * Models that cannot load: corrupt, truncated, empty or missing model files, a directory where a
 * file should be, a missing version directory, operators ONNX Runtime lacks, backends infernode
 * does not serve. Each is a clear error naming the model, shows as UNAVAILABLE with its reason in
 * the repository index, and never takes the server down (exitOnError false); with exitOnError
 * (the default) run() rejects instead.
 */
import { NDArray } from '../../../ts/tensor';
import { ElemType, identityModel } from '../../../ts/tools/onnx';
import { expectRejects } from '../helpers';
import { TempRepo, addConstModel, repoTriton, singleOpModel, startRepoTriton } from './repo-helpers';

let repo: TempRepo;

beforeEach(() => {
  repo = new TempRepo('failures');
  repo.onnx('good', 1, addConstModel(1));
});

afterEach(() => {
  repo.cleanup();
});

const x = (): NDArray => new NDArray('FP32', [1, 4], new Float32Array([1, 2, 3, 4]));

/** Each broken model: how to break it, and what its reason must say. */
const BROKEN: [string, (r: TempRepo) => void, RegExp][] = [
  ['garbage bytes in model.onnx', (r) => r.onnx('bad', 1, Buffer.from('this is not a protobuf message at all \x00\xff\xfe')),
    /^model 'bad' version 1: .*model\.onnx.*Protobuf parsing failed/],
  ['a truncated model.onnx', (r) => {
    const bytes = identityModel('FP32', [4]);
    r.onnx('bad', 1, bytes.subarray(0, bytes.length - 9));
  }, /^model 'bad' version 1: .*model\.onnx.*Protobuf parsing failed/],
  ['an empty model.onnx', (r) => r.onnx('bad', 1, Buffer.alloc(0)),
    /^model 'bad' version 1: the model file .*model\.onnx is empty$/],
  ['a directory named model.onnx without a model inside', (r) => r.mkdir('bad/1/model.onnx/nothing'),
    /^model 'bad' version 1: no model file \(model\.onnx, model\.js or model\.mjs\) in .*bad[/\\]1$/],
  ['an empty version directory', (r) => r.mkdir('bad/1'),
    /^model 'bad' version 1: no model file \(model\.onnx, model\.js or model\.mjs\) in /],
  ['no version directory', (r) => r.config('bad', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4'),
    /^model 'bad' has no version directory \(e\.g\. bad\/1\/\) in /],
  ['an operator ONNX Runtime does not know', (r) => r.onnx('bad', 1, singleOpModel('NoSuchOp')),
    /^model 'bad' version 1: .*No Op registered for NoSuchOp/],
  ['an operator without a kernel for its type (Add on BFLOAT16)', (r) => r.onnx('bad', 1, singleOpModel('Add', ElemType.BFLOAT16)),
    /^model 'bad' version 1: .*Could not find an implementation for Add/],
  ['an operator of an unknown domain', (r) => r.onnx('bad', 1, singleOpModel('Frobnicate', ElemType.FLOAT, 'com.example.custom')),
    /^model 'bad' version 1: .*Frobnicate/],
  ['backend "python"', (r) => {
    r.write('bad/1/model.py', 'class TritonPythonModel: pass\n');
    r.config('bad', 'backend: "python"\nmax_batch_size: 4');
  }, /^model 'bad': backend 'python' is not supported by infernode \(supported: onnxruntime, js\)$/],
  ['platform "tensorrt_plan"', (r) => {
    r.write('bad/1/model.plan', 'plan');
    r.config('bad', 'platform: "tensorrt_plan"\nmax_batch_size: 4');
  }, /^model 'bad': backend 'tensorrt' is not supported by infernode \(supported: onnxruntime, js\)$/],
  ['a TorchScript file with no config', (r) => r.write('bad/1/model.pt', 'torch'),
    /^model 'bad' version 1: no model file \(model\.onnx, model\.js or model\.mjs\) in /],
  ['a sequence batcher control without its [false, true] values', (r) => {
    r.onnx('bad', 1, identityModel('FP32', [4]));
    r.config('bad', 'max_batch_size: 4\nsequence_batching { control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START } ] } ] }');
  }, /^sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START for bad \(control input 'START'\)$/],
  ['a sequence batcher control the ONNX model does not have', (r) => {
    r.onnx('bad', 1, identityModel('FP32', [4]));
    r.config('bad', 'max_batch_size: 4\nsequence_batching { control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }');
  }, /^model 'bad': sequence_batching control input \(CONTROL_SEQUENCE_START\) 'START' is not an input of the ONNX model \(its inputs: INPUT0\)$/],
  ['a config.pbtxt syntax error', (r) => {
    r.onnx('bad', 1, identityModel('FP32', [4]));
    r.config('bad', 'max_batch_size: 4\ninput [ { name: "x" ');
  }, /config\.pbtxt:2:21: unterminated message/],
  ['a model.js with a syntax error', (r) => {
    r.write('bad/1/model.js', 'exports.execute = (requests) => { return requests.map(( }');
    r.config('bad', 'backend: "js"\nmax_batch_size: 4\ninput [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]\noutput [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]');
  }, /^model 'bad' version 1: cannot load .*model\.js: /],
  ['a model.js without execute', (r) => {
    r.write('bad/1/model.js', 'exports.initialize = () => {};');
    r.config('bad', 'backend: "js"\nmax_batch_size: 4\ninput [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]\noutput [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]');
  }, /^model 'bad' version 1: .*model\.js must export an execute\(requests, context\) function$/],
];

describe.each(BROKEN)('%s', (_what, breakIt, reason) => {
  test('is UNAVAILABLE with its reason in the index; the other models serve (exitOnError false)', async () => {
    breakIt(repo);
    const { triton, logs } = await startRepoTriton(repo.root, { config: { exitOnError: false } });
    try {
      const entry = triton.repositoryIndex().find((e) => e.name === 'bad');
      expect(entry).toMatchObject({ name: 'bad', version: '', state: 'UNAVAILABLE' });
      expect(entry!.reason).toMatch(reason);
      expect(logs.some((line) => line.startsWith("infernode: failed to load model 'bad': "))).toBe(true);
      await expectRejects(triton.infer('bad', { INPUT0: x() }), 'NOT_FOUND', "'bad'");
      expect(triton.repositoryIndex().find((e) => e.name === 'good')).toMatchObject({ version: '1', state: 'READY' });
      expect(Array.from((await triton.infer('good', { INPUT0: x() })).OUTPUT0.data as Float32Array)).toEqual([2, 3, 4, 5]);
      expect(triton.isReady()).toBe(false);  // strict readiness: a model failed
    } finally {
      await triton.stop();
    }
  });
});

test('with exitOnError (the default), run() rejects naming the model and its reason, and nothing stays loaded', async () => {
  repo.onnx('bad', 1, Buffer.from('garbage'));
  const { triton } = repoTriton(repo.root, { config: { exitOnError: true } });
  const err = await expectRejects(triton.run(), 'UNAVAILABLE', /^failed to load model\(s\):\n {2}bad: model 'bad' version 1: .*Protobuf parsing failed/);
  expect(err.message).not.toContain('good');
  expect(triton.isConnected()).toBe(false);
  // 'good' loaded, then the failed start stopped the server: a retryable refusal, not "unknown".
  await expectRejects(triton.infer('good', { INPUT0: x() }), 'UNAVAILABLE', "Server is shutting down: model 'good'");
  await expectRejects(triton.infer('never_there', { INPUT0: x() }), 'NOT_FOUND');
});

test('explicit load of a broken model rejects with its reason; the server and its models carry on', async () => {
  repo.onnx('bad', 1, Buffer.alloc(0));
  const { triton } = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['good'] });
  try {
    await expectRejects(triton.loadModel('bad'), 'INVALID_ARG', /^failed to load 'bad': model 'bad' version 1: the model file .* is empty$/);
    expect(triton.isConnected()).toBe(true);
    expect(triton.repositoryIndex().map((e) => [e.name, e.state])).toEqual([['bad', 'UNAVAILABLE'], ['good', 'READY']]);
    // Fixed on disk, the next load succeeds.
    repo.onnx('bad', 1, addConstModel(7));
    await triton.loadModel('bad');
    expect(Array.from((await triton.infer('bad', { INPUT0: x() })).OUTPUT0.data as Float32Array)).toEqual([8, 9, 10, 11]);
  } finally {
    await triton.stop();
  }
});

test('a model whose second version is broken loads no version at all (the load fails as a whole)', async () => {
  repo.onnx('m', 1, addConstModel(1));
  repo.onnx('m', 2, Buffer.from('broken'));
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\nversion_policy { all { } }');
  const { triton } = await startRepoTriton(repo.root);
  try {
    const entry = triton.repositoryIndex().find((e) => e.name === 'm');
    expect(entry).toMatchObject({ version: '', state: 'UNAVAILABLE', reason: expect.stringMatching(/^model 'm' version 2: /) });
    await expectRejects(triton.infer('m', { INPUT0: x() }, { modelVersion: 1 }), 'NOT_FOUND');
  } finally {
    await triton.stop();
  }
});

test('two repositories holding the same model name: with exitOnError the start-up fails naming it with Triton\'s reason and both paths', async () => {
  const other = new TempRepo('failures-b');
  try {
    other.onnx('good', 1, addConstModel(2));
    const { triton, logs } = repoTriton([repo.root, other.root], { config: { exitOnError: true } });
    await expectRejects(triton.run(), 'UNAVAILABLE', 'failed to load model(s):\n  good: model appears in two or more repositories\n');
    expect(logs).toContain(`infernode: failed to poll model 'good': not unique across all model repositories (${repo.root}, ${other.root})`);
    expect(triton.isConnected()).toBe(false);
  } finally {
    other.cleanup();
  }
});

test('a repository path that is not a directory fails the start-up, naming it', async () => {
  const { triton } = repoTriton(repo.path('nowhere'));
  await expectRejects(triton.run(), 'INVALID_ARG', `model repository '${repo.path('nowhere')}' is not a directory`);
});

test('a request for a model whose load failed says why, not only "unknown model"', async () => {
  repo.onnx('broken', 1, Buffer.from('not an onnx model'));
  repo.onnx('fine', 1, addConstModel(1));
  const { triton } = await startRepoTriton(repo.root);
  try {
    const err = await expectRejects(triton.infer('broken', { INPUT0: new NDArray('FP32', [1, 4], new Float32Array(4)) }), 'NOT_FOUND',
      "Request for unknown model: 'broken' is not found (its last load failed: model 'broken' version 1: ");
    expect(err.message).toContain('Protobuf parsing failed');
    // A name that was never in the repository gets Triton's text alone.
    await expectRejects(triton.infer('ghost', {}), 'NOT_FOUND', /^Request for unknown model: 'ghost' is not found$/);
  } finally {
    await triton.stop();
  }
});
