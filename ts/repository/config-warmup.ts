/**
 * `model_warmup` of a repository config → the `ModelWarmup` entries warm-up runs, checked against
 * the model's inputs and max batch size. Data files are resolved under `<model dir>/warmup/`; a
 * path that leaves that directory is refused.
 */
import * as path from 'node:path';
import { invalidArg } from '../errors';
import { parseDataType } from '../tensor';
import type { NormalizedTensor } from '../config/normalize';
import type { ProtoWarmup, ProtoWarmupInput } from '../config/model-config-proto';
import type { ModelWarmup, WarmupInput } from '../config/types';
import { resolveFileInside } from './model-files';

interface WarmupContext {
  model: string;
  maxBatchSize: number;
  inputs: NormalizedTensor[];
  modelDirectory: string;
  /**
   * The sequence batcher's control and state input names: Triton sends warm-up inputs with these
   * names as override inputs; here warm-up runs as a sequence of its own, whose controls the
   * sequence batcher sets, so they are accepted and left out.
   */
  sequenceInputs?: string[];
}

/** The control_input and state input names of a protobuf-JSON `sequence_batching`. */
export function sequenceInputNames(sb: unknown): string[] {
  if (typeof sb !== 'object' || sb === null) return [];
  const { control_input: controls, state } = sb as { control_input?: unknown; state?: unknown };
  const names = (list: unknown, key: string): string[] => (Array.isArray(list) ? list : [])
    .map((e) => (typeof e === 'object' && e !== null ? (e as Record<string, unknown>)[key] : undefined))
    .filter((n): n is string => typeof n === 'string');
  return [...names(controls, 'name'), ...names(state, 'input_name')];
}

function warmupInput(ctx: WarmupContext, where: string, name: string, input: ProtoWarmupInput): WarmupInput {
  const declared = ctx.inputs.find((t) => t.name === name);
  if (!declared) {
    throw invalidArg(`${where}: '${name}' is not an input of the model (inputs: ${ctx.inputs.map((t) => t.name).join(', ')})`);
  }
  if (!input.data_type || input.data_type === 'TYPE_INVALID') throw invalidArg(`${where}: input '${name}' must specify data_type`);
  const dtype = parseDataType(input.data_type);
  if (dtype !== declared.dtype) {
    throw invalidArg(`${where}: input '${name}' has data_type ${input.data_type}, the model's input is ${declared.dtype}`);
  }
  const shape = input.dims ?? [];
  if (shape.some((d) => d < 0)) {
    // Triton's text (backend_model_instance.cc GenerateWarmupData), then what was given.
    throw invalidArg(`${where}: warmup setting expects all variable-size dimensions are specified for input '${name}' ` +
      `(dims [${shape.join(', ')}]: give each -1 a size)`);
  }
  // zero_data / random_data count as chosen whenever they are set, whatever their value (Triton's rule).
  if (input.zero_data !== undefined) return { dtype, shape, zeroData: true };
  if (input.random_data !== undefined) return { dtype, shape, randomData: true };
  if (input.input_data_file !== undefined) {
    const warmupDir = path.join(ctx.modelDirectory, 'warmup');
    const file = resolveFileInside(warmupDir, input.input_data_file, `${where}: input '${name}' input_data_file`);
    return { dtype, shape, inputDataFile: file };
  }
  throw invalidArg(`${where}: warmup setting expects input '${name}' to have input_data_type set ` +
    '(one of zero_data, random_data or input_data_file)');
}

function warmupEntry(ctx: WarmupContext, warmup: ProtoWarmup, index: number): ModelWarmup | null {
  const where = `model '${ctx.model}': model_warmup ${warmup.name ? `'${warmup.name}'` : `#${index}`}`;
  const batchSize = warmup.batch_size ?? 0;
  // Triton skips a batch-size-0 sample ("Skipping batch 0 warmup sample") rather than failing.
  if (batchSize === 0) return null;
  if (ctx.maxBatchSize === 0 && batchSize !== 1) {
    throw invalidArg(`${where}: batch_size must be 1 for a model that does not batch (max_batch_size 0), got ${batchSize}`);
  }
  if (ctx.maxBatchSize > 0 && batchSize > ctx.maxBatchSize) {
    throw invalidArg(`${where}: batch_size ${batchSize} exceeds max_batch_size ${ctx.maxBatchSize}`);
  }
  const inputs: Record<string, WarmupInput> = {};
  for (const [name, input] of Object.entries(warmup.inputs ?? {})) {
    if (ctx.sequenceInputs?.includes(name) && !ctx.inputs.some((t) => t.name === name)) continue;
    inputs[name] = warmupInput(ctx, where, name, input);
  }
  // count 0 (the default) means "run once".
  return { name: warmup.name ?? '', batchSize, inputs, count: Math.max(1, warmup.count ?? 0) };
}

/** The warm-ups of a repository model, checked against its inputs and max batch size. */
export function normalizeRawWarmups(ctx: WarmupContext, warmups: ProtoWarmup[] | undefined): ModelWarmup[] {
  return (warmups ?? []).map((w, i) => warmupEntry(ctx, w, i)).filter((w): w is ModelWarmup => w !== null);
}
