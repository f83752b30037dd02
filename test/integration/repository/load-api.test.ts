/**
 * The repository load API with overrides (Triton's `config` and `file:<path>` parameters): a
 * JSON config replaces config.pbtxt for that load; files sent with the request become the
 * model's directory. Paths in `file:` keys cannot leave that directory, and the directory is
 * removed again when the model is unloaded or replaced.
 */
import { existsSync, readdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NDArray } from '../../../ts/tensor';
import { expectRejects } from '../helpers';
import { TempRepo, addConstModel, startRepoTriton, type Served } from './repo-helpers';

let repo: TempRepo;
let served: Served;

beforeEach(async () => {
  repo = new TempRepo('loadapi');
  repo.onnx('m', 1, addConstModel(1));
  repo.config('m', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
  served = await startRepoTriton(repo.root, { controlMode: 'explicit', loadModels: ['m'] });
});

afterEach(async () => {
  await served.triton.stop();
  repo.cleanup();
});

const x = (): NDArray => new NDArray('FP32', [1, 4], new Float32Array([1, 2, 3, 4]));

async function added(name: string): Promise<number> {
  return ((await served.triton.infer(name, { INPUT0: x() })).OUTPUT0.data as Float32Array)[0] - 1;
}

function overrideRepositories(): string[] {
  return readdirSync(os.tmpdir()).filter((n) => n.startsWith('infernode-override-')).map((n) => path.join(os.tmpdir(), n));
}

describe('config', () => {
  test('a JSON config replaces config.pbtxt for that load; a plain load reads the file again', async () => {
    const { triton } = served;
    await triton.loadModel('m', { config: JSON.stringify({ max_batch_size: 8, instance_group: [{ count: 2, kind: 'KIND_CPU' }] }) });
    expect(triton.model('m').config.maxBatchSize).toBe(8);
    expect(triton.model('m').config.instanceGroup).toEqual([expect.objectContaining({ count: 2, kind: 'KIND_CPU' })]);
    expect(await added('m')).toBe(1);
    await triton.loadModel('m');
    expect(triton.model('m').config.maxBatchSize).toBe(4);
  });

  test('a config with sequence_batching loads (no longer UNSUPPORTED) and is served back with its defaults', async () => {
    await served.triton.loadModel('m', { config: JSON.stringify({ max_batch_size: 4, sequence_batching: { oldest: {} } }) });
    const config = served.triton.model('m').config;
    expect(config.dynamicBatching).toBeNull();
    expect(config.sequenceBatching).toMatchObject({ strategy: 'oldest', maxSequenceIdleMicroseconds: 1_000_000, preferredBatchSize: [4] });
  });

  test('an int32 field given as a decimal string is accepted, as protobuf JSON (Triton\'s model-control example)', async () => {
    await served.triton.loadModel('m', { config: '{"max_batch_size":"16"}' });
    expect(served.triton.model('m').config.maxBatchSize).toBe(16);
  });

  test('camelCase field names and lower-case enums are accepted as in protobuf JSON', async () => {
    await served.triton.loadModel('m', { config: JSON.stringify({ maxBatchSize: 2, instanceGroup: [{ kind: 'KIND_CPU', count: 1 }] }) });
    expect(served.triton.model('m').config.maxBatchSize).toBe(2);
  });

  test.each([
    ['text that is not JSON', '{max_batch_size: 2', "failed to load 'm', the config parameter is not valid JSON"],
    // The malformed override of Triton's simple_http_model_control.py example.
    ['Triton example\'s wrong format', '"parameters": {"config": {{"max_batch_size": "16"}}}', "failed to load 'm', "],
    ['an unknown field', '{"max_batch_sizes": 2}', 'max_batch_sizes'],
    ['a field of the wrong type', '{"max_batch_size": "lots"}', 'max_batch_size'],
    ['another model\'s name', '{"name": "other"}', "the config names the model 'other', but its directory is 'm'"],
    ['an unsupported feature', '{"instance_group": [{"kind": "KIND_MODEL"}]}', "model 'm': instance_group kind KIND_MODEL is not supported"],
    ['a sequence batcher CORRID without data_type',
      '{"sequence_batching": {"control_input": [{"name": "C", "control": [{"kind": "CONTROL_SEQUENCE_CORRID"}]}]}}',
      'unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types are TYPE_UINT64, TYPE_INT64, ' +
      "TYPE_UINT32, TYPE_INT32 and TYPE_STRING (control input 'C' gives no data_type)"],
    ['a sequence batcher initial state file outside initial_state/',
      '{"sequence_batching": {"state": [{"input_name": "s", "output_name": "t", "data_type": "TYPE_FP32", "dims": [1], ' +
      '"initial_state": [{"name": "i", "data_type": "TYPE_FP32", "dims": [1], "data_file": "../config.pbtxt"}]}]}}',
      "initial_state data_file '../config.pbtxt' must be a relative path inside"],
    // Bounded as request bodies are (ts/json-bounds.ts): 64 MiB of `[0],` took JSON.parse ~13 s.
    ['more than 65,536 JSON arrays', `{"max_batch_size": 4, "x": [${'[0],'.repeat(70_000)}[0]]}`,
      "failed to load 'm', the config parameter holds more than 65536 JSON arrays; at most 65536 are supported"],
    ['more than 65,536 JSON objects', `{"max_batch_size": 4, "x": [${'{},'.repeat(70_000)}{}]}`,
      "failed to load 'm', the config parameter holds more than 65536 JSON objects and object members together; at most " +
      '65536 are supported (a model configuration needs far fewer)'],
    ['a data_type the model contradicts', '{"max_batch_size": 4, "input": [{"name": "INPUT0", "data_type": "TYPE_INT8", "dims": [4]}]}',
      "configuration expects datatype TYPE_INT8 for input 'INPUT0', model provides TYPE_FP32"],
  ])('%s is INVALID_ARG or UNSUPPORTED, and the loaded version keeps serving', async (_what, config, message) => {
    let error: unknown;
    try {
      await served.triton.loadModel('m', { config });
    } catch (err) {
      error = err;
    }
    expect((error as Error).message).toContain(message);
    expect(['INVALID_ARG', 'UNSUPPORTED']).toContain((error as { code: string }).code);
    expect(await added('m')).toBe(1);
    expect(served.triton.model('m').config.maxBatchSize).toBe(4);
  });
});

describe('file: overrides', () => {
  test('the model is served from the files sent, and their directory goes away when the model is unloaded', async () => {
    const { triton } = served;
    const before = new Set(overrideRepositories());
    await triton.loadModel('fresh', {
      config: JSON.stringify({ platform: 'onnxruntime_onnx', max_batch_size: 4 }),
      files: { '1/model.onnx': addConstModel(41) },
    });
    expect(await added('fresh')).toBe(41);
    const dir = triton.model('fresh').config.modelDirectory!;
    expect(before.has(path.dirname(dir))).toBe(false);
    expect(existsSync(path.join(dir, '1', 'model.onnx'))).toBe(true);
    await triton.unloadModel('fresh');
    expect(existsSync(path.dirname(dir))).toBe(false);
  });

  test('files replace a repository model; the next plain load goes back to the repository and removes them', async () => {
    const { triton } = served;
    await triton.loadModel('m', { config: JSON.stringify({ max_batch_size: 4 }), files: { '3/model.onnx': addConstModel(30) } });
    expect(await added('m')).toBe(30);
    expect(triton.repositoryIndex()).toEqual([{ name: 'm', version: '3', state: 'READY', reason: '' }]);
    const dir = triton.model('m').config.modelDirectory!;
    await triton.loadModel('m');
    expect(await added('m')).toBe(1);
    expect(existsSync(path.dirname(dir))).toBe(false);
  });

  test('a JS model sent as files, with files beside it', async () => {
    const config = {
      backend: 'js', max_batch_size: 4,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [4] }],
    };
    await served.triton.loadModel('jsm', {
      config: JSON.stringify(config),
      files: {
        '1/model.js': Buffer.from("const k = require('./lib/k.js'); exports.execute = (rs) => rs.map((r) => ({ OUTPUT0: r.data.INPUT0.data.map((v) => v + k) }));"),
        '1/lib/k.js': Buffer.from('module.exports = 100;'),
      },
    });
    expect(await added('jsm')).toBe(100);
  });

  test('a load that fails removes the files it wrote', async () => {
    const before = new Set(overrideRepositories());
    await expectRejects(served.triton.loadModel('broken', {
      config: JSON.stringify({ platform: 'onnxruntime_onnx', max_batch_size: 4 }),
      files: { '1/model.onnx': Buffer.from('not a model') },
    }), 'INVALID_ARG', /^failed to load 'broken': model 'broken' version 1: .*Protobuf parsing failed/);
    expect(overrideRepositories().filter((d) => !before.has(d))).toEqual([]);
  });

  test('files without a config are refused', async () => {
    await expectRejects(served.triton.loadModel('m', { files: { '1/model.onnx': addConstModel(2) } }),
      'INVALID_ARG', "failed to load 'm', file: parameters need a config parameter");
  });

  // Triton's LocalizeRepoAgent: the path joined to the model directory and normalized must
  // stay inside it ("Invalid file parameter ... must stay within model directory.").
  const ESCAPES = ['1/../../evil.onnx', '../evil.onnx', '/../evil.onnx', '1/../../../tmp/evil.onnx'];
  test.each(ESCAPES)('the path %j, leaving the model directory, is refused with Triton\'s text before anything is written', async (key) => {
    const before = new Set(overrideRepositories());
    await expectRejects(served.triton.loadModel('m', {
      config: '{"max_batch_size": 4}',
      files: { '1/model.onnx': addConstModel(2), [key]: Buffer.from('evil') },
    }), 'INVALID_ARG', `Invalid file parameter 'file:${key}' with normalized path '`);
    expect(overrideRepositories().filter((d) => !before.has(d))).toEqual([]);
    expect(existsSync(path.join(os.tmpdir(), 'evil.onnx'))).toBe(false);
    expect(await added('m')).toBe(1);
  });

  test.each(['1/', '1/..', '.', '1/sub\\..\\..\\evil.onnx', '1/model.onnx\0.txt'])('the path %j, naming no file or holding a backslash or NUL, is refused', async (key) => {
    const before = new Set(overrideRepositories());
    const err = await expectRejects(served.triton.loadModel('m', {
      config: '{"max_batch_size": 4}', files: { '1/model.onnx': addConstModel(2), [key]: Buffer.from('evil') },
    }), 'INVALID_ARG', `file parameter 'file:${key}'`);
    expect(err.message).toMatch(/names a directory, not a file|must not hold a backslash or NUL/);
    expect(overrideRepositories().filter((d) => !before.has(d))).toEqual([]);
  });

  // qa/L0_backend_python/model_control test_valid_model_names sends "file:/1/model.py" and
  // expects 200; labels and warm-up samples live at the model directory's root.
  test('paths Triton accepts: a leading slash, files at the model root (labels, warmup/), paths that normalize inside', async () => {
    const { triton } = served;
    const config = {
      platform: 'onnxruntime_onnx', max_batch_size: 4,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [4], label_filename: 'labels.txt' }],
      model_warmup: [{ name: 'w', batch_size: 1, inputs: { INPUT0: { data_type: 'TYPE_FP32', dims: [4], input_data_file: 'x.bin' } } }],
    };
    await triton.loadModel('sent', {
      config: JSON.stringify(config),
      files: {
        '/1/model.onnx': addConstModel(7), 'labels.txt': Buffer.from('a\nb\nc\nd\n'),
        'warmup/x.bin': Buffer.from(new Float32Array([1, 2, 3, 4]).buffer), '2/../3//./model.onnx': addConstModel(9),
      },
    });
    expect(await added('sent')).toBe(9);
    const dir = triton.model('sent').config.modelDirectory!;
    expect(['1/model.onnx', 'labels.txt', 'warmup/x.bin', '3/model.onnx'].filter((f) => existsSync(path.join(dir, f)))).toHaveLength(4);
    expect(triton.model('sent').config.outputs[0].labels).toEqual(['a', 'b', 'c', 'd']);
  });

  test('a path below a file sent in the same load fails with Triton\'s text', async () => {
    await expectRejects(served.triton.loadModel('m', {
      config: '{"max_batch_size": 4}', files: { '1': Buffer.from('a file'), '1/model.onnx': addConstModel(2) },
    }), 'INVALID_ARG', "Invalid file parameter 'file:1/model.onnx', directory has been created as a file");
  });

  // Triton's simple_grpc_model_control.py sends 'file:' + 256 × 'A' and expects INTERNAL with
  // "failed to poll from model repository" (the name cannot be written).
  test('a file name longer than 255 bytes is INTERNAL with Triton\'s poll text, nothing written', async () => {
    const before = new Set(overrideRepositories());
    const key = 'A'.repeat(256);
    const err = await expectRejects(served.triton.loadModel('m', { config: '{}', files: { [key]: Buffer.from('a') } }),
      'INTERNAL', "failed to load 'm', failed to poll from model repository");
    expect(err.message).toContain('at most 255');
    expect(overrideRepositories().filter((d) => !before.has(d))).toEqual([]);
  });
});
