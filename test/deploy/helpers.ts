/**
 * Shared by the deploy suites: `infernode serve` as a child process (the compiled CLI, as the
 * container runs it), the manifests under deploy/, and the Prometheus text a server exports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { LIB, ROOT } from '../integration/lib-build';

export { ensureLib, ROOT } from '../integration/lib-build';

export const CLI = path.join(LIB, 'cli', 'main.js');
export const DEPLOY = path.join(ROOT, 'deploy');
export const EXAMPLES = path.join(ROOT, 'examples', 'models');
/** Listeners on loopback, on ports the kernel picks (other suites and engineers share the machine). */
export const LOOPBACK_ANY_PORTS = [
  '--http-address=127.0.0.1', '--grpc-address=127.0.0.1', '--http-port=0', '--grpc-port=0', '--metrics-port=0',
];

export interface Ports { http?: number; grpc?: number; metrics?: number }

/** A running `node lib/cli/main.js <args>`, with its output so far. */
export class ServeProcess {
  readonly child: ChildProcess;
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #exited = false;

  /** `nodeArgs` go to node itself, before the CLI's path (e.g. `--max-old-space-size=128`). */
  constructor(readonly args: string[], nodeArgs: string[] = []) {
    this.child = spawn(process.execPath, [...nodeArgs, CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (d: Buffer): void => { this.output += d.toString(); };
    this.child.stdout!.on('data', append);
    this.child.stderr!.on('data', append);
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => {
      this.#exited = true;
      resolve({ code, signal });
    }));
  }

  get hasExited(): boolean {
    return this.#exited;
  }

  /** Waits for the "serving N model version(s)" line; fails with the output if the process exits first. */
  async serving(timeoutMs = 60_000): Promise<Ports> {
    const deadline = Date.now() + timeoutMs;
    while (!/infernode: serving \d+ model version/.test(this.output)) {
      if (this.#exited) throw new Error(`'infernode ${this.args.join(' ')}' exited before serving:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`'infernode ${this.args.join(' ')}' did not start serving in ${timeoutMs} ms:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const ports: Ports = {};
    for (const m of this.output.matchAll(/(http|grpc|metrics) on port (\d+)/g)) ports[m[1] as keyof Ports] = Number(m[2]);
    return ports;
  }

  /** SIGKILL, resolved once the process is gone (its sockets closed). */
  async kill(): Promise<void> {
    if (!this.#exited) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** Every document of a YAML file under deploy/. */
export function manifests(relative: string): Record<string, any>[] {
  const docs = parseAllDocuments(readFileSync(path.join(DEPLOY, relative), 'utf8'));
  return docs.map((doc) => {
    if (doc.errors.length > 0) throw new Error(`deploy/${relative}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS() as Record<string, any>;
  });
}

/** The one document of a YAML file under deploy/. */
export function manifest(relative: string): Record<string, any> {
  const docs = manifests(relative);
  if (docs.length !== 1) throw new Error(`deploy/${relative}: expected one document, found ${docs.length}`);
  return docs[0];
}

/** The samples of a Prometheus text exposition: metric name, labels, value. */
export interface Sample { name: string; labels: Record<string, string>; value: number }

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

export async function scrape(metricsPort: number): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics on port ${metricsPort} answered ${res.status}`);
  return parsePrometheus(await res.text());
}

/** Sum of one counter or gauge over the samples whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** A JSON inference request of the example mlp_classifier (16 features, batch 1). */
export function mlpRequestBody(seed: number): string {
  const data = Array.from({ length: 16 }, (_, i) => ((seed * 31 + i) % 17) / 17);
  return JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16], data }] });
}
