/**
 * The HTTP load generator of the HTTP bench, run as a child process so its CPU is not the
 * server's event loop. It keeps `concurrency` keep-alive connections, each with one request in
 * flight (closed loop), writes one pre-serialized request per turn and parses only what it must
 * of each response (status, Content-Length), so it stays cheap on a small machine.
 *
 * Protocol (loadInChild): the parent forks this file and sends one LoadJob message; the child
 * sends 'measuring' when its warm-up ends, then one LoadReport message, and exits.
 */
import { fork } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';

export interface LoadJob {
  port: number;
  /** The complete HTTP request (head and body), base64. */
  request: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadReport {
  requests: number;
  errors: number;
  seconds: number;
  /** Latencies in µs, sorted (only the measured window). */
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** Where a complete response ends in `buf` and its status; null while incomplete. */
function responseEnd(buf: Buffer): { end: number; status: number } | null {
  const head = buf.indexOf(HEADER_END);
  if (head < 0) return null;
  const text = buf.toString('latin1', 0, head);
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(text);
  const length = m ? Number(m[1]) : 0;
  const end = head + 4 + length;
  return buf.length >= end ? { end, status: Number(text.slice(9, 12)) } : null;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Runs one job in a child process of its own. `onMeasuring` runs when the warm-up ends and the
 * measured window starts (a server in this process samples its CPU time there).
 */
export function loadInChild(job: LoadJob, onMeasuring?: () => void): Promise<LoadReport> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'http-load.js'), [], { stdio: 'inherit' });
    child.on('message', (message: LoadReport | 'measuring') => {
      if (message === 'measuring') onMeasuring?.();
      else resolve(message);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
    });
    child.send(job);
  });
}

/** Runs one job against 127.0.0.1:`port`; `onMeasuring` runs when the warm-up ends. */
export function runJob(job: LoadJob, onMeasuring?: () => void): Promise<LoadReport> {
  const request = Buffer.from(job.request, 'base64');
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const measureFrom = start + job.warmupMs;
  const stopAt = measureFrom + job.durationMs;
  let open = job.concurrency;
  if (onMeasuring) setTimeout(onMeasuring, job.warmupMs);
  return new Promise((resolve, reject) => {
    const finish = (): void => {
      const seconds = (performance.now() - measureFrom) / 1000;
      const sorted = Float64Array.from(latencies).sort();
      const sum = latencies.reduce((a, b) => a + b, 0);
      resolve({
        requests: latencies.length, errors, seconds,
        p50Us: percentile(sorted, 50), p99Us: percentile(sorted, 99), meanUs: latencies.length ? sum / latencies.length : 0,
      });
    };
    for (let i = 0; i < job.concurrency; i++) {
      const socket = net.connect(job.port, '127.0.0.1');
      socket.setNoDelay(true);
      let pending: Buffer = Buffer.alloc(0);
      let sentAt = 0;
      const send = (): void => {
        sentAt = performance.now();
        socket.write(request);
      };
      socket.on('connect', send);
      socket.on('error', reject);
      socket.on('close', () => {
        if (--open === 0) finish();
      });
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        const done = responseEnd(pending);
        if (!done) return;
        pending = pending.subarray(done.end);
        const now = performance.now();
        if (sentAt >= measureFrom) {
          if (done.status === 200) latencies.push((now - sentAt) * 1000);
          else errors++;
        }
        if (now < stopAt) send();
        else socket.end();
      });
    }
  });
}

if (require.main === module && process.send) {
  process.once('message', (job: LoadJob) => {
    runJob(job, () => process.send!('measuring')).then((report) => {
      process.send!(report, () => process.exit(0));
    }, (err: unknown) => {
      console.error(err);
      process.exit(1);
    });
  });
}
