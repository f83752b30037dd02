/**
 * Two GPU model instances' streams (two DeviceStream::Create(0)) run at the same time:
 * test/gpu/fixtures/stream_overlap_check.cu, built here with nvcc, spins a kernel on one stream
 * until a kernel on the other sets a flag in device memory (each spin bounded by clock64() and
 * recording whether it ran out), with fresh streams, after each stream has allocated from the
 * stream-ordered pool and copied to the device, and with a block freed behind a running kernel;
 * a control on one stream must run out. No wall-clock assertion: the check is the flags. Skipped,
 * with a line saying why, without a CUDA device or without nvcc.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { native } from '../../ts/native';

const root = path.join(__dirname, '../..');
const SOURCES = [
  'test/gpu/fixtures/stream_overlap_check.cu', 'cuda/device_stream.cu', 'cuda/span_copy.cu', 'cuda/half_cast.cu',
  'cuda/cuda_host.cu', 'cpp/memory/device_buffer.cc', 'cpp/memory/host_allocator.cc', 'cpp/core/datatype.cc',
];

function skipReason(): string | null {
  if (native().buildInfo().cudaDeviceCount === 0) return 'no CUDA device';
  if (spawnSync('nvcc', ['--version']).status !== 0) return 'nvcc is not on PATH (it builds test/gpu/fixtures/stream_overlap_check.cu)';
  return null;
}

const skipped = skipReason();
if (skipped) console.warn(`GPU suite skipped: ${skipped} (streams)`);
const gpuTest = skipped ? test.skip : test;

gpuTest('two instances\' streams do not serialise, before or after pool allocations and copies', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-streams-'));
  try {
    const binary = path.join(dir, 'stream_overlap_check');
    const built = spawnSync('nvcc', ['-O2', '-std=c++17', '-Icpp', '-o', binary, ...SOURCES], { cwd: root, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`nvcc could not build the check: ${built.stderr}`);
    const ran = spawnSync(binary, [], { encoding: 'utf8', timeout: 120_000 });
    expect(ran.stdout).toContain('PASS: 0 failure(s)');
    expect(ran.stdout).not.toContain('FAIL');
    expect(ran.status).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 200_000);

// Runs everywhere, so jest shows the skip line above (it hides the output of a wholly skipped file).
test('the suite runs, or says why not', () => {
  expect(skipped === null || /no CUDA device|nvcc/.test(skipped)).toBe(true);
});
