/**
 * The FP32 <-> FP16 / BF16 cast kernels (cuda/half_cast.cu) on a real GPU against the host
 * conversion (cpp/core/half_float.cc): test/gpu/fixtures/half_cast_check.cu, built here with
 * nvcc, checks every FP16 and BF16 pattern, all 2^32 FP32 patterns, odd counts and a count of 0,
 * and the session's sequence through DeviceStream (copy, cast, cast back, copy, timed by its
 * events). Skipped, with a line saying why, without a CUDA device or without nvcc.
 */
import { cudaCheckSuite } from './cuda-check';

cudaCheckSuite({
  suite: 'half-cast',
  fixture: 'half_cast_check',
  extraSources: ['cpp/core/half_float.cc'],
  title: 'the cast kernels give the host conversion\'s bits for every input, at any count',
  runTimeoutMs: 300_000,
});
