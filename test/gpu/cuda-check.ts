/**
 * The harness of the GPU suites that check kernels with a CUDA program of their own
 * (test/gpu/fixtures/*_check.cu): builds it with nvcc together with the project's sources that
 * DeviceStream needs, runs it, and expects its "PASS: 0 failure(s)" line and exit status 0.
 * Without a CUDA device or without nvcc the check is skipped with a line saying why.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { native } from '../../ts/native';

const root = path.join(__dirname, '../..');

/** What every check links: DeviceStream and the kernels it launches. */
const DEVICE_STREAM_SOURCES = [
  'cuda/device_stream.cu', 'cuda/span_copy.cu', 'cuda/half_cast.cu', 'cuda/cuda_host.cu',
  'cpp/memory/device_buffer.cc', 'cpp/memory/host_allocator.cc', 'cpp/core/datatype.cc',
];

export interface CudaCheck {
  /** The suite's short name in the skip line. */
  suite: string;
  /** test/gpu/fixtures/<fixture>.cu */
  fixture: string;
  /** Sources it needs beyond DeviceStream's. */
  extraSources?: string[];
  /** The test's title. */
  title: string;
  /** How long the program may run. */
  runTimeoutMs: number;
}

function skipReason(fixture: string): string | null {
  if (native().buildInfo().cudaDeviceCount === 0) return 'no CUDA device';
  if (spawnSync('nvcc', ['--version']).status !== 0) return `nvcc is not on PATH (it builds test/gpu/fixtures/${fixture}.cu)`;
  return null;
}

/** Declares the check's test, and one that runs everywhere so jest shows the skip line. */
export function cudaCheckSuite(check: CudaCheck): void {
  const skipped = skipReason(check.fixture);
  if (skipped) console.warn(`GPU suite skipped: ${skipped} (${check.suite})`);
  (skipped ? test.skip : test)(check.title, () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), `infernode-${check.suite}-`));
    try {
      const binary = path.join(dir, check.fixture);
      const sources = [`test/gpu/fixtures/${check.fixture}.cu`, ...DEVICE_STREAM_SOURCES, ...(check.extraSources ?? [])];
      const built = spawnSync('nvcc', ['-O2', '-std=c++17', '-Icpp', '-o', binary, ...sources], { cwd: root, encoding: 'utf8' });
      if (built.status !== 0) throw new Error(`nvcc could not build the check: ${built.stderr}`);
      const ran = spawnSync(binary, [], { encoding: 'utf8', timeout: check.runTimeoutMs });
      expect(ran.stdout).toContain('PASS: 0 failure(s)');
      expect(ran.stdout).not.toContain('FAIL');
      expect(ran.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, check.runTimeoutMs + 100_000);

  // Jest hides the output of a wholly skipped file: this test keeps the skip line visible.
  test('the suite runs, or says why not', () => {
    expect(skipped === null || /no CUDA device|nvcc/.test(skipped)).toBe(true);
  });
}
