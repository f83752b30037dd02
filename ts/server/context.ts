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

/** Reads `--trace-config` style settings (`[triton,]<key>=<value>`) into initial trace settings. */
export function traceSettingsFromConfig(entries: readonly string[] | undefined): Partial<TraceSettings> {
  const out: Partial<TraceSettings> = {};
  for (const entry of entries ?? []) {
    const parts = entry.split(',');
    const setting = parts.length > 1 && !parts[0].includes('=') ? parts.slice(1).join(',') : entry;
    const eq = setting.indexOf('=');
    if (eq <= 0) throw new Error(`--trace-config: '${entry}' must look like [triton,]<setting>=<value>`);
    const key = setting.slice(0, eq).trim();
    const value = setting.slice(eq + 1).trim();
    if (key === 'file') out.trace_file = value;
    else if (key === 'level') out.trace_level = [value.toUpperCase()];
    else if (key === 'rate') out.trace_rate = value;
    else if (key === 'count') out.trace_count = value;
    else if (key === 'log-frequency') out.log_frequency = value;
    else if (key === 'mode') out.trace_mode = value;
    else throw new Error(`--trace-config: unknown setting '${key}'`);
  }
  return out;
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
