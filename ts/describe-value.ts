/**
 * Untrusted values quoted in error messages. JSON.stringify and String() recurse into arrays and
 * objects, so a request value nested a hundred thousand levels deep (2 bytes a level, well inside
 * any body limit) made them throw RangeError (stack overflow) while an error message was being
 * built: the client got a 500 instead of its 400, and the server logged an "internal error" with
 * a stack per request. This prints the same JSON text for ordinary values, but never looks more
 * than a few levels or items deep, and clips long text as every echoed text is (errors.ts `clip`).
 */
import { clip } from './errors';

const MAX_DEPTH = 3;
const MAX_ITEMS = 8;

function shallowJson(value: unknown, depth: number): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'bigint') return value.toString();
  // JSON.stringify writes Infinity and NaN as null: an overlong JSON number (JSON.parse makes it
  // Infinity) was reported as "got null".
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  if (depth >= MAX_DEPTH) return Array.isArray(value) ? '[...]' : '{...}';
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((v) => shallowJson(v, depth + 1));
    if (value.length > MAX_ITEMS) items.push('...');
    return `[${items.join(',')}]`;
  }
  const keys = Object.keys(value);
  const items = keys.slice(0, MAX_ITEMS).map((k) => `${JSON.stringify(k)}:${shallowJson((value as Record<string, unknown>)[k], depth + 1)}`);
  if (keys.length > MAX_ITEMS) items.push('...');
  return `{${items.join(',')}}`;
}

/** A value as (bounded) JSON text for an error message: `"abc"`, `-1`, `[1,[2,[...]]]`, clipped at `max` characters. */
export function describeValue(value: unknown, max = 120): string {
  return clip(shallowJson(value, 0), max);
}

/** A value as plain text (strings unquoted), as `String(value)` would give for scalars. */
export function describeText(value: unknown, max = 120): string {
  if (typeof value === 'string') return clip(value, max);
  if (value === null || typeof value !== 'object') return String(value);
  return describeValue(value, max);
}
