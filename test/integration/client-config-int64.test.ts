/**
 * The HTTP and gRPC clients' getModelConfig on models whose 64-bit config fields reach 2^64 - 1
 * (Triton's qa/L0_config_json max_priority_level values), loaded from config.pbtxt through the
 * repository API of one Triton serving both frontends: both clients return the same object, the
 * fields Triton prints as JSON numbers a BigInt beyond 2^53 - 1 and a number otherwise, the other
 * 64-bit fields as their exact digits.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Triton } from '../../ts/triton';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { GrpcInferenceServerClient } from '../../ts/client/grpc';

const MAX_UINT64 = 2n ** 64n - 1n;
const MAX_INT64 = 2n ** 63n - 1n;

const TENSORS = 'input [ { name: "IN", data_type: TYPE_FP32, dims: [ 3 ] } ]\n' +
  'output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 3 ] } ]\n';

/** qa/L0_config_json/max_priority_level.pbtxt's batcher, its other uint64 fields at 2^64 - 1 too, and int64s printed as strings. */
const PRIORITIES = `backend: "js"\nmax_batch_size: 4\n${TENSORS}
instance_group [ { kind: KIND_CPU, secondary_devices [ { kind: KIND_NVDLA, device_id: ${MAX_INT64} } ] } ]
optimization { cuda { graph_spec [ { batch_size: 1, input { key: "IN", value { dim: [ ${MAX_INT64}, 3 ] } } } ] } }
dynamic_batching {
  priority_levels: ${MAX_UINT64}
  default_priority_level: 4294967295
  preferred_batch_size: [ 1 ]
  max_queue_delay_microseconds: ${MAX_UINT64}
  default_queue_policy { default_timeout_microseconds: ${MAX_UINT64} }
  priority_queue_policy [
    { key: 4294967296, value: { timeout_action: REJECT, default_timeout_microseconds: ${MAX_UINT64}, allow_timeout_override: true, max_queue_size: 10 } },
    { key: ${MAX_UINT64}, value: { default_timeout_microseconds: 9007199254740991 } }
  ]
}
`;

/** A sequence batcher's uint64 fields at 2^64 - 1. */
const SEQUENCE = `backend: "js"\nmax_batch_size: 4\n${TENSORS}
sequence_batching {
  max_sequence_idle_microseconds: ${MAX_UINT64}
  oldest { max_candidate_sequences: 2, max_queue_delay_microseconds: ${MAX_UINT64} }
}
`;

let triton: Triton;
let repo: string;
let http: HttpInferenceServerClient;
let grpc: GrpcInferenceServerClient;

beforeAll(async () => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-client-int64-'));
  for (const [name, config] of [['priorities', PRIORITIES], ['sequence', SEQUENCE]]) {
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, '1', 'model.js'), 'exports.execute = (rs) => rs.map((r) => ({ OUT: r.data.IN }));');
    writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
  }
  triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false, logInfo: false,
    },
  });
  triton.useRepository({ repositories: [repo], controlMode: 'explicit' });
  await triton.run();
  http = new HttpInferenceServerClient(`127.0.0.1:${triton.ports.http}`);
  grpc = new GrpcInferenceServerClient(`127.0.0.1:${triton.ports.grpc}`);
});

afterAll(async () => {
  http.close();
  await grpc.close();
  await triton.stop();
  rmSync(repo, { recursive: true, force: true });
});

type Config = Record<string, any>;

/** Both clients' configs of a model loaded through the repository API; they must be equal. */
async function bothConfigs(model: string): Promise<Config> {
  await grpc.loadModel(model);
  const overHttp = await http.getModelConfig(model);
  const overGrpc = await grpc.getModelConfig(model);
  expect(overGrpc).toEqual(overHttp);
  return overGrpc;
}

test('dynamic batching at 2^64 - 1: HTTP and gRPC give the same config, BigInt beyond 2^53 - 1, numbers below', async () => {
  const config = await bothConfigs('priorities');
  const batching = config.dynamic_batching;
  expect(batching).toMatchObject({
    priority_levels: MAX_UINT64,
    default_priority_level: 4294967295,
    preferred_batch_size: [1],
    max_queue_delay_microseconds: MAX_UINT64,
    default_queue_policy: { default_timeout_microseconds: MAX_UINT64 },
    priority_queue_policy: {
      4294967296: { timeout_action: 'REJECT', default_timeout_microseconds: MAX_UINT64, allow_timeout_override: true, max_queue_size: 10 },
      [MAX_UINT64.toString()]: { default_timeout_microseconds: Number.MAX_SAFE_INTEGER },
    },
  });
  expect(config.max_batch_size).toBe(4);
  expect(config.input[0].dims).toEqual([3]);
  // int64 fields Triton prints as strings, as protobuf's JSON does: the exact digits.
  expect(config.instance_group[0].secondary_devices).toEqual([{ kind: 'KIND_NVDLA', device_id: MAX_INT64.toString() }]);
  expect(config.optimization.cuda.graph_spec[0].input.IN.dim).toEqual([MAX_INT64.toString(), '3']);
});

test('sequence batching at 2^64 - 1: the idle time and the oldest strategy\'s delay, the same over HTTP and gRPC', async () => {
  const config = await bothConfigs('sequence');
  expect(config.sequence_batching).toMatchObject({
    max_sequence_idle_microseconds: MAX_UINT64,
    oldest: { max_candidate_sequences: 2, max_queue_delay_microseconds: MAX_UINT64 },
  });
});
