// simple_string: INPUT0 and INPUT1 hold integers as text; the outputs are their sum and
// difference as text. BYTES outputs are NDArrays: the input's own class makes them, so the model
// needs no require('infernode') from its temporary folder.
'use strict';

const asInt = (bytes) => Number.parseInt(Buffer.from(bytes).toString('utf8'), 10);
const asText = (n) => Buffer.from(String(n), 'utf8');

function execute(requests) {
  return requests.map(({ data: { INPUT0: a, INPUT1: b } }) => {
    const NDArray = a.constructor;
    const sum = [];
    const diff = [];
    for (let i = 0; i < a.size; i++) {
      sum.push(asText(asInt(a.data[i]) + asInt(b.data[i])));
      diff.push(asText(asInt(a.data[i]) - asInt(b.data[i])));
    }
    return { OUTPUT0: new NDArray('BYTES', a.shape, sum), OUTPUT1: new NDArray('BYTES', a.shape, diff) };
  });
}

module.exports = { execute };
