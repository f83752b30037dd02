/**
 * Triton's JSON: its HTTP frontend writes NaN, Infinity and -Infinity as bare tokens (RapidJSON's
 * kWriteNanAndInfFlag; Python's json module reads them), which JSON.parse refuses. Plain JSON is
 * parsed as is; only text that JSON.parse refuses is scanned for those tokens outside strings.
 */

const NAN_MARK = '\u0000infernode:NaN\u0000';

/** The tokens outside strings rewritten: ±Infinity as ±1e999 (JSON.parse reads ±Infinity), NaN as a marker string. */
function rewriteNonFinite(text: string): string {
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      continue;
    }
    const token = text.startsWith('-Infinity', i) ? '-Infinity' : text.startsWith('Infinity', i) ? 'Infinity' : text.startsWith('NaN', i) ? 'NaN' : null;
    if (token === null) continue;
    out += text.slice(from, i) + (token === 'NaN' ? JSON.stringify(NAN_MARK) : token === 'Infinity' ? '1e999' : '-1e999');
    i += token.length - 1;
    from = i + 1;
  }
  return out + text.slice(from);
}

/** JSON.parse, also accepting the NaN/Infinity/-Infinity tokens Triton writes for float outputs. */
export function parseTritonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const rewritten = rewriteNonFinite(text);
    if (rewritten === text) throw err;
    return JSON.parse(rewritten, (_key, value: unknown) => (value === NAN_MARK ? NaN : value));
  }
}
