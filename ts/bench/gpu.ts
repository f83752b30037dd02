/**
 * Scenario "gpu" (`npm run bench -- gpu`, on a machine with a CUDA device; elsewhere it says why
 * it skipped and writes nothing):
 *
 * (a) Host-to-device copy bandwidth, 64 KiB to 64 MiB, from a block of the server's pinned
 *     BufferPool and from pageable (malloc) memory, each as a fraction of the link's measured
 *     limit: the fastest single copy of a large pinned buffer (256 MiB × 20). The target:
 *     ≥ 90 % for the pinned pool at batch-buffer sizes ≥ 1 MiB. Each pinned size also runs with
 *     each copy split over two streams. Then large caller buffers (1–256 MiB of pageable memory)
 *     staged through the pool vs cudaHostRegister'ed for one copy, timed end to end.
 * (b) The headline MLP (the `onnx` scenario's, ~36 MB) and the identity ONNX model served by
 *     infernode with instance_group KIND_GPU vs KIND_CPU, concurrency 1 to 64: requests/s, p50,
 *     p99 (the `onnx` scenario's load generator and ServerProcess). A model that does not load
 *     on the GPU is reported with the loader's reason, and its CPU rows still run.
 * (c) The headline's peer on the GPU: node:http + onnxruntime-node with its CUDA execution
 *     provider, serving the same MLP file and the same requests (the `onnx` scenario's naive
 *     server). onnxruntime-node downloads that provider in its postinstall script; where it is
 *     missing, the session cannot get CUDA and the peer is reported as not run with ONNX
 *     Runtime's reason (it is never run on the CPU in its place).
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
  /** 1: one stream (how a batch's input is copied today); 2: each copy split over two streams. */
  streams: number;
  iterations: number;
  gbPerSecond: number;
  /** gbPerSecond ÷ the link limit. */
  fractionOfLimit: number;
}

/** infernode, or the headline's peer (node:http + onnxruntime-node, one session.run per request). */
export type GpuServer = 'infernode' | 'onnxruntime-node';

/** A caller's pageable buffer reaching the device, each copy timed end to end (host clock). */
export interface CallerRow {
  bytes: number;
  source: CopyBandwidth['source'];
  iterations: number;
  gbPerSecond: number;
  /** The mean time of one whole copy (ms). */
  msPerCopy: number;
}

export interface ServingRow {
  server: GpuServer;
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
  /** True when every one-stream pinned-pool row ≥ 1 MiB reached PINNED_TARGET of the limit. */
  pinnedTargetMet: boolean;
  /** The same for the rows that split each copy over two streams. */
  splitTargetMet: boolean;
  /** Large caller buffers: staged through the pool vs registered for the copy. */
  callerBuffers: CallerRow[];
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
    for (const [pinned, streams] of [[true, 1], [true, 2], [false, 1]] as const) {
      const r = addon.measureCopyBandwidth({ bytes, iterations, pinned, streams });
      rows.push({ bytes, source: r.source, streams, iterations, gbPerSecond: r.gbPerSecond, fractionOfLimit: limit > 0 ? r.gbPerSecond / limit : 0 });
    }
  }
  return { limit, deviceName: limitRun.deviceName, rows };
}

/** Sizes where a caller's buffer might be registered instead of copied into the pool. */
const CALLER_SIZES = [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB];

function callerRows(notRun: NotRun[]): CallerRow[] {
  const rows: CallerRow[] = [];
  for (const bytes of CALLER_SIZES) {
    const iterations = Math.max(5, Math.min(200, Math.round(BYTES_PER_ROW / 4 / bytes)));
    for (const caller of ['staged', 'registered'] as const) {
      try {
        const r = native().measureCopyBandwidth({ bytes, iterations, caller });
        rows.push({ bytes, source: r.source, iterations, gbPerSecond: r.gbPerSecond, msPerCopy: r.totalMs / iterations });
      } catch (err) {
        notRun.push({ what: `a ${size(bytes)} caller buffer, ${caller}`, reason: (err as Error).message });
      }
    }
  }
  return rows;
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

async function servingRows(model: ServedModel, kind: Kind, durationMs: number, server: GpuServer = 'infernode'): Promise<ServingRow[]> {
  const repository = repositoryFor(model, kind);
  const args = server === 'infernode'
    ? ['infernode', repository, '', model.name]
    : ['naive', '', path.join(repository, model.name, '1', 'model.onnx'), model.name, kind === 'KIND_GPU' ? 'cuda' : 'cpu'];
  const proc = await ServerProcess.start(path.join(__dirname, 'onnx-server.js'), args, `${server} server (${model.name}, ${kind})`);
  const request = requestBytes(model).toString('base64');
  const rows: ServingRow[] = [];
  try {
    for (const concurrency of CONCURRENCY) {
      const report = await load({ port: proc.port, request, concurrency, warmupMs: 1000, durationMs });
      rows.push({
        server, model: model.name, kind, concurrency, requestsPerSecond: report.seconds > 0 ? report.requests / report.seconds : 0,
        p50Us: report.p50Us, p99Us: report.p99Us, errors: report.errors,
      });
    }
  } finally {
    await proc.stop();
  }
  return rows;
}

/** The headline MLP served by node:http + onnxruntime-node on CUDA; [] (and why, in notRun) when it cannot start. */
async function peerRows(durationMs: number, notRun: NotRun[]): Promise<ServingRow[]> {
  try {
    return await servingRows(MODELS[0], 'KIND_GPU', durationMs, 'onnxruntime-node');
  } catch (err) {
    notRun.push({ what: 'node:http + onnxruntime-node on the GPU (the headline peer)', reason: (err as Error).message });
    return [];
  }
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
  const notRun: NotRun[] = [];
  const callerBuffers = callerRows(notRun);
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
  serving.push(...await peerRows(durationMs, notRun));
  const targetMet = (streams: number): boolean => {
    const large = rows.filter((r) => r.source === 'pinned-pool' && r.streams === streams && r.bytes >= MIB);
    return large.length > 0 && large.every((r) => r.fractionOfLimit >= PINNED_TARGET);
  };
  return {
    deviceName, linkLimitGbPerSecond: limit, bandwidth: rows,
    pinnedTargetMet: targetMet(1), splitTargetMet: targetMet(2), callerBuffers,
    durationMs, serving, notRun,
  };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const size = (bytes: number): string => (bytes >= MIB ? `${bytes / MIB} MiB` : `${bytes / KIB} KiB`);

/** infernode on KIND_GPU ÷ node:http + onnxruntime-node on CUDA, per concurrency (the headline on the GPU). */
function peerComparison(serving: ServingRow[]): string[] {
  const at = (server: GpuServer, c: number): ServingRow | undefined =>
    serving.find((s) => s.server === server && s.model === MODELS[0].name && s.kind === 'KIND_GPU' && s.concurrency === c);
  const lines = CONCURRENCY.flatMap((c) => {
    const ours = at('infernode', c);
    const peer = at('onnxruntime-node', c);
    if (!ours || !peer || peer.requestsPerSecond === 0) return [];
    return [`| ${c} | ${fmt(ours.requestsPerSecond)} | ${fmt(peer.requestsPerSecond)} | ${fmt(ours.requestsPerSecond / peer.requestsPerSecond, 2)}× | ` +
      `${fmt(ours.p50Us / 1000, 2)} vs ${fmt(peer.p50Us / 1000, 2)} |`];
  });
  if (lines.length === 0) return [];
  return [
    `### The headline on the GPU: infernode vs node:http + onnxruntime-node, both on CUDA (${MODELS[0].name})`,
    '',
    '| concurrency | infernode req/s | onnxruntime-node req/s | ratio | p50 ms (infernode vs peer) |',
    '| ---: | ---: | ---: | ---: | --- |',
    ...lines,
    '',
  ];
}

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
      '(decimal GB). Each row: copies back to back, an event between each two, timed with CUDA events. ' +
      '"2 streams": each copy split in halves over two streams, forked from the first and joined back ' +
      'before the next copy (fork and join timed too), so two copy engines overlap their fixed per-copy cost.',
    '',
    `**Pinned pool ≥ 1 MiB at ≥ ${PINNED_TARGET * 100} % of the limit, one stream (how a batch is copied): ` +
      `${r.pinnedTargetMet ? 'met' : 'NOT met'}; split over 2 streams: ${r.splitTargetMet ? 'met' : 'NOT met'}.**`,
    '',
    '| size | source | streams | copies | GB/s | of limit |',
    '| ---: | --- | ---: | ---: | ---: | ---: |',
    ...r.bandwidth.map((b) => `| ${size(b.bytes)} | ${b.source} | ${b.streams} | ${b.iterations} | ${fmt(b.gbPerSecond, 1)} | ${fmt(b.fractionOfLimit * 100, 0)} % |`),
    '',
    '## Large caller buffers: staged through the pool vs registered',
    '',
    'A pageable buffer the server did not allocate (a JS ArrayBuffer, say) reaching the device, each copy timed end ' +
      'to end on the host clock and synchronised: "staged-through-pool" memcpy\'s it into a pinned pool block and ' +
      'copies that (what a batch does today); "registered-per-copy" cudaHostRegister\'s it, copies, and unregisters.',
    '',
    '| size | path | copies | GB/s | ms per copy |',
    '| ---: | --- | ---: | ---: | ---: |',
    ...r.callerBuffers.map((c) => `| ${size(c.bytes)} | ${c.source} | ${c.iterations} | ${fmt(c.gbPerSecond, 1)} | ${fmt(c.msPerCopy, 2)} |`),
    '',
    '## Served by infernode over HTTP: KIND_GPU vs KIND_CPU',
    '',
    `Each row: ${r.durationMs / 1000} s after 1 s of warm-up, closed loop, KServe binary requests; load generator and server in their own processes.`,
    '',
    ...MODELS.map((m) => `- \`${m.name}\`: ${labels.get(m.name)}`),
    '',
    '| server | model | instance kind | concurrency | req/s | p50 ms | p99 ms | errors |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...r.serving.map((s) => `| ${s.server} | ${s.model} | ${s.kind} | ${s.concurrency} | ${fmt(s.requestsPerSecond)} | ` +
      `${fmt(s.p50Us / 1000, 2)} | ${fmt(s.p99Us / 1000, 2)} | ${s.errors} |`),
    '',
    ...peerComparison(r.serving),
    '## Not run',
    '',
    ...(r.notRun.length > 0 ? r.notRun.map((n) => `- ${n.what}: ${n.reason}`) : ['Nothing: every row above ran.']),
    '',
  ].join('\n');
}
