/**
 * The sequence batcher's settings → `NormalizedSequenceBatching` (the contract with the native
 * sequence batcher, normalize.ts). Both sources end here: a repository config's
 * `sequence_batching` (protobuf-JSON form, `fromProtoSequenceBatching`) and bind()'s
 * `ModelConfig.sequenceBatcher` (`fromBindSequenceBatcher`), each first turned into the one
 * `SequenceSpec` below. Triton's checks and texts (model_config_utils.cc,
 * sequence_batch_scheduler.cc) where Triton has them; every error is INVALID_ARG and names the
 * model and the field as its user wrote it. Initial state data is read here, at load.
 */
import { invalidArg } from '../errors';
import {
  dataTypeByteSize, deserializeBytes, elementCount, parseDataType, type DataType, type TypedArray,
} from '../tensor';
import type { ProtoJsonObject } from './proto-schema';
import { checkUint64, type Uint64 } from './int64-fields';
import type {
  FieldNaming, NormalizedSequenceBatching, NormalizedSequenceControl, NormalizedSequenceState, NormalizedTensor,
} from './normalize';
import type { SequenceBatcher, SequenceControlKind } from './types';

type ControlKind = NormalizedSequenceControl['kind'];

/** One `Control` of a control input, as either source gives it. */
interface ControlSpec {
  kind: ControlKind;
  int32FalseTrue: number[];
  fp32FalseTrue: number[];
  boolFalseTrue: boolean[];
  /** CORRID; undefined = not given (TYPE_INVALID). */
  dtype?: DataType;
}

interface ControlInputSpec {
  name: string;
  controls: ControlSpec[];
}

interface InitialStateSpec {
  name: string;
  /** Repository configs give their own data_type (which must be the state's); bind() has none. */
  dtype?: DataType | 'INVALID';
  dims?: number[];
  zeroData?: boolean;
  data?: Uint8Array;
  dataFile?: string;
}

interface StateSpec {
  inputName: string;
  outputName: string;
  dtype?: DataType;
  dims?: number[];
  initialStates: InitialStateSpec[];
  useSameBufferForInputOutput: boolean;
  useGrowableMemory: boolean;
}

/** The sequence batcher as either source describes it, before checks and defaults. */
export interface SequenceSpec {
  strategy: 'direct' | 'oldest';
  maxSequenceIdleMicroseconds?: Uint64;
  maxQueueDelayMicroseconds?: Uint64;
  minimumSlotUtilization?: number;
  maxCandidateSequences?: number;
  preferredBatchSize?: number[];
  preserveOrdering?: boolean;
  controlInputs: ControlInputSpec[];
  states: StateSpec[];
  iterativeSequence: boolean;
}

/** What the checks need to know about the rest of the model. */
export interface SequenceContext {
  model: string;
  maxBatchSize: number;
  /** The model's declared inputs: control and state inputs must not be among them. */
  inputs: NormalizedTensor[];
  decoupled: boolean;
  /** The kinds of the model's instance groups (use_growable_memory refuses KIND_CPU). */
  instanceKinds: string[];
  naming: FieldNaming;
  /**
   * The bytes of an initial state's data file. Repository models resolve it under
   * `<model>/initial_state/` and refuse a path leaving it; bind() reads the path as given.
   */
  readDataFile(file: string, where: string): Uint8Array;
}

/** Default `max_sequence_idle_microseconds` (Triton's SEQUENCE_IDLE_DEFAULT_MICROSECONDS). */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

const CORRID_TYPES: readonly DataType[] = ['UINT64', 'INT64', 'UINT32', 'INT32', 'BYTES'];
const CONTROL_KINDS: readonly ControlKind[] = [
  'CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID',
];

/** A field's name in the user's spelling: config.pbtxt's (`sequence_batching.state[0].dims`) or bind()'s. */
function fieldName(naming: FieldNaming, proto: string, camel: string): string {
  return naming === 'proto' ? `sequence_batching.${proto}` : `sequenceBatcher.${camel}`;
}

// ---- the two sources → SequenceSpec ----

function asArray<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

function protoDataType(value: unknown): DataType | undefined {
  return typeof value === 'string' && value !== '' && value !== 'TYPE_INVALID' ? parseDataType(value) : undefined;
}

/** `sequence_batching` of a repository config (already checked against the schema). */
export function fromProtoSequenceBatching(sb: ProtoJsonObject): SequenceSpec {
  const direct = sb.direct as ProtoJsonObject | undefined;
  const oldest = sb.oldest as ProtoJsonObject | undefined;
  const strategy = oldest ? 'oldest' : 'direct';
  const chosen = oldest ?? direct ?? {};
  return {
    strategy,
    maxSequenceIdleMicroseconds: sb.max_sequence_idle_microseconds as Uint64 | undefined,
    maxQueueDelayMicroseconds: chosen.max_queue_delay_microseconds as Uint64 | undefined,
    minimumSlotUtilization: direct?.minimum_slot_utilization as number | undefined,
    maxCandidateSequences: oldest?.max_candidate_sequences as number | undefined,
    preferredBatchSize: oldest?.preferred_batch_size as number[] | undefined,
    preserveOrdering: oldest?.preserve_ordering as boolean | undefined,
    controlInputs: asArray<ProtoJsonObject>(sb.control_input).map((ci) => ({
      name: (ci.name as string | undefined) ?? '',
      controls: asArray<ProtoJsonObject>(ci.control).map((c) => ({
        kind: ((c.kind as string | undefined) ?? 'CONTROL_SEQUENCE_START') as ControlKind,
        int32FalseTrue: asArray<number>(c.int32_false_true),
        fp32FalseTrue: asArray<number>(c.fp32_false_true),
        boolFalseTrue: asArray<boolean>(c.bool_false_true),
        dtype: protoDataType(c.data_type),
      })),
    })),
    states: asArray<ProtoJsonObject>(sb.state).map((s) => ({
      inputName: (s.input_name as string | undefined) ?? '',
      outputName: (s.output_name as string | undefined) ?? '',
      dtype: protoDataType(s.data_type),
      dims: s.dims as number[] | undefined,
      initialStates: asArray<ProtoJsonObject>(s.initial_state).map((is) => ({
        name: (is.name as string | undefined) ?? '',
        dtype: protoDataType(is.data_type) ?? 'INVALID',
        dims: (is.dims as number[] | undefined) ?? [],
        // zero_data counts as chosen whenever it is set, whatever its value (a oneof member).
        zeroData: is.zero_data !== undefined ? true : undefined,
        dataFile: is.data_file as string | undefined,
      })),
      useSameBufferForInputOutput: Boolean(s.use_same_buffer_for_input_output),
      useGrowableMemory: Boolean(s.use_growable_memory),
    })),
    iterativeSequence: Boolean(sb.iterative_sequence),
  };
}

function bytesOf(data: TypedArray | Uint8Array): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Fields of one strategy given with the other: a mistake worth naming rather than ignoring. */
function checkStrategyFields(model: string, b: SequenceBatcher, strategy: 'direct' | 'oldest'): void {
  const foreign = strategy === 'direct'
    ? (['maxCandidateSequences', 'preferredBatchSize', 'preserveOrdering'] as const).filter((k) => b[k] !== undefined)
    : (['minimumSlotUtilization'] as const).filter((k) => b[k] !== undefined);
  if (foreign.length > 0) {
    const other = strategy === 'direct' ? 'oldest' : 'direct';
    throw invalidArg(`model '${model}': sequenceBatcher.${foreign[0]} belongs to the '${other}' strategy, but ` +
      `sequenceBatcher.strategy is '${strategy}'${strategy === 'direct' ? ' (the default)' : ''}; set strategy: '${other}' or remove it`);
  }
}

/** bind()'s `ModelConfig.sequenceBatcher`. */
export function fromBindSequenceBatcher(model: string, b: SequenceBatcher): SequenceSpec {
  if (b === null || typeof b !== 'object') throw invalidArg(`model '${model}': sequenceBatcher must be an object`);
  const strategy = b.strategy ?? 'direct';
  if (strategy !== 'direct' && strategy !== 'oldest') {
    throw invalidArg(`model '${model}': sequenceBatcher.strategy must be 'direct' or 'oldest', got ${JSON.stringify(strategy)}`);
  }
  checkStrategyFields(model, b, strategy);
  return {
    strategy,
    maxSequenceIdleMicroseconds: b.maxSequenceIdleMicroseconds,
    maxQueueDelayMicroseconds: b.maxQueueDelayMicroseconds,
    minimumSlotUtilization: b.minimumSlotUtilization,
    maxCandidateSequences: b.maxCandidateSequences,
    preferredBatchSize: b.preferredBatchSize,
    preserveOrdering: b.preserveOrdering,
    controlInputs: (b.controlInputs ?? []).map((c) => {
      if (!CONTROL_KINDS.includes(c.kind as ControlKind)) {
        throw invalidArg(`model '${model}': control input '${c.name}' has kind ${JSON.stringify(c.kind)}, expected one of ` +
          `${CONTROL_KINDS.join(', ')}`);
      }
      return {
        name: c.name ?? '',
        controls: [{
          kind: c.kind as SequenceControlKind,
          int32FalseTrue: c.int32FalseTrue ?? [],
          fp32FalseTrue: c.fp32FalseTrue ?? [],
          boolFalseTrue: c.boolFalseTrue ?? [],
          dtype: c.dataType === undefined ? undefined : parseDataType(c.dataType),
        }],
      };
    }),
    states: (b.states ?? []).map((s) => {
      const init = s.initialState;
      const initialStates: InitialStateSpec[] = init === undefined ? [] : [{
        name: init.name ?? 'initial_state',
        dims: init.shape ?? (s.shape?.every((d) => d >= 0) ? s.shape : undefined),
        zeroData: init.zeroData ? true : undefined,
        data: init.data === undefined ? undefined : bytesOf(init.data),
        dataFile: init.dataFile,
      }];
      return {
        inputName: s.inputName ?? '',
        outputName: s.outputName ?? '',
        dtype: s.dtype === undefined ? undefined : parseDataType(s.dtype),
        dims: s.shape,
        initialStates,
        useSameBufferForInputOutput: Boolean(s.useSameBufferForInputOutput),
        useGrowableMemory: Boolean(s.useGrowableMemory),
      };
    }),
    iterativeSequence: Boolean(b.iterativeSequence),
  };
}

// ---- checks and defaults ----

/** A uint64 duration, exact (int64-fields.ts). */
function durationUs(ctx: SequenceContext, value: Uint64 | undefined, proto: string, camel: string): Uint64 {
  return checkUint64(ctx.model, fieldName(ctx.naming, proto, camel), value);
}

/** START/END/READY: exactly one [false, true] list of exactly 2 entries (Triton's texts). */
function booleanControl(ctx: SequenceContext, name: string, c: ControlSpec): NormalizedSequenceControl {
  const lists = [
    { key: 'int32_false_true', values: c.int32FalseTrue, dtype: 'INT32' as const },
    { key: 'fp32_false_true', values: c.fp32FalseTrue, dtype: 'FP32' as const },
    { key: 'bool_false_true', values: c.boolFalseTrue, dtype: 'BOOL' as const },
  ].filter((l) => l.values.length > 0);
  if (lists.length === 0) {
    throw invalidArg(`sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' ` +
      `for ${c.kind} for ${ctx.model} (control input '${name}')`);
  }
  if (lists.length > 1) {
    throw invalidArg(`sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and ` +
      `'bool_false_true' for ${c.kind} for ${ctx.model} (control input '${name}')`);
  }
  const list = lists[0];
  if (list.values.length !== 2) {
    throw invalidArg(`sequence batching control '${list.key}' must have exactly 2 entries for ${c.kind} for ${ctx.model} ` +
      `(control input '${name}' has ${list.values.length})`);
  }
  const values = list.values.map((v) => (typeof v === 'boolean' ? Number(v) : v));
  if (values.some((v) => typeof v !== 'number' || !Number.isFinite(v))) {
    throw invalidArg(`model '${ctx.model}': control input '${name}' ${list.key} must hold numbers, got ${JSON.stringify(list.values)}`);
  }
  if (list.dtype === 'INT32' && values.some((v) => !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31)) {
    throw invalidArg(`model '${ctx.model}': control input '${name}' int32_false_true must hold 32-bit integers, got [${values.join(', ')}]`);
  }
  return { kind: c.kind, name, dtype: list.dtype, falseTrue: [values[0], values[1]] };
}

function corridControl(ctx: SequenceContext, name: string, c: ControlSpec): NormalizedSequenceControl {
  if (c.int32FalseTrue.length > 0 || c.fp32FalseTrue.length > 0 || c.boolFalseTrue.length > 0) {
    throw invalidArg(`sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or ` +
      `'bool_false_true' for CONTROL_SEQUENCE_CORRID for ${ctx.model} (control input '${name}')`);
  }
  if (c.dtype === undefined || !CORRID_TYPES.includes(c.dtype)) {
    throw invalidArg(`unexpected data type for control CONTROL_SEQUENCE_CORRID for ${ctx.model}. Allowed data types are ` +
      `TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING (control input '${name}' ` +
      `${c.dtype === undefined ? 'gives no data_type' : `has ${c.dtype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${c.dtype}`}`})`);
  }
  return { kind: c.kind, name, dtype: c.dtype };
}

function normalizeControls(ctx: SequenceContext, inputs: ControlInputSpec[]): NormalizedSequenceControl[] {
  const names = new Set<string>();
  const kinds = new Set<ControlKind>();
  const out: NormalizedSequenceControl[] = [];
  for (const input of inputs) {
    if (input.name === '') throw invalidArg(`sequence batching control tensor must have a name for ${ctx.model}`);
    if (names.has(input.name)) {
      throw invalidArg(`sequence batching control tensor '${input.name}' is specified for multiple control kinds for ${ctx.model}`);
    }
    names.add(input.name);
    if (input.controls.length > 1) {
      // Triton would feed one tensor from several controls; the batcher delivers one control per input.
      throw invalidArg(`model '${ctx.model}': control input '${input.name}' lists ${input.controls.length} controls; give each ` +
        'control its own control_input (one tensor per control)');
    }
    for (const c of input.controls) {
      if (!CONTROL_KINDS.includes(c.kind)) throw invalidArg(`model '${ctx.model}': control input '${input.name}' has unknown kind ${c.kind}`);
      if (kinds.has(c.kind)) throw invalidArg(`sequence batching specifies multiple ${c.kind} tensors for ${ctx.model}`);
      kinds.add(c.kind);
      out.push(c.kind === 'CONTROL_SEQUENCE_CORRID' ? corridControl(ctx, input.name, c) : booleanControl(ctx, input.name, c));
    }
  }
  return out;
}

function checkStateDims(ctx: SequenceContext, s: StateSpec, i: number): number[] {
  const field = fieldName(ctx.naming, `state[${i}].dims`, `states[${i}].shape`);
  const dims = s.dims ?? [];
  if (dims.length === 0) {
    throw invalidArg(`model '${ctx.model}': ${field} of state '${s.inputName}' must list at least one dimension ` +
      '(use [1] for a single value)');
  }
  if (dims.some((d) => !Number.isSafeInteger(d) || d < -1)) {
    throw invalidArg(`model '${ctx.model}': ${field} of state '${s.inputName}' must be integers >= -1 (-1 = dynamic), got [${dims.join(', ')}]`);
  }
  return [...dims];
}

/** Zeros of the initial state: numeric zeros, or for BYTES each element a 4-byte zero length. */
function zeroBytes(dtype: DataType, dims: number[]): Uint8Array {
  const count = elementCount(dims);
  return new Uint8Array(dtype === 'BYTES' ? 4 * count : count * dataTypeByteSize(dtype));
}

/** The initial state's bytes, checked against its dtype and dims (Triton's sequence_batch_scheduler.cc). */
function initialStateData(ctx: SequenceContext, s: StateSpec, dtype: DataType, dims: number[], init: InitialStateSpec, where: string): Uint8Array {
  const count = elementCount(dims);
  const sources = [init.zeroData, init.data, init.dataFile].filter((v) => v !== undefined).length;
  if (sources === 0) {
    throw invalidArg(`initial_state setting expects state '${s.inputName}' to have state_data set (model '${ctx.model}', ` +
      `${where}: give zero_data or data_file${ctx.naming === 'camel' ? ' (zeroData, data or dataFile)' : ''})`);
  }
  if (sources > 1) throw invalidArg(`model '${ctx.model}': ${where} must give only one of zeroData, data and dataFile`);
  if (init.zeroData) return zeroBytes(dtype, dims);
  const bytes = init.data ?? ctx.readDataFile(init.dataFile!, `model '${ctx.model}': ${where} data_file`);
  const from = init.dataFile ?? 'data';
  if (dtype === 'BYTES') {
    deserializeBytes(bytes, count, `model '${ctx.model}': ${where} (${from}) must hold ${count} length-prefixed BYTES elements`);
    return bytes;
  }
  const expected = count * dataTypeByteSize(dtype);
  if (bytes.byteLength < expected) {
    throw invalidArg(`initial_state setting expects ${expected} bytes, but the data provided from ${from} only has ` +
      `${bytes.byteLength} bytes (model '${ctx.model}', state '${s.inputName}', ${dtype} [${dims.join(', ')}])`);
  }
  // Triton uses the first `expected` bytes of a longer file.
  return bytes.byteLength === expected ? bytes : bytes.subarray(0, expected);
}

function normalizeInitialState(
  ctx: SequenceContext, s: StateSpec, i: number, dtype: DataType, dims: number[],
): NormalizedSequenceState['initialState'] {
  if (s.initialStates.length === 0) return undefined;
  if (s.initialStates.length > 1) {
    throw invalidArg(`initial_state field for state input '${s.inputName}' must contain exactly one or zero element. ` +
      `Found '${s.initialStates.length}' elements. (model '${ctx.model}')`);
  }
  const init = s.initialStates[0];
  const where = fieldName(ctx.naming, `state[${i}].initial_state`, `states[${i}].initialState`);
  if (init.dtype !== undefined && init.dtype !== dtype) {
    throw invalidArg(`The data type used for 'initial_state' field of state '${s.inputName}' does not match the state ` +
      `data type. (model '${ctx.model}': ${init.dtype === 'INVALID' ? 'no data_type' : init.dtype}, the state is ${dtype})`);
  }
  if (init.name === '') {
    throw invalidArg(`Field 'name' must be set when using initial_state for state input '${s.inputName}'. (model '${ctx.model}')`);
  }
  if (init.dims === undefined) {
    throw invalidArg(`model '${ctx.model}': ${where}.shape must be given for state '${s.inputName}', whose shape has -1`);
  }
  const initDims = init.dims;
  if (initDims.length !== dims.length) {
    throw invalidArg(`Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state ` +
      `input '${s.inputName}'. ${initDims.length} != ${dims.length} (model '${ctx.model}')`);
  }
  initDims.forEach((d, k) => {
    if (d === -1) throw invalidArg(`'initial_state' field for state input name '${s.inputName}' contains variable dimensions. (model '${ctx.model}')`);
    if (!Number.isSafeInteger(d) || d < 0) throw invalidArg(`model '${ctx.model}': ${where} dims [${initDims.join(', ')}] must be integers >= 0`);
    if (dims[k] !== -1 && d !== dims[k]) {
      throw invalidArg(`'initial_state' dim for input name '${s.inputName}' doesn't match 'state' dim description. ` +
        `${d} != ${dims[k]} (model '${ctx.model}')`);
    }
  });
  const data = initialStateData(ctx, s, dtype, initDims, init, where);
  return { name: init.name, dims: [...initDims], data, ...(init.dataFile !== undefined ? { dataFile: init.dataFile } : {}) };
}

function normalizeStates(ctx: SequenceContext, states: StateSpec[]): NormalizedSequenceState[] {
  const inputNames = new Set<string>();
  const outputNames = new Set<string>();
  return states.map((s, i) => {
    if (s.inputName === '' || s.outputName === '') {
      throw invalidArg(`model '${ctx.model}': ${fieldName(ctx.naming, `state[${i}]`, `states[${i}]`)} must set both ` +
        `${ctx.naming === 'proto' ? 'input_name and output_name' : 'inputName and outputName'}`);
    }
    if (inputNames.has(s.inputName)) throw invalidArg(`State input name '${s.inputName}' specified more than once. (model '${ctx.model}')`);
    if (outputNames.has(s.outputName)) throw invalidArg(`model '${ctx.model}': state output name '${s.outputName}' specified more than once`);
    inputNames.add(s.inputName);
    outputNames.add(s.outputName);
    if (s.dtype === undefined) {
      throw invalidArg(`model '${ctx.model}': ${fieldName(ctx.naming, `state[${i}].data_type`, `states[${i}].dtype`)} must be set ` +
        `for state '${s.inputName}'`);
    }
    const dims = checkStateDims(ctx, s, i);
    if (s.useGrowableMemory && !s.useSameBufferForInputOutput) {
      throw invalidArg(`In order to 'use_growable_memory', you must also enable 'use_single_buffer' for state input name ` +
        `'${s.inputName}'. (model '${ctx.model}': set use_same_buffer_for_input_output)`);
    }
    // KIND_AUTO may still resolve to a GPU when the engine loads; only KIND_CPU is surely wrong here.
    if (s.useGrowableMemory && ctx.instanceKinds.includes('KIND_CPU')) {
      throw invalidArg(`'use_growable_memory' can only work with KIND_GPU model instances right now. Please either change ` +
        `the instance type to KIND_GPU or set 'use_growable_memory' to false for state input '${s.inputName}'. (model '${ctx.model}')`);
    }
    return {
      inputName: s.inputName,
      outputName: s.outputName,
      dtype: s.dtype,
      dims,
      initialState: normalizeInitialState(ctx, s, i, s.dtype, dims),
      useSameBufferForInputOutput: s.useSameBufferForInputOutput,
      useGrowableMemory: s.useGrowableMemory,
    };
  });
}

/** Control and state inputs are fed by the batcher: none may be a declared input or another's name. */
function checkFedNames(ctx: SequenceContext, controls: NormalizedSequenceControl[], states: NormalizedSequenceState[]): void {
  const fed = new Map<string, string>();
  const inputField = ctx.naming === 'proto' ? 'input' : 'inputs';
  for (const [name, what] of [
    ...controls.map((c) => [c.name, `control input (${c.kind})`] as const),
    ...states.map((s) => [s.inputName, 'state input'] as const),
  ]) {
    const other = fed.get(name);
    if (other) throw invalidArg(`model '${ctx.model}': '${name}' is both a ${other} and a ${what}; each tensor the sequence batcher feeds needs its own name`);
    fed.set(name, what);
    if (ctx.inputs.some((t) => t.name === name)) {
      throw invalidArg(`model '${ctx.model}': '${name}' is a ${what} of sequence_batching and also a declared ${inputField} ` +
        `entry; the sequence batcher feeds it, so remove it from ${inputField}`);
    }
  }
}

function checkNumbers(ctx: SequenceContext, spec: SequenceSpec): void {
  const utilization = spec.minimumSlotUtilization ?? 0;
  if (typeof utilization !== 'number' || !(utilization >= 0 && utilization <= 1)) {
    throw invalidArg(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${ctx.model} ` +
      `(${fieldName(ctx.naming, 'direct.minimum_slot_utilization', 'minimumSlotUtilization')} is ${String(utilization)})`);
  }
  for (const size of spec.preferredBatchSize ?? []) {
    if (!Number.isSafeInteger(size) || size <= 0) {
      throw invalidArg(`sequence batching preferred batch size must be positive for ${ctx.model} (got ${String(size)})`);
    }
    if (size > Math.max(1, ctx.maxBatchSize)) {
      throw invalidArg(`sequence batching preferred batch size must be <= max batch size for ${ctx.model} ` +
        `(${size} > ${ctx.maxBatchSize})`);
    }
  }
}

/**
 * Checks a sequence batcher against its model and fills Triton's defaults: idle 0 → 1 s,
 * oldest `max_candidate_sequences` 0 → max(1, max_batch_size) (Triton's slot count) and an
 * empty `preferred_batch_size` → [max(1, max_batch_size)].
 */
export function normalizeSequenceBatching(ctx: SequenceContext, spec: SequenceSpec): NormalizedSequenceBatching {
  checkNumbers(ctx, spec);
  const controls = normalizeControls(ctx, spec.controlInputs);
  const states = normalizeStates(ctx, spec.states);
  checkFedNames(ctx, controls, states);
  if (states.length > 0 && ctx.decoupled) {
    throw invalidArg(`model '${ctx.model}': implicit state (${fieldName(ctx.naming, 'state', 'states')}) cannot be used with a ` +
      'decoupled model in infernode: a decoupled model may answer a request 0..N times, so no one response carries the next ' +
      'state. Remove the decoupled transaction policy, or keep the state in the model (and drop the state entries)');
  }
  const slots = Math.max(1, ctx.maxBatchSize);
  const idle = durationUs(ctx, spec.maxSequenceIdleMicroseconds, 'max_sequence_idle_microseconds', 'maxSequenceIdleMicroseconds');
  const strategyField = spec.strategy === 'oldest' ? 'oldest' : 'direct';
  const candidates = spec.maxCandidateSequences ?? 0;
  if (!Number.isSafeInteger(candidates) || candidates < 0) {
    throw invalidArg(`model '${ctx.model}': ${fieldName(ctx.naming, 'oldest.max_candidate_sequences', 'maxCandidateSequences')} ` +
      `must be an integer >= 0, got ${String(candidates)}`);
  }
  const preferred = [...new Set(spec.preferredBatchSize ?? [])].sort((a, b) => a - b);
  return {
    strategy: spec.strategy,
    maxSequenceIdleMicroseconds: idle === 0 ? SEQUENCE_IDLE_DEFAULT_MICROSECONDS : idle,
    maxQueueDelayMicroseconds: durationUs(
      ctx, spec.maxQueueDelayMicroseconds, `${strategyField}.max_queue_delay_microseconds`, 'maxQueueDelayMicroseconds'),
    minimumSlotUtilization: spec.minimumSlotUtilization ?? 0,
    maxCandidateSequences: candidates > 0 ? candidates : slots,
    preferredBatchSize: preferred.length > 0 ? preferred : [slots],
    preserveOrdering: Boolean(spec.preserveOrdering),
    controls,
    states,
    iterativeSequence: spec.iterativeSequence,
  };
}
