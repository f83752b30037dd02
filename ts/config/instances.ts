/**
 * How many instances a model's instance groups make, in which order, and where each runs, as
 * Triton's backend_model.cc makes them: group after group, and within a group for each of its
 * `count` one instance on each GPU a KIND_GPU group lists (count-major: GPUs 0, 1, 0, 1 for count
 * 2 on gpus [0, 1]), or one instance for any other kind; instance c of group g is named `g_c` on
 * every GPU. Warm-up (every instance), JS models and the ONNX loader count with these;
 * cpp/napi/config_from_js.cc counts the same way for the native scheduler.
 */
import { invalidArg } from '../errors';
import type { NormalizedInstanceGroup } from './normalize';

type Group = Pick<NormalizedInstanceGroup, 'count' | 'kind' | 'gpus'>;

/** The GPU of each instance of `group`, in Triton's order, or null for an instance with no GPU of its own. */
export function instanceDevices(group: Group): (number | null)[] {
  const gpus = group.kind === 'KIND_GPU' && group.gpus && group.gpus.length > 0 ? group.gpus : [null];
  return Array.from({ length: group.count }, () => gpus).flat();
}

/** One instance: its name (Triton's `<group>_<c>`), its group's kind and its GPU (or null). */
export interface InstanceInfo {
  name: string;
  kind: string;
  device: number | null;
}

/** Each instance of `groups`, in order. */
export function instancesOf(model: string, groups: readonly (Group & { name?: string })[]): InstanceInfo[] {
  return groups.flatMap((g, i) => {
    const devices = instanceDevices(g);
    const perCount = devices.length / Math.max(1, g.count);  // GPUs per c (1 off the GPU)
    return devices.map((device, k) => ({ name: `${g.name ?? `${model}_${i}`}_${Math.floor(k / perCount)}`, kind: g.kind, device }));
  });
}

/** How many instances `groups` make together. */
export function instanceTotal(groups: readonly Group[]): number {
  return groups.reduce((n, g) => n + instanceDevices(g).length, 0);
}

/** A group with its kind resolved; `fromAuto` when KIND_AUTO put it on the GPU. */
export interface PlacedGroup {
  group: NormalizedInstanceGroup & { kind: 'KIND_CPU' | 'KIND_GPU'; gpus: number[] };
  fromAuto: boolean;
}

const CPU_HINT = 'use kind KIND_AUTO (the GPU when there is one, else the CPU) or KIND_CPU';

/**
 * The groups as Triton resolves them before a model loads (core's model_config_utils.cc,
 * NormalizeInstanceGroup then ValidateInstanceGroup), for every engine, on a machine with
 * `deviceCount` GPUs:
 * - KIND_AUTO runs on the GPU unless there is none or one it lists is not there; then on the CPU.
 * - KIND_GPU listing no GPU gets every GPU present; with none present, listing one that is not
 *   there, or with an addon built without CUDA (`cudaCompiled` false: Triton's build without GPU
 *   support), the load fails with Triton's text (and what to do instead).
 * `fromAuto` lets an engine that finds it cannot use the GPU after all (ONNX Runtime without its
 * CUDA provider) run a KIND_AUTO group on the CPU, which KIND_GPU never does.
 */
export function placeInstanceGroups(model: string, groups: readonly NormalizedInstanceGroup[], deviceCount: number,
  cudaCompiled = true): PlacedGroup[] {
  const present = Array.from({ length: deviceCount }, (_, i) => i);
  return groups.map((g, i) => {
    const name = g.name ?? `${model}_${i}`;
    const listed = g.gpus ?? [];
    const cpu = (): PlacedGroup => ({ group: { ...g, kind: 'KIND_CPU', gpus: [] }, fromAuto: false });
    if (g.kind === 'KIND_CPU') return cpu();
    if (g.kind === 'KIND_AUTO' && (deviceCount === 0 || listed.some((id) => id >= deviceCount))) return cpu();
    if (!cudaCompiled) {
      throw invalidArg(`instance group ${name} of model ${model} has kind KIND_GPU but server does not support GPUs ` +
        `(this build of infernode's addon has no CUDA: use the prebuilt addon, or rebuild with nvcc on PATH; docs/gpu.md); ${CPU_HINT}`);
    }
    if (deviceCount === 0) {
      throw invalidArg(`instance group ${name} of model ${model} has kind KIND_GPU but no GPUs are available ` +
        `(this machine has no usable CUDA device); ${CPU_HINT}`);
    }
    const missing = listed.find((id) => id >= deviceCount);
    if (missing !== undefined) {
      // CUDA 13 sees no device below compute capability 7.5; Triton's text names its own minimum.
      throw invalidArg(`instance group ${name} of model ${model} specifies invalid or unsupported gpu id ${missing}. ` +
        `GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: ${present.join(', ')}`);
    }
    return { group: { ...g, kind: 'KIND_GPU', gpus: listed.length > 0 ? [...listed] : present }, fromAuto: g.kind === 'KIND_AUTO' };
  });
}
