/**
 * A small description language for protobuf messages, enough to drive the config.pbtxt parser,
 * its printer and the JSON validator from one description of Triton's `inference.ModelConfig`
 * (`model-config-schema.ts`). It also holds the value rules the three share: integer ranges,
 * JSON field names and defaults.
 */

/** Protobuf scalar types used by Triton's model config. */
export type ScalarKind = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float' | 'double';

/** A protobuf enum. Triton's enums are numbered 0..n-1 in declaration order, so a name's index is its number. */
export interface EnumSpec {
  readonly name: string;
  readonly values: readonly string[];
}

/** What one field (or one map value) holds. */
export type FieldType =
  | { readonly kind: 'scalar'; readonly scalar: ScalarKind }
  | { readonly kind: 'enum'; readonly enumSpec: EnumSpec }
  | { readonly kind: 'message'; readonly message: MessageSpec };

/** One field of a message: name, number, type, and whether it is singular, repeated or a map. */
export interface FieldSpec {
  /** The proto field name (snake_case), the name config.pbtxt and Triton's JSON use. */
  readonly name: string;
  /** protobuf's JSON name (lowerCamelCase), also accepted by the JSON validator. */
  readonly jsonName: string;
  readonly number: number;
  readonly type: FieldType;
  readonly label: 'singular' | 'repeated' | 'map';
  /** Map fields: the key type; the entry message is `entry` (fields `key` = 1, `value` = 2). */
  readonly mapKey?: ScalarKind;
  readonly entry?: MessageSpec;
  readonly oneof?: string;
  /**
   * 64-bit fields Triton's `/config` prints as JSON numbers (it post-processes these; protobuf
   * itself prints every 64-bit integer as a string).
   */
  readonly jsonNumber?: boolean;
}

/** One message type: its fields, looked up by proto name or JSON name. */
export interface MessageSpec {
  /** Fully qualified, e.g. `inference.ModelConfig`. */
  readonly name: string;
  /** In declaration order, which is the order the printer writes them in. */
  readonly fields: readonly FieldSpec[];
  readonly byName: ReadonlyMap<string, FieldSpec>;
  readonly byJsonName: ReadonlyMap<string, FieldSpec>;
}

/**
 * A value of the protobuf-JSON form the parser produces and the normalizer consumes. Integers
 * are exact: a number up to 2^53 - 1 in magnitude, a bigint beyond (64-bit fields only).
 */
export type ProtoJsonValue = string | number | bigint | boolean | ProtoJsonObject | ProtoJsonValue[];
/** A message in protobuf-JSON form: proto field names, enums by name, maps as objects keyed by string. */
export interface ProtoJsonObject {
  [field: string]: ProtoJsonValue;
}

/** Options of one field in a message description. */
export interface FieldOptions {
  repeated?: boolean;
  oneof?: string;
  jsonNumber?: boolean;
}

// The scalar field types, for message descriptions.
export const STRING: FieldType = { kind: 'scalar', scalar: 'string' };
export const BOOL: FieldType = { kind: 'scalar', scalar: 'bool' };
export const INT32: FieldType = { kind: 'scalar', scalar: 'int32' };
export const INT64: FieldType = { kind: 'scalar', scalar: 'int64' };
export const UINT32: FieldType = { kind: 'scalar', scalar: 'uint32' };
export const UINT64: FieldType = { kind: 'scalar', scalar: 'uint64' };
export const FLOAT: FieldType = { kind: 'scalar', scalar: 'float' };
export const DOUBLE: FieldType = { kind: 'scalar', scalar: 'double' };

/** An enum type, numbered by position. */
export function enumType(name: string, values: string[]): FieldType {
  return { kind: 'enum', enumSpec: { name, values } };
}

/** A message-typed field's type. */
export function messageType(message: MessageSpec): FieldType {
  return { kind: 'message', message };
}

/** protobuf's JSON name of a field: `max_batch_size` → `maxBatchSize`. */
export function jsonNameOf(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Describes a message; fields are listed in declaration order. */
export function message(name: string, fields: FieldSpec[]): MessageSpec {
  return {
    name,
    fields,
    byName: new Map(fields.map((f) => [f.name, f])),
    byJsonName: new Map(fields.map((f) => [f.jsonName, f])),
  };
}

/** A singular or repeated field. */
export function field(name: string, number: number, type: FieldType, options: FieldOptions = {}): FieldSpec {
  return {
    name,
    jsonName: jsonNameOf(name),
    number,
    type,
    label: options.repeated ? 'repeated' : 'singular',
    oneof: options.oneof,
    jsonNumber: options.jsonNumber,
  };
}

/** A `map<key, value>` field; text format writes it as repeated `{ key: .. value: .. }` entries. */
export function mapField(name: string, number: number, key: ScalarKind, value: FieldType): FieldSpec {
  const entry = message(`${name}Entry`, [
    field('key', 1, { kind: 'scalar', scalar: key }),
    field('value', 2, value),
  ]);
  return { name, jsonName: jsonNameOf(name), number, type: value, label: 'map', mapKey: key, entry };
}

const INT_RANGE: Record<'int32' | 'int64' | 'uint32' | 'uint64', [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * An integer in the canonical form of parsed configs: a number when JS represents it exactly
 * (|v| <= 2^53 - 1), else the bigint. Canonical values compare with `===` and deep equality.
 */
export function exactInteger(value: bigint): number | bigint {
  return value >= -MAX_SAFE && value <= MAX_SAFE ? Number(value) : value;
}

/** True for the integer scalar kinds (which the parser reads exactly, as BigInt, before range checks). */
export function isIntegerKind(kind: ScalarKind): kind is 'int32' | 'int64' | 'uint32' | 'uint64' {
  return kind === 'int32' || kind === 'int64' || kind === 'uint32' || kind === 'uint64';
}

/** True for int64/uint64, which protobuf's JSON form writes as strings. */
export function is64BitKind(kind: ScalarKind): boolean {
  return kind === 'int64' || kind === 'uint64';
}

/**
 * Checks an integer against its field's type (the whole 64-bit range, as protobuf reads it);
 * returns the problem, or null when it fits. What a value means at run time, and whether
 * infernode can serve it, is the normalizer's business (int64-fields.ts).
 */
export function integerProblem(kind: 'int32' | 'int64' | 'uint32' | 'uint64', value: bigint): string | null {
  const [min, max] = INT_RANGE[kind];
  if (value < 0n && min === 0n) return `a negative value (${value}) is not allowed for an unsigned (${kind}) field`;
  if (value < min || value > max) return `${value} is out of range for ${kind} (${min}..${max})`;
  return null;
}

/** The proto3 default of a scalar or enum (what an absent field means). */
export function defaultValue(type: FieldType): ProtoJsonValue {
  if (type.kind === 'message') return {};
  if (type.kind === 'enum') return type.enumSpec.values[0];
  if (type.scalar === 'string') return '';
  if (type.scalar === 'bool') return false;
  return 0;
}

/** Levenshtein distance, for "did you mean" hints on unknown names. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** " (did you mean 'x'?)" for a near miss among `candidates`, else "". */
export function suggestion(name: string, candidates: Iterable<string>): string {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean '${best}'?)` : '';
}

/** "one of A, B, C" for enum value lists in messages. */
export function enumChoices(spec: EnumSpec): string {
  return spec.values.join(', ');
}
