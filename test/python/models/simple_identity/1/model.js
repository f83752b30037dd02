// simple_identity: OUTPUT0 = INPUT0 (BYTES [batch, n]).
'use strict';

function execute(requests) {
  return requests.map((request) => ({ OUTPUT0: request.data.INPUT0 }));
}

module.exports = { execute };
