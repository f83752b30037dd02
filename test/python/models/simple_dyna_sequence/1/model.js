// simple_dyna_sequence: OUTPUT = INPUT + START, plus the correlation id on the sequence's last
// request, what the client repository's sequence examples (-d) expect of Triton's dyna_sequence.
'use strict';

function execute(requests) {
  return requests.map(({ data: { INPUT: input, START: start, END: end, CORRID: corrid } }) => {
    const last = end.data[0] === 1 ? Number(corrid.data[0]) : 0;
    return { OUTPUT: Int32Array.of(input.data[0] + start.data[0] + last) };
  });
}

module.exports = { execute };
