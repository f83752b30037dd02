/**
 * Bounds on the objects and arrays of JSON text from a client (an HTTP request body, the load
 * API's `config`), checked on its bytes before JSON.parse.
 *
 * V8 makes every JSON object a JS object (a hidden class, then a dictionary past a few keys), at
 * 300-700 ns and tens of bytes of heap per key or empty object: on this project's 2-vCPU VM a
 * 64 MiB infer body of `{},` in a field the server ignores held the event loop for 40 s and took
 * 2.2 GB of RSS, and a 56 MiB body of six million request parameters 53 s (three such requests at
 * once: 140 s without an answer to anything, health checks included). Arrays cost the same way
 * (~1 µs and ~80 bytes each: 64 MiB of `[0],`, 11-16 s and 1.9 GB). Triton parses with RapidJSON
 * in a fraction of a second. No real request needs many objects: tensor data are arrays, and an
 * infer request's objects are the request, its inputs and outputs and their parameters. So, as
 * the gRPC frontend bounds a message's repeated entries (MAX_MESSAGE_ENTRIES), JSON text may hold
 * at most MAX_JSON_OBJECT_ENTRIES objects and object members together, counted on the bytes (`{`,
 * `:`, `[`, `"` and `\` are ASCII, never part of a multi-byte UTF-8 character), and at most
 * MAX_JSON_ARRAYS arrays outside tensor data. Nested tensor data (KServe v2 allows them row-major,
 * Triton takes shape [N,1] as `[[1],[2],...]`) are not bounded: a large infer body is read
 * without JSON.parse making them (ts/server/http/json-scan.ts).
 */
import { invalidArg, type InferenceServerError } from './errors';

/** Objects and object members (keys) one JSON request body may hold together. */
export const MAX_JSON_OBJECT_ENTRIES = 65_536;

/** Arrays one JSON request body may hold, not counting an infer request's nested tensor data. */
export const MAX_JSON_ARRAYS = 65_536;

/**
 * Arrays a management body (repository, shared memory, trace, logging) may hold: more, because
 * Triton's qa (L0_http test_repository_index_deeply_nested_json) sends `ready` as 250,000 nested
 * arrays and expects the field's own error, "Invalid value for 'ready': expected a boolean". At
 * the bound JSON.parse holds the event loop about 0.4 s on this project's 2-vCPU VM (a 64 MiB
 * body of 16M arrays took 11-16 s).
 */
export const MAX_MANAGEMENT_JSON_ARRAYS = 1_048_576;

const OPEN_BRACE = 0x7b;
const COLON = 0x3a;
const OPEN_BRACKET = 0x5b;

/**
 * Whether bytes [start, end) of `body` hold more than `limit` bytes `a` and `b` (the same for one)
 * outside strings. Fast path: the bytes anywhere, strings included, found by Buffer.indexOf
 * (memchr); only a body with more of them than the bound is walked byte by byte, strings skipped.
 */
function holdsMore(body: Uint8Array, start: number, end: number, a: number, b: number, limit: number): boolean {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let anywhere = 0;
  for (const byte of a === b ? [a] : [a, b]) {
    for (let i = buf.indexOf(byte, start); i !== -1 && i < end && anywhere <= limit; i = buf.indexOf(byte, i + 1)) anywhere++;
  }
  if (anywhere <= limit) return false;
  let count = 0;
  let inString = false;
  for (let i = start; i < end; i++) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if ((c === a || c === b) && ++count > limit) {
      return true;
    }
  }
  return false;
}

/**
 * INVALID_ARG naming `what` ("the inference request for model 'm'") when bytes [start, end) of
 * `body` hold more than MAX_JSON_OBJECT_ENTRIES objects and members (counted outside strings);
 * `hint` ends the message.
 */
export function checkJsonObjects(
  body: Uint8Array, start: number, end: number, what: string,
  hint = "tensor data belong in 'data' arrays or in the binary tensor extension",
): void {
  if (holdsMore(body, start, end, OPEN_BRACE, COLON, MAX_JSON_OBJECT_ENTRIES)) {
    throw invalidArg(`${what} holds more than ${MAX_JSON_OBJECT_ENTRIES} JSON objects and object members together; ` +
      `at most ${MAX_JSON_OBJECT_ENTRIES} are supported (${hint})`);
  }
}

/** INVALID_ARG naming `what` when bytes [start, end) of `body` hold more than `limit` arrays. */
export function checkJsonArrays(body: Uint8Array, start: number, end: number, what: string, limit = MAX_JSON_ARRAYS): void {
  if (holdsMore(body, start, end, OPEN_BRACKET, OPEN_BRACKET, limit)) {
    throw invalidArg(`${what} holds more than ${limit} JSON arrays; at most ${limit} are supported`);
  }
}

/** The error for an infer body with more than MAX_JSON_ARRAYS arrays outside its inputs' data. */
export function tooManyArrays(what: string): InferenceServerError {
  return invalidArg(`${what} holds more than ${MAX_JSON_ARRAYS} JSON arrays outside its inputs' 'data'; at most ` +
    `${MAX_JSON_ARRAYS} are supported (nested tensor data belong in an input's 'data', or in the binary tensor extension)`);
}
