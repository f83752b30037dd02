/** ModelClient<M>: inputs by name and results typed by a model spec the caller knows; untyped as before. Compiled, never run. */
import { expectTypeOf } from 'expect-type';
import { ModelClient, NDArray, defineModel } from '../../ts/index';

const AddSub = defineModel({
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'ids', dtype: 'INT64', shape: [-1] }],
});

async function typed(): Promise<void> {
  const client = new ModelClient<typeof AddSub>('localhost:8000', 'AddSub');
  const out = await client.inferSample({ a: new Float32Array([1, 2]), b: new NDArray('FP32', [2], new Float32Array(2)) });
  expectTypeOf(out.add).toEqualTypeOf<NDArray<Float32Array>>();
  expectTypeOf(out.ids.data).toEqualTypeOf<BigInt64Array>();
  const batch = await client.inferBatch({ a: new Float32Array(4), b: new Float32Array(4) });
  expectTypeOf(batch.add.data).toEqualTypeOf<Float32Array>();
  // Positional inputs (the config's order) stay accepted, untyped.
  await client.inferSample([new Float32Array(2), new Float32Array(2)]);

  // @ts-expect-error 'sub' is not an output of AddSub
  out.sub;
  // @ts-expect-error input 'b' is missing
  await client.inferSample({ a: new Float32Array(2) });
  // @ts-expect-error input 'a' is FP32: an Int32Array does not fit
  await client.inferSample({ a: new Int32Array(2), b: new Float32Array(2) });
}

async function untyped(): Promise<void> {
  const client = new ModelClient('localhost:8000', 'anything');
  const out = await client.inferSample({ x: new Int32Array(3), y: ['text'] });
  expectTypeOf(out).toEqualTypeOf<Record<string, NDArray>>();
}

void typed;
void untyped;
