/**
 * Resource samples of the server process from /proc (Linux): resident memory, thread count and
 * open file descriptors, once a second; and the "flat after warm-up" verdict over them.
 */
import { readFileSync, readdirSync } from 'node:fs';

export interface ProcessSample {
  /** Seconds since the soak started. */
  t: number;
  rssMiB: number;
  threads: number;
  fds: number;
}

/** One sample of `pid`, or null once the process is gone. */
export function sampleProcess(pid: number, t: number): ProcessSample | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
    const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    return { t, rssMiB: rssKiB / 1024, threads, fds };
  } catch {
    return null;
  }
}

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * How much the last third's median may exceed the middle third's (the first third is warm-up:
 * JIT, ONNX Runtime arenas, V8 heap growth, connection pools filling).
 * - RSS: ×1.15 + 32 MiB. V8's young generation alone moves RSS by 16-32 MiB with GC timing, and
 *   glibc keeps freed arenas mapped; a leak of 1 KiB per request at the soak's rates is several
 *   MiB per second, which this catches within a default (120 s) run.
 * - Threads: +2. Pools are fixed size; a reload briefly adds instance threads, but one leaked
 *   thread per reload (5 a second) is hundreds.
 * - File descriptors: +16. Sockets of the connections in flight come and go with the load and
 *   the disconnecting clients; one leaked descriptor per reload or per connection is hundreds.
 */
export const FLATNESS = {
  rssMiB: { factor: 1.15, slack: 32 },
  threads: { factor: 1, slack: 2 },
  fds: { factor: 1, slack: 16 },
} as const;

export interface FlatnessCheck {
  metric: keyof typeof FLATNESS;
  middle: number;
  last: number;
  limit: number;
  ok: boolean;
}

/** Compares the last third of the samples with the middle third, metric by metric. */
export function checkFlat(samples: ProcessSample[]): FlatnessCheck[] {
  const third = Math.floor(samples.length / 3);
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(2 * third);
  return (Object.keys(FLATNESS) as (keyof typeof FLATNESS)[]).map((metric) => {
    const m = median(middle.map((s) => s[metric]));
    const l = median(last.map((s) => s[metric]));
    const limit = m * FLATNESS[metric].factor + FLATNESS[metric].slack;
    return { metric, middle: m, last: l, limit, ok: third >= 2 && l <= limit };
  });
}
