/**
 * The config.pbtxt printer: protobuf-JSON form → protobuf text format in Triton's style (2-space
 * indent, `dims: [ 3, 224, 224 ]`, repeated messages as `input [ {..}, {..} ]`, one
 * `key`/`value` block per map entry). Fields print in the schema's declaration order. The input
 * must already be in the canonical form (`validateProtoJson`'s output): parsing the printed text
 * gives back a deep-equal object.
 */
import type { FieldSpec, MessageSpec, ProtoJsonObject, ProtoJsonValue } from './proto-schema';

const INDENT = '  ';

/** Quotes a string so the lexer reads it back unchanged: C escapes for quotes, backslashes and control characters. */
export function quoteString(value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0)!;
    if (char === '"') out += '\\"';
    else if (char === '\\') out += '\\\\';
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    // Three octal digits always: an escape can never swallow a digit that follows it.
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else out += char;
  }
  return `${out}"`;
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  if (Object.is(value, -0)) return '-0';
  return String(value);
}

function formatScalar(field: FieldSpec, value: ProtoJsonValue): string {
  if (field.type.kind === 'enum') return String(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return quoteString(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return formatNumber(value as number);
}

function printBlock(name: string, body: string[], indent: string): string[] {
  if (body.length === 0) return [`${indent}${name} { }`];
  return [`${indent}${name} {`, ...body, `${indent}}`];
}

function printMessageList(field: FieldSpec, spec: MessageSpec, items: ProtoJsonObject[], indent: string): string[] {
  if (items.length === 0) return [`${indent}${field.name} [ ]`];
  const lines = [`${indent}${field.name} [`];
  items.forEach((item, i) => {
    const body = printFields(spec, item, indent + INDENT + INDENT);
    const close = i < items.length - 1 ? '},' : '}';
    if (body.length === 0) lines.push(`${indent}${INDENT}{ ${close}`);
    else lines.push(`${indent}${INDENT}{`, ...body, `${indent}${INDENT}${close}`);
  });
  lines.push(`${indent}]`);
  return lines;
}

function printMap(field: FieldSpec, map: ProtoJsonObject, indent: string): string[] {
  const keys = Object.keys(map);
  // An empty map still prints, as an empty list, so that the field is not lost on a round trip.
  if (keys.length === 0) return [`${indent}${field.name} [ ]`];
  const entry = field.entry!;
  const keyField = entry.fields[0];
  const valueField = entry.fields[1];
  const lines: string[] = [];
  for (const key of keys) {
    // Integer keys are the key's decimal digits, printed as they are (exact past 2^53).
    const keyText = keyField.type.kind === 'scalar' && keyField.type.scalar === 'string' ? formatScalar(keyField, key) : key;
    const body = [`${indent}${INDENT}key: ${keyText}`, ...printField(valueField, map[key], indent + INDENT)];
    lines.push(...printBlock(field.name, body, indent));
  }
  return lines;
}

function printField(field: FieldSpec, value: ProtoJsonValue, indent: string): string[] {
  if (field.label === 'map') return printMap(field, value as ProtoJsonObject, indent);
  if (field.type.kind === 'message') {
    const spec = field.type.message;
    if (field.label === 'repeated') return printMessageList(field, spec, value as ProtoJsonObject[], indent);
    return printBlock(field.name, printFields(spec, value as ProtoJsonObject, indent + INDENT), indent);
  }
  if (field.label === 'repeated') {
    const items = (value as ProtoJsonValue[]).map((v) => formatScalar(field, v));
    return [`${indent}${field.name}: [ ${items.join(', ')}${items.length > 0 ? ' ' : ''}]`];
  }
  return [`${indent}${field.name}: ${formatScalar(field, value)}`];
}

function printFields(spec: MessageSpec, message: ProtoJsonObject, indent: string): string[] {
  const lines: string[] = [];
  for (const field of spec.fields) {
    const value = message[field.name];
    if (value !== undefined) lines.push(...printField(field, value, indent));
  }
  return lines;
}

/** Prints a canonical protobuf-JSON message as text format (ends with a newline unless empty). */
export function printTextMessage(spec: MessageSpec, message: ProtoJsonObject): string {
  const lines = printFields(spec, message, '');
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
