/**
 * An input's `data` read straight from the bytes of a JSON infer body (json-scan.ts found and
 * checked it): numbers and booleans are taken from the bytes and written into the tensor's array
 * with the checks and error texts of tensorFromJson (ts/server/tensor-codec.ts), without a JS
 * array per nested JSON array or per element. BYTES strings are JSON.parse'd from the flattened
 * text (V8 decodes strings faster than a loop here could). Values that are neither numbers nor
 * booleans are JSON.parse'd one by one, to be refused in tensorFromJson's words.
 */
import { markBigIntegers, markedNumberLiteral } from '../../exact-json';
import { elementCount, NDArray, type DataType } from '../../tensor';
import {
  bytesTensorFromJson, checkJsonDataType, elementCountMismatch, jsonElementWriter, tensorFromJson, tooDeep, tooManyElements,
  type ElementWriter,
} from '../tensor-codec';
import { isJsonSpace, numberEnd, valueEnd } from './json-tokens';

/** One input's `data` value in a body, with what json-scan.ts counted of it. */
export class JsonTensorData {
  constructor(
    readonly body: Buffer,
    readonly start: number,
    readonly end: number,
    /** Values in its arrays that are not arrays (tensorFromJson's flattened elements); -1 when it is not an array. */
    readonly elements: number,
    /** Elements before its first array nested MAX_JSON_NESTING_DEPTH deep; -1 when none is. */
    readonly beforeTooDeep: number,
    /** Whether an array of it holds an array. */
    readonly nested: boolean,
    /** Whether an array of it holds an object. */
    readonly objects = false,
  ) {}
}

/** A JSON value of the body as JSON.parse reads it in parseHeader (long integers marked). */
function parseValue(b: Buffer, start: number, end: number): unknown {
  return JSON.parse(markBigIntegers(b.toString('utf8', start, end)));
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * The number [start, end) (valid JSON) when it is exactly computed here, else NaN: up to 15
 * digits with a power of ten up to 22 either way are both exact doubles, so one multiplication or
 * division rounds as JSON.parse does (Clinger's fast path).
 */
function simpleNumber(b: Uint8Array, start: number, end: number): number {
  let i = b[start] === 0x2d ? start + 1 : start;
  let mantissa = 0;
  let digits = 0;
  let exponent = 0;
  let c = b[i];
  for (; i < end && c >= 0x30 && c <= 0x39; c = b[++i], digits++) mantissa = mantissa * 10 + (c - 0x30);
  if (i < end && c === 0x2e) {
    for (c = b[++i]; i < end && c >= 0x30 && c <= 0x39; c = b[++i], digits++, exponent--) mantissa = mantissa * 10 + (c - 0x30);
  }
  if (digits > 15) return NaN;
  if (i < end) {
    // An exponent: e or E, a sign, digits (more than three are never exact here).
    const negative = b[++i] === 0x2d;
    if (b[i] === 0x2d || b[i] === 0x2b) i++;
    if (end - i > 3) return NaN;
    let e = 0;
    for (; i < end; i++) e = e * 10 + (b[i] - 0x30);
    exponent += negative ? -e : e;
  }
  if (exponent > 22 || exponent < -22) return NaN;
  const value = exponent >= 0 ? mantissa * POW10[exponent] : mantissa / POW10[-exponent];
  return b[start] === 0x2d ? -value : value;
}

/** Elements read before they are written, in one call of the datatype's writer. */
const BATCH = 4096;

/**
 * The most bytes of data decoded to text at once for the numbers simpleNumber does not take. The
 * whole data as one string failed past V8's longest (2^29 - 24 characters) with an Error that
 * was no InferenceServerError, so a 600 MB body of 17-digit doubles, with --http-max-input-size
 * raised, was answered 500 where one of `0.5` was read.
 */
const TEXT_WINDOW = 1 << 20;

/** Writes every element of `data` (a numeric or BOOL tensor's) in row-major order. */
function readElements(data: JsonTensorData, write: ElementWriter): void {
  const { body: b, start, end } = data;
  // Numbers simpleNumber does not take (such as the 17 digits of most doubles) are cut from the
  // data's text, decoded a window at a time: faster than a Buffer.toString per number, and than
  // JSON.parse. The window holds bytes [textStart, textStart + text.length).
  let text = '';
  let textStart = 0;
  const batch = new Array<unknown>(BATCH).fill(0);
  let n = 0;
  let written = 0;
  for (let i = start; i < end;) {
    const c = b[i];
    if (c === 0x5b || c === 0x5d || c === 0x2c || isJsonSpace(c)) {
      i++;
      continue;
    }
    if (n === BATCH) {
      write(batch, n, written);
      written += n;
      n = 0;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const e = numberEnd(b, i, end);
      const v = simpleNumber(b, i, e);
      if (v !== v && e > textStart + text.length) {
        textStart = i;
        text = b.toString('latin1', i, Math.min(end, Math.max(e, i + TEXT_WINDOW)));
      }
      batch[n++] = v === v ? v : markedNumberLiteral(text.slice(i - textStart, e - textStart));
      i = e;
      continue;
    }
    const e = valueEnd(b, i, end);
    batch[n++] = c === 0x74 /* t */ ? true : c === 0x66 /* f */ ? false : parseValue(b, i, e);
    i = e;
  }
  write(batch, n, written);
}

/** The text of `data` as one flat JSON array: the elements in order, the arrays that held them gone. */
function flatText(data: JsonTensorData): string {
  const { body: b, start, end } = data;
  if (!data.nested) return b.toString('utf8', start, end);
  // Valid JSON separates any two elements by a comma at least: the flat text is never longer.
  const out = Buffer.allocUnsafe(end - start);
  let o = 0;
  out[o++] = 0x5b;
  for (let i = start; i < end;) {
    const c = b[i];
    if (c === 0x5b || c === 0x5d || c === 0x2c || isJsonSpace(c)) {
      i++;
      continue;
    }
    if (o > 1) out[o++] = 0x2c;
    for (const e = valueEnd(b, i, end); i < e; i++) out[o++] = b[i];
  }
  out[o++] = 0x5d;
  return out.toString('utf8', 0, o);
}

/** The tensor whose data are `data`: what tensorFromJson makes of the same value, or its error. */
export function tensorFromJsonData(what: string, dtype: DataType, shape: number[], data: JsonTensorData): NDArray {
  if (data.elements < 0) return tensorFromJson(what, dtype, shape, parseValue(data.body, data.start, data.end));
  checkJsonDataType(what, dtype);
  const count = elementCount(shape);
  // tensorFromJson's flatten stops at whichever comes first: the too-deep array or element count + 1.
  if (data.beforeTooDeep >= 0 && data.beforeTooDeep <= count) throw tooDeep(what);
  if (data.elements > count) throw tooManyElements(what, count);
  if (data.elements !== count) throw elementCountMismatch(what, shape, count, data.elements);
  if (dtype === 'BYTES') return bytesTensorFromJson(what, shape, JSON.parse(markBigIntegers(flatText(data))) as unknown[]);
  const { out, write } = jsonElementWriter(what, dtype, count);
  readElements(data, write);
  return new NDArray(dtype, shape, out);
}
