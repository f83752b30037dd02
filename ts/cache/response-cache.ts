/**
 * Triton's `local` response cache: one LRU store of computed answers shared by every model of a
 * Triton, within a byte budget. Entries are copies the cache owns (their outputs' bytes count
 * against the budget); a lookup hands out fresh copies, so no caller can change what the next
 * hit returns, and no entry shares memory with a caller or a native engine.
 *
 * Threading: everything here runs on the main JS thread (lookups in BoundModel.infer, inserts
 * when a request's promise settles), so an insertion, its evictions and a lookup never
 * interleave: no lock is needed.
 */
import { NDArray, copyNDArray } from '../tensor';

/** One cached answer: the outputs as the request that computed them received them. */
interface CacheEntry {
  outputs: Record<string, NDArray>;
  byteSize: number;
}

/** The outcome of an insertion, as Triton's cache reports it. */
export type InsertResult =
  /** Stored (least recently used entries evicted as needed). */
  | 'inserted'
  /** The key was there already (an identical request computed meanwhile): nothing changes. */
  | 'exists'
  /** The entry alone is larger than the whole budget: not stored. */
  | 'too-large';

/** The bytes an answer occupies: each output's data (BYTES as serialized, 4-byte length before each element). */
export function outputsByteSize(outputs: Record<string, NDArray>): number {
  let total = 0;
  for (const name in outputs) {
    const arr = outputs[name];
    if (arr.dtype === 'BYTES') {
      for (const item of arr.data as Uint8Array[]) total += 4 + item.byteLength;
    } else {
      total += (arr.data as ArrayBufferView).byteLength;
    }
  }
  return total;
}

function copyOutputs(outputs: Record<string, NDArray>): Record<string, NDArray> {
  const copy: Record<string, NDArray> = {};
  for (const name in outputs) copy[name] = copyNDArray(outputs[name]);
  return copy;
}

export class ResponseCache {
  /** Keys in least-to-most recently used order (a Map iterates in insertion order). */
  readonly #entries = new Map<string, CacheEntry>();
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
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return copyOutputs(entry.outputs);
  }

  /** Stores a copy of `outputs` under `key`, evicting the least recently used entries to fit it. */
  insert(key: string, outputs: Record<string, NDArray>): InsertResult {
    if (this.#entries.has(key)) return 'exists';
    const byteSize = outputsByteSize(outputs);
    if (byteSize > this.byteSize) return 'too-large';
    while (this.#usedBytes + byteSize > this.byteSize) this.#evictLeastRecentlyUsed();
    this.#entries.set(key, { outputs: copyOutputs(outputs), byteSize });
    this.#usedBytes += byteSize;
    return 'inserted';
  }

  #evictLeastRecentlyUsed(): void {
    const [key, entry] = this.#entries.entries().next().value as [string, CacheEntry];
    this.#entries.delete(key);
    this.#usedBytes -= entry.byteSize;
    this.#evictions++;
  }
}
