/**
 * config.pbtxt parser, printer and JSON validator (ts/config/pbtxt.ts): real Triton configs (the
 * seed documents' examples verbatim), every syntax form of protobuf's text format that config
 * files use, every message of inference.ModelConfig, print→parse round trips, and malformed
 * files with the exact line:column of the error.
 */
import { errorOf } from './error-of';
import { parsePbtxt, printPbtxt, validateModelConfigJson, type ProtoJsonObject } from '../../ts/config/pbtxt';

/** The error a call throws (fails the test when it does not throw). */
const parse = (text: string): ProtoJsonObject => parsePbtxt(text, 'm/config.pbtxt');
const parseError = (text: string): string => {
  const err = errorOf(() => parsePbtxt(text, 'm/config.pbtxt'));
  expect(err.code).toBe('INVALID_ARG');
  return err.message;
};

// ---- the seed documents' configs, verbatim ----

const SEED_MY_MODEL = `name: "my_model"
backend: "onnxruntime"
max_batch_size: 8

input [
  {
    name: "input"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
  }
]

output [
  {
    name: "output"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  }
]

instance_group [
  {
    count: 1
    kind: KIND_GPU
  }
]
`;

const SEED_BATCHED = `name: "batched_model"
backend: "onnxruntime"
max_batch_size: 32

input [
  {
    name: "input"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
  }
]

output [
  {
    name: "output"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  }
]

# Enable dynamic batching
dynamic_batching {
  preferred_batch_size: [ 8, 16, 32 ]
  max_queue_delay_microseconds: 100
}

instance_group [
  {
    count: 2
    kind: KIND_GPU
  }
]
`;

const SEED_ENSEMBLE = `# ensemble_model/config.pbtxt
name: "ensemble_model"
platform: "ensemble"
max_batch_size: 8

input [
  {
    name: "raw_image"
    data_type: TYPE_UINT8
    dims: [ -1, -1, 3 ]
  }
]

output [
  {
    name: "classification"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  }
]

ensemble_scheduling {
  step [
    {
      model_name: "preprocessing"
      model_version: 1
      input_map {
        key: "raw_input"
        value: "raw_image"
      }
      output_map {
        key: "processed_output"
        value: "preprocessed"
      }
    },
    {
      model_name: "classifier"
      model_version: 1
      input_map {
        key: "input"
        value: "preprocessed"
      }
      output_map {
        key: "output"
        value: "classification"
      }
    }
  ]
}
`;

const SEED_TENSORRT = `name: "tensorrt_model"
backend: "tensorrt"
max_batch_size: 16

input [
  {
    name: "input"
    data_type: TYPE_FP16
    dims: [ 3, 224, 224 ]
  }
]

output [
  {
    name: "output"
    data_type: TYPE_FP16
    dims: [ 1000 ]
  }
]

instance_group [
  {
    count: 1
    kind: KIND_GPU
    gpus: [ 0 ]
  }
]

# Enable TensorRT optimizations
optimization {
  execution_accelerators {
    gpu_execution_accelerator : [
      { name : "tensorrt" }
    ]
  }
}
`;

const imageInput = (dtype: string): ProtoJsonObject => ({ name: 'input', data_type: dtype, dims: [3, 224, 224] });
const classesOutput = (dtype: string): ProtoJsonObject => ({ name: 'output', data_type: dtype, dims: [1000] });

describe('seed configs (verbatim)', () => {
  test('my_model: inputs, outputs, instance group', () => {
    expect(parse(SEED_MY_MODEL)).toEqual({
      name: 'my_model', backend: 'onnxruntime', max_batch_size: 8,
      input: [imageInput('TYPE_FP32')], output: [classesOutput('TYPE_FP32')],
      instance_group: [{ count: 1, kind: 'KIND_GPU' }],
    });
  });

  test('batched_model: dynamic batching with preferred sizes and a delay', () => {
    expect(parse(SEED_BATCHED)).toEqual({
      name: 'batched_model', backend: 'onnxruntime', max_batch_size: 32,
      input: [imageInput('TYPE_FP32')], output: [classesOutput('TYPE_FP32')],
      dynamic_batching: { preferred_batch_size: [8, 16, 32], max_queue_delay_microseconds: 100 },
      instance_group: [{ count: 2, kind: 'KIND_GPU' }],
    });
  });

  test('ensemble_model: steps with input/output maps', () => {
    expect(parse(SEED_ENSEMBLE)).toEqual({
      name: 'ensemble_model', platform: 'ensemble', max_batch_size: 8,
      input: [{ name: 'raw_image', data_type: 'TYPE_UINT8', dims: [-1, -1, 3] }],
      output: [{ name: 'classification', data_type: 'TYPE_FP32', dims: [1000] }],
      ensemble_scheduling: {
        step: [
          { model_name: 'preprocessing', model_version: 1, input_map: { raw_input: 'raw_image' }, output_map: { processed_output: 'preprocessed' } },
          { model_name: 'classifier', model_version: 1, input_map: { input: 'preprocessed' }, output_map: { output: 'classification' } },
        ],
      },
    });
  });

  test('tensorrt_model: gpus and an execution accelerator list after "name :"', () => {
    expect(parse(SEED_TENSORRT)).toEqual({
      name: 'tensorrt_model', backend: 'tensorrt', max_batch_size: 16,
      input: [imageInput('TYPE_FP16')], output: [classesOutput('TYPE_FP16')],
      instance_group: [{ count: 1, kind: 'KIND_GPU', gpus: [0] }],
      optimization: { execution_accelerators: { gpu_execution_accelerator: [{ name: 'tensorrt' }] } },
    });
  });

  test("the batcher documentation's snippets", () => {
    expect(parse('  dynamic_batching { }')).toEqual({ dynamic_batching: {} });
    expect(parse('  dynamic_batching {\n    preferred_batch_size: [ 4, 8 ]\n  }')).toEqual({ dynamic_batching: { preferred_batch_size: [4, 8] } });
    expect(parse('  dynamic_batching {\n    max_queue_delay_microseconds: 100\n  }')).toEqual({ dynamic_batching: { max_queue_delay_microseconds: 100 } });
    expect(parse('  sequence_batching {\n    iterative_sequence: true\n  }')).toEqual({ sequence_batching: { iterative_sequence: true } });
  });

  test.each([SEED_MY_MODEL, SEED_BATCHED, SEED_ENSEMBLE, SEED_TENSORRT])('round trip print → parse (%#)', (text) => {
    const config = parse(text);
    expect(parse(printPbtxt(config))).toEqual(config);
  });
});

describe('syntax forms', () => {
  test('comments: whole-line, trailing, inside lists and messages, at end of file without newline; # inside a string is text', () => {
    const text = '# header\nname: "a#b" # trailing\ninput [ # open\n  { name: "x" # inside\n    dims: [ 1, # one\n 2 ] }\n] # end';
    expect(parse(text)).toEqual({ name: 'a#b', input: [{ name: 'x', dims: [1, 2] }] });
  });

  test("messages with {} or <>, with or without ':' before them", () => {
    expect(parse('version_policy: < latest: { num_versions: 2 } >')).toEqual({ version_policy: { latest: { num_versions: 2 } } });
    expect(parse('version_policy { all <> }')).toEqual({ version_policy: { all: {} } });
    expect(parse('dynamic_batching: { default_queue_policy < max_queue_size: 3 > }'))
      .toEqual({ dynamic_batching: { default_queue_policy: { max_queue_size: 3 } } });
  });

  test('repeated fields: list form, repeated form, both mixed, empty list', () => {
    expect(parse('input { dims: [1, 2] }')).toEqual({ input: [{ dims: [1, 2] }] });
    expect(parse('input { dims: 1 dims: 2 }')).toEqual({ input: [{ dims: [1, 2] }] });
    expect(parse('input { dims: [1] dims: 2 dims: [3, 4] }')).toEqual({ input: [{ dims: [1, 2, 3, 4] }] });
    expect(parse('input { dims: [] }')).toEqual({ input: [{ dims: [] }] });
    expect(parse('input { name: "a" } input [ { name: "b" }, < name: "c" > ] input: [ ]'))
      .toEqual({ input: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    expect(parse('input { name: "a" } input: [ { name: "b" } ]')).toEqual({ input: [{ name: 'a' }, { name: 'b' }] });
  });

  test('maps: entry blocks, a list of entries, missing key or value take defaults, the last duplicate key wins', () => {
    expect(parse('parameters { key: "x" value { string_value: "y" } } parameters: { key: "z" value: { } }'))
      .toEqual({ parameters: { x: { string_value: 'y' }, z: {} } });
    expect(parse('parameters [ { key: "a" value { string_value: "1" } }, { key: "b" } ]'))
      .toEqual({ parameters: { a: { string_value: '1' }, b: {} } });
    expect(parse('metric_tags { value: "v" } metric_tags { key: "k" }')).toEqual({ metric_tags: { '': 'v', k: '' } });
    expect(parse('metric_tags { key: "k" value: "1" } metric_tags { key: "k" value: "2" }')).toEqual({ metric_tags: { k: '2' } });
    expect(parse('parameters [ ]')).toEqual({ parameters: {} });
  });

  test('priority_queue_policy: uint64 keys become decimal strings', () => {
    const text = `dynamic_batching {
      priority_levels: 3
      default_priority_level: 2
      priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 100 allow_timeout_override: true } }
      priority_queue_policy { key: 0x3 value { max_queue_size: 7 } }
      priority_queue_policy < value < timeout_action: REJECT > >
    }`;
    expect(parse(text)).toEqual({
      dynamic_batching: {
        priority_levels: 3,
        default_priority_level: 2,
        priority_queue_policy: {
          1: { timeout_action: 'DELAY', default_timeout_microseconds: 100, allow_timeout_override: true },
          3: { max_queue_size: 7 },
          0: { timeout_action: 'REJECT' },
        },
      },
    });
  });

  test('enums by name and by number', () => {
    expect(parse('input { data_type: TYPE_STRING format: FORMAT_NCHW }')).toEqual({ input: [{ data_type: 'TYPE_STRING', format: 'FORMAT_NCHW' }] });
    expect(parse('input { data_type: 13 format: 1 } instance_group { kind: 2 }'))
      .toEqual({ input: [{ data_type: 'TYPE_STRING', format: 'FORMAT_NHWC' }], instance_group: [{ kind: 'KIND_CPU' }] });
  });

  test('strings: both quote kinds and every escape', () => {
    expect(parse(String.raw`name: "a\n\t\\\"\'b"`)).toEqual({ name: 'a\n\t\\"\'b' });
    expect(parse(String.raw`name: 'it\'s "quoted"'`)).toEqual({ name: 'it\'s "quoted"' });
    expect(parse(String.raw`name: "\x41\x4a\101\60\0\r\a\b\f\v\?"`)).toEqual({ name: 'AJA0\0\r\x07\b\f\v?' });
    expect(parse(String.raw`name: "\u00e9\U0001F600"`)).toEqual({ name: 'é😀' });
    expect(parse(String.raw`name: "\xc3\xa9" backend: "é"`)).toEqual({ name: 'é', backend: 'é' });
  });

  test('adjacent strings concatenate, across lines, comments and quote kinds', () => {
    expect(parse('name: "ab" \'cd\'\n  # note\n  "ef"')).toEqual({ name: 'abcdef' });
  });

  test("',' or ';' after a field is optional", () => {
    expect(parse('name: "a", max_batch_size: 2; backend: "b"\nplatform: "p";')).toEqual({ name: 'a', max_batch_size: 2, backend: 'b', platform: 'p' });
    expect(parse('input { name: "x", dims: 1; },')).toEqual({ input: [{ name: 'x', dims: [1] }] });
  });

  test('integers: negative, hex, octal, the largest safe 64-bit value, int32 limits', () => {
    expect(parse('input { dims: [ -1, 0x10, 010, 0, 9007199254740991, -9007199254740991 ] }'))
      .toEqual({ input: [{ dims: [-1, 16, 8, 0, 9007199254740991, -9007199254740991] }] });
    expect(parse('max_batch_size: 2147483647')).toEqual({ max_batch_size: 2147483647 });
    expect(parse('max_batch_size: -2147483648')).toEqual({ max_batch_size: -2147483648 });
    expect(parse('dynamic_batching { max_queue_delay_microseconds: 9007199254740991 }'))
      .toEqual({ dynamic_batching: { max_queue_delay_microseconds: 9007199254740991 } });
  });

  test('64-bit fields over their whole range, exactly: a number up to 2^53 - 1, a bigint beyond (as protobuf reads them)', () => {
    expect(parse(`input { dims: [ 9007199254740992, -9223372036854775808, 9223372036854775807, 0x7fffffffffffffff ] }
      dynamic_batching { priority_levels: 18446744073709551615 max_queue_delay_microseconds: 9007199254740993 }`)).toEqual({
      input: [{ dims: [2n ** 53n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 63n - 1n] }],
      dynamic_batching: { priority_levels: 2n ** 64n - 1n, max_queue_delay_microseconds: 9007199254740993n },
    });
  });

  test('the 64-bit range edges are exact: the last value in range parses, the next one is refused as Triton refuses it', () => {
    expect(parse('dynamic_batching { default_queue_policy { default_timeout_microseconds: 18446744073709551615 } }'))
      .toEqual({ dynamic_batching: { default_queue_policy: { default_timeout_microseconds: 2n ** 64n - 1n } } });
    expect(parseError('dynamic_batching { default_queue_policy { default_timeout_microseconds: 18446744073709551616 } }')).toBe(
      "m/config.pbtxt:1:73: invalid value for field 'default_timeout_microseconds': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)");
    expect(parse('dynamic_batching { priority_queue_policy { key: 18446744073709551615 } }'))
      .toEqual({ dynamic_batching: { priority_queue_policy: { '18446744073709551615': {} } } });
    expect(parseError('dynamic_batching { priority_queue_policy { key: 18446744073709551616 } }')).toBe(
      "m/config.pbtxt:1:49: invalid value for field 'key': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)");
    expect(parseError('dynamic_batching { priority_levels: -18446744073709551615 }')).toBe(
      "m/config.pbtxt:1:37: invalid value for field 'priority_levels': a negative value (-18446744073709551615) is not allowed for an unsigned (uint64) field");
    expect(parse('input { dims: [ -9223372036854775808, 9223372036854775807 ] }')).toEqual({ input: [{ dims: [-(2n ** 63n), 2n ** 63n - 1n] }] });
    expect(parseError('input { dims: [ 9223372036854775808 ] }')).toBe(
      "m/config.pbtxt:1:17: invalid value for field 'dims': 9223372036854775808 is out of range for int64 (-9223372036854775808..9223372036854775807)");
    expect(parseError('input { dims: [ -9223372036854775809 ] }')).toBe(
      "m/config.pbtxt:1:17: invalid value for field 'dims': -9223372036854775809 is out of range for int64 (-9223372036854775808..9223372036854775807)");
  });

  test("Triton's qa/L0_config_json max_priority_level.pbtxt: uint64 values and keys at and past 2^32 and 2^53, printed back exactly", () => {
    const text = `name: "max_priority_level"
backend: "identity"
max_batch_size: 1
dynamic_batching:
{
    # Max uint64
    priority_levels: 18446744073709551615
    # Max uint32
    default_priority_level: 4294967295
    # Max uint32 + 1
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
}`;
    const config = parse(text);
    expect(config.dynamic_batching).toEqual({
      priority_levels: 18446744073709551615n,
      default_priority_level: 4294967295,
      priority_queue_policy: {
        4294967296: { timeout_action: 'REJECT', default_timeout_microseconds: 18446744073709551615n, allow_timeout_override: true, max_queue_size: 10 },
      },
    });
    const printed = printPbtxt(config);
    expect(printed).toContain('priority_levels: 18446744073709551615\n');
    expect(printed).toContain('key: 4294967296\n');
    expect(printed).toContain('default_timeout_microseconds: 18446744073709551615\n');
    expect(parse(printed)).toEqual(config);
    expect(validateModelConfigJson(config)).toEqual(config);
  });

  test('floats: decimals, exponents, f suffix, integers, inf, nan', () => {
    const config = parse('model_metrics { metric_control { histogram_options { buckets: [ 1.5, -2e3, .25, 1e+2, 3f, 4.5F, 7, -inf, Infinity, nan ] } } }');
    expect(config).toEqual({
      model_metrics: { metric_control: [{ histogram_options: { buckets: [1.5, -2000, 0.25, 100, 3, 4.5, 7, -Infinity, Infinity, NaN] } }] },
    });
    expect(parse('sequence_batching { direct { minimum_slot_utilization: 0.5 } }'))
      .toEqual({ sequence_batching: { direct: { minimum_slot_utilization: 0.5 } } });
  });

  test('bools: true/false/True/False/t/f/1/0', () => {
    const text = 'input { optional: true allow_ragged_batch: False is_shape_tensor: t is_non_linear_format_io: 0 } ' +
      'input { optional: True allow_ragged_batch: f is_shape_tensor: 1 is_non_linear_format_io: false }';
    expect(parse(text)).toEqual({
      input: [
        { optional: true, allow_ragged_batch: false, is_shape_tensor: true, is_non_linear_format_io: false },
        { optional: true, allow_ragged_batch: false, is_shape_tensor: true, is_non_linear_format_io: false },
      ],
    });
  });

  test('an empty file, or one with only comments, is an empty config', () => {
    expect(parse('')).toEqual({});
    expect(parse('# nothing\n\n   # here\n')).toEqual({});
  });
});

// Every message and field of inference.ModelConfig, once.
const FULL_CONFIG = `
name: "full"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
runtime: "model.so"
version_policy { specific { versions: [ 1, 3 ] } }
max_batch_size: 8
input {
  name: "IN" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 2, 2, 3 ] reshape { shape: [ 12 ] }
  is_shape_tensor: false allow_ragged_batch: true optional: true is_non_linear_format_io: false
}
output { name: "OUT" data_type: TYPE_INT64 dims: [ -1 ] reshape { shape: [ -1 ] } label_filename: "labels.txt" is_shape_tensor: false is_non_linear_format_io: false }
batch_input { kind: BATCH_ITEM_SHAPE_FLATTEN target_name: [ "T" ] data_type: TYPE_INT32 source_input: "IN" }
batch_output { target_name: "OUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: [ "IN" ] }
optimization {
  graph { level: -1 }
  priority: PRIORITY_MAX
  cuda {
    graphs: true busy_wait_events: true output_copy_stream: true
    graph_spec {
      batch_size: 4
      input { key: "IN" value { dim: [ 2, 2, 3 ] } }
      graph_lower_bound { batch_size: 1 input { key: "IN" value { dim: [ 1, 1, 3 ] } } }
    }
  }
  execution_accelerators {
    gpu_execution_accelerator { name: "tensorrt" parameters { key: "precision_mode" value: "FP16" } }
    cpu_execution_accelerator { name: "openvino" }
  }
  input_pinned_memory { enable: false }
  output_pinned_memory { enable: true }
  gather_kernel_buffer_threshold: 2
  eager_batching: true
}
sequence_batching {
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 50 preserve_ordering: true }
  max_sequence_idle_microseconds: 5000000
  control_input {
    name: "START"
    control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }
  }
  control_input { name: "READY" control { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } }
  control_input { name: "END" control { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } }
  control_input { name: "CORRID" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } }
  state {
    input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_FP32 dims: [ 4 ]
    initial_state { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true name: "zeros" }
    initial_state { data_type: TYPE_FP32 dims: [ 4 ] data_file: "init.bin" name: "file" }
    use_same_buffer_for_input_output: true use_growable_memory: true
  }
  iterative_sequence: false
}
instance_group {
  name: "group"
  kind: KIND_GPU
  count: 2
  rate_limiter { resources { name: "R" global: true count: 3 } priority: 2 }
  gpus: [ 0, 1 ]
  secondary_devices { kind: KIND_NVDLA device_id: 1 }
  profile: [ "0", "1" ]
  passive: false
  host_policy: "numa0"
}
default_model_filename: "model.onnx"
cc_model_filenames { key: "7.5" value: "model_75.onnx" }
metric_tags { key: "team" value: "search" }
parameters { key: "intra_op_thread_count" value { string_value: "2" } }
model_warmup {
  name: "warm"
  batch_size: 2
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [ 2, 2, 3 ] random_data: true } }
  count: 3
}
model_operations { op_library_filename: [ "libops.so" ] }
model_transaction_policy { decoupled: false }
model_repository_agents { agents { name: "checksum" parameters { key: "MD5:model.onnx" value: "abc" } } }
response_cache { enable: false }
model_metrics { metric_control { metric_identifier { family: "nv_inference_request_duration" } histogram_options { buckets: [ 0.5, 1 ] } } }
`;

describe('every message of inference.ModelConfig', () => {
  test('parses to the expected protobuf-JSON form', () => {
    const config = parse(FULL_CONFIG);
    expect(Object.keys(config)).toEqual([
      'name', 'platform', 'backend', 'runtime', 'version_policy', 'max_batch_size', 'input', 'output', 'batch_input',
      'batch_output', 'optimization', 'sequence_batching', 'instance_group', 'default_model_filename', 'cc_model_filenames',
      'metric_tags', 'parameters', 'model_warmup', 'model_operations', 'model_transaction_policy', 'model_repository_agents',
      'response_cache', 'model_metrics',
    ]);
    expect(config.version_policy).toEqual({ specific: { versions: [1, 3] } });
    expect(config.input).toEqual([{
      name: 'IN', data_type: 'TYPE_FP32', format: 'FORMAT_NHWC', dims: [2, 2, 3], reshape: { shape: [12] },
      is_shape_tensor: false, allow_ragged_batch: true, optional: true, is_non_linear_format_io: false,
    }]);
    expect(config.batch_input).toEqual([{ kind: 'BATCH_ITEM_SHAPE_FLATTEN', target_name: ['T'], data_type: 'TYPE_INT32', source_input: ['IN'] }]);
    expect(config.optimization).toEqual({
      graph: { level: -1 },
      priority: 'PRIORITY_MAX',
      cuda: {
        graphs: true, busy_wait_events: true, output_copy_stream: true,
        graph_spec: [{ batch_size: 4, input: { IN: { dim: [2, 2, 3] } }, graph_lower_bound: { batch_size: 1, input: { IN: { dim: [1, 1, 3] } } } }],
      },
      execution_accelerators: {
        gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16' } }],
        cpu_execution_accelerator: [{ name: 'openvino' }],
      },
      input_pinned_memory: { enable: false },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 2,
      eager_batching: true,
    });
    const sequence = config.sequence_batching as ProtoJsonObject;
    expect(sequence.control_input).toEqual([
      { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
      { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', fp32_false_true: [0, 1] }] },
      { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', bool_false_true: [false, true] }] },
      { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_UINT64' }] },
    ]);
    expect((sequence.state as ProtoJsonObject[])[0].initial_state).toEqual([
      { data_type: 'TYPE_FP32', dims: [4], zero_data: true, name: 'zeros' },
      { data_type: 'TYPE_FP32', dims: [4], data_file: 'init.bin', name: 'file' },
    ]);
    expect(config.instance_group).toEqual([{
      name: 'group', kind: 'KIND_GPU', count: 2, rate_limiter: { resources: [{ name: 'R', global: true, count: 3 }], priority: 2 },
      gpus: [0, 1], secondary_devices: [{ kind: 'KIND_NVDLA', device_id: 1 }], profile: ['0', '1'], passive: false, host_policy: 'numa0',
    }]);
    expect(config.model_warmup).toEqual([{
      name: 'warm', batch_size: 2, inputs: { IN: { data_type: 'TYPE_FP32', dims: [2, 2, 3], random_data: true } }, count: 3,
    }]);
    expect(config.model_repository_agents).toEqual({ agents: [{ name: 'checksum', parameters: { 'MD5:model.onnx': 'abc' } }] });
    expect(config.model_metrics).toEqual({
      metric_control: [{ metric_identifier: { family: 'nv_inference_request_duration' }, histogram_options: { buckets: [0.5, 1] } }],
    });
  });

  test('ensemble max_inflight_responses (and its earlier name max_inflight_requests) parse', () => {
    expect(parse('ensemble_scheduling { max_inflight_responses: 4 }')).toEqual({ ensemble_scheduling: { max_inflight_responses: 4 } });
    expect(parse('ensemble_scheduling { max_inflight_requests: 4 }')).toEqual({ ensemble_scheduling: { max_inflight_requests: 4 } });
  });

  test('round trip print → parse of every message', () => {
    const config = parse(FULL_CONFIG);
    expect(parse(printPbtxt(config))).toEqual(config);
  });
});

describe('printer', () => {
  test("prints Triton's style exactly", () => {
    const config = parse('name: "m" max_batch_size: 4 input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 3 ] }, { name: "y" } ] ' +
      'dynamic_batching { } parameters { key: "k" value { string_value: "v\\n\\"q\\"" } } instance_group [ { } ]');
    expect(printPbtxt(config)).toBe([
      'name: "m"',
      'max_batch_size: 4',
      'input [',
      '  {',
      '    name: "x"',
      '    data_type: TYPE_FP32',
      '    dims: [ -1, 3 ]',
      '  },',
      '  {',
      '    name: "y"',
      '  }',
      ']',
      'dynamic_batching { }',
      'instance_group [',
      '  { }',
      ']',
      'parameters {',
      '  key: "k"',
      '  value {',
      '    string_value: "v\\n\\"q\\""',
      '  }',
      '}',
      '',
    ].join('\n'));
  });

  test('uint64 map keys print as numbers; empty lists and maps survive a round trip', () => {
    const config: ProtoJsonObject = {
      input: [{ name: 'a', dims: [] }],
      dynamic_batching: { priority_levels: 2, default_priority_level: 1, priority_queue_policy: { 2: { max_queue_size: 1 } } },
      metric_tags: {},
    };
    const text = printPbtxt(config);
    expect(text).toContain('  priority_queue_policy {\n    key: 2\n    value {\n      max_queue_size: 1\n    }\n  }');
    expect(text).toContain('metric_tags [ ]');
    expect(text).toContain('dims: [ ]');
    expect(parse(text)).toEqual(config);
  });

  test('strings with control characters, quotes, backslashes and non-ASCII round-trip', () => {
    const name = 'a"b\'c\\d\n\t\r\u0001\u007f2é😀#';
    const text = printPbtxt({ name });
    // Octal escapes always have 3 digits, so the '2' after \177 stays a plain character.
    expect(text).toBe('name: "a\\"b\'c\\\\d\\n\\t\\r\\001\\1772é😀#"\n');
    expect(parse(text)).toEqual({ name });
  });

  test('floats: nan, inf, -0 and exponents round-trip', () => {
    const config: ProtoJsonObject = { model_metrics: { metric_control: [{ histogram_options: { buckets: [NaN, Infinity, -Infinity, -0, 1e21, 1.5e-7] } }] } };
    const text = printPbtxt(config);
    expect(text).toContain('buckets: [ nan, inf, -inf, -0, 1e+21, 1.5e-7 ]');
    expect(parse(text)).toEqual(config);
  });

  test('loose JSON prints in canonical form', () => {
    const text = printPbtxt({ maxBatchSize: '8', input: [{ name: 'x', dataType: 'type_fp32', dims: ['1', 2] }], instance_group: [{ kind: 2 }] });
    expect(text).toBe('max_batch_size: 8\ninput [\n  {\n    name: "x"\n    data_type: TYPE_FP32\n    dims: [ 1, 2 ]\n  }\n]\n' +
      'instance_group [\n  {\n    kind: KIND_CPU\n  }\n]\n');
  });

  test('an empty config prints as empty text', () => {
    expect(printPbtxt({})).toBe('');
  });

  test('refuses what is not a model config', () => {
    expect(errorOf(() => printPbtxt({ max_batch_size: 'x' })).message)
      .toBe("config to print: field 'max_batch_size': expected an integer (int32), got \"x\"");
  });
});

describe('malformed files: exact line:column', () => {
  test.each([
    ['unknown field', 'name: "m"\nmax_bach_size: 3',
      "m/config.pbtxt:2:1: unknown field 'max_bach_size' in inference.ModelConfig (did you mean 'max_batch_size'?)"],
    ['unknown nested field', 'input {\n  name: "x"\n  shape: [1]\n}',
      "m/config.pbtxt:3:3: unknown field 'shape' in inference.ModelInput (did you mean 'reshape'?)"],
    ['wrong value type (string for int)', 'max_batch_size: "8"',
      "m/config.pbtxt:1:17: expected an integer (int32) for field 'max_batch_size', found string \"8\""],
    ['wrong value type (int for string)', 'input { name: 5 }',
      "m/config.pbtxt:1:15: expected a string for field 'name', found '5'"],
    ['float for an integer field', 'input { dims: [ 1, 2.5 ] }',
      "m/config.pbtxt:1:20: expected an integer (int64) for field 'dims', found '2.5'"],
    ['unknown enum value', 'input [\n  {\n    data_type: TYPE_FLOAT32\n  }\n]',
      "m/config.pbtxt:3:16: unknown value 'TYPE_FLOAT32' for enum field 'data_type' (inference.DataType); expected one of " +
      'TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, ' +
      'TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16'],
    ['unknown enum number', 'instance_group { kind: 7 }',
      "m/config.pbtxt:1:24: unknown number 7 for enum field 'kind' (inference.ModelInstanceGroup.Kind); expected 0..3"],
    ['string for an enum', 'instance_group { kind: "KIND_GPU" }',
      "m/config.pbtxt:1:24: expected an enum value (inference.ModelInstanceGroup.Kind) for field 'kind', found string \"KIND_GPU\""],
    ['duplicate non-repeated field', 'max_batch_size: 4\n# again\n  max_batch_size: 8',
      "m/config.pbtxt:3:3: field 'max_batch_size' is set twice (first at line 1:1); it is not a repeated field"],
    ['duplicate message field', 'dynamic_batching { }\ndynamic_batching { }',
      "m/config.pbtxt:2:1: field 'dynamic_batching' is set twice (first at line 1:1); it is not a repeated field"],
    ['two members of a oneof', 'dynamic_batching { }\nsequence_batching { }',
      "m/config.pbtxt:2:1: field 'sequence_batching' cannot be set together with 'dynamic_batching' (both belong to oneof 'scheduling_choice')"],
    ['unterminated string', 'name: "model\nbackend: "x"',
      'm/config.pbtxt:1:7: unterminated string (missing closing ")'],
    ['unterminated single-quoted string at end of file', "backend: 'onnx",
      "m/config.pbtxt:1:10: unterminated string (missing closing ')"],
    ['unterminated message', 'input {\n  name: "x"\n',
      "m/config.pbtxt:3:1: unterminated message: the '{' at line 1:7 (inference.ModelInput) is never closed with '}'"],
    ['mismatched close', 'input < name: "x" }',
      "m/config.pbtxt:1:19: expected a field name of inference.ModelInput or '>', found '}'"],
    ['stray close at top level', 'name: "x" }',
      "m/config.pbtxt:1:11: expected a field name of inference.ModelConfig, found '}'"],
    ['unterminated list', 'input { dims: [ 1, 2',
      "m/config.pbtxt:1:21: unterminated list: the '[' at line 1:15 is never closed with ']'"],
    ['list ending after a comma', 'input { dims: [ 1,\n',
      "m/config.pbtxt:2:1: expected an integer (int64) for field 'dims', found end of file"],
    ['unknown field without a near miss', 'input { name: "x" colour: 1 }',
      "m/config.pbtxt:1:19: unknown field 'colour' in inference.ModelInput"],
    ['missing comma in list', 'input { dims: [ 1 2 ] }',
      "m/config.pbtxt:1:19: expected ',' or ']' in the list of 'dims', found '2'"],
    ['list for a non-repeated field', 'max_batch_size: [ 1 ]',
      "m/config.pbtxt:1:17: field 'max_batch_size' is not repeated, so it cannot take a list [...]"],
    ['missing colon before a scalar', 'max_batch_size 8',
      "m/config.pbtxt:1:16: expected ':' after field name 'max_batch_size', found '8'"],
    ['scalar for a message field', 'dynamic_batching: 5',
      "m/config.pbtxt:1:19: expected '{' to start the inference.ModelDynamicBatching of field 'dynamic_batching', found '5'"],
    ['invalid escape', 'name: "a\\qb"',
      'm/config.pbtxt:1:9: invalid escape sequence \\q'],
    ['\\x without digits', 'name: "\\xZ"',
      'm/config.pbtxt:1:8: \\x must be followed by hex digits'],
    ['invalid UTF-8 from escapes', 'name: "\\xff"',
      'm/config.pbtxt:1:7: the string is not valid UTF-8 after its escapes are applied'],
    ['unexpected character', 'name: "x"\n  @',
      "m/config.pbtxt:2:3: unexpected character '@'"],
    ['number glued to a word', 'max_batch_size: 8abc',
      "m/config.pbtxt:1:18: unexpected 'a' right after the number 8"],
    ['bad octal', 'max_batch_size: 09',
      'm/config.pbtxt:1:17: invalid octal number 09 (a leading 0 makes a number octal)'],
    ['bad bool', 'input { optional: yes }',
      "m/config.pbtxt:1:19: expected true or false for field 'optional', found 'yes'"],
    ['negative value for an unsigned field', 'dynamic_batching {\n  max_queue_delay_microseconds: -100\n}',
      "m/config.pbtxt:2:33: invalid value for field 'max_queue_delay_microseconds': a negative value (-100) is not allowed for an unsigned (uint64) field"],
    ['negative uint32', 'model_warmup { count: -1 }',
      "m/config.pbtxt:1:23: invalid value for field 'count': a negative value (-1) is not allowed for an unsigned (uint32) field"],
    ['uint64 beyond 2^64', 'dynamic_batching { priority_levels: 18446744073709551616 }',
      "m/config.pbtxt:1:37: invalid value for field 'priority_levels': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)"],
    ['int32 overflow', 'max_batch_size: 2147483648',
      "m/config.pbtxt:1:17: invalid value for field 'max_batch_size': 2147483648 is out of range for int32 (-2147483648..2147483647)"],
    ['negative map key for uint64 keys', 'dynamic_batching { priority_queue_policy { key: -1 } }',
      "m/config.pbtxt:1:49: invalid value for field 'key': a negative value (-1) is not allowed for an unsigned (uint64) field"],
    ['extension syntax', '[ext.field]: 1',
      "m/config.pbtxt:1:1: expected a field name of inference.ModelConfig, found '['"],
    ['exponent without digits', 'model_metrics { metric_control { histogram_options { buckets: 1e } } }',
      "m/config.pbtxt:1:65: a float's exponent needs digits"],
  ])('%s', (_, text, message) => {
    expect(parseError(text)).toBe(message);
  });

  test('the file name given is the one errors name', () => {
    expect(errorOf(() => parsePbtxt('foo: 1', '/models/resnet/config.pbtxt')).message)
      .toBe("/models/resnet/config.pbtxt:1:1: unknown field 'foo' in inference.ModelConfig");
  });
});

describe('JSON configs (load API)', () => {
  const json = (value: unknown): ProtoJsonObject => validateModelConfigJson(value, 'load of model');
  const jsonError = (value: unknown): string => {
    const err = errorOf(() => validateModelConfigJson(value, 'load of model'));
    expect(err.code).toBe('INVALID_ARG');
    return err.message;
  };

  test('proto and camelCase names, case-insensitive enums, enum numbers, ints as strings, floats as strings, null as unset', () => {
    expect(json({
      name: 'm',
      maxBatchSize: '16',
      input: [{ name: 'x', data_type: 'type_fp32', dims: ['-1', 3], allowRaggedBatch: true }],
      instanceGroup: [{ kind: 'kind_gpu', count: 2, gpus: [0] }, { kind: 2 }],
      dynamic_batching: { priorityLevels: '2', default_priority_level: 1, priority_queue_policy: { 1: { timeoutAction: 'delay', default_timeout_microseconds: '100' } } },
      model_metrics: { metric_control: [{ histogram_options: { buckets: ['NaN', 'Infinity', '-Infinity', '2.5', 1] } }] },
      platform: null,
    })).toEqual({
      name: 'm',
      max_batch_size: 16,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [-1, 3], allow_ragged_batch: true }],
      instance_group: [{ kind: 'KIND_GPU', count: 2, gpus: [0] }, { kind: 'KIND_CPU' }],
      dynamic_batching: { priority_levels: 2, default_priority_level: 1, priority_queue_policy: { 1: { timeout_action: 'DELAY', default_timeout_microseconds: 100 } } },
      model_metrics: { metric_control: [{ histogram_options: { buckets: [NaN, Infinity, -Infinity, 2.5, 1] } }] },
    });
  });

  test("Triton's own /config JSON is accepted back (64-bit fields as strings or numbers)", () => {
    const served = {
      name: 'm', platform: 'onnxruntime_onnx', backend: 'onnxruntime', version_policy: { latest: { num_versions: 1 } }, max_batch_size: 4,
      input: [{ name: 'x', data_type: 'TYPE_FP32', format: 'FORMAT_NONE', dims: [3], is_shape_tensor: false, allow_ragged_batch: false, optional: false }],
      instance_group: [{ name: 'm', kind: 'KIND_CPU', count: 1, gpus: [], secondary_devices: [{ kind: 'KIND_NVDLA', device_id: '0' }], profile: [], passive: false, host_policy: '' }],
      parameters: {}, model_warmup: [],
    };
    expect(json(served)).toEqual({ ...served, instance_group: [{ ...served.instance_group[0], secondary_devices: [{ kind: 'KIND_NVDLA', device_id: 0 }] }] });
  });

  test('64-bit fields as decimal strings or bigints, exactly over their whole range; the canonical form is a number up to 2^53 - 1', () => {
    expect(json({
      input: [{ dims: ['-9223372036854775808', 9223372036854775807n, '9007199254740991', 5n] }],
      dynamic_batching: {
        priority_levels: '18446744073709551615', default_priority_level: 4294967295n, max_queue_delay_microseconds: 2n ** 64n - 1n,
        priority_queue_policy: { '18446744073709551615': { default_timeout_microseconds: '18446744073709551615' } },
      },
    })).toEqual({
      input: [{ dims: [-(2n ** 63n), 2n ** 63n - 1n, 9007199254740991, 5] }],
      dynamic_batching: {
        priority_levels: 2n ** 64n - 1n, default_priority_level: 4294967295, max_queue_delay_microseconds: 2n ** 64n - 1n,
        priority_queue_policy: { '18446744073709551615': { default_timeout_microseconds: 2n ** 64n - 1n } },
      },
    });
    // One past the range, as Triton refuses it.
    expect(jsonError({ dynamic_batching: { priority_levels: '18446744073709551616' } })).toBe(
      "load of model: field 'dynamic_batching.priority_levels': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)");
    expect(jsonError({ dynamic_batching: { priority_queue_policy: { '18446744073709551616': {} } } })).toBe(
      "load of model: field 'dynamic_batching.priority_queue_policy[\"18446744073709551616\"]': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)");
    expect(jsonError({ dynamic_batching: { default_queue_policy: { default_timeout_microseconds: '-1' } } })).toBe(
      "load of model: field 'dynamic_batching.default_queue_policy.default_timeout_microseconds': a negative value (-1) is not allowed for an unsigned (uint64) field");
    expect(jsonError({ input: [{ dims: [-(2n ** 63n) - 1n] }] })).toBe(
      "load of model: field 'input[0].dims[0]': -9223372036854775809 is out of range for int64 (-9223372036854775808..9223372036854775807)");
  });

  test.each([
    ['unknown field', { max_batch_size: 1, foo: 2 }, "load of model: field 'foo': unknown field in inference.ModelConfig"],
    ['unknown nested field with a hint', { input: [{ name: 'x', dtype: 'TYPE_FP32' }] },
      "load of model: field 'input[0].dtype': unknown field in inference.ModelInput"],
    ['near miss', { dynamic_batching: { max_queue_delay_microsecond: 1 } },
      "load of model: field 'dynamic_batching.max_queue_delay_microsecond': unknown field in inference.ModelDynamicBatching (did you mean 'max_queue_delay_microseconds'?)"],
    ['unknown enum', { input: [{ data_type: 'FP32' }] },
      "load of model: field 'input[0].data_type': unknown value \"FP32\" for enum inference.DataType; expected one of TYPE_INVALID, TYPE_BOOL, " +
      'TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16'],
    ['fractional int', { max_batch_size: 1.5 }, "load of model: field 'max_batch_size': expected an integer (int32), got 1.5"],
    ['a JS number past 2^53 (it may be a rounding)', { input: [{ dims: [2 ** 60] }] },
      "load of model: field 'input[0].dims[0]': 1152921504606846976 is beyond 2^53 - 1 (9007199254740991), where a JavaScript number " +
      'may already have been rounded; give the value as a decimal string or a bigint'],
    ['uint64 past 2^64 - 1 as a bigint', { dynamic_batching: { max_queue_delay_microseconds: 2n ** 64n } },
      "load of model: field 'dynamic_batching.max_queue_delay_microseconds': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)"],
    ['negative unsigned', { dynamic_batching: { priority_levels: -1 } },
      "load of model: field 'dynamic_batching.priority_levels': a negative value (-1) is not allowed for an unsigned (uint64) field"],
    ['bool as string', { input: [{ optional: 'true' }] }, "load of model: field 'input[0].optional': expected true or false, got \"true\""],
    ['repeated as scalar', { input: { name: 'x' } }, "load of model: field 'input': expected a JSON array, got {\"name\":\"x\"}"],
    ['message as scalar', { dynamic_batching: true }, "load of model: field 'dynamic_batching': expected a JSON object (inference.ModelDynamicBatching), got true"],
    ['map key not a uint64', { dynamic_batching: { priority_queue_policy: { first: {} } } },
      "load of model: field 'dynamic_batching.priority_queue_policy[\"first\"]': expected an integer (uint64), got \"first\""],
    ['oneof conflict', { dynamic_batching: {}, sequence_batching: {} },
      "load of model: field 'sequence_batching': cannot be set together with 'dynamic_batching' (both belong to oneof 'scheduling_choice')"],
    ['both names of a field', { max_batch_size: 1, maxBatchSize: 2 },
      "load of model: field 'maxBatchSize': 'max_batch_size' is given twice (as 'max_batch_size' and 'maxBatchSize')"],
    ['not an object', [1], 'load of model: expected a JSON object (inference.ModelConfig), got [1]'],
  ])('%s', (_, value, message) => {
    expect(jsonError(value)).toBe(message);
  });
});
