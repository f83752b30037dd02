/** triton.infer(): results typed by a model spec the caller knows; untyped calls as before. Compiled, never run. */
import { expectTypeOf } from 'expect-type';
import { NDArray, Triton, defineModel } from '../../ts/index';

declare const triton: Triton;

const AddSub = defineModel({
  inputs: [{ name: 'a', dtype: 'FP32', shape: [-1] }, { name: 'b', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'add', dtype: 'FP32', shape: [-1] }, { name: 'ids', dtype: 'UINT64', shape: [-1] }],
});

async function typed(): Promise<void> {
  // Any input form: an NDArray, a bare TypedArray (one sample), { data, shape }.
  const out = await triton.infer<typeof AddSub>('AddSub', {
    a: new Float32Array([1, 2, 3]),
    b: { data: new Float32Array([4, 5, 6]), shape: [1, 3] },
  });
  expectTypeOf(out.add).toEqualTypeOf<NDArray<Float32Array>>();
  expectTypeOf(out.ids.data).toEqualTypeOf<BigUint64Array>();
  const first: number = out.add.data[0];

  // @ts-expect-error 'sub' is not an output of AddSub
  out.sub;
  // @ts-expect-error input 'b' is missing
  await triton.infer<typeof AddSub>('AddSub', { a: new Float32Array(3) });
  // @ts-expect-error input 'a' is FP32: an Int32Array does not fit
  await triton.infer<typeof AddSub>('AddSub', { a: new Int32Array(3), b: new Float32Array(3) });
}

async function untyped(): Promise<void> {
  const out = await triton.infer('AnyModel', { IN: new Float32Array(4), TEXT: ['a', 'b'], N: new NDArray('INT32', [1], new Int32Array(1)) });
  expectTypeOf(out).toEqualTypeOf<Record<string, NDArray>>();
  for await (const step of triton.inferStream('Countdown', { N: new Int32Array([3]) })) {
    expectTypeOf(step).toEqualTypeOf<Record<string, NDArray>>();
  }
}

void typed;
void untyped;
