/**
 * Large JSON infer bodies (and generate bodies: scanGenerateJson), read in time linear in their bytes.
 *
 * V8's JSON.parse makes every JSON array a JS array, at ~1 µs and ~80 bytes each: a 64 MiB infer
 * body of `[0],` (16M arrays, as an input's nested data or in a field the server ignores) held
 * the event loop for 16 s in JSON.parse alone and took 1.3 GB, ~21 s end to end. Nested data are
 * valid (KServe v2 allows them row-major; Triton takes shape [N,1] as `[[1],[2],...]`), and
 * Triton's RapidJSON reads such a body in a fraction of a second. So a JSON body that holds more
 * than MAX_JSON_ARRAYS `[`, or is larger than LARGE_JSON_BODY, is read in two passes:
 *
 * 1. scanInferJson (here) checks, byte by byte, that the whole text is JSON, and finds the value
 *    of each input's `data`. The rest of the text, each data value replaced by a placeholder, is
 *    the header that JSON.parse then reads as before; it may hold at most MAX_JSON_ARRAYS arrays.
 * 2. tensorFromJsonData (json-tensor-data.ts) reads a data value straight into its tensor.
 *
 * Every inputs[i].data of the text is replaced (duplicate keys too: JSON.parse keeps the last), so
 * the placeholders that JSON.parse leaves at inputs[i].data are all the scanner's own.
 */
import { randomBytes } from 'node:crypto';
import { JsonTensorData } from './json-tensor-data';
import { MAX_JSON_ARRAYS, tooManyArrays } from '../../json-bounds';
import { MAX_JSON_NESTING_DEPTH } from '../tensor-codec';
import { jsonError, scalarEnd, skipSpace, stringEnd } from './json-tokens';

/**
 * A JSON infer body larger than this is scanned whatever it holds: JSON.parse makes a JS value
 * of every element of a flat data array too (64 MiB of `0,`: 2.1-3.0 s and 1 GB of RSS; scanned:
 * 1.1-1.4 s and 240 MB). Smaller bodies with few arrays stay with JSON.parse, which reads the
 * 17-digit doubles clients send ~30% faster than the scan does at 1-2 MiB; from 16 MiB on the
 * scan is as fast, with less memory (64 MiB of them: ~1.1 s either way, 240 MB instead of 390).
 * For flat BYTES data the scan adds ~10% to the ~3.4 s that 11M strings cost (packing them).
 */
export const LARGE_JSON_BODY = 16 << 20;

/** Whether bytes [0, length) of `body` are read by scanInferJson rather than by JSON.parse alone. */
export function needsScan(body: Buffer, length: number): boolean {
  if (length > LARGE_JSON_BODY) return true;
  if (length <= MAX_JSON_ARRAYS) return false;  // too short to hold more arrays than that
  // `[` anywhere in the JSON, strings included, found by memchr: a few strings of brackets only
  // cost a scan.
  const json = body.subarray(0, length);
  let count = 0;
  for (let i = json.indexOf(0x5b); i !== -1; i = json.indexOf(0x5b, i + 1)) {
    if (++count > MAX_JSON_ARRAYS) return true;
  }
  return false;
}

/**
 * Whether a generate body (Triton's generate extension: inputs as top-level lists) is read by
 * scanGenerateJson: JSON.parse made a JS value of every element of its lists too (64 MiB of
 * `0,` under one key: 2-3 s and ~1 GB). Its arrays are bounded apart (checkJsonArrays), so size
 * alone decides.
 */
export function needsGenerateScan(length: number): boolean {
  return length > LARGE_JSON_BODY;
}

/**
 * What a placeholder string starts with; the index into ScannedInfer.data follows. A generate
 * body keeps its strings where lists are taken out, so a client's string could spell a fixed
 * placeholder and be read as another key's list: this one holds 64 random bits per process.
 */
const PLACEHOLDER = `\u0000tensor-data${randomBytes(8).toString('hex')}:`;

export interface ScannedInfer {
  /** The JSON text with each input's data value replaced by a placeholder string. */
  header: string;
  data: JsonTensorData[];
}

// A container outside tensor data: its kind, and the role that leads to inputs' data.
const OBJECT = 1;
const ROOT = 2;  // the request object
const INPUTS = 4;  // the root's 'inputs' array
const INPUT = 8;  // an object of that array
const DATA_VALUE = 16;  // an input's data (an object there is refused later, but is a data value all the same)
const IN_TENSOR = 32;  // an object in an input's data array
// Generate bodies: a member of the root or of its `parameters` object may be an input, whose
// array value is read as tensor data (its other values stay in the header).
const GENERATE_ROOT = 64;  // the root object of a generate body
const PARAMETERS = 128;  // the generate root's 'parameters' object
const LIST_VALUE = 256;  // a member value of either: an array there is a tensor's data

/** Whether the key string [start, end) is `name` (escapes decoded). */
function keyIs(b: Buffer, start: number, end: number, name: string): boolean {
  for (let i = start; i < end; i++) if (b[i] === 0x5c) return JSON.parse(b.toString('utf8', start, end)) === name;
  return end - start === name.length + 2 && b.toString('latin1', start + 1, end - 1) === name;
}

/** The header text as it is put together: the body's text, data values replaced by placeholders. */
class Replacer {
  readonly pieces: string[] = [];
  readonly data: JsonTensorData[] = [];
  /** The text from here on is not in `pieces` yet. */
  private from = 0;

  constructor(private readonly b: Buffer) {}

  replace(start: number, end: number, elements: number, beforeTooDeep: number, nested: boolean, objects = false): void {
    this.data.push(new JsonTensorData(this.b, start, end, elements, beforeTooDeep, nested, objects));
    this.pieces.push(this.b.toString('utf8', this.from, start), JSON.stringify(PLACEHOLDER + (this.data.length - 1)));
    this.from = end;
  }

  finish(end: number): ScannedInfer {
    this.pieces.push(this.b.toString('utf8', this.from, end));
    return { header: this.pieces.join(''), data: this.data };
  }
}

/** What the scan of an input's data array has counted so far. */
class TensorScan {
  /** Arrays of it open (1: the outermost). */
  depth = 0;
  /** Values in its arrays that are not arrays. */
  elements = 0;
  /** Whether an object is one of them. */
  objects = false;
  /** Elements before its first array nested MAX_JSON_NESTING_DEPTH deep; -1 while none is. */
  beforeTooDeep = -1;
  nested = false;

  constructor(readonly start: number) {}
}

/**
 * Scans an input's data array from `i`: a value there, or (`afterValue`) what follows one. The
 * loop of the body's bulk. Returns where it stopped: after the outermost array's end (depth 0), or
 * at an object in the data, which the caller scans as any object before calling again.
 */
function scanTensor(b: Buffer, i: number, end: number, scan: TensorScan, afterValue: boolean): number {
  let { depth, elements } = scan;
  for (;;) {
    if (!afterValue) {
      const c = i < end ? b[i] : -1;
      if (c === 0x5b /* [ */) {
        if (++depth > 1) scan.nested = true;
        if (depth > MAX_JSON_NESTING_DEPTH && scan.beforeTooDeep < 0) scan.beforeTooDeep = elements;
        i = skipSpace(b, i + 1, end);
        afterValue = i < end && b[i] === 0x5d;  // an empty array: its end below
        continue;
      }
      elements++;
      if (c === 0x7b /* { */) {
        scan.objects = true;
        break;
      }
      i = scalarEnd(b, i, end);
    }
    i = skipSpace(b, i, end);
    const c = i < end ? b[i] : -1;
    if (c === 0x2c /* , */) {
      i = skipSpace(b, i + 1, end);
      afterValue = false;
    } else if (c === 0x5d /* ] */) {
      i++;
      afterValue = true;
      if (--depth === 0) break;
    } else {
      throw jsonError("Missing a comma or ']' after an array element.", i);
    }
  }
  scan.depth = depth;
  scan.elements = elements;
  return i;
}

// What the scanner reads next.
const VALUE = 0;
const AFTER_VALUE = 1;
const TENSOR = 2;  // an input's data array, from its start
const AFTER_IN_TENSOR = 3;  // an input's data array, after an object in it

/**
 * Checks bytes [0, end) of `b` as JSON (SyntaxError in RapidJSON's words) and returns the header
 * and the inputs' data values. INVALID_ARG naming `what` past MAX_JSON_ARRAYS arrays outside data.
 */
export function scanInferJson(b: Buffer, end: number, what: string): ScannedInfer {
  return scanJson(b, end, what, false);
}

/**
 * As scanInferJson, for a generate body: every array that is the value of a member of the root
 * object, or of the root's `parameters` object, is taken out as data (decodeGenerateRequest
 * decides which are inputs); the rest stays in the header.
 */
export function scanGenerateJson(b: Buffer, end: number, what: string): ScannedInfer {
  return scanJson(b, end, what, true);
}

function scanJson(b: Buffer, end: number, what: string, generate: boolean): ScannedInfer {
  const frames: number[] = [];  // the containers open outside tensor data, innermost last
  const header = new Replacer(b);
  let arrays = 0;
  let tensor = new TensorScan(-1);  // the data array being scanned
  let dataStart = -1;  // where the object that is an input's data starts
  let next = 0;  // the role of the next value: INPUTS, DATA_VALUE, IN_TENSOR or none
  let state = VALUE;
  let i = skipSpace(b, 0, end);
  for (;;) {
    if (state === TENSOR || state === AFTER_IN_TENSOR) {
      i = scanTensor(b, i, end, tensor, state === AFTER_IN_TENSOR);
      if (tensor.depth > 0) {
        state = VALUE;  // at an object in the data, scanned as any other
        next = IN_TENSOR;
      } else {
        header.replace(tensor.start, i, tensor.elements, tensor.beforeTooDeep, tensor.nested, tensor.objects);
        state = AFTER_VALUE;
      }
      continue;
    }
    if (state === AFTER_VALUE) {
      // A comma and the next value, or the end of the container.
      i = skipSpace(b, i, end);
      if (frames.length === 0) {
        if (i < end) throw jsonError('The document root must not be followed by other values.', i);
        return header.finish(end);
      }
      const frame = frames[frames.length - 1];
      const inObject = (frame & OBJECT) !== 0;
      const c = i < end ? b[i] : -1;
      if (c === 0x2c /* , */) {
        i = skipSpace(b, i + 1, end);
        if (inObject) [i, next] = member(b, i, end, frame, generate);
        state = VALUE;
        continue;
      }
      if (c !== (inObject ? 0x7d : 0x5d)) {
        throw jsonError(inObject ? "Missing a comma or '}' after an object member." : "Missing a comma or ']' after an array element.", i);
      }
      i++;
      frames.pop();
      if (frame & DATA_VALUE) header.replace(dataStart, i, -1, -1, false);
      if (frame & IN_TENSOR) state = AFTER_IN_TENSOR;
      continue;
    }
    // A value at i.
    const c = i < end ? b[i] : -1;
    const role = next;
    next = 0;
    if (c === 0x5b /* [ */ && (role === DATA_VALUE || role & LIST_VALUE)) {
      tensor = new TensorScan(i);
      state = TENSOR;
      continue;
    }
    if (c === 0x5b || c === 0x7b /* { */) {
      if (c === 0x5b && ++arrays > MAX_JSON_ARRAYS) throw tooManyArrays(what);
      if (role === DATA_VALUE) dataStart = i;
      const parent = frames.length > 0 ? frames[frames.length - 1] : 0;
      const root = frames.length === 0 ? (generate ? GENERATE_ROOT : ROOT) : 0;
      frames.push(c === 0x5b ? role & INPUTS
        : OBJECT | (role & (DATA_VALUE | IN_TENSOR | PARAMETERS)) | root | (parent & INPUTS ? INPUT : 0));
      i = skipSpace(b, i + 1, end);
      const empty = i < end && b[i] === (c === 0x5b ? 0x5d : 0x7d);
      if (c === 0x7b && !empty) [i, next] = member(b, i, end, frames[frames.length - 1], generate);
      state = empty ? AFTER_VALUE : VALUE;
      continue;
    }
    const stop = scalarEnd(b, i, end);
    if (role === DATA_VALUE) header.replace(i, stop, -1, -1, false);
    i = stop;
    state = AFTER_VALUE;
  }
}

/**
 * An object member's name at `i` and its colon: where its value starts, and that value's role
 * in an object whose frame is `frame` (of a generate body's when `generate`).
 */
function member(b: Buffer, i: number, end: number, frame: number, generate: boolean): [number, number] {
  if (i >= end || b[i] !== 0x22) throw jsonError('Missing a name for object member.', i);
  const stop = stringEnd(b, i, end);
  const role = generate ? generateRole(b, i, stop, frame)
    : frame & ROOT && keyIs(b, i, stop, 'inputs') ? INPUTS : frame & INPUT && keyIs(b, i, stop, 'data') ? DATA_VALUE : 0;
  i = skipSpace(b, stop, end);
  if (i >= end || b[i] !== 0x3a) throw jsonError('Missing a colon after a name of object member.', i);
  return [skipSpace(b, i + 1, end), role];
}

/** The role of a generate body's member value whose name is [start, stop) in an object whose frame is `frame`. */
function generateRole(b: Buffer, start: number, stop: number, frame: number): number {
  if (frame & GENERATE_ROOT) return LIST_VALUE | (keyIs(b, start, stop, 'parameters') ? PARAMETERS : 0);
  return frame & PARAMETERS ? LIST_VALUE : 0;
}

/** The data value a placeholder names, or null when `v` is not a placeholder. */
export function placeholderData(v: unknown, scanned: ScannedInfer): JsonTensorData | null {
  if (typeof v !== 'string' || !v.startsWith(PLACEHOLDER)) return null;
  return scanned.data[Number(v.slice(PLACEHOLDER.length))] ?? null;
}
