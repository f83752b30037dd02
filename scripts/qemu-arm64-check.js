#!/usr/bin/env node
// Runs the arm64 prebuild for real, under qemu-aarch64, on an x64 machine: installs the release
// tarballs (dist/) into an empty project, adds the arm64 ONNX Runtime package (npm refuses to
// install it on x64: its `cpu` field), and runs a check with Debian's arm64 Node: the addon that
// loads must be prebuilds/linux-arm64, ONNX Runtime the arm64 package; a bound model and the
// example ONNX model over HTTP must answer, the latter with the same numbers as on x64.
// Needs qemu-user and network access to the Debian archive (arm64 .debs of nodejs and its
// libraries, fetched once into build-release-arm64-sysroot/). Used by .ci/run after `npm run release`.
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const sysroot = path.join(root, 'build-release-arm64-sysroot');
// Debian's arm64 Node (18: Node-API 9 suffices for the addon) and what it links or loads.
const DEBS = ['nodejs', 'libnode108', 'libc6', 'libgcc-s1', 'libstdc++6', 'libuv1', 'libbrotli1', 'libc-ares2', 'libicu72',
  'libnghttp2-14', 'libssl3', 'zlib1g'];
const ARCH_ALL_DEBS = ['node-cjs-module-lexer', 'node-acorn', 'node-undici'];

function sh(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...options });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status})`);
}

function ensureSysroot() {
  if (fs.existsSync(path.join(sysroot, 'usr', 'bin', 'node'))) return;
  const debs = fs.mkdtempSync(path.join(os.tmpdir(), 'infernode-arm64-debs-'));
  const added = !execFileSync('dpkg', ['--print-foreign-architectures'], { encoding: 'utf8' }).includes('arm64');
  if (added) sh('dpkg', ['--add-architecture', 'arm64']);
  try {
    sh('apt-get', ['update', '-qq']);
    sh('apt-get', ['download', ...DEBS.map((d) => `${d}:arm64`), ...ARCH_ALL_DEBS], { cwd: debs });
  } finally {
    if (added) {
      sh('dpkg', ['--remove-architecture', 'arm64']);
      sh('apt-get', ['update', '-qq']);
    }
  }
  fs.mkdirSync(sysroot, { recursive: true });
  for (const deb of fs.readdirSync(debs)) sh('dpkg', ['-x', path.join(debs, deb), sysroot]);
  fs.rmSync(debs, { recursive: true, force: true });
}

// qemu-user gives the arm64 process the host's /proc/cpuinfo, in x86 form. ONNX Runtime's
// cpuinfo (arm64 Linux) parses it while the library loads, then reads the host's sysfs cache
// topology, and on some hosts dereferences NULL (SIGSEGV in dlopen; seen on a 2-vCPU AMD EPYC
// VM, not on others). qemu's -L prefix is searched first for every absolute path the process
// opens, so a cpuinfo of an arm64 machine (2 Neoverse N1 cores) in the sysroot is what it reads.
const ARM64_CPUINFO = [0, 1].map((n) => `processor\t: ${n}
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1
`).join('\n');

function writeCpuinfo() {
  fs.mkdirSync(path.join(sysroot, 'proc'), { recursive: true });
  fs.writeFileSync(path.join(sysroot, 'proc', 'cpuinfo'), ARM64_CPUINFO + '\n');
}

const CHECK = String.raw`
'use strict';
const path = require('node:path');
const { Triton, NDArray, batch, HttpInferenceServerClient } = require('infernode');
const pkg = path.dirname(require.resolve('infernode/package.json'));
const { native, nativeAddonPath } = require(path.join(pkg, 'lib', 'native'));
const { locateOnnxRuntime } = require(path.join(pkg, 'lib', 'engines', 'ort-library'));
(async () => {
  const ort = locateOnnxRuntime();
  const result = { arch: process.arch, addon: path.relative(pkg, nativeAddonPath()), onnxRuntime: ort.source,
    onnxRuntimeVersion: native().onnxRuntimeInfo(ort.openPath).version };
  const triton = new Triton({ config: { httpPort: 0, allowGrpc: false, allowMetrics: false, logInfo: false } });
  triton.bind({
    modelName: 'Double', inferFunc: batch(({ x }) => ({ y: new NDArray('FP32', x.shape, x.data.map((v) => v * 2)) })),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }], config: { maxBatchSize: 8 },
  });
  triton.useRepository({ repositories: [path.join(pkg, 'examples', 'models')] });
  await triton.run();
  const { y } = await triton.infer('Double', { x: new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3])) });
  result.bound = Array.from(y.data);
  const client = new HttpInferenceServerClient('localhost:' + triton.ports.http);
  const r = await client.infer({ modelName: 'mlp_classifier', inputs: { input: new NDArray('FP32', [1, 16], new Float32Array(16).fill(0.5)) } });
  result.logits = Array.from(r.outputs.logits.data).map((v) => Number(v.toFixed(4)));
  await client.close();
  await triton.stop();
  process.stdout.write('RESULT ' + JSON.stringify(result) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
`;

function runCheck(project, command, args) {
  const r = spawnSync(command, [...args, 'check.js'], { cwd: project, encoding: 'utf8', timeout: 300_000 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  if (r.status !== 0 || !line) throw new Error(`check under ${command} failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
  return JSON.parse(line.slice('RESULT '.length));
}

function main() {
  const release = JSON.parse(fs.readFileSync(path.join(root, 'dist', 'release.json'), 'utf8'));
  const file = (prefix) => path.join(root, 'dist', release.packages.find((p) => p.file.startsWith(prefix)).file);
  ensureSysroot();
  writeCpuinfo();
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'infernode-arm64-'));
  fs.writeFileSync(path.join(project, 'package.json'), '{ "name": "arm64-check", "private": true }\n');
  sh('npm', ['install', '--no-audit', '--no-fund', file('infernode-0'), file('infernode-onnxruntime-linux-x64-')], { cwd: project, stdio: 'ignore' });
  const arm64Ort = path.join(project, 'node_modules', '@infernode', 'onnxruntime-linux-arm64');
  fs.mkdirSync(arm64Ort, { recursive: true });
  sh('tar', ['xzf', file('infernode-onnxruntime-linux-arm64-'), '-C', arm64Ort, '--strip-components=1']);
  fs.writeFileSync(path.join(project, 'check.js'), CHECK);
  const arm = runCheck(project, 'qemu-aarch64', ['-L', sysroot, path.join(sysroot, 'usr', 'bin', 'node')]);
  const x64 = runCheck(project, process.execPath, []);
  fs.rmSync(project, { recursive: true, force: true });
  console.log(`qemu-arm64-check: arm64 ${JSON.stringify(arm)}\nqemu-arm64-check: x64   ${JSON.stringify(x64)}`);
  const problems = [];
  if (arm.arch !== 'arm64' || arm.addon !== 'prebuilds/linux-arm64/infernode.napi.glibc.node') problems.push(`arm64 loaded ${arm.addon}`);
  if (!arm.onnxRuntime.startsWith('@infernode/onnxruntime-linux-arm64@')) problems.push(`arm64 used ONNX Runtime from ${arm.onnxRuntime}`);
  if (arm.bound.join() !== '2,4,6') problems.push(`arm64 bound model answered ${arm.bound}`);
  if (arm.logits.join() !== x64.logits.join()) problems.push(`arm64 logits ${arm.logits} differ from x64 ${x64.logits}`);
  if (problems.length > 0) {
    console.error(`qemu-arm64-check: FAILED: ${problems.join('; ')}`);
    process.exit(1);
  }
  console.log('qemu-arm64-check: the arm64 prebuild and ONNX Runtime package answer as x64 does');
}

main();
