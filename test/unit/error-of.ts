/** The InferenceServerError `fn` throws (the test fails when it throws something else, or nothing). */
import { InferenceServerError } from '../../ts/errors';

export function errorOf(fn: () => unknown): InferenceServerError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InferenceServerError);
    return err as InferenceServerError;
  }
  throw new Error('expected an error');
}
