/**
 * Triton's per-GPU metrics, read through NVML (the native `readGpuMetrics`, cpp/gpu/) every
 * `metricsIntervalMs` (default 2000) while `allowGpuMetrics` (default true):
 * `nv_gpu_utilization` (0-1), `nv_gpu_memory_total_bytes`, `nv_gpu_memory_used_bytes`,
 * `nv_gpu_power_usage` and `nv_gpu_power_limit` (W) gauges and the `nv_energy_consumption`
 * counter (J since the server started), each labelled `gpu_uuid`, with Triton's help texts
 * (triton-inference-server/core src/metrics.cc).
 *
 * Without NVML (no NVIDIA driver) or without a GPU the families are not registered at all, so
 * /metrics has no nv_gpu_* lines rather than zeros, as Triton built without GPU metrics. A
 * metric one GPU does not report (power on some boards) is missing for that GPU only.
 *
 * The read runs on the libuv pool, not the event loop: NVML's energy query alone takes about
 * 4 ms per GPU (H100), which would stall every request once per interval (docs/http.md).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from '../../log';
import { native, type GpuDeviceReading } from '../../native';

type Label = 'gpu_uuid';

interface GpuFamilies {
  utilization: Gauge<Label>;
  memoryTotal: Gauge<Label>;
  memoryUsed: Gauge<Label>;
  powerUsage: Gauge<Label>;
  powerLimit: Gauge<Label>;
  energy: Counter<Label>;
}

function registerFamilies(registry: Registry): GpuFamilies {
  const labelNames: Label[] = ['gpu_uuid'];
  const gauge = (name: string, help: string): Gauge<Label> => new Gauge({ name, help, labelNames, registers: [registry] });
  return {
    utilization: gauge('nv_gpu_utilization', 'GPU utilization rate [0.0 - 1.0)'),
    memoryTotal: gauge('nv_gpu_memory_total_bytes', 'GPU total memory, in bytes'),
    memoryUsed: gauge('nv_gpu_memory_used_bytes', 'GPU used memory, in bytes'),
    powerUsage: gauge('nv_gpu_power_usage', 'GPU power usage in watts'),
    powerLimit: gauge('nv_gpu_power_limit', 'GPU power management limit in watts'),
    energy: new Counter({
      name: 'nv_energy_consumption', help: 'GPU energy consumption in joules since the Triton Server started',
      labelNames, registers: [registry],
    }),
  };
}

/**
 * Turns NVML's total energy since the driver loaded (mJ) into joules since the first reading,
 * as Triton does: the first reading of a GPU is the baseline (the counter shows 0), each later
 * one adds its difference. A reading below the last (the driver was reloaded) becomes the new
 * baseline, so the counter never decreases.
 */
class EnergySinceStart {
  readonly #lastMillijoules = new Map<string, number>();

  /** The joules to add for this reading of `uuid`. */
  add(uuid: string, millijoules: number): number {
    const last = this.#lastMillijoules.get(uuid);
    this.#lastMillijoules.set(uuid, millijoules);
    return last === undefined || millijoules < last ? 0 : (millijoules - last) / 1000;
  }
}

function record(families: GpuFamilies, energy: EnergySinceStart, device: GpuDeviceReading): void {
  const labels = { gpu_uuid: device.uuid };
  if (device.utilization !== undefined) families.utilization.set(labels, device.utilization);
  if (device.memoryTotalBytes !== undefined) families.memoryTotal.set(labels, device.memoryTotalBytes);
  if (device.memoryUsedBytes !== undefined) families.memoryUsed.set(labels, device.memoryUsedBytes);
  if (device.powerUsageWatts !== undefined) families.powerUsage.set(labels, device.powerUsageWatts);
  if (device.powerLimitWatts !== undefined) families.powerLimit.set(labels, device.powerLimitWatts);
  if (device.energyMillijoules !== undefined) families.energy.inc(labels, energy.add(device.uuid, device.energyMillijoules));
}

/**
 * Reads the GPUs once; when NVML reports at least one, registers the families and refreshes
 * them every `intervalMs` (an unref'd timer: it never keeps the process alive), skipping a tick
 * while the previous read is still running. Resolves to the stop function, which clears the
 * timer; a read in flight then records nothing.
 */
export async function startGpuMetrics(registry: Registry, intervalMs: number, logger: Logger): Promise<() => void> {
  const addon = native();
  const first = await addon.readGpuMetrics();
  if (first === null || first.length === 0) {
    logger.verbose(1, `GPU metrics: none reported (${first === null ? addon.gpuMetricsUnavailable() : 'NVML found no GPU'})`);
    return () => undefined;
  }
  first.forEach((device, index) => logger.info(`Collecting metrics for GPU ${index}: ${device.name} (${device.uuid})`));
  const families = registerFamilies(registry);
  const energy = new EnergySinceStart();
  let stopped = false;
  let reading = false;
  // A failed read (null) keeps the previous values until the next interval.
  const refresh = (readings: GpuDeviceReading[] | null): void => {
    if (stopped) return;
    for (const device of readings ?? []) record(families, energy, device);
  };
  refresh(first);
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    addon.readGpuMetrics().then(refresh, (err: unknown) => logger.verbose(1, `GPU metrics: read failed: ${String(err)}`))
      .finally(() => { reading = false; });
  }, intervalMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
