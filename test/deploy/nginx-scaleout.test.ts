/**
 * Scale-out for real: three `infernode serve` processes (the example repository) behind nginx
 * (Debian's /usr/sbin/nginx) on loopback, as deploy/README.md configures it. nginx listens on
 * unix sockets in a temporary directory (no port to race for) and balances round-robin over the
 * servers' HTTP ports (proxy_pass) and gRPC ports (grpc_pass over HTTP/2).
 *
 * Checked: traffic reaches all three (each server's own nv_inference_request_success matches
 * what nginx's access log says it sent there); one server SIGKILLed mid-traffic loses only the
 * requests it had accepted and not answered: every failed request was proxied to it and was in
 * flight when it died, every request sent after it died succeeds (nginx passes a request that
 * never reached a server to the next one: proxy_next_upstream / grpc_next_upstream `error`),
 * and the two others keep serving.
 *
 * Skips, saying so, when nginx is not installed (`apt-get install -y nginx-light`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { inferRequestFields } from '../../ts/client/grpc-convert';
import { CLIENT_OPTIONS, inferenceServiceDefinition } from '../../ts/server/grpc/protos';
import { encodeInferRequest } from '../../ts/server/grpc/infer-encode';
import { NDArray } from '../../ts/tensor';
import { EXAMPLES, LOOPBACK_ANY_PORTS, ServeProcess, ensureLib, mlpRequestBody, scrape, total, type Ports } from './helpers';

const NGINX = '/usr/sbin/nginx';
const haveNginx = existsSync(NGINX);
if (!haveNginx) {

  console.warn(`nginx-scaleout: SKIPPED, ${NGINX} is missing (Debian: apt-get install -y nginx-light)`);
}
const describeWithNginx = haveNginx ? describe : describe.skip;

const SERVERS = 3;
const CONCURRENCY = 8;
const MODEL = 'mlp_classifier';
/** The header (HTTP) or metadata (gRPC) that names a request in nginx's access log. */
const TAG_HEADER = 'x-request-tag';

/** nginx's configuration: everything under `dir`, in the foreground, as the current user. */
function nginxConfig(dir: string, httpPorts: number[], grpcPorts: number[]): string {
  // max_fails=0: nginx never marks the dead server down, so it keeps trying it in its round-robin
  // turn and every such request shows the retry of a request that never reached a server
  // (deploy/README.md's production config marks it down instead: max_fails=1).
  const servers = (ports: number[]): string => ports.map((p) => `    server 127.0.0.1:${p} max_fails=0;`).join('\n');
  return `
daemon off;
worker_processes 1;
${process.getuid?.() === 0 ? 'user root;  # workers run as the user that started nginx (root here), not nobody' : ''}
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  log_format balance '$http_${TAG_HEADER.replace(/-/g, '_')} $status "$upstream_addr" "$upstream_status"';
  access_log ${dir}/access.log balance;

  upstream infernode_http {
${servers(httpPorts)}
  }
  upstream infernode_grpc {
${servers(grpcPorts)}
  }
  server {
    listen unix:${dir}/http.sock;
    client_max_body_size 64m;
    location / {
      proxy_pass http://infernode_http;
      # An inference is a POST: nginx passes it to the next server only when it could not be
      # sent to this one (connection refused); one in flight on a server that dies fails (502).
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries ${SERVERS};
    }
  }
  server {
    listen unix:${dir}/grpc.sock http2;
    location / {
      grpc_pass grpc://infernode_grpc;
      grpc_next_upstream error timeout;
      grpc_next_upstream_tries ${SERVERS};
    }
  }
}
`;
}

/** One line of nginx's access log. */
interface Proxied { tag: string; status: number; upstreams: string[]; upstreamStatuses: string[] }

function readAccessLog(dir: string): Map<string, Proxied> {
  const out = new Map<string, Proxied>();
  const file = path.join(dir, 'access.log');
  if (!existsSync(file)) return out;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(\S+) (\d+) "([^"]*)" "([^"]*)"$/.exec(line);
    if (!m || m[1] === '-') continue;
    out.set(m[1], { tag: m[1], status: Number(m[2]), upstreams: m[3].split(/\s*,\s*/), upstreamStatuses: m[4].split(/\s*,\s*/) });
  }
  return out;
}

/** Polls `cond` (a real condition, not a duration) until it holds. */
async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Three servers and nginx in front of them. */
class Cluster {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-nginx-'));
  readonly servers: ServeProcess[] = [];
  ports: Ports[] = [];
  nginx: ChildProcess | null = null;
  nginxOutput = '';

  async start(): Promise<void> {
    for (let i = 0; i < SERVERS; i++) this.servers.push(new ServeProcess(['serve', `--model-repository=${EXAMPLES}`, ...LOOPBACK_ANY_PORTS]));
    this.ports = await Promise.all(this.servers.map((s) => s.serving()));
    const conf = path.join(this.dir, 'nginx.conf');
    writeFileSync(conf, nginxConfig(this.dir, this.ports.map((p) => p.http!), this.ports.map((p) => p.grpc!)));
    this.nginx = spawn(NGINX, ['-p', `${this.dir}/`, '-c', conf, '-e', path.join(this.dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.nginx.stdout!.on('data', (d: Buffer) => { this.nginxOutput += d.toString(); });
    this.nginx.stderr!.on('data', (d: Buffer) => { this.nginxOutput += d.toString(); });
    let nginxExited = false;
    this.nginx.on('exit', () => { nginxExited = true; });
    await until(async () => {
      if (nginxExited) throw new Error(`nginx exited: ${this.nginxOutput}${this.errorLog()}`);
      return existsSync(this.socket('http')) && existsSync(this.socket('grpc')) &&
        (await httpRequest(this.socket('http'), 'GET', '/v2/health/ready', 'probe').catch(() => ({ status: 0 }))).status === 200;
    }, 'nginx to answer on its sockets');
  }

  socket(kind: 'http' | 'grpc'): string {
    return path.join(this.dir, `${kind}.sock`);
  }

  errorLog(): string {
    const file = path.join(this.dir, 'error.log');
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  }

  address(i: number, kind: 'http' | 'grpc'): string {
    return `127.0.0.1:${this.ports[i][kind]}`;
  }

  /** Each server's count of successful inferences of MODEL. */
  async successes(indices: number[]): Promise<number[]> {
    return Promise.all(indices.map(async (i) => total(await scrape(this.ports[i].metrics!), 'nv_inference_request_success', { model: MODEL })));
  }

  /** nginx's log lines of `tags`, once every one of them is written (nginx logs after it responds). */
  async logged(tags: string[]): Promise<Map<string, Proxied>> {
    let log = new Map<string, Proxied>();
    await until(() => {
      log = readAccessLog(this.dir);
      return tags.every((t) => log.has(t));
    }, `nginx to log ${tags.length} requests`);
    return log;
  }

  async stop(): Promise<void> {
    if (this.nginx && this.nginx.exitCode === null && this.nginx.signalCode === null) {
      const exited = new Promise((resolve) => this.nginx!.on('exit', resolve));
      this.nginx.kill('SIGTERM');
      await exited;
    }
    await Promise.all(this.servers.map((s) => s.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One HTTP request over a unix socket; status 0 when the connection failed. */
function httpRequest(socketPath: string, method: string, urlPath: string, tag: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath, method, path: urlPath, agent: false,
      headers: { [TAG_HEADER]: tag, ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A way to send one inference through nginx: resolves true on success, false on a failure. */
type Send = (tag: string) => Promise<{ ok: boolean; detail: string }>;

function httpSender(cluster: Cluster): Send {
  return async (tag) => {
    try {
      const res = await httpRequest(cluster.socket('http'), 'POST', `/v2/models/${MODEL}/infer`, tag, mlpRequestBody(tag.length));
      return { ok: res.status === 200 && (JSON.parse(res.body) as { outputs: unknown[] }).outputs.length === 1, detail: `HTTP ${res.status} ${res.body.slice(0, 200)}` };
    } catch (err) {
      return { ok: false, detail: `connection: ${(err as Error).message}` };
    }
  };
}

function grpcSender(cluster: Cluster): { send: Send; close: () => void } {
  const client = new Client(`unix:${cluster.socket('grpc')}`, credentials.createInsecure());
  const method = inferenceServiceDefinition(CLIENT_OPTIONS).ModelInfer;
  const input = new NDArray('FP32', [1, 16], new Float32Array(16).fill(0.25));
  const send: Send = (tag) => new Promise((resolve) => {
    const metadata = new Metadata();
    metadata.set(TAG_HEADER, tag);
    const body = encodeInferRequest(inferRequestFields({ modelName: MODEL, inputs: { input } }));
    client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, body, metadata, { deadline: Date.now() + 60_000 },
      (err: ServiceError | null, value?: unknown) => {
        if (err) resolve({ ok: false, detail: `gRPC ${GrpcStatus[err.code]}: ${err.details}` });
        else resolve({ ok: (value as { outputs: unknown[] }).outputs.length === 1, detail: 'OK' });
      });
  });
  return { send, close: () => client.close() };
}

/** When a request of the kill scenario was sent: before the SIGKILL, between it and the process's exit, after. */
type Phase = 'before-kill' | 'kill-to-exit' | 'after-exit';
interface Sent { tag: string; phase: Phase; ok?: boolean; detail?: string }

/**
 * The scenario shared by HTTP and gRPC: spread, kill one server mid-traffic, keep serving.
 * `kind` picks nginx's HTTP or gRPC upstream addresses for the log cross-check.
 */
async function spreadKillAndKeepServing(cluster: Cluster, kind: 'http' | 'grpc', send: Send): Promise<void> {
  const all = [0, 1, 2];
  const before = await cluster.successes(all);

  // 1. Traffic spreads over all three: nginx's log and each server's own counter agree.
  const spreadTags = Array.from({ length: 45 }, (_, i) => `${kind}-spread-${i}`);
  const spreadResults = await runConcurrently(spreadTags, send, CONCURRENCY);
  expect(spreadResults.filter((r) => !r.ok)).toEqual([]);
  let log = await cluster.logged(spreadTags);
  const perServer = all.map((i) => spreadTags.filter((t) => log.get(t)!.upstreams.at(-1) === cluster.address(i, kind)).length);
  const counted = (await cluster.successes(all)).map((n, i) => n - before[i]);
  expect(counted).toEqual(perServer);
  for (const n of counted) expect(n).toBeGreaterThan(0);
  expect(counted.reduce((a, b) => a + b, 0)).toBe(spreadTags.length);

  // 2. SIGKILL one server while CONCURRENCY requests are in flight; traffic goes on until
  //    enough requests sent after its death have completed.
  const victim = cluster.servers[1];
  const victimAddress = cluster.address(1, kind);
  const survivors = [0, 2];
  const survivorsBefore = await cluster.successes(survivors);
  const sent: Sent[] = [];
  let stop = false;
  let phase: Phase = 'before-kill';
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      const entry: Sent = { tag: `${kind}-kill-${w}-${i}`, phase };
      sent.push(entry);
      const result = await send(entry.tag);
      entry.ok = result.ok;
      entry.detail = result.detail;
    }
  };
  const workers = Array.from({ length: CONCURRENCY }, (_, w) => worker(w));
  await until(() => sent.filter((s) => s.ok !== undefined).length >= 30, 'traffic before the kill');
  const inFlightAtKill = new Set(sent.filter((s) => s.ok === undefined).map((s) => s.tag));
  phase = 'kill-to-exit';
  await victim.kill();
  phase = 'after-exit';
  const afterExit = (): Sent[] => sent.filter((s) => s.phase === 'after-exit');
  await until(() => afterExit().filter((s) => s.ok !== undefined).length >= 40, 'traffic after the kill');
  stop = true;
  await Promise.all(workers);

  const failed = sent.filter((s) => !s.ok);
  // Every request sent after the victim died succeeded: nginx passed those it tried on the dead
  // server (connection refused) to another one.
  expect(afterExit().filter((s) => !s.ok)).toEqual([]);
  // Only requests in flight when it died may fail: in flight at the SIGKILL, or sent between
  // the SIGKILL and the process's exit.
  for (const f of failed) expect({ tag: f.tag, inFlight: inFlightAtKill.has(f.tag) || f.phase === 'kill-to-exit' }).toEqual({ tag: f.tag, inFlight: true });
  // ... and only those nginx had passed to it and it never answered (its last upstream, 502):
  // the failures are exactly the requests the killed server had accepted and not answered.
  // A gRPC call the victim had begun answering (nginx saw its response headers, status 200) and
  // died before finishing is reset by nginx: the client sees INTERNAL RST_STREAM, not a 502.
  log = await cluster.logged(sent.map((s) => s.tag));
  const diedMidResponse = /^gRPC INTERNAL: Received RST_STREAM/;
  for (const f of failed) {
    const line = log.get(f.tag)!;
    const midResponse = kind === 'grpc' && line.status === 200 && diedMidResponse.test(f.detail ?? '');
    expect({ tag: f.tag, upstream: line.upstreams.at(-1), status: line.status, detail: f.detail }).toEqual({
      tag: f.tag, upstream: victimAddress, status: midResponse ? 200 : 502,
      detail: expect.stringMatching(midResponse ? diedMidResponse : kind === 'http' ? /^HTTP 502 / : /^gRPC UNAVAILABLE/),
    });
  }
  const unansweredByVictim = sent.filter((s) => {
    const line = log.get(s.tag)!;
    return line.upstreams.at(-1) === victimAddress && (line.status !== 200 || !s.ok);
  });
  expect(failed.map((f) => f.tag).sort()).toEqual(unansweredByVictim.map((s) => s.tag).sort());
  // Requests nginx tried on the dead server (refused: never reached it) went on to another one.
  const retried = sent.filter((s) => log.get(s.tag)!.upstreams.length > 1);
  expect(retried.filter((s) => s.phase === 'after-exit').length).toBeGreaterThan(0);
  for (const r of retried) {
    const line = log.get(r.tag)!;
    expect({ tag: r.tag, ok: r.ok, first: line.upstreams[0], last: line.upstreamStatuses.at(-1) })
      .toEqual({ tag: r.tag, ok: true, first: victimAddress, last: '200' });
  }

  console.log(`${kind}: ${sent.length} requests around the kill, ${inFlightAtKill.size} in flight at the kill, ` +
    `${failed.length} failed (in flight on the killed server), ${retried.length} passed on by nginx after a refused connection`);

  // The survivors counted exactly what nginx's log says they answered.
  const survivorCounts = (await cluster.successes(survivors)).map((n, i) => n - survivorsBefore[i]);
  expect(survivorCounts).toEqual(survivors.map((i) => sent.filter((s) => {
    const line = log.get(s.tag)!;
    return line.upstreams.at(-1) === cluster.address(i, kind) && line.status === 200;
  }).length));

  // 3. The other two keep serving, both of them.
  const afterTags = Array.from({ length: 20 }, (_, i) => `${kind}-after-${i}`);
  const beforeAfter = await cluster.successes(survivors);
  const afterResults = await runConcurrently(afterTags, send, 4);
  expect(afterResults.filter((r) => !r.ok)).toEqual([]);
  const gained = (await cluster.successes(survivors)).map((n, i) => n - beforeAfter[i]);
  for (const n of gained) expect(n).toBeGreaterThan(0);
  expect(gained[0] + gained[1]).toBe(afterTags.length);
}

/** Sends every tag with at most `concurrency` requests in flight; the results in tag order. */
async function runConcurrently(tags: string[], send: Send, concurrency: number): Promise<{ tag: string; ok: boolean; detail: string }[]> {
  const results: { tag: string; ok: boolean; detail: string }[] = new Array(tags.length);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < tags.length) {
      const i = next++;
      results[i] = { tag: tags[i], ...(await send(tags[i])) };
    }
  }));
  return results;
}

beforeAll(() => {
  if (haveNginx) ensureLib();
}, 120_000);

describeWithNginx('three infernode servers behind nginx (HTTP, proxy_pass)', () => {
  const cluster = new Cluster();
  beforeAll(() => cluster.start(), 90_000);
  afterAll(() => cluster.stop(), 30_000);

  test('traffic spreads over all three; a SIGKILLed server loses only its in-flight requests; the others keep serving', async () => {
    await spreadKillAndKeepServing(cluster, 'http', httpSender(cluster));
  }, 120_000);
});

describeWithNginx('three infernode servers behind nginx (gRPC, grpc_pass over HTTP/2)', () => {
  const cluster = new Cluster();
  let grpc: ReturnType<typeof grpcSender>;
  beforeAll(async () => {
    await cluster.start();
    grpc = grpcSender(cluster);
  }, 90_000);
  afterAll(async () => {
    grpc?.close();
    await cluster.stop();
  }, 30_000);

  test('traffic spreads over all three; a SIGKILLed server loses only its in-flight calls; the others keep serving', async () => {
    await spreadKillAndKeepServing(cluster, 'grpc', grpc.send);
  }, 120_000);
});
