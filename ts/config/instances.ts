/**
 * How many instances a model's instance groups make and where each runs: Triton creates `count`
 * instances on each GPU a KIND_GPU group lists, and `count` instances for any other group.
 * Warm-up (every instance), JS models and the ONNX loader count with these;
 * cpp/napi/config_from_js.cc counts the same way for the native scheduler.
 */
import type { NormalizedInstanceGroup } from './normalize';

type Group = Pick<NormalizedInstanceGroup, 'count' | 'kind' | 'gpus'>;

/** The GPU of each instance of `group`, or null for an instance with no GPU of its own. */
export function instanceDevices(group: Group): (number | null)[] {
  const gpus = group.kind === 'KIND_GPU' && group.gpus && group.gpus.length > 0 ? group.gpus : [null];
  return gpus.flatMap((gpu) => Array.from({ length: group.count }, () => gpu));
}

/** How many instances `groups` make together. */
export function instanceTotal(groups: readonly Group[]): number {
  return groups.reduce((n, g) => n + instanceDevices(g).length, 0);
}
