/**
 * Loading ONNX models for the native ONNX Runtime engine: where the runtime library is, which
 * execution provider a model gets (TensorRT → CUDA → CPU, as its config asks and the host
 * allows, with a log line saying which), and the sessions, created off the event loop.
 */
import { availableParallelism } from 'node:os';
import { native, type OnnxLoadOptions, type OnnxModelHandle, type TensorRtLoadOptions } from '../native';
import { InferenceServerError } from '../errors';

import { locateOnnxRuntime, missingOnnxRuntimeHint, GPU_PROVIDERS_PACKAGE, GPU_PROVIDERS_VERSION } from './ort-library';

/**
 * One instance group's sessions: `count` on the CPU, or one per entry of `gpus`, on that GPU
 * (ts/repository/loader.ts, onnxSessionGroups). `cpuFallback`: KIND_AUTO put the group on the GPU,
 * so it runs on the CPU when no GPU provider can be used (KIND_GPU fails the load instead).
 */
export interface OnnxSessionGroup {
  name: string;
  count: number;
  gpus: number[] | null;
  cpuFallback: boolean;
}

export interface OnnxEngineRequest {
  modelName: string;
  modelPath: string;
  /** In the config's order: the native scheduler numbers instances group after group. */
  groups: OnnxSessionGroup[];
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

/** The loaded sessions: one handle per group, and the provider each group got ('CPU', 'CUDA', 'TensorRT'). */
export interface OnnxEngine {
  inputs: OnnxModelHandle['inputs'];
  outputs: OnnxModelHandle['outputs'];
  providers: string[];
  handles: object[];
  /**
   * Frees now the sessions no model took (a load that fails after they were created); handles a
   * model took are left to it. Without this they wait for V8's collector, which does not see
   * the memory and threads ONNX Runtime holds behind a handle, and may not run for a long time.
   */
  release(): void;
}

/** Frees the sessions of every handle no model took, for a load that failed. */
export function releaseOnnxHandles(handles: object[]): void {
  for (const handle of handles) native().releaseOnnxSessions(handle);
}

/**
 * Where infernode's session defaults differ from ONNX Runtime's, for a config that does not set
 * them (docs/repository.md, "Threads and session options"):
 * - intra-op threads: the CPUs this process may use, shared among the model's instances. ONNX
 *   Runtime's own default counts physical cores, and where it cannot read the topology (common
 *   in VMs) it takes half the logical CPUs: one thread on a 2-vCPU machine, which doubled the
 *   headline model's run time at concurrency 1 (bench/results/onnx.md). An explicit 0 still
 *   means ONNX Runtime's default.
 * - `session.intra_op.allow_spinning` "1", ONNX Runtime's own default, set here so the bench's
 *   engine ceiling reads it: after a run the workers spin briefly before they sleep, so while
 *   requests keep coming the next run finds them awake (and this VM's vCPUs not halted), and
 *   when they stop the spinning stops. It only takes CPU time nobody else wants because the
 *   pool runs at nice 19 (DEFAULT_COMPUTE_THREAD_NICE); before the compute threads were niced,
 *   spinning lost 2.4× at concurrency 1 on the 2-core bench machine, taking the core the event
 *   loop needed.
 */
export function onnxSessionDefaults(req: Pick<OnnxEngineRequest, 'intraOpThreads' | 'sessionConfig'> & { instanceCount: number },
  cpus = availableParallelism()): Pick<OnnxLoadOptions, 'intraOpThreads' | 'sessionConfig'> {
  return {
    intraOpThreads: req.intraOpThreads ?? Math.max(1, Math.floor(cpus / Math.max(1, req.instanceCount))),
    sessionConfig: { 'session.intra_op.allow_spinning': '1', ...req.sessionConfig },
  };
}

/**
 * Loads each group's sessions with the best provider allowed; a KIND_GPU group without a usable
 * provider is a load error. GPU groups load first: a KIND_AUTO group that falls back to the CPU
 * shares the CPU's threads with the CPU groups.
 */
export async function loadOnnxEngine(req: OnnxEngineRequest): Promise<OnnxEngine> {
  const location = locateOnnxRuntime();
  if (!location) throw new InferenceServerError('UNAVAILABLE', `model '${req.modelName}' is an ONNX model, but ${missingOnnxRuntimeHint()}`);
  const load = (count: number, options: OnnxLoadOptions): Promise<OnnxModelHandle> =>
    native().loadOnnxModel(location.openPath, req.modelPath, count, options);
  const base: OnnxLoadOptions = { interOpThreads: req.interOpThreads, computeThreadNice: req.computeThreadNice };
  const gpuSessions = req.groups.reduce((n, g) => n + (g.gpus?.length ?? 0), 0);
  const loaded: (OnnxModelHandle | undefined)[] = [];
  // The sessions of the groups loaded so far, freed when a later group fails.
  const held = (): object[] => loaded.flatMap((h) => (h ? [h.handle] : []));
  try {
    for (const [i, group] of req.groups.entries()) {
      if (!group.gpus) continue;
      loaded[i] = await loadGpuGroup(req, group, req.groups.length > 1, (options) => load(group.gpus!.length, {
        ...base, ...onnxSessionDefaults({ ...req, instanceCount: gpuSessions }), ...options, deviceIds: group.gpus!,
      }));
    }
    // Sessions on the CPU share its threads (onnxSessionDefaults).
    const cpuSessions = req.groups.reduce((n, g, i) => n + (loaded[i] ? 0 : g.count), 0);
    for (const [i, group] of req.groups.entries()) {
      if (loaded[i]) continue;
      loaded[i] = await load(group.count, { ...base, ...onnxSessionDefaults({ ...req, instanceCount: cpuSessions }) });
    }
  } catch (err) {
    releaseOnnxHandles(held());
    throw err;
  }
  const handles = loaded as OnnxModelHandle[];
  const release = (): void => releaseOnnxHandles(held());
  return {
    inputs: handles[0].inputs, outputs: handles[0].outputs, providers: handles.map((h) => h.provider), handles: handles.map((h) => h.handle),
    release,
  };
}

/**
 * A GPU group's sessions: TensorRT when asked for, else CUDA; undefined when neither can be used
 * and the group may run on the CPU (KIND_AUTO), with a log line saying so.
 */
async function loadGpuGroup(req: OnnxEngineRequest, group: OnnxSessionGroup, named: boolean,
  load: (options: OnnxLoadOptions) => Promise<OnnxModelHandle>): Promise<OnnxModelHandle | undefined> {
  const attempts: { name: string; options: OnnxLoadOptions }[] = [];
  if (req.tensorRt) attempts.push({ name: 'TensorRT', options: { useTensorRt: true, tensorRt: req.tensorRt } });
  attempts.push({ name: 'CUDA', options: { useCuda: true } });
  const log = req.log ?? ((line: string) => console.log(line));
  const who = named ? `model '${req.modelName}' instance group ${group.name}` : `model '${req.modelName}'`;
  let lastError: unknown;
  for (const attempt of attempts) {
    try {
      const handle = await load(attempt.options);
      if (attempt !== attempts[0]) log(`infernode: ${who} runs on ${handle.provider} (${attempts[0].name} unavailable)`);
      return handle;
    } catch (err) {
      lastError = err;
      // Only a missing provider falls back; a broken model fails at once.
      if (!(err instanceof InferenceServerError) || err.code !== 'UNAVAILABLE') throw err;
    }
  }
  if (group.cpuFallback) {
    log(`infernode: ${who} runs on CPU (${attempts[0].name} unavailable)`);
    return undefined;
  }
  throw new InferenceServerError('UNAVAILABLE', `model '${req.modelName}' asks for KIND_GPU instances, but no CUDA ` +
    `execution provider could be used: ${(lastError as Error)?.message ?? 'no CUDA device'}. ${gpuHint()}`);
}

/**
 * What to do when a GPU is there but KIND_GPU cannot be served: which piece is missing (without a
 * GPU the load fails earlier, ts/config/instances.ts).
 */
function gpuHint(): string {
  const cpuFallback = 'Use kind KIND_AUTO (GPU when usable, else CPU) or KIND_CPU to run it on the CPU';
  const providers = locateOnnxRuntime()?.gpuProviders;
  const install = providers ? `the CUDA provider in ${providers} is there` : `install ONNX Runtime's CUDA provider (npm install ${GPU_PROVIDERS_PACKAGE}@${GPU_PROVIDERS_VERSION})`;
  return `${cpuFallback}, or ${install}; it needs cuDNN 9 and cuBLAS on LD_LIBRARY_PATH (docs/gpu.md, \`npx infernode doctor\`).`;
}
