#!/usr/bin/env node
// Builds and runs the native unit tests (test/cpp/) under AddressSanitizer and UBSan
// (build-tests/), then the tests of the threaded pieces (scheduler, priority queue, orderer,
// batch former and gather, buffer pool) again under ThreadSanitizer (build-tests-tsan/).
// Part of `npm test`. Set INFERNODE_SANITIZE=0 to build them without sanitizers (and skip TSan);
// INFERNODE_TSAN=0 skips only the TSan run. An argument filters tests by name (comma-separated
// substrings) in both runs.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { paths: ortPaths } = require('./ort-paths');

const root = path.join(__dirname, '..');
const sanitize = process.env.INFERNODE_SANITIZE !== '0';
const tsan = sanitize && process.env.INFERNODE_TSAN !== '0';
// The JS channel (cpp/napi/js_channel.cc) needs a Node environment and cannot run here: TSan
// covers the native threads below it.
const TSAN_TESTS = 'Scheduler,Sequence,Queue,Orderer,FormBatch,Gather,Pool,RateLimit';

function run(cmd, args, env) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function build(buildDir, flags) {
  run('cmake', ['-S', root, '-B', buildDir, '-DINFERNODE_BUILD_TESTS=ON', ...flags,
    '-DCMAKE_BUILD_TYPE=Debug', '-Wno-dev', '--log-level=WARNING']);
  run('cmake', ['--build', buildDir, '--parallel', '2']);
}

// The ONNX engine tests load the real ONNX Runtime and the models in test/cpp/fixtures/.
const testEnv = {
  INFERNODE_ORT_LIBRARY: ortPaths().library,
  INFERNODE_TEST_FIXTURES: path.join(root, 'test', 'cpp', 'fixtures'),
};
const filter = process.argv.slice(2);

const asanDir = path.join(root, 'build-tests');
build(asanDir, [`-DINFERNODE_SANITIZE=${sanitize ? 'ON' : 'OFF'}`, '-DINFERNODE_TSAN=OFF']);
run(path.join(asanDir, 'infernode_native_tests'), filter, {
  ...testEnv,
  // Full stacks on every allocation so the one ONNX Runtime-internal leak is matched by
  // function (test/cpp/lsan.supp) and nothing else is.
  ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0',
  LSAN_OPTIONS: `suppressions=${path.join(root, 'test', 'cpp', 'lsan.supp')}:print_suppressions=0`,
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
});

if (tsan) {
  const tsanDir = path.join(root, 'build-tests-tsan');
  console.log('native: the threaded pieces again under ThreadSanitizer');
  build(tsanDir, ['-DINFERNODE_SANITIZE=OFF', '-DINFERNODE_TSAN=ON']);
  run(path.join(tsanDir, 'infernode_native_tests'), filter.length > 0 ? filter : [TSAN_TESTS], {
    ...testEnv,
    TSAN_OPTIONS: 'halt_on_error=1:second_deadlock_stack=1',
  });
}
