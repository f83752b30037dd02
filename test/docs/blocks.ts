/**
 * The code blocks of README.md and docs/*.md, and what docs-blocks.test.ts does with each.
 *
 * Convention (docs/testing.md): a ```js (CommonJS), ```mjs (ES module) or ```ts (TypeScript, an
 * ES module compiled with tsc --strict) block runs as written, importing 'infernode' as a user
 * does, and must exit 0. An HTML comment on the line before a block says otherwise:
 *   <!-- not-run: reason -->            the block cannot run here (and why)
 *   <!-- docs-test: serves as NAME -->  it serves until SIGINT; it is stopped once it is ready
 *                                      (HTTP /v2/health/ready on localhost:8000)
 *   <!-- docs-test: with-server NAME --> it runs while that block (or that file, e.g.
 *                                      examples/serve.js) serves
 * A js block whose first line names a model file (`// add_sub/1/model.js`) is a JS model: it
 * is served from a repository with that model's config and answers a request.
 * Shell blocks (```sh, ```bash) run only when marked; one with an `infernode` or `curl` command
 * must be marked, either way; other shell blocks (`npm install`, `npm test`) are not run here.
 * Blocks without a language or of another one (config.pbtxt, output, JSON) are not code to run.
 */
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';

export type BlockKind = 'cjs' | 'mjs' | 'ts' | 'shell' | 'js-model';

export interface DocBlock {
  /** `README.md:43`: the file and the line of the opening fence. */
  id: string;
  file: string;
  line: number;
  lang: string;
  code: string;
  kind: BlockKind | null;
  /** The `not-run` reason, when the block is marked so. */
  notRun?: string;
  /** `serves as NAME`: the name client blocks use. */
  serves?: string;
  /** `with-server NAME`: a serving block's name, or a file of the repository to run as the server. */
  withServer?: string;
  /** JS models: the model's name and file (`model.js`, `model.mjs`). */
  model?: { name: string; file: string };
}

const RUN_LANGS: Record<string, BlockKind> = { js: 'cjs', cjs: 'cjs', javascript: 'cjs', mjs: 'mjs', ts: 'ts', typescript: 'ts' };
const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console']);
const MODEL_FILE = /^\/\/\s*(?:\S*\/)?([A-Za-z0-9_.-]+)\/\d+\/(model\.m?js)\b/;

/** The documentation files whose blocks are run: README.md and docs/*.md. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** Every fenced block of `file` (relative to `root`), with its marker. Throws on a malformed marker. */
export function extractBlocks(root: string, file: string): DocBlock[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```\s*([\w-]*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i++) body.push(lines[i].slice(open[1].length));
    const lang = open[2].toLowerCase();
    const block: DocBlock = {
      id: `${file}:${start + 1}`, file, line: start + 1, lang, code: `${body.join('\n')}\n`,
      kind: RUN_LANGS[lang] ?? (SHELL_LANGS.has(lang) ? 'shell' : null),
    };
    const model = block.kind === 'cjs' || block.kind === 'mjs' ? MODEL_FILE.exec(body[0] ?? '') : null;
    if (model) {
      block.kind = 'js-model';
      block.model = { name: model[1], file: model[2] };
    }
    applyMarker(block, markerBefore(lines, start));
    blocks.push(block);
  }
  return blocks;
}

/** The HTML comment on the nearest non-blank line before line `index`, if any. */
function markerBefore(lines: string[], index: number): string | null {
  let j = index - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  const m = j >= 0 ? /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(lines[j]) : null;
  return m ? m[1] : null;
}

function applyMarker(block: DocBlock, marker: string | null): void {
  if (marker === null) return;
  const notRun = /^not-run:\s*(.*)$/.exec(marker);
  if (notRun) {
    if (notRun[1].trim() === '') throw new Error(`${block.id}: <!-- not-run: --> needs a reason`);
    block.notRun = notRun[1].trim();
    return;
  }
  const test = /^docs-test:\s*(.*)$/.exec(marker);
  if (!test) return;  // another comment: not ours
  const serves = /^serves as (\S+)$/.exec(test[1]);
  const withServer = /^with-server (\S+)$/.exec(test[1]);
  if (serves) block.serves = serves[1];
  else if (withServer) block.withServer = withServer[1];
  else throw new Error(`${block.id}: unknown marker <!-- docs-test: ${test[1]} --> (serves as NAME | with-server NAME)`);
}

/** Shell commands that this suite could run (and so must be marked either way). */
export function shellNeedsMarker(code: string): boolean {
  return code.split('\n').some((l) => /^\s*(npx\s+)?(infernode|curl)\b/.test(l));
}
