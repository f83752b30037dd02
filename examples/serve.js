// `npm start`: binds the example models and serves them until Ctrl-C.
'use strict';
const { Triton, NDArray } = require('..');
const { bindAddSub, bindIdentity } = require('./models');

async function main() {
  const triton = new Triton({ config: { httpPort: Number(process.env.HTTP_PORT ?? 8000) } });
  bindAddSub(triton);
  bindIdentity(triton);
  await triton.run();

  const a = new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3]));
  const b = new NDArray('FP32', [1, 3], new Float32Array([10, 20, 30]));
  const { add, sub } = await triton.infer('AddSub', { a, b });
  console.log(`in-process AddSub([1,2,3], [10,20,30]) -> add ${Array.from(add.data)}, sub ${Array.from(sub.data)}`);
  console.log(`models: ${triton.models().map((m) => m.name).join(', ')}`);
  console.log('serving; press Ctrl-C to stop');
  await triton.serve();
  console.log('stopped');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
