#!/usr/bin/env node
// Where ONNX Runtime's headers and library are: ONNXRUNTIME_ROOT (include/, lib/) when set,
// else the pinned npm package com.github.asus4.onnxruntime. Used by CMakeLists.txt and
// binding.gyp (`node scripts/ort-paths.js include`) and, at run time, by ts/engines/onnx.ts's
// twin logic.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const PACKAGE_HEADERS = 'Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/onnxruntime.framework/Headers';
const PACKAGE_LIBRARY = 'Plugins/Linux/x64/libonnxruntime.so';

function paths() {
  const root = process.env.ONNXRUNTIME_ROOT;
  if (root) {
    return { include: path.join(root, 'include'), library: path.join(root, 'lib', 'libonnxruntime.so') };
  }
  const pkg = path.dirname(require.resolve('com.github.asus4.onnxruntime/package.json', { paths: [path.join(__dirname, '..')] }));
  return { include: path.join(pkg, PACKAGE_HEADERS), library: path.join(pkg, PACKAGE_LIBRARY) };
}

module.exports = { paths };
if (require.main === module) {
  const which = process.argv[2] ?? 'include';
  const p = paths()[which];
  if (!p || !fs.existsSync(p)) {
    console.error(`ONNX Runtime ${which} not found (${p}); set ONNXRUNTIME_ROOT or install com.github.asus4.onnxruntime`);
    process.exit(1);
  }
  process.stdout.write(p);
}
