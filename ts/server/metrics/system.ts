/**
 * Triton's per-interval CPU metrics from Linux /proc, refreshed every `metricsIntervalMs`
 * (default 2000): `nv_cpu_utilization` (0-1, all cores, over the last interval),
 * `nv_cpu_memory_total_bytes` and `nv_cpu_memory_used_bytes` (MemTotal - MemAvailable).
 * Reads are asynchronous so a slow /proc never stalls the event loop. Where /proc is missing
 * (not Linux) the gauges are not registered. The GPU metrics are in ./gpu.ts.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Gauge, type Registry } from 'prom-client';

interface CpuTimes {
  busy: number;
  total: number;
}

function parseCpu(stat: string): CpuTimes | null {
  const line = stat.split('\n', 1)[0];
  if (!line.startsWith('cpu ')) return null;
  // user nice system idle iowait irq softirq steal (guest times are already in user/nice).
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 4 || fields.some((n) => !Number.isFinite(n))) return null;
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3] + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

function parseMeminfo(text: string): { total: number; used: number } | null {
  const kb = (key: string): number | undefined => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable');
  if (total === undefined || available === undefined) return null;
  return { total, used: total - available };
}

/** Registers the CPU gauges and refreshes them on a timer; returns the stop function. */
export function startSystemMetrics(registry: Registry, intervalMs: number): () => void {
  if (!existsSync('/proc/stat') || !existsSync('/proc/meminfo')) return () => undefined;
  const utilization = new Gauge({ name: 'nv_cpu_utilization', help: 'CPU utilization rate [0.0 - 1.0]', registers: [registry] });
  const memTotal = new Gauge({ name: 'nv_cpu_memory_total_bytes', help: 'CPU total memory (RAM), in bytes', registers: [registry] });
  const memUsed = new Gauge({ name: 'nv_cpu_memory_used_bytes', help: 'CPU used memory (RAM), in bytes', registers: [registry] });
  let last: CpuTimes | null = null;
  let stopped = false;
  const refresh = async (): Promise<void> => {
    try {
      const [stat, meminfo] = await Promise.all([readFile('/proc/stat', 'utf8'), readFile('/proc/meminfo', 'utf8')]);
      if (stopped) return;
      const cpu = parseCpu(stat);
      // The first sample covers the time since boot; later ones the last interval.
      const base = last ?? { busy: 0, total: 0 };
      if (cpu && cpu.total > base.total) utilization.set((cpu.busy - base.busy) / (cpu.total - base.total));
      last = cpu;
      const mem = parseMeminfo(meminfo);
      if (mem) {
        memTotal.set(mem.total);
        memUsed.set(mem.used);
      }
    } catch {
      // A transient read failure keeps the previous values until the next interval.
    }
  };
  void refresh();
  const timer = setInterval(() => void refresh(), intervalMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
