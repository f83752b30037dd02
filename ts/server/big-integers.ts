/**
 * 64-bit integers in JSON tensor data, read exactly as Triton reads them: JSON.parse turns
 * integers beyond 2^53 into the nearest double, so before parsing, integer literals of 16 digits
 * or more (outside strings) are wrapped as marked strings; the tensor decoder turns marks into
 * BigInts for INT64/UINT64 data, shared-memory offsets and byte sizes read them exactly (as
 * Triton's size_t), and every mark elsewhere goes back to the number JSON.parse would have
 * made. Text without such a literal is parsed as is (a regex test, nothing more).
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

/**
 * Marks outside `keep` (the tensors' data arrays, which the decoder reads, and single values
 * such as a shared-memory offset) turned back into numbers, so every other field sees what
 * JSON.parse gives.
 */
export function unmarkOutside(value: unknown, keep: (path: readonly (string | number)[]) => boolean,
  path: (string | number)[] = []): unknown {
  const literal = markedInteger(value);
  if (literal !== null) return keep(path) ? value : Number(literal);
  if (value === null || typeof value !== 'object' || keep(path)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unmarkOutside(value[i], keep, [...path, i]);
  } else {
    for (const key of Object.keys(value)) {
      (value as Record<string, unknown>)[key] = unmarkOutside((value as Record<string, unknown>)[key], keep, [...path, key]);
    }
  }
  return value;
}
