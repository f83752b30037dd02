/**
 * JSON tokens on the bytes of a request body, for the readers of large infer bodies
 * (json-scan.ts checks a whole body with them, json-tensor-data.ts reads tensor data). Each
 * function takes the bytes, where a token starts and where the JSON text ends (a body may carry
 * binary tensor data after its JSON), and returns where the token ends. A malformed token is a
 * SyntaxError in RapidJSON's words with the byte offset, as Triton reports it.
 */

/** A SyntaxError naming what is wrong at byte `offset` (RapidJSON's text, as Triton's error). */
export function jsonError(what: string, offset: number): SyntaxError {
  return new SyntaxError(`${what} at ${offset}`);
}

export function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** The first byte at or after `i` that is not JSON whitespace (`end` if none is). */
export function skipSpace(b: Uint8Array, i: number, end: number): number {
  while (i < end && isJsonSpace(b[i])) i++;
  return i;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** Bytes that may follow a backslash in a JSON string: " \ / b f n r t (u is checked apart). */
const ESCAPED = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/** The end of the string at `i` (b[i] is '"'), checked as JSON.parse checks it. */
export function stringEnd(b: Uint8Array, i: number, end: number): number {
  for (i++; i < end; i++) {
    const c = b[i];
    if (c === 0x22 /* " */) return i + 1;
    if (c === 0x5c /* \ */) {
      if (++i >= end) break;
      if (b[i] === 0x75 /* u */) {
        for (let k = 1; k <= 4; k++) {
          if (i + k >= end || !isHex(b[i + k])) throw jsonError('Incorrect hex digit after \\u escape in string.', i + k);
        }
        i += 4;
      } else if (!ESCAPED.has(b[i])) {
        throw jsonError('Invalid escape character in string.', i);
      }
    } else if (c < 0x20) {
      throw jsonError('Invalid encoding in string.', i);
    }
  }
  throw jsonError('Missing a closing quotation mark in string.', i);
}

/** The end of the digits at `i`, at least one ('-' and the text of `missing` name what lacks them). */
function digitsEnd(b: Uint8Array, i: number, end: number, missing: string): number {
  if (i >= end || !isDigit(b[i])) throw jsonError(missing, i);
  while (i < end && isDigit(b[i])) i++;
  return i;
}

/** The end of the number at `i` (b[i] is '-' or a digit), checked against JSON's grammar. */
export function numberEnd(b: Uint8Array, i: number, end: number): number {
  if (b[i] === 0x2d /* - */) i++;
  // No leading zero: "01" ends after the 0 (and the 1 is then out of place, as for JSON.parse).
  i = i < end && b[i] === 0x30 ? i + 1 : digitsEnd(b, i, end, 'Invalid value.');
  if (i < end && b[i] === 0x2e /* . */) i = digitsEnd(b, i + 1, end, 'Missing fraction part in number.');
  if (i < end && (b[i] === 0x65 || b[i] === 0x45) /* e E */) {
    i++;
    if (i < end && (b[i] === 0x2b || b[i] === 0x2d) /* + - */) i++;
    i = digitsEnd(b, i, end, 'Missing exponent in number.');
  }
  return i;
}

const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

/** The end of the scalar (string, number, true, false, null) at `i`. */
export function scalarEnd(b: Uint8Array, i: number, end: number): number {
  const c = i < end ? b[i] : -1;
  if (c === 0x22) return stringEnd(b, i, end);
  if (c === 0x2d || isDigit(c)) return numberEnd(b, i, end);
  for (const literal of LITERALS) {
    if (c === literal[0]) {
      for (let k = 1; k < literal.length; k++) if (i + k >= end || b[i + k] !== literal[k]) throw jsonError('Invalid value.', i);
      return i + literal.length;
    }
  }
  throw jsonError('Invalid value.', i);
}

/** The end of the (valid) value at `i`: a scalar, or an object or array with all it holds. */
export function valueEnd(b: Uint8Array, i: number, end: number): number {
  if (b[i] !== 0x7b && b[i] !== 0x5b) return scalarEnd(b, i, end);
  let depth = 0;
  do {
    const c = b[i];
    if (c === 0x22) {
      i = stringEnd(b, i, end);
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    i++;
  } while (depth > 0);
  return i;
}
