/**
 * Request parameters as both frontends receive them: Triton's reserved keys (priority,
 * timeout, sequence flags, binary_data_output, headers) are taken out and checked; every other
 * key is a custom parameter handed to the model (the "parameters" extension).
 */
import { invalidArg } from '../errors';
import { describeText } from '../describe-value';
import type { Parameters } from '../request';

/** What a request's parameters ask of the server, and what is left for the model. */
export interface RequestParameters {
  /** 0 = the model's default priority level. */
  priority: number;
  /** 0 = no per-request queue timeout. */
  timeoutMicroseconds: number;
  /** HTTP: default for outputs the request does not list. */
  binaryDataOutput: boolean;
  custom: Parameters;
}

// Sequence parameters belong to the sequence batcher; a model without one ignores them, as
// Triton's dynamic batcher does. `headers` is the HTTP client's own bookkeeping.
const IGNORED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'headers']);

function unsigned(key: string, value: unknown): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw invalidArg(`parameter '${key}' must be a non-negative integer, got ${JSON.stringify(describeText(value))}`);
  }
  return n;
}

/** Sets a key as an own property: an assignment to `__proto__` would set the prototype (and a scalar is dropped). */
function setOwn(custom: Parameters, key: string, value: string | number | boolean): void {
  Object.defineProperty(custom, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Splits request-level parameters. `allowedTritonKeys` are the `triton_*` keys this protocol
 * accepts (gRPC: triton_enable_empty_final_response); any other `triton_` key is refused.
 */
export function splitRequestParameters(
  params: Record<string, unknown> | undefined, allowedTritonKeys: readonly string[] = [],
): RequestParameters {
  const out: RequestParameters = { priority: 0, timeoutMicroseconds: 0, binaryDataOutput: false, custom: {} };
  if (params === undefined || params === null) return out;
  if (typeof params !== 'object' || Array.isArray(params)) throw invalidArg('request parameters must be an object');
  for (const key of Object.keys(params)) {
    const value = params[key];
    if (key === 'priority') out.priority = unsigned(key, value);
    else if (key === 'timeout') out.timeoutMicroseconds = unsigned(key, value);
    else if (key === 'binary_data_output') {
      if (typeof value !== 'boolean') throw invalidArg(`parameter 'binary_data_output' must be a boolean`);
      out.binaryDataOutput = value;
    } else if (IGNORED.has(key)) continue;
    else if (key.startsWith('triton_') && !allowedTritonKeys.includes(key)) {
      throw invalidArg(`parameter keys starting with 'triton_' are reserved for Triton usage and should not be ` +
        `specified: '${key}'`);
    } else if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) {
      setOwn(out.custom, key, value);
    } else if (typeof value === 'bigint') {
      setOwn(out.custom, key, Number.isSafeInteger(Number(value)) ? Number(value) : value.toString());
    } else {
      throw invalidArg(`parameter '${key}' must be a string, number or boolean`);
    }
  }
  return out;
}
