/**
 * The HTTP client's side of Triton's generate extension: the response objects of `generate`
 * and the server-sent events of `generate_stream` (`data: {...}` per response, a blank line
 * after each), read as they arrive. An event carrying `error` is the server's error: it is
 * thrown, with the code of the HTTP status when that is not 200 (an error as the first answer),
 * UNKNOWN under 200 (the status went out with an earlier response; the event carries no code).
 */
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { InferenceServerError } from '../errors';
import { codeFromHttpStatus } from './errors';

/** A generate response: `model_name`, `model_version`, `id` when the request had one, and the outputs by name. */
export interface GenerateResponse {
  model_name: string;
  model_version: string;
  id?: string;
  [output: string]: unknown;
}

/** Options of `generate` and `generateStream`. */
export interface GenerateOptions {
  modelVersion?: string;
  /** Headers of this call. */
  headers?: Record<string, string>;
  /** `generate`: deadline of the call; `generateStream`: deadline of the answer's head. Default: the client's. */
  timeoutMs?: number;
  /** Aborting cancels the call; for a stream, the connection closes and the server cancels the request. */
  signal?: AbortSignal;
}

/** A response object, or the error it carries, thrown. `status`: the HTTP status it came under. */
export function generateResponse(value: unknown, status: number): GenerateResponse {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InferenceServerError('INTERNAL', `the server's generate response is not a JSON object`);
  }
  const response = value as Record<string, unknown>;
  if (response.error !== undefined) {
    throw new InferenceServerError(codeFromHttpStatus(status), String(response.error));
  }
  return response as GenerateResponse;
}

/** The largest event the client holds before it is complete (a misbehaving server cannot grow it further). */
const MAX_EVENT_CHARS = 256 * 1024 * 1024;

/**
 * The `data` of each server-sent event of `body` (its data lines joined by '\n'), as the events
 * complete. Lines end in LF, CRLF or CR; comments and other fields are skipped.
 */
export async function* serverSentData(body: Readable): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  const state: SseState = { pending: '', data: [] };
  for await (const chunk of body as AsyncIterable<Buffer>) {
    state.pending += decoder.write(chunk);
    yield* completeEvents(state, false);
    if (state.pending.length > MAX_EVENT_CHARS) {
      throw new InferenceServerError('INTERNAL', `the server sent an event larger than ${MAX_EVENT_CHARS} characters`);
    }
  }
  state.pending += decoder.end();
  yield* completeEvents(state, true);
}

/** Text not yet split into lines, and the data lines of the event being read. */
interface SseState {
  pending: string;
  data: string[];
}

/** The events `state.pending` completes; `ended`: no more text follows (a last CR ends its line). */
function* completeEvents(state: SseState, ended: boolean): Generator<string> {
  const text = state.pending;
  let start = 0;
  for (;;) {
    const end = lineEnd(text, start);
    if (end < 0) break;
    // A CR at the end of the text may be the first half of a CRLF still to come.
    if (!ended && text[end] === '\r' && end + 1 === text.length) break;
    const line = text.slice(start, end);
    start = end + (text[end] === '\r' && text[end + 1] === '\n' ? 2 : 1);
    if (line === '') {
      if (state.data.length > 0) yield state.data.join('\n');
      state.data = [];
    } else if (line.startsWith('data:')) {
      state.data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
  }
  state.pending = text.slice(start);
}

function lineEnd(text: string, from: number): number {
  const lf = text.indexOf('\n', from);
  const cr = text.indexOf('\r', from);
  if (cr < 0) return lf;
  if (lf < 0) return cr;
  return Math.min(cr, lf);
}
