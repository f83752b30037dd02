#!/usr/bin/env node
// CI check that the fallback node-gyp build (binding.gyp, CPU-only) still compiles and loads:
// builds a copy of the sources in a temporary folder (so the cmake-js build/ stays untouched),
// loads the result and runs one request through a NativeModel.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { nodeGyp } = require('./build-native');

const root = path.join(__dirname, '..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'infernode-gyp-'));
fs.cpSync(path.join(root, 'cpp'), path.join(work, 'cpp'), { recursive: true });
fs.copyFileSync(path.join(root, 'binding.gyp'), path.join(work, 'binding.gyp'));
fs.cpSync(path.join(root, 'third_party'), path.join(work, 'third_party'), { recursive: true });
fs.mkdirSync(path.join(work, 'scripts'));
fs.copyFileSync(path.join(root, 'scripts', 'ort-paths.js'), path.join(work, 'scripts', 'ort-paths.js'));
fs.symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'));

if (!nodeGyp(work)) {
  console.error('node-gyp build failed');
  process.exit(1);
}
const addon = require(path.join(work, 'build', 'Release', 'infernode.node'));
addon.init(class extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
});
const info = addon.buildInfo();
if (info.cuda !== false) throw new Error('the node-gyp build must be CPU-only');

const config = {
  name: 'gyp_check', version: 1, maxBatchSize: 0, backend: 'js', dynamicBatching: null,
  inputs: [{ name: 'IN', dtype: 'FP32', dims: [2], optional: false, allowRaggedBatch: false }],
  outputs: [{ name: 'OUT', dtype: 'FP32', dims: [2], optional: false, allowRaggedBatch: false }],
  instanceGroup: [{ count: 1, kind: 'KIND_CPU' }], maxQueueSizeHardLimit: 16,
};
const model = new addon.NativeModel(config, () => {}, () => {});
model.enqueue(1, ['IN', 11, [2], new Float32Array(2)], 0, 0);
const dispatch = model.pump();
if (!dispatch || dispatch[2] !== 1) throw new Error('the request was not dispatched');
const done = model.completeBatch(dispatch[0], dispatch[1], 0, '');
if (!done || done[0][0] !== 1 || done[1][0] !== 0) throw new Error('the request did not complete');
model.stop();
fs.rmSync(work, { recursive: true, force: true });
console.log('node-gyp build: compiled, loaded, served one request (CPU-only)');
