/**
 * `infernode doctor`: what this installation loaded and what GPU use still needs, each missing
 * piece with the command that fixes it. Exit status 1 when the addon or ONNX Runtime cannot be
 * loaded (the server could not serve ONNX models), 0 otherwise; `--json` for scripts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { native, nativeAddonPath } from '../native';
import { GPU_PROVIDERS_PACKAGE, GPU_PROVIDERS_VERSION, locateOnnxRuntime, missingOnnxRuntimeHint } from '../engines/ort-library';

export interface DoctorReport {
  node: { version: string; napi: string; platform: string; glibc: string | null };
  addon: { ok: boolean; path?: string; kind?: 'prebuild' | 'source build'; cuda?: boolean; cudaDevices?: number; error?: string };
  onnxRuntime: { ok: boolean; source?: string; library?: string; version?: string; providers?: string[]; error?: string };
  gpu: { cudaProvider: string | null; missingLibraries: string[] };
  /** What to do, one line each (empty when nothing is missing). */
  fixes: string[];
}

/** Shared libraries ONNX Runtime's CUDA provider needs (readelf of the 0.4.9 provider, plus cuDNN it opens). */
const CUDA_PROVIDER_NEEDS = ['libcuda.so.1', 'libcudart.so.13', 'libcublas.so.13', 'libcublasLt.so.13', 'libcurand.so.10', 'libcudnn.so.9'];

export function diagnose(): DoctorReport {
  const report: DoctorReport = {
    node: {
      version: process.version, napi: process.versions.napi ?? 'unknown', platform: `${process.platform}-${process.arch}`,
      glibc: (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime ?? null,
    },
    addon: { ok: false }, onnxRuntime: { ok: false }, gpu: { cudaProvider: null, missingLibraries: [] }, fixes: [],
  };
  checkAddon(report);
  if (report.addon.ok) checkOnnxRuntime(report);
  if (report.addon.ok && report.onnxRuntime.ok) checkGpu(report);
  return report;
}

function checkAddon(report: DoctorReport): void {
  try {
    const file = nativeAddonPath();
    const info = native().buildInfo();
    report.addon = {
      ok: true, path: file, kind: file.includes(`${path.sep}prebuilds${path.sep}`) ? 'prebuild' : 'source build',
      cuda: info.cuda, cudaDevices: info.cudaDeviceCount,
    };
  } catch (err) {
    report.addon = { ok: false, error: (err as Error).message.split('\n')[0] };
    report.fixes.push('build the addon from source: npm rebuild infernode --build-from-source (needs cmake or python3+make, and a C++17 compiler)');
  }
}

function checkOnnxRuntime(report: DoctorReport): void {
  const location = locateOnnxRuntime();
  if (!location) {
    report.onnxRuntime = { ok: false, error: missingOnnxRuntimeHint() };
    report.fixes.push(`npm install @infernode/onnxruntime-${process.platform}-${process.arch} (or set ONNXRUNTIME_ROOT)`);
    return;
  }
  try {
    const info = native().onnxRuntimeInfo(location.openPath);
    report.onnxRuntime = { ok: true, source: location.source, library: location.library, ...info };
  } catch (err) {
    report.onnxRuntime = { ok: false, source: location.source, library: location.library, error: (err as Error).message };
    report.fixes.push(location.source === 'ONNXRUNTIME_ROOT'
      ? 'ONNXRUNTIME_ROOT must be a directory whose lib/ holds libonnxruntime.so (1.29 or newer): fix or unset it'
      : `reinstall ${location.source.replace(/@[^@]*$/, '')}: its library does not load`);
  }
}

function checkGpu(report: DoctorReport): void {
  const location = locateOnnxRuntime();
  report.gpu.cudaProvider = location?.gpuProviders ?? null;
  if (!report.addon.cuda) {
    report.fixes.push('for GPU models: this addon has no CUDA (a node-gyp build); use the prebuilt addon or build with nvcc on PATH');
    return;
  }
  if (!report.addon.cudaDevices) return;  // no GPU here: nothing more to do for the CPU
  if (!report.gpu.cudaProvider) {
    report.fixes.push(`for GPU models: npm install ${GPU_PROVIDERS_PACKAGE}@${GPU_PROVIDERS_VERSION} (ONNX Runtime's CUDA and TensorRT providers)`);
    return;
  }
  report.gpu.missingLibraries = CUDA_PROVIDER_NEEDS.filter((lib) => !findSharedLibrary(lib));
  if (report.gpu.missingLibraries.length > 0) {
    report.fixes.push(`for GPU models: put ${report.gpu.missingLibraries.join(', ')} on LD_LIBRARY_PATH ` +
      '(the CUDA 13 toolkit\'s lib64, or the nvidia-cublas and nvidia-cudnn-cu13 wheels\' lib/ folders)');
  }
}

/** Whether the dynamic loader would find `name`: LD_LIBRARY_PATH, then the ldconfig cache. */
function findSharedLibrary(name: string): boolean {
  const dirs = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  if (dirs.some((dir) => fs.existsSync(path.join(dir, name)))) return true;
  for (const ldconfig of ['/sbin/ldconfig', '/usr/sbin/ldconfig']) {
    try {
      return execFileSync(ldconfig, ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes(`${name} `);
    } catch {
      // try the next location
    }
  }
  return false;
}

export function formatReport(r: DoctorReport): string {
  const lines = [`Node.js ${r.node.version} (Node-API ${r.node.napi}) on ${r.node.platform}${r.node.glibc ? `, glibc ${r.node.glibc}` : ''}`];
  lines.push(r.addon.ok
    ? `addon: ${r.addon.kind} ${r.addon.path}\n  CUDA compiled in: ${r.addon.cuda ? 'yes' : 'no'}; CUDA devices: ${r.addon.cudaDevices}`
    : `addon: NOT LOADED (${r.addon.error})`);
  if (r.onnxRuntime.ok) {
    lines.push(`ONNX Runtime: ${r.onnxRuntime.version} from ${r.onnxRuntime.source}\n  library: ${r.onnxRuntime.library}\n` +
      `  providers it knows: ${r.onnxRuntime.providers?.join(', ')}`);
  } else if (r.addon.ok) {
    lines.push(`ONNX Runtime: NOT LOADED (${r.onnxRuntime.error})`);
  }
  if (r.addon.ok && r.onnxRuntime.ok) {
    lines.push(`CUDA provider: ${r.gpu.cudaProvider ?? `not installed (${GPU_PROVIDERS_PACKAGE})`}`);
    if (r.gpu.missingLibraries.length > 0) lines.push(`  libraries it needs, not found: ${r.gpu.missingLibraries.join(', ')}`);
  }
  lines.push(r.fixes.length === 0 ? 'Nothing missing.' : `To do:\n${r.fixes.map((f) => `  - ${f}`).join('\n')}`);
  return lines.join('\n');
}

export function addDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('show the addon, ONNX Runtime and GPU pieces this installation uses, and what is missing')
    .option('--json', 'print the report as JSON')
    .action((options: { json?: boolean }) => {
      const report = diagnose();
      console.log(options.json ? JSON.stringify(report, null, 2) : formatReport(report));
      process.exitCode = report.addon.ok && report.onnxRuntime.ok ? 0 : 1;
    });
}
