#!/usr/bin/env node
// Checks that the C++ and CUDA sources (cpp/, cuda/, test/cpp/, test/fuzz/, test/gpu/fixtures/)
// are formatted as .clang-format says (`clang-format --dry-run -Werror`), so C++ style is checked,
// not argued. `--fix` rewrites them in place. Part of `npm run lint` (and so of `npm test`).
// Without clang-format it prints "skipped: clang-format not found" and succeeds; .ci/run installs
// it (Debian's clang-format), so CI always checks.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const SOURCES = ['cpp/**/*.cc', 'cpp/**/*.h', 'cuda/*.cu', 'cuda/*.h', 'test/cpp/*.cc', 'test/cpp/*.h', 'test/fuzz/*.cc', 'test/gpu/fixtures/*.cu'];

function main() {
  if (spawnSync('clang-format', ['--version'], { stdio: 'ignore' }).status !== 0) {
    console.log('lint-cpp: skipped: clang-format not found (apt-get install clang-format)');
    return;
  }
  const listed = spawnSync('git', ['ls-files', '--', ...SOURCES], { cwd: root, encoding: 'utf8' });
  const files = listed.status === 0 ? listed.stdout.split('\n').filter(Boolean) : [];
  if (files.length === 0) throw new Error('lint-cpp: no C++ sources found (not a git checkout?)');
  const fix = process.argv.includes('--fix');
  const args = fix ? ['-i', '--style=file', ...files] : ['--dry-run', '-Werror', '--style=file', ...files];
  const result = spawnSync('clang-format', args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error('lint-cpp: the files above are not formatted as .clang-format says: run `node scripts/lint-cpp.js --fix`');
    process.exit(1);
  }
  console.log(`lint-cpp: ${files.length} files ${fix ? 'formatted' : 'formatted as .clang-format says'}`);
}

main();
