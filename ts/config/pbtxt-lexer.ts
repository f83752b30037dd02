/**
 * The tokenizer of protobuf's text format as config.pbtxt files use it (the rules of protobuf's
 * io::Tokenizer with TextFormat's settings): `#` comments, identifiers, decimal/hex/octal
 * integers, floats (with an optional `f` suffix), single- or double-quoted strings with C
 * escapes, and the symbols `{ } < > [ ] : , ; -`. Every token knows its 1-based line and column
 * (columns count UTF-16 code units, a tab counting as one).
 */
import { InferenceServerError } from '../errors';

/** What a token is; `symbol` covers `{ } < > [ ] : , ; -`. */
export type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'symbol' | 'eof';

/** One token with its position in the file. */
export interface Token {
  kind: TokenKind;
  /** The source text (for strings: including the quotes, as written). */
  text: string;
  /** Strings only: the decoded value. */
  value?: string;
  line: number;
  col: number;
}

const SYMBOLS = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';', '-']);
const SIMPLE_ESCAPES: Record<string, number> = {
  n: 0x0a, t: 0x09, r: 0x0d, a: 0x07, b: 0x08, f: 0x0c, v: 0x0b, '\\': 0x5c, "'": 0x27, '"': 0x22, '?': 0x3f,
};
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** An INVALID_ARG error located at `file:line:col`, the form every config.pbtxt error takes. */
export function pbtxtError(file: string, line: number, col: number, message: string): InferenceServerError {
  return new InferenceServerError('INVALID_ARG', `${file}:${line}:${col}: ${message}`);
}

/** How a token reads in an error message. */
export function describeToken(token: Token): string {
  if (token.kind === 'eof') return 'end of file';
  if (token.kind === 'string') return `string ${token.text.length > 40 ? `${token.text.slice(0, 37)}...` : token.text}`;
  return `'${token.text}'`;
}

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isHex = (c: string): boolean => /^[0-9a-fA-F]$/.test(c);
const isIdentStart = (c: string): boolean => /^[A-Za-z_]$/.test(c);
const isIdentChar = (c: string): boolean => /^[A-Za-z0-9_]$/.test(c);

/** Turns config.pbtxt text into tokens, one at a time, with one token of look-ahead. */
export class PbtxtLexer {
  readonly file: string;
  readonly #text: string;
  #pos = 0;
  #line = 1;
  #col = 1;
  #peeked: Token | null = null;

  constructor(text: string, file: string) {
    this.#text = text;
    this.file = file;
  }

  /** The next token, without consuming it. */
  peek(): Token {
    this.#peeked ??= this.#scan();
    return this.#peeked;
  }

  /** Consumes and returns the next token. */
  next(): Token {
    const token = this.peek();
    this.#peeked = null;
    return token;
  }

  #error(line: number, col: number, message: string): InferenceServerError {
    return pbtxtError(this.file, line, col, message);
  }

  #char(offset = 0): string {
    return this.#text[this.#pos + offset] ?? '';
  }

  #advance(): string {
    const c = this.#text[this.#pos++];
    if (c === '\n') {
      this.#line++;
      this.#col = 1;
    } else {
      this.#col++;
    }
    return c;
  }

  #skipSpaceAndComments(): void {
    for (;;) {
      const c = this.#char();
      if (c === '#') {
        while (this.#char() !== '' && this.#char() !== '\n') this.#advance();
      } else if (c !== '' && ' \t\r\n\v\f'.includes(c)) {
        this.#advance();
      } else {
        return;
      }
    }
  }

  #scan(): Token {
    this.#skipSpaceAndComments();
    const line = this.#line;
    const col = this.#col;
    const c = this.#char();
    if (c === '') return { kind: 'eof', text: '', line, col };
    if (isIdentStart(c)) {
      const start = this.#pos;
      while (isIdentChar(this.#char())) this.#advance();
      return { kind: 'ident', text: this.#text.slice(start, this.#pos), line, col };
    }
    if (isDigit(c) || (c === '.' && isDigit(this.#char(1)))) return this.#number(line, col);
    if (c === '"' || c === "'") return this.#string(line, col);
    if (SYMBOLS.has(c)) {
      this.#advance();
      return { kind: 'symbol', text: c, line, col };
    }
    throw this.#error(line, col, `unexpected character '${c}'`);
  }

  #digits(test: (c: string) => boolean): void {
    while (test(this.#char())) this.#advance();
  }

  #number(line: number, col: number): Token {
    const start = this.#pos;
    let kind: TokenKind = 'int';
    if (this.#char() === '0' && (this.#char(1) === 'x' || this.#char(1) === 'X')) {
      this.#advance();
      this.#advance();
      if (!isHex(this.#char())) throw this.#error(line, col, '"0x" must be followed by hex digits');
      this.#digits(isHex);
    } else {
      this.#digits(isDigit);
      if (this.#char() === '.') {
        kind = 'float';
        this.#advance();
        this.#digits(isDigit);
      }
      if (this.#char() === 'e' || this.#char() === 'E') {
        kind = 'float';
        this.#advance();
        if (this.#char() === '+' || this.#char() === '-') this.#advance();
        if (!isDigit(this.#char())) throw this.#error(this.#line, this.#col, 'a float\'s exponent needs digits');
        this.#digits(isDigit);
      }
      if (this.#char() === 'f' || this.#char() === 'F') {
        kind = 'float';
        this.#advance();
      }
    }
    const text = this.#text.slice(start, this.#pos);
    if (isIdentChar(this.#char()) || this.#char() === '.') {
      throw this.#error(this.#line, this.#col, `unexpected '${this.#char()}' right after the number ${text}`);
    }
    if (kind === 'int' && /^0[0-9]+$/.test(text) && !/^0[0-7]+$/.test(text)) {
      throw this.#error(line, col, `invalid octal number ${text} (a leading 0 makes a number octal)`);
    }
    return { kind, text, line, col };
  }

  #string(line: number, col: number): Token {
    const quote = this.#advance();
    const start = this.#pos - 1;
    const bytes: number[] = [];
    for (;;) {
      const c = this.#char();
      if (c === '' || c === '\n') throw this.#error(line, col, `unterminated string (missing closing ${quote})`);
      if (c === quote) {
        this.#advance();
        break;
      }
      if (c === '\\') {
        this.#escape(bytes);
        continue;
      }
      const codePoint = this.#text.codePointAt(this.#pos)!;
      const char = String.fromCodePoint(codePoint);
      for (let i = 0; i < char.length; i++) this.#advance();
      bytes.push(...Buffer.from(char, 'utf8'));
    }
    let value: string;
    try {
      value = utf8.decode(Uint8Array.from(bytes));
    } catch {
      throw this.#error(line, col, 'the string is not valid UTF-8 after its escapes are applied');
    }
    return { kind: 'string', text: this.#text.slice(start, this.#pos), value, line, col };
  }

  /** One backslash escape; appends its bytes. */
  #escape(bytes: number[]): void {
    const line = this.#line;
    const col = this.#col;
    this.#advance();
    const c = this.#char();
    if (c in SIMPLE_ESCAPES) {
      this.#advance();
      bytes.push(SIMPLE_ESCAPES[c]);
    } else if (c >= '0' && c <= '7') {
      let digits = '';
      while (digits.length < 3 && this.#char() >= '0' && this.#char() <= '7') digits += this.#advance();
      const value = parseInt(digits, 8);
      if (value > 0xff) throw this.#error(line, col, `octal escape \\${digits} is larger than a byte`);
      bytes.push(value);
    } else if (c === 'x' || c === 'X') {
      this.#advance();
      let digits = '';
      while (digits.length < 2 && isHex(this.#char())) digits += this.#advance();
      if (digits === '') throw this.#error(line, col, '\\x must be followed by hex digits');
      bytes.push(parseInt(digits, 16));
    } else if (c === 'u' || c === 'U') {
      this.#advance();
      const length = c === 'u' ? 4 : 8;
      let digits = '';
      while (digits.length < length && isHex(this.#char())) digits += this.#advance();
      const codePoint = parseInt(digits, 16);
      if (digits.length !== length || codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) {
        throw this.#error(line, col, `\\${c} must be followed by ${length} hex digits of a Unicode code point`);
      }
      bytes.push(...Buffer.from(String.fromCodePoint(codePoint), 'utf8'));
    } else {
      throw this.#error(line, col, c === '' || c === '\n' ? 'unterminated string (backslash at end of line)'
        : `invalid escape sequence \\${c}`);
    }
  }
}
