#!/usr/bin/env node
// Builds and runs the native unit tests (test/cpp/) under AddressSanitizer and UBSan.
// Part of `npm test`. Set INFERNODE_SANITIZE=0 to build them without sanitizers.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const buildDir = path.join(root, 'build-tests');
const sanitize = process.env.INFERNODE_SANITIZE !== '0';

function run(cmd, args, env) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

run('cmake', ['-S', root, '-B', buildDir, '-DINFERNODE_BUILD_TESTS=ON', `-DINFERNODE_SANITIZE=${sanitize ? 'ON' : 'OFF'}`,
  '-DCMAKE_BUILD_TYPE=Debug', '-Wno-dev', '--log-level=WARNING']);
run('cmake', ['--build', buildDir, '--parallel', '2']);
// The ONNX engine tests load the real ONNX Runtime and the models in test/cpp/fixtures/.
const { paths: ortPaths } = require('./ort-paths');
run(path.join(buildDir, 'infernode_native_tests'), process.argv.slice(2), {
  INFERNODE_ORT_LIBRARY: ortPaths().library,
  INFERNODE_TEST_FIXTURES: path.join(root, 'test', 'cpp', 'fixtures'),
  // Full stacks on every allocation so the one ONNX Runtime-internal leak is matched by
  // function (test/cpp/lsan.supp) and nothing else is.
  ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0',
  LSAN_OPTIONS: `suppressions=${path.join(root, 'test', 'cpp', 'lsan.supp')}:print_suppressions=0`,
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
});
