/**
 * The server's response cache settings: `TritonConfig.cacheConfig` (tritonserver's
 * `--cache-config <cache>,<key>=<value>`, PyTriton's `cache_config`) and the deprecated
 * `responseCacheByteSize` (`--response-cache-byte-size`, the same as `local,size=<n>`).
 * Only Triton's `local` cache (an in-process LRU shared by all models) exists here.
 */
import { InferenceServerError, invalidArg } from '../errors';
import type { TritonConfig } from '../config/types';

export interface CacheSettings {
  /** The byte budget of the local cache (the outputs' bytes of every entry count against it). */
  sizeBytes: number;
}

/** `<cache>,<key>=<value>` entries grouped per cache name, as Triton's command line parser does. */
function settingsPerCache(entries: readonly string[]): Map<string, Map<string, string>> {
  const caches = new Map<string, Map<string, string>>();
  for (const entry of entries) {
    const comma = entry.indexOf(',');
    const eq = entry.indexOf('=', comma + 1);
    if (comma <= 0 || eq <= comma + 1) {
      throw invalidArg(`cache config '${entry}' must look like <cache>,<key>=<value> (e.g. local,size=1048576)`);
    }
    const name = entry.slice(0, comma).trim();
    const settings = caches.get(name) ?? new Map<string, string>();
    settings.set(entry.slice(comma + 1, eq).trim(), entry.slice(eq + 1).trim());
    caches.set(name, settings);
  }
  return caches;
}

/** Triton's local cache reads `size` with std::stoull: decimal digits only here, no sign. */
function parseSize(value: string, where: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) {
    throw invalidArg(`${where}: 'size' must be a byte count (a non-negative integer), got '${value}'`);
  }
  return n;
}

/**
 * The cache a server config asks for, or null when it asks for none. Setting a cache config
 * enables the cache (even with size 0, where nothing fits); `responseCacheByteSize: 0` is
 * ignored, as Triton ignores `--response-cache-byte-size=0`.
 */
export function parseCacheConfig(config: TritonConfig): CacheSettings | null {
  const caches = settingsPerCache(config.cacheConfig ?? []);
  const byteSize = config.responseCacheByteSize;
  if (byteSize !== undefined) {
    if (!Number.isSafeInteger(byteSize) || byteSize < 0) {
      throw invalidArg(`responseCacheByteSize must be a non-negative integer, got ${String(byteSize)}`);
    }
    if (byteSize > 0 && !caches.get('local')?.has('size')) {
      caches.set('local', new Map([...(caches.get('local') ?? []), ['size', String(byteSize)]]));
    }
  }
  if (caches.size === 0) return null;
  for (const name of caches.keys()) {
    if (name !== 'local') {
      throw new InferenceServerError('UNSUPPORTED', `cache '${name}' is not supported by infernode: only the 'local' ` +
        'cache is (e.g. --cache-config local,size=1048576)');
    }
  }
  const local = caches.get('local')!;
  const size = local.get('size');
  if (size === undefined) {
    throw invalidArg("Failed to initialize LocalCache: config didn't contain a valid 'size' field " +
      '(e.g. --cache-config local,size=1048576)');
  }
  return { sizeBytes: parseSize(size, 'cache config local') };
}
