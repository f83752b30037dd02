/**
 * The raw keep-alive HTTP transport of `infernode perf` (ts/perf/raw-http.ts) against real
 * servers on loopback: answers framed every way HTTP/1.1 allows (Content-Length, chunked, until
 * close), sockets reused and dropped as the server says, and every failure a clear error rather
 * than a hang: a refused connection, an answer cut short, no answer in time. Each answer carries
 * the moments perf's client timers use: its request written, its first bytes arrived.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { RawHttpPool } from '../../ts/perf/raw-http';

const servers: (http.Server | net.Server)[] = [];
const pools: RawHttpPool[] = [];

const serverSockets = new Set<net.Socket>();

afterEach(async () => {
  for (const p of pools.splice(0)) p.close();
  for (const socket of serverSockets) socket.destroy();
  serverSockets.clear();
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listen<T extends http.Server | net.Server>(server: T): Promise<{ server: T; pool: RawHttpPool }> {
  servers.push(server);
  server.on('connection', (socket: net.Socket) => serverSockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const pool = new RawHttpPool('127.0.0.1', (server.address() as AddressInfo).port);
  pools.push(pool);
  return { server, pool };
}

/** A request whose body names it, so an answer can be matched to its request. */
function post(id: string): Buffer {
  return Buffer.from(`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${id.length}\r\n\r\n${id}`);
}

/** A node:http server answering each POST with its body, through `answer`. */
function echoServer(answer: (body: string, res: http.ServerResponse) => void): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(Buffer.concat(chunks).toString(), res));
  });
}

test('Content-Length answers on one kept-alive socket, each matched to its request', async () => {
  const { server, pool } = await listen(echoServer((body, res) => res.end(`re:${body}`)));
  let connections = 0;
  server.on('connection', () => connections++);
  for (let i = 0; i < 20; i++) {
    const answer = await pool.send(post(`r${i}`));
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe(`re:r${i}`);
  }
  expect(connections).toBe(1);
});

test('requests in flight together get their own sockets and their own answers', async () => {
  const { server, pool } = await listen(echoServer((body, res) => setTimeout(() => res.end(`re:${body}`), 5)));
  let connections = 0;
  server.on('connection', () => connections++);
  for (let round = 0; round < 3; round++) {
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.send(post(`${round}-${i}`))));
    answers.forEach((a, i) => expect(a.body.toString()).toBe(`re:${round}-${i}`));
  }
  expect(connections).toBe(8);  // reused across rounds, never more than were in flight
});

test('a chunked answer is read whole, with its status and headers', async () => {
  const { pool } = await listen(echoServer((body, res) => {
    res.writeHead(400, { 'Content-Type': 'application/json', 'X-Note': 'chunked' });
    res.write('{"error":');
    setTimeout(() => res.end(`"bad ${body}"}`), 5);
  }));
  const answer = await pool.send(post('abc'));
  expect(answer.status).toBe(400);
  expect(answer.headers['transfer-encoding']).toBe('chunked');
  expect(answer.headers['x-note']).toBe('chunked');
  expect(JSON.parse(answer.body.toString())).toEqual({ error: 'bad abc' });
  expect((await pool.send(post('next'))).body.toString()).toBe('{"error":"bad next"}');  // the socket stays usable
});

test('an answer says when its request was written and when its first bytes came, in that order', async () => {
  // Head and first chunk at once, the rest later: the first bytes come before the answer is whole.
  const { pool } = await listen(echoServer((body, res) => {
    res.write(`re:${body}`);
    setTimeout(() => res.end('.'), 5);
  }));
  for (let i = 0; i < 3; i++) {
    const before = performance.now();
    const answer = await pool.send(post(`t${i}`));
    const after = performance.now();
    expect(answer.body.toString()).toBe(`re:t${i}.`);
    expect(answer.sentAt).toBeGreaterThanOrEqual(before);
    expect(answer.firstByteAt).toBeGreaterThanOrEqual(answer.sentAt);
    expect(answer.firstByteAt).toBeLessThanOrEqual(after);
  }
});

test('Connection: close drops the socket; the next request opens another', async () => {
  const { server, pool } = await listen(echoServer((body, res) => {
    res.setHeader('Connection', 'close');
    res.end(`re:${body}`);
  }));
  let connections = 0;
  server.on('connection', () => connections++);
  for (let i = 0; i < 3; i++) expect((await pool.send(post(`c${i}`))).body.toString()).toBe(`re:c${i}`);
  expect(connections).toBe(3);
});

test('an answer without a length ends when the server closes', async () => {
  const { pool } = await listen(net.createServer((socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close'));
  }));
  const answer = await pool.send(post('x'));
  expect(answer.status).toBe(200);
  expect(answer.body.toString()).toBe('until close');
});

test('an answer cut short fails UNAVAILABLE, saying so', async () => {
  const { pool } = await listen(net.createServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b');
      setTimeout(() => socket.destroy(), 5);
    });
  }));
  await expect(pool.send(post('x'))).rejects.toMatchObject({
    code: 'UNAVAILABLE', message: expect.stringContaining('closed before the whole answer arrived'),
  });
});

test('a refused connection fails UNAVAILABLE naming the server', async () => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const pool = new RawHttpPool('127.0.0.1', port);
  pools.push(pool);
  await expect(pool.send(post('x'))).rejects.toMatchObject({
    code: 'UNAVAILABLE', message: expect.stringMatching(new RegExp(`cannot reach the server at http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`)),
  });
});

test('no answer within the timeout fails the request and drops its socket', async () => {
  const { pool } = await listen(net.createServer((socket) => socket.resume()));  // reads, never answers
  await expect(pool.send(post('x'), 200)).rejects.toThrow(/no answer from http:\/\/127\.0\.0\.1:\d+ within 200 ms/);
});

test('a garbled answer fails UNAVAILABLE instead of waiting for more', async () => {
  const { pool } = await listen(net.createServer((socket) => {
    socket.once('data', () => socket.write('SPDY/9 nonsense\r\n\r\n'));
  }));
  await expect(pool.send(post('x'), 2000)).rejects.toMatchObject({
    code: 'UNAVAILABLE', message: expect.stringContaining('could not be read: not an HTTP/1.1 answer'),
  });
});

test('after close() sending is refused', async () => {
  const { pool } = await listen(echoServer((body, res) => res.end(body)));
  await pool.send(post('x'));
  pool.close();
  await expect(pool.send(post('y'))).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('closed') });
});
