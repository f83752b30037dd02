// `npm start`: serves the example model repository (examples/models: an ONNX MLP classifier,
// an ONNX identity model without a config, a JS add_sub model) next to two models bound with
// the PyTriton-style API (examples/models.js), over HTTP, gRPC and metrics, until Ctrl-C.
// Ports: HTTP_PORT (8000), GRPC_PORT (8001), METRICS_PORT (8002).
'use strict';
const path = require('node:path');
const { Triton, NDArray } = require('..');
const { bindAddSub, bindIdentity } = require('./models');

function port(name, fallback) {
  const value = process.env[name];
  return value === undefined ? fallback : Number(value);
}

function howToCall(ports) {
  const http = `http://localhost:${ports.http}`;
  const input = Array.from({ length: 16 }, (_, i) => (i / 16).toFixed(3)).join(',');
  return [
    '',
    'Try it (Triton clients and perf_analyzer work too):',
    `  curl ${http}/v2/health/ready -i`,
    `  curl ${http}/v2/models/mlp_classifier/config`,
    `  curl -X POST ${http}/v2/repository/index`,
    `  curl -X POST ${http}/v2/models/add_sub/infer -d '{"inputs":[` +
      '{"name":"INPUT0","shape":[1,3],"datatype":"FP32","data":[1,2,3]},' +
      `{"name":"INPUT1","shape":[1,3],"datatype":"FP32","data":[10,20,30]}]}'`,
    `  curl -X POST ${http}/v2/models/mlp_classifier/infer -d '{"inputs":[` +
      `{"name":"input","shape":[1,16],"datatype":"FP32","data":[${input}]}],` +
      `"outputs":[{"name":"logits","parameters":{"classification":2}}]}'`,
    `  curl ${http}/v2/models/stats`,
    ports.metrics ? `  curl http://localhost:${ports.metrics}/metrics` : '',
    ports.grpc ? `  gRPC (tritonclient.grpc, perf_analyzer -i grpc): localhost:${ports.grpc}` : '',
    '',
  ].filter((line) => line !== '').join('\n');
}

async function main() {
  const triton = new Triton({
    config: { httpPort: port('HTTP_PORT', 8000), grpcPort: port('GRPC_PORT', 8001), metricsPort: port('METRICS_PORT', 8002) },
  });
  // Explicit control mode, every model loaded at start: the repository API can unload and
  // load them again while the server runs.
  triton.useRepository({ repositories: [path.join(__dirname, 'models')], controlMode: 'explicit', loadModels: ['*'] });
  bindAddSub(triton);
  bindIdentity(triton);
  await triton.run();

  const a = new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3]));
  const b = new NDArray('FP32', [1, 3], new Float32Array([10, 20, 30]));
  const { add, sub } = await triton.infer('AddSub', { a, b });
  console.log(`in-process AddSub([1,2,3], [10,20,30]) -> add ${Array.from(add.data)}, sub ${Array.from(sub.data)}`);
  console.log(`models: ${triton.models().map((m) => `${m.name}/${m.version}`).join(', ')}`);
  console.log(howToCall(triton.ports));
  console.log('serving; press Ctrl-C to stop');
  await triton.serve();
  console.log('stopped');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
