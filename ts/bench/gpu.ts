/**
 * Scenario "gpu" (`npm run bench -- gpu`, on a machine with a CUDA device; elsewhere it says why
 * it skipped and writes nothing):
 *
 * (a) Host-to-device copy bandwidth, 64 KiB to 64 MiB, from a block of the server's pinned
 *     BufferPool and from pageable (malloc) memory, each as a fraction of the link's measured
 *     limit: the fastest single copy of a large pinned buffer (256 MiB × 20). The target:
 *     ≥ 90 % for the pinned pool at batch-buffer sizes ≥ 1 MiB.
 * (b) The headline MLP (the `onnx` scenario's, ~36 MB) and the identity ONNX model served by
 *     infernode with instance_group KIND_GPU vs KIND_CPU, concurrency 1 to 64: requests/s, p50,
 *     p99 (the `onnx` scenario's load generator and ServerProcess). A model that does not load
 *     on the GPU is reported with the loader's reason, and its CPU rows still run.
 * (c) The headline's peer on the GPU (node:http + onnxruntime-node with its CUDA provider) is
 *     reported as not run: onnxruntime-node downloads that provider in its postinstall script,
 *     which an offline GPU machine cannot do.
 *
 * Writes bench/results/gpu.{md,json} with the device's name as CUDA reports it.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { native, type CopyBandwidth } from '../native';
import { Triton } from '../triton';
import { load, MLP_BENCH_CONFIG } from './onnx';
import { ServerProcess } from './server-process';

const ROOT = path.join(__dirname, '..', '..');
const WORK_DIR = path.join(ROOT, '.tmp', 'bench-gpu');
const CONCURRENCY = [1, 4, 16, 64];
const KIB = 1024;
const MIB = 1024 * KIB;
const BANDWIDTH_SIZES = [64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB];
const LIMIT_BYTES = 256 * MIB;
const LIMIT_ITERATIONS = 20;
/** Timed bytes per bandwidth row: enough copies to average out, at least 20, at most 2000. */
const BYTES_PER_ROW = 2 * 1024 * MIB;
/** The pinned pool's target fraction of the link limit at batch-buffer sizes ≥ 1 MiB. */
const PINNED_TARGET = 0.9;
const IDENTITY_ELEMENTS = 16 * KIB;  // 64 KiB of FP32 each way per request

type Kind = 'KIND_GPU' | 'KIND_CPU';

export interface BandwidthRow {
  bytes: number;
  source: CopyBandwidth['source'];
  iterations: number;
  gbPerSecond: number;
  /** gbPerSecond ÷ the link limit. */
  fractionOfLimit: number;
}

export interface ServingRow {
  model: string;
  kind: Kind;
  concurrency: number;
  requestsPerSecond: number;
  p50Us: number;
  p99Us: number;
  errors: number;
}

export interface NotRun {
  what: string;
  reason: string;
}

export interface GpuBenchResult {
  deviceName: string;
  /** Decimal GB/s of the fastest of LIMIT_ITERATIONS pinned copies of LIMIT_BYTES. */
  linkLimitGbPerSecond: number;
  bandwidth: BandwidthRow[];
  /** True when every pinned-pool row ≥ 1 MiB reached PINNED_TARGET of the limit. */
  pinnedTargetMet: boolean;
  durationMs: number;
  serving: ServingRow[];
  notRun: NotRun[];
}

/** A model of part (b): its ONNX bytes, config (with `{{KIND}}`), and one KServe binary request. */
interface ServedModel {
  name: string;
  label: string;
  onnx: () => Buffer;
  config: string;
  input: string;
  output: string;
  shape: number[];
}

function onnxTools(): { benchMlpModel(hidden?: number): Buffer; identityModel(dtype: string, dims: (string | number)[]): Buffer } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../tools/onnx');
}

const MODELS: ServedModel[] = [
  {
    name: 'mlp_bench', label: 'MLP 256→2048→2048→2048→10 (FP32, ~36 MB), one row per request',
    onnx: () => onnxTools().benchMlpModel(2048),
    config: MLP_BENCH_CONFIG.replace('kind: KIND_CPU', 'kind: {{KIND}}'),
    input: 'input', output: 'logits', shape: [1, 256],
  },
  {
    name: 'identity_fp32', label: `identity, FP32 [1, ${IDENTITY_ELEMENTS}] (64 KiB each way) per request`,
    onnx: () => onnxTools().identityModel('FP32', ['length']),
    config: `name: "identity_fp32"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
dynamic_batching { }
instance_group [ { count: 1, kind: {{KIND}} } ]
`,
    input: 'INPUT0', output: 'OUTPUT0', shape: [1, IDENTITY_ELEMENTS],
  },
];

function bandwidthRows(): { limit: number; deviceName: string; rows: BandwidthRow[] } {
  const addon = native();
  const limitRun = addon.measureCopyBandwidth({ bytes: LIMIT_BYTES, iterations: LIMIT_ITERATIONS, pinned: true });
  const limit = limitRun.bestGbPerSecond;
  const rows: BandwidthRow[] = [];
  for (const bytes of BANDWIDTH_SIZES) {
    const iterations = Math.max(20, Math.min(2000, Math.round(BYTES_PER_ROW / bytes)));
    for (const pinned of [true, false]) {
      const r = addon.measureCopyBandwidth({ bytes, iterations, pinned });
      rows.push({ bytes, source: r.source, iterations, gbPerSecond: r.gbPerSecond, fractionOfLimit: limit > 0 ? r.gbPerSecond / limit : 0 });
    }
  }
  return { limit, deviceName: limitRun.deviceName, rows };
}

/** `.tmp/bench-gpu/<model>-<kind>/<model>/{config.pbtxt,1/model.onnx}`; the model file written once. */
function repositoryFor(model: ServedModel, kind: Kind): string {
  const modelFile = path.join(WORK_DIR, `${model.name}.onnx`);
  if (!existsSync(modelFile)) {
    mkdirSync(WORK_DIR, { recursive: true });
    writeFileSync(modelFile, model.onnx());
  }
  const repository = path.join(WORK_DIR, `${model.name}-${kind.toLowerCase()}`);
  mkdirSync(path.join(repository, model.name, '1'), { recursive: true });
  copyFileSync(modelFile, path.join(repository, model.name, '1', 'model.onnx'));
  writeFileSync(path.join(repository, model.name, 'config.pbtxt'), model.config.replace('{{KIND}}', kind));
  return repository;
}

/**
 * Loads the repository in this process first: when the model cannot load (KIND_GPU without the
 * CUDA execution provider, say), the loader's reason goes into the report instead of a server
 * process dying with it on stderr.
 */
async function loadFailure(repository: string, model: string): Promise<string | null> {
  const triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false, logInfo: false, exitOnError: false } });
  triton.useRepository({ repositories: [repository], log: () => undefined });
  try {
    await triton.run();
    const entry = triton.repositoryIndex().find((e) => e.name === model);
    return entry?.state === 'READY' ? null : (entry?.reason || `model '${model}' did not become ready`);
  } catch (err) {
    return (err as Error).message;
  } finally {
    await triton.stop();
  }
}

/** One KServe binary request (JSON header + FP32 bytes), pre-serialized for the load generator. */
function requestBytes(model: ServedModel): Buffer {
  const count = model.shape.reduce((a, b) => a * b, 1);
  const input = new Float32Array(count).map((_, i) => Math.sin(i) * 0.5);
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: model.input, datatype: 'FP32', shape: model.shape, parameters: { binary_data_size: input.byteLength } }],
    outputs: [{ name: model.output, parameters: { binary_data: true } }],
  }));
  const body = Buffer.concat([header, Buffer.from(input.buffer)]);
  const head = `POST /v2/models/${model.name}/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n` +
    `Inference-Header-Content-Length: ${header.length}\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

async function servingRows(model: ServedModel, kind: Kind, durationMs: number): Promise<ServingRow[]> {
  const repository = repositoryFor(model, kind);
  const proc = await ServerProcess.start(path.join(__dirname, 'onnx-server.js'), ['infernode', repository, '', model.name],
    `infernode server (${model.name}, ${kind})`);
  const request = requestBytes(model).toString('base64');
  const rows: ServingRow[] = [];
  try {
    for (const concurrency of CONCURRENCY) {
      const report = await load({ port: proc.port, request, concurrency, warmupMs: 1000, durationMs });
      rows.push({
        model: model.name, kind, concurrency, requestsPerSecond: report.seconds > 0 ? report.requests / report.seconds : 0,
        p50Us: report.p50Us, p99Us: report.p99Us, errors: report.errors,
      });
    }
  } finally {
    await proc.stop();
  }
  return rows;
}

/** The scenario; null (after saying why) without a CUDA device. */
export async function runGpuBench(durationMs = 5000): Promise<GpuBenchResult | null> {
  const info = native().buildInfo();
  if (info.cudaDeviceCount === 0) {
    console.log(`bench gpu: skipped: no CUDA device (addon built ${info.cuda ? 'with' : 'without'} CUDA)`);
    return null;
  }
  const { limit, deviceName, rows } = bandwidthRows();
  const serving: ServingRow[] = [];
  const notRun: NotRun[] = [{
    what: 'node:http + onnxruntime-node on the GPU (the headline peer)',
    reason: "onnxruntime-node's CUDA execution provider is downloaded by its postinstall script; this machine is offline",
  }];
  for (const model of MODELS) {
    for (const kind of ['KIND_GPU', 'KIND_CPU'] as const) {
      const failure = await loadFailure(repositoryFor(model, kind), model.name);
      if (failure) {
        notRun.push({ what: `${model.name} with ${kind}`, reason: `failed to load: ${failure}` });
        continue;
      }
      serving.push(...await servingRows(model, kind, durationMs));
    }
  }
  const pinnedLarge = rows.filter((r) => r.source === 'pinned-pool' && r.bytes >= MIB);
  return {
    deviceName, linkLimitGbPerSecond: limit, bandwidth: rows,
    pinnedTargetMet: pinnedLarge.length > 0 && pinnedLarge.every((r) => r.fractionOfLimit >= PINNED_TARGET),
    durationMs, serving, notRun,
  };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const size = (bytes: number): string => (bytes >= MIB ? `${bytes / MIB} MiB` : `${bytes / KIB} KiB`);

export function gpuMarkdown(r: GpuBenchResult, machine: string): string {
  const labels = new Map(MODELS.map((m) => [m.name, m.label]));
  return [
    `# GPU: host-to-device bandwidth and ONNX models on KIND_GPU vs KIND_CPU — ${r.deviceName}`,
    '',
    `Machine: ${machine}  `,
    `Device: ${r.deviceName}  `,
    `Date: ${new Date().toISOString()}`,
    '',
    '## Host-to-device copy bandwidth',
    '',
    `Link limit (fastest of ${LIMIT_ITERATIONS} pinned copies of ${size(LIMIT_BYTES)}): **${fmt(r.linkLimitGbPerSecond, 1)} GB/s** ` +
      '(decimal GB). Each row: copies back to back on a stream of their own, timed with CUDA events.',
    '',
    `**Pinned pool ≥ 1 MiB at ≥ ${PINNED_TARGET * 100} % of the limit: ${r.pinnedTargetMet ? 'met' : 'NOT met'}.**`,
    '',
    '| size | source | copies | GB/s | of limit |',
    '| ---: | --- | ---: | ---: | ---: |',
    ...r.bandwidth.map((b) => `| ${size(b.bytes)} | ${b.source} | ${b.iterations} | ${fmt(b.gbPerSecond, 1)} | ${fmt(b.fractionOfLimit * 100, 0)} % |`),
    '',
    '## Served by infernode over HTTP: KIND_GPU vs KIND_CPU',
    '',
    `Each row: ${r.durationMs / 1000} s after 1 s of warm-up, closed loop, KServe binary requests; load generator and server in their own processes.`,
    '',
    ...MODELS.map((m) => `- \`${m.name}\`: ${labels.get(m.name)}`),
    '',
    '| model | instance kind | concurrency | req/s | p50 ms | p99 ms | errors |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...r.serving.map((s) => `| ${s.model} | ${s.kind} | ${s.concurrency} | ${fmt(s.requestsPerSecond)} | ` +
      `${fmt(s.p50Us / 1000, 2)} | ${fmt(s.p99Us / 1000, 2)} | ${s.errors} |`),
    '',
    '## Not run',
    '',
    ...r.notRun.map((n) => `- ${n.what}: ${n.reason}`),
    '',
  ].join('\n');
}
