/**
 * Triton's `local` response cache: one LRU store of computed answers shared by every model of a
 * Triton, within a byte budget. Entries are copies the cache owns (their outputs' bytes and an
 * estimate of their bookkeeping count against the budget: entryByteSize); a lookup hands out
 * fresh copies, so no caller can change what the next hit returns, and no entry shares memory
 * with a caller or a native engine.
 *
 * Threading: everything here runs on the main JS thread (lookups in BoundModel.infer, inserts
 * when a request's promise settles), so an insertion, its evictions and a lookup never
 * interleave: no lock is needed.
 */
import { NDArray, bytesTensorSize, copyNDArray, typedArrayFor, type DataType, type TypedArray } from '../tensor';

/**
 * One cached answer: the outputs as the request that computed them received them, in the
 * recency list (older = towards the least recently used end).
 */
interface CacheEntry {
  key: string;
  outputs: Record<string, NDArray>;
  byteSize: number;
  older: CacheEntry | null;
  newer: CacheEntry | null;
}

/** The outcome of an insertion, as Triton's cache reports it. */
export type InsertResult =
  /** Stored (least recently used entries evicted as needed). */
  | 'inserted'
  /** The key was there already (an identical request computed meanwhile): nothing changes. */
  | 'exists'
  /** The entry alone is larger than the whole budget: not stored. */
  | 'too-large';

/**
 * What the cache's bookkeeping costs besides the data, per entry (its key, its Map slot, its
 * list links) and per output (the NDArray, its shape and its typed-array view): estimates of
 * V8's sizes (about 550 bytes for an entry of one small output, measured), counted against the
 * budget so that it bounds the memory the cache really holds even when answers are tiny.
 */
export const ENTRY_OVERHEAD_BYTES = 256;
export const OUTPUT_OVERHEAD_BYTES = 256;

/**
 * The bytes an answer occupies in the cache: each output's data (BYTES as serialized, a 4-byte
 * length before each element) plus the bookkeeping estimates above.
 */
export function entryByteSize(outputs: Record<string, NDArray>): number {
  let total = ENTRY_OVERHEAD_BYTES;
  for (const name in outputs) {
    const arr = outputs[name];
    total += OUTPUT_OVERHEAD_BYTES;
    total += arr.dtype === 'BYTES' ? bytesTensorSize(arr) : (arr.data as ArrayBufferView).byteLength;
  }
  return total;
}

/**
 * A copy of a tensor in memory of its own. Numeric data goes to uninitialized memory that the
 * copy then fills entirely: a zeroed allocation of a large tensor costs several times the copy
 * itself (fresh pages to clear), which a hit would pay on every answer.
 */
function copyTensor(arr: NDArray): NDArray {
  if (arr.dtype === 'BYTES') return copyNDArray(arr);
  const source = arr.data as TypedArray;
  const memory = Buffer.allocUnsafeSlow(source.byteLength);  // never pooled: its ArrayBuffer is its own, offset 0
  memory.set(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
  const View = typedArrayFor(arr.dtype as Exclude<DataType, 'BYTES'>);
  return new NDArray(arr.dtype, arr.shape.slice(), new View(memory.buffer, 0, source.length));
}

function copyOutputs(outputs: Record<string, NDArray>): Record<string, NDArray> {
  const copy: Record<string, NDArray> = {};
  for (const name in outputs) copy[name] = copyTensor(outputs[name]);
  return copy;
}

/**
 * The store: a Map from key to entry, and the entries in a doubly linked recency list. A hit
 * moves its entry to the newest end by relinking it (a Map delete + set would do it too, but
 * V8 makes that cost ~100 µs once the Map holds a hundred thousand entries).
 */
export class ResponseCache {
  readonly #entries = new Map<string, CacheEntry>();
  /** Least recently used end (evicted first) and most recently used end of the list. */
  #oldest: CacheEntry | null = null;
  #newest: CacheEntry | null = null;
  #usedBytes = 0;
  #evictions = 0;

  constructor(readonly byteSize: number) {}

  /** Bytes held by the entries now. */
  get usedBytes(): number {
    return this.#usedBytes;
  }

  get entryCount(): number {
    return this.#entries.size;
  }

  /** Entries evicted to make room since the cache was created. */
  get evictions(): number {
    return this.#evictions;
  }

  /** A copy of the answer stored under `key` (now the most recently used), or undefined. */
  lookup(key: string): Record<string, NDArray> | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry !== this.#newest) {
      this.#unlink(entry);
      this.#linkNewest(entry);
    }
    return copyOutputs(entry.outputs);
  }

  /** Stores a copy of `outputs` under `key`, evicting the least recently used entries to fit it. */
  insert(key: string, outputs: Record<string, NDArray>): InsertResult {
    if (this.#entries.has(key)) return 'exists';
    const byteSize = entryByteSize(outputs);
    if (byteSize > this.byteSize) return 'too-large';
    while (this.#usedBytes + byteSize > this.byteSize) this.#evictOldest();
    const entry: CacheEntry = { key, outputs: copyOutputs(outputs), byteSize, older: null, newer: null };
    this.#entries.set(key, entry);
    this.#linkNewest(entry);
    this.#usedBytes += byteSize;
    return 'inserted';
  }

  #evictOldest(): void {
    const entry = this.#oldest!;
    this.#unlink(entry);
    this.#entries.delete(entry.key);
    this.#usedBytes -= entry.byteSize;
    this.#evictions++;
  }

  #unlink(entry: CacheEntry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.#oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.#newest = entry.older;
    entry.older = entry.newer = null;
  }

  #linkNewest(entry: CacheEntry): void {
    entry.older = this.#newest;
    if (this.#newest) this.#newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
  }
}
