/**
 * Restricted API groups (tritonserver's --http-restricted-api): every route of a restricted
 * group answers 403 "This API is restricted, expecting header '<key>'" without the header (or
 * with a wrong value), whatever the method, and is served normally with it.
 */
import { closeAgent, echo, request, serve, type Served } from './http-helpers';

let s: Served;

beforeAll(async () => {
  s = await serve((t) => t.bind({
    modelName: 'm', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
  }), {
    allowClientShm: true,
    httpRestrictedApi: 'model-repository,shared-memory,logging,trace:Admin-Key=s3cret;' +
      'health,metadata,inference,model-config,statistics:user=alice',
  });
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

const infer = { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [1] }] };

/** Every route, its group's header, and a request that succeeds with the header. */
const ROUTES: [group: string, method: string, path: string, body?: object][] = [
  ['health', 'GET', '/v2/health/live'],
  ['health', 'GET', '/v2/health/ready'],
  ['health', 'GET', '/v2/models/m/ready'],
  ['health', 'GET', '/v2/models/m/versions/1/ready'],
  ['metadata', 'GET', '/v2'],
  ['metadata', 'GET', '/v2/models/m'],
  ['metadata', 'GET', '/v2/models/m/versions/1'],
  ['model-config', 'GET', '/v2/models/m/config'],
  ['model-config', 'GET', '/v2/models/m/versions/1/config'],
  ['inference', 'POST', '/v2/models/m/infer', infer],
  ['inference', 'POST', '/v2/models/m/versions/1/infer', infer],
  ['statistics', 'GET', '/v2/models/stats'],
  ['statistics', 'GET', '/v2/models/m/stats'],
  ['statistics', 'GET', '/v2/models/m/versions/1/stats'],
  ['model-repository', 'POST', '/v2/repository/index', {}],
  ['model-repository', 'POST', '/v2/repository/models/m/load'],
  ['model-repository', 'POST', '/v2/repository/models/m/unload'],
  ['shared-memory', 'GET', '/v2/systemsharedmemory/status'],
  ['shared-memory', 'GET', '/v2/systemsharedmemory/region/x/status'],
  ['shared-memory', 'POST', '/v2/systemsharedmemory/region/x/register', { key: '/x', byte_size: 1 }],
  ['shared-memory', 'POST', '/v2/systemsharedmemory/unregister'],
  ['shared-memory', 'POST', '/v2/systemsharedmemory/region/x/unregister'],
  ['shared-memory', 'GET', '/v2/cudasharedmemory/status'],
  ['shared-memory', 'GET', '/v2/cudasharedmemory/region/x/status'],
  ['shared-memory', 'POST', '/v2/cudasharedmemory/region/x/register', {}],
  ['shared-memory', 'POST', '/v2/cudasharedmemory/unregister'],
  ['shared-memory', 'POST', '/v2/cudasharedmemory/region/x/unregister'],
  ['trace', 'GET', '/v2/trace/setting'],
  ['trace', 'POST', '/v2/trace/setting', {}],
  ['trace', 'GET', '/v2/models/m/trace/setting'],
  ['trace', 'POST', '/v2/models/m/trace/setting', {}],
  ['logging', 'GET', '/v2/logging'],
  ['logging', 'POST', '/v2/logging', {}],
];

const ADMIN = new Set(['model-repository', 'shared-memory', 'logging', 'trace']);
const keyOf = (group: string): [string, string] => (ADMIN.has(group) ? ['Admin-Key', 's3cret'] : ['user', 'alice']);

describe.each(ROUTES)('%s: %s %s', (group, method, path, body) => {
  const [key, value] = keyOf(group);

  test('403 without the header, or with a wrong value', async () => {
    for (const headers of [{}, { [key]: 'wrong' }, { [ADMIN.has(group) ? 'user' : 'Admin-Key']: ADMIN.has(group) ? 'alice' : 's3cret' }]) {
      const r = await request(s.port, method, path, body, headers);
      expect(r.status).toBe(403);
      expect(r.error).toBe(`This API is restricted, expecting header '${key.toLowerCase()}'`);
    }
  });

  test('served with the header', async () => {
    const r = await request(s.port, method, path, body, { [key]: value });
    // The handler ran: not refused, not unrouted (some answer 4xx/503 for their own reasons).
    expect([403, 405]).not.toContain(r.status);
    expect(r.error).not.toBe('Not Found');
    expect(r.error).not.toContain('restricted');
  });
});

test('a restricted route still answers 403 (not 405) to a wrong method', async () => {
  const r = await request(s.port, 'DELETE', '/v2/logging');
  expect(r.status).toBe(403);
  expect((await request(s.port, 'DELETE', '/v2/logging', undefined, { 'Admin-Key': 's3cret' })).status).toBe(405);
});

test('unknown paths stay 404 without any header', async () => {
  expect((await request(s.port, 'GET', '/v2/nothing')).status).toBe(404);
});
