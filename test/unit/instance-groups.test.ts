/**
 * Where instances run (ts/config/instances.ts, ts/repository/loader.ts onnxInstances): Triton's
 * `count` instances on each GPU a KIND_GPU group lists, every GPU when it lists none, GPU ids past
 * the devices present refused with Triton's text, KIND_AUTO falling back to the CPU.
 */
import type { NormalizedInstanceGroup } from '../../ts/config/normalize';
import { instanceDevices, instanceTotal } from '../../ts/config/instances';
import { onnxInstances } from '../../ts/repository/loader';

const group = (g: Partial<NormalizedInstanceGroup>): NormalizedInstanceGroup => ({ name: 'g', kind: 'KIND_GPU', count: 1, gpus: [], ...g });

describe('instanceDevices', () => {
  test('KIND_GPU: count instances on each listed GPU, in the order listed', () => {
    expect(instanceDevices(group({ count: 2, gpus: [1, 0] }))).toEqual([1, 1, 0, 0]);
    expect(instanceTotal([group({ count: 2, gpus: [0, 1] }), group({ count: 3, gpus: [2] })])).toBe(7);
  });

  test('other kinds, and KIND_GPU listing none: count instances of no GPU of their own', () => {
    expect(instanceDevices(group({ kind: 'KIND_CPU', count: 3 }))).toEqual([null, null, null]);
    expect(instanceDevices(group({ kind: 'KIND_AUTO', count: 2, gpus: [0, 1] }))).toEqual([null, null]);
    expect(instanceDevices(group({ count: 2 }))).toEqual([null, null]);
  });
});

describe('onnxInstances', () => {
  test('KIND_GPU groups on two GPUs: one session per instance on its GPU; the served groups list their GPUs', () => {
    const plan = onnxInstances('m', [group({ count: 2, gpus: [0, 1] }), group({ name: 'h', count: 1, gpus: [1] })], 2);
    expect(plan.gpuDevices).toEqual([0, 0, 1, 1, 1]);
    expect(plan.gpuGroups.map((g) => g.gpus)).toEqual([[0, 1], [1]]);
    expect(plan.cpuCount).toBe(3);
  });

  test('a KIND_GPU or KIND_AUTO group listing no GPU gets every GPU present', () => {
    expect(onnxInstances('m', [group({ count: 2 })], 3).gpuDevices).toEqual([0, 0, 1, 1, 2, 2]);
    const auto = onnxInstances('m', [group({ kind: 'KIND_AUTO' })], 2);
    expect(auto.gpuDevices).toEqual([0, 1]);
    expect(auto.gpuGroups[0]).toMatchObject({ kind: 'KIND_GPU', gpus: [0, 1] });
  });

  test('a KIND_GPU group naming a GPU that is not there is refused with Triton\'s text', () => {
    expect(() => onnxInstances('m', [group({ name: 'm_0', gpus: [0, 3] })], 2)).toThrow(
      'instance group m_0 of model m specifies invalid or unsupported gpu id 3. GPUs with at least the minimum ' +
      'required CUDA compute compatibility of 6.000000 are: 0, 1');
  });

  test('KIND_AUTO runs on the CPU when a listed GPU is not there or there is no GPU; KIND_CPU always', () => {
    expect(onnxInstances('m', [group({ kind: 'KIND_AUTO', count: 2, gpus: [5] })], 2)).toMatchObject({ gpuDevices: null, cpuCount: 2 });
    expect(onnxInstances('m', [group({ kind: 'KIND_AUTO', count: 2 })], 0)).toMatchObject({ gpuDevices: null, cpuCount: 2 });
    expect(onnxInstances('m', [group({ kind: 'KIND_CPU', count: 4 })], 2)).toMatchObject({ gpuDevices: null, cpuCount: 4 });
  });

  test('KIND_GPU without any GPU asks for none: the load then fails saying why (onnx-engine.test.ts)', () => {
    expect(onnxInstances('m', [group({ count: 2 })], 0)).toMatchObject({ gpuDevices: [], cpuCount: 2 });
  });
});
