/**
 * The soak's model repository, written to a temporary directory: ONNX models from infernode's
 * own ONNX writer (native ONNX Runtime engine) and JS models (the JS backend), each computing
 * something whose every output element is known, so a wrong answer cannot pass for a right one.
 * `cycle_*` models are the ones the soak loads, unloads and reloads while traffic runs.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ElemType, encodeModel } from '../tools/onnx';

/** Elements per row of every soak model: FP32 [batch, WIDTH]. */
export const WIDTH = 4;

/** One served model: its tensor names and what it does to each element. */
export interface SoakModel {
  name: string;
  input: string;
  output: string;
  expected: (x: number) => number;
  /** Loaded, unloaded and reloaded during the soak (so UNAVAILABLE/NOT_FOUND answers are expected). */
  cycled: boolean;
}

export const SOAK_MODELS: readonly SoakModel[] = [
  { name: 'add_onnx', input: 'INPUT0', output: 'OUTPUT0', expected: (x) => x + 1, cycled: false },
  { name: 'scale_js', input: 'IN', output: 'OUT', expected: (x) => x * 3, cycled: false },
  { name: 'cycle_onnx', input: 'INPUT0', output: 'OUTPUT0', expected: (x) => x + 7, cycled: true },
  { name: 'cycle_js', input: 'IN', output: 'OUT', expected: (x) => x * 5, cycled: true },
  // Ensembles over the models above: a steady one, and one whose first step is cycled (UNAVAILABLE
  // while cycle_js is unloaded, as a step model that is not serving makes its ensemble).
  { name: 'ens_add_scale', input: 'X', output: 'Y', expected: (x) => (x + 1) * 3, cycled: false },
  { name: 'ens_cycle_add', input: 'X', output: 'Y', expected: (x) => x * 5 + 1, cycled: true },
];

/** A stateful model of the soak: its correlation id's type (the CORRID control's). */
export interface SequenceModel {
  name: string;
  corrid: 'UINT64' | 'STRING';
}

export const SEQUENCE_MODELS: readonly SequenceModel[] = [
  { name: 'seq_sum_js', corrid: 'UINT64' },
  { name: 'seq_sum_str_js', corrid: 'STRING' },
];

/**
 * max_sequence_idle_microseconds of the sequence models, in ms: short, so abandoned sequences
 * expire within the soak, yet well above a client's turnaround between two steps of a sequence
 * (a START refusal that comes back sooner than that after the previous step was sent is a failure;
 * see sequences.ts).
 * 500 ms was too short on a 2-core machine running two test suites at once: a stalled event
 * loop there made a legitimate expiry look like a failure.
 */
export const SEQUENCE_IDLE_MS = 2000;

function addModel(value: number): Uint8Array {
  return encodeModel({
    graph: {
      name: `soak_add_${value}`,
      nodes: [{ opType: 'Add', inputs: ['INPUT0', 'C'], outputs: ['OUTPUT0'] }],
      initializers: [{ name: 'C', elemType: ElemType.FLOAT, dims: [1], raw: new Float32Array([value]) }],
      inputs: [{ name: 'INPUT0', elemType: ElemType.FLOAT, dims: ['batch', WIDTH] }],
      outputs: [{ name: 'OUTPUT0', elemType: ElemType.FLOAT, dims: ['batch', WIDTH] }],
    },
  });
}

function onnxConfig(): string {
  return [
    'platform: "onnxruntime_onnx"',
    'max_batch_size: 8',
    `input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]`,
    `output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]`,
    'dynamic_batching { max_queue_delay_microseconds: 200 }',
    'instance_group [ { count: 1, kind: KIND_CPU } ]',
  ].join('\n');
}

function jsConfig(): string {
  return [
    'backend: "js"',
    'max_batch_size: 8',
    `input [ { name: "IN", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]`,
    `output [ { name: "OUT", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]`,
    'dynamic_batching { }',
    'instance_group [ { count: 2, kind: KIND_CPU } ]',
  ].join('\n');
}

function jsModel(factor: number): string {
  return `exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN.data.map((v) => v * ${factor}) }));\n`;
}

/**
 * The running sum: SUM = SUM_IN (implicit state, zero at START) + IN, also the next state;
 * CORRID_OUT = the correlation id as the model saw it, as text (exact for uint64 ids above 2^53).
 * Null rows (READY false: slots of the batch with nothing ready) get an answer no one receives.
 * NDArray comes from the inputs' own class: a repository in a temporary directory cannot
 * require('infernode').
 */
const SEQUENCE_MODEL_JS = `exports.execute = (requests) => requests.map((r) => {
  const NDArray = r.data.IN.constructor;
  const sum = r.data.SUM_IN.data[0] + r.data.IN.data[0];
  const id = r.data.CORRID.data[0];
  const idText = typeof id === 'bigint' ? String(id) : Buffer.from(id).toString('utf8');
  return {
    SUM: Int32Array.of(sum),
    SUM_OUT: Int32Array.of(sum),
    CORRID_OUT: new NDArray('BYTES', [1, 1], [Buffer.from(idText)]),
  };
});
`;

function sequenceConfig(model: SequenceModel): string {
  return [
    'backend: "js"',
    'max_batch_size: 8',
    'input [ { name: "IN", data_type: TYPE_INT32, dims: [ 1 ] } ]',
    'output [ { name: "SUM", data_type: TYPE_INT32, dims: [ 1 ] }, { name: "CORRID_OUT", data_type: TYPE_STRING, dims: [ 1 ] } ]',
    'sequence_batching {',
    `  max_sequence_idle_microseconds: ${SEQUENCE_IDLE_MS * 1000}`,
    '  direct { }',
    `  control_input [ { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_${model.corrid} } ] } ]`,
    '  state [ { input_name: "SUM_IN" output_name: "SUM_OUT" data_type: TYPE_INT32 dims: [ 1 ]',
    '            initial_state { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "zero" } } ]',
    '}',
    'instance_group [ { count: 1, kind: KIND_CPU } ]',
  ].join('\n');
}

/** An ensemble of two FP32 [WIDTH] steps: X -> first -> second -> Y. */
function ensembleConfig(first: { name: string; input: string; output: string }, second: { name: string; input: string; output: string }): string {
  return [
    'platform: "ensemble"',
    'max_batch_size: 8',
    `input [ { name: "X", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]`,
    `output [ { name: "Y", data_type: TYPE_FP32, dims: [ ${WIDTH} ] } ]`,
    'ensemble_scheduling { step [',
    `  { model_name: "${first.name}" model_version: -1 input_map { key: "${first.input}" value: "X" } output_map { key: "${first.output}" value: "mid" } },`,
    `  { model_name: "${second.name}" model_version: -1 input_map { key: "${second.input}" value: "mid" } output_map { key: "${second.output}" value: "Y" } }`,
    '] }',
  ].join('\n');
}

function write(root: string, relative: string, content: string | Uint8Array): void {
  const file = path.join(root, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
}

/** Writes the repository into a fresh temporary directory; returns its path. */
export function writeSoakRepository(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'infernode-soak-'));
  write(root, 'add_onnx/config.pbtxt', onnxConfig());
  write(root, 'add_onnx/1/model.onnx', addModel(1));
  write(root, 'cycle_onnx/config.pbtxt', onnxConfig());
  write(root, 'cycle_onnx/1/model.onnx', addModel(7));
  write(root, 'scale_js/config.pbtxt', jsConfig());
  write(root, 'scale_js/1/model.js', jsModel(3));
  write(root, 'cycle_js/config.pbtxt', jsConfig());
  write(root, 'cycle_js/1/model.js', jsModel(5));
  const onnxStep = { name: 'add_onnx', input: 'INPUT0', output: 'OUTPUT0' };
  write(root, 'ens_add_scale/config.pbtxt', ensembleConfig(onnxStep, { name: 'scale_js', input: 'IN', output: 'OUT' }));
  mkdirSync(path.join(root, 'ens_add_scale', '1'));
  write(root, 'ens_cycle_add/config.pbtxt', ensembleConfig({ name: 'cycle_js', input: 'IN', output: 'OUT' }, onnxStep));
  mkdirSync(path.join(root, 'ens_cycle_add', '1'));
  for (const model of SEQUENCE_MODELS) {
    write(root, `${model.name}/config.pbtxt`, sequenceConfig(model));
    write(root, `${model.name}/1/model.js`, SEQUENCE_MODEL_JS);
  }
  return root;
}
