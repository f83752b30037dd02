/**
 * What every frontend (HTTP, gRPC, metrics) serves from: the Triton it fronts and the
 * server-wide state the frontends share — the inference path, client shared memory, tracing,
 * logging and the API restrictions. Created by `Triton.run()`, one per Triton.
 *
 * The server layer sees the Triton only through `ServedTriton` (what the frontends use of it), so
 * ts/server/** never imports ts/triton.ts: triton.ts sits above the server layer and starts it
 * (docs/architecture.md, "Layers of ts/").
 */
import type { Logger } from '../log';
import { InferenceService } from './inference-service';
import type { ServedTriton } from './served-triton';
import { parseRestrictions, type ApiGroup, type Restriction } from './restrictions';
import { SharedMemoryManager } from './shared-memory';
import { Tracer, type TraceSettings } from './trace';

export interface ServerContext {
  readonly triton: ServedTriton;
  readonly logger: Logger;
  readonly inference: InferenceService;
  readonly sharedMemory: SharedMemoryManager;
  readonly tracer: Tracer;
  readonly httpRestrictions: Map<ApiGroup, Restriction>;
  readonly grpcRestrictions: Map<ApiGroup, Restriction>;
  /**
   * True once the server began to stop (set by Triton.stop(), never cleared): readiness is false
   * and both frontends refuse new requests through exitingRefusal (exiting.ts).
   */
  exiting: boolean;
}

/**
 * Reads `--trace-config` style settings (`[triton,]<setting>=<value>`) into initial trace
 * settings, checked as tritonserver's command_line_parser.cc checks them (SetGlobalTraceArgs,
 * SetTritonTraceArgs, ParseTraceLevelOption, ParseOption), with its texts: a bad value refuses
 * the start-up (`Bad option: "--trace-config <setting>".` and why) instead of leaving tracing
 * silently off. `level` may be given several times: the levels add up (TIMESTAMPS and TENSORS
 * give both), and OFF among them turns tracing off, as in Triton. Mode `opentelemetry` is not
 * supported and is refused. Unlike Triton, which ignores unknown settings and reads `file` and
 * `log-frequency` only after `triton,`, any setting may be given with or without `triton,` and
 * an unknown one is refused.
 */
export function traceSettingsFromConfig(entries: readonly string[] | undefined): Partial<TraceSettings> {
  const out: Partial<TraceSettings> = {};
  let levels: Set<string> | undefined;
  let off = false;
  for (const entry of entries ?? []) {
    const comma = entry.indexOf(',');
    const hasMode = comma >= 0 && !entry.slice(0, comma).includes('=');
    if (comma === 0) {
      throw new Error(`No trace mode specified. --trace-config option format is <trace mode>,<setting>=<value> or <setting>=<value>. Got ${entry}`);
    }
    if (hasMode) traceMode(entry.slice(0, comma), `${entry.slice(0, comma)},${entry.slice(comma + 1).split('=')[0]}`);
    const setting = hasMode ? entry.slice(comma + 1) : entry;
    const eq = setting.indexOf('=');
    const key = eq < 0 ? '' : setting.slice(0, eq).trim();
    const value = eq < 0 ? '' : setting.slice(eq + 1).trim();
    if (!key || (!value && key !== 'file')) {
      throw new Error(`--trace-config option format is '<trace mode>,<setting>=<value>'. Got ${entry}`);
    }
    const bad = (reason: string): Error => new Error(`Bad option: "--trace-config ${hasMode ? entry.slice(0, comma + 1) : ''}${key}".\n${reason}`);
    if (key === 'file') out.trace_file = value;
    else if (key === 'level') {
      const level = traceLevel(value);
      if (level === undefined) throw bad(`invalid value for trace level option: ${value} (expected OFF, TIMESTAMPS or TENSORS)`);
      if (level === 'OFF') off = true;
      else (levels ??= new Set()).add(level);
    } else if (key === 'rate') out.trace_rate = String(traceInteger(value, 1, bad));
    else if (key === 'count') out.trace_count = String(traceInteger(value, -1, bad));
    else if (key === 'log-frequency') out.log_frequency = String(traceInteger(value, 0, bad));
    else if (key === 'mode') out.trace_mode = traceMode(value, key);
    else throw bad(`unknown setting '${key}' (settings: file, level, rate, count, log-frequency, mode)`);
  }
  // Triton ORs the levels given; an explicit OFF among them disables tracing (PostProcessTraceArgs).
  if (off) out.trace_level = ['OFF'];
  else if (levels) out.trace_level = ['TIMESTAMPS', 'TENSORS'].filter((l) => levels.has(l));
  return out;
}

/** Triton's ParseTraceLevelOption: case-insensitive, with its aliases; undefined when unknown. */
function traceLevel(value: string): 'OFF' | 'TIMESTAMPS' | 'TENSORS' | undefined {
  const v = value.toLowerCase();
  if (v === 'off' || v === 'false') return 'OFF';
  if (v === 'timestamps' || v === 'on' || v === 'true' || v === 'min' || v === 'max') return 'TIMESTAMPS';
  if (v === 'tensors') return 'TENSORS';
  return undefined;
}

/** Triton's ParseTraceModeOption, but only "triton" is served: OpenTelemetry is refused plainly. */
function traceMode(value: string, setting: string): string {
  const v = value.toLowerCase();
  if (v === 'triton') return 'triton';
  const reason = v === 'opentelemetry'
    ? 'trace mode opentelemetry is not supported by infernode: it writes Triton trace files only ' +
      '(use mode triton, the default, with --trace-config triton,file=<path>)'
    : `invalid value for trace mode option: ${value}. Available options are "triton" ("opentelemetry" is not supported by infernode)`;
  throw new Error(`Bad option: "--trace-config ${setting}".\n${reason}`);
}

/** An integer setting as Triton's ParseOption<int> reads it, within [min, 2147483647]. */
function traceInteger(value: string, min: number, bad: (reason: string) => Error): number {
  if (!/^[+-]?[0-9]+$/.test(value)) throw bad(`Invalid option value. Got ${value}`);
  const n = Number(value);
  if (n > 2147483647 || n < -2147483648) throw bad(`Provided option value is out of bound. Got ${value}`);
  if (n < min) throw bad(`Expecting value >= ${min}, got: ${value}`);
  return n;
}

export function createServerContext(triton: ServedTriton, logger: Logger): ServerContext {
  const config = triton.config;
  const sharedMemory = new SharedMemoryManager(config.allowClientShm ?? false);
  return {
    triton,
    logger,
    inference: new InferenceService(triton, sharedMemory),
    sharedMemory,
    tracer: new Tracer(traceSettingsFromConfig(config.traceConfig), (message) => logger.error(message)),
    httpRestrictions: parseRestrictions(config.httpRestrictedApi, '--http-restricted-api'),
    grpcRestrictions: parseRestrictions(config.grpcRestrictedProtocol, '--grpc-restricted-protocol'),
    exiting: false,
  };
}
