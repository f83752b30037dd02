/**
 * The span-copy kernel (cuda/span_copy.cu) through DeviceStream::CopySpans on a real GPU, against
 * memcpy on the host: test/gpu/fixtures/span_copy_check.cu, built here with nvcc, gathers and
 * scatters spans of 0 to 1 MiB + 3 bytes at every source x destination misalignment 0..15, 1000
 * spans at once (several launches), zero-byte spans and counts of 0, and checks guard bytes around
 * every destination. Skipped, with a line saying why, without a CUDA device or without nvcc.
 */
import { cudaCheckSuite } from './cuda-check';

cudaCheckSuite({
  suite: 'span-copy',
  fixture: 'span_copy_check',
  title: 'CopySpans gathers and scatters every size and misalignment as memcpy does, and nothing else',
  runTimeoutMs: 300_000,
});
