#!/usr/bin/env node
// Where ONNX Runtime's headers and library are.
// - Headers (source builds only): ONNXRUNTIME_ROOT/include when set, else the C API headers
//   vendored in third_party/onnxruntime/include (no package needed to compile).
// - Library (run time): the first of
//     ONNXRUNTIME_ROOT/lib/libonnxruntime.so                       (set by the user: wins, even if missing)
//     @infernode/onnxruntime-<platform>-<arch>  lib/libonnxruntime.so  (optional dependency, what users get)
//     com.github.asus4.onnxruntime  Plugins/Linux/x64/libonnxruntime.so  (this repository's devDependency)
//     onnxruntime-node  bin/napi-v6/<platform>/<arch>/libonnxruntime.so.1  (when a project has it anyway)
// Used by CMakeLists.txt and binding.gyp (`node scripts/ort-paths.js include`), by the native tests,
// and at run time by ts/engines/ort-library.ts.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const PLATFORM_PACKAGE = `@infernode/onnxruntime-${process.platform}-${process.arch}`;

function packageDir(name) {
  try {
    return path.dirname(require.resolve(`${name}/package.json`, { paths: [root] }));
  } catch {
    return null;
  }
}

function packageVersion(dir) {
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
}

/** Every place the library may come from, in order of preference, with where each would be. */
function libraryCandidates() {
  const out = [];
  const env = process.env.ONNXRUNTIME_ROOT;
  if (env) out.push({ source: 'ONNXRUNTIME_ROOT', library: path.join(env, 'lib', 'libonnxruntime.so') });
  const platformDir = packageDir(PLATFORM_PACKAGE);
  if (platformDir) {
    out.push({ source: `${PLATFORM_PACKAGE}@${packageVersion(platformDir)}`, library: path.join(platformDir, 'lib', 'libonnxruntime.so') });
  }
  const asus4 = packageDir('com.github.asus4.onnxruntime');
  if (asus4 && process.platform === 'linux' && process.arch === 'x64') {
    out.push({ source: `com.github.asus4.onnxruntime@${packageVersion(asus4)}`, library: path.join(asus4, 'Plugins/Linux/x64/libonnxruntime.so') });
  }
  const ortNode = packageDir('onnxruntime-node');
  if (ortNode) {
    out.push({ source: `onnxruntime-node@${packageVersion(ortNode)}`, library: path.join(ortNode, 'bin/napi-v6', process.platform, process.arch, 'libonnxruntime.so.1') });
  }
  return out;
}

/**
 * The library this process uses: { source, library } (ONNXRUNTIME_ROOT is taken as given, so a
 * wrong root fails loudly instead of silently using another copy), or null when none is installed.
 */
function runtimeLibrary() {
  const candidates = libraryCandidates();
  if (candidates[0]?.source === 'ONNXRUNTIME_ROOT') return candidates[0];
  return candidates.find((c) => fs.existsSync(c.library)) ?? null;
}

/** What to do when no library is found (the text of the load error and of `infernode doctor`). */
function missingLibraryHint() {
  return `ONNX Runtime's library was not found: install ${PLATFORM_PACKAGE} (an optional dependency of infernode, ` +
    `skipped on platforms it does not support) or set ONNXRUNTIME_ROOT to a directory with lib/libonnxruntime.so`;
}

function paths() {
  const env = process.env.ONNXRUNTIME_ROOT;
  const include = env ? path.join(env, 'include') : path.join(root, 'third_party', 'onnxruntime', 'include');
  return { include, library: runtimeLibrary()?.library ?? '' };
}

module.exports = { paths, runtimeLibrary, libraryCandidates, missingLibraryHint, PLATFORM_PACKAGE };
if (require.main === module) {
  const which = process.argv[2] ?? 'include';
  const p = paths()[which];
  if (!p || !fs.existsSync(p)) {
    console.error(which === 'library' ? missingLibraryHint() : `ONNX Runtime headers not found (${p}); set ONNXRUNTIME_ROOT or restore third_party/onnxruntime/include`);
    process.exit(1);
  }
  process.stdout.write(p);
}
