/**
 * `new Triton({ config })` refuses options TritonConfig does not have (JS callers get no type
 * check), saying what to use instead; every real option passes.
 */
import { Triton } from '../../ts/triton';
import { TRITON_CONFIG_KEYS } from '../../ts/config/triton-config-keys';
import { InferenceServerError } from '../../ts/errors';

function refusal(config: Record<string, unknown>): InferenceServerError {
  try {
    new Triton({ config: config as never });
  } catch (err) {
    return err as InferenceServerError;
  }
  throw new Error(`accepted ${JSON.stringify(config)}`);
}

test('a repository given as a config option is pointed at useRepository', () => {
  const err = refusal({ modelRepository: ['./models'] });
  expect(err).toBeInstanceOf(InferenceServerError);
  expect(err.code).toBe('INVALID_ARG');
  expect(err.message).toBe("unknown TritonConfig option 'modelRepository': serve a model repository with " +
    'triton.useRepository({ repositories: [dir] }) before run()');
});

test('a misspelled option names the one meant', () => {
  expect(refusal({ httpPrt: 8000 }).message).toBe("unknown TritonConfig option 'httpPrt' (did you mean 'httpPort'?)");
  expect(refusal({ allowHttp: false, logverbose: 1 }).message).toBe("unknown TritonConfig option 'logverbose' (did you mean 'logVerbose'?)");
  expect(refusal({ nothingLikeIt: 1 }).message).toBe("unknown TritonConfig option 'nothingLikeIt': the options are the TritonConfig type's fields (docs/http.md and docs/grpc.md list them with their flags)");
});

test('every TritonConfig option is accepted', () => {
  const config = Object.fromEntries(TRITON_CONFIG_KEYS.map((key) => [key, undefined]));
  expect(() => new Triton({ config })).not.toThrow();
});
