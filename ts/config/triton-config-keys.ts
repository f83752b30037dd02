/**
 * Every `TritonConfig` option, so `new Triton({ config })` can refuse an unknown one: JS callers
 * get no type check, and a misspelled option silently left at its default is the worst outcome.
 */
import { InferenceServerError } from '../errors';
import { suggestion } from './proto-schema';
import type { TritonConfig } from './types';

export const TRITON_CONFIG_KEYS = [
  'id', 'logVerbose', 'logFile', 'logInfo', 'logWarning', 'logError', 'logFormat', 'exitTimeoutSecs', 'exitOnError',
  'strictReadiness', 'allowHttp', 'httpAddress', 'httpPort', 'httpRestrictedApi', 'httpMaxInputSize',
  'httpHeaderForwardPattern', 'httpUseSsl', 'httpUseSslMutual', 'httpServerCert', 'httpServerKey', 'httpRootCert',
  'allowGrpc', 'grpcAddress', 'grpcPort', 'grpcRestrictedProtocol', 'grpcHeaderForwardPattern', 'grpcMaxMessageSize',
  'grpcMaxDecompressedSize', 'grpcKeepaliveTime', 'grpcKeepaliveTimeout', 'grpcKeepalivePermitWithoutCalls',
  'grpcHttp2MaxPingsWithoutData', 'grpcInferResponseCompressionLevel', 'grpcUseSsl', 'grpcUseSslMutual',
  'grpcServerCert', 'grpcServerKey', 'grpcRootCert', 'allowMetrics', 'metricsAddress', 'metricsPort', 'metricsConfig',
  'metricsIntervalMs', 'allowGpuMetrics', 'allowCpuMetrics', 'pinnedMemoryPoolByteSize', 'allowClientShm', 'traceConfig',
  'maxQueueSizeHardLimit', 'maxQueuedResponses', 'cacheConfig', 'responseCacheByteSize', 'rateLimit', 'rateLimitResource',
] as const satisfies readonly (keyof TritonConfig)[];

// Compile-time check that the list is complete: a TritonConfig option missing above is an error here.
type Unlisted = Exclude<keyof TritonConfig, (typeof TRITON_CONFIG_KEYS)[number]>;
const everyOptionListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyOptionListed;

/** Options people reach for that TritonConfig spells differently or does elsewhere. */
const HINTS: Record<string, string> = {
  modelRepository: 'serve a model repository with triton.useRepository({ repositories: [dir] }) before run()',
  modelStore: 'serve a model repository with triton.useRepository({ repositories: [dir] }) before run()',
  modelControlMode: 'pass controlMode to triton.useRepository({ repositories, controlMode })',
};

/** INVALID_ARG for the first option `config` has that TritonConfig does not, with what to use instead. */
export function checkTritonConfigKeys(config: object): void {
  const known = new Set<string>(TRITON_CONFIG_KEYS);
  for (const key of Object.keys(config)) {
    if (known.has(key)) continue;
    const instead = HINTS[key] ? `: ${HINTS[key]}` : suggestion(key, TRITON_CONFIG_KEYS) ||
      ': the options are the TritonConfig type\'s fields (docs/http.md and docs/grpc.md list them with their flags)';
    throw new InferenceServerError('INVALID_ARG', `unknown TritonConfig option '${key}'${instead}`);
  }
}
