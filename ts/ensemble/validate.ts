/**
 * An ensemble's DAG, checked when the ensemble loads (or is bound) against the step models'
 * configs: every error is a load error (INVALID_ARG) naming the ensemble, the step and the
 * tensor. The result is the plan the scheduler runs: for each step, which ensemble tensors it
 * waits for.
 */
import { InferenceServerError, invalidArg } from '../errors';
import type {
  NormalizedEnsembleScheduling, NormalizedEnsembleStep, NormalizedModelConfig, NormalizedTensor,
} from '../config/normalize';
import type { EnsembleScheduling } from '../config/types';

/** Looks a step model's config up (throws NOT_FOUND/UNAVAILABLE when it is not serving). */
export type StepConfigLookup = (name: string, version: number) => NormalizedModelConfig;

/** Triton's label of a step in messages: `step 2 (model 'm')`, 1-based. */
export function stepLabel(index: number, step: NormalizedEnsembleStep): string {
  const version = step.modelVersion >= 0 ? ` version ${step.modelVersion}` : '';
  return `step ${index + 1} (model '${step.modelName}'${version})`;
}

/** bind()'s camelCase form, normalized. */
export function normalizeEnsembleScheduling(model: string, spec: EnsembleScheduling): NormalizedEnsembleScheduling {
  if (!spec || !Array.isArray(spec.step) || spec.step.length === 0) {
    throw invalidArg(`ensemble '${model}': ensembleScheduling.step must list at least one step`);
  }
  return {
    steps: spec.step.map((s, i) => checkStep(model, i, {
      modelName: s.modelName, modelVersion: s.modelVersion ?? -1, inputMap: { ...(s.inputMap ?? {}) }, outputMap: { ...(s.outputMap ?? {}) },
    })),
    maxInflightRequests: checkInflight(model, spec.maxInflightRequests ?? 0),
  };
}

/** The protobuf-JSON form (config.pbtxt, the load API), normalized. */
export function normalizeRawEnsembleScheduling(model: string, raw: Record<string, unknown> | undefined): NormalizedEnsembleScheduling {
  const steps = (raw?.step as Record<string, unknown>[] | undefined) ?? [];
  if (steps.length === 0) {
    throw invalidArg(`ensemble '${model}': platform 'ensemble' needs ensemble_scheduling with at least one step`);
  }
  return {
    steps: steps.map((s, i) => checkStep(model, i, {
      modelName: (s.model_name as string | undefined) ?? '',
      modelVersion: Number(s.model_version ?? -1),
      inputMap: { ...((s.input_map as Record<string, string> | undefined) ?? {}) },
      outputMap: { ...((s.output_map as Record<string, string> | undefined) ?? {}) },
    })),
    maxInflightRequests: checkInflight(model, Number(raw?.max_inflight_requests ?? raw?.max_inflight_responses ?? 0)),
  };
}

function checkStep(model: string, index: number, step: NormalizedEnsembleStep): NormalizedEnsembleStep {
  if (typeof step.modelName !== 'string' || step.modelName === '') {
    throw invalidArg(`ensemble '${model}': step ${index + 1} needs a model_name`);
  }
  if (!Number.isSafeInteger(step.modelVersion) || step.modelVersion < -1 || step.modelVersion === 0) {
    throw invalidArg(`ensemble '${model}': ${stepLabel(index, step)} has model_version ${step.modelVersion}; expected -1 (latest) or a version >= 1`);
  }
  // Triton refuses a step that reads or writes nothing (it counts steps from 0).
  for (const map of ['input_map', 'output_map'] as const) {
    if (Object.keys(map === 'input_map' ? step.inputMap : step.outputMap).length === 0) {
      throw invalidArg(`ensemble '${model}': ${stepLabel(index, step)} has an empty ${map}; map the step model's ` +
        `${map === 'input_map' ? 'inputs from' : 'outputs to'} ensemble tensors (Triton: "must specify '${map}' in step ${index} of ensemble '${model}'")`);
    }
  }
  return step;
}

function checkInflight(model: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw invalidArg(`ensemble '${model}': max_inflight_requests must be an integer >= 0, got ${n}`);
  return n;
}

/** What the scheduler needs per step, resolved at load. */
export interface EnsemblePlan {
  /** Per step: the ensemble tensors it reads (deduplicated). */
  needs: string[][];
  /** Ensemble tensor → the steps that read it. */
  readers: Map<string, number[]>;
  /** Ensemble tensor → the step that writes it (absent for the ensemble's inputs). */
  producers: Map<string, number>;
  /** Per step: whether its model is decoupled (each of its responses continues the DAG on its own). */
  decoupledSteps: boolean[];
  /** Some step is decoupled: so is the ensemble (Triton sets its transaction policy so). */
  decoupled: boolean;
}

/** A tensor's full shape as a request carries it (batch axis first when the model batches). */
function fullShape(t: NormalizedTensor, maxBatchSize: number): number[] {
  return maxBatchSize > 0 ? [-1, ...t.dims] : [...t.dims];
}

function shapesCompatible(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);
}

interface TensorSource {
  dtype: string;
  shape: number[];
  /** Where it comes from, for messages. */
  what: string;
}

/**
 * Validates the DAG against the step models and returns the plan. `lookup` resolves each step's
 * model; a step model that is not serving is a load error naming the step.
 */
export function validateEnsemble(config: NormalizedModelConfig, lookup: StepConfigLookup): EnsemblePlan {
  const name = config.name;
  const scheduling = config.ensembleScheduling!;
  const fail = (message: string): never => {
    throw invalidArg(`ensemble '${name}': ${message}`);
  };
  checkGraph(config);
  const sources = new Map<string, TensorSource>();
  for (const t of config.inputs) {
    sources.set(t.name, { dtype: t.dtype, shape: fullShape(t, config.maxBatchSize), what: `ensemble input '${t.name}'` });
  }
  const producer = new Map<string, number>();
  const stepConfigs = scheduling.steps.map((step, i) => {
    const label = stepLabel(i, step);
    let stepConfig: NormalizedModelConfig;
    try {
      stepConfig = lookup(step.modelName, step.modelVersion);
    } catch (err) {
      const reason = err instanceof InferenceServerError ? err.message : String(err);
      return fail(`${label}: the step model is not available (${reason}); load it before the ensemble, or add it to the repository`);
    }
    checkBatchSize(config, i, step, stepConfig);
    // The top-level cache stores the whole DAG's answer: only for steps whose answers follow
    // from their inputs (Triton: every composing model must be cache-compatible).
    if (config.responseCache && stepConfig.sequenceBatching) {
      fail(`${label}: the response cache cannot be enabled for an ensemble with a sequence batcher step ` +
        `(model '${step.modelName}': its answers depend on the sequence's state); disable response_cache on the ensemble`);
    }
    const outputs = new Map(stepConfig.outputs.map((t) => [t.name, t]));
    for (const [output, tensor] of Object.entries(step.outputMap)) {
      const declared = outputs.get(output);
      if (!declared) fail(`${label}: output_map names output '${output}', which model '${step.modelName}' does not have (it has ${[...outputs.keys()].join(', ')})`);
      if (sources.has(tensor) || producer.has(tensor)) {
        fail(`${label}: ensemble tensor '${tensor}' is already ${producer.has(tensor) ? `the output of step ${producer.get(tensor)! + 1}` : 'an ensemble input'}; each ensemble tensor has exactly one producer`);
      }
      producer.set(tensor, i);
      sources.set(tensor, {
        dtype: declared!.dtype, shape: fullShape(declared!, stepConfig.maxBatchSize), what: `output '${output}' of ${label}`,
      });
    }
    return stepConfig;
  });
  const needs: string[][] = [];
  const readers = new Map<string, number[]>();
  scheduling.steps.forEach((step, i) => {
    const label = stepLabel(i, step);
    const stepConfig = stepConfigs[i];
    const inputs = new Map(stepConfig.inputs.map((t) => [t.name, t]));
    for (const t of stepConfig.inputs) {
      if (!t.optional && !(t.name in step.inputMap)) {
        fail(`${label}: input '${t.name}' of model '${step.modelName}' is not mapped; add it to the step's input_map`);
      }
    }
    const read = new Set<string>();
    for (const [input, tensor] of Object.entries(step.inputMap)) {
      const declared = inputs.get(input);
      if (!declared) fail(`${label}: input_map names input '${input}', which model '${step.modelName}' does not have (it has ${[...inputs.keys()].join(', ')})`);
      const source = sources.get(tensor);
      if (!source) fail(`${label}: input '${input}' reads ensemble tensor '${tensor}', which is neither an ensemble input nor any step's output`);
      checkMatch(fail, source!, declared!.dtype, fullShape(declared!, stepConfig.maxBatchSize), `input '${input}' of ${label}`, tensor);
      read.add(tensor);
    }
    needs.push([...read]);
    for (const tensor of read) readers.set(tensor, [...(readers.get(tensor) ?? []), i]);
  });
  for (const t of config.outputs) {
    const source = sources.get(t.name);
    if (!source || !producer.has(t.name)) fail(`ensemble output '${t.name}' is not mapped: no step's output_map produces it`);
    checkMatch(fail, source!, t.dtype, fullShape(t, config.maxBatchSize), `ensemble output '${t.name}'`, t.name);
  }
  checkAcyclic(fail, scheduling.steps, needs, producer);
  const decoupledSteps = stepConfigs.map((c) => c.decoupled);
  checkDecoupledOrigins(fail, config, needs, producer, decoupledSteps);
  const decoupled = decoupledSteps.some(Boolean);
  if (decoupled && config.responseCache) {
    fail('the response cache cannot be enabled for an ensemble with a decoupled step (the ensemble is decoupled: ' +
      '0..N responses per request); disable response_cache on the ensemble');
  }
  return { needs, readers, producers: producer, decoupledSteps, decoupled };
}

/**
 * Triton's rule for decoupled steps (ensemble_utils.cc): every response of a decoupled step
 * continues the DAG on its own, so a step may not combine tensors that descend from different
 * decoupled steps (or from one and from the request itself, which has one response's worth).
 * Each tensor gets its origin: 0 for the request's, a decoupled step's own label for what it and
 * the plain steps after it produce. The ensemble's outputs are one more such reader (Triton's
 * sink node): one response carries them all, so they too need one origin.
 */
function checkDecoupledOrigins(
  fail: (message: string) => never, config: NormalizedModelConfig, needs: string[][], producer: Map<string, number>,
  decoupledSteps: boolean[],
): void {
  const steps = config.ensembleScheduling!.steps;
  const origin = new Array<number | undefined>(steps.length).fill(undefined);
  const tensorOrigin = (tensor: string): number => {
    const from = producer.get(tensor);
    return from === undefined ? 0 : originOf(from);
  };
  const originOf = (i: number): number => {
    if (origin[i] !== undefined) return origin[i]!;
    const inputs = new Set(needs[i].map(tensorOrigin));
    if (inputs.size > 1) {
      fail(`${stepLabel(i, steps[i])} receives inputs originated from different decoupled models (Triton: "step of ` +
        `model '${steps[i].modelName}' receives inputs originated from different decoupled models")`);
    }
    const base = inputs.size === 0 ? 0 : [...inputs][0];
    origin[i] = decoupledSteps[i] ? i + 1 : base;
    return origin[i]!;
  };
  for (let i = 0; i < steps.length; i++) originOf(i);
  const outputs = config.outputs.map((t) => ({ name: t.name, origin: tensorOrigin(t.name) }));
  if (new Set(outputs.map((o) => o.origin)).size > 1) {
    const from = (o: number): string => (o === 0 ? 'the request (no decoupled step)' : stepLabel(o - 1, steps[o - 1]));
    fail(`the ensemble outputs originate from different decoupled models (${outputs.map((o) => `'${o.name}' from ${from(o.origin)}`).join(', ')}); ` +
      `one response carries every output, so all must follow the same decoupled step (Triton: "in ensemble ${config.name}, step of ` +
      `model '${config.name}' receives inputs originated from different decoupled models")`);
  }
}

/**
 * Triton's load check (ensemble_utils.cc): every request the ensemble accepts must fit each
 * batching step, so a step may not allow fewer rows than the ensemble. A step that does not
 * batch (max_batch_size 0) is fine: its shapes are checked as full shapes.
 */
function checkBatchSize(config: NormalizedModelConfig, index: number, step: NormalizedEnsembleStep, stepConfig: NormalizedModelConfig): void {
  if (stepConfig.maxBatchSize === 0 || stepConfig.maxBatchSize >= config.maxBatchSize) return;
  throw invalidArg(`ensemble ${config.name} allows maximum batch size ${config.maxBatchSize}, but it contains model ` +
    `${step.modelName} which only allows maximum batch size to be ${stepConfig.maxBatchSize} (at step ${index + 1}); ` +
    `lower the ensemble's max_batch_size to ${stepConfig.maxBatchSize} or raise that of model '${step.modelName}'`);
}

function checkMatch(
  fail: (message: string) => never, source: TensorSource, dtype: string, shape: number[], consumer: string, tensor: string,
): void {
  if (source.dtype !== dtype) {
    fail(`ensemble tensor '${tensor}': ${source.what} has datatype ${source.dtype}, but ${consumer} expects ${dtype}`);
  }
  if (!shapesCompatible(source.shape, shape)) {
    fail(`ensemble tensor '${tensor}': ${source.what} has shape [${source.shape.join(',')}], but ${consumer} expects [${shape.join(',')}]`);
  }
}

/**
 * Triton's config checks of an ensemble's graph (model_config_utils.cc
 * ValidateEnsembleSchedulingConfig), made before any step model is looked up, with its texts: no
 * model_warmup (an ensemble has no instances to warm; its step models warm up with their own),
 * every ensemble input read by a step, every tensor a step writes read by a step or an ensemble
 * output (an unread tensor is a mapping mistake, not a tensor to compute and drop).
 */
function checkGraph(config: NormalizedModelConfig): void {
  const name = config.name;
  if (config.modelWarmup.length > 0) {
    throw invalidArg(`model_warmup can not be specified for ensemble '${name}'; remove it (its step models warm up with their own model_warmup)`);
  }
  const steps = config.ensembleScheduling!.steps;
  const read = new Set(steps.flatMap((step) => Object.values(step.inputMap)));
  for (const t of config.inputs) {
    if (!read.has(t.name)) {
      throw invalidArg(`ensemble input '${t.name}' for ensemble ${name}' is not used: no step's input_map reads it; ` +
        'map it to a step input or remove it from the ensemble\'s inputs');
    }
  }
  const outputs = new Set(config.outputs.map((t) => t.name));
  steps.forEach((step, i) => {
    for (const [output, tensor] of Object.entries(step.outputMap)) {
      if (read.has(tensor) || outputs.has(tensor)) continue;
      throw invalidArg(`ensemble tensor '${tensor}' is unused in ensemble '${name}': ${stepLabel(i, step)} writes it (output ` +
        `'${output}'), but no step reads it and no ensemble output is it; remove it from the step's output_map`);
    }
  });
}

/** A cycle (a step that needs, through other steps, its own output) is a load error naming its steps. */
function checkAcyclic(
  fail: (message: string) => never, steps: NormalizedEnsembleStep[], needs: string[][], producer: Map<string, number>,
): void {
  const state = new Array<0 | 1 | 2>(steps.length).fill(0);  // 0 new, 1 on the path, 2 done
  const path: number[] = [];
  const visit = (i: number): void => {
    if (state[i] === 2) return;
    if (state[i] === 1) {
      const cycle = [...path.slice(path.indexOf(i)), i].map((s) => stepLabel(s, steps[s]));
      fail(`the steps form a cycle: ${cycle.join(' -> ')}`);
    }
    state[i] = 1;
    path.push(i);
    for (const tensor of needs[i]) {
      const from = producer.get(tensor);
      if (from !== undefined) visit(from);
    }
    path.pop();
    state[i] = 2;
  };
  for (let i = 0; i < steps.length; i++) visit(i);
}
