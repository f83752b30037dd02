/**
 * `npm run soak`: node lib/soak/main.js [--seconds N] [--reload-every-ms N] [--json FILE]
 * Runs the soak (soak.ts), prints a summary and the report as JSON (`SOAK_REPORT {...}` on the
 * last line of stdout), and exits 0 when it passed, 1 when it did not.
 */
import { writeFileSync } from 'node:fs';
import { runSoak, type SoakOptions, type SoakReport } from './soak';

function parseArgs(argv: string[]): { options: Partial<SoakOptions>; json: string | null } {
  const options: Partial<SoakOptions> = { log: (line) => process.stderr.write(`${line}\n`) };
  let json: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    const positive = (): number => {
      const n = Number(value());
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a positive number`);
      return n;
    };
    if (flag === '--seconds') options.seconds = positive();
    else if (flag === '--reload-every-ms') options.reloadEveryMs = positive();
    else if (flag === '--json') json = value();
    else if (flag === '--quiet') options.log = () => undefined;
    else throw new Error(`unknown option ${flag}; usage: node lib/soak/main.js [--seconds N] [--reload-every-ms N] [--json FILE] [--quiet]`);
  }
  return { options, json };
}

function summary(r: SoakReport): string {
  const s = r.server;
  const fmt = (p: typeof s.first): string => (p ? `RSS ${p.rssMiB.toFixed(1)} MiB, ${p.threads} threads, ${p.fds} fds` : 'n/a');
  return [
    `soak ${r.passed ? 'PASSED' : 'FAILED'} in ${r.seconds.toFixed(0)} s: ${r.requestsSent} requests, ${r.repositoryOperations} repository operations, ${r.unsettled} unsettled`,
    `outcomes: ${Object.entries(r.outcomes).map(([k, v]) => `${k}=${v}`).join(' ')}`,
    `server first sample: ${fmt(s.first)}; last before SIGTERM: ${fmt(s.last)}; max: ${s.max ? `RSS ${s.max.rssMiB.toFixed(1)} MiB, ${s.max.threads} threads, ${s.max.fds} fds` : 'n/a'}`,
    `flat after warm-up (median middle third -> last third, limit): ${r.flatness.map((f) => `${f.metric} ${f.middle.toFixed(1)} -> ${f.last.toFixed(1)} (${f.limit.toFixed(1)})`).join('; ')}`,
    `exit after SIGTERM: code ${r.exit.code}, signal ${r.exit.signal}, ${r.exit.afterSigtermMs} ms`,
    ...r.problems.map((p) => `PROBLEM: ${p}`),
    ...r.failures.slice(0, 20).map((f) => `  failure: ${f}`),
  ].join('\n');
}

async function main(): Promise<void> {
  const { options, json } = parseArgs(process.argv.slice(2));
  const report = await runSoak(options);
  process.stdout.write(`${summary(report)}\n`);
  if (json) writeFileSync(json, JSON.stringify(report, null, 2));
  process.stdout.write(`SOAK_REPORT ${JSON.stringify(report)}\n`);
  process.exitCode = report.passed ? 0 : 1;
}

main().catch((err: Error) => {
  process.stderr.write(`soak: ${err.stack ?? err.message}\n`);
  process.exitCode = 2;
});
