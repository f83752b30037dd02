/**
 * Reads HTTP/1.1 answers, in order, from the bytes one socket receives (http-connection.ts):
 * after any interim 1xx heads, a body framed by Content-Length, by chunked encoding (trailers
 * allowed), or by the server closing. The bytes are kept in one buffer that grows by doubling,
 * or straight to the announced Content-Length, and chunked bodies are parsed as their bytes come:
 * joining every read to what came before made a 64 MiB answer in 64 KiB reads take 30-55 s.
 * A body is handed out as a view of the bytes read, or one copy for a chunked body; what the
 * reader keeps afterwards never overlaps it. Used on the event loop thread only.
 */

const HEADER_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
/** The most an answer's head may take before it counts as garbled (node:http allows 16 KiB). */
const MAX_HEAD_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * An answer head: status, lower-cased headers (repeated ones joined with ", "; an object without
 * a prototype), and whether the socket may carry another request after it (HTTP/1.1 unless
 * `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
 */
export interface AnswerHead {
  status: number;
  headers: Record<string, string>;
  keepAlive: boolean;
}

/** The received bytes not yet consumed, in one buffer. */
class ReadBuffer {
  #buf: Buffer = EMPTY;
  #length = 0;
  /** Whether #buf was allocated here: only then may its spare capacity be written. */
  #ours = false;

  get length(): number {
    return this.#length;
  }

  get bytes(): Buffer {
    return this.#buf.subarray(0, this.#length);
  }

  append(chunk: Buffer): void {
    if (this.#length === 0) {
      this.#buf = chunk;  // no copy while one read holds everything
      this.#length = chunk.length;
      this.#ours = false;
      return;
    }
    if (!this.#ours || this.#length + chunk.length > this.#buf.length) this.reserve(Math.max(2 * this.#length, this.#length + chunk.length));
    chunk.copy(this.#buf, this.#length);
    this.#length += chunk.length;
  }

  /** Room for `total` bytes in a buffer of our own (exactly `total` when it has to grow). */
  reserve(total: number): void {
    if (this.#length >= total || (this.#ours && this.#buf.length >= total)) return;
    const grown = Buffer.allocUnsafe(Math.max(total, this.#length));
    this.#buf.copy(grown, 0, 0, this.#length);
    this.#buf = grown;
    this.#ours = true;
  }

  /** Consumes the bytes before `at`; views of them handed out stay as they are. */
  drop(at: number): void {
    const rest = this.#length - at;
    // What follows moves to a buffer of its own, so nothing written later lands in a view.
    this.#buf = rest === 0 ? EMPTY : Buffer.from(this.#buf.subarray(at, this.#length));
    this.#length = rest;
    this.#ours = false;
  }
}

function parseHead(buf: Buffer, end: number): AnswerHead {
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  if (!/^HTTP\/1\.[01] \d{3}/.test(lines[0])) throw new Error(`not an HTTP/1.1 answer: ${JSON.stringify(lines[0].slice(0, 80))}`);
  const headers = Object.create(null) as Record<string, string>;
  for (let i = 1; i < lines.length; i++) {
    const colon = lines[i].indexOf(':');
    if (colon <= 0) continue;
    const name = lines[i].slice(0, colon).trim().toLowerCase();
    const value = lines[i].slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const connection = headers.connection?.toLowerCase() ?? '';
  const keepAlive = lines[0].startsWith('HTTP/1.1') ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
  return { status: Number(lines[0].slice(9, 12)), headers, keepAlive };
}

/** Where a chunked body's parsing stands: the chunk-size line to read next, and the data parts so far. */
interface ChunkedState {
  at: number;
  parts: [number, number][];
  size: number;
}

export class AnswerReader {
  readonly #bytes = new ReadBuffer();
  #head: AnswerHead | null = null;
  #bodyStart = 0;
  /** Where to look for the end of the head next (bytes before it were searched). */
  #headSearchFrom = 0;
  #chunked: ChunkedState | null = null;

  /** Whether any byte of an answer not yet returned has come. */
  get started(): boolean {
    return this.#bytes.length > 0 || this.#head !== null;
  }

  push(chunk: Buffer): void {
    this.#bytes.append(chunk);
  }

  /**
   * The next whole answer, or null while it is incomplete; `closed`: no more bytes will come
   * (a body framed by the close ends here). Throws when the bytes are not an HTTP/1.1 answer.
   */
  next(closed: boolean): { head: AnswerHead; body: Buffer } | null {
    while (!this.#head) {
      const bytes = this.#bytes.bytes;
      const end = bytes.indexOf(HEADER_END, this.#headSearchFrom);
      if (end < 0) {
        if (bytes.length > MAX_HEAD_BYTES) throw new Error(`an answer head longer than ${MAX_HEAD_BYTES} bytes`);
        this.#headSearchFrom = Math.max(0, bytes.length - HEADER_END.length + 1);
        return null;
      }
      const head = parseHead(bytes, end);
      this.#headSearchFrom = 0;
      if (head.status < 200 && head.status !== 101) {
        this.#bytes.drop(end + HEADER_END.length);  // an interim answer (100 Continue, 103 Early Hints)
        continue;
      }
      this.#head = head;
      this.#bodyStart = end + HEADER_END.length;
      const length = contentLength(head);
      if (length !== null && !isChunked(head) && head.status !== 204 && head.status !== 304) this.#bytes.reserve(this.#bodyStart + length);
    }
    const found = this.#body(closed);
    if (!found) return null;
    const head = this.#head;
    this.#head = null;
    this.#chunked = null;
    this.#bytes.drop(found.end);
    return { head, body: found.body };
  }

  /** The body and where the answer ends, once all of it is here. */
  #body(closed: boolean): { body: Buffer; end: number } | null {
    const head = this.#head!;
    const bytes = this.#bytes.bytes;
    // No body, whatever the framing headers say (RFC 9112 §6.3).
    if (head.status === 204 || head.status === 304) return { body: EMPTY, end: this.#bodyStart };
    if (isChunked(head)) return this.#chunkedBody(bytes);
    const length = contentLength(head);
    if (length !== null) {
      const end = this.#bodyStart + length;
      return bytes.length < end ? null : { body: bytes.subarray(this.#bodyStart, end), end };
    }
    // Neither: the body ends when the server closes.
    return closed ? { body: bytes.subarray(this.#bodyStart), end: bytes.length } : null;
  }

  /** Parses the chunks that have come since the last call; the joined body once the last chunk and trailers are here. */
  #chunkedBody(bytes: Buffer): { body: Buffer; end: number } | null {
    const state = (this.#chunked ??= { at: this.#bodyStart, parts: [], size: 0 });
    for (;;) {
      const lineEnd = bytes.indexOf(CRLF, state.at);
      if (lineEnd < 0) return null;
      const digits = bytes.toString('latin1', state.at, lineEnd).split(';')[0].trim();
      if (!/^[0-9a-fA-F]{1,12}$/.test(digits)) throw new Error(`malformed chunk size '${digits.slice(0, 20)}' in a chunked answer`);
      const size = parseInt(digits, 16);
      if (size === 0) return trailersEnd(bytes, lineEnd + 2, state);
      if (bytes.length < lineEnd + 2 + size + 2) return null;
      if (bytes[lineEnd + 2 + size] !== 13 || bytes[lineEnd + 3 + size] !== 10) throw new Error('a chunk of a chunked answer is longer than its size');
      state.parts.push([lineEnd + 2, lineEnd + 2 + size]);
      state.size += size;
      state.at = lineEnd + 2 + size + 2;
    }
  }
}

/** After the last chunk: trailer lines, if any, then the empty line; the joined body. */
function trailersEnd(bytes: Buffer, from: number, state: ChunkedState): { body: Buffer; end: number } | null {
  let line = from;
  for (;;) {
    const next = bytes.indexOf(CRLF, line);
    if (next < 0) return null;
    if (next === line) break;
    line = next + 2;
  }
  const body = Buffer.allocUnsafe(state.size);
  let at = 0;
  for (const [start, end] of state.parts) at += bytes.copy(body, at, start, end);
  return { body, end: line + 2 };
}

function isChunked(head: AnswerHead): boolean {
  return head.headers['transfer-encoding']?.toLowerCase().includes('chunked') ?? false;
}

/** The Content-Length header's value; null without one. */
function contentLength(head: AnswerHead): number | null {
  const value = head.headers['content-length'];
  if (value === undefined) return null;
  const length = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(length)) throw new Error(`bad Content-Length '${value}'`);
  return length;
}
