/**
 * config.pbtxt in and out: Triton's `inference.ModelConfig` in protobuf text format, parsed to and
 * printed from the protobuf-JSON form (the same form as a load API JSON config), plus the JSON
 * validator for configs that arrive as JSON. One schema (`model-config-schema.ts`) drives all three.
 */
import { MODEL_CONFIG } from './model-config-schema';
import { parseTextMessage } from './pbtxt-parse';
import { printTextMessage } from './pbtxt-print';
import { validateProtoJson } from './proto-json';
import type { ProtoJsonObject } from './proto-schema';

export { MODEL_CONFIG } from './model-config-schema';
export type { ProtoJsonObject, ProtoJsonValue } from './proto-schema';

/**
 * Parses a config.pbtxt. Errors are INVALID_ARG `"<file>:<line>:<col>: <what was expected>"`.
 * @param text the file's contents
 * @param file the name errors give for the file (usually its path)
 */
export function parsePbtxt(text: string, file = 'config.pbtxt'): ProtoJsonObject {
  return parseTextMessage(text, file, MODEL_CONFIG);
}

/**
 * Checks a JSON model config (e.g. the load API's `config` parameter) against `inference.ModelConfig`
 * and returns its canonical protobuf-JSON form (proto field names, enum names, numbers).
 * @param where what errors name as the config's origin
 */
export function validateModelConfigJson(config: unknown, where = 'model config'): ProtoJsonObject {
  return validateProtoJson(MODEL_CONFIG, config, where);
}

/**
 * Prints a protobuf-JSON model config as config.pbtxt text (Triton style, 2-space indent).
 * The config is validated first, so loose JSON (camelCase names, lower-case enums, integers as
 * strings) prints in canonical form; `parsePbtxt(printPbtxt(x))` deep-equals the canonical `x`.
 */
export function printPbtxt(config: unknown): string {
  return printTextMessage(MODEL_CONFIG, validateModelConfigJson(config, 'config to print'));
}
