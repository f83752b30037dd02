/**
 * NVIDIA's real Python clients against infernode (issue 11): tritonclient.http, tritonclient.grpc
 * and their asyncio variants, assembled from the triton-inference-server client and common
 * repositories by scripts/python-clients.sh into build-pyclients/, run as child processes against
 * a real infernode on loopback (HTTP and gRPC on free ports, client shared memory allowed).
 *
 * The models are Triton's example models with Triton's configs (backend "js" for their platform),
 * from test/python/models, copied into a temporary repository served in explicit control mode
 * with every model loaded (the model-control examples unload, override and reload `simple`).
 * The client repository's example scripts run unchanged, with only -u pointing at the server;
 * test/python/*.py add the checks the examples do not make.
 *
 * Without Debian's python3-grpcio etc. (see the script's header) the suite skips, saying so.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import { Triton } from '../../ts/triton';
import { assembleClients, BUILD, EXAMPLES, exampleRepository, OWN_SCRIPTS, PYTHON } from './python-clients-support';

const unavailable = assembleClients();
if (unavailable !== null) {

  console.warn(`python-clients.test.ts SKIPPED: NVIDIA's Python clients cannot be assembled here:\n${unavailable}`);
}
const describeIfClients = unavailable === null ? describe : describe.skip;

interface PythonRun {
  code: number | null;
  output: string;
}

/** Runs one script (blocking nothing: the server answers it from this same process). */
function runPython(script: string, args: string[], timeoutMs = 60_000): Promise<PythonRun> {
  return new Promise((resolve) => {
    execFile(PYTHON, [script, ...args], {
      cwd: BUILD, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, PYTHONPATH: path.join(BUILD, 'lib'), PYTHONUNBUFFERED: '1' },
    }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** Fails with the script's own output, which says which check went wrong. */
function expectSuccess(name: string, run: PythonRun): void {
  if (run.code !== 0) throw new Error(`${name} exited ${run.code}:\n${run.output}`);
}

/** A real infernode serving `repository` over HTTP and gRPC on free ports, every model loaded. */
interface Served {
  triton: Triton;
  repository: string;
  httpUrl: string;
  grpcUrl: string;
}

async function serveRepository(repository: string): Promise<Served> {
  const triton = new Triton({ config: { httpPort: 0, grpcPort: 0, allowMetrics: false, allowClientShm: true } });
  triton.useRepository({ repositories: [repository], controlMode: 'explicit', loadModels: ['*'] });
  await triton.run();
  return { triton, repository, httpUrl: `localhost:${triton.ports.http}`, grpcUrl: `localhost:${triton.ports.grpc}` };
}

async function stopServing(served: Served | undefined): Promise<void> {
  if (!served) return;
  await served.triton.stop();
  rmSync(served.repository, { recursive: true, force: true });
}

describeIfClients('NVIDIA tritonclient against infernode', () => {
  let served: Served;

  beforeAll(async () => {
    served = await serveRepository(exampleRepository());
  }, 60_000);

  afterAll(() => stopServing(served));

  // The client repository's examples, unchanged, with -u naming the server (and -d, -i as
  // Triton's L0_http / L0_grpc run them). Those that share server-wide state (shared-memory
  // registrations, model control's unload/reload of `simple`) run one after another: jest runs a
  // file's tests in order.
  const httpExamples = [
    'simple_http_infer_client.py',
    'simple_http_async_infer_client.py',
    'simple_http_aio_infer_client.py',
    'simple_http_health_metadata.py',
    'simple_http_string_infer_client.py',
    'simple_http_sequence_sync_infer_client.py',
    'simple_http_sequence_sync_infer_client.py -d',
    'simple_http_shm_client.py',
    'simple_http_shm_string_client.py',
    'reuse_infer_objects_client.py -i http',
  ];
  const grpcExamples = [
    'simple_grpc_infer_client.py',
    'simple_grpc_async_infer_client.py',
    'simple_grpc_aio_infer_client.py',
    'simple_grpc_health_metadata.py',
    'simple_grpc_string_infer_client.py',
    'simple_grpc_sequence_sync_infer_client.py',
    'simple_grpc_sequence_sync_infer_client.py -d',
    'simple_grpc_sequence_stream_infer_client.py',
    'simple_grpc_sequence_stream_infer_client.py -d',
    'simple_grpc_aio_sequence_stream_infer_client.py',
    'simple_grpc_custom_args_client.py',
    'simple_grpc_custom_repeat.py',
    'simple_grpc_keepalive_client.py',
    'simple_grpc_shm_client.py',
    'simple_grpc_shm_string_client.py',
    'grpc_explicit_int_content_client.py',
    'grpc_explicit_int8_content_client.py',
    'grpc_explicit_byte_content_client.py',
    'reuse_infer_objects_client.py -i grpc',
    // Counts 8 models in the repository: this one's.
    'simple_grpc_model_control.py',
  ];

  // test/python/check_*.py: one line per check, PASS or FAIL with the reason.
  test('tritonclient.http and .aio checks (test/python/check_http.py)', async () => {
    expectSuccess('check_http.py', await runPython(path.join(OWN_SCRIPTS, 'check_http.py'), ['-u', served.httpUrl]));
  });

  test('tritonclient.grpc and .aio checks (test/python/check_grpc.py)', async () => {
    expectSuccess('check_grpc.py', await runPython(path.join(OWN_SCRIPTS, 'check_grpc.py'), ['-u', served.grpcUrl]));
  });

  test.each(httpExamples)('client example %s (HTTP)', async (commandLine) => {
    const [script, ...args] = commandLine.split(' ');
    expectSuccess(commandLine, await runPython(path.join(EXAMPLES, script), [...args, '-u', served.httpUrl]));
  });

  test.each(grpcExamples)('client example %s (gRPC)', async (commandLine) => {
    const [script, ...args] = commandLine.split(' ');
    expectSuccess(commandLine, await runPython(path.join(EXAMPLES, script), [...args, '-u', served.grpcUrl]));
  });
});

describeIfClients('NVIDIA tritonclient model control over HTTP', () => {
  // simple_http_model_control.py counts 7 models in the repository (L0_http's), the gRPC one 8.
  let served: Served;

  beforeAll(async () => {
    served = await serveRepository(exampleRepository(['repeat_int32']));
  }, 60_000);

  afterAll(() => stopServing(served));

  test('client example simple_http_model_control.py (HTTP)', async () => {
    const script = 'simple_http_model_control.py';
    expectSuccess(script, await runPython(path.join(EXAMPLES, script), ['-u', served.httpUrl]));
  });
});
