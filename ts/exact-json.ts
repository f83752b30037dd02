/**
 * JSON with integers beyond 2^53 read and written exactly. JSON.parse turns such an integer into
 * the nearest double; `markBigIntegers` wraps each integer literal of 16 digits or more (outside
 * strings) as a marked string before parsing, so the reader decides what it becomes (the HTTP
 * frontend's tensor decoder: ts/server/big-integers.ts; a model config: `parseJsonExact`).
 * JSON.stringify refuses bigints; `stringifyExactJson` writes them as their digits.
 */

const MARK = '\u0000int:';
const LONG_DIGITS = /\d{16}/;

/** The JSON text with long integer literals outside strings wrapped as marked strings. */
export function markBigIntegers(text: string): string {
  if (!LONG_DIGITS.test(text)) return text;
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    if (c === 34) {
      inString = true;
      continue;
    }
    const startsNumber = (c >= 48 && c <= 57) || c === 45 /* - */;
    if (!startsNumber) continue;
    let end = i + 1;
    while (end < text.length && /[0-9.eE+-]/.test(text[end])) end++;
    const literal = text.slice(i, end);
    if (/^-?\d{16,}$/.test(literal)) {
      out += text.slice(from, i) + JSON.stringify(MARK + literal);  // NUL escaped, as JSON needs
      from = end;
    }
    i = end - 1;
  }
  return out + text.slice(from);
}

/** The literal a mark holds, or null when `v` is not a mark. */
export function markedInteger(v: unknown): string | null {
  return typeof v === 'string' && v.startsWith(MARK) ? v.slice(MARK.length) : null;
}

/** A literal of `markBigIntegers`: a (possibly negative) integer of 16 digits or more. */
const MARKED_LITERAL = /^-?\d{16,}$/;

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The marks in a parsed value turned into numbers, or BigInts where a number would round, in place. */
function marksToBigInts(value: unknown): unknown {
  const literal = markedInteger(value);
  if (literal !== null) {
    if (!MARKED_LITERAL.test(literal)) return value;
    const exact = BigInt(literal);
    return exact >= MIN_SAFE && exact <= MAX_SAFE ? Number(exact) : exact;
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = marksToBigInts(value[i]);
  } else {
    for (const key of Object.keys(value)) (value as Record<string, unknown>)[key] = marksToBigInts((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * JSON.parse with integers beyond 2^53 - 1 (either sign) as BigInts, exact; every other number
 * as JSON.parse reads it. Text whose own strings could hold a mark (a `\u0000int:` escape) is parsed by
 * JSON.parse alone, so no string of it is ever read as a number.
 */
export function parseJsonExact(text: string): unknown {
  if (/\\u0000int:/i.test(text)) return JSON.parse(text);
  return marksToBigInts(JSON.parse(markBigIntegers(text)));
}

/** A JSON value as text, bigints written as their exact digits (JSON.stringify throws on them). */
export function stringifyExactJson(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : stringifyExactJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const parts: string[] = [];
    for (const [key, v] of Object.entries(value)) {
      if (v !== undefined) parts.push(`${JSON.stringify(key)}:${stringifyExactJson(v)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
