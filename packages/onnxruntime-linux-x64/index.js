'use strict';
// The ONNX Runtime shared library of this package, for infernode's scripts/ort-paths.js.
const path = require('node:path');

module.exports = { library: path.join(__dirname, 'lib', 'libonnxruntime.so') };
