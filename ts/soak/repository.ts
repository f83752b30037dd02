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
];

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
  return root;
}
