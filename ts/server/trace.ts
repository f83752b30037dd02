/**
 * Request tracing (Triton's trace extension, mode "triton", levels TIMESTAMPS and TENSORS): one request in
 * `trace_rate` is traced, up to `trace_count` (-1 = no limit), with the timestamps infernode
 * sees (receipt and send by the frontend, start and end of the inference); every
 * `log_frequency` traces (0 = at shutdown) the collected traces are appended to the trace file
 * as a JSON array. Settings are global with per-model overrides; the trace file is chosen at
 * start-up only (no file path is settable over the network).
 */
import { appendFileSync } from 'node:fs';
import { invalidArg } from '../errors';
import type { NDArray } from '../tensor';

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
    return (tensor.data as Uint8Array[]).map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')).join(',');
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
      return strings;
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

export class Tracer {
  #global: TraceSettings;
  readonly #models = new Map<string, Overrides>();
  readonly #seen = new Map<string, number>();
  readonly #remaining = new Map<string, number>();
  #pending: (TraceRecord | TensorRecord)[] = [];
  #nextId = 1;

  /** The settings the server started with: what clearing a global setting (null) goes back to, as Triton. */
  readonly #startup: TraceSettings;

  constructor(initial: Partial<TraceSettings> = {}) {
    this.#startup = { ...DEFAULT_TRACE_SETTINGS, ...initial };
    this.#global = { ...this.#startup };
  }

  /** The effective settings, global or for one model. */
  settings(model?: string): TraceSettings {
    return { ...this.#global, ...(model ? this.#models.get(model) : undefined) };
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
      const overrides = { ...this.#models.get(model), ...checked };
      for (const key of cleared) delete (overrides as { [key: string]: unknown })[key];
      this.#models.set(model, overrides);
    } else {
      this.#global = { ...this.#global, ...checked };
      for (const key of cleared) {
        (this.#global as unknown as { [key: string]: unknown })[key] = (this.#startup as unknown as { [key: string]: unknown })[key];
      }
    }
    this.#remaining.delete(model ?? '');
    return this.settings(model);
  }

  /** Starts a trace for a request to `model` when sampling picks it; null otherwise (cheap). */
  begin(model: string, firstMark: string): Trace | null {
    const s = this.#models.size > 0 ? this.settings(model) : this.#global;
    if (s.trace_level.length === 0 || s.trace_level.includes('OFF') || !s.trace_file) return null;
    const seen = (this.#seen.get(model) ?? 0) + 1;
    this.#seen.set(model, seen);
    if (seen % Number(s.trace_rate) !== 0) return null;
    const key = this.#models.has(model) ? model : '';
    const remaining = this.#remaining.get(key) ?? Number(s.trace_count);
    if (remaining === 0) return null;
    if (remaining > 0) this.#remaining.set(key, remaining - 1);
    const record: TraceRecord = { id: this.#nextId++, model_name: model, model_version: '', timestamps: [] };
    const timestamps = s.trace_level.includes('TIMESTAMPS');
    const withTensors = s.trace_level.includes('TENSORS');
    const tensorRecords: TensorRecord[] = [];
    const mark = (name: string): void => {
      if (timestamps) record.timestamps.push({ name, ns: process.hrtime.bigint().toString() });
    };
    mark(firstMark);
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
        this.#pending.push(record, ...tensorRecords);
        const frequency = Number(s.log_frequency);
        if (frequency > 0 && this.#pending.length >= frequency) this.flush();
      },
    };
  }

  /** Appends the collected traces to the trace file. */
  flush(): void {
    if (this.#pending.length === 0 || !this.#global.trace_file) return;
    const records = this.#pending;
    this.#pending = [];
    appendFileSync(this.#global.trace_file, `${JSON.stringify(records)}\n`);
  }
}
