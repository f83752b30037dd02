#!/usr/bin/env node
/**
 * `infernode serve`: serves a Triton model repository with tritonserver's usual flags.
 * `infernode perf`: measures a model as perf_analyzer does (ts/perf/).
 * `infernode doctor`: what this installation loaded and what GPU use still needs (doctor.ts).
 * commander parses the command line (a well-kept parser with help generation; flag spelling,
 * repeatable options and `--flag=false` booleans as tritonserver accepts them).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { Triton } from '../triton';
import type { TritonConfig } from '../config/types';
import { DEFAULT_EXIT_TIMEOUT_SECS } from '../config/defaults';
import type { ControlMode } from '../repository/manager';
import { API_GROUPS, parseRestrictions } from '../server/restrictions';
import { addPerfCommand } from '../perf/command';
import { addDoctorCommand } from './doctor';

function parseBool(value: string | undefined): boolean {
  if (value === undefined) return true;
  const v = value.toLowerCase();
  if (['true', '1', 'on', 'yes'].includes(v)) return true;
  if (['false', '0', 'off', 'no'].includes(v)) return false;
  throw new InvalidArgumentError(`expected true or false, got '${value}'`);
}

function parseIntArg(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError(`expected a non-negative integer, got '${value}'`);
  return n;
}

function parsePositiveIntArg(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError(`expected a positive integer, got '${value}'`);
  return n;
}

function parsePort(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > 65535) {
    throw new InvalidArgumentError(`expected a port number from 0 to 65535, got '${value}'`);
  }
  return n;
}

/** --http-max-input-size: a positive byte count; Triton's words when it is not (its L0_http test.sh greps them). */
function parseHttpMaxInputSize(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidArgumentError(`Error: --http-max-input-size must be greater than 0. (got '${value}': a size in bytes)`);
  }
  return n;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function boolOption(flags: string, description: string, fallback: boolean): Option {
  return new Option(flags, `${description} (default ${fallback})`).argParser(parseBool);
}

export interface ServeOptions {
  modelRepository: string[];
  modelControlMode: ControlMode;
  loadModel?: string[];
  repositoryPollSecs: number;
  id?: string;
  httpAddress?: string;
  httpPort: number;
  grpcAddress?: string;
  grpcPort: number;
  metricsAddress?: string;
  metricsPort: number;
  allowHttp?: boolean;
  allowGrpc?: boolean;
  allowMetrics?: boolean;
  allowGpuMetrics?: boolean;
  allowCpuMetrics?: boolean;
  strictReadiness?: boolean;
  exitOnError?: boolean;
  exitTimeoutSecs: number;
  logVerbose: number;
  httpRestrictedApi?: string[];
  grpcRestrictedProtocol?: string[];
  allowClientShm?: boolean;
  logInfo?: boolean;
  logWarning?: boolean;
  logError?: boolean;
  logFile?: string;
  logFormat?: 'default' | 'ISO8601';
  httpMaxInputSize?: number;
  httpHeaderForwardPattern?: string;
  grpcHeaderForwardPattern?: string;
  grpcMaxDecompressedSize?: number;
  grpcKeepaliveTime?: number;
  grpcKeepaliveTimeout?: number;
  grpcKeepalivePermitWithoutCalls?: boolean;
  grpcHttp2MaxPingsWithoutData?: number;
  grpcInferResponseCompressionLevel?: 'none' | 'low' | 'medium' | 'high';
  grpcUseSsl?: boolean;
  grpcUseSslMutual?: boolean;
  grpcServerCert?: string;
  grpcServerKey?: string;
  grpcRootCert?: string;
  httpUseSsl?: boolean;
  httpUseSslMutual?: boolean;
  httpServerCert?: string;
  httpServerKey?: string;
  httpRootCert?: string;
  metricsConfig?: string[];
  metricsIntervalMs?: number;
  traceConfig?: string[];
  maxQueuedResponses?: number;
  cacheConfig?: string[];
  responseCacheByteSize?: number;
  rateLimit?: string;
  rateLimitResource?: string[];
  pinnedMemoryPoolByteSize?: number;
}

/** The TritonConfig a command line asks for. */
export function tritonConfigFromOptions(o: ServeOptions): TritonConfig {
  return {
    id: o.id,
    httpAddress: o.httpAddress, httpPort: o.httpPort, allowHttp: o.allowHttp ?? true,
    grpcAddress: o.grpcAddress, grpcPort: o.grpcPort, allowGrpc: o.allowGrpc ?? true,
    metricsAddress: o.metricsAddress, metricsPort: o.metricsPort, allowMetrics: o.allowMetrics ?? true,
    allowGpuMetrics: o.allowGpuMetrics ?? true, allowCpuMetrics: o.allowCpuMetrics ?? true,
    strictReadiness: o.strictReadiness ?? true, exitOnError: o.exitOnError ?? true, exitTimeoutSecs: o.exitTimeoutSecs,
    logVerbose: o.logVerbose,
    httpRestrictedApi: o.httpRestrictedApi?.join(';'), grpcRestrictedProtocol: o.grpcRestrictedProtocol?.join(';'),
    allowClientShm: o.allowClientShm ?? false,
    logInfo: o.logInfo, logWarning: o.logWarning, logError: o.logError, logFile: o.logFile, logFormat: o.logFormat,
    httpMaxInputSize: o.httpMaxInputSize, httpHeaderForwardPattern: o.httpHeaderForwardPattern,
    grpcHeaderForwardPattern: o.grpcHeaderForwardPattern, grpcKeepaliveTime: o.grpcKeepaliveTime,
    grpcMaxDecompressedSize: o.grpcMaxDecompressedSize,
    grpcKeepaliveTimeout: o.grpcKeepaliveTimeout, grpcKeepalivePermitWithoutCalls: o.grpcKeepalivePermitWithoutCalls,
    grpcHttp2MaxPingsWithoutData: o.grpcHttp2MaxPingsWithoutData,
    grpcInferResponseCompressionLevel: o.grpcInferResponseCompressionLevel,
    grpcUseSsl: o.grpcUseSsl, grpcUseSslMutual: o.grpcUseSslMutual,
    grpcServerCert: o.grpcServerCert, grpcServerKey: o.grpcServerKey, grpcRootCert: o.grpcRootCert,
    httpUseSsl: o.httpUseSsl, httpUseSslMutual: o.httpUseSslMutual,
    httpServerCert: o.httpServerCert, httpServerKey: o.httpServerKey, httpRootCert: o.httpRootCert,
    metricsConfig: o.metricsConfig, metricsIntervalMs: o.metricsIntervalMs, traceConfig: o.traceConfig,
    maxQueuedResponses: o.maxQueuedResponses,
    cacheConfig: o.cacheConfig, responseCacheByteSize: o.responseCacheByteSize,
    // Checked (case-insensitively, as tritonserver) when the Triton is made.
    rateLimit: o.rateLimit as TritonConfig['rateLimit'], rateLimitResource: o.rateLimitResource,
    pinnedMemoryPoolByteSize: o.pinnedMemoryPoolByteSize,
  };
}

/**
 * Resolves at the first SIGINT or SIGTERM; a second one during shutdown exits at once (code 1),
 * once the log is flushed.
 */
function firstSignal(triton: Triton): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      const again = (): void => {
        triton.logger.info('infernode: second signal, exiting immediately');
        void triton.logger.close().finally(() => process.exit(1));
      };
      process.once('SIGINT', again);
      process.once('SIGTERM', again);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

/**
 * Serves until SIGINT or SIGTERM, then stops gracefully: in-flight requests finish, models are
 * unloaded, and the process exits with code 0. --exit-timeout-secs bounds all of it, loads
 * still running included: past it the process exits at once with code 1 ("Exit timeout
 * expired. Exiting immediately."). A signal during the initial loads stops the server too. A
 * model that fails to load at start-up exits with code 1 unless --exit-on-error=false.
 */
async function serve(o: ServeOptions): Promise<void> {
  if (o.modelRepository.length === 0) throw new InvalidArgumentError('--model-repository is required');
  if (o.loadModel && o.modelControlMode !== 'explicit') {
    console.warn('infernode: --load-model has effect only with --model-control-mode=explicit');
  }
  if (o.loadModel?.includes('*') && o.loadModel.length > 1) {
    throw new InvalidArgumentError('--load-model=* loads every model and must be the only --load-model');
  }
  // Checked here, so a bad value is refused even when the listener it configures is disabled.
  parseRestrictions(o.httpRestrictedApi?.join(';'), '--http-restricted-api');
  parseRestrictions(o.grpcRestrictedProtocol?.join(';'), '--grpc-restricted-protocol');
  const triton = new Triton({ config: tritonConfigFromOptions(o) });
  const log = (line: string): void => triton.logger.info(line);
  triton.useRepository({
    repositories: o.modelRepository, controlMode: o.modelControlMode, loadModels: o.loadModel,
    pollSecs: o.repositoryPollSecs,
  });
  // Listening early: a signal during the initial loads stops the server (bounded by the exit timeout).
  const signal = firstSignal(triton);
  // Keeps the process alive while it serves, even with every listener disabled.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  try {
    const started = triton.run().then(() => null);
    const early = await Promise.race([started, signal]);
    if (early !== null) {
      started.catch(() => undefined);  // it fails because the server stops
      log(`infernode: ${early} received during start-up, stopping`);
    } else {
      const ready = triton.repositoryIndex().filter((e) => e.state === 'READY').length;
      const listening = Object.entries(triton.ports).map(([kind, port]) => `${kind} on port ${port}`);
      log(`infernode: serving ${ready} model version(s) from ${o.modelRepository.join(', ')} (mode ${o.modelControlMode}; ` +
        `${listening.length > 0 ? listening.join(', ') : 'no listeners'}); SIGINT or SIGTERM stops`);
      log(`infernode: ${await signal} received, stopping (in-flight requests finish first)`);
    }
    await stopServer(triton);
  } finally {
    clearInterval(keepAlive);
  }
  // Whatever a frontend left open must not keep a stopped server alive.
  setTimeout(() => process.exit(process.exitCode ?? 0), 5000).unref();
}

/** Stops the server; past --exit-timeout-secs the process exits at once with code 1 (the log is flushed by then). */
async function stopServer(triton: Triton): Promise<void> {
  await triton.stop();
  if (triton.exitTimeoutExpired) process.exit(1);
  triton.logger.info('infernode: stopped');
}

/** This package's version (package.json sits two levels above both ts/cli and lib/cli). */
function packageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../../package.json') as { version: string }).version;
}

export function buildProgram(): Command {
  const program = new Command('infernode').description('A Triton-compatible inference server for Node.js')
    .version(packageVersion(), '--version', 'print the infernode version');
  program
    .command('serve')
    .description('serve a Triton model repository over HTTP, gRPC and metrics')
    .option('--model-repository <path>', 'model repository directory: <model>/config.pbtxt and <model>/<version>/model.onnx|model.js|model.mjs (repeatable; alias --model-store)', collect, [])
    .option('--model-store <path>', 'alias of --model-repository', collect)
    .addOption(new Option('--model-control-mode <mode>', 'none: load every model at start, refuse the load/unload API; poll: load every model, then rescan every --repository-poll-secs and load, reload or unload what changed; explicit: load only --load-model at start, then load/unload through the API')
      .choices(['none', 'poll', 'explicit']).default('none'))
    .option('--load-model <name>', 'explicit mode: a model to load at start (repeatable; * = every model, and then the only one)', collect)
    .option('--repository-poll-secs <s>', 'poll mode: seconds between rescans (0 = no timed rescans)', parseIntArg, 15)
    .option('--id <name>', 'server name reported by the server metadata (GET /v2)')
    .option('--http-address <addr>', 'HTTP listen address (default 0.0.0.0)')
    .option('--http-port <port>', 'HTTP port (0 = any free port)', parsePort, 8000)
    .option('--grpc-address <addr>', 'gRPC listen address (default 0.0.0.0)')
    .option('--grpc-port <port>', 'gRPC port (0 = any free port)', parsePort, 8001)
    .option('--metrics-address <addr>', 'metrics listen address (default: the HTTP address)')
    .option('--metrics-port <port>', 'Prometheus metrics port (0 = any free port)', parsePort, 8002)
    .addOption(boolOption('--allow-http [bool]', 'serve the HTTP/REST (KServe v2) protocol', true))
    .addOption(boolOption('--allow-grpc [bool]', 'serve the gRPC (KServe v2) protocol', true))
    .addOption(boolOption('--allow-metrics [bool]', 'serve Prometheus metrics at /metrics', true))
    .addOption(boolOption('--strict-readiness [bool]', 'true: the server is ready only while every model is ready; false: ready as soon as it serves', true))
    .addOption(boolOption('--exit-on-error [bool]', 'true: exit with code 1 when a model fails to load at start-up; false: keep serving, the model shows as UNAVAILABLE with its reason in the repository index', true))
    .option('--exit-timeout-secs <s>', 'at SIGINT/SIGTERM, seconds to let in-flight requests finish before they are failed', parseIntArg, DEFAULT_EXIT_TIMEOUT_SECS)
    .option('--max-queued-responses <n>', 'responses of one streaming (decoupled) request held for a client that reads ' +
      'slowly; past it the request is cancelled (default 1024)', parseIntArg)
    .option('--log-verbose <level>', 'verbose logging level (0 = off; higher logs more)', parseIntArg, 0)
    .option('--http-restricted-api <apis:key=value>', `restrict HTTP API groups (comma-separated: ${API_GROUPS.join(', ')}) to requests carrying the header key: value (repeatable)`, collect)
    .option('--grpc-restricted-protocol <protocols:key=value>', 'restrict gRPC protocol groups (the same names) to calls carrying the metadata triton-grpc-protocol-<key>: value (repeatable)', collect)
    .addOption(boolOption('--allow-client-shm [bool]', 'allow clients to register system and CUDA shared-memory regions for inputs and outputs', false))
    .option('--http-max-input-size <bytes>', 'largest HTTP request body accepted (default 67108864); larger ones are refused before anything is allocated', parseHttpMaxInputSize)
    .option('--http-header-forward-pattern <regex>', 'HTTP request headers matching it reach the model as request parameters')
    .option('--grpc-header-forward-pattern <regex>', 'gRPC metadata matching it reaches the model as request parameters')
    .option('--grpc-max-decompressed-size <bytes>', 'largest size a compressed gRPC request message may inflate to (default 67108864); larger ones are refused with RESOURCE_EXHAUSTED', parseIntArg)
    .option('--grpc-keepalive-time <ms>', 'gRPC keepalive ping interval (default 7200000)', parseIntArg)
    .option('--grpc-keepalive-timeout <ms>', 'gRPC keepalive ping timeout (default 20000)', parseIntArg)
    .addOption(boolOption('--grpc-keepalive-permit-without-calls [bool]', 'allow keepalive pings on connections without calls', false))
    .option('--grpc-http2-max-pings-without-data <n>', 'pings allowed without data before the server stops answering them (default 2)', parseIntArg)
    .addOption(new Option('--grpc-infer-response-compression-level <level>', 'gRPC response compression (grpc-js sends uncompressed; other levels are logged and ignored)')
      .choices(['none', 'low', 'medium', 'high']))
    .addOption(boolOption('--grpc-use-ssl [bool]', 'serve gRPC over TLS with --grpc-server-cert and --grpc-server-key', false))
    .addOption(boolOption('--grpc-use-ssl-mutual [bool]', 'serve gRPC over TLS and require client certificates signed by --grpc-root-cert; preempts --grpc-use-ssl', false))
    .option('--grpc-server-cert <path>', 'PEM file holding the gRPC server certificate (chain); ignored unless --grpc-use-ssl or --grpc-use-ssl-mutual')
    .option('--grpc-server-key <path>', 'PEM file holding the gRPC server private key; ignored unless --grpc-use-ssl or --grpc-use-ssl-mutual')
    .option('--grpc-root-cert <path>', 'PEM file holding the CA certificate client certificates must be signed by; required by --grpc-use-ssl-mutual')
    .addOption(boolOption('--http-use-ssl [bool]', 'serve HTTPS with --http-server-cert and --http-server-key (infernode only: Triton has no HTTPS)', false))
    .addOption(boolOption('--http-use-ssl-mutual [bool]', 'serve HTTPS and require client certificates signed by --http-root-cert; preempts --http-use-ssl', false))
    .option('--http-server-cert <path>', 'PEM file holding the HTTPS server certificate (chain); ignored unless --http-use-ssl or --http-use-ssl-mutual')
    .option('--http-server-key <path>', 'PEM file holding the HTTPS server private key; ignored unless --http-use-ssl or --http-use-ssl-mutual')
    .option('--http-root-cert <path>', 'PEM file holding the CA certificate HTTPS client certificates must be signed by; required by --http-use-ssl-mutual')
    .option('--metrics-config <setting>', 'metrics settings as tritonserver: summary_latencies=true, histogram_latencies=true, summary_quantiles=0.5:0.05,0.99:0.001 (repeatable)', collect)
    .addOption(boolOption('--allow-gpu-metrics [bool]', 'report per-GPU metrics (nv_gpu_*, nv_energy_consumption) read through NVML; absent without an NVIDIA driver or GPU', true))
    .addOption(boolOption('--allow-cpu-metrics [bool]', 'report CPU metrics (nv_cpu_utilization, nv_cpu_memory_*) read from /proc', true))
    .option('--metrics-interval-ms <ms>', 'how often CPU, memory and GPU metrics refresh, in milliseconds (default 2000)', parsePositiveIntArg)
    .option('--trace-config <setting>', 'trace settings as tritonserver: [triton,]file=..., level=TIMESTAMPS, rate=1000, count=-1, log-frequency=0 (repeatable)', collect)
    .option('--cache-config <cache,key=value>', 'response cache as tritonserver: local,size=<bytes> enables the local cache, an LRU of that many bytes of outputs shared by every model whose config has response_cache { enable: true } (repeatable)', collect)
    .option('--response-cache-byte-size <bytes>', 'deprecated: the same as --cache-config local,size=<bytes> (0 = no cache)', parseIntArg)
    .option('--rate-limit <mode>', 'rate limiting as tritonserver: off (default: instances execute as soon as they are free) or execution_count (an instance executes only when the resources of its instance group\'s rate_limiter are available; priority weights instances of all models)')
    .option('--pinned-memory-pool-byte-size <bytes>', 'pinned host memory the batch buffers may use, process-wide, with a CUDA device (default 256 MiB); past it they are pageable', parseIntArg)
    .option('--rate-limit-resource <name:count[:device]>', 'how many of a rate limiter resource exist, on <device> or on every device (default: the largest count any instance asks for; once given, every resource used must be given) (repeatable)', collect)
    .addOption(boolOption('--log-info [bool]', 'log info messages', true))
    .addOption(boolOption('--log-warning [bool]', 'log warnings', true))
    .addOption(boolOption('--log-error [bool]', 'log errors', true))
    .option('--log-file <path>', 'write the log to this file instead of stdout/stderr')
    .addOption(new Option('--log-format <format>', 'log line format').choices(['default', 'ISO8601']).default('default'))
    .action(async (o: ServeOptions & { modelStore?: string[] }) => {
      await serve({ ...o, modelRepository: [...o.modelRepository, ...(o.modelStore ?? [])] });
    });
  addPerfCommand(program);
  addDoctorCommand(program);
  return program;
}

if (require.main === module) {
  buildProgram().parseAsync(process.argv).catch((err: unknown) => {
    console.error(`infernode: ${(err as Error).message}`);
    process.exit(1);
  });
}
