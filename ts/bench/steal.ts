/**
 * How much of the machine's CPU time the hypervisor gave to other guests while a bench ran
 * ("steal" in /proc/stat). On a shared VM a run's figures move with it: the same build measured
 * ONNX Runtime runs 3× apart on two hosts, and a 2-vCPU guest with a quarter of its time stolen
 * halves an HTTP bench's requests/s at concurrency 1. Each result states it so a figure can be
 * read against the machine that produced it. Linux only; elsewhere `null`.
 */
import { readFileSync } from 'node:fs';

interface CpuTimes {
  steal: number;
  total: number;
}

/** The summed "cpu" line of /proc/stat (ticks), or null where it cannot be read. */
function cpuTimes(): CpuTimes | null {
  let text: string;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  const line = text.split('\n', 1)[0];
  if (!line.startsWith('cpu ')) return null;
  // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already
  // counted in user and nice, so the first eight fields are the whole.
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null;
  return { steal: fields[7], total: fields.reduce((a, b) => a + b, 0) };
}

/** Starts measuring; the returned function gives the fraction of CPU time stolen since (0..1), or null. */
export function startStealMeter(): () => number | null {
  const start = cpuTimes();
  return () => {
    const now = cpuTimes();
    if (!start || !now || now.total <= start.total) return null;
    return (now.steal - start.steal) / (now.total - start.total);
  };
}

/** ", 12.3 % of the CPU time stolen by the hypervisor during the run" (for the machine line), or "" where unknown. */
export function stealText(fraction: number | null): string {
  if (fraction === null) return '';
  return `, ${(fraction * 100).toFixed(1)} % of the CPU time stolen by the hypervisor during the run`;
}
