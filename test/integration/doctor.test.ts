/**
 * `infernode doctor` as a process: it names the addon it loaded, the ONNX Runtime library with
 * its real version and providers, exits 0 when both load, and exits 1 with the fix when ONNX
 * Runtime cannot be found. Also the directory of links that joins ONNX Runtime's library with
 * GPU providers installed by another package (ts/engines/ort-library.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readlinkSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureLib, LIB } from './lib-build';
import { joinProviders } from '../../ts/engines/ort-library';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ortPaths = require('../../scripts/ort-paths.js') as { runtimeLibrary(): { source: string; library: string } | null };

const MAIN = path.join(LIB, 'cli', 'main.js');

beforeAll(() => {
  ensureLib();
}, 120_000);

function doctor(args: string[], env: NodeJS.ProcessEnv = process.env): { status: number | null; stdout: string } {
  const r = spawnSync(process.execPath, [MAIN, 'doctor', ...args], { encoding: 'utf8', timeout: 60_000, env });
  return { status: r.status, stdout: r.stdout };
}

describe('infernode doctor', () => {
  test('reports the loaded addon and the ONNX Runtime it opened, and exits 0', () => {
    const { status, stdout } = doctor(['--json']);
    expect(status).toBe(0);
    const report = JSON.parse(stdout);
    expect(report.addon.ok).toBe(true);
    expect(['prebuild', 'source build']).toContain(report.addon.kind);
    expect(typeof report.addon.cudaDevices).toBe('number');
    const expected = ortPaths.runtimeLibrary();
    expect(report.onnxRuntime).toMatchObject({ ok: true, source: expected?.source, library: expected?.library });
    expect(report.onnxRuntime.version).toMatch(/^1\.\d+\.\d+$/);
    expect(report.onnxRuntime.providers).toContain('CPUExecutionProvider');
  });

  test('the human-readable report says the same', () => {
    const { status, stdout } = doctor([]);
    expect(status).toBe(0);
    expect(stdout).toMatch(/^addon: (prebuild|source build) \//m);
    expect(stdout).toMatch(/^ONNX Runtime: 1\.\d+\.\d+ from /m);
    expect(stdout).toContain('providers it knows: CPUExecutionProvider');
  });

  test('a wrong ONNXRUNTIME_ROOT exits 1 naming the library it tried and what to do', () => {
    const root = path.join(os.tmpdir(), 'infernode-doctor-no-ort');
    const { status, stdout } = doctor([], { ...process.env, ONNXRUNTIME_ROOT: root });
    expect(status).toBe(1);
    expect(stdout).toContain(`ONNX Runtime: NOT LOADED (cannot load ONNX Runtime from '${root}/lib/libonnxruntime.so'`);
    expect(stdout).toContain('ONNXRUNTIME_ROOT must be a directory whose lib/ holds libonnxruntime.so');
  });
});

describe('joining ONNX Runtime with providers from another package', () => {
  let work: string;
  beforeEach(() => {
    work = mkdtempSync(path.join(os.tmpdir(), 'infernode-ortlinks-'));
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  function fakeProviders(): string {
    const dir = path.join(work, 'gpu');
    mkdirSync(dir);
    for (const name of ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so']) writeFileSync(path.join(dir, name), '');
    return dir;
  }

  test('links the library and each provider present, and reuses the directory', () => {
    const library = ortPaths.runtimeLibrary()!.library;
    const providers = fakeProviders();
    const cache = path.join(work, 'cache');
    mkdirSync(cache);
    const opened = joinProviders(library, providers, cache);
    const dir = path.dirname(opened);
    expect(readlinkSync(opened)).toBe(realpathSync(library));
    expect(readlinkSync(path.join(dir, 'libonnxruntime_providers_cuda.so'))).toBe(path.join(providers, 'libonnxruntime_providers_cuda.so'));
    expect(() => readlinkSync(path.join(dir, 'libonnxruntime_providers_tensorrt.so'))).toThrow();  // not in the package
    expect(joinProviders(library, providers, cache)).toBe(opened);

    // ONNX Runtime opens through the links (another process: the runtime is one per process).
    const probe = `const {native}=require(${JSON.stringify(path.join(LIB, 'native.js'))});` +
      `process.stdout.write(native().onnxRuntimeInfo(${JSON.stringify(opened)}).version)`;
    const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^1\.\d+\.\d+$/);
  });

  test('a directory in the way that links elsewhere is refused, not used', () => {
    const library = ortPaths.runtimeLibrary()!.library;
    const providers = fakeProviders();
    const cache = path.join(work, 'cache');
    mkdirSync(cache);
    const dir = path.dirname(joinProviders(library, providers, cache));
    rmSync(path.join(dir, 'libonnxruntime.so'));
    symlinkSync('/dev/null', path.join(dir, 'libonnxruntime.so'));
    expect(() => joinProviders(library, providers, cache)).toThrow(/exists and does not link .* remove it/);
  });
});
