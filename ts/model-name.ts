/**
 * The one bound on model names, checked wherever a name arrives (bind, in-process infer, the
 * HTTP and gRPC frontends through Triton's lookups, the repository manager) before the name is
 * hashed, matched, stored or echoed: a client cannot make the server hold or print megabytes
 * per request by sending a long name.
 */
import { clip, invalidArg } from './errors';

/**
 * Model names are directory names of the repository, so a file name's limit (255 bytes on
 * Linux, macOS and Windows) bounds them. Valid names are ASCII (MODEL_NAME_PATTERN), so
 * characters and bytes count the same.
 */
export const MAX_MODEL_NAME_LENGTH = 255;

/** INVALID_ARG when `name` is not a string or is longer than MAX_MODEL_NAME_LENGTH. */
export function checkModelNameLength(name: unknown): void {
  if (typeof name !== 'string') throw invalidArg(`a model name must be a string, got ${typeof name}`);
  if (name.length > MAX_MODEL_NAME_LENGTH) {
    throw invalidArg(`model name '${clip(name, 32)}' is too long: model names are directory names ` +
      `and may be at most ${MAX_MODEL_NAME_LENGTH} characters`);
  }
}
