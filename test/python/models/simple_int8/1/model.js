// simple_int8: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, element-wise (INT8
// [batch, 16], wrapping as Triton's model does).
'use strict';

function execute(requests) {
  return requests.map(({ data: { INPUT0: a, INPUT1: b } }) => {
    const sum = new Int8Array(a.size);
    const diff = new Int8Array(a.size);
    for (let i = 0; i < a.size; i++) {
      sum[i] = a.data[i] + b.data[i];
      diff[i] = a.data[i] - b.data[i];
    }
    return { OUTPUT0: sum, OUTPUT1: diff };
  });
}

module.exports = { execute };
