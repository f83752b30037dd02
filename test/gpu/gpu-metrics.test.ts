/**
 * Triton's per-GPU metrics through NVML, scraped from a real server's /metrics over HTTP: every
 * family with a GPU-... uuid per GPU and plausible values, and the energy counter not decreasing.
 * Without NVML (no NVIDIA driver) or a GPU every test here is skipped, and the suite says so.
 */
import { spawnSync } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import { native, type GpuDeviceReading } from '../../ts/native';
import { Triton } from '../../ts/triton';

/**
 * NVML's answer, asked in a child process: the read is asynchronous, and whether the tests run
 * or skip must be known when they are declared.
 */
function probeNvml(): { readings: GpuDeviceReading[] | null; unavailable: string | null } {
  const script = "const a = require('node-gyp-build')(process.argv[1]); a.readGpuMetrics().then((readings) => " +
    'process.stdout.write(JSON.stringify({ readings, unavailable: a.gpuMetricsUnavailable() })))';
  const r = spawnSync(process.execPath, ['-e', script, path.join(__dirname, '..', '..')], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`probing NVML failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { readings: GpuDeviceReading[] | null; unavailable: string | null };
}

const { readings, unavailable } = probeNvml();
const hasGpu = readings !== null && readings.length > 0;
if (!hasGpu) console.warn(`GPU metrics suite skipped: ${readings === null ? unavailable : 'NVML reports no GPU'}`);
const gpuTest = hasGpu ? test : test.skip;

const FAMILIES = [
  'nv_gpu_utilization', 'nv_gpu_memory_total_bytes', 'nv_gpu_memory_used_bytes', 'nv_gpu_power_usage',
  'nv_gpu_power_limit', 'nv_energy_consumption',
];

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET /metrics: ${res.statusCode}`))));
    }).on('error', reject);
  });
}

/** `family`'s samples: gpu_uuid -> value. */
function samples(text: string, family: string): Map<string, number> {
  const out = new Map<string, number>();
  const line = new RegExp(`^${family}\\{gpu_uuid="([^"]+)"\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(line)) out.set(m[1], Number(m[2]));
  return out;
}

let triton: Triton;
let port: number;

beforeAll(async () => {
  if (!hasGpu) return;
  triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, metricsPort: 0, allowGrpc: false, logInfo: false, metricsIntervalMs: 100,
    },
  });
  await triton.run();
  port = triton.ports.metrics!;
});

afterAll(async () => {
  if (hasGpu) await triton.stop();
});

gpuTest('every family is there for every GPU NVML sees, with Triton\'s help text and plausible values', async () => {
  const text = await scrape(port);
  const uuids = readings!.map((d) => d.uuid).sort();
  for (const uuid of uuids) expect(uuid).toMatch(/^GPU-[0-9a-f-]+$/);
  for (const family of FAMILIES) {
    expect(text).toMatch(new RegExp(`^# HELP ${family} \\S`, 'm'));
    // Power may be unsupported on some boards; then that metric is missing for that GPU only.
    const expected = readings!.filter((d) => family !== 'nv_gpu_power_usage' || d.powerUsageWatts !== undefined).map((d) => d.uuid);
    expect([...samples(text, family).keys()].sort()).toEqual(expect.arrayContaining(expected));
  }
  expect(text).toMatch(/^# TYPE nv_energy_consumption counter$/m);
  expect(text).toMatch(/^# TYPE nv_gpu_utilization gauge$/m);
  const total = samples(text, 'nv_gpu_memory_total_bytes');
  const used = samples(text, 'nv_gpu_memory_used_bytes');
  for (const uuid of uuids) {
    expect(total.get(uuid)!).toBeGreaterThan(used.get(uuid)!);
    expect(used.get(uuid)!).toBeGreaterThanOrEqual(0);
    const utilization = samples(text, 'nv_gpu_utilization').get(uuid)!;
    expect(utilization).toBeGreaterThanOrEqual(0);
    expect(utilization).toBeLessThanOrEqual(1);
    expect(samples(text, 'nv_gpu_power_limit').get(uuid)!).toBeGreaterThan(0);
    expect(samples(text, 'nv_energy_consumption').get(uuid)!).toBeGreaterThanOrEqual(0);
    const power = samples(text, 'nv_gpu_power_usage').get(uuid);
    if (power !== undefined) expect(power).toBeGreaterThan(0);
  }
});

gpuTest('the energy counter grows from the server start and never decreases', async () => {
  const first = samples(await scrape(port), 'nv_energy_consumption');
  // A GPU draws tens of watts even idle: within a few 100 ms refreshes the counter has grown.
  const deadline = Date.now() + 20_000;
  let second = first;
  while ([...first].some(([uuid, joules]) => !(second.get(uuid)! > joules)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    second = samples(await scrape(port), 'nv_energy_consumption');
  }
  for (const [uuid, joules] of first) expect(second.get(uuid)!).toBeGreaterThan(joules);
});

gpuTest('the read runs off the event loop and reports what this process reads (a measurement, logged)', async () => {
  const rounds = 20;
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) expect((await native().readGpuMetrics())!.map((d) => d.uuid)).toEqual(readings!.map((d) => d.uuid));
  const microsPerRead = Number(process.hrtime.bigint() - start) / 1000 / rounds;
  console.warn(`readGpuMetrics: ${microsPerRead.toFixed(0)} us per read of ${readings!.length} GPU(s), on the libuv pool`);
});
