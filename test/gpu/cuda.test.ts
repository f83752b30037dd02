/**
 * CUDA paths that need no execution provider: device discovery and pinned batch buffers.
 * Without a CUDA device every test here is skipped, and the suite says so.
 */
import type { InferenceServerError } from '../../ts/errors';
import { native } from '../../ts/native';

const info = native().buildInfo();
const hasDevice = info.cudaDeviceCount > 0;
if (!hasDevice) {
  console.warn(`GPU suite skipped: no CUDA device (addon built ${info.cuda ? 'with' : 'without'} CUDA)`);
}
const gpuTest = hasDevice ? test : test.skip;

test('the addon reports its CUDA build and device count', () => {
  expect(typeof info.cuda).toBe('boolean');
  expect(info.cudaDeviceCount).toBeGreaterThanOrEqual(0);
  if (!info.cuda) expect(info.cudaDeviceCount).toBe(0);
});

gpuTest('batch buffers are pinned with cudaHostAlloc when a device exists', () => {
  expect(info.cuda).toBe(true);
  expect(info.hostAllocator).toBe('cuda-pinned');
});

describe('measureCopyBandwidth', () => {
  const codeOf = (fn: () => unknown): string | undefined => {
    try {
      fn();
      return undefined;
    } catch (err) {
      return (err as InferenceServerError).code;
    }
  };

  test('bad options are INVALID_ARG, on every build', () => {
    for (const options of [{ bytes: 0 }, { bytes: 1.5 }, { bytes: 2 ** 33 }, { bytes: 1024, iterations: 0 }, { bytes: 1024, pinned: 'yes' },
      { bytes: 1024, streams: 3 }, { bytes: 1024, streams: 0 }, { bytes: 1024, caller: 'pinned' }, { bytes: 1024, caller: 1 }]) {
      expect(codeOf(() => native().measureCopyBandwidth(options as never))).toBe('INVALID_ARG');
    }
  });

  (hasDevice ? test.skip : test)('without a CUDA device it answers UNAVAILABLE, saying why', () => {
    expect(() => native().measureCopyBandwidth({ bytes: 1024 })).toThrow(/no CUDA (device was found|support)/);
    expect(codeOf(() => native().measureCopyBandwidth({ bytes: 1024 }))).toBe('UNAVAILABLE');
  });

  gpuTest('pinned pool and pageable sources both move bytes, and name the device', () => {
    const pinned = native().measureCopyBandwidth({ bytes: 4 << 20, iterations: 5, pinned: true });
    const pageable = native().measureCopyBandwidth({ bytes: 4 << 20, iterations: 5, pinned: false });
    expect(pinned).toMatchObject({ bytes: 4 << 20, iterations: 5, source: 'pinned-pool', deviceId: 0 });
    expect(pageable.source).toBe('pageable');
    for (const r of [pinned, pageable]) {
      expect(r.gbPerSecond).toBeGreaterThan(0);
      expect(r.bestGbPerSecond).toBeGreaterThanOrEqual(r.gbPerSecond * 0.999);
      expect(r.deviceName.length).toBeGreaterThan(0);
    }
    expect(codeOf(() => native().measureCopyBandwidth({ bytes: 1024, deviceId: info.cudaDeviceCount }))).toBe('INVALID_ARG');
  });

  gpuTest('a caller buffer staged through the pool or registered per copy, odd sizes included', () => {
    for (const bytes of [1, 4097, (1 << 20) + 3]) {
      const staged = native().measureCopyBandwidth({ bytes, iterations: 3, caller: 'staged' });
      const registered = native().measureCopyBandwidth({ bytes, iterations: 3, caller: 'registered' });
      expect(staged).toMatchObject({ bytes, iterations: 3, source: 'staged-through-pool' });
      expect(registered).toMatchObject({ bytes, iterations: 3, source: 'registered-per-copy' });
      for (const r of [staged, registered]) expect(r.gbPerSecond).toBeGreaterThan(0);
    }
    expect(codeOf(() => native().measureCopyBandwidth({ bytes: 1024, caller: 'staged', streams: 2 }))).toBe('INVALID_ARG');
  });

  gpuTest('a copy split over two streams moves every byte, odd sizes included', () => {
    for (const bytes of [1, 4097, (1 << 20) + 3]) {
      const split = native().measureCopyBandwidth({ bytes, iterations: 3, pinned: true, streams: 2 });
      expect(split).toMatchObject({ bytes, iterations: 3, source: 'pinned-pool', streams: 2 });
      expect(split.gbPerSecond).toBeGreaterThan(0);
    }
  });
});
