/**
 * The span-copy kernel (cuda/span_copy.cu) through DeviceStream::CopySpans on a real GPU, against
 * memcpy on the host: test/gpu/fixtures/span_copy_check.cu, built here with nvcc, gathers and
 * scatters spans of 0 to 1 MiB + 3 bytes at every source x destination misalignment 0..15, 1000
 * spans at once (several launches), zero-byte spans and counts of 0, and checks guard bytes around
 * every destination. Skipped, with a line saying why, without a CUDA device or without nvcc.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { native } from '../../ts/native';

const root = path.join(__dirname, '../..');
const SOURCES = [
  'test/gpu/fixtures/span_copy_check.cu', 'cuda/span_copy.cu', 'cuda/device_stream.cu', 'cuda/half_cast.cu',
  'cuda/cuda_host.cu', 'cpp/memory/device_buffer.cc', 'cpp/memory/host_allocator.cc', 'cpp/core/datatype.cc',
];

function skipReason(): string | null {
  if (native().buildInfo().cudaDeviceCount === 0) return 'no CUDA device';
  if (spawnSync('nvcc', ['--version']).status !== 0) return 'nvcc is not on PATH (it builds test/gpu/fixtures/span_copy_check.cu)';
  return null;
}

const skipped = skipReason();
if (skipped) console.warn(`GPU suite skipped: ${skipped} (span-copy)`);
const gpuTest = skipped ? test.skip : test;

gpuTest('CopySpans gathers and scatters every size and misalignment as memcpy does, and nothing else', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-span-copy-'));
  try {
    const binary = path.join(dir, 'span_copy_check');
    const built = spawnSync('nvcc', ['-O2', '-std=c++17', '-Icpp', '-o', binary, ...SOURCES], { cwd: root, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`nvcc could not build the check: ${built.stderr}`);
    const ran = spawnSync(binary, [], { encoding: 'utf8', timeout: 300_000 });
    expect(ran.stdout).toContain('PASS: 0 failure(s)');
    expect(ran.stdout).not.toContain('FAIL');
    expect(ran.status).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 400_000);

// Runs everywhere, so jest shows the skip line above (it hides the output of a wholly skipped file).
test('the suite runs, or says why not', () => {
  expect(skipped === null || /no CUDA device|nvcc/.test(skipped)).toBe(true);
});
