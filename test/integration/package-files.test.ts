/**
 * What `npm pack` puts in the tarball (package.json `files`): what users need — the compiled
 * library, the CLI, the gRPC protos it loads at run time, the sources and vendored headers of a
 * source build, LICENSE and NOTICE, the docs the README links — and nothing else: no tests, no
 * bench results or bench code, no source maps, no build trees. The clean-install smoke test
 * (scripts/install-smoke.js, in .ci/run) proves the packed package runs; this proves its list.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ensureLib, ROOT } from './lib-build';

let files: string[];

beforeAll(() => {
  ensureLib();
  // --ignore-scripts: list only (prepack would build the release prebuilds).
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  expect(r.status).toBe(0);
  const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as { files: { path: string }[] }[];
  files = info.files.map((f) => f.path);
}, 180_000);

test('ships the library, the CLI, the run-time assets, the source-build inputs and the legal files', () => {
  for (const needed of [
    'package.json', 'README.md', 'LICENSE', 'NOTICE',
    'lib/index.js', 'lib/index.d.ts', 'lib/cli/main.js', 'lib/cli/doctor.js', 'lib/engines/ort-library.js',
    'ts/server/grpc/proto/grpc_service.proto', 'ts/server/grpc/proto/model_config.proto', 'ts/server/grpc/proto/health.proto',
    'scripts/build-native.js', 'scripts/ort-paths.js', 'CMakeLists.txt', 'binding.gyp',
    'third_party/onnxruntime/include/onnxruntime_c_api.h', 'third_party/onnxruntime/LICENSE',
    'examples/models/mlp_classifier/config.pbtxt', 'examples/models/mlp_classifier/1/model.onnx',
  ]) {
    expect(files).toContain(needed);
  }
  expect(files.some((f) => f.startsWith('cpp/napi/'))).toBe(true);
  expect(files.some((f) => f.startsWith('cuda/') && f.endsWith('.cu'))).toBe(true);
});

test('every file the README links to that exists in the repository ships too', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const links = [...readme.matchAll(/\]\((docs\/[^)#]+)/g)].map((m) => m[1]);
  expect(links.length).toBeGreaterThan(3);
  for (const link of links) expect(files).toContain(link);
});

test('ships no tests, bench code or results, source maps, TypeScript sources or build trees', () => {
  const unwanted = files.filter((f) =>
    /^(test|bench|build[^/]*|dist|packages|node_modules|\.ci|deploy)\//.test(f) ||
    /^lib\/(bench|soak)\//.test(f) || f.endsWith('.map') || (f.startsWith('ts/') && f.endsWith('.ts')) ||
    (f.startsWith('scripts/') && !['scripts/build-native.js', 'scripts/ort-paths.js'].includes(f)));
  expect(unwanted).toEqual([]);
});

test('every relative require in lib/ resolves to a shipped file', () => {
  const shipped = new Set(files);
  const missing: string[] = [];
  for (const file of files.filter((f) => f.startsWith('lib/') && f.endsWith('.js'))) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/require\("(\.{1,2}\/[^"]+)"\)|require\('(\.{1,2}\/[^']+)'\)/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1] ?? m[2]));
      const candidates = [target, `${target}.js`, `${target}/index.js`];
      if (!candidates.some((c) => shipped.has(c))) missing.push(`${file} → ${m[1] ?? m[2]}`);
    }
  }
  expect(missing).toEqual([]);
});
