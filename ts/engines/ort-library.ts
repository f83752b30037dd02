/**
 * Which ONNX Runtime library this process opens, and how the optional GPU execution providers
 * reach it.
 *
 * ONNX Runtime loads its CUDA and TensorRT providers from the directory of libonnxruntime.so
 * itself, but npm installs the CPU library (`@infernode/onnxruntime-linux-x64`) and the GPU
 * providers (`com.github.asus4.onnxruntime.linux-x64-gpu`) in two packages. When both are
 * installed, a per-user directory of symbolic links joins them (`~/.cache/infernode/ort-<key>/`:
 * the library plus the providers, no copy, no build) and the library is opened through it, so
 * ONNX Runtime finds the providers beside it. ONNXRUNTIME_ROOT is used as given.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ortPaths = require('../../scripts/ort-paths.js') as {
  runtimeLibrary(): { source: string; library: string } | null;
  missingLibraryHint(): string;
};

/**
 * The npm package with ONNX Runtime's CUDA/TensorRT providers, and the version built from the same
 * ONNX Runtime (1.29.0) as the CPU library; package.json names it as an optional peer dependency.
 */
export const GPU_PROVIDERS_PACKAGE = 'com.github.asus4.onnxruntime.linux-x64-gpu';
export const GPU_PROVIDERS_VERSION = '0.4.9';
const PROVIDER_LIBRARIES = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_tensorrt.so'];

export interface OnnxRuntimeLocation {
  /** Where the library comes from: ONNXRUNTIME_ROOT or the npm package (name@version). */
  source: string;
  /** The library as found. */
  library: string;
  /** The directory holding the CUDA provider, or null when none is installed. */
  gpuProviders: string | null;
  /** The path the process opens (through the provider directory when the providers are apart). */
  openPath: string;
}

let cached: { key: string; location: OnnxRuntimeLocation | null } | undefined;

/** The library and providers this process uses, or null when no ONNX Runtime is installed. */
export function locateOnnxRuntime(): OnnxRuntimeLocation | null {
  const found = ortPaths.runtimeLibrary();
  const key = `${process.env.ONNXRUNTIME_ROOT ?? ''}|${found?.library ?? ''}`;
  if (cached?.key === key) return cached.location;
  let location: OnnxRuntimeLocation | null = null;
  if (found) {
    const beside = path.dirname(found.library);
    const providersBeside = fs.existsSync(path.join(beside, 'libonnxruntime_providers_cuda.so'));
    const packaged = found.source === 'ONNXRUNTIME_ROOT' || providersBeside ? null : gpuProvidersPackageDir();
    location = packaged
      ? { ...found, gpuProviders: packaged, openPath: joinProviders(found.library, packaged) }
      : { ...found, gpuProviders: providersBeside ? beside : null, openPath: found.library };
  }
  cached = { key, location };
  return location;
}

/** The path to open for ONNX models; throws UNAVAILABLE-worthy text when none is installed. */
export function onnxRuntimeLibrary(): string {
  const location = locateOnnxRuntime();
  if (!location) throw new Error(ortPaths.missingLibraryHint());
  return location.openPath;
}

export function missingOnnxRuntimeHint(): string {
  return ortPaths.missingLibraryHint();
}

function gpuProvidersPackageDir(): string | null {
  try {
    const dir = path.join(path.dirname(require.resolve(`${GPU_PROVIDERS_PACKAGE}/package.json`, { paths: [path.join(__dirname, '..', '..')] })), 'Plugins', 'Linux', 'x64');
    return fs.existsSync(path.join(dir, 'libonnxruntime_providers_cuda.so')) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * A directory of links: libonnxruntime.so → `library`, each provider → `providersDir`. Made once
 * per (library, providers) pair and reused; built under a temporary name and renamed into place,
 * so processes starting together never see half of one.
 */
export function joinProviders(library: string, providersDir: string, base = linkCacheDir()): string {
  const targets = new Map<string, string>([['libonnxruntime.so', fs.realpathSync(library)]]);
  for (const name of PROVIDER_LIBRARIES) {
    const file = path.join(providersDir, name);
    if (fs.existsSync(file)) targets.set(name, fs.realpathSync(file));
  }
  const key = createHash('sha256').update([...targets.values()].join('\n')).digest('hex').slice(0, 16);
  const dir = path.join(base, `ort-${key}`);
  if (!linksMatch(dir, targets)) {
    const building = fs.mkdtempSync(path.join(base, 'ort-building-'));
    for (const [name, target] of targets) fs.symlinkSync(target, path.join(building, name));
    try {
      fs.renameSync(building, dir);
    } catch {
      fs.rmSync(building, { recursive: true, force: true });  // another process made it first
      if (!linksMatch(dir, targets)) throw new Error(`${dir} exists and does not link ${library} with ${providersDir}; remove it`);
    }
  }
  return path.join(dir, 'libonnxruntime.so');
}

function linksMatch(dir: string, targets: Map<string, string>): boolean {
  try {
    return [...targets].every(([name, target]) => fs.readlinkSync(path.join(dir, name)) === target);
  } catch {
    return false;
  }
}

/** INFERNODE_CACHE_DIR, else $XDG_CACHE_HOME/infernode or ~/.cache/infernode (mode 0700). */
function linkCacheDir(): string {
  const configured = process.env.INFERNODE_CACHE_DIR
    ?? path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'infernode');
  try {
    fs.mkdirSync(configured, { recursive: true, mode: 0o700 });
    fs.accessSync(configured, fs.constants.W_OK);
    return configured;
  } catch {
    // A read-only home (some containers): a private directory of this process instead.
    const own = fs.mkdtempSync(path.join(os.tmpdir(), 'infernode-cache-'));
    process.once('exit', () => fs.rmSync(own, { recursive: true, force: true }));
    return own;
  }
}
