/**
 * Every `TritonConfig` option, so `new Triton({ config })` can refuse an unknown one: JS callers
 * get no type check, and a misspelled option silently left at its default is the worst outcome.
 */
import { InferenceServerError } from '../errors';
import type { TritonConfig } from './types';

export const TRITON_CONFIG_KEYS = [
  'id', 'logVerbose', 'logFile', 'logInfo', 'logWarning', 'logError', 'logFormat', 'exitTimeoutSecs', 'exitOnError',
  'strictReadiness', 'allowHttp', 'httpAddress', 'httpPort', 'httpRestrictedApi', 'httpMaxInputSize',
  'httpHeaderForwardPattern', 'httpUseSsl', 'httpUseSslMutual', 'httpServerCert', 'httpServerKey', 'httpRootCert',
  'allowGrpc', 'grpcAddress', 'grpcPort', 'grpcRestrictedProtocol', 'grpcHeaderForwardPattern', 'grpcMaxMessageSize',
  'grpcMaxDecompressedSize', 'grpcKeepaliveTime', 'grpcKeepaliveTimeout', 'grpcKeepalivePermitWithoutCalls',
  'grpcHttp2MaxPingsWithoutData', 'grpcInferResponseCompressionLevel', 'grpcUseSsl', 'grpcUseSslMutual',
  'grpcServerCert', 'grpcServerKey', 'grpcRootCert', 'allowMetrics', 'metricsAddress', 'metricsPort', 'metricsConfig',
  'metricsIntervalMs', 'allowGpuMetrics', 'pinnedMemoryPoolByteSize', 'allowClientShm', 'traceConfig',
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
    const hint = HINTS[key] ?? closest(key, TRITON_CONFIG_KEYS);
    throw new InferenceServerError('INVALID_ARG', `unknown TritonConfig option '${key}': ` +
      (hint ? (HINTS[key] ? hint : `did you mean '${hint}'?`) : 'the options are the TritonConfig type\'s fields (docs/http.md and docs/grpc.md list them with their flags)'));
  }
}

/** The known option nearest to `key` (edit distance ≤ a third of its length), or null. */
function closest(key: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const candidate of candidates) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}
