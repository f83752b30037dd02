/**
 * CUDA paths that need no execution provider: device discovery and pinned batch buffers.
 * Without a CUDA device every test here is skipped, and the suite says so.
 */
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
