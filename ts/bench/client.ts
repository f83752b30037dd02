/**
 * Scenario "client": what calling a Triton server from Node costs the caller. infernode's
 * HttpInferenceServerClient (binary tensors, its default, and JSON) next to what a Node developer
 * writes without it: `fetch()` (undici, built into Node) and node:http with a keep-alive Agent,
 * each posting KServe v2 JSON and parsing the answer into a Float32Array. One infernode server in
 * a child process (client-server.ts: an identity model, FP32[1,16]) answers them all; the clients
 * run in this process one after another, alternating in rounds, closed loop at concurrency 1 and
 * 16. Figures of merit: calls/s and the client's CPU per call (this process's CPU time over the
 * window ÷ calls), as ratios to the peers.
 */
import * as http from 'node:http';
import * as path from 'node:path';
import { HttpInferenceServerClient } from '../client/http';
import { NDArray } from '../tensor';
import { runLoad, type LoadResult } from './load';
import { ServerProcess } from './server-process';
import { CLIENT_BENCH_ELEMENTS as ELEMENTS, CLIENT_BENCH_MODEL as MODEL } from './client-server';

export type ClientKind = 'infernode binary' | 'infernode JSON' | 'fetch() JSON' | 'node:http JSON';
const KINDS: readonly ClientKind[] = ['infernode binary', 'infernode JSON', 'fetch() JSON', 'node:http JSON'];
const CONCURRENCIES = [1, 16];
const ROUNDS = 3;

export interface ClientBenchRow extends LoadResult {
  client: ClientKind;
  /** This process's CPU time (user + system) per call, µs. */
  cpuUsPerCall: number;
}

export interface ClientBenchResult {
  scenario: 'client';
  tensor: string;
  durationMs: number;
  rounds: number;
  rows: ClientBenchRow[];
}

type Call = () => Promise<unknown>;

/** One call of each client kind against `port`, each checking the identity came back. */
function clients(port: number): { calls: Record<ClientKind, Call>; close(): Promise<void> } {
  const values = Float32Array.from({ length: ELEMENTS }, (_, i) => i * 0.5);
  const tensor = new NDArray('FP32', [1, ELEMENTS], values);
  const url = `http://127.0.0.1:${port}/v2/models/${MODEL}/infer`;
  const json = JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, ELEMENTS], data: Array.from(values) }] });
  const check = (data: ArrayLike<number>): void => {
    if (data.length !== ELEMENTS || data[ELEMENTS - 1] !== values[ELEMENTS - 1]) throw new Error('wrong answer');
  };
  const fromJson = (text: string): void => {
    const answer = JSON.parse(text) as { outputs: { data: number[] }[] };
    check(Float32Array.from(answer.outputs[0].data));
  };
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`);
  const jsonClient = new HttpInferenceServerClient(`127.0.0.1:${port}`, { binaryInputs: false, binaryOutputs: false });
  const agent = new http.Agent({ keepAlive: true });
  const calls: Record<ClientKind, Call> = {
    'infernode binary': async () => check((await client.infer({ modelName: MODEL, inputs: { IN: tensor } })).outputs.OUT.data as Float32Array),
    'infernode JSON': async () => check((await jsonClient.infer({ modelName: MODEL, inputs: { IN: tensor } })).outputs.OUT.data as Float32Array),
    'fetch() JSON': async () => {
      const res = await fetch(url, { method: 'POST', body: json, headers: { 'Content-Type': 'application/json' } });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      fromJson(await res.text());
    },
    'node:http JSON': () => new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
            fromJson(Buffer.concat(chunks).toString());
            resolve();
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('error', reject);
      req.end(json);
    }),
  };
  return { calls, close: async () => { await client.close(); await jsonClient.close(); agent.destroy(); } };
}

/** One window of `call`: its load figures and this process's CPU per call. */
async function measure(call: Call, concurrency: number, durationMs: number): Promise<LoadResult & { cpuUsPerCall: number }> {
  await runLoad(call, concurrency, 300, 0);  // warm: connections open, code compiled
  const cpu = process.cpuUsage();
  const result = await runLoad(call, concurrency, durationMs, 0);
  const used = process.cpuUsage(cpu);
  return { ...result, cpuUsPerCall: result.requests > 0 ? (used.user + used.system) / result.requests : 0 };
}

export async function runClientBench(durationMs = 2000, rounds = ROUNDS): Promise<ClientBenchResult> {
  const server = await ServerProcess.start(path.join(__dirname, 'client-server.js'), [], 'the client bench server');
  const { calls, close } = clients(server.port);
  const rows: ClientBenchRow[] = [];
  try {
    for (const concurrency of CONCURRENCIES) {
      // Each kind keeps its best round: the machine is shared, the best round is the least disturbed.
      const best = new Map<ClientKind, ClientBenchRow>();
      for (let round = 0; round < rounds; round++) {
        for (const client of KINDS) {
          const row = { client, ...await measure(calls[client], concurrency, durationMs) };
          const before = best.get(client);
          if (!before || row.requestsPerSecond > before.requestsPerSecond) best.set(client, row);
        }
      }
      rows.push(...KINDS.map((k) => best.get(k)!));
    }
  } finally {
    await close();
    await server.stop();
  }
  return { scenario: 'client', tensor: `FP32[1,${ELEMENTS}]`, durationMs, rounds, rows };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function clientMarkdown(r: ClientBenchResult, machine: string): string {
  const of = (client: ClientKind, concurrency: number): ClientBenchRow | undefined =>
    r.rows.find((x) => x.client === client && x.concurrency === concurrency);
  const ratio = (ours: ClientKind, peer: ClientKind, c: number): string => {
    const [a, b] = [of(ours, c)!, of(peer, c)!];
    return `${fmt(a.requestsPerSecond / b.requestsPerSecond, 2)}× the calls/s of ${peer} at ${fmt(a.cpuUsPerCall / b.cpuUsPerCall, 2)}× its CPU per call`;
  };
  const ratios = CONCURRENCIES.map((c) => `- concurrency ${c}: infernode JSON ${ratio('infernode JSON', 'node:http JSON', c)}, ` +
    `${ratio('infernode JSON', 'fetch() JSON', c)}; infernode binary ${ratio('infernode binary', 'node:http JSON', c)}`);
  return [
    `# HTTP clients from Node — KServe v2 inference, identity model, ${r.tensor}`,
    '',
    `Machine: ${machine}  `,
    `Date: ${new Date().toISOString()}  `,
    `Each cell: best of ${r.rounds} rounds of ${r.durationMs / 1000} s (after 0.3 s of warm-up), the clients alternated; one ` +
      'infernode server in a child process answers all of them; the clients run in the bench process, closed loop, and ' +
      '"client CPU" is that process\'s CPU time per call. infernode\'s HttpInferenceServerClient writes and reads its own ' +
      'keep-alive sockets (docs/http.md, "Clients"); the peers post the same JSON body and parse the answer into a Float32Array.',
    '',
    ...ratios,
    '',
    '| client | concurrency | calls/s | p50 µs | p99 µs | client CPU µs/call | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.rows.map((x) => `| ${x.client} | ${x.concurrency} | ${fmt(x.requestsPerSecond)} | ${fmt(x.p50Us)} | ${fmt(x.p99Us)} | ` +
      `${fmt(x.cpuUsPerCall, 1)} | ${x.errors} |`),
    '',
    'What limits the figures: client and server share this 2-core machine, so at concurrency 16 a cheaper client leaves ' +
      'more CPU to the server and the calls/s ratio mixes both; the CPU per call is the cleaner comparison.',
    '',
  ].join('\n');
}
