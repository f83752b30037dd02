/**
 * Loading ONNX models for the native ONNX Runtime engine: where the runtime library is, which
 * execution provider a model gets (TensorRT → CUDA → CPU, as its config asks and the host
 * allows, with a log line saying which), and the sessions, created off the event loop.
 */
import { native, type OnnxLoadOptions, type OnnxModelHandle, type TensorRtLoadOptions } from '../native';
import { InferenceServerError } from '../errors';

import { locateOnnxRuntime, missingOnnxRuntimeHint, GPU_PROVIDERS_PACKAGE, GPU_PROVIDERS_VERSION } from './ort-library';

export type InstanceKind = 'KIND_CPU' | 'KIND_GPU' | 'KIND_AUTO';

export interface OnnxEngineRequest {
  modelName: string;
  modelPath: string;
  instanceCount: number;
  kind: InstanceKind;
  deviceId?: number;
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

/** Loads the sessions with the best provider allowed; KIND_GPU without CUDA is a load error. */
export async function loadOnnxEngine(req: OnnxEngineRequest): Promise<OnnxModelHandle> {
  const base: OnnxLoadOptions = {
    intraOpThreads: req.intraOpThreads, interOpThreads: req.interOpThreads, deviceId: req.deviceId ?? 0,
    sessionConfig: req.sessionConfig, computeThreadNice: req.computeThreadNice,
  };
  const gpuWanted = req.kind === 'KIND_GPU' || (req.kind === 'KIND_AUTO' && native().buildInfo().cudaDeviceCount > 0);
  const attempts: { name: string; options: OnnxLoadOptions }[] = [];
  if (gpuWanted && req.tensorRt) attempts.push({ name: 'TensorRT', options: { ...base, useTensorRt: true, tensorRt: req.tensorRt } });
  if (gpuWanted) attempts.push({ name: 'CUDA', options: { ...base, useCuda: true } });
  if (req.kind !== 'KIND_GPU') attempts.push({ name: 'CPU', options: base });
  const log = req.log ?? ((line: string) => console.log(line));
  const location = locateOnnxRuntime();
  if (!location) throw new InferenceServerError('UNAVAILABLE', `model '${req.modelName}' is an ONNX model, but ${missingOnnxRuntimeHint()}`);
  const library = location.openPath;
  let lastError: unknown;
  for (const attempt of attempts) {
    try {
      const handle = await native().loadOnnxModel(library, req.modelPath, req.instanceCount, attempt.options);
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
