/**
 * deploy/: the Containerfile, the Kubernetes, Prometheus-adapter and KServe manifests and the
 * Grafana dashboard, checked against what they point at. Docker and Kubernetes cannot run here,
 * so each manifest is parsed, validated against the API schemas (kubernetes-models for the
 * Kubernetes and Prometheus Operator kinds; KServe's own CRD schemas, vendored, through ajv), and
 * every fact it relies on is checked against a real `infernode serve`: the probe paths and ports,
 * the container's command, the ServingRuntime's arguments, and every metric a query names.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { parse as parseYaml } from 'yaml';
import { credentials, Client, Metadata, type ServiceError } from '@grpc/grpc-js';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { buildProgram } from '../../ts/cli/main';
import { matchRoute } from '../../ts/server/http/router';
import { CLIENT_OPTIONS, healthServiceDefinition } from '../../ts/server/grpc/protos';
import {
  DEPLOY, EXAMPLES, LOOPBACK_ANY_PORTS, ROOT, ServeProcess, ensureLib, manifest, mlpRequestBody, scrape, type Ports, type Sample,
} from './helpers';

// ---------------------------------------------------------------------------------------------
// The Containerfile, read as docker/buildah read it: instructions, line continuations, stages.

interface Instruction { keyword: string; args: string }
interface Stage { name: string; base: string; instructions: Instruction[] }

function parseContainerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue;  // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(current + line);
    current = '';
  }
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(line)!;
    const keyword = m[1].toUpperCase();
    const args = m[2];
    if (keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)!;
      const base = from[1].replace(/\$\{(\w+)\}/g, (_, name: string) => globalArgs[name] ?? `\${${name}}`)
        .replace(/\$\{(\w+)\}/g, (_, name: string) => globalArgs[name] ?? `\${${name}}`);
      stages.push({ name: from[2] ?? String(stages.length), base, instructions: [] });
    } else if (stages.length === 0) {
      if (keyword !== 'ARG') throw new Error(`Containerfile: ${keyword} before the first FROM`);
      const arg = /^(\w+)(?:=(.*))?$/.exec(args)!;
      globalArgs[arg[1]] = (arg[2] ?? '').replace(/\$\{(\w+)\}/g, (_, name: string) => globalArgs[name] ?? '');
    } else {
      stages[stages.length - 1].instructions.push({ keyword, args });
    }
  }
  return { args: globalArgs, stages };
}

const containerfile = parseContainerfile(readFileSync(path.join(DEPLOY, 'Containerfile'), 'utf8'));
const stage = (name: string): Stage => {
  const found = containerfile.stages.find((s) => s.name === name);
  if (!found) throw new Error(`deploy/Containerfile has no stage '${name}'`);
  return found;
};
const all = (s: Stage, keyword: string): string[] => s.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const one = (s: Stage, keyword: string): string => {
  const found = all(s, keyword);
  if (found.length !== 1) throw new Error(`stage '${s.name}': expected one ${keyword}, found ${found.length}`);
  return found[0];
};
const FINAL_STAGES = ['runtime', 'gpu'];

/** The defaults of `infernode serve`'s listener ports, from the real parser. */
function cliDefaultPorts(): { http: number; grpc: number; metrics: number } {
  const serve = buildProgram().commands.find((c) => c.name() === 'serve')!;
  const port = (flag: string): number => serve.options.find((o) => o.long === flag)!.defaultValue as number;
  return { http: port('--http-port'), grpc: port('--grpc-port'), metrics: port('--metrics-port') };
}

/** The script of the HEALTHCHECK's `node -e <script>`. */
function healthcheckScript(s: Stage): string {
  const exec = JSON.parse(one(s, 'HEALTHCHECK').replace(/^(--\S+\s+)*CMD\s+/, '')) as string[];
  expect(exec.slice(0, 2)).toEqual(['node', '-e']);
  return exec[2];
}

/** Runs a HEALTHCHECK script against `port` instead of the container's 8000; its exit code. */
async function runHealthcheck(script: string, port: number): Promise<number | null> {
  const child = spawn(process.execPath, ['-e', script.replace('127.0.0.1:8000', `127.0.0.1:${port}`)], { stdio: 'ignore' });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

describe('deploy/Containerfile', () => {
  test('a pack stage with the compilers, and final stages on a Node slim and a CUDA runtime base with none', () => {
    expect(containerfile.stages.map((s) => s.name)).toEqual(
      expect.arrayContaining(['tarball-source', 'tarball-context', 'tarball', 'runtime', 'gpu']));
    expect(stage('runtime').base).toMatch(/^node:20-[a-z]+-slim$/);
    expect(stage('gpu').base).toMatch(/^nvidia\/cuda:\d+\.\d+\.\d+-cudnn-runtime-/);
    // The tarball stage is chosen by ARG TARBALL: the default builds the release (nvcc required).
    expect(stage('tarball').base).toBe(`tarball-${containerfile.args.TARBALL}`);
    expect(containerfile.args.CUDA_DEVEL_IMAGE).toMatch(/^nvidia\/cuda:\d+\.\d+\.\d+-devel-/);
    expect(all(stage('tarball-source'), 'RUN').join(' ')).toMatch(/npm run release/);
    // Both ways yield the same two tarballs: infernode and its ONNX Runtime platform package.
    for (const name of ['tarball-source', 'tarball-context']) {
      const text = [...all(stage(name), 'RUN'), ...all(stage(name), 'COPY')].join('\n');
      expect(text).toMatch(/dist\/infernode-\[0-9\]\*\.tgz \/out\/infernode\.tgz/);
      expect(text).toMatch(/dist\/infernode-onnxruntime-linux-x64-\*\.tgz \/out\/infernode-onnxruntime\.tgz/);
    }
    for (const name of FINAL_STAGES) {
      const s = stage(name);
      const runs = all(s, 'RUN').join('\n');
      expect(runs).not.toMatch(/(^|[\s;&|])(gcc|g\+\+|c\+\+|cmake|make|build-essential|nvcc|apt-get install|apt install)(?=$|\s)/m);
      expect(runs).toMatch(/npm install --global --omit=dev \/tmp\/pkg\/infernode\.tgz \/tmp\/pkg\/infernode-onnxruntime\.tgz/);
      expect(runs).toMatch(/&& infernode doctor/);
      expect(all(s, 'COPY')).toContain('--from=tarball /out/ /tmp/pkg/');
    }
    expect(all(stage('gpu'), 'RUN').join(' ')).toMatch(/com\.github\.asus4\.onnxruntime\.linux-x64-gpu@/);
  });

  test.each(FINAL_STAGES)('stage %s runs as a numeric non-root user', (name) => {
    const user = one(stage(name), 'USER');
    // Kubernetes' runAsNonRoot can verify only a numeric user.
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
  });

  test.each(FINAL_STAGES)('stage %s exposes the CLI\'s default ports and runs `infernode serve` on /models', (name) => {
    const s = stage(name);
    const defaults = cliDefaultPorts();
    expect(one(s, 'EXPOSE').split(/\s+/).map(Number).sort()).toEqual([defaults.http, defaults.grpc, defaults.metrics].sort());
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(JSON.parse(one(s, 'ENTRYPOINT'))).toEqual([Object.keys(pkg.bin)[0]]);
    expect(JSON.parse(one(s, 'CMD'))).toEqual(['serve', '--model-repository', '/models']);
    // The HEALTHCHECK asks a real route on the HTTP port (GET, readiness).
    const url = new URL(/'(http:\/\/[^']+)'/.exec(healthcheckScript(s))![1]);
    expect(Number(url.port)).toBe(defaults.http);
    expect(matchRoute(url.pathname)?.route.name).toBe('ready');
  });
});

// ---------------------------------------------------------------------------------------------
// Kubernetes: schema validation, and the cross-references between the manifests.

const deployment = new Deployment(manifest('kubernetes/deployment.yaml') as ConstructorParameters<typeof Deployment>[0]);
const container = deployment.spec!.template.spec!.containers[0];
const service = new Service(manifest('kubernetes/service.yaml') as ConstructorParameters<typeof Service>[0]);
const hpa = new HorizontalPodAutoscaler(manifest('kubernetes/hpa.yaml') as ConstructorParameters<typeof HorizontalPodAutoscaler>[0]);
const podMonitor = new PodMonitor(manifest('kubernetes/podmonitor.yaml') as ConstructorParameters<typeof PodMonitor>[0]);
const adapterConfigMap = new ConfigMap(manifest('kubernetes/prometheus-adapter-config.yaml') as ConstructorParameters<typeof ConfigMap>[0]);

interface AdapterRule { seriesQuery: string; metricsQuery: string; name: { matches: string; as: string }; resources: unknown }
const adapterRules = (parseYaml(adapterConfigMap.data!['config.yaml']) as { rules: AdapterRule[] }).rules;

/** The container port a probe's `port` (a number or a port name) refers to. */
function containerPort(port: number | string): number {
  if (typeof port === 'number') return port;
  const found = container.ports?.find((p) => p.name === port);
  if (!found) throw new Error(`no container port named '${port}' in deploy/kubernetes/deployment.yaml`);
  return found.containerPort;
}

/** The kubernetes-models type of each manifest, for the unknown-field check. */
const MANIFEST_TYPES: [file: string, module: string, type: string][] = [
  ['kubernetes/deployment.yaml', 'kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  ['kubernetes/service.yaml', 'kubernetes-models/v1/Service', 'IService'],
  ['kubernetes/hpa.yaml', 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', 'IHorizontalPodAutoscaler'],
  ['kubernetes/podmonitor.yaml', '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor', 'IPodMonitor'],
  ['kubernetes/prometheus-adapter-config.yaml', 'kubernetes-models/v1/ConfigMap', 'IConfigMap'],
];

/**
 * kubernetes-models' run-time validation ignores fields the schema does not declare (the API
 * server would drop them, and `kubectl --validate=strict` refuses them). Its TypeScript types
 * know every field: tsc's excess-property check on the manifests written as typed literals
 * refuses a misspelt field anywhere in them. Returns tsc's errors (empty when all are valid).
 */
function typeCheckManifests(docs: [file: string, module: string, type: string, doc: unknown][]): string {
  const tmpRoot = path.join(ROOT, '.tmp');
  mkdirSync(tmpRoot, { recursive: true });
  // Under the repository, so that tsc resolves kubernetes-models from its node_modules.
  const dir = mkdtempSync(path.join(tmpRoot, 'deploy-types-'));
  try {
    const source = docs.map(([file, module, type, doc], i) =>
      `import type { ${type} as T${i} } from '${module}';\n// deploy/${file}\nexport const m${i}: T${i} = ${JSON.stringify(doc, null, 1)};\n`).join('\n');
    writeFileSync(path.join(dir, 'manifests.ts'), source);
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, skipLibCheck: true, types: [], module: 'commonjs', moduleResolution: 'node', target: 'es2022' },
      files: ['manifests.ts'],
    }));
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', dir], { encoding: 'utf8', timeout: 120_000 });
    if (tsc.error) throw tsc.error;
    return `${tsc.stdout}${tsc.stderr}`.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('deploy/kubernetes', () => {
  test('every manifest validates against the Kubernetes and Prometheus Operator schemas', () => {
    for (const model of [deployment, service, hpa, podMonitor, adapterConfigMap]) expect(() => model.validate()).not.toThrow();
  });

  test('no manifest has a field the Kubernetes API does not declare (a misspelt field is refused)', () => {
    const docs = MANIFEST_TYPES.map(([file, module, type]) => [file, module, type, manifest(file)] as [string, string, string, unknown]);
    expect(typeCheckManifests(docs)).toBe('');
    const misspelt = JSON.parse(JSON.stringify(docs[0][3])) as Record<string, any>;
    misspelt.spec.template.spec.containers[0].readinesProbe = misspelt.spec.template.spec.containers[0].readinessProbe;
    expect(typeCheckManifests([[docs[0][0], docs[0][1], docs[0][2], misspelt]])).toMatch(/'"?readinesProbe"?' does not exist in type 'IContainer'/);
  }, 120_000);

  test('the validation can fail: a wrong type in the Deployment is refused', () => {
    const broken = JSON.parse(JSON.stringify(deployment.toJSON())) as Record<string, any>;
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    expect(() => new Deployment(broken).validate()).toThrow(/containerPort must be integer/);
  });

  test('the container ports are the image\'s EXPOSEd ports, the CLI defaults', () => {
    const defaults = cliDefaultPorts();
    expect(Object.fromEntries(container.ports!.map((p) => [p.name, p.containerPort]))).toEqual(defaults);
    expect(one(stage('runtime'), 'EXPOSE').split(/\s+/).map(Number).sort()).toEqual(container.ports!.map((p) => p.containerPort).sort());
  });

  test('readiness and liveness probe Triton\'s HTTP health routes on the HTTP port; startup uses gRPC health on the gRPC port', () => {
    const defaults = cliDefaultPorts();
    const ready = container.readinessProbe!.httpGet!;
    const live = container.livenessProbe!.httpGet!;
    expect(matchRoute(ready.path!)?.route.name).toBe('ready');
    expect(matchRoute(live.path!)?.route.name).toBe('live');
    expect(containerPort(ready.port)).toBe(defaults.http);
    expect(containerPort(live.port)).toBe(defaults.http);
    expect(container.startupProbe!.grpc!.port).toBe(defaults.grpc);
    // The container's command line is the image's: ENTRYPOINT infernode, args replacing CMD.
    expect(container.command).toBeUndefined();
    expect(container.args![0]).toBe('serve');
    // The pod runs as the image's user.
    expect(String(deployment.spec!.template.spec!.securityContext!.runAsUser)).toBe(one(stage('runtime'), 'USER').split(':')[0]);
  });

  test('the Service, the PodMonitor and the HPA refer to the Deployment\'s pods, ports and name', () => {
    const podLabels = deployment.spec!.template.metadata!.labels!;
    const portNames = container.ports!.map((p) => p.name);
    expect(podLabels).toMatchObject(service.spec!.selector!);
    for (const p of service.spec!.ports!) expect(portNames).toContain(p.targetPort);
    expect(podLabels).toMatchObject(podMonitor.spec.selector.matchLabels!);
    for (const endpoint of podMonitor.spec.podMetricsEndpoints!) {
      expect(containerPort(endpoint.port!)).toBe(cliDefaultPorts().metrics);
      expect(endpoint.path).toBe('/metrics');
    }
    expect(hpa.spec!.scaleTargetRef).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata!.name });
  });

  test('the HPA\'s Pods metrics are the ones the adapter rules publish', () => {
    const published = adapterRules.map((r) => r.name.as);
    const used = hpa.spec!.metrics!.map((m) => {
      expect(m.type).toBe('Pods');
      return m.pods!.metric.name;
    });
    expect(used.length).toBeGreaterThan(0);
    for (const name of used) expect(published).toContain(name);
    for (const rule of adapterRules) {
      expect(rule.seriesQuery).toContain(rule.name.matches);
      expect(rule.metricsQuery).toContain('<<.LabelMatchers>>');
      expect(rule.metricsQuery).toContain('<<.GroupBy>>');
    }
  });
});

// ---------------------------------------------------------------------------------------------
// KServe: the vendored CRD schemas through ajv, strict about unknown fields as kubectl is.

interface KServeFixture {
  source: { commit: string };
  ServingRuntime: Record<string, unknown>;
  InferenceService: Record<string, unknown>;
  kserveTritonserverArgs: string[];
}
const kserve = JSON.parse(readFileSync(path.join(__dirname, 'fixtures', 'kserve-schemas.json'), 'utf8')) as KServeFixture;

/**
 * A structural schema as the API server applies it with strict field validation (kubectl's
 * default): an object with `properties` refuses fields it does not declare, unless it
 * preserves unknown fields.
 */
function strictStructural(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictStructural);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === 'properties'
      ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, strictStructural(v)]))
      : strictStructural(value);
  }
  if (out.properties && out['x-kubernetes-preserve-unknown-fields'] !== true && out.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

function kserveValidator(kind: 'ServingRuntime' | 'InferenceService'): (doc: unknown) => string[] {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  const validate = ajv.compile(strictStructural(kserve[kind]) as object);
  return (doc) => (validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`));
}

const servingRuntime = manifest('kserve/servingruntime.yaml');
const inferenceService = manifest('kserve/inferenceservice.yaml');

describe('deploy/kserve', () => {
  test(`the ServingRuntime and the InferenceService validate against KServe's CRDs (kserve ${kserve.source.commit.slice(0, 8)})`, () => {
    expect(servingRuntime).toMatchObject({ apiVersion: 'serving.kserve.io/v1alpha1', kind: 'ServingRuntime' });
    expect(inferenceService).toMatchObject({ apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService' });
    expect(kserveValidator('ServingRuntime')(servingRuntime)).toEqual([]);
    expect(kserveValidator('InferenceService')(inferenceService)).toEqual([]);
  });

  test('the validation can fail: an unknown field and a wrong type are refused', () => {
    const typo = JSON.parse(JSON.stringify(servingRuntime)) as Record<string, any>;
    typo.spec.containers[0].argz = typo.spec.containers[0].args;
    expect(kserveValidator('ServingRuntime')(typo).join('\n')).toMatch(/must NOT have additional properties.*argz/);
    const wrongType = JSON.parse(JSON.stringify(inferenceService)) as Record<string, any>;
    wrongType.spec.predictor.minReplicas = 'one';
    expect(kserveValidator('InferenceService')(wrongType).join('\n')).toMatch(/minReplicas must be integer/);
  });

  test('the ServingRuntime passes kserve-tritonserver\'s arguments, and the InferenceService selects it', () => {
    const runtimeContainer = servingRuntime.spec.containers[0] as { args: string[]; command?: string[] };
    // kserve-tritonserver's first arg is the program (its image has no entrypoint of its own);
    // ours is the image's ENTRYPOINT `infernode`, whose subcommand is `serve`.
    expect(kserve.kserveTritonserverArgs[0]).toBe('tritonserver');
    expect(runtimeContainer.command).toBeUndefined();
    expect(runtimeContainer.args).toEqual(['serve', ...kserve.kserveTritonserverArgs.slice(1)]);
    const model = inferenceService.spec.predictor.model as { runtime: string; modelFormat: { name: string }; protocolVersion: string };
    expect(model.runtime).toBe(servingRuntime.metadata.name);
    expect((servingRuntime.spec.supportedModelFormats as { name: string }[]).map((f) => f.name)).toContain(model.modelFormat.name);
    expect(servingRuntime.spec.protocolVersions).toContain(model.protocolVersion);
    expect(servingRuntime.spec.annotations['prometheus.kserve.io/port']).toBe(String(cliDefaultPorts().metrics));
  });
});

// ---------------------------------------------------------------------------------------------
// The Grafana dashboard.

interface Panel { id: number; type: string; title: string; gridPos: object; targets?: { expr: string; refId: string }[] }
const dashboard = JSON.parse(readFileSync(path.join(DEPLOY, 'grafana', 'infernode-dashboard.json'), 'utf8')) as {
  uid: string; title: string; panels: Panel[]; templating: { list: { name: string; query: string | { query: string } }[] };
};
const dashboardQueries = [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
  ...dashboard.templating.list.map((v) => (typeof v.query === 'string' ? v.query : v.query.query)).filter((q) => q.includes('(')),
];

/** PromQL keywords and aggregation modifiers: tokens that are neither metrics nor functions. */
const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'and', 'or', 'unless', 'bool']);

/**
 * The metric names a PromQL query (or a Grafana label_values()) reads: identifiers that are not
 * functions (followed by '('), label names (inside {} or by (...)), keywords or Grafana variables.
 */
function metricNames(query: string): string[] {
  const stripped = query
    .replace(/<<\.\w+>>/g, '')                          // prometheus-adapter templates
    .replace(/\$\{?\w+\}?/g, '')                        // Grafana variables
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')                // strings
    .replace(/\{[^}]*\}/g, '')                          // label matchers
    .replace(/\[[^\]]*\]/g, '')                         // ranges
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '');  // grouping labels
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\(?))/g)) {
    if (m[1] === '(' || PROMQL_WORDS.has(m[0])) continue;
    if (/^\d/.test(m[0])) continue;
    names.add(m[0]);
  }
  // label_values(metric{...}, label): the second argument is a label.
  const labelValues = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)[^,]*,\s*(\w+)\s*\)$/.exec(query.trim());
  if (labelValues) names.delete(labelValues[2]);
  return [...names];
}

describe('deploy/grafana', () => {
  test('the dashboard is a Grafana dashboard with panels for traffic, latency, queue, batching, failures and GPUs', () => {
    expect(dashboard.uid).toBe('infernode');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels) expect(p.gridPos).toEqual(expect.objectContaining({ h: expect.any(Number), w: expect.any(Number) }));
    const names = new Set(dashboardQueries.flatMap(metricNames));
    for (const needed of ['nv_inference_request_success', 'nv_inference_request_summary_us', 'nv_inference_queue_duration_us',
      'nv_inference_count', 'nv_inference_exec_count', 'nv_inference_request_failure', 'nv_gpu_utilization', 'nv_gpu_memory_used_bytes']) {
      expect(names).toContain(needed);
    }
  });

  test('the metric-name reader finds metrics and skips functions, labels and keywords', () => {
    expect(metricNames('sum by (model) (rate(a_total{model=~"$model", x="y"}[$__rate_interval])) / clamp_min(sum(b) by (pod), 1)'))
      .toEqual(['a_total', 'b']);
    expect(metricNames('label_values(nv_x{namespace=~"$namespace"}, model)')).toEqual(['nv_x']);
  });
});

// ---------------------------------------------------------------------------------------------
// Against a real server: the probes, the container's command, the ServingRuntime's arguments,
// and every metric the dashboard, the adapter rules and the HPA read.

/** The Deployment's args as a local process runs them: /models is the example repository, listeners on loopback. */
function localArgs(args: string[], modelPath: string): string[] {
  return args.map((a) => a.replace(modelPath, EXAMPLES));
}

/** grpc.health.v1.Health/Check with the empty service name, as the kubelet's gRPC probe sends it. */
function grpcHealthCheck(port: number): Promise<string> {
  const method = healthServiceDefinition(CLIENT_OPTIONS).Check;
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  return new Promise<string>((resolve, reject) => {
    client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, { service: '' }, new Metadata(),
      (err: ServiceError | null, value?: unknown) => (err ? reject(err) : resolve((value as { status: string }).status)));
  }).finally(() => client.close());
}

const processes: ServeProcess[] = [];
function start(args: string[]): ServeProcess {
  const p = new ServeProcess(args);
  processes.push(p);
  return p;
}

beforeAll(() => ensureLib(), 120_000);
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
});

describe('a real infernode serve', () => {
  let ports: Ports;
  let samples: Sample[];
  let exposition: string;

  beforeAll(async () => {
    // The Deployment's own arguments (metrics config included), then loopback and any ports.
    const server = start([...localArgs(container.args!, '/models'), ...LOOPBACK_ANY_PORTS]);
    ports = await server.serving();
    const infer = await fetch(`http://127.0.0.1:${ports.http}/v2/models/mlp_classifier/infer`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: mlpRequestBody(1),
    });
    expect(infer.status).toBe(200);
    // A failed request, so the failure counter has a series too.
    const bad = await fetch(`http://127.0.0.1:${ports.http}/v2/models/mlp_classifier/infer`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] }),
    });
    expect(bad.status).toBe(400);
    exposition = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    samples = await scrape(ports.metrics!);
  }, 90_000);

  test('the readiness and liveness probe paths answer 200 on the HTTP listener', async () => {
    for (const probe of [container.readinessProbe!, container.livenessProbe!]) {
      const res = await fetch(`http://127.0.0.1:${ports.http}${probe.httpGet!.path}`);
      expect(res.status).toBe(200);
    }
  });

  test('the startup probe\'s grpc.health.v1 Check answers SERVING on the gRPC listener', async () => {
    expect(await grpcHealthCheck(ports.grpc!)).toBe('SERVING');
  });

  test('the image\'s HEALTHCHECK script exits 0 against the ready server and 1 where no HTTP/1.1 server answers', async () => {
    const script = healthcheckScript(stage('runtime'));
    expect(healthcheckScript(stage('gpu'))).toBe(script);
    expect(await runHealthcheck(script, ports.http!)).toBe(0);
    // The gRPC port speaks HTTP/2 only: an HTTP/1.1 GET there fails, so the script must exit 1.
    expect(await runHealthcheck(script, ports.grpc!)).toBe(1);
  });

  test('every metric the dashboard, the adapter rules and the HPA read is in /metrics after an inference', () => {
    const exported = new Set(samples.map((s) => s.name));
    const queries = [...dashboardQueries, ...adapterRules.flatMap((r) => [r.seriesQuery, r.metricsQuery])];
    const names = [...new Set(queries.flatMap(metricNames))];
    // GPU families exist only where NVML sees a GPU; elsewhere they must be the names gpu.ts registers.
    const gpuSource = readFileSync(path.join(ROOT, 'ts', 'server', 'metrics', 'gpu.ts'), 'utf8');
    const missing = names.filter((n) => !exported.has(n) && !(n.startsWith('nv_gpu_') && !/^nv_gpu_/m.test(exposition) && gpuSource.includes(`'${n}'`)));
    expect(missing).toEqual([]);
    // The quantiles the latency panels select are the ones the summary exports.
    for (const q of dashboardQueries.join('\n').matchAll(/quantile="([^"]+)"/g)) {
      expect(samples.some((s) => s.name === 'nv_inference_request_summary_us' && s.labels.quantile === q[1])).toBe(true);
    }
    // Each adapter rule's series exists with the labels it groups by once Prometheus adds namespace/pod.
    for (const rule of adapterRules) {
      expect(samples.some((s) => s.name === rule.name.matches && s.labels.model === 'mlp_classifier')).toBe(true);
    }
  });
});

describe('the container command and the ServingRuntime arguments in the real CLI', () => {
  test('the image\'s CMD (`serve --model-repository /models`) serves the example repository', async () => {
    const cmd = JSON.parse(one(stage('runtime'), 'CMD')) as string[];
    const server = start([...localArgs(cmd, '/models'), ...LOOPBACK_ANY_PORTS]);
    const ports = await server.serving();
    expect((await fetch(`http://127.0.0.1:${ports.http}/v2/health/ready`)).status).toBe(200);
  }, 90_000);

  test('the ServingRuntime\'s args (--model-store, --grpc-port, --http-port, --allow-*) start a ready server', async () => {
    const args = localArgs(servingRuntime.spec.containers[0].args as string[], '/mnt/models')
      // The runtime's fixed ports become ports the kernel picks; everything else is passed as is.
      .map((a) => a.replace(/^(--(?:grpc|http)-port)=\d+$/, '$1=0'));
    expect(args).toContain(`--model-store=${EXAMPLES}`);
    const server = start([...args, '--metrics-port=0', '--http-address=127.0.0.1', '--grpc-address=127.0.0.1']);
    const ports = await server.serving();
    expect(ports.http).toBeGreaterThan(0);
    expect(ports.grpc).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${ports.http}/v2/health/ready`)).status).toBe(200);
    expect(await grpcHealthCheck(ports.grpc!)).toBe('SERVING');
  }, 90_000);

  test('the parser is real: an argument it does not know fails the start', async () => {
    const server = start(['serve', `--model-stor=${EXAMPLES}`, ...LOOPBACK_ANY_PORTS]);
    expect((await server.exited).code).not.toBe(0);
    expect(server.output).toMatch(/unknown option '--model-stor/);
  });
});
