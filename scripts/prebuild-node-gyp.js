#!/usr/bin/env node
// prebuildify drives node-gyp (`--node-gyp <this file>`); we hand it the full cmake-js build
// instead, so the prebuild is the CUDA-capable binary. prebuildify's arguments (rebuild,
// --target, --devdir, --release) are for node-gyp: a Node-API addon needs none of them.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const result = spawnSync(process.execPath, [path.join(__dirname, 'build-native.js')], { stdio: 'inherit' });
process.exit(result.status ?? 1);
