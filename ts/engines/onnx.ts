/**
 * Loading ONNX models for the native ONNX Runtime engine: where the runtime library is, which
 * execution provider a model gets (TensorRT → CUDA → CPU, as its config asks and the host
 * allows, with a log line saying which), and the sessions, created off the event loop.
 */
import { availableParallelism } from 'node:os';
import { native, type OnnxLoadOptions, type OnnxModelHandle, type TensorRtLoadOptions } from '../native';
import { InferenceServerError } from '../errors';

import { locateOnnxRuntime, missingOnnxRuntimeHint, GPU_PROVIDERS_PACKAGE, GPU_PROVIDERS_VERSION } from './ort-library';

export type InstanceKind = 'KIND_CPU' | 'KIND_GPU' | 'KIND_AUTO';

export interface OnnxEngineRequest {
  modelName: string;
  modelPath: string;
  /** Sessions on the CPU. */
  instanceCount: number;
  kind: InstanceKind;
  /** On the GPU, one session per entry, on that GPU (ts/repository/loader.ts, onnxInstances). */
  gpuDevices?: number[];
  /** The TensorRT accelerator's parameters when the config asks for it. */
  tensorRt?: TensorRtLoadOptions;
  intraOpThreads?: number;
  interOpThreads?: number;
  /** ONNX Runtime session config entries (the model's `session.*` parameters). */
  sessionConfig?: Record<string, string>;
  /** Nice increment of the compute threads (instance threads, ONNX Runtime's pools). */
  computeThreadNice?: number;
  log?: (line: string) => void;
}

/**
 * Where infernode's session defaults differ from ONNX Runtime's, for a config that does not set
 * them (docs/repository.md, "Threads and session options"):
 * - intra-op threads: the CPUs this process may use, shared among the model's instances. ONNX
 *   Runtime's own default counts physical cores, and where it cannot read the topology (common
 *   in VMs) it takes half the logical CPUs: one thread on a 2-vCPU machine, which doubled the
 *   headline model's run time at concurrency 1 (bench/results/onnx.md). An explicit 0 still
 *   means ONNX Runtime's default.
 * - `session.intra_op.allow_spinning` "0": the workers share the cores with the event loop,
 *   and a worker spinning after a run takes the CPU the next request's parsing needs
 *   (measured 2.4× fewer requests/s at concurrency 1 with spinning on).
 */
export function onnxSessionDefaults(req: Pick<OnnxEngineRequest, 'instanceCount' | 'intraOpThreads' | 'sessionConfig'>,
  cpus = availableParallelism()): Pick<OnnxLoadOptions, 'intraOpThreads' | 'sessionConfig'> {
  return {
    intraOpThreads: req.intraOpThreads ?? Math.max(1, Math.floor(cpus / Math.max(1, req.instanceCount))),
    sessionConfig: { 'session.intra_op.allow_spinning': '0', ...req.sessionConfig },
  };
}

/** Loads the sessions with the best provider allowed; KIND_GPU without CUDA is a load error. */
export async function loadOnnxEngine(req: OnnxEngineRequest): Promise<OnnxModelHandle> {
  const base: OnnxLoadOptions = {
    ...onnxSessionDefaults(req), interOpThreads: req.interOpThreads, computeThreadNice: req.computeThreadNice,
  };
  const devices = req.gpuDevices ?? [];
  const gpuWanted = req.kind === 'KIND_GPU' || (req.kind === 'KIND_AUTO' && devices.length > 0 && native().buildInfo().cudaDeviceCount > 0);
  // On the GPU each session has its own device; CPU threads are shared among the sessions on the CPU.
  const gpu: OnnxLoadOptions = {
    ...base, ...onnxSessionDefaults({ ...req, instanceCount: Math.max(1, devices.length) }), deviceIds: devices.length > 0 ? devices : undefined,
  };
  const attempts: { name: string; count: number; options: OnnxLoadOptions }[] = [];
  if (gpuWanted && req.tensorRt) attempts.push({ name: 'TensorRT', count: devices.length, options: { ...gpu, useTensorRt: true, tensorRt: req.tensorRt } });
  if (gpuWanted) attempts.push({ name: 'CUDA', count: devices.length, options: { ...gpu, useCuda: true } });
  if (req.kind !== 'KIND_GPU') attempts.push({ name: 'CPU', count: req.instanceCount, options: base });
  const log = req.log ?? ((line: string) => console.log(line));
  const location = locateOnnxRuntime();
  if (!location) throw new InferenceServerError('UNAVAILABLE', `model '${req.modelName}' is an ONNX model, but ${missingOnnxRuntimeHint()}`);
  const library = location.openPath;
  let lastError: unknown;
  for (const attempt of attempts) {
    try {
      const handle = await native().loadOnnxModel(library, req.modelPath, Math.max(1, attempt.count || req.instanceCount), attempt.options);
      if (attempt !== attempts[0]) log(`infernode: model '${req.modelName}' runs on ${handle.provider} (${attempts[0].name} unavailable)`);
      return handle;
    } catch (err) {
      lastError = err;
      // Only a missing provider falls back; a broken model fails at once.
      if (!(err instanceof InferenceServerError) || err.code !== 'UNAVAILABLE') throw err;
    }
  }
  if (req.kind === 'KIND_GPU') {
    throw new InferenceServerError('UNAVAILABLE', `model '${req.modelName}' asks for KIND_GPU instances, but no CUDA ` +
      `execution provider could be used: ${(lastError as Error)?.message ?? 'no CUDA device'}. ${gpuHint()}`);
  }
  throw lastError;
}

/** What to do when KIND_GPU cannot be served: which piece is missing on this machine. */
function gpuHint(): string {
  const cpuFallback = 'Use kind KIND_AUTO (GPU when usable, else CPU) or KIND_CPU to run it on the CPU';
  if (native().buildInfo().cudaDeviceCount === 0) {
    return `${cpuFallback}: this machine has no usable CUDA device.`;
  }
  const providers = locateOnnxRuntime()?.gpuProviders;
  const install = providers ? `the CUDA provider in ${providers} is there` : `install ONNX Runtime's CUDA provider (npm install ${GPU_PROVIDERS_PACKAGE}@${GPU_PROVIDERS_VERSION})`;
  return `${cpuFallback}, or ${install}; it needs cuDNN 9 and cuBLAS on LD_LIBRARY_PATH (docs/gpu.md, \`npx infernode doctor\`).`;
}
