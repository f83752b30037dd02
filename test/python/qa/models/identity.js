// Triton's qa_identity_model_repository "zero" models (gen_qa_identity_models.py) as one JS
// model: every INPUT<i> comes back unchanged as OUTPUT<i>. Copied into each model's 1/model.js
// by test/integration/python-qa.test.ts.
'use strict';

function execute(requests) {
  return requests.map(({ data }) => {
    const outputs = {};
    for (const [name, tensor] of Object.entries(data)) outputs[name.replace(/^INPUT/, 'OUTPUT')] = tensor;
    return outputs;
  });
}

module.exports = { execute };
