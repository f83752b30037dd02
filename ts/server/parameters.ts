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
  /**
   * The sequence batcher's correlation id: a non-zero uint64 (a number when it is a safe
   * integer, else a bigint) or a non-empty string; absent when the request gives none, 0 or "".
   * A model without a sequence batcher ignores it, as Triton does.
   */
  sequenceId?: number | bigint | string;
  sequenceStart?: boolean;
  sequenceEnd?: boolean;
}

// `headers` is the HTTP client's own bookkeeping.
const IGNORED = new Set(['headers']);

const UINT64_MAX = (1n << 64n) - 1n;

/**
 * `sequence_id`: an unsigned 64-bit integer or a string (Triton's http_server.cc tries uint64,
 * then string); 0 and "" mean "not a sequence". gRPC int64/uint64 values may come as bigint.
 */
function sequenceId(value: unknown): number | bigint | string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  let id: bigint | undefined;
  if (typeof value === 'bigint') id = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) id = BigInt(value);
  if (id === undefined || id < 0n || id > UINT64_MAX) {
    throw invalidArg(`Unable to parse 'sequence_id': attempt to access JSON non-string as string (a sequence id is an ` +
      `unsigned 64-bit integer or a string, got ${JSON.stringify(describeText(value))})`);
  }
  if (id === 0n) return undefined;
  return id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id;
}

function sequenceFlag(key: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw invalidArg(`Unable to parse '${key}': attempt to access JSON non-boolean as boolean (got ` +
      `${JSON.stringify(describeText(value))})`);
  }
  return value;
}

/**
 * JSON.parse turns an integer above 2^53 into the nearest double; the exact `"sequence_id":
 * <digits>` is read back from the request's JSON text. Returns the parsed value unchanged when
 * it is not such a number, or when the text does not give exactly one spelling of it (the
 * value is then refused as not an integer rather than rounded).
 */
export function exactSequenceId(jsonText: string, parsed: unknown): unknown {
  if (typeof parsed !== 'number' || Number.isSafeInteger(parsed) || !Number.isInteger(parsed)) return parsed;
  const spellings = new Set<string>();
  for (const m of jsonText.matchAll(/"sequence_id"\s*:\s*(\d+)(?![\d.eE])/g)) {
    if (Number(m[1]) === parsed) spellings.add(m[1]);
  }
  return spellings.size === 1 ? BigInt([...spellings][0]) : parsed;
}

/**
 * `priority` or `timeout`: uint64 in Triton, which takes any value of that range. Past 2^53 the
 * value goes on as the nearest double (over HTTP, JSON.parse has already made it one, and 2^64 - 1
 * reads as 2^64): for a priority that is beyond any model's levels short of 2^53 of them (the
 * default level), for a timeout 285 years (never, natively).
 */
function unsigned(key: string, value: unknown): number {
  const inRange = typeof value === 'bigint' ? value >= 0n && value <= UINT64_MAX
    : typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 2 ** 64;
  if (!inRange) {
    throw invalidArg(`parameter '${key}' must be a non-negative integer below 2^64, got ${JSON.stringify(describeText(value))}`);
  }
  return Number(value);
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
    } else if (key === 'sequence_id') out.sequenceId = sequenceId(value);
    else if (key === 'sequence_start') out.sequenceStart = sequenceFlag(key, value);
    else if (key === 'sequence_end') out.sequenceEnd = sequenceFlag(key, value);
    else if (IGNORED.has(key)) continue;
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

/** Triton's kReservedParameterKeys (server src/common.h): a forwarded header may not take these names. */
const RESERVED_HEADER_KEYS = ['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output'];

/**
 * The header-forward pattern of either frontend (--http-header-forward-pattern,
 * --grpc-header-forward-pattern), matched partially against each header or metadata name as RE2
 * does. RE2's leading inline flags, which Triton's docs use and JavaScript lacks, are translated:
 * `(?i)`, `(?s)`, `(?m)`, `(?-i)` and their combinations (`(?is)`, `(?i-s)`...). Matching is
 * case-insensitive unless the pattern turns it off with `(?-i)`: header names are
 * case-insensitive in HTTP, and gRPC metadata names are lower case anyway. INVALID_ARG naming
 * `setting` for what cannot be compiled, inline flags in mid-pattern included.
 */
export function compileHeaderForwardPattern(pattern: string | undefined, setting: string): RegExp | null {
  if (!pattern) return null;
  const refuse = (why: string): never => {
    throw invalidArg(`${setting} '${pattern}' is not a valid regular expression: ${why}`);
  };
  const lead = /^\(\?([imsU]*)(?:-([imsU]*))?\)/.exec(pattern);
  const flags = new Set(['i']);
  let body = pattern;
  if (lead && (lead[1] || lead[2])) {
    for (const f of lead[1]) flags.add(f);
    for (const f of lead[2] ?? '') flags.delete(f);
    if (flags.has('U')) refuse("RE2's non-greedy flag (?U) has no JavaScript equivalent");
    body = pattern.slice(lead[0].length);
  }
  if (/\(\?[imsU-]+[:)]/.test(body)) refuse('inline flags are supported only at the start of the pattern, e.g. (?i)x-.*');
  try {
    return new RegExp(body, [...flags].join(''));
  } catch (err) {
    return refuse((err as Error).message);
  }
}

/** A header `name` the pattern forwards: Triton refuses names of reserved parameters. */
export function checkForwardedHeader(name: string): void {
  const lower = name.toLowerCase();
  if (RESERVED_HEADER_KEYS.includes(lower) || lower.startsWith('triton_')) {
    throw invalidArg(`Header '${name}' is reserved for Triton usage and cannot be forwarded.`);
  }
}
