/**
 * Helpers of the repository suites: temporary model repositories on disk, small ONNX models
 * written by infernode's own ONNX writer (ts/tools/onnx) for each test, and a Triton serving a
 * repository in process (no listeners: suites run in parallel). Nothing here stands in for a
 * real component: every model is loaded by the real repository manager and run by the real
 * native ONNX Runtime engine or the real JS model loader.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TritonConfig } from '../../../ts/config/types';
import type { ControlMode, ModelRepositoryManager } from '../../../ts/repository/manager';
import { ElemType, encodeModel, type ElemTypeValue, type Node } from '../../../ts/tools/onnx';
import type { Triton } from '../../../ts/triton';
import { inProcessTriton } from '../helpers';

/** A model repository in a fresh temporary directory. */
export class TempRepo {
  readonly root: string;

  constructor(prefix = 'repo') {
    this.root = mkdtempSync(path.join(os.tmpdir(), `infernode-${prefix}-`));
  }

  path(...parts: string[]): string {
    return path.join(this.root, ...parts);
  }

  /** Writes a file (creating its directories) and returns its path. */
  write(relative: string, content: string | Uint8Array): string {
    const file = this.path(relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
    return file;
  }

  /** `<model>/config.pbtxt`. */
  config(model: string, text: string): string {
    return this.write(`${model}/config.pbtxt`, text);
  }

  /** `<model>/<version>/<file>` (model.onnx by default). */
  onnx(model: string, version: number, bytes: Uint8Array, file = 'model.onnx'): string {
    return this.write(`${model}/${version}/${file}`, bytes);
  }

  mkdir(relative: string): string {
    const dir = this.path(relative);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  remove(relative: string): void {
    rmSync(this.path(relative), { recursive: true, force: true });
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

export interface Served {
  triton: Triton;
  manager: ModelRepositoryManager;
  /** The repository manager's log lines. */
  logs: string[];
}

export interface ServeOptions {
  controlMode?: ControlMode;
  loadModels?: string[];
  /** Default 0: no timed polling (tests call manager.poll()). */
  pollSecs?: number;
  config?: TritonConfig;
}

/** A Triton (no listeners) using `repos`; call `triton.run()` to load. */
export function repoTriton(repos: string | string[], options: ServeOptions = {}): Served {
  const triton = inProcessTriton({ exitOnError: false, ...options.config });
  const logs: string[] = [];
  const manager = triton.useRepository({
    repositories: Array.isArray(repos) ? repos : [repos],
    controlMode: options.controlMode ?? 'none',
    loadModels: options.loadModels,
    pollSecs: options.pollSecs ?? 0,
    log: (line) => logs.push(line),
  });
  return { triton, manager, logs };
}

/** A repository Triton that has run its initial loads. */
export async function startRepoTriton(repos: string | string[], options: ServeOptions = {}): Promise<Served> {
  const served = repoTriton(repos, options);
  await served.triton.run();
  return served;
}

/** An initializer of FP32 values. */
function fp32Tensor(name: string, dims: number[], values: number[]) {
  return { name, elemType: ElemType.FLOAT, dims, raw: new Float32Array(values) };
}

/**
 * OUTPUT0 = INPUT0 + `value`: FP32 [batch, width]. A version's model adds its own constant, so
 * each response tells which version served it.
 */
export function addConstModel(value: number, width = 4): Buffer {
  return encodeModel({
    graph: {
      name: `add_${value}`,
      nodes: [{ opType: 'Add', inputs: ['INPUT0', 'C'], outputs: ['OUTPUT0'] }],
      initializers: [fp32Tensor('C', [1], [value])],
      inputs: [{ name: 'INPUT0', elemType: ElemType.FLOAT, dims: ['batch', width] }],
      outputs: [{ name: 'OUTPUT0', elemType: ElemType.FLOAT, dims: ['batch', width] }],
    },
  });
}

/**
 * Scalars (rank 0): Y = X · `factor` + W, where X and W are FP32 scalars and V ([3]) is passed
 * through as V2; the model cannot batch (a scalar has no batch dimension).
 */
export function scalarModel(factor: number): Buffer {
  return encodeModel({
    graph: {
      name: `scalar_${factor}`,
      nodes: [
        { opType: 'Mul', inputs: ['X', 'F'], outputs: ['XF'] },
        { opType: 'Add', inputs: ['XF', 'W'], outputs: ['Y'] },
        { opType: 'Identity', inputs: ['V'], outputs: ['V2'] },
      ],
      initializers: [fp32Tensor('F', [], [factor])],
      inputs: [
        { name: 'X', elemType: ElemType.FLOAT, dims: [] }, { name: 'W', elemType: ElemType.FLOAT, dims: [] },
        { name: 'V', elemType: ElemType.FLOAT, dims: [3] },
      ],
      outputs: [{ name: 'Y', elemType: ElemType.FLOAT, dims: [] }, { name: 'V2', elemType: ElemType.FLOAT, dims: [3] }],
    },
  });
}

/**
 * A model that takes measurable time per run: OUTPUT0 = INPUT0 + `value` ([batch, n, n]), and
 * BUSY = INPUT0 multiplied by itself `reps` times (matrix products per row), so a run costs
 * about reps·n³ multiply-adds per request row.
 */
export function slowAddModel(value: number, n = 96, reps = 8): Buffer {
  const nodes: Node[] = [{ opType: 'Add', inputs: ['INPUT0', 'C'], outputs: ['OUTPUT0'] }];
  let current = 'INPUT0';
  for (let i = 0; i < reps; i++) {
    const out = i === reps - 1 ? 'BUSY' : `m${i}`;
    nodes.push({ opType: 'MatMul', inputs: [current, 'INPUT0'], outputs: [out] });
    current = out;
  }
  return encodeModel({
    graph: {
      name: `slow_add_${value}`,
      nodes,
      initializers: [fp32Tensor('C', [1], [value])],
      inputs: [{ name: 'INPUT0', elemType: ElemType.FLOAT, dims: ['batch', n, n] }],
      outputs: [
        { name: 'OUTPUT0', elemType: ElemType.FLOAT, dims: ['batch', n, n] },
        { name: 'BUSY', elemType: ElemType.FLOAT, dims: ['batch', n, n] },
      ],
    },
  });
}

/**
 * Sums the last axis: INPUT0 [batch?, 2, 3] → OUTPUT0 [batch?, 2, 1] (ReduceSum, keepdims), so
 * the result depends on the shape the model sees. `batched` adds the symbolic batch dimension.
 */
export function rowSumModel(batched: boolean): Buffer {
  const lead = batched ? ['batch'] : [];
  return encodeModel({
    graph: {
      name: 'row_sum',
      nodes: [{ opType: 'ReduceSum', inputs: ['INPUT0', 'axes'], outputs: ['OUTPUT0'], attributes: [{ name: 'keepdims', i: 1 }] }],
      initializers: [{ name: 'axes', elemType: ElemType.INT64, dims: [1], raw: new BigInt64Array([-1n]) }],
      inputs: [{ name: 'INPUT0', elemType: ElemType.FLOAT, dims: [...lead, 2, 3] }],
      outputs: [{ name: 'OUTPUT0', elemType: ElemType.FLOAT, dims: [...lead, 2, 1] }],
    },
  });
}

/** A one-node model `op(X) → Y` of `elemType` [batch, 4]: for operators ONNX Runtime lacks. */
export function singleOpModel(opType: string, elemType: ElemTypeValue = ElemType.FLOAT, domain?: string): Buffer {
  return encodeModel({
    graph: {
      name: `op_${opType}`,
      nodes: [{ opType, inputs: ['X', 'X'], outputs: ['Y'], domain }],
      inputs: [{ name: 'X', elemType, dims: ['batch', 4] }],
      outputs: [{ name: 'Y', elemType, dims: ['batch', 4] }],
    },
    opsets: domain ? [{ domain: '', version: 17 }, { domain, version: 1 }] : undefined,
  });
}

/** Identity with fixed dims and no batch dimension: X [2, 3] → Y [2, 3]. */
export function fixedIdentityModel(): Buffer {
  return encodeModel({
    graph: {
      name: 'fixed_identity',
      nodes: [{ opType: 'Identity', inputs: ['X'], outputs: ['Y'] }],
      inputs: [{ name: 'X', elemType: ElemType.FLOAT, dims: [2, 3] }],
      outputs: [{ name: 'Y', elemType: ElemType.FLOAT, dims: [2, 3] }],
    },
  });
}

/** A config.pbtxt for an FP32 model with INPUT0/OUTPUT0 of `dims`, plus `extra` lines. */
export function fp32Config(options: { maxBatchSize: number; dims: number[]; extra?: string; platform?: string }): string {
  const dims = options.dims.join(', ');
  return [
    `platform: "${options.platform ?? 'onnxruntime_onnx'}"`,
    `max_batch_size: ${options.maxBatchSize}`,
    `input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ ${dims} ] } ]`,
    `output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ ${dims} ] } ]`,
    options.extra ?? '',
  ].join('\n');
}

/** Deterministic FP32 data (mulberry32), uniform in [-1, 1). */
export function randomFloats(count: number, seed: number): Float32Array {
  let a = seed >>> 0;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}
