/**
 * The bound models the infer suites serve: one echo model per datatype, a two-input model, a
 * model reporting the parameters it received, a score model for classification, and a BYTES
 * model for raw binary requests.
 */
import { DATA_TYPES, NDArray } from '../../../ts/tensor';
import type { Triton } from '../../../ts/triton';
import type { Request } from '../../../ts/request';
import { echo } from './http-helpers';

export function bindInferModels(t: Triton): void {
  for (const dtype of DATA_TYPES) {
    t.bind({
      modelName: `echo_${dtype}`, inferFunc: echo({ OUT: 'IN' }),
      inputs: [{ name: 'IN', dtype, shape: [-1] }], outputs: [{ name: 'OUT', dtype, shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
  }
  t.bind({
    modelName: 'pair', inferFunc: echo({ OA: 'A', OB: 'B' }),
    inputs: [{ name: 'A', dtype: 'FP32', shape: [3] }, { name: 'B', dtype: 'INT32', shape: [3] }],
    outputs: [{ name: 'OA', dtype: 'FP32', shape: [3] }, { name: 'OB', dtype: 'INT32', shape: [3] }],
    config: { batching: false },
  });
  t.bind({
    modelName: 'params',
    inferFunc: (requests: Request[]) => requests.map((r) => ({
      P: new NDArray('BYTES', [1], [Buffer.from(JSON.stringify(r.parameters))]),
    })),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'P', dtype: 'BYTES', shape: [1] }],
    config: { batching: false },
  });
  t.bind({
    modelName: 'scores', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [5] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [5] }],
    config: { maxBatchSize: 4 },
  });
  t.bind({
    modelName: 'raw_bytes', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'BYTES', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [1] }],
    config: { batching: false },
  });
}
