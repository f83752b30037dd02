#!/usr/bin/env node
// Installs the packed release (dist/, from scripts/release.js) into an empty project the way a
// user would, and checks it works there: require, bind + in-process infer, `infernode doctor`,
// `infernode serve` of the package's example repository, one HTTP and one gRPC inference (the
// ONNX model, so ONNX Runtime comes from the platform package). Prints the install time and the
// time from `npm install` to the first answered request.
//   default        the tarball with its prebuild, compilers hidden from PATH (no build possible)
//   --from-source  a tarball packed without a prebuild (`release.js --no-prebuild`), whose
//                  install script is allowed to run and builds the addon (cmake-js, CUDA if nvcc)
//   --json <file>  also write the measurements there
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const args = process.argv.slice(2);
const fromSource = args.includes('--from-source');
const jsonOut = args.includes('--json') ? args[args.indexOf('--json') + 1] : null;

function fail(message) {
  console.error(`install-smoke: ${message}`);
  process.exit(1);
}

function tarballs() {
  const release = JSON.parse(fs.readFileSync(path.join(root, 'dist', 'release.json'), 'utf8'));
  const platform = release.packages.find((p) => p.file.startsWith(`infernode-onnxruntime-${process.platform}-${process.arch}-`));
  const main = release.packages.find((p) => /^infernode-\d/.test(p.file));
  if (!main || !platform) fail('dist/release.json lacks the infernode or this platform\'s ONNX Runtime tarball: run `npm run release`');
  if (fromSource === Boolean(release.prebuilds)) {
    fail(fromSource ? 'dist/ holds a tarball with a prebuild: run `node scripts/release.js --no-prebuild` first'
      : 'dist/ holds a tarball without a prebuild: run `npm run release` first');
  }
  return [main, platform].map((p) => path.join(root, 'dist', p.file));
}

/** A PATH with node, npm and sh only, so no compiler, cmake or nvcc can be found. */
function pathWithoutCompilers(dir) {
  const bin = path.join(dir, '.bin-no-compilers');
  fs.mkdirSync(bin);
  fs.symlinkSync(process.execPath, path.join(bin, 'node'));
  fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));  // npm runs install scripts with sh
  for (const tool of ['npm', 'npx']) {
    const cli = fs.realpathSync(spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim());
    fs.writeFileSync(path.join(bin, tool), `#!/bin/sh\nexec "${process.execPath}" "${cli}" "$@"\n`, { mode: 0o755 });
  }
  for (const tool of ['cc', 'c++', 'g++', 'gcc', 'cmake', 'nvcc', 'make']) {
    if (spawnSync(tool, ['--version'], { env: { PATH: bin }, stdio: 'ignore' }).error === undefined) fail(`${tool} is still on PATH`);
  }
  return bin;
}

function install(project, files) {
  const env = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
  if (!fromSource) env.PATH = pathWithoutCompilers(project);
  const started = Date.now();
  const r = spawnSync('npm', ['install', ...files], { cwd: project, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Date.now() - started;
  if (r.status !== 0) fail(`npm install failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  return { ms, env, output: `${r.stdout}${r.stderr}` };
}

function duBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += duBytes(full);
    else if (entry.isFile()) total += fs.statSync(full).size;
  }
  return total;
}

/** The user's program: bind + in-process infer, then serve the examples and call them. */
const SMOKE = String.raw`
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Triton, NDArray, batch, HttpInferenceServerClient, GrpcInferenceServerClient } = require('infernode');

async function inProcess() {
  const triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  triton.bind({
    modelName: 'Double',
    inferFunc: batch(({ x }) => ({ y: new NDArray('FP32', x.shape, x.data.map((v) => v * 2)) })),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  await triton.run();
  const { y } = await triton.infer('Double', { x: new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3])) });
  if (Array.from(y.data).join() !== '2,4,6') throw new Error('in-process infer answered ' + Array.from(y.data));
  await triton.stop();
}

function serve() {
  const repo = path.join(path.dirname(require.resolve('infernode/package.json')), 'examples', 'models');
  const cli = fs.realpathSync(path.join('node_modules', '.bin', 'infernode'));  // what npx infernode runs
  const child = spawn(process.execPath, [cli, 'serve', '--model-repository', repo,
    '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const ports = {};
    const onData = (chunk) => {
      log += chunk;
      for (const [name, service] of [['http', 'HTTPService'], ['grpc', 'GRPCInferenceService']]) {
        const m = log.match(new RegExp('Started ' + service + ' at [^:\\s]+:(\\d+)'));
        if (m) ports[name] = Number(m[1]);
      }
      if (ports.http && ports.grpc) resolve({ child, ports });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error('infernode serve exited ' + code + ':\n' + log)));
  });
}

async function main() {
  await inProcess();
  const { child, ports } = await serve();
  try {
    const input = new NDArray('FP32', [1, 16], new Float32Array(16).fill(0.5));
    const http = new HttpInferenceServerClient('localhost:' + ports.http);
    const a = await http.infer({ modelName: 'mlp_classifier', inputs: { input } });
    process.stdout.write('FIRST_ANSWER ' + Date.now() + '\n');
    const grpc = new GrpcInferenceServerClient('localhost:' + ports.grpc);
    const b = await grpc.infer({ modelName: 'mlp_classifier', inputs: { input } });
    await Promise.all([http.close(), grpc.close()]);
    if (a.outputs.logits.shape.join() !== '1,4' || Array.from(a.outputs.logits.data).join() !== Array.from(b.outputs.logits.data).join()) {
      throw new Error('HTTP and gRPC answers differ or have the wrong shape');
    }
  } finally {
    child.removeAllListeners('exit');
    child.kill('SIGTERM');
  }
  console.log('SMOKE_OK');
}

main().catch((err) => { console.error(err); process.exit(1); });
`;

function main() {
  const files = tarballs();
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'infernode-install-'));
  const manifest = { name: 'infernode-install-smoke', private: true };
  // npm 11 runs a dependency's install script only when allowed: the source build needs it.
  if (fromSource) manifest.allowScripts = { infernode: true };
  fs.writeFileSync(path.join(project, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  fs.writeFileSync(path.join(project, 'smoke.js'), SMOKE);
  const started = Date.now();
  const installed = install(project, files);
  const doctor = spawnSync('npx', ['infernode', 'doctor', '--json'], { cwd: project, env: installed.env, encoding: 'utf8' });
  if (doctor.status !== 0) fail(`infernode doctor exited ${doctor.status}:\n${doctor.stdout}${doctor.stderr}`);
  const report = JSON.parse(doctor.stdout);
  const expectedKind = fromSource ? 'source build' : 'prebuild';
  if (report.addon.kind !== expectedKind) fail(`the addon loaded is a ${report.addon.kind}, expected a ${expectedKind}`);
  if (!report.onnxRuntime.source.startsWith(`@infernode/onnxruntime-${process.platform}-${process.arch}@`)) {
    fail(`ONNX Runtime came from ${report.onnxRuntime.source}, expected the platform package`);
  }
  const smoke = spawnSync(process.execPath, ['smoke.js'], { cwd: project, env: installed.env, encoding: 'utf8', timeout: 120_000 });
  if (smoke.status !== 0 || !smoke.stdout.includes('SMOKE_OK')) fail(`smoke.js failed (exit ${smoke.status}):\n${smoke.stdout}${smoke.stderr}`);
  const firstAnswer = Number(smoke.stdout.match(/FIRST_ANSWER (\d+)/)[1]);
  const result = {
    variant: fromSource ? 'from source' : 'prebuild', installMs: installed.ms, toFirstAnswerMs: firstAnswer - started,
    nodeModulesBytes: duBytes(path.join(project, 'node_modules')), addon: report.addon.kind, onnxRuntime: report.onnxRuntime.source,
    tarballs: files.map((f) => ({ file: path.basename(f), bytes: fs.statSync(f).size })),
  };
  console.log(`install-smoke: ${result.variant}: npm install ${(result.installMs / 1000).toFixed(1)} s, first answer after ` +
    `${(result.toFirstAnswerMs / 1000).toFixed(1)} s, node_modules ${(result.nodeModulesBytes / 2 ** 20).toFixed(1)} MiB; ` +
    `addon ${result.addon}, ONNX Runtime ${result.onnxRuntime}`);
  if (jsonOut) fs.writeFileSync(jsonOut, `${JSON.stringify(result, null, 2)}\n`);
  fs.rmSync(project, { recursive: true, force: true });
}

main();
