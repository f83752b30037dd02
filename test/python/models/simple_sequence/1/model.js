// simple_sequence: OUTPUT = INPUT + START, what the client repository's sequence examples expect
// of Triton's simple_sequence model (the first request's output is its input plus one, the
// others' their input).
'use strict';

function execute(requests) {
  return requests.map(({ data: { INPUT: input, START: start } }) =>
    ({ OUTPUT: Int32Array.of(input.data[0] + start.data[0]) }));
}

module.exports = { execute };
