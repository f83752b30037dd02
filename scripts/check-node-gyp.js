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
// enqueue's meta (ts/native.ts EnqueueMeta): one input, config index 0, FP32 (11), 8 bytes, shape [2];
// a JS engine's input is passed without data.
model.enqueue(1, new Float64Array([1, 0, 0, 0, -1, 0, 11, 8, 1, 2]), undefined, undefined);
const [dispatchView, idsView, codesView] = model.views();
const dispatch = model.pump();
// A dispatch is a count of request ids in views()[0] ([instance, token, ...ids]) or an array.
const ids = typeof dispatch === 'number' ? Array.from(dispatchView.subarray(2, 2 + dispatch)) : dispatch?.slice(2);
if (!ids || ids.length !== 1 || ids[0] !== 1) throw new Error('the request was not dispatched');
const [instance, token] = typeof dispatch === 'number' ? dispatchView : dispatch;
const done = model.completeBatch(instance, token, 0, '');
const [doneIds, doneCodes] = typeof done === 'number' ? [idsView.subarray(0, done), codesView.subarray(0, done)] : done;
if (doneIds[0] !== 1 || doneCodes[0] !== 0) throw new Error('the request did not complete');
model.stop();
fs.rmSync(work, { recursive: true, force: true });
console.log('node-gyp build: compiled, loaded, served one request (CPU-only)');
