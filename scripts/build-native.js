#!/usr/bin/env node
// Source build of the addon, run by `npm install` when no prebuild fits (node-gyp-build) and by
// `npm run build:native`. cmake-js when cmake is on PATH (CUDA when nvcc is found), else the
// CPU-only node-gyp build of binding.gyp.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');

function run(cmd, args) {
  const result = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', shell: false });
  return result.status === 0;
}

function has(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

function cmakeJs() {
  const cli = require.resolve('cmake-js/bin/cmake-js');
  const extra = process.env.INFERNODE_CMAKE_ARGS ? process.env.INFERNODE_CMAKE_ARGS.split(' ') : [];
  return run(process.execPath, [cli, 'compile', '--parallel', String(require('node:os').availableParallelism?.() ?? 2), ...extra]);
}

// node-gyp needs Node's headers; use the ones installed beside node (Debian's nodejs-dev,
// npm's `nodedir`) so no download is attempted.
function nodeDirArgs() {
  const candidates = [process.env.npm_config_nodedir, path.resolve(process.execPath, '..', '..')].filter(Boolean);
  const dir = candidates.find((d) => fs.existsSync(path.join(d, 'include', 'node', 'node_api.h')));
  return dir ? [`--nodedir=${dir}`] : [];
}

function nodeGyp(cwd = root) {
  let cli;
  try {
    cli = require.resolve('node-gyp/bin/node-gyp.js', { paths: [root] });
  } catch {
    cli = path.join(path.dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
  }
  return spawnSync(process.execPath, [cli, 'rebuild', ...nodeDirArgs()], { cwd, stdio: 'inherit' }).status === 0;
}


// `npm install` runs this with --if-no-prebuild: a prebuild for this platform that loads makes
// the source build unnecessary. (node-gyp-build's own install command is not used: it runs
// `node-gyp rebuild` after any command given to it, which would replace the cmake-js build
// with the CPU-only one.)
function prebuildLoads() {
  const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
  if (!fs.existsSync(dir)) return false;
  const probe = `require('node-gyp-build').path(${JSON.stringify(root)})`;
  const ok = spawnSync(process.execPath, ['-e', `const p=${probe}; if (!p.includes('prebuilds')) process.exit(1); require(p);`],
    { cwd: root, stdio: 'ignore' }).status === 0;
  if (ok) console.log(`infernode: using the prebuilt addon in ${path.relative(root, dir)}`);
  return ok;
}

function main() {
  if (process.argv.includes('--if-no-prebuild') && process.env.npm_config_build_from_source !== 'true' && prebuildLoads()) return;
  const wantGyp = process.argv.includes('--node-gyp') || process.env.INFERNODE_BUILD === 'node-gyp';
  const ok = !wantGyp && has('cmake') ? cmakeJs() : nodeGyp();
  if (!ok) {
    console.error('infernode: the native build failed. It needs a C++17 compiler and cmake (or python3 + make for node-gyp).');
    process.exit(1);
  }
}

module.exports = { nodeGyp };
if (require.main === module) main();
