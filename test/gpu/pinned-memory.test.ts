/**
 * The pinned host memory behind batch buffers: blocks are cudaHostAlloc'ed within the
 * process-wide budget (pinnedMemoryPoolByteSize), reused through each model's pool (hits after
 * the first misses), counted in Triton's nv_pinned_memory_pool_* gauges, and pageable once the
 * budget is spent, without failing a request. Skipped, visibly, without a CUDA device.
 */
import { native } from '../../ts/native';
import { NDArray } from '../../ts/tensor';
import { Triton } from '../../ts/triton';
import type { TritonConfig } from '../../ts/config/types';
import { identityModel } from '../../ts/tools/onnx';
import { TempRepo } from '../integration/repository/repo-helpers';

const hasDevice = native().buildInfo().cudaDeviceCount > 0;
if (!hasDevice) console.warn('GPU suite skipped: no CUDA device (pinned-memory)');
const gpuTest = hasDevice ? test : test.skip;

const DEFAULT_BUDGET = 256 * 1024 * 1024;

/**
 * A Triton serving an ONNX identity model of `width` FP32 values per row from a temporary
 * repository (ONNX batches are gathered into the model's pooled, pinned buffers).
 */
async function serveIdentity(name: string, width: number, config: TritonConfig): Promise<{ triton: Triton; repo: TempRepo }> {
  const repo = new TempRepo('pinned');
  repo.onnx(name, 1, identityModel('FP32', [width]));
  repo.config(name, `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninstance_group [ { kind: KIND_CPU } ]`);
  const triton = new Triton({ config: { exitOnError: false, ...config } });
  triton.useRepository({ repositories: [repo.root], log: () => undefined });
  await triton.run();
  return { triton, repo };
}

afterAll(() => {
  native().pinnedMemory(DEFAULT_BUDGET);
});

gpuTest('batch buffers are pinned and reused: misses first, then hits; the pinned bytes are counted', async () => {
  const { triton, repo } = await serveIdentity('id', 1024, {
    pinnedMemoryPoolByteSize: DEFAULT_BUDGET, allowHttp: false, allowGrpc: false, allowMetrics: false,
  });
  try {
    const before = native().pinnedMemory();
    expect(before.totalBytes).toBe(DEFAULT_BUDGET);
    for (let i = 0; i < 20; i++) {
      const out = await triton.infer('id', { INPUT0: new NDArray('FP32', [2, 1024], new Float32Array(2048).fill(i)) });
      expect((out.OUTPUT0.data as Float32Array)[2047]).toBe(i);
    }
    const memory = triton.model('id').stats().memory!;
    expect(memory.allocator).toBe('cuda-pinned');
    expect(memory.misses).toBeGreaterThan(0);
    expect(memory.hits).toBeGreaterThan(memory.misses);
    const after = native().pinnedMemory();
    expect(after.usedBytes).toBeGreaterThan(0);
    expect(after.usedBytes).toBeLessThanOrEqual(DEFAULT_BUDGET);
  } finally {
    await triton.stop();
    repo.cleanup();
  }
});

gpuTest('past the budget, blocks are pageable and requests still succeed', async () => {
  const { triton, repo } = await serveIdentity('big', 64 * 1024, {
    pinnedMemoryPoolByteSize: 0, allowHttp: false, allowGrpc: false, allowMetrics: false,
  });
  try {
    const fallbacks = native().pinnedMemory().pageableFallbacks;
    const out = await triton.infer('big', { INPUT0: new NDArray('FP32', [4, 64 * 1024], new Float32Array(4 * 64 * 1024).fill(3)) });
    expect((out.OUTPUT0.data as Float32Array)[0]).toBe(3);
    expect(native().pinnedMemory().pageableFallbacks).toBeGreaterThan(fallbacks);
    expect(native().pinnedMemory().totalBytes).toBe(0);
  } finally {
    await triton.stop();
    repo.cleanup();
  }
});

gpuTest('the metrics port reports the pinned pool with Triton\'s names', async () => {
  const { triton, repo } = await serveIdentity('id', 16, {
    pinnedMemoryPoolByteSize: DEFAULT_BUDGET, httpPort: 0, allowGrpc: false, metricsPort: 0, metricsIntervalMs: 100,
  });
  try {
    const res = await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`);
    const text = await res.text();
    expect(text).toContain('# HELP nv_pinned_memory_pool_total_bytes Pinned memory pool total memory size, in bytes');
    expect(text).toMatch(new RegExp(`^nv_pinned_memory_pool_total_bytes ${DEFAULT_BUDGET}$`, 'm'));
    expect(text).toMatch(/^nv_pinned_memory_pool_used_bytes \d+$/m);
  } finally {
    await triton.stop();
    repo.cleanup();
  }
});
