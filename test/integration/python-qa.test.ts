/**
 * Triton's own QA unittest files (qa/L0_http, qa/L0_grpc of triton-inference-server/server),
 * vendored unchanged in test/python/vendor/triton-server-qa/, run with NVIDIA's tritonclient
 * (assembled by scripts/python-clients.sh) against a real `infernode serve` (issue 11).
 *
 * They hard-code localhost:8000 (HTTP) and localhost:8001 (gRPC), so each server configuration
 * runs in a network namespace of its own (`unshare -rn`, loopback up), where those ports are its
 * own: test/python/qa/run-in-namespace.sh starts infernode there with the arguments Triton's
 * test.sh gives tritonserver, waits for it, and runs the named cases through run_unittest.py,
 * which writes each case's outcome. Without namespaces (a container that forbids them) the runs
 * use the machine's ports 8000-8002, one after another, as docs-blocks.test.ts falls back.
 *
 * Every `def test_` of every vendored file is listed below with what is expected of it: it passes,
 * it fails for a documented difference (the test then asserts that it still fails, so a fix is
 * noticed), or it is not run, with the reason. A case missing from the lists fails the suite.
 */
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureLib } from './lib-build';
import { assembleClients, BUILD, exampleRepository, OWN_SCRIPTS, PYTHON } from './python-clients-support';

const QA = path.join(OWN_SCRIPTS, 'qa');
const VENDORED = path.join(OWN_SCRIPTS, 'vendor', 'triton-server-qa');

/**
 * What a case must do: pass; fail for a deliberate difference documented in docs/http.md or
 * docs/grpc.md (`differs`); fail for a known gap not fixed yet (`notFixed`, with where the fix
 * belongs); or not run (`notRun`, with the reason).
 */
type Expectation = 'pass' | { differs: string } | { notFixed: string } | { notRun: string };

/** One tritonserver configuration of Triton's test.sh: a repository, arguments, and the cases run against it. */
interface QaRun {
  title: string;
  /** The vendored file, relative to test/python/vendor/triton-server-qa. */
  file: string;
  /** The unittest class whose cases this configuration runs. */
  testClass: string;
  cases: Record<string, Expectation>;
  repository: () => string;
  serverArgs: (repository: string) => string[];
}

interface CaseOutcome { outcome: 'passed' | 'failed' | 'error' | 'skipped'; detail: string }

/** Triton's qa_identity_model_repository models that http_test.py uses (test.sh, L0_http), as JS identity models. */
function identityRepository(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'infernode-qa-identity-'));
  const identity = readFileSync(path.join(QA, 'models', 'identity.js'), 'utf8');
  const zeroModel = (name: string, type: string, dims: string, ioCount = 1, extra = ''): void => {
    const tensors = (kind: string): string => Array.from({ length: ioCount }, (_, i) =>
      `  { name: "${kind}${i}" data_type: ${type} dims: ${dims} }`).join(',\n');
    mkdirSync(path.join(root, name, '1'), { recursive: true });
    writeFileSync(path.join(root, name, '1', 'model.js'), identity);
    writeFileSync(path.join(root, name, 'config.pbtxt'),
      `name: "${name}"\nbackend: "js"\nmax_batch_size: 8\ninput [\n${tensors('INPUT')}\n]\noutput [\n${tensors('OUTPUT')}\n]\n${extra}`);
  };
  zeroModel('onnx_zero_1_float32', 'TYPE_FP32', '[ -1 ]');
  zeroModel('onnx_zero_1_object', 'TYPE_STRING', '[ -1 ]');
  zeroModel('onnx_zero_1_float16', 'TYPE_FP16', '[ -1, -1 ]');
  zeroModel('onnx_zero_3_float32', 'TYPE_FP32', '[ -1 ]', 3);
  // test.sh: the first -1 of onnx_zero_1_object's config becomes 1.
  zeroModel('onnx_zero_1_object_1_element', 'TYPE_STRING', '[ 1 ]');
  // test_descriptive_status_code queues one request, sleeps 0.5 s, and needs it still queued when
  // its second request arrives: Triton's qa holds it 1 s; 3 s here, so a loaded machine keeps it.
  zeroModel('onnx_zero_1_float32_queue', 'TYPE_FP32', '[ -1 ]', 1,
    'dynamic_batching {\n  max_queue_delay_microseconds: 3000000\n  preferred_batch_size: [ 8 ]\n  default_queue_policy { max_queue_size: 1 }\n}\n');
  const models = path.join(OWN_SCRIPTS, 'models');
  cpSync(path.join(models, 'simple_identity'), path.join(root, 'simple_identity'), { recursive: true });
  cpSync(path.join(models, 'simple_identity'), path.join(root, 'simple_identity_int64'), { recursive: true });
  const int64Config = path.join(root, 'simple_identity_int64', 'config.pbtxt');
  writeFileSync(int64Config, readFileSync(int64Config, 'utf8').replace(/TYPE_STRING/g, 'TYPE_INT64').replace(/"simple_identity"/, '"simple_identity_int64"'));
  return root;
}

/** L0_grpc's grpc_test_models: `simple` and qa/python_models/string_identity (dims [ -1 ]) as a JS model. */
function grpcTestRepository(): string {
  const root = exampleRepository();
  for (const name of ['simple_dyna_sequence', 'simple_identity', 'simple_int8', 'simple_sequence', 'simple_string',
    'simple_string_dyna_sequence', 'repeat_int32']) rmSync(path.join(root, name), { recursive: true, force: true });
  mkdirSync(path.join(root, 'string_identity', '1'), { recursive: true });
  writeFileSync(path.join(root, 'string_identity', '1', 'model.js'), readFileSync(path.join(QA, 'models', 'identity.js'), 'utf8'));
  writeFileSync(path.join(root, 'string_identity', 'config.pbtxt'), `name: "string_identity"
backend: "js"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
`);
  return root;
}

/** The cases python_http_aio_test.py and python_grpc_aio_test.py share (one call each), all expected to pass. */
function aioCases(): Record<string, Expectation> {
  const calls = ['is_server_live', 'is_server_ready', 'is_model_ready', 'get_server_metadata', 'get_model_metadata',
    'get_model_config', 'get_model_repository_index', 'load_model', 'unload_model', 'get_inference_statistics',
    'update_trace_settings', 'get_trace_settings', 'get_system_shared_memory_status', 'register_system_shared_memory',
    'unregister_system_shared_memory', 'get_cuda_shared_memory_status', 'register_cuda_shared_memory',
    'unregister_cuda_shared_memory'];
  return Object.fromEntries(calls.map((call) => [`test_${call}`, 'pass']));
}

const RUNS: QaRun[] = [
  {
    title: 'L0_http http_test.py',
    file: 'L0_http/http_test.py', testClass: 'HttpTest',
    repository: identityRepository,
    serverArgs: (repo) => ['--model-repository', repo, '--model-control-mode=explicit', '--load-model=*'],
    cases: {
      test_raw_binary: 'pass',
      test_raw_binary_longer: 'pass',
      test_byte: 'pass',
      test_byte_too_many_elements: 'pass',
      test_multi_variable_dimensions: 'pass',
      test_multi_inputs: 'pass',
      test_content_encoding_chunked_manually: { differs: 'requests sends Content-Length beside Transfer-Encoding: chunked; infernode refuses the pair with 400 (docs/http.md, "Limits and hostile input")' },
      test_content_encoding_unsupported_client: 'pass',
      test_descriptive_status_code: 'pass',
      test_buffer_size_overflow: 'pass',
      test_negative_dimensions: { differs: "a negative dim is the client's error: 400 (INVALID_ARG) with Triton's text, where Triton answers 500 (docs/http.md, \"Differences from Triton\")" },
      test_loading_large_invalid_model: { notRun: 'the client builds a 2 GiB body (about 9 GiB of client memory); infernode refuses bodies over --http-max-input-size before reading them (test/integration/http/hostile.test.ts)' },
      test_load_oversized_file_parameter: 'pass',
      test_json_recursion_depth_limit: 'pass',
      test_duplicate_output_names: 'pass',
      test_repository_index_deeply_nested_json: 'pass',
      test_inference_header_content_length_out_of_range: 'pass',
    },
  },
  {
    title: 'L0_http http_input_size_limit_test.py (default limit)',
    file: 'L0_http/http_input_size_limit_test.py', testClass: 'InferSizeLimitTest',
    repository: identityRepository,
    serverArgs: (repo) => ['--model-repository', repo],
    cases: {
      test_default_limit_raw_binary: 'pass',
      test_default_limit_json: 'pass',
      test_large_string_in_json: 'pass',
      test_default_limit_compressed: 'pass',
      test_json_dtype_size_expansion_exceeds_limit_error: 'pass',
      test_no_leak_on_invalid_inference_header_length: { notRun: "it compares the server's RSS before and after 100 refused requests (psutil); in a garbage-collected process that depends on when V8 collects, so it would be flaky rather than a leak signal" },
    },
  },
  {
    title: 'L0_http http_input_size_limit_test.py (--http-max-input-size=2^27)',
    file: 'L0_http/http_input_size_limit_test.py', testClass: 'InferSizeLimitTest',
    repository: identityRepository,
    serverArgs: (repo) => ['--model-repository', repo, `--http-max-input-size=${2 ** 27}`],
    cases: { test_large_input_raw_binary: 'pass', test_large_input_json: 'pass', test_large_input_compressed: 'pass' },
  },
  {
    title: 'L0_http http_request_many_chunks.py',
    file: 'L0_http/http_request_many_chunks.py', testClass: 'HTTPRequestManyChunksTest',
    repository: () => exampleRepository(),
    serverArgs: (repo) => ['--model-repository', repo, '--allow-client-shm=true', '--model-control-mode=explicit', '--load-model=simple'],
    cases: {
      test_chunked_infer_at_max_chunks: 'pass',
      test_chunked_infer_rejected_over_max_chunks: 'pass',
      test_chunked_infer_over_max_chunks_reject_with_bounded_rss_growth: { notRun: "it compares the server's RSS (psutil) before and after 100 refused requests, which in a garbage-collected process depends on when V8 collects" },
    },
  },
  {
    title: 'L0_http python_http_aio_test.py',
    file: 'L0_http/python_http_aio_test.py', testClass: 'TestHttpAioClient',
    // L0_http's models: 7 (the gRPC one's 8 less repeat_int32).
    repository: () => exampleRepository(['repeat_int32']),
    serverArgs: (repo) => ['--model-repository', repo, '--allow-client-shm=true'],
    cases: aioCases(),
  },
  {
    title: 'L0_grpc python_grpc_aio_test.py',
    file: 'L0_grpc/python_grpc_aio_test.py', testClass: 'TestGrpcAioClient',
    repository: () => exampleRepository(),
    serverArgs: (repo) => ['--model-repository', repo, '--allow-client-shm=true'],
    cases: aioCases(),
  },
  {
    title: 'L0_grpc python_unit_test.py GrpcTest',
    file: 'L0_grpc/python_unit_test.py', testClass: 'GrpcTest',
    repository: grpcTestRepository,
    serverArgs: (repo) => ['--model-repository', repo],
    cases: {
      test_duplicate_output_names_rejected: 'pass',
      test_bytes_contents_many_elements_serialization: 'pass',
    },
  },
  {
    title: 'L0_grpc python_unit_test.py RestrictedProtocolTest',
    file: 'L0_grpc/python_unit_test.py', testClass: 'RestrictedProtocolTest',
    repository: () => exampleRepository(),
    serverArgs: (repo) => ['--model-repository', repo,
      '--grpc-restricted-protocol=model-repository:admin-key=admin-value',
      '--grpc-restricted-protocol=inference,health:infer-key=infer-value'],
    cases: { test_sanity: 'pass', test_model_repository: 'pass', test_health: 'pass', test_infer: 'pass', test_stream_infer: 'pass' },
  },
  {
    title: 'L0_http http_restricted_api_test.py',
    file: 'L0_http/http_restricted_api_test.py', testClass: 'RestrictedAPITest',
    repository: () => exampleRepository(),
    serverArgs: (repo) => ['--model-repository', repo,
      '--http-restricted-api=model-repository:admin-key=admin-value',
      '--http-restricted-api=inference,metadata:infer-key=infer-value'],
    cases: { test_sanity: 'pass', test_model_repository: 'pass', test_metadata: 'pass', test_infer: 'pass' },
  },
];

/** `unshare -rn` with loopback up, when this machine allows it (as docs-blocks.test.ts). */
function isolation(): string[] {
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8' });
  return probe.status === 0 ? ['unshare', '-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"'] : [];
}

const moduleOf = (run: QaRun): string => path.basename(run.file, '.py');
const caseId = (run: QaRun, name: string): string => `${moduleOf(run)}.${run.testClass}.${name}`;

/** Serves run's repository in a namespace and runs its cases; the outcome of each by case id. */
function runQa(run: QaRun, prefix: string[]): Promise<Map<string, CaseOutcome>> {
  const repository = run.repository();
  const work = mkdtempSync(path.join(os.tmpdir(), 'infernode-qa-run-'));
  const results = path.join(work, 'results.json');
  const log = path.join(work, 'server.log');
  const cases = Object.entries(run.cases).filter(([, e]) => e === 'pass' || !('notRun' in e)).map(([name]) => caseId(run, name));
  const command = [...prefix, path.join(QA, 'run-in-namespace.sh'), PYTHON, results, log, ...cases, '--', ...run.serverArgs(repository)];
  const pythonPath = [path.join(BUILD, 'lib'), path.join(VENDORED, path.dirname(run.file)), QA].join(':');
  return new Promise((resolve) => {
    execFile(command[0], command.slice(1), {
      cwd: work, timeout: 300_000, maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
    }, (error, stdout, stderr) => {
      const outcomes = new Map<string, CaseOutcome>();
      let parsed: Record<string, CaseOutcome> = {};
      try { parsed = JSON.parse(readFileSync(results, 'utf8')) as Record<string, CaseOutcome>; } catch { /* reported below */ }
      let serverLog = '';
      try { serverLog = readFileSync(log, 'utf8'); } catch { /* none */ }
      for (const id of cases) {
        outcomes.set(id, parsed[id] ?? {
          outcome: 'error',
          detail: `no result (${error?.message ?? 'runner exited 0'}):\n${stdout}${stderr}\nserver log:\n${serverLog}`,
        });
      }
      rmSync(work, { recursive: true, force: true });
      rmSync(repository, { recursive: true, force: true });
      resolve(outcomes);
    });
  });
}

const unavailable = assembleClients();
if (unavailable !== null) {
  console.warn(`python-qa.test.ts SKIPPED: NVIDIA's Python clients cannot be assembled here:\n${unavailable}`);
}
const requestsMissing = unavailable === null && spawnSync(PYTHON, ['-c', 'import requests']).status !== 0;
if (requestsMissing) console.warn('python-qa.test.ts: http_test.py needs python3-requests (apt-get install python3-requests); its cases fail');
const describeIfClients = unavailable === null ? describe : describe.skip;

test('every case of the vendored QA files is listed with its expectation', () => {
  for (const file of new Set(RUNS.map((run) => run.file))) {
    const source = readFileSync(path.join(VENDORED, file), 'utf8');
    const classes = [...source.matchAll(/^class (\w+)\(([^)]*)\):/gm)].filter(([, , base]) => /TestCase|TestResultCollector/.test(base));
    for (const [, testClass] of classes) {
      const body = source.slice(source.indexOf(`class ${testClass}(`)).split(/^class /m)[1];
      const defined = [...body.matchAll(/^ {4}(?:async )?def (test_\w+)\(/gm)].map((m) => m[1]).sort();
      // A class may be split over several configurations (test.sh restarts the server between them).
      const listed = RUNS.filter((run) => run.file === file && run.testClass === testClass)
        .flatMap((run) => Object.keys(run.cases)).sort();
      expect({ file, testClass, cases: listed }).toEqual({ file, testClass, cases: defined });
    }
  }
});

describeIfClients.each(RUNS)('Triton QA $title', (run) => {
  let outcomes: Map<string, CaseOutcome>;

  beforeAll(async () => {
    ensureLib();
    outcomes = await runQa(run, isolation());
  }, 320_000);

  for (const [name, expectation] of Object.entries(run.cases)) {
    const id = caseId(run, name);
    if (expectation !== 'pass' && 'notRun' in expectation) {
      test.skip(`${name} — not run: ${expectation.notRun}`, () => undefined);
    } else if (expectation === 'pass') {
      test(name, () => {
        const outcome = outcomes.get(id)!;
        if (outcome.outcome !== 'passed') throw new Error(`${id} ${outcome.outcome}:\n${outcome.detail}`);
      });
    } else {
      const reason = 'differs' in expectation ? `fails as documented: ${expectation.differs}` : `fails, not fixed yet: ${expectation.notFixed}`;
      test(`${name} — ${reason}`, () => {
        const outcome = outcomes.get(id)!;
        if (outcome.outcome === 'passed') throw new Error(`${id} now passes: make it 'pass' (and drop a documented difference from the docs)`);
      });
    }
  }
});
