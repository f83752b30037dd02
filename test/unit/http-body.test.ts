/**
 * Request bodies assembled from the pieces Node hands over (ts/server/http/body.ts): whatever the
 * framing and piece sizes, the body comes back byte for byte with byte `alignAt` on an 8-byte
 * boundary, and a chunked body's small pieces count against Triton's 65,536-chunk cap.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { MAX_CHUNKED_CHUNKS, readBody } from '../../ts/server/http/body';
import { InferenceServerError } from '../../ts/errors';

/** A request whose body arrives as `pieces` ('data' events of exactly these Buffers). */
function request(pieces: Buffer[], chunked: boolean): IncomingMessage {
  const total = pieces.reduce((n, p) => n + p.length, 0);
  const req = Object.assign(new PassThrough(), {
    headers: chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(total) },
    complete: false,
  });
  setImmediate(() => {
    for (const p of pieces) req.write(p);
    req.complete = true;
    req.end();
  });
  return req as unknown as IncomingMessage;
}

/** `n` bytes 0, 1, 2, ... (mod 251), starting at a given byte offset of a larger buffer. */
function bytes(n: number, offset = 0): Buffer {
  const b = Buffer.alloc(n + offset);
  for (let i = 0; i < n; i++) b[offset + i] = i % 251;
  return b.subarray(offset);
}

function split(body: Buffer, sizes: number[]): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < body.length; i++) {
    const n = sizes[i % sizes.length];
    out.push(Buffer.from(body.subarray(at, at + n)));
    at += n;
  }
  return out;
}

describe('a body in pieces', () => {
  test.each([
    ['one aligned piece', 100, [100], 0],
    ['one unaligned piece', 100, [100], 3],
    ['pieces of 1 byte', 1000, [1], 5],
    ['pieces of mixed sizes past the first growth', 300_000, [1, 7, 65_536, 3, 100_000], 13],
  ])('%s comes back whole and aligned (Content-Length and chunked)', async (_name, n, sizes, alignAt) => {
    const body = bytes(n, 1);
    for (const chunked of [false, true]) {
      const got = await readBody(request(split(body, sizes), chunked), 1 << 20, alignAt);
      expect(got.equals(body)).toBe(true);
      expect((got.byteOffset + alignAt) % 8).toBe(0);
    }
  });

  test('an empty body', async () => {
    expect((await readBody(request([], false), 100)).length).toBe(0);
  });
});

describe("Triton's chunk cap", () => {
  const body = (pieces: number): Buffer[] => Array.from({ length: pieces }, () => Buffer.from(' '));

  test(`${MAX_CHUNKED_CHUNKS} one-byte chunks are read`, async () => {
    expect((await readBody(request(body(MAX_CHUNKED_CHUNKS), true), 1 << 20)).length).toBe(MAX_CHUNKED_CHUNKS);
  });

  test('one more is refused with its text', async () => {
    const refused = readBody(request(body(MAX_CHUNKED_CHUNKS + 1), true), 1 << 20);
    await expect(refused).rejects.toBeInstanceOf(InferenceServerError);
    await expect(refused).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: 'Chunked request body exceeds maximum of 65536 non-empty chunks. Send fewer or larger HTTP chunks.',
    });
  });

  test('one large chunk arriving in TCP-segment-sized reads is not refused, however many reads it takes', async () => {
    // 66,000 reads of 1,448 bytes (~95 MB): Node cannot tell them from chunks; they are not small.
    const segment = Buffer.alloc(1448, 7);
    const pieces = Array.from({ length: MAX_CHUNKED_CHUNKS + 464 }, () => segment);
    const got = await readBody(request(pieces, true), 128 << 20);
    expect(got.length).toBe(pieces.length * segment.length);
  });

  test('pieces of a Content-Length body are not chunks', async () => {
    expect((await readBody(request(body(MAX_CHUNKED_CHUNKS + 1), false), 1 << 20)).length).toBe(MAX_CHUNKED_CHUNKS + 1);
  });
});
