/**
 * The short soak of CI: `node lib/soak/main.js --seconds 20` (ts/soak/) as its own process — a
 * real `infernode serve` child on a temporary repository under mixed HTTP/gRPC/stream/in-process
 * load, models unloaded and reloaded every 200 ms, clients cancelling and disconnecting, then
 * SIGTERM under load. It must pass: no wrong or lost answer, every request settled, exit code 0,
 * no internal error logged, RSS/threads/fds flat after warm-up. `npm run soak` runs it for 120 s.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { ensureLib, LIB } from './lib-build';

beforeAll(() => {
  ensureLib();
}, 120_000);

interface Report {
  passed: boolean;
  problems: string[];
  failures: string[];
  requestsSent: number;
  outcomes: Record<string, number>;
  exit: { code: number | null };
}

function runSoak(seconds: number): Promise<{ code: number | null; report: Report | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(LIB, 'soak', 'main.js'), '--seconds', String(seconds), '--quiet'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { output += d.toString(); });
    child.on('exit', (code) => {
      const line = output.split('\n').find((l) => l.startsWith('SOAK_REPORT '));
      resolve({ code, report: line ? (JSON.parse(line.slice('SOAK_REPORT '.length)) as Report) : null, output });
    });
  });
}

test('20 s of mixed load with reloads, cancellations and SIGTERM: nothing lost, nothing wrong, nothing leaked', async () => {
  const { code, report, output } = await runSoak(20);
  // The whole summary on failure: problems, the first failures, the resource samples.
  expect({ code, problems: report?.problems ?? [output.slice(-4000)], failures: report?.failures.slice(0, 10) ?? [] })
    .toEqual({ code: 0, problems: [], failures: [] });
  expect(report!.passed).toBe(true);
  expect(report!.exit.code).toBe(0);
  expect(report!.outcomes['http:ok'] > 0 && report!.outcomes['grpc:ok'] > 0 && report!.outcomes['stream:ok'] > 0).toBe(true);
}, 180_000);
