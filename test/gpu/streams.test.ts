/**
 * Two GPU model instances' streams (two DeviceStream::Create(0)) run at the same time:
 * test/gpu/fixtures/stream_overlap_check.cu, built here with nvcc, spins a kernel on one stream
 * until a kernel on the other sets a flag in device memory (each spin bounded by clock64() and
 * recording whether it ran out), with fresh streams, after each stream has allocated from the
 * stream-ordered pool and copied to the device, and with a block freed behind a running kernel;
 * a control on one stream must run out. No wall-clock assertion: the check is the flags. Skipped,
 * with a line saying why, without a CUDA device or without nvcc.
 */
import { cudaCheckSuite } from './cuda-check';

cudaCheckSuite({
  suite: 'streams',
  fixture: 'stream_overlap_check',
  title: 'two instances\' streams do not serialise, before or after pool allocations and copies',
  runTimeoutMs: 120_000,
});
