#!/usr/bin/env node
// Writes the ONNX models the project commits or benchmarks, with infernode's own ONNX writer
// (ts/tools/onnx, compiled to lib/ by `npx tsc -p tsconfig.json`; no Python needed).
//
//   node scripts/make-models.js                 examples: mlp_classifier, identity_fp32 → examples/models
//   node scripts/make-models.js --out DIR       the same models under DIR
//   node scripts/make-models.js --out DIR --bench
//                                               the benchmark MLP (256→2048→2048→2048→10, ~36 MB)
//                                               → DIR/mlp_bench/1/model.onnx (not committed)
'use strict';
const path = require('node:path');

const USAGE = `usage: node scripts/make-models.js [--out DIR] [--bench]
  --out DIR   model repository to write into (default: examples/models)
  --bench     write only the benchmark MLP (~36 MB) as DIR/mlp_bench/1/model.onnx; needs --out`;

function parseArgs(argv) {
  const args = { out: undefined, bench: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bench') args.bench = true;
    else if (a === '--out') {
      args.out = argv[++i];
      if (!args.out) throw new Error('--out needs a directory');
    } else if (a.startsWith('--out=')) args.out = a.slice('--out='.length);
    else if (a === '--help' || a === '-h') args.help = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

function loadWriter() {
  try {
    return require('../lib/tools/onnx');
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND') {
      throw new Error('lib/tools/onnx is not built: run `npx tsc -p tsconfig.json` first');
    }
    throw err;
  }
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.help) {
    console.log(USAGE);
    return;
  }
  const onnx = loadWriter();
  const root = path.resolve(args.out ?? path.join(__dirname, '..', 'examples', 'models'));
  const models = args.bench
    ? { mlp_bench: () => onnx.benchMlpModel() }
    : { mlp_classifier: () => onnx.classifierModel(), identity_fp32: () => onnx.identityModel('FP32', ['length']) };
  if (args.bench && !args.out) throw new Error('--bench needs --out DIR (the benchmark model is not committed)');
  for (const [name, make] of Object.entries(models)) {
    const file = path.join(root, name, '1', 'model.onnx');
    const bytes = onnx.writeModelFile(file, make());
    const shown = path.relative(process.cwd(), file);
    console.log(`${shown.startsWith('..') ? file : shown}: ${bytes} bytes`);
  }
}

try {
  main();
} catch (err) {
  console.error(`make-models: ${err.message}`);
  console.error(USAGE);
  process.exit(1);
}
