/**
 * Validates a JSON message against a schema and returns it in canonical protobuf-JSON form (the
 * parser's output form), with the leniency of protobuf's JSON parser as Triton configures it for
 * the load API's `config` parameter: proto or lowerCamelCase field names, enum names in any case
 * or enum numbers, 64-bit (and other) integers as numbers or decimal strings, floats as numbers
 * or "NaN"/"Infinity"/"-Infinity", `null` meaning "not set". Integers are read exactly over the
 * whole 64-bit range: a decimal string or a bigint gives any value; a JS number only up to
 * 2^53 - 1, since one beyond may already have been rounded (the load API reads its JSON text
 * exactly, so its numbers arrive as bigints). Unknown fields are errors, as are
 * wrong value types, two members of one oneof, and a field given under both of its names.
 */
import { describeValue } from '../describe-value';
import { invalidArg } from '../errors';
import {
  enumChoices, exactInteger, integerProblem, isIntegerKind, suggestion,
  type FieldSpec, type FieldType, type MessageSpec, type ProtoJsonObject, type ProtoJsonValue, type ScalarKind,
} from './proto-schema';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return describeValue(value, 40);
}

/**
 * The longest decimal string read as an integer: 20 digits hold every 64-bit value, the rest is
 * room for a sign, leading zeros and spaces (protobuf reads them too).
 */
const MAX_INTEGER_TEXT = 100;

class JsonValidator {
  readonly #where: string;

  constructor(where: string) {
    this.#where = where;
  }

  #error(path: string, message: string): Error {
    return invalidArg(`${this.#where}: ${path ? `field '${path}': ` : ''}${message}`);
  }

  message(spec: MessageSpec, value: unknown, path: string): ProtoJsonObject {
    if (!isPlainObject(value)) throw this.#error(path, `expected a JSON object (${spec.name}), got ${show(value)}`);
    const out: ProtoJsonObject = {};
    const oneofs = new Map<string, string>();
    for (const [key, item] of Object.entries(value)) {
      const field = spec.byName.get(key) ?? spec.byJsonName.get(key);
      const fieldPath = path ? `${path}.${key}` : key;
      if (!field) throw this.#error(fieldPath, `unknown field in ${spec.name}${suggestion(key, spec.byName.keys())}`);
      if (item === null) continue;
      if (out[field.name] !== undefined) throw this.#error(fieldPath, `'${field.name}' is given twice (as '${field.name}' and '${field.jsonName}')`);
      if (field.oneof) {
        const other = oneofs.get(field.oneof);
        if (other) throw this.#error(fieldPath, `cannot be set together with '${other}' (both belong to oneof '${field.oneof}')`);
        oneofs.set(field.oneof, field.name);
      }
      out[field.name] = this.#field(field, item, path ? `${path}.${field.name}` : field.name);
    }
    return out;
  }

  #field(field: FieldSpec, value: unknown, path: string): ProtoJsonValue {
    if (field.label === 'repeated') {
      if (!Array.isArray(value)) throw this.#error(path, `expected a JSON array, got ${show(value)}`);
      return value.map((item, i) => this.#value(field.type, item, `${path}[${i}]`));
    }
    if (field.label === 'map') {
      if (!isPlainObject(value)) throw this.#error(path, `expected a JSON object (a map), got ${show(value)}`);
      const out: ProtoJsonObject = {};
      for (const [key, item] of Object.entries(value)) {
        const canonicalKey = this.#mapKey(field.mapKey!, key, path);
        out[canonicalKey] = this.#value(field.type, item, `${path}[${JSON.stringify(key)}]`);
      }
      return out;
    }
    return this.#value(field.type, value, path);
  }

  #mapKey(kind: ScalarKind, key: string, path: string): string {
    if (kind === 'string') return key;
    return String(this.#integer(kind as 'uint64', key, `${path}[${JSON.stringify(key)}]`));
  }

  #value(type: FieldType, value: unknown, path: string): ProtoJsonValue {
    if (type.kind === 'message') return this.message(type.message, value, path);
    if (type.kind === 'enum') {
      const spec = type.enumSpec;
      if (typeof value === 'string') {
        const name = spec.values.find((v) => v === value) ?? spec.values.find((v) => v === value.toUpperCase());
        if (name) return name;
      } else if ((typeof value === 'number' || typeof value === 'bigint') && Number.isInteger(Number(value)) &&
        Number(value) >= 0 && Number(value) < spec.values.length) {
        return spec.values[Number(value)];
      }
      throw this.#error(path, `unknown value ${show(value)} for enum ${spec.name}; expected one of ${enumChoices(spec)}`);
    }
    const kind = type.scalar;
    if (kind === 'string') {
      if (typeof value !== 'string') throw this.#error(path, `expected a string, got ${show(value)}`);
      return value;
    }
    if (kind === 'bool') {
      if (typeof value !== 'boolean') throw this.#error(path, `expected true or false, got ${show(value)}`);
      return value;
    }
    if (isIntegerKind(kind)) return this.#integer(kind, value, path);
    return this.#float(kind, value, path);
  }

  #integer(kind: 'int32' | 'int64' | 'uint32' | 'uint64', value: unknown, path: string): number | bigint {
    let exact: bigint | null = null;
    if (typeof value === 'bigint') exact = value;
    else if (typeof value === 'number' && Number.isInteger(value)) exact = BigInt(value);
    else if (typeof value === 'string') {
      const text = value.trim();
      // Past MAX_INTEGER_TEXT no 64-bit value; BigInt() of millions of digits held the event loop.
      if (text.length > MAX_INTEGER_TEXT) {
        throw this.#error(path, `expected an integer (${kind}), got a string of ${text.length} characters: ${show(value)}`);
      }
      if (/^-?[0-9]+$/.test(text)) exact = BigInt(text);
    }
    if (exact === null) throw this.#error(path, `expected an integer (${kind}), got ${show(value)}`);
    const problem = integerProblem(kind, exact);
    if (problem) throw this.#error(path, problem);
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      // The number is what the caller's JSON parsing or arithmetic made of the value: beyond
      // 2^53 - 1 that may be a rounding of what was meant.
      throw this.#error(path, `${exact} is beyond 2^53 - 1 (${Number.MAX_SAFE_INTEGER}), where a JavaScript number may ` +
        `already have been rounded; give the value as a decimal string or a bigint`);
    }
    return exactInteger(exact);
  }

  #float(kind: ScalarKind, value: unknown, path: string): number {
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    if (value === 'NaN') return NaN;
    if (value === 'Infinity') return Infinity;
    if (value === '-Infinity') return -Infinity;
    if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
    throw this.#error(path, `expected a number (${kind}), got ${show(value)}`);
  }
}

/**
 * Checks `value` against `spec` and returns its canonical protobuf-JSON form. Errors are
 * INVALID_ARG, prefixed with `where` and naming the field's path (`input[0].dims[1]`).
 */
export function validateProtoJson(spec: MessageSpec, value: unknown, where: string): ProtoJsonObject {
  return new JsonValidator(where).message(spec, value, '');
}
