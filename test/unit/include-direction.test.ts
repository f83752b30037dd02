/**
 * The native layer rule (docs/architecture.md, "Layers"): includes point one way,
 * napi → scheduling → engines → memory/gpu → core. A file may include its own layer or a lower
 * one, never a higher one; cuda/ implements memory/'s device headers and counts as memory.
 * Only cpp/napi/ may include <napi.h>, so V8 types stay out of the layers below it.
 * This reads the sources; it needs no build.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '../..');

/** Rank of each layer: a file may include a layer of the same or a lower rank. */
const layerRank: Record<string, number> = {
  core: 0,
  memory: 1,
  gpu: 1,
  cuda: 1,
  engines: 2,
  scheduling: 3,
  napi: 4,
};

/** The layer a source file (path relative to the repository root) belongs to: cpp/<layer>/… or cuda/…. */
function layerOfFile(relative: string): string {
  const parts = relative.split('/');
  return parts[0] === 'cuda' ? 'cuda' : parts[1];
}

function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) found.push(...sourceFiles(full));
    else if (/\.(h|cc|cu)$/.test(entry)) found.push(full);
  }
  return found;
}

interface Include {
  file: string; // relative to the repository root
  line: number;
  target: string; // the quoted path, e.g. "core/status.h"
}

function quotedIncludes(file: string): Include[] {
  const relative = path.relative(root, file).split(path.sep).join('/');
  const includes: Include[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, index) => {
      const match = /^\s*#\s*include\s+"([^"]+)"/.exec(text);
      if (match) includes.push({ file: relative, line: index + 1, target: match[1] });
    });
  return includes;
}

/** Every violation of the layer rule in the given files, as "file:line: reason" lines. */
function layerViolations(files: string[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    for (const include of quotedIncludes(file)) {
      const from = layerOfFile(include.file);
      const to = include.target.split('/')[0];
      const where = `${include.file}:${include.line}: #include "${include.target}"`;
      if (!(from in layerRank)) {
        violations.push(`${where}: ${from}/ is not a known layer; add it to layerRank and to docs/architecture.md`);
      } else if (!include.target.includes('/') || !(to in layerRank) || to === 'cuda') {
        violations.push(`${where}: project includes are written "<layer>/<file>.h" with layer one of cpp/'s directories`);
      } else if (layerRank[to] > layerRank[from]) {
        violations.push(`${where}: ${from}/ may not include the higher layer ${to}/ (napi → scheduling → engines → memory/gpu → core)`);
      } else if (layerRank[to] === layerRank[from] && to !== from && !(from === 'cuda' && to === 'memory')) {
        violations.push(`${where}: ${from}/ and ${to}/ are separate layers of the same rank; move what both need to core/`);
      }
    }
  }
  return violations;
}

function napiHeaderOutsideNapi(files: string[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const relative = path.relative(root, file).split(path.sep).join('/');
    if (relative.startsWith('cpp/napi/')) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, index) => {
        if (/^\s*#\s*include\s+[<"]napi\.h[>"]/.test(text)) {
          violations.push(`${relative}:${index + 1}: only cpp/napi/ may include napi.h`);
        }
      });
  }
  return violations;
}

const nativeSources = [...sourceFiles(path.join(root, 'cpp')), ...sourceFiles(path.join(root, 'cuda'))];

describe('native include direction', () => {
  it('finds the native sources it checks', () => {
    expect(nativeSources.length).toBeGreaterThan(50);
    expect(nativeSources.some((f) => f.endsWith('cuda_host.cu'))).toBe(true);
  });

  it('every #include "layer/file.h" in cpp/ and cuda/ points to the same or a lower layer', () => {
    expect(layerViolations(nativeSources)).toEqual([]);
  });

  it('only cpp/napi/ includes napi.h', () => {
    expect(napiHeaderOutsideNapi(nativeSources)).toEqual([]);
  });
});
