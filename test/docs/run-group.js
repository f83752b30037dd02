/**
 * Runs one group of documentation blocks (docs-blocks.test.ts): optionally a server, started
 * first and awaited until it answers HTTP /v2/health/ready on localhost:8000, then each step in
 * turn while it serves, then SIGINT to the server, which must exit 0. Prints one JSON object:
 * { results: { [id]: { ok, output } } }. Runs inside its own network namespace when the test
 * can make one, so localhost:8000 is this group's alone.
 *
 *   node run-group.js SPEC.json   SPEC: { server?: Step, steps: Step[], timeoutMs }
 *   Step: { id, command: string[], cwd }
 */
'use strict';
const { spawn } = require('node:child_process');
const http = require('node:http');
const { readFileSync } = require('node:fs');

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const deadline = Date.now() + spec.timeoutMs;
const results = {};

/** Starts a step's process; `done` resolves with its exit once it has exited. */
function start(step) {
  const child = spawn(step.command[0], step.command.slice(1), { cwd: step.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: step.env ? { ...process.env, ...step.env } : process.env });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const timer = setTimeout(() => {
    output += `\n[docs-test] killed: still running after the group's ${spec.timeoutMs} ms`;
    child.kill('SIGKILL');
  }, Math.max(0, deadline - Date.now()));
  const done = new Promise((resolve) => {
    child.on('error', (err) => { output += `\n[docs-test] ${err.message}`; });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: () => output });
    });
  });
  return { child, done, output: () => output };
}

function ready() {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: 8000, path: '/v2/health/ready', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => { req.destroy(); resolve(false); });
  });
}

/** Waits until the server is ready; false when it exited first or the deadline passed. */
async function awaitReady(server) {
  let exited = false;
  server.done.then(() => { exited = true; });
  let delay = 25;
  while (!exited && Date.now() < deadline) {
    if (await ready()) return true;
    await new Promise((resolve) => setTimeout(resolve, delay));  // polling a condition: the server's readiness
    delay = Math.min(delay * 2, 250);
  }
  return false;
}

async function main() {
  let server = null;
  if (spec.server) {
    server = start(spec.server);
    if (!(await awaitReady(server))) {
      server.child.kill('SIGKILL');
      const exit = await server.done;
      const why = `[docs-test] the server did not become ready (exit code ${exit.code}, signal ${exit.signal})`;
      results[spec.server.id] = { ok: false, output: `${exit.output()}\n${why}` };
      for (const step of spec.steps) results[step.id] = { ok: false, output: `${why}; its output:\n${exit.output()}` };
      return;
    }
  }
  for (const step of spec.steps) {
    const exit = await start(step).done;
    results[step.id] = { ok: exit.code === 0, output: `${exit.output()}${exit.code === 0 ? '' : `\n[docs-test] exit code ${exit.code}, signal ${exit.signal}`}` };
  }
  if (server) {
    server.child.kill('SIGINT');
    const exit = await server.done;
    results[spec.server.id] = {
      ok: exit.code === 0,
      output: `${exit.output()}${exit.code === 0 ? '' : `\n[docs-test] after SIGINT: exit code ${exit.code}, signal ${exit.signal}`}`,
    };
  }
}

main().then(
  () => process.stdout.write(JSON.stringify({ results })),
  (err) => { process.stdout.write(JSON.stringify({ results, error: String(err && err.stack || err) })); },
);
