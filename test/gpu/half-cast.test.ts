/**
 * The FP32 <-> FP16 / BF16 cast kernels (cuda/half_cast.cu) on a real GPU against the host
 * conversion (cpp/core/half_float.cc): test/gpu/fixtures/half_cast_check.cu, built here with
 * nvcc, checks every FP16 and BF16 pattern, all 2^32 FP32 patterns, odd counts and a count of 0,
 * and the session's sequence through DeviceStream (copy, cast, cast back, copy, timed by its
 * events). Skipped, with a line saying why, without a CUDA device or without nvcc.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { native } from '../../ts/native';

const root = path.join(__dirname, '../..');
const SOURCES = [
  'test/gpu/fixtures/half_cast_check.cu', 'cuda/half_cast.cu', 'cuda/device_stream.cu', 'cuda/span_copy.cu',
  'cuda/cuda_host.cu', 'cpp/memory/device_buffer.cc', 'cpp/memory/host_allocator.cc', 'cpp/core/half_float.cc', 'cpp/core/datatype.cc',
];

function skipReason(): string | null {
  if (native().buildInfo().cudaDeviceCount === 0) return 'no CUDA device';
  if (spawnSync('nvcc', ['--version']).status !== 0) return 'nvcc is not on PATH (it builds test/gpu/fixtures/half_cast_check.cu)';
  return null;
}

const skipped = skipReason();
if (skipped) console.warn(`GPU suite skipped: ${skipped} (half-cast)`);
const gpuTest = skipped ? test.skip : test;

gpuTest('the cast kernels give the host conversion\'s bits for every input, at any count', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-half-cast-'));
  try {
    const binary = path.join(dir, 'half_cast_check');
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
