/**
 * BYTES tensors in their wire form: each element a 4-byte little-endian length followed by its
 * bytes, as Triton carries them (HTTP binary data, gRPC raw contents, shared memory) and as
 * native engines take and give them.
 *
 * Why a tensor stays in this form until JS reads its elements: an element is a JS object of
 * ~115 bytes of heap, so a 64 MiB body of 16M empty strings became ~1.9 GB of heap on arrival
 * and two such requests ended the process (V8 out of memory). Received BYTES tensors are only
 * checked here (a walk that allocates nothing); native engines, the response cache and the
 * frontends pass the bytes on as they are, and the elements are made only when JS code asks for
 * them (`NDArray.data`), after checking that the heap can hold them.
 */
import { getHeapStatistics } from 'node:v8';
import { InferenceServerError, invalidArg } from './errors';

/** Wire-form BYTES whose `count` elements were checked to fill `bytes` exactly (`checkedPackedBytes`). */
export class PackedBytes {
  constructor(
    readonly bytes: Uint8Array,
    readonly count: number,
    /** Names the tensor in a refusal to split it ("input 'x' of model 'm'"). */
    readonly what: string,
  ) {}
}

/**
 * Walks `count` length-prefixed elements of `buf`, calling `visit` with each one's byte range;
 * throws INVALID_ARG naming `what` when the encoding is broken or holds other than `count`
 * elements. It stops at element `count + 1` with Triton's text (ValidateBytesInputs) rather
 * than walking to the end first.
 */
export function walkBytes(
  buf: Uint8Array, count: number, what: string, visit?: (start: number, end: number, index: number) => void,
): void {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const size = buf.byteLength;
  let offset = 0;
  let index = 0;
  while (offset < size && index < count) {
    if (offset + 4 > size) throw invalidArg(`${what}: truncated BYTES element length`);
    const end = offset + 4 + view.getUint32(offset, true);
    if (end > size) throw invalidArg(`${what}: BYTES element exceeds the data`);
    visit?.(offset + 4, end, index);
    offset = end;
    index++;
  }
  if (offset < size) {
    // Triton reads the next element's length before counting it.
    if (offset + 4 > size) throw invalidArg(`${what}: truncated BYTES element length`);
    throw invalidArg(`unexpected number of string elements ${count + 1} for ${what}, expecting ${count}`);
  }
  if (index !== count) throw invalidArg(`${what}: expected ${count} BYTES elements, got ${index}`);
}

/** `buf` checked to hold exactly `count` elements, kept as it is (no element is made). */
export function checkedPackedBytes(buf: Uint8Array, count: number, what: string): PackedBytes {
  walkBytes(buf, count, what);
  return new PackedBytes(buf, count, what);
}

/** Element counts below this are split without asking V8 about its heap. */
const SPLIT_CHECK_MIN_ELEMENTS = 1 << 16;
/** Heap one element costs once split (a Buffer view and its array slot), rounded up. */
const HEAP_BYTES_PER_ELEMENT = 128;
/** Share of V8's heap limit that splitting may fill; the rest is left for the work around it. */
const SPLIT_HEAP_SHARE = 0.75;

/**
 * One Buffer per element, each a view of `packed.bytes`. UNAVAILABLE (HTTP 503), naming the tensor,
 * when the elements would not fit in what is left of V8's heap: failing the one request is
 * better than V8 ending the process.
 */
export function splitPackedBytes(packed: PackedBytes): Buffer[] {
  const { bytes, count, what } = packed;
  if (count >= SPLIT_CHECK_MIN_ELEMENTS) {
    const heap = getHeapStatistics();
    const needed = count * HEAP_BYTES_PER_ELEMENT;
    const room = heap.heap_size_limit * SPLIT_HEAP_SHARE - heap.used_heap_size;
    if (needed > room) {
      const mib = (n: number): string => `${Math.max(0, Math.round(n / 2 ** 20))} MiB`;
      throw new InferenceServerError('UNAVAILABLE',
        `${what}: ${count} BYTES elements need about ${mib(needed)} of JavaScript heap as separate Buffers, ` +
        `and ${mib(room)} is free; send fewer elements per request, or start Node with a larger ` +
        '--max-old-space-size');
    }
  }
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const items = new Array<Buffer>(count);
  walkBytes(bytes, count, what, (start, end, i) => { items[i] = view.subarray(start, end); });
  return items;
}

/** Elements [start, end) of `packed`, still packed (a view of the same bytes). */
export function slicePackedBytes(packed: PackedBytes, start: number, end: number): PackedBytes {
  let from = packed.bytes.byteLength;
  let to = from;
  walkBytes(packed.bytes, packed.count, packed.what, (s, e, i) => {
    if (i === start) from = s - 4;
    if (i === end - 1) to = e;
  });
  if (end <= start) to = from = 0;
  return new PackedBytes(packed.bytes.subarray(from, to), end - start, packed.what);
}

/** BYTES serialization as Triton uses it on the wire and in native code. */
export function serializeBytes(items: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const item of items) total += 4 + item.length;
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const item of items) {
    out.writeUInt32LE(item.length, offset);
    out.set(item, offset + 4);
    offset += 4 + item.length;
  }
  return out;
}

/**
 * UTF-8 strings in wire form, written straight into one buffer (a JSON request's BYTES data):
 * no intermediate Buffer per element.
 */
export function packStrings(strings: readonly string[]): Buffer {
  let total = 0;
  for (const s of strings) total += 4 + Buffer.byteLength(s, 'utf8');
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const s of strings) {
    const written = out.write(s, offset + 4, 'utf8');
    out.writeUInt32LE(written, offset);
    offset += 4 + written;
  }
  return out;
}
