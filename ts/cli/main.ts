#!/usr/bin/env node
/**
 * `infernode serve`: serves a Triton model repository with tritonserver's usual flags.
 * commander parses the command line (a well-kept parser with help generation; flag spelling,
 * repeatable options and `--flag=false` booleans as tritonserver accepts them).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { Triton } from '../triton';
import type { TritonConfig } from '../config/types';
import type { ControlMode } from '../repository/manager';

function parseBool(value: string | undefined): boolean {
  if (value === undefined) return true;
  const v = value.toLowerCase();
  if (['true', '1', 'on', 'yes'].includes(v)) return true;
  if (['false', '0', 'off', 'no'].includes(v)) return false;
  throw new InvalidArgumentError(`expected true or false, got '${value}'`);
}

function parseIntArg(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError(`expected a non-negative integer, got '${value}'`);
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
  strictReadiness?: boolean;
  exitOnError?: boolean;
  exitTimeoutSecs: number;
  logVerbose: number;
  httpRestrictedApi?: string[];
  grpcRestrictedProtocol?: string[];
  allowClientShm?: boolean;
}

/** The TritonConfig a command line asks for. */
export function tritonConfigFromOptions(o: ServeOptions): TritonConfig {
  return {
    id: o.id,
    httpAddress: o.httpAddress, httpPort: o.httpPort, allowHttp: o.allowHttp ?? true,
    grpcAddress: o.grpcAddress, grpcPort: o.grpcPort, allowGrpc: o.allowGrpc ?? true,
    metricsAddress: o.metricsAddress, metricsPort: o.metricsPort, allowMetrics: o.allowMetrics ?? true,
    strictReadiness: o.strictReadiness ?? true, exitOnError: o.exitOnError ?? true, exitTimeoutSecs: o.exitTimeoutSecs,
    logVerbose: o.logVerbose,
    httpRestrictedApi: o.httpRestrictedApi?.join(';'), grpcRestrictedProtocol: o.grpcRestrictedProtocol?.join(';'),
    allowClientShm: o.allowClientShm ?? false,
  };
}

async function serve(o: ServeOptions): Promise<void> {
  if (o.modelRepository.length === 0) throw new InvalidArgumentError('--model-repository is required');
  if (o.loadModel && o.modelControlMode !== 'explicit') {
    console.warn('infernode: --load-model has effect only with --model-control-mode=explicit');
  }
  const triton = new Triton({ config: tritonConfigFromOptions(o) });
  triton.useRepository({
    repositories: o.modelRepository, controlMode: o.modelControlMode, loadModels: o.loadModel,
    pollSecs: o.repositoryPollSecs,
  });
  await triton.serve();
}

export function buildProgram(): Command {
  const program = new Command('infernode').description('A Triton-compatible inference server for Node.js');
  program
    .command('serve')
    .description('serve a Triton model repository over HTTP, gRPC and metrics')
    .option('--model-repository <path>', 'model repository directory (repeatable; alias --model-store)', collect, [])
    .option('--model-store <path>', 'alias of --model-repository', collect)
    .addOption(new Option('--model-control-mode <mode>', 'none: load all at start; poll: rescan and reload changes; explicit: load/unload through the API')
      .choices(['none', 'poll', 'explicit']).default('none'))
    .option('--load-model <name>', 'explicit mode: a model to load at start (repeatable; * = all)', collect)
    .option('--repository-poll-secs <s>', 'poll mode: seconds between rescans', parseIntArg, 15)
    .option('--id <name>', 'server name reported by GET /v2')
    .option('--http-address <addr>', 'HTTP listen address (default 0.0.0.0)')
    .option('--http-port <port>', 'HTTP port', parseIntArg, 8000)
    .option('--grpc-address <addr>', 'gRPC listen address (default 0.0.0.0)')
    .option('--grpc-port <port>', 'gRPC port', parseIntArg, 8001)
    .option('--metrics-address <addr>', 'metrics listen address (default: the HTTP address)')
    .option('--metrics-port <port>', 'Prometheus metrics port', parseIntArg, 8002)
    .addOption(boolOption('--allow-http [bool]', 'serve HTTP/REST', true))
    .addOption(boolOption('--allow-grpc [bool]', 'serve gRPC', true))
    .addOption(boolOption('--allow-metrics [bool]', 'serve Prometheus metrics', true))
    .addOption(boolOption('--strict-readiness [bool]', 'ready only when every model is ready', true))
    .addOption(boolOption('--exit-on-error [bool]', 'exit when a model fails to load at start-up', true))
    .option('--exit-timeout-secs <s>', 'seconds to wait for in-flight requests at shutdown', parseIntArg, 30)
    .option('--log-verbose <level>', 'verbose logging level (0 = off)', parseIntArg, 0)
    .option('--http-restricted-api <apis:key=value>', 'restrict HTTP API groups to requests carrying header key=value (repeatable)', collect)
    .option('--grpc-restricted-protocol <protocols:key=value>', 'restrict gRPC protocol groups to calls carrying metadata triton-grpc-protocol-<key>=value (repeatable)', collect)
    .addOption(boolOption('--allow-client-shm [bool]', 'allow clients to register shared-memory regions', false))
    .action(async (o: ServeOptions & { modelStore?: string[] }) => {
      await serve({ ...o, modelRepository: [...o.modelRepository, ...(o.modelStore ?? [])] });
    });
  return program;
}

if (require.main === module) {
  buildProgram().parseAsync(process.argv).catch((err: unknown) => {
    console.error(`infernode: ${(err as Error).message}`);
    process.exit(1);
  });
}
