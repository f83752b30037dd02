/**
 * Property tests of the config.pbtxt parser and printer (ts/config/pbtxt*.ts):
 *
 * - No input crashes the parser: arbitrary text, token soup built from the schema's own field
 *   names and the lexer's edge cases (huge numbers, bad escapes, unterminated strings and
 *   messages, lone UTF-16 surrogates, deep nesting) either parses or throws the parser's own
 *   INVALID_ARG InferenceServerError — never a TypeError, RangeError or stack overflow.
 * - What parses is canonical: the JSON validator accepts it unchanged, and printing it parses
 *   back to the same object.
 * - Generated valid configs (every field of inference.ModelConfig, drawn from the schema) print
 *   and parse back deep-equal to their canonical form.
 */
import fc from 'fast-check';
import { InferenceServerError } from '../../ts/errors';
import { MODEL_CONFIG, parsePbtxt, printPbtxt, validateModelConfigJson, type ProtoJsonObject, type ProtoJsonValue } from '../../ts/config/pbtxt';
import type { FieldSpec, FieldType, MessageSpec, ScalarKind } from '../../ts/config/proto-schema';
import { settings } from './fc-settings';

/** Parses; returns the config, or the parser's error (anything else fails the property). */
function parseOrError(text: string): ProtoJsonObject | InferenceServerError {
  try {
    return parsePbtxt(text, 'fuzz/config.pbtxt');
  } catch (err) {
    if (err instanceof InferenceServerError && err.code === 'INVALID_ARG' && err.message.startsWith('fuzz/config.pbtxt:')) return err;
    throw err;
  }
}

/** Every field name of every message in the schema, for token soup that gets past "unknown field". */
function fieldNames(spec: MessageSpec, into = new Set<string>()): Set<string> {
  for (const field of spec.fields) {
    if (into.has(`${spec.name}.${field.name}`)) continue;
    into.add(`${spec.name}.${field.name}`);
    into.add(field.name);
    if (field.entry) fieldNames(field.entry, into);
    if (field.type.kind === 'message') fieldNames(field.type.message, into);
  }
  return new Set([...into].filter((n) => !n.includes('.')));
}

const NAMES = [...fieldNames(MODEL_CONFIG)];
const EDGE_TOKENS = [
  '{', '}', '<', '>', '[', ']', ':', ',', ';', '-', '\n', ' ', '#c\n',
  '0', '1', '-1', '007', '08', '0x', '0xFF', '0x7fffffffffffffffffff', '99999999999999999999999999', '9007199254740993',
  '1e', '1e5', '1.5f', '.5', '1.', '1e+', 'inf', '-inf', 'nan', 'NaN', 'Infinity', 'true', 'True', 't', 'f', 'false',
  '"s"', "'s'", '"', "'", '"\\', '"\\x"', '"\\xff"', '"\\377"', '"\\400"', '"\\u12"', '"\\ud800"', '"\\U0010ffff"',
  '"\\U00110000"', '"\\q"', '"a\nb"', '"\u{1F600}"', '"\ud800"', '\udc00', '\u0000', '\u00ff', '@', '$', '\\',
  'TYPE_FP32', 'KIND_CPU', 'KIND_GPU', 'FORMAT_NCHW', 'TYPE_BOGUS',
];

const tokenSoup = fc.array(fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 4, arbitrary: fc.constantFrom(...EDGE_TOKENS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
), { maxLength: 60 }).map((tokens) => tokens.join(' '));

/** Text that may hold lone surrogates and control characters, as a mis-decoded file would. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('utf8')),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
);

describe('config.pbtxt parser: no input crashes it', () => {
  test('arbitrary text parses or fails with the parser\'s INVALID_ARG error', () => {
    fc.assert(fc.property(anyText, (text) => {
      parseOrError(text);
    }), settings(3000));
  });

  test('token soup from the schema\'s names and the lexer\'s edge cases parses or fails cleanly', () => {
    fc.assert(fc.property(tokenSoup, (text) => {
      parseOrError(text);
    }), settings(3000));
  });

  test('deep nesting, huge numbers and long strings fail (or parse) without exhausting the stack', () => {
    const depth = fc.integer({ min: 1, max: 50_000 });
    fc.assert(fc.property(depth, fc.constantFrom('input {', 'input [', 'input <', 'optimization { cuda {', '{', '[', 'dims: [', 'name: '), (n, open) => {
      parseOrError(open.repeat(n));
      parseOrError(`version_policy { specific { versions: [ ${'1,'.repeat(n)} 1 ] } }`);
      parseOrError(`max_batch_size: ${'9'.repeat(n % 5000)}`);
      parseOrError(`name: "${'\\x41'.repeat(n % 5000)}`);
    }), settings(40));
  });

  test('what parses is canonical: the JSON validator keeps it, and print → parse gives it back', () => {
    fc.assert(fc.property(fc.oneof(tokenSoup, validConfigText()), (text) => {
      const parsed = parseOrError(text);
      if (parsed instanceof InferenceServerError) return;
      expect(validateModelConfigJson(parsed)).toEqual(parsed);
      expect(parsePbtxt(printPbtxt(parsed))).toEqual(parsed);
    }), settings(1500));
  });
});

// ---- generated valid configs, from the schema ----

const INT_BOUNDS: Record<'int32' | 'int64' | 'uint32' | 'uint64', [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

/** Protobuf strings are UTF-8: any code point but a lone surrogate, control characters included. */
const protoString = fc.string({ unit: 'binary', maxLength: 12 });

function scalarArb(kind: ScalarKind): fc.Arbitrary<ProtoJsonValue> {
  switch (kind) {
    case 'string': return protoString;
    case 'bool': return fc.boolean();
    case 'float':
    case 'double': return fc.double();
    default: {
      const [min, max] = INT_BOUNDS[kind];
      return fc.oneof(fc.integer({ min: Math.max(min, -1000), max: Math.min(max, 1000) }), fc.constantFrom(min, max));
    }
  }
}

function valueArb(type: FieldType, depth: number): fc.Arbitrary<ProtoJsonValue> {
  if (type.kind === 'enum') return fc.constantFrom(...type.enumSpec.values);
  if (type.kind === 'message') return messageArb(type.message, depth + 1);
  return scalarArb(type.scalar);
}

function fieldArb(field: FieldSpec, depth: number): fc.Arbitrary<ProtoJsonValue> {
  if (field.label === 'repeated') return fc.array(valueArb(field.type, depth), { maxLength: 3 });
  if (field.label === 'map') {
    const key = field.mapKey === 'string' ? protoString : scalarArb(field.mapKey!).map(String);
    return fc.dictionary(key as fc.Arbitrary<string>, valueArb(field.type, depth), { maxKeys: 2 });
  }
  return valueArb(field.type, depth);
}

/** A message with a random subset of its fields (at most one member per oneof); bounded depth and size. */
function messageArb(spec: MessageSpec, depth: number): fc.Arbitrary<ProtoJsonObject> {
  const fields = depth > 4 ? spec.fields.filter((f) => f.type.kind !== 'message' && f.label !== 'map') : spec.fields;
  if (fields.length === 0) return fc.constant({});
  return fc.subarray([...fields], { maxLength: Math.min(fields.length, depth === 0 ? 8 : 4) }).chain((chosen) => {
    const seenOneofs = new Set<string>();
    const kept = chosen.filter((f) => !f.oneof || (!seenOneofs.has(f.oneof) && seenOneofs.add(f.oneof)));
    const record: Record<string, fc.Arbitrary<ProtoJsonValue>> = {};
    for (const f of kept) record[f.name] = fieldArb(f, depth);
    return fc.record(record) as fc.Arbitrary<ProtoJsonObject>;
  });
}

const validConfig = messageArb(MODEL_CONFIG, 0);

function validConfigText(): fc.Arbitrary<string> {
  return validConfig.map((config) => printPbtxt(config));
}

describe('config.pbtxt printer: generated valid configs round-trip', () => {
  test('parse(print(config)) deep-equals the canonical config', () => {
    fc.assert(fc.property(validConfig, (config) => {
      const canonical = validateModelConfigJson(config);
      expect(parsePbtxt(printPbtxt(config))).toEqual(canonical);
    }), settings(600));
  });

  test('the same config given with JSON names (lowerCamelCase) prints the same text', () => {
    const camel = (value: ProtoJsonValue, spec: MessageSpec): ProtoJsonValue => {
      const out: ProtoJsonObject = {};
      for (const [name, v] of Object.entries(value as ProtoJsonObject)) {
        const field = spec.byName.get(name)!;
        const sub = field.label === 'map' ? null : field.type.kind === 'message' ? field.type.message : null;
        const convert = (x: ProtoJsonValue): ProtoJsonValue => (sub ? camel(x, sub) : x);
        out[field.jsonName] = field.label === 'repeated' ? (v as ProtoJsonValue[]).map(convert) : field.label === 'map' ? v : convert(v);
      }
      return out;
    };
    fc.assert(fc.property(validConfig, (config) => {
      expect(printPbtxt(camel(config, MODEL_CONFIG))).toBe(printPbtxt(config));
    }), settings(300));
  });
});
