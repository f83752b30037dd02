/**
 * Where instances run (ts/config/instances.ts, ts/repository/loader.ts onnxSessionGroups): Triton's
 * `count` instances on each GPU a KIND_GPU group lists, every GPU when it lists none, GPU ids past
 * the devices present and KIND_GPU without a GPU refused with Triton's texts, KIND_AUTO falling
 * back to the CPU, groups of different kinds placed one by one.
 */
import type { NormalizedInstanceGroup } from '../../ts/config/normalize';
import { instanceDevices, instanceTotal, instancesOf, placeInstanceGroups, type PlacedGroup } from '../../ts/config/instances';
import { onnxSessionGroups } from '../../ts/repository/loader';

const group = (g: Partial<NormalizedInstanceGroup>): NormalizedInstanceGroup => ({ name: 'g', kind: 'KIND_GPU', count: 1, gpus: [], ...g });

describe('instanceDevices', () => {
  test('KIND_GPU: count instances on each listed GPU, count-major as Triton makes them (for each c, each GPU)', () => {
    expect(instanceDevices(group({ count: 2, gpus: [1, 0] }))).toEqual([1, 0, 1, 0]);
    expect(instanceTotal([group({ count: 2, gpus: [0, 1] }), group({ count: 3, gpus: [2] })])).toBe(7);
  });

  test('other kinds, and KIND_GPU listing none: count instances of no GPU of their own', () => {
    expect(instanceDevices(group({ kind: 'KIND_CPU', count: 3 }))).toEqual([null, null, null]);
    expect(instanceDevices(group({ kind: 'KIND_AUTO', count: 2, gpus: [0, 1] }))).toEqual([null, null]);
    expect(instanceDevices(group({ count: 2 }))).toEqual([null, null]);
  });
});

const kinds = (placed: PlacedGroup[]): [string, number[], boolean][] => placed.map((p) => [p.group.kind, p.group.gpus, p.fromAuto]);

test('instancesOf: Triton\'s instance names <group>_<c>, shared by the GPUs of one c, group after group', () => {
  expect(instancesOf('m', [group({ name: 'a', count: 2, gpus: [0, 1] }), group({ kind: 'KIND_CPU', count: 2 })])).toEqual([
    { name: 'a_0', kind: 'KIND_GPU', device: 0 }, { name: 'a_0', kind: 'KIND_GPU', device: 1 },
    { name: 'a_1', kind: 'KIND_GPU', device: 0 }, { name: 'a_1', kind: 'KIND_GPU', device: 1 },
    { name: 'g_0', kind: 'KIND_CPU', device: null }, { name: 'g_1', kind: 'KIND_CPU', device: null },
  ]);
  expect(instancesOf('m', [{ kind: 'KIND_CPU', count: 1 }, { kind: 'KIND_CPU', count: 1 }]).map((i) => i.name)).toEqual(['m_0_0', 'm_1_0']);
});

describe('placeInstanceGroups (Triton\'s NormalizeInstanceGroup and ValidateInstanceGroup)', () => {

  test('KIND_GPU listing none gets every GPU present; listed ones are kept in their order', () => {
    expect(kinds(placeInstanceGroups('m', [group({ count: 2 }), group({ name: 'h', gpus: [1, 0] })], 3)))
      .toEqual([['KIND_GPU', [0, 1, 2], false], ['KIND_GPU', [1, 0], false]]);
  });

  test('KIND_AUTO: the GPU (every one, or those listed) when all it lists are there, else the CPU', () => {
    expect(kinds(placeInstanceGroups('m', [group({ kind: 'KIND_AUTO' }), group({ kind: 'KIND_AUTO', gpus: [1] })], 2)))
      .toEqual([['KIND_GPU', [0, 1], true], ['KIND_GPU', [1], true]]);
    expect(kinds(placeInstanceGroups('m', [group({ kind: 'KIND_AUTO', gpus: [0, 5] })], 2))).toEqual([['KIND_CPU', [], false]]);
    expect(kinds(placeInstanceGroups('m', [group({ kind: 'KIND_AUTO' })], 0))).toEqual([['KIND_CPU', [], false]]);
  });

  test('groups of different kinds are placed one by one, in order', () => {
    const placed = placeInstanceGroups('m', [group({ kind: 'KIND_CPU', count: 2 }), group({ name: 'h', count: 1 }), group({ kind: 'KIND_AUTO', gpus: [4] })], 1);
    expect(kinds(placed)).toEqual([['KIND_CPU', [], false], ['KIND_GPU', [0], false], ['KIND_CPU', [], false]]);
    expect(placed.map((p) => p.group.name)).toEqual(['g', 'h', 'g']);
  });

  test('KIND_GPU naming a GPU that is not there is refused with Triton\'s text', () => {
    expect(() => placeInstanceGroups('m', [group({ name: 'm_0', gpus: [0, 3] })], 2)).toThrow(
      'instance group m_0 of model m specifies invalid or unsupported gpu id 3. GPUs with at least the minimum ' +
      'required CUDA compute compatibility of 6.000000 are: 0, 1');
  });

  test('KIND_GPU without any GPU is refused with Triton\'s text and what to use instead', () => {
    for (const g of [group({ name: 'm_0' }), group({ name: 'm_0', gpus: [0] })]) {
      expect(() => placeInstanceGroups('m', [g], 0)).toThrow(
        'instance group m_0 of model m has kind KIND_GPU but no GPUs are available (this machine has no usable CUDA ' +
        'device); use kind KIND_AUTO (the GPU when there is one, else the CPU) or KIND_CPU');
    }
  });
});

test('KIND_GPU with an addon built without CUDA is refused with Triton\'s text for a server without GPU support', () => {
  expect(() => placeInstanceGroups('m', [group({ name: 'm_0' })], 0, false)).toThrow(
    'instance group m_0 of model m has kind KIND_GPU but server does not support GPUs (this build of infernode\'s addon has no CUDA');
  expect(kinds(placeInstanceGroups('m', [group({ kind: 'KIND_AUTO' })], 0, false))).toEqual([['KIND_CPU', [], false]]);
});

describe('onnxSessionGroups', () => {
  test('one entry per group: CPU sessions, or one session per instance on its GPU', () => {
    const { sessions } = onnxSessionGroups('m', [group({ count: 2, gpus: [0, 1] }), group({ name: 'c', kind: 'KIND_CPU', count: 3 }),
      group({ name: 'a', kind: 'KIND_AUTO', count: 1 })], 2);
    expect(sessions).toEqual([
      { name: 'g', count: 2, gpus: [0, 1, 0, 1], cpuFallback: false },
      { name: 'c', count: 3, gpus: null, cpuFallback: false },
      { name: 'a', count: 1, gpus: [0, 1], cpuFallback: true },
    ]);
  });

  test('without a GPU every KIND_AUTO and KIND_CPU group is CPU sessions', () => {
    const { sessions, placed } = onnxSessionGroups('m', [group({ kind: 'KIND_AUTO', count: 2 }), group({ kind: 'KIND_CPU', count: 4 })], 0);
    expect(sessions.map((s) => [s.count, s.gpus])).toEqual([[2, null], [4, null]]);
    expect(placed.map((p) => p.group.kind)).toEqual(['KIND_CPU', 'KIND_CPU']);
  });
});
