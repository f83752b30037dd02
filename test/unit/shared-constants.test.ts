/**
 * Constants the TypeScript side and native code (or several TypeScript modules) must agree on,
 * defined once per language and checked here by reading the sources (no build needed):
 * - Triton's status codes: cpp/core/status.h's `StatusCode` and ts/errors.ts's `StatusCode`
 *   (codes cross the addon boundary as numbers);
 * - the per-model queue cap: cpp/core/model_config.h's kDefaultMaxQueueSizeHardLimit and
 *   ts/config/defaults.ts's DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT, with no number written in their place;
 * - the 30 s drain timeout (Triton's --exit-timeout-secs): ts/config/defaults.ts only.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { StatusCode } from '../../ts/errors';
import { DEFAULT_EXIT_TIMEOUT_MS, DEFAULT_EXIT_TIMEOUT_SECS, DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT } from '../../ts/config/defaults';

const root = path.resolve(__dirname, '../..');

function read(relative: string): string {
  return readFileSync(path.join(root, relative), 'utf8');
}

function filesUnder(relative: string, pattern: RegExp): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, relative))) {
    const child = `${relative}/${entry}`;
    if (statSync(path.join(root, child)).isDirectory()) found.push(...filesUnder(child, pattern));
    else if (pattern.test(entry)) found.push(child);
  }
  return found;
}

/** Lines (as "file:line: text") of the given files that match `pattern`. */
function linesMatching(files: string[], pattern: RegExp): string[] {
  const hits: string[] = [];
  for (const file of files) {
    read(file).split('\n').forEach((text, index) => {
      if (pattern.test(text)) hits.push(`${file}:${index + 1}: ${text.trim()}`);
    });
  }
  return hits;
}

/** The enumerators of `enum class <name>` in a C++ header, e.g. { kInternal: 2, ... }. */
function cppEnum(header: string, name: string): Record<string, number> {
  const body = new RegExp(`enum class ${name}\\b[^{]*\\{([^}]*)\\}`).exec(read(header));
  if (!body) throw new Error(`${header} has no enum class ${name}`);
  const values: Record<string, number> = {};
  for (const match of body[1].matchAll(/(k\w+)\s*=\s*(\d+)/g)) values[match[1]] = Number(match[2]);
  return values;
}

/** kInvalidArg → INVALID_ARG: the C++ enumerator's name as ts/errors.ts spells it. */
function tsCodeName(cppName: string): string {
  return cppName.slice(1).replace(/(?<=[a-z])(?=[A-Z])/g, '_').toUpperCase();
}

const cppSources = [...filesUnder('cpp', /\.(h|cc)$/), ...filesUnder('cuda', /\.cu$/)];
const tsSources = filesUnder('ts', /\.ts$/);

describe('StatusCode: cpp/core/status.h and ts/errors.ts', () => {
  const cpp = cppEnum('cpp/core/status.h', 'StatusCode');

  it('parses the C++ enum', () => {
    expect(cpp.kSuccess).toBe(0);
    expect(Object.keys(cpp).length).toBeGreaterThan(5);
  });

  it('has the same codes with the same numbers (TS has no SUCCESS: it names errors only)', () => {
    const fromCpp = Object.fromEntries(
      Object.entries(cpp).filter(([name]) => name !== 'kSuccess').map(([name, value]) => [tsCodeName(name), value]),
    );
    expect({ ...StatusCode }).toEqual(fromCpp);
  });
});

describe('the per-model queue cap', () => {
  it('has the same default in C++ and TypeScript', () => {
    const match = /constexpr uint32_t kDefaultMaxQueueSizeHardLimit = (\d+);/.exec(read('cpp/core/model_config.h'));
    expect(match).not.toBeNull();
    expect(Number(match![1])).toBe(DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT);
  });

  it('is written as a number nowhere else (code that names the limit uses the constant)', () => {
    const namesTheLimit = /max_queue_size_hard_limit|maxQueueSizeHardLimit/i;
    const definitions = /kDefaultMaxQueueSizeHardLimit = \d|DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT = \d/;
    const copies = linesMatching([...cppSources, ...tsSources], namesTheLimit)
      .filter((line) => !definitions.test(line) && !/^\S+: *(\/\/|\/?\*)/.test(line))
      .filter((line) => new RegExp(`\\b${DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT}\\b`).test(line));
    expect(copies).toEqual([]);
  });
});

describe('the drain timeout (exit timeout)', () => {
  it('is 30 s, as Triton\'s --exit-timeout-secs', () => {
    expect(DEFAULT_EXIT_TIMEOUT_SECS).toBe(30);
    expect(DEFAULT_EXIT_TIMEOUT_MS).toBe(30_000);
  });

  it('is written as a number nowhere in ts/ but ts/config/defaults.ts', () => {
    const files = tsSources.filter((f) => f !== 'ts/config/defaults.ts');
    // A defaulted timeout parameter, an `exitTimeoutSecs ?? n` fallback, or the CLI flag's default.
    const copies = [
      ...linesMatching(files, /\btimeoutMs\s*=\s*[1-9][\d_]*\s*[,)]/),
      ...linesMatching(files, /exitTimeoutSecs\s*\?\?\s*\d/),
      ...linesMatching(files, /--exit-timeout-secs.*,\s*\d+\s*\)/),
    ];
    expect(copies).toEqual([]);
  });
});
