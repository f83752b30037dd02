// Example models bound with the PyTriton-style API. `npm start` serves them (examples/serve.js).
'use strict';
const { NDArray, batch } = require('..');

/** AddSub: two FP32 vectors in, their sum and difference out, dynamically batched. */
function bindAddSub(triton) {
  triton.bind({
    modelName: 'AddSub',
    inferFunc: batch(({ a, b }) => {
      const add = new Float32Array(a.size);
      const sub = new Float32Array(a.size);
      for (let i = 0; i < a.size; i++) {
        add[i] = a.data[i] + b.data[i];
        sub[i] = a.data[i] - b.data[i];
      }
      return { add: new NDArray('FP32', a.shape, add), sub: new NDArray('FP32', a.shape, sub) };
    }),
    inputs: [
      { name: 'a', dtype: 'FP32', shape: [-1] },
      { name: 'b', dtype: 'FP32', shape: [-1] },
    ],
    outputs: [
      { name: 'add', dtype: 'FP32', shape: [-1] },
      { name: 'sub', dtype: 'FP32', shape: [-1] },
    ],
    config: { maxBatchSize: 64, batcher: { maxQueueDelayMicroseconds: 500 } },
  });
}

/** Identity: returns its BYTES input unchanged, two instances, no batching. */
function bindIdentity(triton) {
  const identity = (requests) => requests.map((r) => ({ OUTPUT: r.data.INPUT }));
  triton.bind({
    modelName: 'Identity',
    inferFunc: [identity, identity],
    inputs: [{ name: 'INPUT', dtype: 'BYTES', shape: [-1] }],
    outputs: [{ name: 'OUTPUT', dtype: 'BYTES', shape: [-1] }],
    config: { batching: false },
  });
}

module.exports = { bindAddSub, bindIdentity };
