/**
 * Serves a documentation block's JS model from a repository (docs-blocks.test.ts writes it
 * with the model's config) in process, sends it one request and checks the answer.
 *
 *   node js-model-check.js REPOSITORY MODEL
 */
'use strict';
const assert = require('node:assert/strict');
const { Triton, NDArray } = require('infernode');

/** Per model of the docs: the request and what the answer must be. */
const CHECKS = {
  async add_sub(triton) {
    const a = new NDArray('FP32', [1, 4], new Float32Array([1, 2, 3, 4]));
    const b = new NDArray('FP32', [1, 4], new Float32Array([10, 20, 30, 40]));
    const { OUTPUT0 } = await triton.infer('add_sub', { INPUT0: a, INPUT1: b });
    assert.deepEqual(Array.from(OUTPUT0.data), [11, 22, 33, 44]);
  },
  async counter(triton) {
    const ks = [];
    for await (const { K } of triton.inferStream('counter', { N: new NDArray('INT32', [1, 1], new Int32Array([3])) })) ks.push(K.data[0]);
    assert.deepEqual(ks, [0, 1, 2]);
  },
};

async function main() {
  const [repository, model] = process.argv.slice(2);
  const check = CHECKS[model];
  if (!check) throw new Error(`no check for the docs' model '${model}': add one to test/docs/js-model-check.js`);
  const triton = new Triton({ config: { allowHttp: false, allowGrpc: false, allowMetrics: false } });
  triton.useRepository({ repositories: [repository] });
  await triton.run();
  try {
    await check(triton);
  } finally {
    await triton.stop();
  }
  console.log(`model '${model}' answered as expected`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
