/**
 * Repository configs (ts/repository/config-source.ts): reading config.pbtxt from model
 * directories written here, normalizing the protobuf-JSON config (from a file or the load API)
 * into the normalized config bind() also produces, every normalization rule and every
 * UNSUPPORTED feature; and Triton's JSON form of a config (ts/config/model-config-json.ts) for a
 * bound and a repository model, including the fields perf_analyzer reads.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { errorOf } from './error-of';
import * as os from 'node:os';
import * as path from 'node:path';
import { normalizeBindConfig, type NormalizedModelConfig } from '../../ts/config/normalize';
import { toModelConfigJson } from '../../ts/config/model-config-json';
import { parseJsonExact, stringifyExactJson } from '../../ts/exact-json';
import { TimeoutAction, type ModelConfig } from '../../ts/config/types';
import type { RawModelConfig } from '../../ts/repository/autocomplete';
import type { ModelDirectory } from '../../ts/repository/layout';
import { normalizeRawConfig, readRawConfig } from '../../ts/repository/config-source';

let repo: string;

beforeEach(() => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-config-'));
});

afterEach(() => {
  rmSync(repo, { recursive: true, force: true });
});

/** Writes `<repo>/<name>/` with an optional config.pbtxt and extra files (paths relative to the model directory). */
function modelDir(name: string, pbtxt?: string, files: Record<string, string | Buffer> = {}): ModelDirectory {
  const dir = path.join(repo, name);
  mkdirSync(path.join(dir, '1'), { recursive: true });
  if (pbtxt !== undefined) writeFileSync(path.join(dir, 'config.pbtxt'), pbtxt);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  return { name, repository: repo, dir };
}

function normalizeDir(dir: ModelDirectory, raw: RawModelConfig = readRawConfig(dir)): NormalizedModelConfig {
  return normalizeRawConfig(raw, { name: dir.name, version: 1, source: path.join(dir.dir, 'config.pbtxt') });
}

/** Normalizes a config.pbtxt of model `m`. */
function fromPbtxt(text: string, files: Record<string, string | Buffer> = {}): NormalizedModelConfig {
  return normalizeDir(modelDir('m', text, files));
}

function expectError(fn: () => unknown, code: string, message: string): void {
  const err = errorOf(fn);
  expect({ code: err.code, message: err.message }).toEqual({ code, message });
}

const IO = `
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
output [ { name: "y" data_type: TYPE_STRING dims: [ 1 ] } ]
`;
const DEFAULT_POLICY = { timeoutAction: TimeoutAction.REJECT, defaultTimeoutMicroseconds: 0, allowTimeoutOverride: false, maxQueueSize: 0 };

describe('readRawConfig', () => {
  test('no config.pbtxt → {} (auto-complete fills it)', () => {
    expect(readRawConfig(modelDir('m'))).toEqual({});
  });

  test('parses config.pbtxt to protobuf-JSON form', () => {
    expect(readRawConfig(modelDir('m', 'name: "m"\nmax_batch_size: 4\ninstance_group { kind: KIND_CPU }'))).toEqual({
      name: 'm', max_batch_size: 4, instance_group: [{ kind: 'KIND_CPU' }],
    });
  });

  test('a name other than the directory name is INVALID_ARG; an empty name is no name', () => {
    const file = path.join(repo, 'm', 'config.pbtxt');
    expectError(() => readRawConfig(modelDir('m', 'name: "other"')), 'INVALID_ARG',
      `${file}: the config names the model 'other', but its directory is 'm' (they must match)`);
    expect(readRawConfig(modelDir('n', 'name: ""'))).toEqual({ name: '' });
  });

  test('syntax errors name the file, line and column', () => {
    const file = path.join(repo, 'm', 'config.pbtxt');
    expectError(() => readRawConfig(modelDir('m', 'max_batch_size: 4\ninput { dims: [ 1 }')), 'INVALID_ARG',
      `${file}:2:19: expected ',' or ']' in the list of 'dims', found '}'`);
  });
});

describe('normalizeRawConfig', () => {
  test('a dynamic-batching ONNX config, every normalized field', () => {
    const config = fromPbtxt(`name: "m"
backend: "onnxruntime"
max_batch_size: 32
${IO}
dynamic_batching {
  preferred_batch_size: [ 16, 8 ]
  max_queue_delay_microseconds: 100
}
instance_group [ { count: 2 kind: KIND_GPU } ]
`);
    expect(config).toEqual({
      name: 'm',
      version: 1,
      backend: 'onnxruntime',
      maxBatchSize: 32,
      inputs: [{ name: 'x', dtype: 'FP32', dims: [-1, 3], optional: false, allowRaggedBatch: false, format: 'FORMAT_NONE', isShapeTensor: false, isNonLinearFormatIo: false }],
      outputs: [{ name: 'y', dtype: 'BYTES', dims: [1], optional: false, allowRaggedBatch: false, labelFilename: '', isShapeTensor: false, isNonLinearFormatIo: false }],
      dynamicBatching: {
        preferredBatchSize: [8, 16], maxQueueDelayMicroseconds: 100, preserveOrdering: false, priorityLevels: 0, defaultPriorityLevel: 0,
        defaultQueuePolicy: DEFAULT_POLICY, priorityQueuePolicy: {},
      },
      instanceGroup: [{ name: 'm_0', kind: 'KIND_GPU', count: 2, gpus: [] }],
      responseCache: false,
      decoupled: false,
      modelWarmup: [],
      maxQueueSizeHardLimit: 65536,
      platform: 'onnxruntime_onnx',
      runtime: '',
      versionPolicy: { kind: 'latest', numVersions: 1 },
      defaultModelFilename: '',
      parameters: {},
      ccModelFilenames: {},
      metricTags: {},
      modelDirectory: path.join(repo, 'm'),
    });
  });

  test('max_batch_size 0 (or absent) → no batching, shapes exactly dims', () => {
    const config = fromPbtxt(`max_batch_size: 0\n${IO}`);
    expect([config.maxBatchSize, config.dynamicBatching, config.inputs[0].dims]).toEqual([0, null, [-1, 3]]);
    expect(fromPbtxt(IO).maxBatchSize).toBe(0);
  });

  test('dynamic batching needs max_batch_size >= 1', () => {
    expectError(() => fromPbtxt(`${IO}\ndynamic_batching { }`), 'INVALID_ARG',
      "model 'm': dynamic_batching needs max_batch_size >= 1, but max_batch_size is 0 (the model does not batch)");
  });

  test('negative max_batch_size is INVALID_ARG', () => {
    expectError(() => fromPbtxt(`max_batch_size: -1\n${IO}`), 'INVALID_ARG', "model 'm': max_batch_size must be >= 0, got -1");
  });

  test('dynamic_batching {} → preferred batch size [max_batch_size]', () => {
    expect(fromPbtxt(`max_batch_size: 6\n${IO}\ndynamic_batching { }`).dynamicBatching?.preferredBatchSize).toEqual([6]);
  });

  test('priority levels and per-level queue policies (uint64 keys 1..priority_levels)', () => {
    const config = fromPbtxt(`max_batch_size: 8\n${IO}
dynamic_batching {
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy { max_queue_size: 100 }
  priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 5000 allow_timeout_override: true max_queue_size: 10 } }
  priority_queue_policy { key: 3 value { default_timeout_microseconds: 1 } }
}`);
    expect(config.dynamicBatching).toEqual({
      preferredBatchSize: [8], maxQueueDelayMicroseconds: 0, preserveOrdering: false, priorityLevels: 3, defaultPriorityLevel: 2,
      defaultQueuePolicy: { ...DEFAULT_POLICY, maxQueueSize: 100 },
      priorityQueuePolicy: {
        1: { timeoutAction: TimeoutAction.DELAY, defaultTimeoutMicroseconds: 5000, allowTimeoutOverride: true, maxQueueSize: 10 },
        3: { ...DEFAULT_POLICY, defaultTimeoutMicroseconds: 1 },
      },
    });
  });

  test.each([
    ['a policy key beyond priority_levels', 'priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value { } }',
      "model 'm': dynamic_batching.priority_queue_policy level 3 must be in 1..2"],
    ['policy key 0', 'priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 0 value { } }',
      "model 'm': dynamic_batching.priority_queue_policy level 0 must be in 1..2"],
    ['no default level with priority levels', 'priority_levels: 2',
      "model 'm': dynamic_batching.default_priority_level must be in 1..2 when dynamic_batching.priority_levels is set"],
    ['default level above priority_levels', 'priority_levels: 2 default_priority_level: 3',
      "model 'm': dynamic_batching.default_priority_level 3 exceeds dynamic_batching.priority_levels 2"],
    ['preferred size above max_batch_size', 'preferred_batch_size: [ 4, 16 ]', "model 'm': preferred batch size 16 must be in 1..8"],
    ['preferred size 0', 'preferred_batch_size: 0', "model 'm': preferred batch size 0 must be in 1..8"],
    ['preserve_ordering with priority levels', 'preserve_ordering: true priority_levels: 2 default_priority_level: 1',
      "model 'm': dynamic_batching.preserve_ordering allows only one priority level, but priority_levels is 2"],
    ['preserve_ordering with DELAY', 'preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 10 }',
      "model 'm': a queue policy cannot DELAY timed-out requests when dynamic_batching.preserve_ordering is true"],
  ])('batcher: %s is INVALID_ARG', (_, batcher, message) => {
    expectError(() => fromPbtxt(`max_batch_size: 8\n${IO}\ndynamic_batching { ${batcher} }`), 'INVALID_ARG', message);
  });

  test("Triton's qa/L0_config_json max_priority_level.pbtxt: uint64 values at 2^64 - 1 and past 2^32 load, and print back exactly", () => {
    const config = fromPbtxt(`max_batch_size: 1\n${IO}
dynamic_batching:
{
    priority_levels: 18446744073709551615
    default_priority_level: 4294967295
    max_queue_delay_microseconds: 18446744073709551615
    priority_queue_policy: [
       {key: 4294967296
        value: {
          timeout_action: REJECT
          default_timeout_microseconds: 18446744073709551615
          allow_timeout_override: true
          max_queue_size: 10
       }
    }
]
}`);
    const max = 2n ** 64n - 1n;
    expect(config.dynamicBatching).toEqual({
      preferredBatchSize: [1], maxQueueDelayMicroseconds: max, preserveOrdering: false, priorityLevels: max, defaultPriorityLevel: 4294967295,
      defaultQueuePolicy: DEFAULT_POLICY,
      priorityQueuePolicy: {
        4294967296: { timeoutAction: TimeoutAction.REJECT, defaultTimeoutMicroseconds: max, allowTimeoutOverride: true, maxQueueSize: 10 },
      },
    });
    const json = toModelConfigJson(config);
    expect(json.dynamic_batching).toMatchObject({ priority_levels: max, default_priority_level: 4294967295, max_queue_delay_microseconds: max });
    // What L0_config_json greps in the /config body.
    const text = stringifyExactJson(json);
    expect(text).toContain('"priority_levels":18446744073709551615,');
    expect(text).toContain('"default_priority_level":4294967295,');
    expect(text).toContain('"4294967296":{"timeout_action":"REJECT","default_timeout_microseconds":18446744073709551615,' +
      '"allow_timeout_override":true,"max_queue_size":10}');
    // ... and that body loads back (the load API reads its JSON exactly) into the same config.
    const dir: ModelDirectory = { name: 'm', repository: repo, dir: path.join(repo, 'm') };
    expect(normalizeDir(dir, parseJsonExact(text) as RawModelConfig).dynamicBatching).toEqual(config.dynamicBatching);
  });

  test('sequence batcher durations up to 2^64 - 1 µs are kept exactly', () => {
    const config = fromPbtxt(`max_batch_size: 2\n${IO}
sequence_batching { max_sequence_idle_microseconds: 18446744073709551615 oldest { max_queue_delay_microseconds: 9007199254740993 } }`);
    expect(config.sequenceBatching).toMatchObject({ maxSequenceIdleMicroseconds: 2n ** 64n - 1n, maxQueueDelayMicroseconds: 9007199254740993n });
    expect(toModelConfigJson(config).sequence_batching).toMatchObject({
      max_sequence_idle_microseconds: 2n ** 64n - 1n, oldest: { max_queue_delay_microseconds: 9007199254740993n },
    });
  });

  test.each([
    ['an input dim', 'max_batch_size: 1\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 9007199254740992 ] } ]',
      "model 'm': input[0].dims[1] is 9007199254740992, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
    ['a negative output dim', 'output [ { name: "y" data_type: TYPE_FP32 dims: [ -9223372036854775808 ] } ]',
      "model 'm': output[0].dims[0] is -9223372036854775808, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
    ['a reshape dim', 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ 9223372036854775807 ] } } ]',
      "model 'm': input[0].reshape.shape[0] is 9223372036854775807, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
    ['a sequence state dim', 'sequence_batching { state { input_name: "s" output_name: "t" data_type: TYPE_FP32 dims: [ 9007199254740993 ] } }',
      "model 'm': sequence_batching.state[0].dims[0] is 9007199254740993, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
    ['an initial state dim', 'sequence_batching { state { input_name: "s" output_name: "t" data_type: TYPE_FP32 dims: [ -1 ] initial_state { name: "i" data_type: TYPE_FP32 dims: [ 9007199254740993 ] zero_data: true } } }',
      "model 'm': sequence_batching.state[0].initial_state[0].dims[0] is 9007199254740993, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
    ['a warm-up dim', 'model_warmup { name: "w" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 9007199254740993 ] zero_data: true } } }',
      "model 'm': model_warmup[0].inputs[\"x\"].dims[0] is 9007199254740993, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
    ['a specific version', 'version_policy { specific { versions: [ 1, 9007199254740993 ] } }',
      "model 'm': version_policy.specific.versions[1] is 9007199254740993, which no version can have: versions are numbered from 1 to 9007199254740991 (2^53 - 1)"],
    ['an ensemble step version', 'platform: "ensemble" ensemble_scheduling { step [ { model_name: "a" model_version: 18446744073 } , { model_name: "b" model_version: 9223372036854775807 } ] }',
      "model 'm': ensemble_scheduling.step[1].model_version is 9223372036854775807, which no version can have: a step's model_version is -1 (the latest version) or a version from 1 to 9007199254740991 (2^53 - 1)"],
  ])('64-bit values no model can use are INVALID_ARG naming the model, field, value and range: %s', (_, text, message) => {
    expectError(() => fromPbtxt(text), 'INVALID_ARG', message);
  });

  test('bind(): uint64 batcher fields take bigints up to 2^64 - 1; a JS number past 2^53 - 1 is refused (it may be rounded)', () => {
    const bind = (config: ModelConfig): NormalizedModelConfig => normalizeBindConfig({
      modelName: 'b', inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      instanceCount: 1, config: { maxBatchSize: 4, ...config },
    });
    const max = 2n ** 64n - 1n;
    expect(bind({
      batcher: {
        priorityLevels: max, defaultPriorityLevel: 2n ** 32n, maxQueueDelayMicroseconds: max,
        defaultQueuePolicy: { defaultTimeoutMicroseconds: max }, priorityQueuePolicy: { [String(2n ** 40n)]: { maxQueueSize: 3 }, 2: {} },
      },
    }).dynamicBatching).toEqual({
      preferredBatchSize: [4], maxQueueDelayMicroseconds: max, preserveOrdering: false, priorityLevels: max, defaultPriorityLevel: 2 ** 32,
      defaultQueuePolicy: { ...DEFAULT_POLICY, defaultTimeoutMicroseconds: max },
      priorityQueuePolicy: { 2: DEFAULT_POLICY, 1099511627776: { ...DEFAULT_POLICY, maxQueueSize: 3 } },
    });
    expect(bind({ sequenceBatcher: { maxSequenceIdleMicroseconds: max } }).sequenceBatching?.maxSequenceIdleMicroseconds).toBe(max);
    expectError(() => bind({ batcher: { priorityLevels: 2 ** 60, defaultPriorityLevel: 1 } }), 'INVALID_ARG',
      "model 'b': batcher.priorityLevels is 1152921504606846976, beyond 2^53 - 1 (9007199254740991), where a JavaScript number " +
      'may already have been rounded; give it as a bigint (up to 18446744073709551615n)');
    expectError(() => bind({ batcher: { maxQueueDelayMicroseconds: 2n ** 64n } }), 'INVALID_ARG',
      "model 'b': batcher.maxQueueDelayMicroseconds must be at most 18446744073709551615 (2^64 - 1, an unsigned 64-bit integer), " +
      'got 18446744073709551616');
    expectError(() => bind({ batcher: { defaultQueuePolicy: { defaultTimeoutMicroseconds: -1n } } }), 'INVALID_ARG',
      "model 'b': defaultQueuePolicy.defaultTimeoutMicroseconds must be an integer >= 0, got -1");
    expectError(() => bind({ batcher: { priorityLevels: 2n ** 40n, defaultPriorityLevel: 1, priorityQueuePolicy: { [String(2n ** 40n + 1n)]: {} } } }),
      'INVALID_ARG', "model 'b': priorityQueuePolicy level 1099511627777 must be in 1..1099511627776");
  });

  test('dims: ints, -1 variable; TYPE_STRING ↔ BYTES; every datatype', () => {
    const types = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'STRING', 'BF16'];
    const inputs = types.map((t, i) => `input { name: "i${i}" data_type: TYPE_${t} dims: [ -1, ${i + 1} ] }`).join('\n');
    const config = fromPbtxt(`${inputs}\noutput { name: "o" data_type: TYPE_FP32 dims: 1 }`);
    expect(config.inputs.map((t) => [t.dtype, t.dims])).toEqual(types.map((t, i) => [t === 'STRING' ? 'BYTES' : t, [-1, i + 1]]));
  });

  test('an empty dims list is a per-row scalar when the model batches', () => {
    expect(fromPbtxt('max_batch_size: 4 input { name: "x" data_type: TYPE_INT32 dims: [ ] } output { name: "y" data_type: TYPE_INT32 }').inputs[0].dims).toEqual([]);
  });

  test('reshape, format, optional, ragged batching and label files are carried', () => {
    const config = fromPbtxt(`max_batch_size: 2
input { name: "img" data_type: TYPE_UINT8 format: FORMAT_NHWC dims: [ 2, 2, 3 ] reshape { shape: [ 12 ] } optional: true allow_ragged_batch: true }
input { name: "s" data_type: TYPE_INT32 dims: [ 1 ] reshape { shape: [ ] } }
input { name: "v" data_type: TYPE_INT32 dims: [ 2, -1, 3 ] reshape { shape: [ 1, 2, -1, 3, 1 ] } }
output { name: "cls" data_type: TYPE_FP32 dims: [ 3 ] label_filename: "labels.txt" }`, { 'labels.txt': 'cat\r\ndog\nbird\n' });
    expect(config.inputs).toEqual([
      { name: 'img', dtype: 'UINT8', dims: [2, 2, 3], optional: true, allowRaggedBatch: true, format: 'FORMAT_NHWC', reshape: [12], isShapeTensor: false, isNonLinearFormatIo: false },
      { name: 's', dtype: 'INT32', dims: [1], optional: false, allowRaggedBatch: false, format: 'FORMAT_NONE', reshape: [], isShapeTensor: false, isNonLinearFormatIo: false },
      { name: 'v', dtype: 'INT32', dims: [2, -1, 3], optional: false, allowRaggedBatch: false, format: 'FORMAT_NONE', reshape: [1, 2, -1, 3, 1], isShapeTensor: false, isNonLinearFormatIo: false },
    ]);
    expect(config.outputs).toEqual([{
      name: 'cls', dtype: 'FP32', dims: [3], optional: false, allowRaggedBatch: false, labelFilename: 'labels.txt', labels: ['cat', 'dog', 'bird'],
      isShapeTensor: false, isNonLinearFormatIo: false,
    }]);
  });

  test.each([
    ['a tensor without a name', 'input { data_type: TYPE_FP32 dims: 1 }', "model 'm': input #0 must specify 'name'"],
    ['a tensor without a data_type', 'input { name: "x" dims: 1 }', "model 'm': input 'x' must specify 'data_type'"],
    ['TYPE_INVALID', 'output { name: "y" data_type: TYPE_INVALID dims: 1 }', "model 'm': output 'y' must specify 'data_type'"],
    ['no dims in a model that does not batch', 'input { name: "x" data_type: TYPE_FP32 }',
      "model 'm': input 'x' must specify 'dims' (use dims: [ 1 ] with reshape: { shape: [ ] } for a scalar)"],
    ['a zero dim', 'input { name: "x" data_type: TYPE_FP32 dims: [ 2, 0 ] }',
      "model 'm': input 'x' dims [2, 0]: each dimension must be an integer >= 1, or -1 for a variable-size dimension"],
    ['a dim below -1', 'output { name: "y" data_type: TYPE_FP32 dims: [ -2 ] }',
      "model 'm': output 'y' dims [-2]: each dimension must be an integer >= 1, or -1 for a variable-size dimension"],
    ['a reshape of another size', 'input { name: "x" data_type: TYPE_FP32 dims: [ 2, 3 ] reshape { shape: [ 5 ] } }',
      "model 'm': input 'x' has different sizes for dims [2, 3] and reshape [5]"],
    ['a reshape with other variable runs', 'input { name: "x" data_type: TYPE_FP32 dims: [ 2, -1, 3 ] reshape { shape: [ 3, -1, 2 ] } }',
      "model 'm': input 'x' dims [2, -1, 3] and reshape [3, -1, 2] do not split into the same fixed-size runs around their variable-size dimensions"],
    ['an empty reshape in a model that does not batch', 'input { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape { } }',
      "model 'm': input 'x' cannot have an empty reshape in a model that does not batch"],
    ['NCHW without 3 dims', 'input { name: "x" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 4 ] }',
      "model 'm': input 'x' has format FORMAT_NCHW, which requires 3 dims, got [3, 4]"],
    ['a shape tensor', 'input { name: "x" data_type: TYPE_INT32 dims: 2 is_shape_tensor: true }',
      "model 'm': input 'x': shape tensors (is_shape_tensor) are only supported for TensorRT models, which infernode does not serve"],
    ['duplicate input names', 'input { name: "x" data_type: TYPE_FP32 dims: 1 } input { name: "x" data_type: TYPE_FP32 dims: 1 }',
      "model 'm': duplicate input name 'x'"],
    ['a missing label file', 'output { name: "y" data_type: TYPE_FP32 dims: 1 label_filename: "labels.txt" }',
      `model 'm': output 'y' label_filename 'labels.txt' is not a file in ${path.join('<repo>', 'm')}`],
    ['a label file outside the model', 'output { name: "y" data_type: TYPE_FP32 dims: 1 label_filename: "../x.txt" }',
      `model 'm': output 'y' label_filename '../x.txt' must be a relative path inside ${path.join('<repo>', 'm')}`],
  ])('tensors: %s is INVALID_ARG', (_, text, message) => {
    const err = errorOf(() => fromPbtxt(text));
    expect({ code: err.code, message: err.message.split(repo).join('<repo>') }).toEqual({ code: 'INVALID_ARG', message });
  });

  describe('instance groups', () => {
    test('none → one group named after the model, count 1, KIND_AUTO (ONNX) or KIND_CPU (JS)', () => {
      expect(fromPbtxt(`backend: "onnxruntime"\n${IO}`).instanceGroup).toEqual([{ name: 'm', kind: 'KIND_AUTO', count: 1, gpus: [] }]);
      expect(fromPbtxt(`backend: "js"\n${IO}`).instanceGroup).toEqual([{ name: 'm', kind: 'KIND_CPU', count: 1, gpus: [] }]);
    });

    test('several groups: names, count < 1 → 1, the counts native code sums, tuning hints carried', () => {
      const config = fromPbtxt(`${IO}
instance_group [
  { count: 3 kind: KIND_CPU },
  { name: "gpu" count: 0 kind: KIND_GPU gpus: [ 0, 1 ] profile: [ "0" ] passive: false host_policy: "p"
    rate_limiter { resources [ { name: "R" count: 2 } ] priority: 1 } secondary_devices { kind: KIND_NVDLA device_id: 0 } },
  { count: 1 }
]`);
      expect(config.instanceGroup).toEqual([
        { name: 'm_0', kind: 'KIND_CPU', count: 3, gpus: [] },
        {
          name: 'gpu', kind: 'KIND_GPU', count: 1, gpus: [0, 1], profile: ['0'], passive: false, hostPolicy: 'p',
          rateLimiter: { resources: [{ name: 'R', count: 2 }], priority: 1 }, secondaryDevices: [{ kind: 'KIND_NVDLA', device_id: 0 }],
        },
        { name: 'm_2', kind: 'KIND_AUTO', count: 1, gpus: [] },
      ]);
      expect(config.instanceGroup.reduce((n, g) => n + g.count, 0)).toBe(5);
    });

    test('KIND_AUTO of a JS model runs on the CPU', () => {
      expect(fromPbtxt(`backend: "js"\n${IO}\ninstance_group { count: 2 }`).instanceGroup).toEqual([{ name: 'm_0', kind: 'KIND_CPU', count: 2, gpus: [] }]);
    });

    test('KIND_CPU listing GPUs is INVALID_ARG; KIND_MODEL is UNSUPPORTED', () => {
      expectError(() => fromPbtxt(`${IO}\ninstance_group { kind: KIND_CPU gpus: [ 0 ] }`), 'INVALID_ARG',
        'instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs ([0]); remove gpus, or use kind KIND_GPU');
      expectError(() => fromPbtxt(`${IO}\ninstance_group { kind: KIND_MODEL }`), 'UNSUPPORTED',
        "model 'm': instance_group kind KIND_MODEL is not supported by infernode yet");
    });
  });

  describe('version policy', () => {
    test.each([
      ['', { kind: 'latest', numVersions: 1 }],
      ['version_policy { latest { num_versions: 3 } }', { kind: 'latest', numVersions: 3 }],
      ['version_policy { all { } }', { kind: 'all' }],
      ['version_policy { specific { versions: [ 1, 4 ] } }', { kind: 'specific', versions: [1, 4] }],
    ])('%s', (text, policy) => {
      expect(fromPbtxt(`${IO}\n${text}`).versionPolicy).toEqual(policy);
    });

    test('latest 0 and specific versions < 1 are INVALID_ARG', () => {
      expectError(() => fromPbtxt(`${IO}\nversion_policy { latest { } }`), 'INVALID_ARG', "model 'm': version_policy.latest.num_versions must be >= 1, got 0");
      expectError(() => fromPbtxt(`${IO}\nversion_policy { specific { versions: [ 0 ] } }`), 'INVALID_ARG',
        "model 'm': version_policy.specific.versions must list versions >= 1, got [0]");
    });
  });

  test('platform and backend fill each other; a mismatched pair is INVALID_ARG', () => {
    const a = fromPbtxt(`platform: "onnxruntime_onnx"\n${IO}`);
    const b = fromPbtxt(`backend: "onnxruntime"\n${IO}`);
    expect([a.platform, a.backend, b.platform, b.backend]).toEqual(['onnxruntime_onnx', 'onnxruntime', 'onnxruntime_onnx', 'onnxruntime']);
    expect([fromPbtxt(`backend: "js"\n${IO}`).platform]).toEqual(['']);
    expectError(() => fromPbtxt(`platform: "tensorrt_plan" backend: "onnxruntime"\n${IO}`), 'INVALID_ARG',
      "model 'm': platform 'tensorrt_plan' and backend 'onnxruntime' do not go together (platform 'tensorrt_plan' is backend 'tensorrt')");
  });

  test('parameters, filenames, tags and tuning hints are accepted and carried', () => {
    const config = fromPbtxt(`${IO}
runtime: "libtriton_onnxruntime.so"
default_model_filename: "net.onnx"
cc_model_filenames { key: "8.0" value: "net80.onnx" }
metric_tags { key: "team" value: "a" }
parameters { key: "intra_op_thread_count" value { string_value: "2" } }
parameters { key: "empty" value { } }
optimization { graph { level: 1 } input_pinned_memory { enable: false } }
model_operations { op_library_filename: "libops.so" }
model_repository_agents { agents { name: "checksum" } }
model_metrics { metric_control { metric_identifier { family: "f" } histogram_options { buckets: [ 1, 2 ] } } }
model_transaction_policy { decoupled: false }
response_cache { enable: false }`);
    expect({
      runtime: config.runtime, defaultModelFilename: config.defaultModelFilename, ccModelFilenames: config.ccModelFilenames,
      metricTags: config.metricTags, parameters: config.parameters, optimization: config.optimization, modelOperations: config.modelOperations,
      modelRepositoryAgents: config.modelRepositoryAgents, modelMetrics: config.modelMetrics, decoupled: config.decoupled, responseCache: config.responseCache,
    }).toEqual({
      runtime: 'libtriton_onnxruntime.so', defaultModelFilename: 'net.onnx', ccModelFilenames: { '8.0': 'net80.onnx' }, metricTags: { team: 'a' },
      parameters: { intra_op_thread_count: '2', empty: '' },
      optimization: { graph: { level: 1 }, input_pinned_memory: { enable: false } },
      modelOperations: { op_library_filename: ['libops.so'] },
      modelRepositoryAgents: { agents: [{ name: 'checksum' }] },
      modelMetrics: { metric_control: [{ metric_identifier: { family: 'f' }, histogram_options: { buckets: [1, 2] } }] },
      decoupled: false, responseCache: false,
    });
  });

  test.each([
    ['batch_input', 'max_batch_size: 4 batch_input { kind: BATCH_ELEMENT_COUNT target_name: "n" data_type: TYPE_INT32 source_input: "x" }',
      "model 'm': batch_input is not supported by infernode yet"],
    ['batch_output', 'max_batch_size: 4 batch_output { target_name: "y" source_input: "x" }', "model 'm': batch_output is not supported by infernode yet"],
  ])('%s is UNSUPPORTED', (_, text, message) => {
    expectError(() => fromPbtxt(`${IO}\n${text}`), 'UNSUPPORTED', message);
  });

  // Ensembles are served (test/integration/ensemble.test.ts); a half-declared one is INVALID_ARG.
  test.each([
    ['ensemble_scheduling without platform', 'ensemble_scheduling { step { model_name: "a" } }',
      "model 'm': ensemble_scheduling needs platform: \"ensemble\", got platform ''"],
    ['platform ensemble without steps', 'platform: "ensemble"', "ensemble 'm': platform 'ensemble' needs ensemble_scheduling { step [...] }"],
    ['instance_group on an ensemble', 'platform: "ensemble" ensemble_scheduling { step { model_name: "a" } } instance_group { count: 1 }',
      "ensemble 'm': instance_group is not allowed on an ensemble (its steps run on their own models' instances); remove it"],
  ])('%s is INVALID_ARG', (_, text, message) => {
    expectError(() => fromPbtxt(`${IO}\n${text}`), 'INVALID_ARG', message);
  });

  test('model_transaction_policy { decoupled: true } makes a decoupled model; the onnxruntime backend refuses it', () => {
    expect(fromPbtxt(`${IO}\nbackend: "js"\nmodel_transaction_policy { decoupled: true }`).decoupled).toBe(true);
    expectError(() => fromPbtxt(`${IO}\nbackend: "onnxruntime"\nmodel_transaction_policy { decoupled: true }`), 'INVALID_ARG',
      "model 'm': model_transaction_policy { decoupled: true } cannot be served by the onnxruntime backend, which produces " +
      'exactly one response per request; remove it, or stream from a JS model (model.js) that calls this model');
  });

  test('response_cache { enable: true } turns the model\'s responseCache on', () => {
    expect(fromPbtxt(`${IO}\nresponse_cache { enable: true }`).responseCache).toBe(true);
    expect(fromPbtxt(IO).responseCache).toBe(false);
  });

  describe('model_warmup', () => {
    const WARMUP_IO = 'max_batch_size: 4 input { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } output { name: "y" data_type: TYPE_FP32 dims: [ 3 ] }';
    const warmup = (body: string): string => `${WARMUP_IO}\nmodel_warmup { ${body} }`;

    test('zero, random and file data map to ModelWarmup; batch 0 samples are skipped; count 0 runs once', () => {
      const config = fromPbtxt(`${WARMUP_IO}
model_warmup { name: "zeros" batch_size: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: false } } count: 3 }
model_warmup { name: "random" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] random_data: true } } }
model_warmup { name: "file" batch_size: 4 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] input_data_file: "sub/x.bin" } } }
model_warmup { name: "skipped" inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } } }`,
      { 'warmup/sub/x.bin': Buffer.alloc(48) });
      expect(config.modelWarmup).toEqual([
        { name: 'zeros', batchSize: 2, count: 3, inputs: { x: { dtype: 'FP32', shape: [3], zeroData: true } } },
        { name: 'random', batchSize: 1, count: 1, inputs: { x: { dtype: 'FP32', shape: [3], randomData: true } } },
        { name: 'file', batchSize: 4, count: 1, inputs: { x: { dtype: 'FP32', shape: [3], inputDataFile: path.join(repo, 'm', 'warmup', 'sub', 'x.bin') } } },
      ]);
    });

    test.each([
      ['a path with ..', 'input_data_file: "../config.pbtxt"', "input_data_file '../config.pbtxt' must be a relative path inside <repo>/m/warmup"],
      ['an absolute path', 'input_data_file: "/etc/passwd"', "input_data_file '/etc/passwd' must be a relative path inside <repo>/m/warmup"],
      ['a missing file', 'input_data_file: "none.bin"', "input_data_file 'none.bin' is not a file in <repo>/m/warmup"],
      ['a symbolic link out of warmup/', 'input_data_file: "link.bin"', "input_data_file 'link.bin' leads outside <repo>/m/warmup"],
    ])('%s is refused', (_, source, problem) => {
      const dir = modelDir('m', warmup(`name: "w" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] ${source} } }`),
        { 'secret.bin': Buffer.alloc(12), 'warmup/ok.bin': Buffer.alloc(12) });
      symlinkSync(path.join(dir.dir, 'secret.bin'), path.join(dir.dir, 'warmup', 'link.bin'));
      const err = errorOf(() => normalizeDir(dir));
      expect({ code: err.code, message: err.message.split(repo).join('<repo>') })
        .toEqual({ code: 'INVALID_ARG', message: `model 'm': model_warmup 'w': input 'x' ${problem}` });
    });

    test.each([
      ['an input the model lacks', 'batch_size: 1 inputs { key: "z" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } }',
        "model 'm': model_warmup 'w': 'z' is not an input of the model (inputs: x)"],
      ['another datatype', 'batch_size: 1 inputs { key: "x" value { data_type: TYPE_INT32 dims: [ 3 ] zero_data: true } }',
        "model 'm': model_warmup 'w': input 'x' has data_type TYPE_INT32, the model's input is FP32"],
      ['no data source', 'batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] } }',
        "model 'm': model_warmup 'w': warmup setting expects input 'x' to have input_data_type set (one of zero_data, random_data or input_data_file)"],
      ['variable dims', 'batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true } }',
        "model 'm': model_warmup 'w': warmup setting expects all variable-size dimensions are specified for input 'x' (dims [-1]: give each -1 a size)"],
      ['a batch above max_batch_size', 'batch_size: 5 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } }',
        "model 'm': model_warmup 'w': batch_size 5 exceeds max_batch_size 4"],
    ])('%s is INVALID_ARG', (_, body, message) => {
      expectError(() => fromPbtxt(warmup(`name: "w" ${body}`)), 'INVALID_ARG', message);
    });

    test('a model that does not batch takes batch_size 1 only', () => {
      expectError(() => fromPbtxt('input { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } model_warmup { batch_size: 2 }'), 'INVALID_ARG',
        "model 'm': model_warmup #0: batch_size must be 1 for a model that does not batch (max_batch_size 0), got 2");
    });
  });

  describe('JSON configs (load API, auto-complete output)', () => {
    test('loose JSON normalizes like the equivalent config.pbtxt', () => {
      const dir = modelDir('m');
      const json = {
        name: 'm', backend: 'onnxruntime', maxBatchSize: '8',
        input: [{ name: 'x', dataType: 'type_fp32', dims: ['-1', 3] }],
        output: [{ name: 'y', data_type: 'TYPE_STRING', dims: [1] }],
        dynamic_batching: { priority_levels: '2', default_priority_level: 1, priority_queue_policy: { 2: { timeout_action: 'delay', default_timeout_microseconds: '9' } } },
        instance_group: [{ kind: 'kind_cpu', count: 2 }],
      };
      const pbtxt = `name: "m" backend: "onnxruntime" max_batch_size: 8 ${IO}
dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 2 value { timeout_action: DELAY default_timeout_microseconds: 9 } } }
instance_group { kind: KIND_CPU count: 2 }`;
      expect(normalizeDir(dir, json as RawModelConfig)).toEqual(fromPbtxt(pbtxt));
    });

    test('unknown fields and wrong types name the source; a different name is INVALID_ARG', () => {
      const dir = modelDir('m');
      const source = path.join(dir.dir, 'config.pbtxt');
      expectError(() => normalizeDir(dir, { max_batch_size: 4, batching: true } as RawModelConfig), 'INVALID_ARG',
        `model 'm' config (${source}): field 'batching': unknown field in inference.ModelConfig`);
      expectError(() => normalizeDir(dir, { input: [{ name: 'x', dims: [1, 'a'] }] } as unknown as RawModelConfig), 'INVALID_ARG',
        `model 'm' config (${source}): field 'input[0].dims[1]': expected an integer (int64), got "a"`);
      expectError(() => normalizeDir(dir, { name: 'other' } as RawModelConfig), 'INVALID_ARG',
        `${source}: the config names the model 'other', but its directory is 'm' (they must match)`);
    });
  });

  test('maxQueueSizeHardLimit and version come from the options', () => {
    const dir = modelDir('m', IO);
    const config = normalizeRawConfig(readRawConfig(dir), { name: 'm', version: 7, source: path.join(dir.dir, 'config.pbtxt'), maxQueueSizeHardLimit: 10 });
    expect([config.version, config.maxQueueSizeHardLimit]).toEqual([7, 10]);
  });
});

/** The fields perf_analyzer reads from a model's config. */
function perfAnalyzerView(json: Record<string, unknown>): unknown {
  const tensors = (key: string, fields: string[]): unknown => (json[key] as Record<string, unknown>[])
    .map((t) => Object.fromEntries(fields.map((f) => [f, t[f]])));
  return {
    max_batch_size: json.max_batch_size,
    decoupled: (json.model_transaction_policy as { decoupled: unknown }).decoupled,
    input: tensors('input', ['name', 'is_shape_tensor', 'optional']),
    output: tensors('output', ['name', 'is_shape_tensor']),
    response_cache: (json.response_cache as { enable: unknown }).enable,
    dynamic_batching: 'dynamic_batching' in json,
    sequence_batching: 'sequence_batching' in json,
    platform: json.platform,
  };
}

describe('toModelConfigJson', () => {
  const bound = (batching: boolean): NormalizedModelConfig => normalizeBindConfig({
    modelName: 'add',
    inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'BYTES', shape: [2], optional: true }],
    outputs: [{ name: 'sum', dtype: Float32Array, shape: [-1] }],
    instanceCount: 2,
    config: batching ? { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 100 } } : { batching: false },
  });

  test('a bound model: the complete JSON Triton serves', () => {
    const json = toModelConfigJson(bound(true));
    expect(json).toEqual({
      name: 'add',
      platform: '',
      backend: 'js',
      runtime: '',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 8,
      input: [
        { name: 'a', data_type: 'TYPE_FP32', format: 'FORMAT_NONE', dims: [-1], is_shape_tensor: false, allow_ragged_batch: false, optional: false, is_non_linear_format_io: false },
        { name: 'b', data_type: 'TYPE_STRING', format: 'FORMAT_NONE', dims: [2], is_shape_tensor: false, allow_ragged_batch: false, optional: true, is_non_linear_format_io: false },
      ],
      output: [{ name: 'sum', data_type: 'TYPE_FP32', dims: [-1], label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false }],
      batch_input: [],
      batch_output: [],
      optimization: {
        priority: 'PRIORITY_DEFAULT', input_pinned_memory: { enable: true }, output_pinned_memory: { enable: true },
        gather_kernel_buffer_threshold: 0, eager_batching: false,
      },
      dynamic_batching: {
        preferred_batch_size: [8], max_queue_delay_microseconds: 100, preserve_ordering: false, priority_levels: 0, default_priority_level: 0,
        default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 },
        priority_queue_policy: {},
      },
      instance_group: [{ name: 'add_0', kind: 'KIND_CPU', count: 2, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' }],
      default_model_filename: '',
      cc_model_filenames: {},
      metric_tags: {},
      parameters: {},
      model_warmup: [],
      model_transaction_policy: { decoupled: false },
      response_cache: { enable: false },
    });
    // Field order follows the proto's declaration order, as protobuf prints it.
    expect(Object.keys(json)).toEqual([
      'name', 'platform', 'backend', 'runtime', 'version_policy', 'max_batch_size', 'input', 'output', 'batch_input', 'batch_output',
      'optimization', 'dynamic_batching', 'instance_group', 'default_model_filename', 'cc_model_filenames', 'metric_tags', 'parameters',
      'model_warmup', 'model_transaction_policy', 'response_cache',
    ]);
  });

  test('what perf_analyzer reads: bound models with and without batching', () => {
    expect(perfAnalyzerView(toModelConfigJson(bound(true)))).toEqual({
      max_batch_size: 8, decoupled: false, response_cache: false, dynamic_batching: true, sequence_batching: false, platform: '',
      input: [{ name: 'a', is_shape_tensor: false, optional: false }, { name: 'b', is_shape_tensor: false, optional: true }],
      output: [{ name: 'sum', is_shape_tensor: false }],
    });
    expect(perfAnalyzerView(toModelConfigJson(bound(false)))).toEqual({
      max_batch_size: 0, decoupled: false, response_cache: false, dynamic_batching: false, sequence_batching: false, platform: '',
      input: [{ name: 'a', is_shape_tensor: false, optional: false }, { name: 'b', is_shape_tensor: false, optional: true }],
      output: [{ name: 'sum', is_shape_tensor: false }],
    });
  });

  const REPOSITORY_CONFIG = `name: "m"
backend: "onnxruntime"
max_batch_size: 4
version_policy { specific { versions: [ 1, 2 ] } }
input { name: "x" data_type: TYPE_FP32 dims: [ -1, 3 ] reshape { shape: [ -1, 3, 1 ] } optional: true }
output { name: "y" data_type: TYPE_STRING dims: [ 2 ] label_filename: "labels.txt" }
dynamic_batching {
  preferred_batch_size: [ 2, 4 ]
  max_queue_delay_microseconds: 500
  priority_levels: 2
  default_priority_level: 2
  priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 1000 max_queue_size: 5 } }
}
instance_group { count: 2 kind: KIND_GPU gpus: [ 0 ] secondary_devices { kind: KIND_NVDLA device_id: 3 } }
instance_group { name: "cpu" kind: KIND_CPU }
parameters { key: "k" value { string_value: "v" } }
optimization { graph { level: 1 } }
model_warmup { name: "w" batch_size: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 2, 3 ] input_data_file: "x.bin" } } count: 2 }
`;
  const repositoryConfig = (): NormalizedModelConfig => fromPbtxt(REPOSITORY_CONFIG, { 'labels.txt': 'a\nb\n', 'warmup/x.bin': Buffer.alloc(24) });

  test('a repository model: version policy, groups, 64-bit fields, parameters, warm-up as the config wrote them', () => {
    const json = toModelConfigJson(repositoryConfig());
    expect({
      platform: json.platform, backend: json.backend, version_policy: json.version_policy, input: json.input, output: json.output,
      dynamic_batching: json.dynamic_batching, instance_group: json.instance_group, parameters: json.parameters,
      optimization: json.optimization, model_warmup: json.model_warmup,
    }).toEqual({
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      version_policy: { specific: { versions: [1, 2] } },
      input: [{
        name: 'x', data_type: 'TYPE_FP32', format: 'FORMAT_NONE', dims: [-1, 3], reshape: { shape: [-1, 3, 1] },
        is_shape_tensor: false, allow_ragged_batch: false, optional: true, is_non_linear_format_io: false,
      }],
      output: [{ name: 'y', data_type: 'TYPE_STRING', dims: [2], label_filename: 'labels.txt', is_shape_tensor: false, is_non_linear_format_io: false }],
      dynamic_batching: {
        preferred_batch_size: [2, 4], max_queue_delay_microseconds: 500, preserve_ordering: false, priority_levels: 2, default_priority_level: 2,
        default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 },
        priority_queue_policy: { 1: { timeout_action: 'DELAY', default_timeout_microseconds: 1000, allow_timeout_override: false, max_queue_size: 5 } },
      },
      instance_group: [
        // device_id is a 64-bit field Triton does not fix up: protobuf prints it as a string.
        { name: 'm_0', kind: 'KIND_GPU', count: 2, gpus: [0], secondary_devices: [{ kind: 'KIND_NVDLA', device_id: '3' }], profile: [], passive: false, host_policy: '' },
        { name: 'cpu', kind: 'KIND_CPU', count: 1, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' },
      ],
      parameters: { k: { string_value: 'v' } },
      optimization: {
        graph: { level: 1 }, priority: 'PRIORITY_DEFAULT', input_pinned_memory: { enable: true }, output_pinned_memory: { enable: true },
        gather_kernel_buffer_threshold: 0, eager_batching: false,
      },
      model_warmup: [{ name: 'w', batch_size: 2, inputs: { x: { data_type: 'TYPE_FP32', dims: [2, 3], input_data_file: 'x.bin' } }, count: 2 }],
    });
    expect(perfAnalyzerView(json)).toEqual({
      max_batch_size: 4, decoupled: false, response_cache: false, dynamic_batching: true, sequence_batching: false, platform: 'onnxruntime_onnx',
      input: [{ name: 'x', is_shape_tensor: false, optional: true }], output: [{ name: 'y', is_shape_tensor: false }],
    });
  });

  test('the served JSON loads back (load API) and serves the same JSON again', () => {
    const served = toModelConfigJson(repositoryConfig());
    const dir: ModelDirectory = { name: 'm', repository: repo, dir: path.join(repo, 'm') };
    const reloaded = normalizeDir(dir, JSON.parse(JSON.stringify(served)) as RawModelConfig);
    expect(toModelConfigJson(reloaded)).toEqual(served);
    expect([reloaded.inputs, reloaded.outputs, reloaded.dynamicBatching, reloaded.modelWarmup])
      .toEqual([repositoryConfig().inputs, repositoryConfig().outputs, repositoryConfig().dynamicBatching, repositoryConfig().modelWarmup]);
  });
});
