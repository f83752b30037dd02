#!/usr/bin/env node
// Builds what a release ships, reproducibly, into dist/:
//   1. the prebuilt addons prebuilds/linux-<arch>/infernode.napi.glibc.node: clean cmake-js builds
//      in build-release-<arch>/ (x64 with CUDA required, cudart static; arm64 cross-compiled,
//      CPU-only), source paths mapped away, stripped; each one's SHA-256 and toolchain are
//      written beside it (BUILD.json);
//   2. the platform packages of packages/ (ONNX Runtime's library copied unchanged from the
//      pinned upstream npm packages, which are this repository's devDependencies);
//   3. `npm pack` of the platform packages and of infernode itself; dist/release.json lists all.
// Options: `--arch x64|arm64` one prebuild only; `--prebuild-only` step 1 only (`npm run
// release:prebuild`, and a plain `npm pack`'s prepack, so no tarball is made without them);
// `--reuse-prebuild` packs the prebuilds already built (checked against their BUILD.json);
// `--no-prebuild` packs a tarball without them, whose install builds from source (the
// install-time comparison of scripts/install-smoke.js --from-source).
'use strict';
const { spawnSync, execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const args = process.argv.slice(2);
const dist = path.join(root, 'dist');

function run(cmd, argv, options = {}) {
  const result = spawnSync(cmd, argv, { cwd: root, stdio: 'inherit', ...options });
  if (result.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (exit ${result.status})`);
}

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function firstLine(cmd, argv) {
  try {
    return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n').find((l) => l.trim()) ?? '';
  } catch {
    return 'not found';
  }
}

/**
 * How each prebuild is made. x64: the native toolchain with CUDA required. arm64: cross-compiled
 * with Debian's aarch64-linux-gnu toolchain (g++-aarch64-linux-gnu), CPU-only: there is no
 * aarch64 CUDA toolkit to link here, so cuda/ gives way to its CPU twins (cpp/memory/*_none.cc).
 */
const TARGETS = {
  x64: { tools: '', cmake: ['--CDINFERNODE_REQUIRE_CUDA=ON'] },
  arm64: {
    tools: 'aarch64-linux-gnu-',
    cmake: ['--CDINFERNODE_WITH_CUDA=OFF', '--CDCMAKE_SYSTEM_NAME=Linux', '--CDCMAKE_SYSTEM_PROCESSOR=aarch64',
      '--CDCMAKE_C_COMPILER=aarch64-linux-gnu-gcc', '--CDCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++'],
  },
};

function buildPrebuild(arch = process.arch) {
  const target = TARGETS[arch];
  if (!target) throw new Error(`no prebuild recipe for ${arch} (known: ${Object.keys(TARGETS).join(', ')})`);
  const out = path.join(root, `build-release-${arch}`);
  fs.rmSync(out, { recursive: true, force: true });
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  run(process.execPath, [cmakeJs, 'compile', '--out', out, '--parallel', String(require('node:os').availableParallelism?.() ?? 2),
    ...target.cmake, `--CDINFERNODE_PREFIX_MAP=${root}=infernode`]);
  const dir = path.join(root, 'prebuilds', `linux-${arch}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  // napi: any Node-API ≥ 8 runtime; glibc: node-gyp-build skips it on musl (Alpine).
  const file = path.join(dir, 'infernode.napi.glibc.node');
  fs.copyFileSync(path.join(out, 'Release', 'infernode.node'), file);
  run(`${target.tools}strip`, ['--strip-unneeded', file]);
  const info = {
    file: path.basename(file), bytes: fs.statSync(file).size, sha256: sha256(file),
    node: process.version, compiler: firstLine(`${target.tools}g++`, ['--version']), cuda: arch === 'x64' ? nvccRelease() : 'none (CPU-only)',
    cmake: firstLine('cmake', ['--version']), glibcRequired: maxGlibc(file, target.tools),
  };
  fs.writeFileSync(path.join(dir, 'BUILD.json'), `${JSON.stringify(info, null, 2)}\n`);
  console.log(`release: ${path.relative(root, file)} ${info.bytes} bytes, sha256 ${info.sha256}`);
  return info;
}

/** `--reuse-prebuild`: the prebuild already in prebuilds/ (its BUILD.json), checked against its hash. */
function builtPrebuild(arch) {
  const target = path.join(root, 'prebuilds', `linux-${arch}`);
  const info = JSON.parse(fs.readFileSync(path.join(target, 'BUILD.json'), 'utf8'));
  if (sha256(path.join(target, info.file)) !== info.sha256) throw new Error(`${info.file} does not match its BUILD.json: rebuild it`);
  return info;
}

function nvccRelease() {
  try {
    return (execFileSync('nvcc', ['--version'], { encoding: 'utf8' }).match(/release [^\n]*/) ?? ['unknown'])[0];
  } catch {
    return 'not found';
  }
}

/** The newest GLIBC_x.y symbol version the binary needs (the oldest glibc it runs on). */
function maxGlibc(file, tools = '') {
  const text = execFileSync(`${tools}objdump`, ['-T', file], { encoding: 'utf8' });
  const versions = [...text.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const max = versions.at(-1);
  return max ? `${max[0]}.${max[1]}` : 'none';
}

/** Where each platform package's library comes from (unchanged copies of pinned packages). */
const PLATFORM_SOURCES = {
  'onnxruntime-linux-x64': {
    pkg: 'com.github.asus4.onnxruntime', files: { 'Plugins/Linux/x64/libonnxruntime.so': 'lib/libonnxruntime.so' },
    notices: 'ThirdPartyNotices.txt',
  },
  'onnxruntime-linux-arm64': {
    pkg: 'onnxruntime-node', files: { 'bin/napi-v6/linux/arm64/libonnxruntime.so.1': 'lib/libonnxruntime.so' },
    notices: 'ThirdPartyNotices.txt',
  },
};

function fillPlatformPackage(name) {
  const source = PLATFORM_SOURCES[name];
  const from = path.dirname(require.resolve(`${source.pkg}/package.json`, { paths: [root] }));
  const to = path.join(root, 'packages', name);
  fs.mkdirSync(path.join(to, 'lib'), { recursive: true });
  for (const [src, dst] of Object.entries(source.files)) fs.copyFileSync(path.join(from, src), path.join(to, dst));
  const notices = path.join(from, source.notices);
  if (fs.existsSync(notices)) fs.copyFileSync(notices, path.join(to, 'ThirdPartyNotices.txt'));
  return to;
}

function pack(dir) {
  const env = { ...process.env, INFERNODE_RELEASE_PACKING: '1' };
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dist], { cwd: dir, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const [info] = JSON.parse(out.slice(out.indexOf('[')));
  const file = path.join(dist, info.filename);
  console.log(`release: dist/${info.filename} ${fs.statSync(file).size} bytes packed, ${info.unpackedSize} unpacked, ${info.entryCount} files`);
  return { file: info.filename, packedBytes: fs.statSync(file).size, unpackedBytes: info.unpackedSize, files: info.entryCount };
}

function main() {
  const arches = args.includes('--arch') ? [args[args.indexOf('--arch') + 1]] : Object.keys(TARGETS);
  // `npm pack` runs this as prepack: build the prebuilds unless release.js itself is packing.
  if (args.includes('--prepack')) {
    if (!process.env.INFERNODE_RELEASE_PACKING) arches.forEach((arch) => buildPrebuild(arch));
    return;
  }
  const noPrebuild = args.includes('--no-prebuild');
  const prebuilds = noPrebuild ? null : arches.map((arch) => (args.includes('--reuse-prebuild') ? builtPrebuild(arch) : buildPrebuild(arch)));
  if (args.includes('--prebuild-only')) return;
  fs.rmSync(dist, { recursive: true, force: true });
  fs.mkdirSync(dist, { recursive: true });
  run('npm', ['run', 'build:ts']);
  const packed = Object.keys(PLATFORM_SOURCES).map((name) => pack(fillPlatformPackage(name)));
  // --no-prebuild: the prebuilds already built (if any) are set aside while packing, and put back.
  const aside = path.join(root, 'build-release-set-aside');
  const setAside = noPrebuild ? fs.readdirSync(path.join(root, 'prebuilds')).filter((d) => d.startsWith('linux-')) : [];
  fs.rmSync(aside, { recursive: true, force: true });
  fs.mkdirSync(aside, { recursive: true });
  for (const d of setAside) fs.renameSync(path.join(root, 'prebuilds', d), path.join(aside, d));
  try {
    packed.push(pack(root));
  } finally {
    for (const d of setAside) fs.renameSync(path.join(aside, d), path.join(root, 'prebuilds', d));
  }
  fs.writeFileSync(path.join(dist, 'release.json'), `${JSON.stringify({ prebuilds, packages: packed }, null, 2)}\n`);
}

main();
