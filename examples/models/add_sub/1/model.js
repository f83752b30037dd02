// add_sub: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 — a JS model in a Triton model
// repository, the Node twin of Triton's Python backend (initialize / execute / finalize).
//
// Outputs may be NDArrays (require('infernode') where it resolves from the model's folder) or
// plain TypedArrays, whose shape follows from the declared dims: here [rows, n].
'use strict';

let instances = 0;

/** Once per instance, before the model is ready. */
function initialize(args) {
  instances += 1;
  console.log(`add_sub: instance ${args.instanceName} of version ${args.modelVersion} ready`);
}

/** One call per batch: one outputs object per request, in order. */
function execute(requests) {
  return requests.map((request) => {
    const a = request.data.INPUT0;
    const b = request.data.INPUT1;
    if (a.size !== b.size) throw new Error(`INPUT0 has ${a.size} elements, INPUT1 has ${b.size}`);
    const sum = new Float32Array(a.size);
    const diff = new Float32Array(a.size);
    for (let i = 0; i < a.size; i++) {
      sum[i] = a.data[i] + b.data[i];
      diff[i] = a.data[i] - b.data[i];
    }
    return { OUTPUT0: sum, OUTPUT1: diff };
  });
}

/** When the model is unloaded, after its last request. */
function finalize() {
  console.log(`add_sub: finalized ${instances} instance(s)`);
  instances = 0;
}

module.exports = { initialize, execute, finalize };
