// simple_string_dyna_sequence: Triton's dyna_sequence backend with a string correlation id that
// reads as an integer: OUTPUT accumulates INPUT over the sequence (START resets it), and the last
// request adds the correlation id. The sums live here, per correlation id, until END.
'use strict';

const sums = new Map();

function execute(requests) {
  return requests.map(({ data: { INPUT: input, START: start, END: end, CORRID: corrid } }) => {
    const id = Buffer.from(corrid.data[0]).toString('utf8');
    let sum = (start.data[0] === 1 ? 0 : sums.get(id) ?? 0) + input.data[0];
    sums.set(id, sum);
    if (end.data[0] === 1) {
      sum += Number.parseInt(id, 10);
      sums.delete(id);
    }
    return { OUTPUT: Int32Array.of(sum) };
  });
}

module.exports = { execute };
