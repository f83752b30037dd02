/**
 * Request tracing (Triton's trace extension, mode "triton", levels TIMESTAMPS and TENSORS): one request in
 * `trace_rate` is traced, up to `trace_count` (-1 = no limit), with the timestamps infernode
 * sees (receipt and send by the frontend, start and end of the inference). The count is counted
 * down as traces are taken and the settings show what is left ("0" once spent); when it reaches
 * 0 and every trace it allowed has ended, those traces are written to the next
 * `<trace_file>.<index>` at once (Triton's TraceSetting::SampleTrace and WriteTrace). Where the traces go is
 * Triton's (src/tracer.cc, TraceFile::SaveTraces and TraceSetting::WriteTrace):
 * - `log_frequency` N > 0: every N traces are written to `<trace_file>.<index>`, one JSON array
 *   per file, the index counting from 0 (one counter per trace file);
 * - `log_frequency` 0: the traces are written to `<trace_file>` itself, one JSON array for the
 *   whole run (the file is truncated at its first write and the array closed at shutdown).
 * Each setting (the global one, and each model's that overrides it) collects its own traces;
 * when a setting is changed, or at shutdown, what it collected and did not write yet goes
 * where its `log_frequency` says (the next index when it is not 0), as Triton's
 * ~TraceSetting does. Settings are global with per-model overrides; the trace file is chosen at
 * start-up only (no file path is settable over the network).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { invalidArg } from '../errors';
import { forEachBytesElement, type NDArray } from '../tensor';

/** Settings as the trace extension shows them: strings, and a list for the level. */
export interface TraceSettings {
  trace_file: string;
  trace_level: string[];
  trace_rate: string;
  trace_count: string;
  log_frequency: string;
  trace_mode: string;
}

export const DEFAULT_TRACE_SETTINGS: TraceSettings = {
  trace_file: '', trace_level: ['OFF'], trace_rate: '1000', trace_count: '-1', log_frequency: '0', trace_mode: 'triton',
};

type Overrides = Partial<TraceSettings>;

const INT32_MAX = 2147483647;

/** One traced request: marks timestamps, records tensors, then ends. */
export interface Trace {
  mark(name: string): void;
  /**
   * Level TENSORS: the tensors of one activity (TENSOR_QUEUE_INPUT, TENSOR_BACKEND_INPUT,
   * TENSOR_BACKEND_OUTPUT); a no-op at other levels.
   */
  tensors(activity: string, tensors: readonly { name: string; tensor: NDArray }[]): void;
  end(modelVersion: string): void;
}

interface TraceRecord {
  id: number;
  model_name: string;
  model_version: string;
  timestamps: { name: string; ns: string }[];
}

/** A tensor entry of Triton's trace file: data, shape as comma-separated text, and dtype. */
interface TensorRecord {
  id: number;
  activity: string;
  tensor: { name: string; data: string; shape: string; dtype: string };
}

/** Triton writes tensor data as comma-separated values; BYTES as their UTF-8 text. */
function tensorText(tensor: NDArray): string {
  if (tensor.dtype === 'BYTES') {
    const texts: string[] = [];
    forEachBytesElement(tensor, (buf, start, end) => { texts.push(buf.toString('utf8', start, end)); });
    return texts.join(',');
  }
  return Array.prototype.join.call(tensor.data, ',');
}

function checkValue(key: string, value: unknown): string | string[] | undefined {
  if (value === null) return undefined;  // clears a per-model override
  const values = Array.isArray(value) ? value : [value];
  if (values.some((v) => typeof v !== 'string' && typeof v !== 'number')) throw invalidArg(`trace setting '${key}' must be a string`);
  const strings = values.map(String);
  switch (key) {
    case 'trace_level':
      for (const level of strings) {
        if (level !== 'OFF' && level !== 'TIMESTAMPS' && level !== 'TENSORS') {
          throw invalidArg(`trace level '${level}' is not supported (supported: OFF, TIMESTAMPS, TENSORS)`);
        }
      }
      // Triton's HTTP and gRPC handlers: OFF only alone; the others add up, shown in this order.
      if (strings.includes('OFF')) {
        if (strings.length !== 1) throw invalidArg("Expect only one trace level 'OFF' is specified");
        return strings;
      }
      return ['TIMESTAMPS', 'TENSORS'].filter((l) => strings.includes(l));
    case 'trace_rate':
    case 'log_frequency':
      if (strings.length !== 1 || !/^[0-9]+$/.test(strings[0])) throw invalidArg(`Unable to parse '${key}', got: ${strings.join(',')}`);
      // Triton parses with std::stoi (int32) and names the uint32 range when that overflows.
      if (Number(strings[0]) > INT32_MAX) {
        throw invalidArg(`Unable to parse '${key}', value is out of range [ 0, 4294967295 ], got: ${strings[0]}`);
      }
      if (key === 'trace_rate' && Number(strings[0]) === 0) throw invalidArg(`trace setting 'trace_rate' must be at least 1`);
      return String(Number(strings[0]));
    case 'trace_count':
      if (strings.length !== 1 || !/^-?[0-9]+$/.test(strings[0])) throw invalidArg(`Unable to parse 'trace_count', got: ${strings.join(',')}`);
      if (Number(strings[0]) < -1) throw invalidArg(`Unable to parse 'trace_count'. Expecting value >= -1, got:${strings[0]}`);
      if (Number(strings[0]) > INT32_MAX) {
        throw invalidArg(`Unable to parse 'trace_count', value is out of range [ -1, ${INT32_MAX} ], got: ${strings[0]}`);
      }
      return String(Number(strings[0]));
    case 'trace_file':
      throw invalidArg(`trace setting 'trace_file' cannot be changed over the network; start the server with --trace-config triton,file=<path>`);
    case 'trace_mode':
      throw invalidArg(`trace setting 'trace_mode' cannot be changed over the network`);
    default:
      throw invalidArg(`unknown trace setting '${key}'`);
  }
}

type TraceEntry = TraceRecord | TensorRecord;

/**
 * One setting in force (Triton's TraceSetting): its effective values, fixed for its life (a
 * change makes a new one), and the traces it collected that are not written yet.
 */
class SettingState {
  /** Entries of the traces collected and not written yet (Triton's trace_stream_). */
  pending: TraceEntry[] = [];
  /** How many traces `pending` holds (Triton's sample_in_stream_; tensor entries are not traces). */
  inStream = 0;
  /** Traces begun under this setting and not ended yet. */
  inFlight = 0;
  /** Replaced by a newer setting: saved once its last trace in flight ends. */
  retired = false;
  /**
   * Requests this setting was asked to sample (Triton's sample_): one counter per setting, so the
   * models without a setting of their own share the global one's, and a new setting starts at 0.
   */
  sampled = 0;
  /** Traces taken while the count was limited, and traces ended (Triton's created_, collected_). */
  created = 0;
  collected = 0;

  /**
   * `count` is the traces left to take (-1: no limit), counted down as they are taken (what the
   * settings show as trace_count); `countSpecified`: set on this setting itself rather than
   * taken from the one it falls back to (Triton's count_specified_).
   */
  constructor(readonly settings: TraceSettings, public count: number, readonly countSpecified: boolean) {}
}

export class Tracer {
  /** The global setting in force. */
  #global: SettingState;
  /** Per-model overrides (what was set for the model), and the model's setting in force. */
  readonly #models = new Map<string, { overrides: Overrides; state: SettingState }>();
  #nextId = 1;
  /** The index of the next `<trace_file>.<index>` (Triton's TraceFile::index_). */
  #index = 0;
  /** Whether `<trace_file>` itself holds an open JSON array (Triton's !first_write_). */
  #plainOpen = false;

  /** The settings the server started with: what clearing a global setting (null) goes back to, as Triton. */
  readonly #startup: TraceSettings;

  /** `onError` hears of a trace file that could not be written (Triton logs it and goes on). */
  constructor(initial: Partial<TraceSettings> = {}, private readonly onError: (message: string) => void = () => undefined) {
    this.#startup = { ...DEFAULT_TRACE_SETTINGS, ...initial };
    this.#global = new SettingState({ ...this.#startup }, Number(this.#startup.trace_count), false);
  }

  /** The effective settings, global or for one model. */
  settings(model?: string): TraceSettings {
    const state = this.#state(model);
    return { ...state.settings, trace_count: String(state.count) };
  }

  #state(model?: string): SettingState {
    return (model ? this.#models.get(model)?.state : undefined) ?? this.#global;
  }

  /** Applies a POST body (null clears a model's override); returns the effective settings. */
  update(changes: { [key: string]: unknown }, model?: string): TraceSettings {
    const checked: Overrides = {};
    const cleared: string[] = [];
    for (const [key, value] of Object.entries(changes)) {
      const v = checkValue(key, value);
      if (v === undefined) cleared.push(key);
      else (checked as { [key: string]: unknown })[key] = v;
    }
    if (model) {
      const previous = this.#models.get(model)?.state;
      const overrides = { ...this.#models.get(model)?.overrides, ...checked };
      for (const key of cleared) delete (overrides as { [key: string]: unknown })[key];
      this.#retire(previous);
      // A model with nothing of its own uses the global setting (Triton erases its setting).
      if (Object.keys(overrides).length === 0) this.#models.delete(model);
      else this.#models.set(model, { overrides, state: this.#modelState(overrides, checked.trace_count === undefined ? previous : undefined) });
    } else {
      const global = { ...this.#global.settings, ...checked };
      for (const key of cleared) {
        (global as unknown as { [key: string]: unknown })[key] = (this.#startup as unknown as { [key: string]: unknown })[key];
      }
      // The count: the new one if given; what is left of one set earlier (not cleared); else
      // the start-up count (Triton's UpdateTraceSettingInternal falls back to global_default_).
      const specified = !cleared.includes('trace_count') && (checked.trace_count !== undefined || this.#global.countSpecified);
      const count = checked.trace_count !== undefined ? Number(checked.trace_count)
        : specified ? this.#global.count : Number(this.#startup.trace_count);
      this.#retire(this.#global);
      this.#global = new SettingState(global, count, specified);
      // The models that override only part of it follow the new global values (Triton remakes them).
      for (const [name, entry] of this.#models) {
        this.#retire(entry.state);
        this.#models.set(name, { overrides: entry.overrides, state: this.#modelState(entry.overrides, entry.state) });
      }
    }
    return this.settings(model);
  }

  /**
   * A model's setting: its overrides over the global values. Its count: the one it sets (what is
   * left of it when the setting is remade without a new one: `previous` is then the setting it
   * replaces), else what is left of the global
   * count now, counted down apart from it from then on (as Triton's model TraceSetting).
   */
  #modelState(overrides: Overrides, previous: SettingState | undefined): SettingState {
    const settings = { ...this.#global.settings, ...overrides };
    if (overrides.trace_count === undefined) return new SettingState(settings, this.#global.count, false);
    return new SettingState(settings, previous?.countSpecified ? previous.count : Number(overrides.trace_count), true);
  }

  /** Starts a trace for a request to `model` when sampling picks it; null otherwise (cheap). */
  begin(model: string, firstMark: string): Trace | null {
    const state = this.#models.size > 0 ? this.#state(model) : this.#global;
    const s = state.settings;
    if (s.trace_level.length === 0 || s.trace_level.includes('OFF') || !s.trace_file) return null;
    // A spent count takes no more traces until trace_count is set again (Triton's Valid()).
    if (state.count === 0) return null;
    if (++state.sampled % Number(s.trace_rate) !== 0) return null;
    if (state.count > 0) {
      state.count--;
      state.created++;
    }
    const record: TraceRecord = { id: this.#nextId++, model_name: model, model_version: '', timestamps: [] };
    const timestamps = s.trace_level.includes('TIMESTAMPS');
    const withTensors = s.trace_level.includes('TENSORS');
    const tensorRecords: TensorRecord[] = [];
    const mark = (name: string): void => {
      if (timestamps) record.timestamps.push({ name, ns: process.hrtime.bigint().toString() });
    };
    mark(firstMark);
    state.inFlight++;
    return {
      mark,
      tensors: (activity, tensors) => {
        if (!withTensors) return;
        for (const { name, tensor } of tensors) {
          tensorRecords.push({
            id: record.id, activity,
            tensor: { name, data: tensorText(tensor), shape: tensor.shape.join(','), dtype: tensor.dtype },
          });
        }
      },
      end: (version) => {
        record.model_version = version;
        state.inFlight--;
        state.pending.push(record, ...tensorRecords);
        state.inStream++;
        state.collected++;
        if (state.retired) {
          if (state.inFlight === 0) this.#save(state);
          return;
        }
        // Triton's TraceSetting::WriteTrace: the next indexed file takes the traces once the
        // count is spent and all it allowed have ended, or every log_frequency traces.
        const frequency = Number(s.log_frequency);
        const spent = state.count === 0 && state.collected === state.created;
        if (spent || (frequency > 0 && state.inStream >= frequency)) this.#save(state, true);
      },
    };
  }

  /**
   * At shutdown: writes what every setting collected and did not write yet (to the next
   * indexed file where its log_frequency is not 0, else to the trace file) and closes the trace
   * file's JSON array, as Triton's ~TraceSetting and ~TraceFile do.
   */
  flush(): void {
    this.#save(this.#global);
    for (const { state } of this.#models.values()) this.#save(state);
    if (this.#plainOpen) {
      this.#plainOpen = false;
      this.#write(() => appendFileSync(this.#global.settings.trace_file, ']'));
    }
  }

  /** A setting replaced by a newer one: what it collected is written once its traces in flight end. */
  #retire(state: SettingState | undefined): void {
    if (!state) return;
    state.retired = true;
    if (state.inFlight === 0) this.#save(state);
  }

  /** Writes a setting's collected traces: to `<file>.<index>` (by default when its log_frequency is not 0), else to `<file>`. */
  #save(state: SettingState, toIndexFile = Number(state.settings.log_frequency) !== 0): void {
    if (state.inStream === 0) return;
    const entries = state.pending;
    state.pending = [];
    state.inStream = 0;
    const file = state.settings.trace_file;
    if (!file) return;
    if (toIndexFile) {
      const indexed = `${file}.${this.#index++}`;
      this.#write(() => writeFileSync(indexed, JSON.stringify(entries)));
    } else {
      const body = JSON.stringify(entries).slice(1, -1);
      if (this.#plainOpen) {
        this.#write(() => appendFileSync(file, `,${body}`));
      } else {
        this.#plainOpen = true;
        this.#write(() => writeFileSync(file, `[${body}`));
      }
    }
  }

  #write(write: () => void): void {
    try {
      write();
    } catch (err) {
      this.onError(`failed creating trace file: ${(err as Error).message}`);
    }
  }
}
