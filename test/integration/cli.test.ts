/**
 * `infernode serve` as a process (node lib/cli/main.js): --help explains every flag, bad values
 * exit non-zero with a clear message, serving starts and SIGTERM/SIGINT stop it gracefully with
 * exit code 0, and a model that fails to load exits non-zero with --exit-on-error (the default)
 * but keeps the server up with --exit-on-error=false. The listeners are disabled (other suites
 * use the default ports); the HTTP-level checks live with the HTTP suites.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ensureLib, LIB } from './lib-build';
import { TempRepo, addConstModel } from './repository/repo-helpers';
import { tritonConfigFromOptions, type ServeOptions } from '../../ts/cli/main';

const MAIN = path.join(LIB, 'cli', 'main.js');
const NO_LISTENERS = ['--allow-http=false', '--allow-grpc=false', '--allow-metrics=false'];

let repo: TempRepo;

beforeAll(() => {
  ensureLib();
}, 120_000);

beforeEach(() => {
  repo = new TempRepo('cli');
  repo.onnx('add', 1, addConstModel(1));
  repo.config('add', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4');
});

afterEach(() => {
  repo.cleanup();
});

function runSync(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A running `infernode serve`, with its output so far. */
class Server {
  readonly child: ChildProcess;
  output = '';
  /** What went to stderr alone. */
  errors = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: string[], cwd?: string) {
    this.child = spawn(process.execPath, [MAIN, 'serve', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => { this.output += d.toString(); });
    this.child.stderr!.on('data', (d: Buffer) => {
      this.output += d.toString();
      this.errors += d.toString();
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Waits until the output matches `pattern` (or the process exits). */
  async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => { exited = true; });
    while (!pattern.test(this.output)) {
      if (exited) throw new Error(`the server exited before printing ${pattern}:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

const servers: Server[] = [];
function serve(args: string[], cwd?: string): Server {
  const s = new Server(args, cwd);
  servers.push(s);
  return s;
}

afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
});

describe('--help', () => {
  const FLAGS = [
    '--model-repository', '--model-control-mode', '--load-model', '--repository-poll-secs', '--http-port', '--grpc-port',
    '--metrics-port', '--allow-http', '--allow-grpc', '--allow-metrics', '--strict-readiness', '--exit-on-error',
    '--exit-timeout-secs', '--log-verbose', '--http-restricted-api', '--grpc-restricted-protocol', '--allow-client-shm',
    '--http-max-input-size', '--metrics-config', '--trace-config', '--log-file', '--log-format', '--log-info',
    '--allow-gpu-metrics', '--allow-cpu-metrics', '--metrics-interval-ms', '--pinned-memory-pool-byte-size',
    '--grpc-use-ssl', '--grpc-use-ssl-mutual', '--grpc-server-cert', '--grpc-server-key', '--grpc-root-cert',
    '--http-use-ssl', '--http-use-ssl-mutual', '--http-server-cert', '--http-server-key', '--http-root-cert',
  ];

  test('serve --help lists every flag with an explanation and its default, and exits 0', () => {
    const { status, stdout } = runSync(['serve', '--help']);
    expect(status).toBe(0);
    const lines = stdout.split('\n');
    for (const flag of FLAGS) {
      const line = lines.find((l) => l.trimStart().startsWith(`${flag} `));
      expect(line).toBeDefined();
      // The flag, its argument, then at least a few words of explanation.
      const explanation = line!.trim().replace(/^\S+\s+(\[[^\]]*\]|<[^>]*>)\s+/, '');
      expect(explanation.split(/\s+/).length).toBeGreaterThanOrEqual(3);
    }
    expect(stdout).toMatch(/--model-control-mode <mode>\s+none: .*poll: .*explicit: /);
    expect(stdout).toMatch(/--exit-on-error \[bool\].*\(default true\)/);
    expect(stdout).toMatch(/--allow-client-shm \[bool\].*\(default false\)/);
    expect(stdout).toMatch(/--repository-poll-secs <s>.*\(default: 15\)/);
  });

  test('the top-level --help names the serve command', () => {
    const { status, stdout } = runSync(['--help']);
    expect(status).toBe(0);
    expect(stdout).toMatch(/serve \[options\]\s+serve a Triton model repository/);
    expect(stdout).toMatch(/--version\s+print the infernode version/);
  });

  test.each([['--version']])('%s prints the package version and exits 0', (flag) => {
    const { status, stdout } = runSync([flag]);
    expect(status).toBe(0);
    expect(stdout.trim()).toBe(JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')).version);
  });
});

describe('bad flag values exit non-zero with a clear message', () => {
  test.each([
    [['--model-control-mode=sometimes'], /--model-control-mode <mode>' argument 'sometimes' is invalid\. Allowed choices are none, poll, explicit/],
    [['--http-port=eighty'], /--http-port <port>' argument 'eighty' is invalid\. expected a port number from 0 to 65535, got 'eighty'/],
    [['--grpc-port=70000'], /--grpc-port <port>' argument '70000' is invalid\. expected a port number from 0 to 65535/],
    // Triton's words (its L0_http test.sh looks for them).
    [['--http-max-input-size=0'], /Error: --http-max-input-size must be greater than 0\./],
    [['--http-max-input-size=-1024'], /Error: --http-max-input-size must be greater than 0\./],
    [['--repository-poll-secs=-1'], /--repository-poll-secs <s>' argument '-1' is invalid\. expected a non-negative integer/],
    [['--exit-timeout-secs=1.5'], /--exit-timeout-secs <s>' argument '1\.5' is invalid/],
    [['--exit-on-error=maybe'], /--exit-on-error \[bool\]' argument 'maybe' is invalid\. expected true or false, got 'maybe'/],
    [['--no-such-flag'], /unknown option '--no-such-flag'/],
    [['--metrics-interval-ms=0'], /--metrics-interval-ms <ms>' argument '0' is invalid\. expected a positive integer, got '0'/],
    [['--metrics-interval-ms=2s'], /--metrics-interval-ms <ms>' argument '2s' is invalid\. expected a positive integer, got '2s'/],
    [['--allow-gpu-metrics=sometimes'], /--allow-gpu-metrics \[bool\]' argument 'sometimes' is invalid\. expected true or false/],
    [['--pinned-memory-pool-byte-size=-1'], /--pinned-memory-pool-byte-size <bytes>' argument '-1' is invalid\. expected a non-negative integer/],
    [['--http-restricted-api=everything:k=v'], /unknown restricted api 'everything' \(--http-restricted-api; groups: /],
    [['--grpc-restricted-protocol=everything:k=v'], /unknown restricted protocol 'everything' \(--grpc-restricted-protocol; groups: /],
    [['--http-restricted-api=health:a=1', '--http-restricted-api=health:b=2'],
      /restricted api 'health' can not be specified in multiple config groups/],
    [['--load-model=*', '--load-model=add', '--model-control-mode=explicit'], /--load-model=\* loads every model and must be the only --load-model/],
    // Triton's texts (command_line_parser.cc SetGlobalTraceArgs); before, these started with tracing silently off.
    [['--trace-config=level=BOGUS'], /Bad option: "--trace-config level"\.\ninvalid value for trace level option: BOGUS/],
    [['--trace-config=rate=abc'], /Bad option: "--trace-config rate"\.\nInvalid option value\. Got abc/],
    [['--trace-config=mode=opentelemetry'], /trace mode opentelemetry is not supported by infernode/],
  ])('%j', (flags, message) => {
    const { status, stderr } = runSync(['serve', `--model-repository=${repo.root}`, ...NO_LISTENERS, ...flags]);
    expect(status).not.toBe(0);
    expect(stderr).toMatch(message);
  });

  test('no --model-repository', () => {
    const { status, stderr } = runSync(['serve', ...NO_LISTENERS]);
    expect(status).toBe(1);
    expect(stderr).toContain('infernode: --model-repository is required');
  });

  test('a model repository that does not exist', () => {
    const { status, stderr } = runSync(['serve', `--model-repository=${repo.path('missing')}`, ...NO_LISTENERS]);
    expect(status).toBe(1);
    expect(stderr).toContain(`model repository '${repo.path('missing')}' is not a directory`);
  });
});

describe('serving', () => {
  test('starts, serves until SIGTERM, then stops gracefully with exit code 0', async () => {
    const s = serve([`--model-repository=${repo.root}`, ...NO_LISTENERS]);
    await s.waitFor(/serving 1 model version\(s\) from .* \(mode none; no listeners\)/);
    expect(s.output).toContain("loaded model 'add' version(s) 1");
    // Still serving a while later: nothing lets the process end on its own.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(s.child.exitCode).toBeNull();
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.output).toMatch(/SIGTERM received, stopping[\s\S]*infernode: stopped/);
  });

  test('SIGINT stops it the same way', async () => {
    const s = serve([`--model-repository=${repo.root}`, ...NO_LISTENERS]);
    await s.waitFor(/serving 1 model version/);
    s.child.kill('SIGINT');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  });

  test('--model-control-mode=explicit with --load-model loads only that model', async () => {
    repo.onnx('other', 1, addConstModel(2));
    const s = serve([`--model-repository=${repo.root}`, '--model-control-mode=explicit', '--load-model=other', ...NO_LISTENERS]);
    await s.waitFor(/serving 1 model version\(s\) .*mode explicit/);
    expect(s.output).toContain("loaded model 'other' version(s) 1");
    expect(s.output).not.toContain("loaded model 'add'");
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
  });

  test('several --model-repository flags (and the --model-store alias) are served together', async () => {
    const other = new TempRepo('cli-b');
    try {
      other.onnx('second', 1, addConstModel(2));
      const s = serve([`--model-repository=${repo.root}`, `--model-store=${other.root}`, ...NO_LISTENERS]);
      await s.waitFor(/serving 2 model version\(s\)/);
      s.child.kill('SIGTERM');
      expect((await s.exited).code).toBe(0);
    } finally {
      other.cleanup();
    }
  });
});

describe('a model that fails to load', () => {
  beforeEach(() => {
    repo.onnx('broken', 1, Buffer.from('not an onnx model'));
  });

  test('exits non-zero by default (--exit-on-error), naming the model and the reason', async () => {
    const s = serve([`--model-repository=${repo.root}`, ...NO_LISTENERS]);
    const { code } = await s.exited;
    expect(code).toBe(1);
    // One line per model with its reason, then how to start anyway.
    expect(s.errors).toMatch(/infernode: failed to load model\(s\):\n {2}broken: model 'broken' version 1: .*Protobuf parsing failed/);
    expect(s.errors).toContain('To serve the models that did load, start with exitOnError: false (infernode serve --exit-on-error=false).');
    expect(s.output).not.toMatch(/serving \d+ model/);
  });

  test('the failure is an error on stderr, which --log-info=false does not hide', async () => {
    const s = serve([`--model-repository=${repo.root}`, '--exit-on-error=false', '--log-info=false', ...NO_LISTENERS]);
    await s.waitFor(/failed to load model 'broken'/);
    expect(s.errors).toMatch(/^E\S* .*infernode: failed to load model 'broken': model 'broken' version 1: /m);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  });

  test('keeps serving the other models with --exit-on-error=false, until SIGTERM', async () => {
    const s = serve([`--model-repository=${repo.root}`, '--exit-on-error=false', ...NO_LISTENERS]);
    await s.waitFor(/serving 1 model version\(s\)/);
    expect(s.output).toMatch(/failed to load model 'broken': model 'broken' version 1: /);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  });
});

/** The ports a server printed in its "serving" line (`http on port N, grpc on port M, ...`). */
function printedPorts(output: string): Record<string, number> {
  const ports: Record<string, number> = {};
  for (const m of output.matchAll(/(http|grpc|metrics) on port (\d+)/g)) ports[m[1]] = Number(m[2]);
  return ports;
}

const ROOT = path.join(__dirname, '..', '..');
const ANY_PORTS = ['--http-port=0', '--grpc-port=0', '--metrics-port=0'];

describe('serving over the network', () => {
  test('a relative --model-repository serves the examples: ONNX and JS models over HTTP, metrics', async () => {
    // Relative to the working directory, as users type it: JS models must load from it too.
    const s = serve(['--model-repository=examples/models', ...ANY_PORTS], ROOT);
    await s.waitFor(/serving \d+ model version\(s\)/);
    const ports = printedPorts(s.output);
    expect(Object.keys(ports).sort()).toEqual(['grpc', 'http', 'metrics']);
    const base = `http://127.0.0.1:${ports.http}`;
    expect((await fetch(`${base}/v2/health/ready`)).status).toBe(200);

    const addSub = await fetch(`${base}/v2/models/add_sub/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 3], data: [10, 20, 30] },
      ] }),
    });
    expect(addSub.status).toBe(200);
    const body = await addSub.json() as { outputs: { name: string; data: number[] }[] };
    const out = Object.fromEntries(body.outputs.map((o) => [o.name, o.data]));
    expect(out.OUTPUT0).toEqual([11, 22, 33]);
    expect(out.OUTPUT1).toEqual([-9, -18, -27]);

    const mlp = await fetch(`${base}/v2/models/mlp_classifier/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 16], data: Array(32).fill(0.5) }] }),
    });
    expect(mlp.status).toBe(200);
    const logits = (await mlp.json() as { outputs: { name: string; shape: number[] }[] }).outputs[0];
    expect(logits).toMatchObject({ name: 'logits', shape: [2, 4] });

    const metrics = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    expect(metrics).toMatch(/nv_inference_request_success\{model="add_sub",version="1"\} 1/);
    expect(metrics).toMatch(/nv_inference_count\{model="mlp_classifier",version="1"\} 2/);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  });

  test('--log-file receives the log; --log-info=false leaves info lines out', async () => {
    const logFile = repo.path('server.log');
    const s = serve([`--model-repository=${repo.root}`, ...NO_LISTENERS, `--log-file=${logFile}`, '--log-format=ISO8601']);
    await waitForFile(logFile, /serving 1 model version/);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    const log = readFileSync(logFile, 'utf8');
    expect(log).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}.*loaded model 'add'/m);
    expect(s.output).not.toContain("loaded model 'add'");

    // A second, broken model makes the quiet server end by itself once its loads are done
    // (--exit-on-error): no signal to race against its start-up, and errors are never hidden.
    repo.config('broken', 'max_batch_size: "many"');
    const quiet = serve([`--model-repository=${repo.root}`, ...NO_LISTENERS, '--log-info=false']);
    expect(await quiet.exited).toEqual({ code: 1, signal: null });
    expect(quiet.output).toContain('broken');
    expect(quiet.output).not.toContain("loaded model 'add'");
  });
});

async function waitForFile(file: string, pattern: RegExp, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(existsSync(file) && pattern.test(readFileSync(file, 'utf8')))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern} in ${file}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('--exit-timeout-secs bounds the whole shutdown', () => {
  /** A JS model whose initialize never resolves (its load hangs). */
  function addHangingModel(): void {
    repo.config('hang', `backend: "js"
      max_batch_size: 0
      input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
      output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]`);
    repo.write('hang/1/model.js', `
      exports.initialize = () => {
        process.stdout.write('hang: initialize entered\\n');
        return new Promise(() => {});
      };
      exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN }));`);
  }

  test('SIGTERM while a load over the API never finishes: Triton\'s exit-timeout line, exit code 1', async () => {
    addHangingModel();
    const s = serve([`--model-repository=${repo.root}`, '--model-control-mode=explicit', '--exit-timeout-secs=1',
      '--http-address=127.0.0.1', '--http-port=0', '--allow-grpc=false', '--allow-metrics=false']);
    await s.waitFor(/serving 0 model version\(s\)/);
    const { http } = printedPorts(s.output);
    const load = fetch(`http://127.0.0.1:${http}/v2/repository/models/hang/load`, { method: 'POST' }).catch((err: unknown) => err);
    await s.waitFor(/hang: initialize entered/);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 1, signal: null });
    expect(s.output).toContain('Exit timeout expired. Exiting immediately.');
    await load;  // the connection ended with the process
  });

  test('SIGTERM while an initial --load-model never finishes: the same', async () => {
    addHangingModel();
    const s = serve([`--model-repository=${repo.root}`, '--model-control-mode=explicit', '--load-model=hang',
      '--exit-timeout-secs=1', ...NO_LISTENERS]);
    await s.waitFor(/hang: initialize entered/);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 1, signal: null });
    expect(s.output).toContain('Exit timeout expired. Exiting immediately.');
  });
});

describe('--grpc-max-decompressed-size', () => {
  test('is listed in --help and reaches TritonConfig.grpcMaxDecompressedSize', () => {
    const { status, stdout } = runSync(['serve', '--help']);
    expect(status).toBe(0);
    expect(stdout).toMatch(/--grpc-max-decompressed-size <bytes>\s+largest\s+size\s+a\s+compressed\s+gRPC/);
    const options: ServeOptions = {
      modelRepository: [], modelControlMode: 'none', repositoryPollSecs: 15, httpPort: 0, grpcPort: 0, metricsPort: 0,
      exitTimeoutSecs: 30, logVerbose: 0, grpcMaxDecompressedSize: 1234,
    };
    expect(tritonConfigFromOptions(options).grpcMaxDecompressedSize).toBe(1234);
  });
});

describe('--allow-gpu-metrics and --metrics-interval-ms', () => {
  test('are listed in --help with their defaults', () => {
    const { status, stdout } = runSync(['serve', '--help']);
    expect(status).toBe(0);
    expect(stdout).toMatch(/--allow-gpu-metrics \[bool\]\s+report per-GPU metrics[\s\S]*?\(default true\)/);
    expect(stdout).toMatch(/--metrics-interval-ms <ms>\s+how often CPU, memory and GPU metrics refresh[\s\S]*?\(default 2000\)/);
  });

  test('--allow-gpu-metrics false (a separate word) and --allow-cpu-metrics=false parse and the server serves', async () => {
    // --allow-cpu-metrics was refused as an unknown option: tritonserver command lines with it did not start.
    const s = serve([`--model-repository=${repo.root}`, ...NO_LISTENERS, '--allow-gpu-metrics', 'false', '--allow-cpu-metrics=false', '--metrics-interval-ms', '500']);
    await s.waitFor(/serving 1 model version\(s\)/);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  });

  test('reach TritonConfig.allowGpuMetrics and allowCpuMetrics (default true) and metricsIntervalMs', () => {
    const options: ServeOptions = {
      modelRepository: [], modelControlMode: 'none', repositoryPollSecs: 15, httpPort: 0, grpcPort: 0, metricsPort: 0,
      exitTimeoutSecs: 30, logVerbose: 0,
    };
    expect(tritonConfigFromOptions(options)).toMatchObject({ allowGpuMetrics: true, allowCpuMetrics: true });
    const given = tritonConfigFromOptions({ ...options, allowGpuMetrics: false, allowCpuMetrics: false, metricsIntervalMs: 500 });
    expect(given.allowGpuMetrics).toBe(false);
    expect(given.allowCpuMetrics).toBe(false);
    expect(given.metricsIntervalMs).toBe(500);
  });
});
