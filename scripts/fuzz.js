#!/usr/bin/env node
// Builds the libFuzzer targets of test/fuzz/ with clang (ASan + UBSan, build-fuzz/) and runs each
// for a bounded time, starting from its committed seed corpus (test/fuzz/corpus/<name>/). New
// inputs the fuzzer finds go to build-fuzz/corpus/<name>/ (not committed); a crash leaves its input
// in build-fuzz/crashes/ and fails the run: turn it into a regression test in test/cpp/.
//
//   npm run fuzz                      every target, 20 s each
//   npm run fuzz -- --seconds=5 shape  one target, 5 s
//   node scripts/fuzz.js --short      5 s each: what `npm test` runs
// INFERNODE_FUZZ_SECONDS, when set, replaces the 20 s / 5 s defaults (CI sets 20); --seconds wins over both.
//
// Without clang it prints "skipped: clang not found" and succeeds, so `npm test` runs everywhere.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const buildDir = path.join(root, 'build-fuzz');
const fuzzDir = path.join(root, 'test', 'fuzz');

function parseArgs(argv) {
  let seconds = null;
  let fallback = 20;
  const only = [];
  for (const arg of argv) {
    const m = /^--seconds=(\d+)$/.exec(arg);
    if (m) seconds = Number(m[1]);
    else if (arg === '--short') fallback = 5;
    else if (arg.startsWith('-')) {
      console.error(`fuzz: unknown option ${arg} (expected --seconds=N, --short and target names)`);
      process.exit(2);
    } else only.push(arg);
  }
  if (seconds === null) seconds = Number(process.env.INFERNODE_FUZZ_SECONDS || fallback);
  return { seconds, only };
}

// clang++ on PATH, or a versioned one (Debian's clang-14 package installs clang++-14).
function findClang() {
  for (const name of [process.env.INFERNODE_FUZZ_CXX, 'clang++', 'clang++-18', 'clang++-17', 'clang++-16', 'clang++-15', 'clang++-14']) {
    if (!name) continue;
    const r = spawnSync(name, ['--version'], { stdio: 'ignore' });
    if (r.status === 0) return name;
  }
  return null;
}

// True when `clang` links a libFuzzer program with ASan and UBSan (Debian ships those runtimes
// in libclang-rt-<version>-dev, which clang only recommends).
function canLinkFuzzer(clang) {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'infernode-fuzz-probe-'));
  try {
    const source = path.join(dir, 'probe.cc');
    fs.writeFileSync(source, 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n');
    const r = spawnSync(clang, ['-fsanitize=fuzzer,address,undefined', source, '-o', path.join(dir, 'probe')], { stdio: 'ignore' });
    return r.status === 0;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...options });
  return r.status ?? 1;
}

function main() {
  const { seconds, only } = parseArgs(process.argv.slice(2));
  const clang = findClang();
  if (!clang) {
    console.log('fuzz: skipped: clang not found (install clang to run the libFuzzer targets, e.g. apt-get install clang libclang-rt-14-dev)');
    return 0;
  }
  if (!canLinkFuzzer(clang)) {
    console.log(`fuzz: skipped: ${clang} cannot link libFuzzer with ASan/UBSan (install libclang-rt-<version>-dev)`);
    return 0;
  }
  const targets = fs.readdirSync(fuzzDir).filter((f) => f.endsWith('_fuzz.cc')).map((f) => f.slice(0, -'_fuzz.cc'.length)).sort();
  const chosen = only.length > 0 ? only : targets;
  for (const name of chosen) {
    if (!targets.includes(name)) {
      console.error(`fuzz: no target '${name}' (have: ${targets.join(', ')})`);
      return 2;
    }
  }
  const started = Date.now();
  if (run('cmake', ['-S', root, '-B', buildDir, '-DINFERNODE_BUILD_FUZZERS=ON', `-DCMAKE_CXX_COMPILER=${clang}`,
    '-DCMAKE_BUILD_TYPE=RelWithDebInfo', '-Wno-dev', '--log-level=WARNING']) !== 0) return 1;
  if (run('cmake', ['--build', buildDir, '--parallel', '2', '--target', ...chosen.map((n) => `fuzz_${n}`)]) !== 0) return 1;
  const built = Date.now();
  fs.mkdirSync(path.join(buildDir, 'crashes'), { recursive: true });
  for (const name of chosen) {
    const work = path.join(buildDir, 'corpus', name);
    fs.mkdirSync(work, { recursive: true });
    const seeds = path.join(fuzzDir, 'corpus', name);
    console.log(`fuzz: ${name} for ${seconds} s`);
    const status = run(path.join(buildDir, `fuzz_${name}`), [
      `-max_total_time=${seconds}`, '-print_final_stats=1', '-timeout=10', '-rss_limit_mb=2048',
      `-artifact_prefix=${path.join(buildDir, 'crashes', `${name}-`)}`, work, ...(fs.existsSync(seeds) ? [seeds] : []),
    ], { env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1', UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1' } });
    if (status !== 0) {
      console.error(`fuzz: ${name} FAILED: the crashing input is in ${path.join(buildDir, 'crashes')}/${name}-*; ` +
        `reproduce with build-fuzz/fuzz_${name} <file>, then add it as a regression test in test/cpp/`);
      return 1;
    }
  }
  const done = Date.now();
  console.log(`fuzz: ${chosen.length} target(s) clean; build ${((built - started) / 1000).toFixed(0)} s, fuzzing ${((done - built) / 1000).toFixed(0)} s`);
  return 0;
}

process.exit(main());
