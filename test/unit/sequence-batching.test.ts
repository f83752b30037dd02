/**
 * The sequence batcher's config (ts/config/sequence-batching.ts): a repository config's
 * `sequence_batching` and bind()'s `sequenceBatcher` normalized into the native contract
 * (NormalizedSequenceBatching) with Triton's defaults, every load error with Triton's text,
 * initial state data read from `<model>/initial_state/`, the served config printing it back, and
 * ONNX auto-complete leaving the batcher's tensors out of `input` / `output`.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { errorOf } from './error-of';
import * as os from 'node:os';
import * as path from 'node:path';
import { normalizeBindConfig, type NormalizedModelConfig } from '../../ts/config/normalize';
import { toModelConfigJson } from '../../ts/config/model-config-json';
import type { ModelConfig } from '../../ts/config/types';
import { autoCompleteOnnxConfig, type RawModelConfig } from '../../ts/repository/autocomplete';
import { normalizeRawConfig, precheckRawConfig, readRawConfig } from '../../ts/repository/config-source';

let repo: string;

beforeEach(() => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-seqcfg-'));
});

afterEach(() => {
  rmSync(repo, { recursive: true, force: true });
});

const IO = `
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] } ]
`;

/** Normalizes `<repo>/m/config.pbtxt` = IO + `text`, with extra files under the model directory. */
function fromPbtxt(text: string, files: Record<string, string | Buffer> = {}, io = IO): NormalizedModelConfig {
  const dir = path.join(repo, 'm');
  mkdirSync(path.join(dir, '1'), { recursive: true });
  writeFileSync(path.join(dir, 'config.pbtxt'), `${io}\n${text}`);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  const raw = readRawConfig({ name: 'm', repository: repo, dir });
  return normalizeRawConfig(raw, { name: 'm', version: 1, source: path.join(dir, 'config.pbtxt') });
}

function bound(config: ModelConfig): NormalizedModelConfig {
  return normalizeBindConfig({
    modelName: 'm', inputs: [{ name: 'x', dtype: 'FP32', shape: [3] }], outputs: [{ name: 'y', dtype: 'FP32', shape: [3] }],
    config, instanceCount: 1,
  });
}

function expectInvalid(fn: () => unknown, message: string | RegExp): void {
  const err = errorOf(fn);
  expect(err.code).toBe('INVALID_ARG');
  if (typeof message === 'string') expect(err.message).toBe(message);
  else expect(err.message).toMatch(message);
}

const CONTROLS = `
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } ] }
  ]`;

describe('repository sequence_batching → NormalizedSequenceBatching', () => {
  test('an empty sequence_batching gets Triton\'s defaults: direct, 1 s idle', () => {
    const config = fromPbtxt('sequence_batching { }');
    expect(config.dynamicBatching).toBeNull();
    expect(config.sequenceBatching).toEqual({
      strategy: 'direct', maxSequenceIdleMicroseconds: 1_000_000, maxQueueDelayMicroseconds: 0, minimumSlotUtilization: 0,
      maxCandidateSequences: 4, preferredBatchSize: [4], preserveOrdering: false, controls: [], states: [], iterativeSequence: false,
    });
  });

  test('no sequence_batching → absent', () => {
    expect(fromPbtxt('').sequenceBatching).toBeUndefined();
  });

  test('controls of every kind, with their datatypes and [false, true] values', () => {
    const config = fromPbtxt(`sequence_batching { max_sequence_idle_microseconds: 5000 ${CONTROLS} }`);
    expect(config.sequenceBatching!.maxSequenceIdleMicroseconds).toBe(5000);
    expect(config.sequenceBatching!.controls).toEqual([
      { kind: 'CONTROL_SEQUENCE_START', name: 'START', dtype: 'INT32', falseTrue: [0, 1] },
      { kind: 'CONTROL_SEQUENCE_END', name: 'END', dtype: 'FP32', falseTrue: [0, 1] },
      { kind: 'CONTROL_SEQUENCE_READY', name: 'READY', dtype: 'BOOL', falseTrue: [0, 1] },
      { kind: 'CONTROL_SEQUENCE_CORRID', name: 'CORRID', dtype: 'BYTES' },
    ]);
  });

  test('direct: max_queue_delay_microseconds and minimum_slot_utilization', () => {
    const b = fromPbtxt('sequence_batching { direct { max_queue_delay_microseconds: 100 minimum_slot_utilization: 0.5 } }').sequenceBatching!;
    expect(b).toMatchObject({ strategy: 'direct', maxQueueDelayMicroseconds: 100, minimumSlotUtilization: 0.5 });
  });

  test('oldest: candidates 0 → max(1, max_batch_size), preferred sizes sorted, or [max_batch_size]', () => {
    expect(fromPbtxt('sequence_batching { oldest { } }').sequenceBatching).toMatchObject({
      strategy: 'oldest', maxCandidateSequences: 4, preferredBatchSize: [4], preserveOrdering: false,
    });
    expect(fromPbtxt(`sequence_batching { oldest { max_candidate_sequences: 8 preferred_batch_size: [ 4, 2 ]
      max_queue_delay_microseconds: 7 preserve_ordering: true } }`).sequenceBatching).toMatchObject({
      strategy: 'oldest', maxCandidateSequences: 8, preferredBatchSize: [2, 4], maxQueueDelayMicroseconds: 7, preserveOrdering: true,
    });
  });

  test('max_batch_size 0: one slot, preferred [1]', () => {
    const io = 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] } ]';
    expect(fromPbtxt('sequence_batching { oldest { } }', {}, io).sequenceBatching).toMatchObject({
      maxCandidateSequences: 1, preferredBatchSize: [1],
    });
  });

  test('state: zero_data initial state is zeros of dims × dtype size; BYTES zeros are 4-byte zero lengths', () => {
    const b = fromPbtxt(`sequence_batching { state [
      { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ 2, 3 ]
        initial_state { data_type: TYPE_FP32 dims: [ 2, 3 ] zero_data: true name: "zeros" } },
      { input_name: "s_in" output_name: "s_out" data_type: TYPE_STRING dims: [ 2 ]
        initial_state { data_type: TYPE_STRING dims: [ 2 ] zero_data: true name: "empty" } },
      { input_name: "d_in" output_name: "d_out" data_type: TYPE_INT32 dims: [ -1 ] use_same_buffer_for_input_output: true }
    ] }`).sequenceBatching!;
    expect(b.states).toEqual([
      { inputName: 'h_in', outputName: 'h_out', dtype: 'FP32', dims: [2, 3],
        initialState: { name: 'zeros', dims: [2, 3], data: new Uint8Array(24) }, useSameBufferForInputOutput: false, useGrowableMemory: false },
      { inputName: 's_in', outputName: 's_out', dtype: 'BYTES', dims: [2],
        initialState: { name: 'empty', dims: [2], data: new Uint8Array(8) }, useSameBufferForInputOutput: false, useGrowableMemory: false },
      { inputName: 'd_in', outputName: 'd_out', dtype: 'INT32', dims: [-1], initialState: undefined,
        useSameBufferForInputOutput: true, useGrowableMemory: false },
    ]);
  });

  test('state: data_file is read from <model>/initial_state/ (a longer file is cut to size, as in Triton)', () => {
    const bytes = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
    const b = fromPbtxt(`sequence_batching { state [ { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ -1 ]
      initial_state { data_type: TYPE_FP32 dims: [ 3 ] data_file: "h.bin" name: "init" } } ] }`,
    { 'initial_state/h.bin': bytes }).sequenceBatching!;
    expect(b.states[0].initialState).toEqual({ name: 'init', dims: [3], data: new Uint8Array(bytes.subarray(0, 12)), dataFile: 'h.bin' });
  });

  test('iterative_sequence is carried', () => {
    expect(fromPbtxt('sequence_batching { iterative_sequence: true }').sequenceBatching!.iterativeSequence).toBe(true);
  });

  const state = (body: string): string => `sequence_batching { state [ { input_name: "h_in" output_name: "h_out" ${body} } ] }`;

  test.each([
    ['a control without a name', 'sequence_batching { control_input [ { control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }',
      'sequence batching control tensor must have a name for m'],
    ['a control with no false_true list', 'sequence_batching { control_input [ { name: "S" control [ { kind: CONTROL_SEQUENCE_START } ] } ] }',
      "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START for m (control input 'S')"],
    ['a control with two false_true lists',
      'sequence_batching { control_input [ { name: "S" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ] } ] } ] }',
      "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for CONTROL_SEQUENCE_END for m (control input 'S')"],
    ['a false_true list of 3 entries',
      'sequence_batching { control_input [ { name: "S" control [ { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true, true ] } ] } ] }',
      "sequence batching control 'bool_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_READY for m (control input 'S' has 3)"],
    ['CORRID without data_type', 'sequence_batching { control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID } ] } ] }',
      'unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING (control input \'C\' gives no data_type)'],
    ['CORRID of FP32', 'sequence_batching { control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] } ] }',
      'unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING (control input \'C\' has TYPE_FP32)'],
    ['CORRID with a false_true list',
      'sequence_batching { control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 int32_false_true: [ 0, 1 ] } ] } ] }',
      "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for m (control input 'C')"],
    ['a control kind given twice', `sequence_batching { control_input [
        { name: "A" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "B" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }`,
    'sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m'],
    ['one control name twice', `sequence_batching { control_input [
        { name: "A" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "A" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] } ] }`,
    "sequence batching control tensor 'A' is specified for multiple control kinds for m"],
    ['two controls in one control_input', `sequence_batching { control_input [
        { name: "A" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }, { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] } ] }`,
    "model 'm': control input 'A' lists 2 controls; give each control its own control_input (one tensor per control)"],
    ['a control named like a declared input', 'sequence_batching { control_input [ { name: "x" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }',
      "model 'm': 'x' is a control input (CONTROL_SEQUENCE_START) of sequence_batching and also a declared input entry; the sequence batcher feeds it, so remove it from input"],
    ['a state input named like a declared input', 'sequence_batching { state [ { input_name: "x" output_name: "o" data_type: TYPE_FP32 dims: [ 3 ] } ] }',
      "model 'm': 'x' is a state input of sequence_batching and also a declared input entry; the sequence batcher feeds it, so remove it from input"],
    ['a control and a state of one name', `sequence_batching {
        control_input [ { name: "h_in" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
        state [ { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ 3 ] } ] }`,
    "model 'm': 'h_in' is both a control input (CONTROL_SEQUENCE_START) and a state input; each tensor the sequence batcher feeds needs its own name"],
    ['a state input name twice', `sequence_batching { state [ { input_name: "a" output_name: "b" data_type: TYPE_FP32 dims: [ 1 ] },
        { input_name: "a" output_name: "c" data_type: TYPE_FP32 dims: [ 1 ] } ] }`, "State input name 'a' specified more than once. (model 'm')"],
    ['a state output name twice', `sequence_batching { state [ { input_name: "a" output_name: "b" data_type: TYPE_FP32 dims: [ 1 ] },
        { input_name: "c" output_name: "b" data_type: TYPE_FP32 dims: [ 1 ] } ] }`, "model 'm': state output name 'b' specified more than once"],
    ['a state without output_name', 'sequence_batching { state [ { input_name: "a" data_type: TYPE_FP32 dims: [ 1 ] } ] }',
      "model 'm': sequence_batching.state[0] must set both input_name and output_name"],
    ['a state without data_type', state('dims: [ 1 ]'), "model 'm': sequence_batching.state[0].data_type must be set for state 'h_in'"],
    ['a state without dims', state('data_type: TYPE_FP32'),
      "model 'm': sequence_batching.state[0].dims of state 'h_in' must list at least one dimension (use [1] for a single value)"],
    ['a state with dims -2', state('data_type: TYPE_FP32 dims: [ -2 ]'),
      "model 'm': sequence_batching.state[0].dims of state 'h_in' must be integers >= -1 (-1 = dynamic), got [-2]"],
    ['two initial states', state(`data_type: TYPE_FP32 dims: [ 1 ] initial_state [ { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true name: "a" },
        { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true name: "b" } ]`),
    "initial_state field for state input 'h_in' must contain exactly one or zero element. Found '2' elements. (model 'm')"],
    ['initial state of another datatype', state('data_type: TYPE_FP32 dims: [ 1 ] initial_state { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "a" }'),
      "The data type used for 'initial_state' field of state 'h_in' does not match the state data type. (model 'm': INT32, the state is FP32)"],
    ['initial state without name', state('data_type: TYPE_FP32 dims: [ 1 ] initial_state { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true }'),
      "Field 'name' must be set when using initial_state for state input 'h_in'. (model 'm')"],
    ['initial state with neither zero_data nor data_file', state('data_type: TYPE_FP32 dims: [ 1 ] initial_state { data_type: TYPE_FP32 dims: [ 1 ] name: "a" }'),
      "initial_state setting expects state 'h_in' to have state_data set (model 'm', sequence_batching.state[0].initial_state: give zero_data or data_file)"],
    ['initial state dims with -1', state('data_type: TYPE_FP32 dims: [ -1 ] initial_state { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true name: "a" }'),
      "'initial_state' field for state input name 'h_in' contains variable dimensions. (model 'm')"],
    ['initial state of another rank', state('data_type: TYPE_FP32 dims: [ 2 ] initial_state { data_type: TYPE_FP32 dims: [ 2, 1 ] zero_data: true name: "a" }'),
      "Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input 'h_in'. 2 != 1 (model 'm')"],
    ['initial state dims other than the state\'s', state('data_type: TYPE_FP32 dims: [ 2 ] initial_state { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true name: "a" }'),
      "'initial_state' dim for input name 'h_in' doesn't match 'state' dim description. 3 != 2 (model 'm')"],
    ['growable memory without a single buffer', state('data_type: TYPE_FP32 dims: [ 1 ] use_growable_memory: true'),
      "In order to 'use_growable_memory', you must also enable 'use_single_buffer' for state input name 'h_in'. (model 'm': set use_same_buffer_for_input_output)"],
    ['growable memory on CPU instances', `${state('data_type: TYPE_FP32 dims: [ 1 ] use_same_buffer_for_input_output: true use_growable_memory: true')}
      instance_group { kind: KIND_CPU }`, /^'use_growable_memory' can only work with KIND_GPU model instances right now\./],
    ['minimum_slot_utilization above 1', 'sequence_batching { direct { minimum_slot_utilization: 1.5 } }',
      'sequence batching minimum slot utilization must be in range (0.0, 1.0] for m (sequence_batching.direct.minimum_slot_utilization is 1.5)'],
    ['a preferred size of 0', 'sequence_batching { oldest { preferred_batch_size: [ 0 ] } }', 'sequence batching preferred batch size must be positive for m (got 0)'],
    ['a preferred size above max_batch_size', 'sequence_batching { oldest { preferred_batch_size: [ 8 ] } }',
      'sequence batching preferred batch size must be <= max batch size for m (8 > 4)'],
    ['negative max_candidate_sequences', 'sequence_batching { oldest { max_candidate_sequences: -1 } }',
      "model 'm': sequence_batching.oldest.max_candidate_sequences must be an integer >= 0, got -1"],
    ['state with a decoupled model', `${state('data_type: TYPE_FP32 dims: [ 1 ]')} model_transaction_policy { decoupled: true }`,
      /^model 'm': implicit state \(sequence_batching\.state\) cannot be used with a decoupled model in infernode: .*Remove the decoupled transaction policy/],
    ['response cache', 'sequence_batching { } response_cache { enable: true }', /^Response Cache does not currently support model m with sequence batching scheduler/],
  ])('%s is INVALID_ARG', (_what, text, message) => {
    expectInvalid(() => fromPbtxt(text), message);
  });

  test('sequence_batching with dynamic_batching is refused by the parser (one scheduling_choice)', () => {
    expectInvalid(() => fromPbtxt('dynamic_batching { }\nsequence_batching { }'),
      /field 'sequence_batching' cannot be set together with 'dynamic_batching' \(both belong to oneof 'scheduling_choice'\)/);
  });

  test('direct and oldest together are refused by the parser (one strategy_choice)', () => {
    expectInvalid(() => fromPbtxt('sequence_batching { direct { } oldest { } }'), /cannot be set together with 'direct'/);
  });

  const fileState = (file: string, dims = '[ 2 ]'): string => state(`data_type: TYPE_FP32 dims: ${dims}
    initial_state { data_type: TYPE_FP32 dims: ${dims} data_file: "${file}" name: "a" }`);

  test.each([
    ['a path with ..', '../config.pbtxt', /initial_state data_file '\.\.\/config\.pbtxt' must be a relative path inside .*initial_state$/],
    ['an absolute path', '/etc/passwd', /initial_state data_file '\/etc\/passwd' must be a relative path inside /],
    ['a missing file', 'none.bin', /initial_state data_file 'none\.bin' is not a file in .*initial_state$/],
  ])('data_file: %s is INVALID_ARG', (_what, file, message) => {
    expectInvalid(() => fromPbtxt(fileState(file), { 'initial_state/ok.bin': Buffer.alloc(8) }), message);
  });

  test('data_file: a symbolic link out of initial_state/ is refused', () => {
    writeFileSync(path.join(repo, 'secret.bin'), Buffer.alloc(8));
    mkdirSync(path.join(repo, 'm', 'initial_state'), { recursive: true });
    symlinkSync(path.join(repo, 'secret.bin'), path.join(repo, 'm', 'initial_state', 'link.bin'));
    expectInvalid(() => fromPbtxt(fileState('link.bin')), /initial_state data_file 'link\.bin' leads outside /);
  });

  test('data_file: too few bytes is INVALID_ARG with Triton\'s text', () => {
    expectInvalid(() => fromPbtxt(fileState('h.bin'), { 'initial_state/h.bin': Buffer.alloc(7) }),
      "initial_state setting expects 8 bytes, but the data provided from h.bin only has 7 bytes (model 'm', state 'h_in', FP32 [2])");
  });

  test('data_file: BYTES state must hold the right number of length-prefixed elements', () => {
    const text = state(`data_type: TYPE_STRING dims: [ 2 ]
      initial_state { data_type: TYPE_STRING dims: [ 2 ] data_file: "s.bin" name: "a" }`);
    expectInvalid(() => fromPbtxt(text, { 'initial_state/s.bin': Buffer.from([1, 0, 0, 0, 65]) }), /expected 2 BYTES elements, got 1/);
    const good = Buffer.from([1, 0, 0, 0, 65, 0, 0, 0, 0]);
    expect(fromPbtxt(text, { 'initial_state/s.bin': good }).sequenceBatching!.states[0].initialState!.data).toEqual(new Uint8Array(good));
  });
});

describe('the served config prints sequence_batching back complete', () => {
  test('direct, controls and a state with its initial state', () => {
    const config = fromPbtxt(`sequence_batching { ${CONTROLS}
      state [ { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ 2 ]
        initial_state { data_type: TYPE_FP32 dims: [ 2 ] data_file: "h.bin" name: "init" } } ] }`,
    { 'initial_state/h.bin': Buffer.alloc(8) });
    const json = toModelConfigJson(config);
    expect(json.dynamic_batching).toBeUndefined();
    expect(json.sequence_batching).toEqual({
      direct: { max_queue_delay_microseconds: 0, minimum_slot_utilization: 0 },
      max_sequence_idle_microseconds: 1000000,
      control_input: [
        { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_INVALID' }] },
        { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', int32_false_true: [], fp32_false_true: [0, 1], bool_false_true: [], data_type: 'TYPE_INVALID' }] },
        { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [], fp32_false_true: [], bool_false_true: [false, true], data_type: 'TYPE_INVALID' }] },
        { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', int32_false_true: [], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_STRING' }] },
      ],
      state: [{
        input_name: 'h_in', output_name: 'h_out', data_type: 'TYPE_FP32', dims: [2],
        // Triton's 64-bit fix-up misses initial_state dims: they stay strings, as protobuf prints them.
        initial_state: [{ data_type: 'TYPE_FP32', dims: ['2'], data_file: 'h.bin', name: 'init' }],
        use_same_buffer_for_input_output: false, use_growable_memory: false,
      }],
      iterative_sequence: false,
    });
  });

  test('oldest with its filled-in defaults', () => {
    expect(toModelConfigJson(fromPbtxt('sequence_batching { oldest { } }')).sequence_batching).toMatchObject({
      oldest: { max_candidate_sequences: 4, preferred_batch_size: [4], max_queue_delay_microseconds: 0, preserve_ordering: false },
    });
  });
});

describe('bind(): ModelConfig.sequenceBatcher', () => {
  test('normalizes into the same contract, with the dynamic batcher off', () => {
    const config = bound({
      maxBatchSize: 8,
      sequenceBatcher: {
        strategy: 'oldest', maxCandidateSequences: 16, preferredBatchSize: [8, 4], maxQueueDelayMicroseconds: 100,
        controlInputs: [
          { name: 'START', kind: 'CONTROL_SEQUENCE_START', boolFalseTrue: [false, true] },
          { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', dataType: BigUint64Array },
        ],
        states: [
          { inputName: 'h_in', outputName: 'h_out', dtype: Float32Array, shape: [2], initialState: { data: new Float32Array([1, 2]) } },
          { inputName: 'c_in', outputName: 'c_out', dtype: 'INT32', shape: [3], initialState: { zeroData: true, name: 'zero' } },
          { inputName: 'd_in', outputName: 'd_out', dtype: 'FP32', shape: [-1] },
        ],
      },
    });
    expect(config.dynamicBatching).toBeNull();
    expect(config.sequenceBatching).toEqual({
      strategy: 'oldest', maxSequenceIdleMicroseconds: 1_000_000, maxQueueDelayMicroseconds: 100, minimumSlotUtilization: 0,
      maxCandidateSequences: 16, preferredBatchSize: [4, 8], preserveOrdering: false, iterativeSequence: false,
      controls: [
        { kind: 'CONTROL_SEQUENCE_START', name: 'START', dtype: 'BOOL', falseTrue: [0, 1] },
        { kind: 'CONTROL_SEQUENCE_CORRID', name: 'CORRID', dtype: 'UINT64' },
      ],
      states: [
        { inputName: 'h_in', outputName: 'h_out', dtype: 'FP32', dims: [2],
          initialState: { name: 'initial_state', dims: [2], data: new Uint8Array(new Float32Array([1, 2]).buffer) },
          useSameBufferForInputOutput: false, useGrowableMemory: false },
        { inputName: 'c_in', outputName: 'c_out', dtype: 'INT32', dims: [3],
          initialState: { name: 'zero', dims: [3], data: new Uint8Array(12) }, useSameBufferForInputOutput: false, useGrowableMemory: false },
        { inputName: 'd_in', outputName: 'd_out', dtype: 'FP32', dims: [-1], initialState: undefined,
          useSameBufferForInputOutput: false, useGrowableMemory: false },
      ],
    });
  });

  test('an initial state dataFile is read when the model is bound', () => {
    const file = path.join(repo, 'h.bin');
    writeFileSync(file, Buffer.from(new Float32Array([5, 6]).buffer));
    const config = bound({ sequenceBatcher: { states: [{ inputName: 'h_in', outputName: 'h_out', dtype: 'FP32', shape: [2], initialState: { dataFile: file } }] } });
    expect(config.sequenceBatching!.states[0].initialState).toEqual({
      name: 'initial_state', dims: [2], data: new Uint8Array(new Float32Array([5, 6]).buffer), dataFile: file,
    });
  });

  test('batching: false → max_batch_size 0, one slot', () => {
    expect(bound({ batching: false, sequenceBatcher: {} }).sequenceBatching).toMatchObject({ maxCandidateSequences: 1, preferredBatchSize: [1] });
  });

  test.each<[string, ModelConfig, string | RegExp]>([
    ['batcher and sequenceBatcher', { batcher: {}, sequenceBatcher: {} },
      /^model 'm': config\.batcher \(the dynamic batcher\) and config\.sequenceBatcher cannot both be given: the sequence batcher replaces the dynamic batcher/],
    ['an unknown strategy', { sequenceBatcher: { strategy: 'newest' as 'oldest' } }, "model 'm': sequenceBatcher.strategy must be 'direct' or 'oldest', got \"newest\""],
    ['an oldest field with direct', { sequenceBatcher: { preferredBatchSize: [2] } },
      "model 'm': sequenceBatcher.preferredBatchSize belongs to the 'oldest' strategy, but sequenceBatcher.strategy is 'direct' (the default); set strategy: 'oldest' or remove it"],
    ['a direct field with oldest', { sequenceBatcher: { strategy: 'oldest', minimumSlotUtilization: 0.5 } },
      "model 'm': sequenceBatcher.minimumSlotUtilization belongs to the 'direct' strategy, but sequenceBatcher.strategy is 'oldest'; set strategy: 'direct' or remove it"],
    ['an unknown control kind', { sequenceBatcher: { controlInputs: [{ name: 'S', kind: 'START' as 'CONTROL_SEQUENCE_START' }] } },
      /^model 'm': control input 'S' has kind "START", expected one of CONTROL_SEQUENCE_START, /],
    ['a control named like an input', { sequenceBatcher: { controlInputs: [{ name: 'x', kind: 'CONTROL_SEQUENCE_END', int32FalseTrue: [0, 1] }] } },
      "model 'm': 'x' is a control input (CONTROL_SEQUENCE_END) of sequence_batching and also a declared inputs entry; the sequence batcher feeds it, so remove it from inputs"],
    ['a negative idle time', { sequenceBatcher: { maxSequenceIdleMicroseconds: -1 } },
      "model 'm': sequenceBatcher.maxSequenceIdleMicroseconds must be an integer >= 0, got -1"],
    ['a state without shape', { sequenceBatcher: { states: [{ inputName: 'a', outputName: 'b', dtype: 'FP32' } as never] } },
      "model 'm': sequenceBatcher.states[0].shape of state 'a' must list at least one dimension (use [1] for a single value)"],
    ['an initial state without data', { sequenceBatcher: { states: [{ inputName: 'a', outputName: 'b', dtype: 'FP32', shape: [1], initialState: {} }] } },
      "initial_state setting expects state 'a' to have state_data set (model 'm', sequenceBatcher.states[0].initialState: give zero_data or data_file (zeroData, data or dataFile))"],
    ['an initial state of a dynamic state without shape', { sequenceBatcher: { states: [{ inputName: 'a', outputName: 'b', dtype: 'FP32', shape: [-1], initialState: { zeroData: true } }] } },
      "model 'm': sequenceBatcher.states[0].initialState.shape must be given for state 'a', whose shape has -1"],
    ['initial data of the wrong size', { sequenceBatcher: { states: [{ inputName: 'a', outputName: 'b', dtype: 'FP32', shape: [2], initialState: { data: new Float32Array(1) } }] } },
      "initial_state setting expects 8 bytes, but the data provided from data only has 4 bytes (model 'm', state 'a', FP32 [2])"],
    ['a missing dataFile', { sequenceBatcher: { states: [{ inputName: 'a', outputName: 'b', dtype: 'FP32', shape: [2], initialState: { dataFile: '/nonexistent/x.bin' } }] } },
      /^model 'm': sequenceBatcher\.states\[0\]\.initialState data_file '\/nonexistent\/x\.bin' cannot be read: ENOENT/],
    ['state with decoupled', { decoupled: true, sequenceBatcher: { states: [{ inputName: 'a', outputName: 'b', dtype: 'FP32', shape: [1] }] } },
      /^model 'm': implicit state \(sequenceBatcher\.states\) cannot be used with a decoupled model in infernode/],
    ['responseCache', { responseCache: true, sequenceBatcher: {} }, /^Response Cache does not currently support model m with sequence batching scheduler \(config\.sequenceBatcher\)/],
  ])('%s is INVALID_ARG', (_what, config, message) => {
    expectInvalid(() => bound(config), message);
  });
});

describe('ONNX auto-complete and the sequence batcher\'s tensors', () => {
  const onnxInputs = [
    { name: 'x', dtype: 'FP32', dims: [-1, 3] }, { name: 'START', dtype: 'INT32', dims: [-1, 1] }, { name: 'h_in', dtype: 'FP32', dims: [-1, 4] },
  ] as never[];
  const onnxOutputs = [{ name: 'y', dtype: 'FP32', dims: [-1, 3] }, { name: 'h_out', dtype: 'FP32', dims: [-1, 4] }] as never[];
  const sequence = (startType = 'int32_false_true', stateType = 'TYPE_FP32'): RawModelConfig => ({
    sequence_batching: {
      control_input: [{ name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', [startType]: [0, 1] }] }],
      state: [{ input_name: 'h_in', output_name: 'h_out', data_type: stateType, dims: [4] }],
    },
  });

  test('control and state tensors are neither auto-completed nor required; no dynamic_batching is added', () => {
    const out = autoCompleteOnnxConfig('m', sequence(), onnxInputs, onnxOutputs);
    expect(out.max_batch_size).toBe(4);
    expect(out.dynamic_batching).toBeUndefined();
    expect(out.input).toEqual([{ name: 'x', data_type: 'TYPE_FP32', dims: [3] }]);
    expect(out.output).toEqual([{ name: 'y', data_type: 'TYPE_FP32', dims: [3] }]);
    const declared = autoCompleteOnnxConfig('m', { ...sequence(), max_batch_size: 2, input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [3] }] },
      onnxInputs, onnxOutputs);
    expect(declared.input).toEqual([{ name: 'x', data_type: 'TYPE_FP32', dims: [3] }]);
  });

  test.each([
    ['a control the model lacks', { sequence_batching: { control_input: [{ name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', int32_false_true: [0, 1] }] }] } },
      "model 'm': sequence_batching control input (CONTROL_SEQUENCE_END) 'END' is not an input of the ONNX model (its inputs: x, START, h_in)"],
    ['a control of another datatype', sequence('fp32_false_true'),
      "model 'm': sequence_batching control input (CONTROL_SEQUENCE_START) 'START' is TYPE_FP32, but the ONNX model's input 'START' is TYPE_INT32"],
    ['a state of another datatype', sequence('int32_false_true', 'TYPE_FP64'),
      "model 'm': sequence_batching state input_name 'h_in' is TYPE_FP64, but the ONNX model's input 'h_in' is TYPE_FP32"],
    ['a state output the model lacks', { sequence_batching: { state: [{ input_name: 'h_in', output_name: 'nope', data_type: 'TYPE_FP32', dims: [4] }] } },
      "model 'm': sequence_batching state output_name 'nope' is not an output of the ONNX model (its outputs: y, h_out)"],
  ])('%s is INVALID_ARG', (_what, config, message) => {
    expectInvalid(() => autoCompleteOnnxConfig('m', config as RawModelConfig, onnxInputs, onnxOutputs), message);
  });

  test('precheckRawConfig finds a bad sequence_batching before any session is created', () => {
    const dir = path.join(repo, 'p');
    expectInvalid(() => precheckRawConfig(
      { sequence_batching: { control_input: [{ name: 'S', control: [{ kind: 'CONTROL_SEQUENCE_START' }] }] } },
      { name: 'p', version: 1, source: path.join(dir, 'config.pbtxt') }),
    /^sequence batching must specify either 'int32_false_true'/);
  });
});

test('use_growable_memory with KIND_AUTO instances passes the config checks (the engine resolves the kind)', () => {
  const text = `sequence_batching { state [ { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ 1 ]
    use_same_buffer_for_input_output: true use_growable_memory: true } ] }`;
  expect(fromPbtxt(text).sequenceBatching!.states[0]).toMatchObject({ useSameBufferForInputOutput: true, useGrowableMemory: true });
});
