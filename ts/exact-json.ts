/**
 * JSON with integers beyond 2^53 read and written exactly. JSON.parse turns such an integer into
 * the nearest double; `markBigIntegers` wraps each integer literal of 16 digits or more (outside
 * strings) as a marked string before parsing, so the reader decides what it becomes (the HTTP
 * frontend's tensor decoder: ts/server/big-integers.ts; a model config: `parseJsonExact`).
 * JSON.stringify refuses bigints; `stringifyExactJson` writes them as their digits.
 */
import { randomBytes } from 'node:crypto';

/**
 * What a marked literal starts with. A client's JSON string can spell any text (`"\u0000int:5"`),
 * so a fixed mark let one pass for a number in tensor data and shared-memory fields; this one
 * holds 64 random bits drawn per process, which no request can guess (and guessing it would only
 * let a client send, as a string, a number it could have sent as one).
 */
const MARK = `\u0000int${randomBytes(8).toString('hex')}:`;
const LONG_DIGITS = /\d{16}/;

/**
 * The longest literal marked: 20 digits hold every 64-bit value, so a longer one is out of every
 * integer field's range, and reading it exactly only costs time: BigInt() and printing one back
 * in an error message grow faster than the digits (4M digits: 1 s and 3 s), and one load request
 * of 15 literals of 4M digits (57 MiB) held the event loop for 62 s. A longer literal is left to
 * JSON.parse (a double; Infinity past ~309 digits), which every reader refuses where it wants an
 * integer, as it did before such literals were read exactly.
 */
const MAX_EXACT_LITERAL = 100;

/**
 * Whether `text[start, end)` is a JSON integer literal of 16 to MAX_EXACT_LITERAL digits: an
 * optional '-', then digits, the first not 0 (JSON allows no leading zero: marking
 * `0000000000000001` would make text JSON.parse refuses valid). A loop, not a regex: irregexp's
 * backtracking stack overflowed (RangeError) on a literal of a few million digits.
 */
function isLongInteger(text: string, start: number, end: number): boolean {
  let i = text.charCodeAt(start) === 45 /* - */ ? start + 1 : start;
  if (end - i < 16 || end - i > MAX_EXACT_LITERAL || text.charCodeAt(i) === 48 /* 0 */) return false;
  for (; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Whether a character code can continue a JSON number literal: 0-9 . e E + - */
function continuesNumber(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45;
}

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
    while (end < text.length && continuesNumber(text.charCodeAt(end))) end++;
    if (isLongInteger(text, i, end)) {
      out += text.slice(from, i) + JSON.stringify(MARK + text.slice(i, end));  // NUL escaped, as JSON needs
      from = end;
    }
    i = end - 1;
  }
  return out + text.slice(from);
}

/**
 * What JSON.parse gives number literal `literal` of a marked text (markBigIntegers): its mark when
 * it is a long integer, else its number. For readers that take a number out of the text themselves.
 */
export function markedNumberLiteral(literal: string): string | number {
  return isLongInteger(literal, 0, literal.length) ? MARK + literal : Number(literal);
}

/** The literal a mark holds, or null when `v` is not a mark. */
export function markedInteger(v: unknown): string | null {
  return typeof v === 'string' && v.startsWith(MARK) ? v.slice(MARK.length) : null;
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A marked literal's value: a number when JS holds it exactly, a BigInt where a number would round. */
function markValue(literal: string): bigint | number {
  const exact = BigInt(literal);
  return exact >= MIN_SAFE && exact <= MAX_SAFE ? Number(exact) : exact;
}

/**
 * The marks in a parsed value turned into numbers, or BigInts where a number would round, in
 * place. Iterative: JSON.parse reads any depth, and a recursive walk overflowed the stack
 * (RangeError) on text nested ~10k levels.
 */
function marksToBigInts(root: unknown): unknown {
  const rootLiteral = markedInteger(root);
  if (rootLiteral !== null) return markValue(rootLiteral);
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (value === null || typeof value !== 'object') continue;
    const record = value as Record<string, unknown>;
    for (const key of Array.isArray(value) ? value.keys() : Object.keys(value)) {
      const item = record[key];
      const literal = markedInteger(item);
      if (literal !== null) record[key] = markValue(literal);
      else if (item !== null && typeof item === 'object') pending.push(item);
    }
  }
  return root;
}

/**
 * JSON.parse with integers beyond 2^53 - 1 (either sign) as BigInts, exact; every other number
 * as JSON.parse reads it (no string of the text can spell a mark: see MARK); text without a long
 * integer is JSON.parse's value as it is.
 */
export function parseJsonExact(text: string): unknown {
  const marked = markBigIntegers(text);
  return marked === text ? JSON.parse(text) : marksToBigInts(JSON.parse(marked));
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
