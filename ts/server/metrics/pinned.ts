/**
 * Triton's pinned memory pool gauges, refreshed every `metricsIntervalMs`: the process-wide
 * budget (`nv_pinned_memory_pool_total_bytes`, --pinned-memory-pool-byte-size) and what the
 * batch buffers have pinned of it (`nv_pinned_memory_pool_used_bytes`). Registered only where a
 * CUDA device exists: without one nothing is pinned.
 */
import { Gauge, type Registry } from 'prom-client';
import { native } from '../../native';

/** Registers the gauges and refreshes them on a timer; returns the stop function. */
export function startPinnedMetrics(registry: Registry, intervalMs: number): () => void {
  if (native().buildInfo().cudaDeviceCount === 0) return () => undefined;
  const total = new Gauge({ name: 'nv_pinned_memory_pool_total_bytes', help: 'Pinned memory pool total memory size, in bytes', registers: [registry] });
  const used = new Gauge({ name: 'nv_pinned_memory_pool_used_bytes', help: 'Pinned memory pool used memory size, in bytes', registers: [registry] });
  const refresh = (): void => {
    const stats = native().pinnedMemory();
    total.set(stats.totalBytes);
    used.set(stats.usedBytes);
  };
  refresh();
  const timer = setInterval(refresh, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
