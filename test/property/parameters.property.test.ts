/**
 * Property tests of request parameters (ts/server/parameters.ts), as both frontends hand them
 * over: any record of keys and values (wrong types, bigints, nesting 30k deep, keys such as
 * `__proto__`) splits into Triton's reserved settings and the model's custom parameters, or
 * fails with INVALID_ARG — never another exception. What splits keeps every custom key as an
 * own property with its value, and the reserved values in range.
 */
import fc from 'fast-check';
import { InferenceServerError } from '../../ts/errors';
import { splitRequestParameters } from '../../ts/server/parameters';
import { settings } from './fc-settings';
import { RawJson, deepJson } from './wire-arbitraries';

const KEYS = ['priority', 'timeout', 'binary_data_output', 'sequence_id', 'sequence_start', 'sequence_end', 'headers',
  'triton_enable_empty_final_response', 'triton_x', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'custom', ''];

const value = fc.oneof(
  fc.string({ maxLength: 4 }), fc.boolean(), fc.double(), fc.integer(), fc.bigInt(), fc.constant(null), fc.constant(undefined),
  fc.jsonValue({ maxDepth: 2 }), deepJson.map((raw: RawJson) => JSON.parse(raw.text) as unknown),
);

/** A record built with defineProperty, so `__proto__` is an own key as JSON.parse and the gRPC decoder make it. */
const params = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 5 })), value), { maxLength: 6 }).map((entries) => {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  return out;
});

const RESERVED = new Set(['priority', 'timeout', 'binary_data_output', 'sequence_id', 'sequence_start', 'sequence_end', 'headers']);

test('any parameters split into reserved settings and custom parameters, or fail with INVALID_ARG', () => {
  fc.assert(fc.property(params, fc.subarray(['triton_enable_empty_final_response', 'triton_x']), (p, allowed) => {
    let split;
    try {
      split = splitRequestParameters(p, allowed);
    } catch (err) {
      if (err instanceof InferenceServerError && err.code === 'INVALID_ARG') return;
      throw err;
    }
    expect(Number.isSafeInteger(split.priority) && split.priority >= 0).toBe(true);
    expect(Number.isSafeInteger(split.timeoutMicroseconds) && split.timeoutMicroseconds >= 0).toBe(true);
    const expected: Record<string, unknown> = {};
    for (const key of Object.keys(p)) {
      if (RESERVED.has(key)) continue;
      const v = p[key];
      const kept = typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v;
      Object.defineProperty(expected, key, { value: kept, enumerable: true, writable: true, configurable: true });
    }
    expect(Object.keys(split.custom).sort()).toEqual(Object.keys(expected).sort());
    for (const key of Object.keys(expected)) expect(Object.getOwnPropertyDescriptor(split.custom, key)?.value).toBe(expected[key]);
    expect(Object.getPrototypeOf(split.custom)).toBe(Object.prototype);
  }), settings(3000));
});

test('non-object parameters are INVALID_ARG; absent ones are the defaults', () => {
  fc.assert(fc.property(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.array(fc.integer(), { maxLength: 2 })), (p) => {
    expect(() => splitRequestParameters(p as unknown as Record<string, unknown>)).toThrow(InferenceServerError);
  }), settings(300));
  expect(splitRequestParameters(undefined)).toEqual({ priority: 0, timeoutMicroseconds: 0, binaryDataOutput: false, custom: {} });
});
