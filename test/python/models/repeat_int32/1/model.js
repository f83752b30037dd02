// repeat_int32: for each element i of IN, one response { OUT: IN[i], IDX: i }. Triton's repeat
// backend also sleeps DELAY[i] ms before each response and WAIT ms before releasing the request;
// the clients check the values and their order, not the time, so this model does not sleep.
'use strict';

function* repeat(request) {
  const values = request.data.IN.data;
  for (let i = 0; i < values.length; i++) {
    yield { OUT: Int32Array.of(values[i]), IDX: Uint32Array.of(i) };
  }
}

function execute(requests) {
  return requests.map(repeat);
}

module.exports = { execute };
