/**
 * Auto-complete (Triton's behaviour without --strict-model-config): a missing or partial
 * config.pbtxt is completed from the ONNX model; a config that contradicts the model fails the
 * load with INVALID_ARG naming the tensor, and the server keeps serving the others.
 */
import { toModelConfigJson } from '../../../ts/config/model-config-json';
import { NDArray } from '../../../ts/tensor';
import { addSubModel, identityModel } from '../../../ts/tools/onnx';
import { expectRejects } from '../helpers';
import { TempRepo, fixedIdentityModel, scalarModel, startRepoTriton, type Served } from './repo-helpers';

let repo: TempRepo;

beforeEach(() => {
  repo = new TempRepo('autocomplete');
});

afterEach(() => {
  repo.cleanup();
});

/** Loads `model` in explicit mode; returns the served Triton (stop it). */
async function explicit(): Promise<Served> {
  return startRepoTriton(repo.root, { controlMode: 'explicit' });
}

test('no config.pbtxt: inputs, outputs, max_batch_size 4 and dynamic batching come from the model', async () => {
  repo.onnx('add_sub', 1, addSubModel('FP32', [3]));
  const { triton } = await startRepoTriton(repo.root);
  try {
    const json = toModelConfigJson(triton.model('add_sub').config);
    expect(json).toMatchObject({
      name: 'add_sub', platform: 'onnxruntime_onnx', backend: 'onnxruntime', max_batch_size: 4,
      input: [
        { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [3] },
        { name: 'INPUT1', data_type: 'TYPE_FP32', dims: [3] },
      ],
      output: [
        { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [3] },
        { name: 'OUTPUT1', data_type: 'TYPE_FP32', dims: [3] },
      ],
      dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 0 },
      instance_group: [{ kind: 'KIND_CPU', count: 1 }],
      version_policy: { latest: { num_versions: 1 } },
    });
    const a = new NDArray('FP32', [2, 3], new Float32Array([1, 2, 3, 4, 5, 6]));
    const b = new NDArray('FP32', [2, 3], new Float32Array([6, 5, 4, 3, 2, 1]));
    const out = await triton.infer('add_sub', { INPUT0: a, INPUT1: b });
    expect(Array.from(out.OUTPUT0.data as Float32Array)).toEqual([7, 7, 7, 7, 7, 7]);
    expect(Array.from(out.OUTPUT1.data as Float32Array)).toEqual([-5, -3, -1, 1, 3, 5]);
    // The derived max_batch_size is enforced.
    const five = new NDArray('FP32', [5, 3], new Float32Array(15));
    await expectRejects(triton.infer('add_sub', { INPUT0: five, INPUT1: five }), 'INVALID_ARG', 'batch-size must be <= 4');
  } finally {
    await triton.stop();
  }
});

test('no config.pbtxt, a model without a batch dimension: max_batch_size 0, the exact dims, no dynamic batching', async () => {
  repo.onnx('fixed', 1, fixedIdentityModel());
  const { triton } = await startRepoTriton(repo.root);
  try {
    const json = toModelConfigJson(triton.model('fixed').config);
    expect(json.max_batch_size).toBe(0);
    expect(json.input).toMatchObject([{ name: 'X', data_type: 'TYPE_FP32', dims: [2, 3] }]);
    expect(json.output).toMatchObject([{ name: 'Y', data_type: 'TYPE_FP32', dims: [2, 3] }]);
    expect(json.dynamic_batching).toBeUndefined();
    const x = new NDArray('FP32', [2, 3], new Float32Array([1, 2, 3, 4, 5, 6]));
    expect((await triton.infer('fixed', { X: x })).Y.data).toEqual(x.data);
  } finally {
    await triton.stop();
  }
});

test('a partial config keeps what it sets and gets the rest from the model', async () => {
  repo.onnx('partial', 1, addSubModel('INT32', [2]));
  repo.config('partial', `
    max_batch_size: 8
    instance_group [ { count: 2, kind: KIND_CPU } ]
    output [ { name: "OUTPUT1", data_type: TYPE_INT32, dims: [ 2 ] } ]`);
  const { triton } = await startRepoTriton(repo.root);
  try {
    const config = triton.model('partial').config;
    expect(config.maxBatchSize).toBe(8);
    // The onnxruntime backend's AutoCompleteMaxBatch: any size above 1 gets dynamic batching when no scheduler is set.
    expect(config.dynamicBatching).toMatchObject({ preferredBatchSize: [8] });
    expect(config.instanceGroup).toEqual([expect.objectContaining({ kind: 'KIND_CPU', count: 2 })]);
    expect(config.inputs.map((t) => [t.name, t.dtype, t.dims])).toEqual([['INPUT0', 'INT32', [2]], ['INPUT1', 'INT32', [2]]]);
    // The config lists one output: only that one is served.
    expect(config.outputs.map((t) => t.name)).toEqual(['OUTPUT1']);
    const a = new NDArray('INT32', [1, 2], new Int32Array([10, 20]));
    const b = new NDArray('INT32', [1, 2], new Int32Array([1, 2]));
    const out = await triton.infer('partial', { INPUT0: a, INPUT1: b });
    expect(Object.keys(out)).toEqual(['OUTPUT1']);
    expect(Array.from(out.OUTPUT1.data as Int32Array)).toEqual([9, 18]);
  } finally {
    await triton.stop();
  }
});

test('max_batch_size 0 on a batchable model: with its inputs and outputs listed it stays 0 (the batch dimension is part of the dims); without, it is completed like a missing one', async () => {
  repo.onnx('unbatched', 1, identityModel('FP32', [3]));
  repo.config('unbatched', `max_batch_size: 0
    input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1, 3 ] } ]
    output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ -1, 3 ] } ]`);
  // Triton's backend cannot tell a 0 given from a 0 left out (protobuf's default): it completes both.
  repo.onnx('completed', 1, identityModel('FP32', [3]));
  repo.config('completed', 'max_batch_size: 0');
  // Listing both is no auto-complete at all: no max_batch_size means 0, and the dims are whole.
  repo.onnx('listed', 1, identityModel('FP32', [3]));
  repo.config('listed', `input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1, 3 ] } ]
    output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ -1, 3 ] } ]`);
  const { triton } = await startRepoTriton(repo.root);
  try {
    for (const name of ['unbatched', 'listed']) {
      const config = triton.model(name).config;
      expect(config.maxBatchSize).toBe(0);
      expect(config.inputs[0].dims).toEqual([-1, 3]);
      expect(config.dynamicBatching).toBeNull();
      const x = new NDArray('FP32', [5, 3], new Float32Array(15).map((_, i) => i));
      expect((await triton.infer(name, { INPUT0: x })).OUTPUT0.data).toEqual(x.data);
    }
    const completed = triton.model('completed').config;
    expect([completed.maxBatchSize, completed.inputs[0].dims, completed.dynamicBatching !== null]).toEqual([4, [3], true]);
  } finally {
    await triton.stop();
  }
});

test('scalar (rank 0) tensors: served with dims [1] in a model that does not batch, fed and answered as scalars', async () => {
  repo.onnx('scalar', 1, scalarModel(3));  // no config: auto-completed
  repo.onnx('declared', 1, scalarModel(5));
  repo.config('declared', `max_batch_size: 0
    input [ { name: "X", data_type: TYPE_FP32, dims: [ 1 ] }, { name: "W", data_type: TYPE_FP32, dims: [ 1, 1 ] },
      { name: "V", data_type: TYPE_FP32, dims: [ 3 ] } ]
    output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]`);
  repo.onnx('wrong', 1, scalarModel(1));
  repo.config('wrong', `input [ { name: "X", data_type: TYPE_FP32, dims: [ 2 ] }, { name: "W", data_type: TYPE_FP32, dims: [ 1 ] },
      { name: "V", data_type: TYPE_FP32, dims: [ 3 ] } ]
    output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]`);
  const { triton } = await startRepoTriton(repo.root);
  try {
    const json = toModelConfigJson(triton.model('scalar').config);
    expect(json.max_batch_size).toBe(0);
    expect(json.input).toEqual([
      expect.objectContaining({ name: 'X', dims: [1] }), expect.objectContaining({ name: 'W', dims: [1] }),
      expect.objectContaining({ name: 'V', dims: [3] }),
    ]);
    expect((json.input as { reshape?: unknown }[]).every((t) => t.reshape === undefined)).toBe(true);  // as Triton prints it
    const v = new NDArray('FP32', [3], Float32Array.of(1, 2, 3));
    const out = await triton.infer('scalar', { X: new NDArray('FP32', [1], Float32Array.of(2)), W: new NDArray('FP32', [1], Float32Array.of(0.5)), V: v });
    expect([out.Y.shape, Array.from(out.Y.data as Float32Array)]).toEqual([[1], [6.5]]);
    expect(Array.from(out.V2.data as Float32Array)).toEqual([1, 2, 3]);
    const declared = await triton.infer('declared', {
      X: new NDArray('FP32', [1], Float32Array.of(2)), W: new NDArray('FP32', [1, 1], Float32Array.of(1)), V: v,
    });
    expect([declared.Y.shape, Array.from(declared.Y.data as Float32Array)]).toEqual([[1], [11]]);
    expect(triton.repositoryIndex().find((e) => e.name === 'wrong')).toMatchObject({
      state: 'UNAVAILABLE',
      reason: expect.stringContaining("unable to load model 'wrong', scalar tensor 'X', should only provide 1 in the model " +
        "configuration when the model doesn't support batching. Model configuration provided: [2]."),
    });
  } finally {
    await triton.stop();
  }
});

describe('a config that contradicts the model fails the load with INVALID_ARG naming the tensor', () => {
  test.each([
    ['a wrong data_type',
      'input [ { name: "INPUT0", data_type: TYPE_INT32, dims: [ 3 ] } ]',
      "unable to load model 'm', configuration expects datatype TYPE_INT32 for input 'INPUT0', model provides TYPE_FP32"],
    ['wrong dims',
      'input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 5 ] } ]',
      "model 'm', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,3]) but the model configuration specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,5])"],
    ['a wrong rank',
      'input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 3, 1 ] } ]',
      "model 'm', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,3]) but the model configuration specifies 3 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,3,1])"],
    ['an input the model does not have',
      'input [ { name: "IMAGE", data_type: TYPE_FP32, dims: [ 3 ] } ]',
      "unexpected inference input 'IMAGE', allowed inputs are: INPUT0"],
    ['an output the model does not have',
      'output [ { name: "SCORES", data_type: TYPE_FP32, dims: [ 3 ] } ]',
      "unexpected inference output 'SCORES', allowed outputs are: OUTPUT0"],
    ['a wrong output data_type',
      'output [ { name: "OUTPUT0", data_type: TYPE_FP64, dims: [ 3 ] } ]',
      "unable to load model 'm', configuration expects datatype TYPE_FP64 for output 'OUTPUT0', model provides TYPE_FP32"],
  ])('%s', async (_what, lines, message) => {
    repo.onnx('m', 1, identityModel('FP32', [3]));
    repo.config('m', `max_batch_size: 4\n${lines}`);
    repo.onnx('good', 1, identityModel('FP32', [3]));
    const { triton } = await explicit();
    try {
      const err = await expectRejects(triton.loadModel('m'), 'INVALID_ARG', message);
      expect(err.message).toContain("'m'");
      expect(triton.repositoryIndex().find((e) => e.name === 'm')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringContaining(message) });
      // The server still loads and serves other models.
      await triton.loadModel('good');
      const x = new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3]));
      expect((await triton.infer('good', { INPUT0: x })).OUTPUT0.data).toEqual(x.data);
    } finally {
      await triton.stop();
    }
  });

  test('max_batch_size > 0 for a model whose first dimension is fixed', async () => {
    repo.onnx('m', 1, fixedIdentityModel());
    repo.config('m', 'max_batch_size: 4');
    const { triton } = await explicit();
    try {
      await expectRejects(triton.loadModel('m'), 'INVALID_ARG', "autofill failed for model 'm': model does not support batching while non-zero max_batch_size is specified");
    } finally {
      await triton.stop();
    }
  });

  test('a config that leaves out an input the model requires', async () => {
    repo.onnx('m', 1, addSubModel('FP32', [3]));
    repo.config('m', `max_batch_size: 4
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 3 ] } ]`);
    const { triton } = await explicit();
    try {
      await expectRejects(triton.loadModel('m'), 'INVALID_ARG', "unable to load model 'm', configuration expects 1 inputs, model provides 2");
    } finally {
      await triton.stop();
    }
  });
});

test('sequence_batching: state and control tensors of the ONNX model are neither auto-completed nor required', async () => {
  repo.onnx('acc', 1, addSubModel('FP32', [3]));
  // INPUT1 is the state the batcher feeds; OUTPUT0 (INPUT0 + INPUT1) its next value.
  repo.config('acc', 'sequence_batching { state [ { input_name: "INPUT1" output_name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 3 ] } ] }');
  const { triton } = await startRepoTriton(repo.root);
  try {
    const json = toModelConfigJson(triton.model('acc').config);
    expect(json).toMatchObject({
      max_batch_size: 4,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [3] }],
      output: [{ name: 'OUTPUT1', data_type: 'TYPE_FP32', dims: [3] }],
      sequence_batching: { state: [{ input_name: 'INPUT1', output_name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [3] }] },
    });
    expect((json.input as unknown[]).length).toBe(1);
    expect(json.dynamic_batching).toBeUndefined();
  } finally {
    await triton.stop();
  }
});

test('sequence_batching: a state whose datatype is not the ONNX tensor\'s fails the load', async () => {
  repo.onnx('acc', 1, addSubModel('FP32', [3]));
  repo.config('acc', 'sequence_batching { state [ { input_name: "INPUT1" output_name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 3 ] } ] }');
  const served = await explicit();
  try {
    await expectRejects(served.triton.loadModel('acc'), 'INVALID_ARG',
      "model 'acc': sequence_batching state input_name 'INPUT1' is TYPE_INT32, but the ONNX model's input 'INPUT1' is TYPE_FP32");
  } finally {
    await served.triton.stop();
  }
});
