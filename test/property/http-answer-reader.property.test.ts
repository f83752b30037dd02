/**
 * Property tests of the HTTP client's answer reader (ts/client/http-answer-reader.ts): any
 * sequence of answers (Content-Length or chunked bodies with chunk extensions and trailers,
 * interim 1xx heads before them, 204s, repeated headers), cut into reads at any points, reads
 * back as the same statuses, headers and bodies, in order, as when each arrives in one read; a
 * body handed out keeps its bytes while later reads come; and garbage never throws anything but
 * an Error (the socket is then dropped), nor returns an answer the bytes do not hold.
 */
import fc from 'fast-check';
import { AnswerReader } from '../../ts/client/http-answer-reader';
import { settings } from './fc-settings';

interface Spec {
  status: number;
  headers: [string, string][];
  body: Uint8Array;
  chunked: number[] | null;  // chunk sizes (each > 0) when chunked
  interim: number;  // 1xx heads before it
  trailers: [string, string][];
}

const token = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,8}$/).filter((n) => !/^(content-length|transfer-encoding|connection)$/i.test(n));
const headerValue = fc.stringMatching(/^[ -~]{0,12}$/).map((v) => v.trim());

const spec: fc.Arbitrary<Spec> = fc.record({
  status: fc.constantFrom(200, 201, 204, 400, 404, 500, 503),
  headers: fc.array(fc.tuple(token, headerValue), { maxLength: 4 }),
  body: fc.uint8Array({ maxLength: 3000 }),
  chunked: fc.option(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 8 }), { nil: null }),
  interim: fc.integer({ min: 0, max: 2 }),
  trailers: fc.array(fc.tuple(token, headerValue), { maxLength: 2 }),
}).map((s) => (s.status === 204 ? { ...s, body: new Uint8Array(0), chunked: null } : s));

/** The wire bytes of one answer. */
function encode(s: Spec): Buffer {
  const interim = Array.from({ length: s.interim }, (_, i) => (i % 2 === 0 ? 'HTTP/1.1 100 Continue\r\n\r\n' : 'HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n')).join('');
  const lines = s.headers.map(([n, v]) => `${n}: ${v}\r\n`).join('');
  const body = Buffer.from(s.body);
  if (s.status === 204) return Buffer.from(`${interim}HTTP/1.1 204 No Content\r\n${lines}\r\n`, 'latin1');
  if (!s.chunked) return Buffer.concat([Buffer.from(`${interim}HTTP/1.1 ${s.status} X\r\n${lines}Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]);
  const parts: Buffer[] = [Buffer.from(`${interim}HTTP/1.1 ${s.status} X\r\n${lines}Transfer-Encoding: chunked\r\n\r\n`, 'latin1')];
  let at = 0;
  for (const size of s.chunked) {
    if (at >= body.length) break;
    const piece = body.subarray(at, at + size);
    parts.push(Buffer.from(`${piece.length.toString(16)};ext=1\r\n`, 'latin1'), piece, Buffer.from('\r\n'));
    at += piece.length;
  }
  if (at < body.length) parts.push(Buffer.from(`${(body.length - at).toString(16)}\r\n`, 'latin1'), body.subarray(at), Buffer.from('\r\n'));
  parts.push(Buffer.from(`0\r\n${s.trailers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`, 'latin1'));
  return Buffer.concat(parts);
}

/** The headers as the reader gives them: lower-cased names, repeated ones joined with ", ". */
function expectedHeaders(s: Spec): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of s.headers) {
    const name = n.toLowerCase();
    out[name] = out[name] === undefined ? v : `${out[name]}, ${v}`;
  }
  return out;
}

/** Feeds `bytes` cut at `cuts` and collects every answer, keeping the bodies handed out. */
function readAll(bytes: Buffer, cuts: number[]): { status: number; headers: Record<string, string>; body: Buffer }[] {
  const reader = new AnswerReader();
  const out: { status: number; headers: Record<string, string>; body: Buffer }[] = [];
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const at of [...points, bytes.length]) {
    if (at <= from) continue;
    // Each read is a buffer of its own, as a socket delivers them (the reader may keep it).
    reader.push(Buffer.from(bytes.subarray(from, at)));
    from = at;
    for (let answer = reader.next(false); answer; answer = reader.next(false)) {
      out.push({ status: answer.head.status, headers: answer.head.headers, body: answer.body });
    }
  }
  return out;
}

test('answers cut into reads anywhere read back whole, in order, with bodies that keep their bytes', () => {
  fc.assert(fc.property(fc.array(spec, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 40 }), (specs, cuts) => {
    const answers = readAll(Buffer.concat(specs.map(encode)), cuts);
    expect(answers).toHaveLength(specs.length);
    answers.forEach((a, i) => {
      const s = specs[i];
      expect(a.status).toBe(s.status);
      const headers = expectedHeaders(s);
      for (const [name, value] of Object.entries(headers)) expect(a.headers[name]).toBe(value);
      expect(Buffer.compare(a.body, Buffer.from(s.body))).toBe(0);
    });
  }), settings(300));
});

test('garbage never makes the reader throw anything but an Error, nor invent an answer', () => {
  const junk = fc.oneof(
    fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)),
    spec.map(encode).chain((b) => fc.nat({ max: b.length }).map((n) => Buffer.concat([b.subarray(0, n), Buffer.from('\r\nzz\r\n\r\n')]))),
    fc.constantFrom('HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 'HTTP/9 200\r\n\r\n').map((t) => Buffer.from(t, 'latin1')),
  );
  fc.assert(fc.property(junk, fc.array(fc.nat(), { maxLength: 10 }), (bytes, cuts) => {
    try {
      const answers = readAll(bytes, cuts);
      for (const a of answers) expect(a.body.length).toBeLessThanOrEqual(bytes.length);
    } catch (err) {
      expect(err).toBeInstanceOf(Error);
    }
  }), settings(300));
});
