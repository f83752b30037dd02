/**
 * The config.pbtxt parser: protobuf text format, checked against a message schema, producing the
 * protobuf-JSON form (proto field names, enums by name, repeated fields as arrays, maps as
 * objects keyed by string, integers exact: a JS number up to 2^53 - 1, a bigint beyond). As in Triton, which parses with protobuf's
 * TextFormat, an unknown field, a value of the wrong type, an unknown enum value, a non-repeated
 * field set twice or two members of one oneof are errors; each names the file, line and column.
 *
 * Accepted syntax: `field: value`, `field { ... }` / `field < ... >` (the `:` before a message is
 * optional), lists `field: [a, b]` / `field [ {..}, {..} ]` next to repeated `field: a field: b`,
 * map entries `field { key: .. value: .. }`, enums by name or number, adjacent strings
 * concatenated, bools as true/false/True/False/t/f/1/0, `inf`/`nan` for floats, and an optional
 * `,` or `;` after each field.
 */
import { PbtxtLexer, describeToken, pbtxtError, type Token } from './pbtxt-lexer';
import {
  defaultValue, enumChoices, exactInteger, integerProblem, isIntegerKind, suggestion,
  type EnumSpec, type FieldSpec, type FieldType, type MessageSpec, type ProtoJsonObject, type ProtoJsonValue,
  type ScalarKind,
} from './proto-schema';

const CLOSE: Record<string, string> = { '{': '}', '<': '>' };
const TRUE_WORDS = new Set(['true', 'True', 't']);
const FALSE_WORDS = new Set(['false', 'False', 'f']);

/** Where a field was first set in the current message, to report duplicates. */
interface Seen {
  fields: Map<string, Token>;
  oneofs: Map<string, string>;
}

function isSymbol(token: Token, symbol: string): boolean {
  return token.kind === 'symbol' && token.text === symbol;
}

/** Parses the text of one message of type `spec` (the whole file). */
export function parseTextMessage(text: string, file: string, spec: MessageSpec): ProtoJsonObject {
  return new PbtxtParser(new PbtxtLexer(text, file)).parseFile(spec);
}

class PbtxtParser {
  readonly #lex: PbtxtLexer;

  constructor(lex: PbtxtLexer) {
    this.#lex = lex;
  }

  #error(token: Token, message: string): Error {
    return pbtxtError(this.#lex.file, token.line, token.col, message);
  }

  #accept(symbol: string): boolean {
    if (!isSymbol(this.#lex.peek(), symbol)) return false;
    this.#lex.next();
    return true;
  }

  parseFile(spec: MessageSpec): ProtoJsonObject {
    return this.#fields(spec, null);
  }

  /** Fields up to `open`'s closing symbol, or to the end of the file when `open` is null. */
  #fields(spec: MessageSpec, open: Token | null): ProtoJsonObject {
    const out: ProtoJsonObject = {};
    const seen: Seen = { fields: new Map(), oneofs: new Map() };
    const close = open ? CLOSE[open.text] : null;
    for (;;) {
      const token = this.#lex.peek();
      if (open && token.kind === 'eof') {
        throw this.#error(token, `unterminated message: the '${open.text}' at line ${open.line}:${open.col} ` +
          `(${spec.name}) is never closed with '${close}'`);
      }
      if (close ? isSymbol(token, close) : token.kind === 'eof') {
        this.#lex.next();
        return out;
      }
      if (token.kind !== 'ident') {
        const expected = close ? `a field name of ${spec.name} or '${close}'` : `a field name of ${spec.name}`;
        throw this.#error(token, `expected ${expected}, found ${describeToken(token)}`);
      }
      this.#field(spec, out, seen);
      if (!this.#accept(',')) this.#accept(';');
    }
  }

  #field(spec: MessageSpec, out: ProtoJsonObject, seen: Seen): void {
    const nameToken = this.#lex.next();
    const field = spec.byName.get(nameToken.text);
    if (!field) {
      throw this.#error(nameToken, `unknown field '${nameToken.text}' in ${spec.name}` +
        `${suggestion(nameToken.text, spec.byName.keys())}`);
    }
    this.#markSeen(field, nameToken, seen);
    const isMessage = field.label === 'map' || field.type.kind === 'message';
    const colon = this.#accept(':');
    if (!isMessage && !colon) {
      throw this.#error(this.#lex.peek(), `expected ':' after field name '${field.name}', found ${describeToken(this.#lex.peek())}`);
    }
    const values = isSymbol(this.#lex.peek(), '[') ? this.#list(field) : [this.#value(field)];
    store(out, field, values);
  }

  #markSeen(field: FieldSpec, token: Token, seen: Seen): void {
    const first = seen.fields.get(field.name);
    if (field.label === 'singular' && first) {
      throw this.#error(token, `field '${field.name}' is set twice (first at line ${first.line}:${first.col}); ` +
        'it is not a repeated field');
    }
    if (field.oneof) {
      const other = seen.oneofs.get(field.oneof);
      if (other && other !== field.name) {
        throw this.#error(token, `field '${field.name}' cannot be set together with '${other}' ` +
          `(both belong to oneof '${field.oneof}')`);
      }
      seen.oneofs.set(field.oneof, field.name);
    }
    if (!first) seen.fields.set(field.name, token);
  }

  /** `[ v, v, ... ]` (possibly empty) for a repeated or map field. */
  #list(field: FieldSpec): ProtoJsonValue[] {
    const open = this.#lex.next();
    if (field.label === 'singular') {
      throw this.#error(open, `field '${field.name}' is not repeated, so it cannot take a list [...]`);
    }
    const values: ProtoJsonValue[] = [];
    if (this.#accept(']')) return values;
    for (;;) {
      values.push(this.#value(field));
      if (this.#accept(']')) return values;
      const token = this.#lex.next();
      if (!isSymbol(token, ',')) {
        throw this.#error(token, token.kind === 'eof'
          ? `unterminated list: the '[' at line ${open.line}:${open.col} is never closed with ']'`
          : `expected ',' or ']' in the list of '${field.name}', found ${describeToken(token)}`);
      }
    }
  }

  /** One value of `field`: a message body (map entries are messages), or a scalar. */
  #value(field: FieldSpec): ProtoJsonValue {
    if (field.label === 'map') return this.#message(field.entry!, field);
    if (field.type.kind === 'message') return this.#message(field.type.message, field);
    return this.#scalar(field, field.type);
  }

  #message(spec: MessageSpec, field: FieldSpec): ProtoJsonObject {
    const open = this.#lex.next();
    if (!isSymbol(open, '{') && !isSymbol(open, '<')) {
      throw this.#error(open, `expected '{' to start the ${spec.name} of field '${field.name}', found ${describeToken(open)}`);
    }
    return this.#fields(spec, open);
  }

  #scalar(field: FieldSpec, type: FieldType): ProtoJsonValue {
    if (type.kind === 'enum') return this.#enum(field, type.enumSpec);
    if (type.kind !== 'scalar') throw new Error('unreachable: message handled by #message');
    const scalar = type.scalar;
    if (scalar === 'string') return this.#string(field);
    if (scalar === 'bool') return this.#bool(field);
    if (isIntegerKind(scalar)) return this.#integer(field, scalar);
    return this.#float(field, scalar);
  }

  #string(field: FieldSpec): string {
    const token = this.#lex.next();
    if (token.kind !== 'string') throw this.#error(token, `expected a string for field '${field.name}', found ${describeToken(token)}`);
    let value = token.value!;
    // Adjacent string literals concatenate, as in C.
    while (this.#lex.peek().kind === 'string') value += this.#lex.next().value!;
    return value;
  }

  #bool(field: FieldSpec): boolean {
    const token = this.#lex.next();
    if (token.kind === 'ident' && TRUE_WORDS.has(token.text)) return true;
    if (token.kind === 'ident' && FALSE_WORDS.has(token.text)) return false;
    if (token.kind === 'int' && (token.text === '1' || token.text === '0')) return token.text === '1';
    throw this.#error(token, `expected true or false for field '${field.name}', found ${describeToken(token)}`);
  }

  /** An optionally negative integer token, exactly (BigInt). */
  #bigint(field: FieldSpec, what: string): { value: bigint; token: Token } {
    const first = this.#lex.peek();
    const negative = this.#accept('-');
    const token = this.#lex.next();
    if (token.kind !== 'int') {
      throw this.#error(token, `expected ${what} for field '${field.name}', found ${describeToken(token)}`);
    }
    const magnitude = /^0[0-7]+$/.test(token.text) ? BigInt(`0o${token.text.slice(1)}`) : BigInt(token.text);
    return { value: negative ? -magnitude : magnitude, token: first };
  }

  #integer(field: FieldSpec, kind: 'int32' | 'int64' | 'uint32' | 'uint64'): number | bigint {
    const { value, token } = this.#bigint(field, `an integer (${kind})`);
    const problem = integerProblem(kind, value);
    if (problem) throw this.#error(token, `invalid value for field '${field.name}': ${problem}`);
    return exactInteger(value);
  }

  #float(field: FieldSpec, kind: ScalarKind): number {
    const negative = this.#accept('-');
    const token = this.#lex.next();
    let value: number;
    if (token.kind === 'float') value = Number(token.text.replace(/[fF]$/, ''));
    else if (token.kind === 'int') value = Number(/^0[0-7]+$/.test(token.text) ? parseInt(token.text, 8) : token.text);
    else if (token.kind === 'ident' && /^(inf|infinity)$/i.test(token.text)) value = Infinity;
    else if (token.kind === 'ident' && /^nan$/i.test(token.text)) value = NaN;
    else throw this.#error(token, `expected a number (${kind}) for field '${field.name}', found ${describeToken(token)}`);
    return negative ? -value : value;
  }

  #enum(field: FieldSpec, spec: EnumSpec): string {
    const token = this.#lex.peek();
    if (token.kind === 'ident') {
      this.#lex.next();
      if (spec.values.includes(token.text)) return token.text;
      throw this.#error(token, `unknown value '${token.text}' for enum field '${field.name}' (${spec.name}); ` +
        `expected one of ${enumChoices(spec)}`);
    }
    if (token.kind !== 'int' && !isSymbol(token, '-')) {
      this.#lex.next();
      throw this.#error(token, `expected an enum value (${spec.name}) for field '${field.name}', found ${describeToken(token)}`);
    }
    const { value } = this.#bigint(field, 'an enum value');
    const name = value >= 0n && value < BigInt(spec.values.length) ? spec.values[Number(value)] : undefined;
    if (name === undefined) {
      throw this.#error(token, `unknown number ${value} for enum field '${field.name}' (${spec.name}); ` +
        `expected 0..${spec.values.length - 1}`);
    }
    return name;
  }
}

/** Adds parsed values to the message: set, append, or (maps) insert entries, the last key winning as in protobuf. */
function store(out: ProtoJsonObject, field: FieldSpec, values: ProtoJsonValue[]): void {
  if (field.label === 'singular') {
    out[field.name] = values[0];
  } else if (field.label === 'repeated') {
    const list = (out[field.name] ??= []) as ProtoJsonValue[];
    list.push(...values);
  } else {
    const map = (out[field.name] ??= {}) as ProtoJsonObject;
    for (const entry of values as ProtoJsonObject[]) {
      const key = entry.key ?? defaultValue({ kind: 'scalar', scalar: field.mapKey! });
      map[String(key)] = entry.value ?? defaultValue(field.type);
    }
  }
}
