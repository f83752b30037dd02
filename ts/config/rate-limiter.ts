/**
 * Triton's rate limiter settings: the server's `rateLimit` / `rateLimitResource` (tritonserver's
 * `--rate-limit`, `--rate-limit-resource`) and a model instance group's `rate_limiter`
 * (`ModelConfig.rateLimiter` for bind()). Native code does the limiting
 * (cpp/scheduling/rate_limiter.h); this module validates what users write.
 */
import { invalidArg } from '../errors';
import type { TritonConfig } from './types';
import type { FieldNaming } from './normalize';

export type RateLimitMode = 'off' | 'execution_count';

/** One `--rate-limit-resource`: device -1 = every device. */
export interface RateLimitResourceCount {
  name: string;
  count: number;
  device: number;
}

/** An instance group's rate limiter as native code reads it (also its protobuf-JSON form). */
export interface NormalizedRateLimiter {
  resources: { name: string; global: boolean; count: number }[];
  priority: number;
}

const UINT32_MAX = 0xffffffff;

/** `rateLimit` as tritonserver reads `--rate-limit` (case-insensitive); default 'off'. */
export function parseRateLimitMode(config: TritonConfig): RateLimitMode {
  const value = config.rateLimit;
  if (value === undefined) return 'off';
  const mode = typeof value === 'string' ? value.toLowerCase() : '';
  if (mode === 'off' || mode === 'execution_count') return mode;
  throw invalidArg(`invalid argument for --rate-limit (rateLimit): '${String(value)}'; expected 'execution_count' or 'off'`);
}

function parseInteger(text: string, arg: string, what: string): number {
  if (!/^-?\d+$/.test(text.trim())) throw invalidArg(`--rate-limit-resource '${arg}': ${what} must be an integer, got '${text}'`);
  return Number(text.trim());
}

/**
 * One `--rate-limit-resource <name>:<count>[:<device>]` entry, with tritonserver's format error
 * (a missing or extra ':'), and clear errors for what tritonserver would wrap around (a negative
 * count) or misread (a count or device that is not a number).
 */
export function parseRateLimitResource(arg: string): RateLimitResourceCount {
  const parts = String(arg).split(':');
  if (parts.length < 2 || parts.length > 3) {
    throw invalidArg(`--rate-limit-resource option format is '<resource_name>:<count>:<device>' or ` +
      `'<resource_name>:<count>'. Got ${String(arg)}`);
  }
  const name = parts[0];
  if (name.length === 0) throw invalidArg(`--rate-limit-resource '${arg}': the resource name is empty`);
  const count = parseInteger(parts[1], arg, 'the count');
  if (count < 0 || count > UINT32_MAX) throw invalidArg(`--rate-limit-resource '${arg}': the count must be between 0 and ${UINT32_MAX}, got ${count}`);
  const device = parts.length === 3 ? parseInteger(parts[2], arg, 'the device') : -1;
  if (parts.length === 3 && (device < 0 || device > 0x7fffffff)) {
    throw invalidArg(`--rate-limit-resource '${arg}': the device must be a device id >= 0, got ${device}`);
  }
  return { name, count, device };
}

/**
 * The server's rate limiter settings: null when `rateLimit` is off (then `rateLimitResource` is
 * ignored, as tritonserver does), else the explicit resource counts (possibly none).
 */
export function parseRateLimiterSettings(config: TritonConfig): RateLimitResourceCount[] | null {
  const entries = config.rateLimitResource ?? [];
  if (!Array.isArray(entries)) throw invalidArg('rateLimitResource must be a list of \'<name>:<count>[:<device>]\' strings');
  const resources = entries.map(parseRateLimitResource);
  return parseRateLimitMode(config) === 'off' ? null : resources;
}

function isUint32(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= UINT32_MAX;
}

/**
 * Validates an instance group's rate limiter: bind()'s `config.rateLimiter` (naming 'camel') or
 * config.pbtxt's `instance_group [ { rate_limiter { ... } } ]` (naming 'proto', `where` names
 * the group). Returns it with defaults filled (global false, priority 0 — counted as 1).
 */
export function normalizeRateLimiter(model: string, value: unknown, naming: FieldNaming, where = ''): NormalizedRateLimiter {
  const field = naming === 'camel' ? 'config.rateLimiter' : `${where}rate_limiter`;
  const fail = (what: string): never => { throw invalidArg(`model '${model}': ${field}${what}`); };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(' must be an object { resources, priority }');
  const rl = value as { resources?: unknown; priority?: unknown };
  const resources = rl.resources ?? [];
  if (!Array.isArray(resources)) fail('.resources must be a list of { name, count, global }');
  const priority = rl.priority ?? 0;
  if (!isUint32(priority)) fail(`.priority must be an integer between 0 and ${UINT32_MAX}, got ${String(rl.priority)}`);
  const normalized = (resources as unknown[]).map((r, i) => {
    const at = `.resources[${i}]`;
    if (typeof r !== 'object' || r === null) return fail(`${at} must be an object { name, count, global }`);
    const { name, count, global } = r as { name?: unknown; count?: unknown; global?: unknown };
    if (typeof name !== 'string' || name.length === 0) return fail(`${at}.name must be a non-empty string`);
    if (!isUint32(count ?? 0)) return fail(`${at}.count (resource '${name}') must be an integer between 0 and ${UINT32_MAX}, got ${String(count)}`);
    if (global !== undefined && typeof global !== 'boolean') return fail(`${at}.global (resource '${name}') must be a boolean`);
    return { name, global: Boolean(global), count: (count ?? 0) as number };
  });
  return { resources: normalized, priority: priority as number };
}
