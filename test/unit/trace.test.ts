/**
 * Tracer: where traces are written (Triton's src/tracer.cc TraceFile::SaveTraces and
 * TraceSetting::WriteTrace / ~TraceSetting): `<file>.<index>` per log_frequency batch, the
 * plain file as one JSON array otherwise; what a changed setting collected; the trace count.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { traceSettingsFromConfig } from '../../ts/server/context';
import { Tracer, type TraceSettings } from '../../ts/server/trace';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-tracer-'));
  file = path.join(dir, 'trace.log');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

function tracer(settings: Partial<TraceSettings> = {}): Tracer {
  return new Tracer({ trace_file: file, trace_level: ['TIMESTAMPS'], trace_rate: '1', ...settings });
}

/** Sends `n` requests to `model` through the tracer (each traced one begins and ends). */
function requests(t: Tracer, n: number, model = 'm'): number {
  let traced = 0;
  for (let i = 0; i < n; i++) {
    const trace = t.begin(model, 'HTTP_RECV_START');
    if (trace) {
      traced++;
      trace.end('1');
    }
  }
  return traced;
}

/** The trace file's (or an indexed file's) traces; it must be one JSON array. */
function traces(name: string): { model_name: string }[] {
  return JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as { model_name: string }[];
}

function files(): string[] {
  return readdirSync(dir).sort();
}

describe('trace files', () => {
  test('log_frequency N writes every N traces to <file>.<index>, each one JSON array; shutdown writes the rest to the next index', () => {
    // qa/L0_trace/test.sh: log_frequency=2 and 3 traces give global_trace.log.0 (2) and .1 (1).
    const t = tracer({ log_frequency: '2' });
    expect(requests(t, 3)).toBe(3);
    expect(files()).toEqual(['trace.log.0']);
    expect(traces('trace.log.0')).toHaveLength(2);
    t.flush();
    expect(files()).toEqual(['trace.log.0', 'trace.log.1']);
    expect(traces('trace.log.1')).toHaveLength(1);
  });

  test('log_frequency 0: the trace file is one JSON array for the run, across setting changes', () => {
    const t = tracer();
    requests(t, 2);
    t.update({ trace_rate: '2' });  // the old setting's traces are written now, as Triton's ~TraceSetting
    requests(t, 4);
    t.flush();
    expect(files()).toEqual(['trace.log']);
    expect(traces('trace.log')).toHaveLength(4);
  });

  test('a setting changed with traces collected writes them where its log_frequency says', () => {
    const t = tracer({ log_frequency: '5' });
    requests(t, 3);
    expect(files()).toEqual([]);
    t.update({ log_frequency: '0' });
    expect(files()).toEqual(['trace.log.0']);
    expect(traces('trace.log.0')).toHaveLength(3);
    requests(t, 1);
    t.flush();
    expect(traces('trace.log')).toHaveLength(1);
  });

  test("a model's own log_frequency batches only its traces; the global ones go to the plain file", () => {
    const t = tracer();
    t.update({ log_frequency: '2' }, 'simple');
    requests(t, 3, 'simple');
    requests(t, 2, 'other');
    expect(files()).toEqual(['trace.log.0']);
    expect(traces('trace.log.0').map((e) => e.model_name)).toEqual(['simple', 'simple']);
    t.flush();
    expect(traces('trace.log.1').map((e) => e.model_name)).toEqual(['simple']);
    expect(traces('trace.log').map((e) => e.model_name)).toEqual(['other', 'other']);
  });

  test('a trace in flight when its setting changes is written with that setting once it ends', () => {
    const t = tracer({ log_frequency: '3' });
    const inFlight = t.begin('m', 'HTTP_RECV_START')!;
    requests(t, 1);
    t.update({ log_frequency: '1' });
    expect(existsSync(`${file}.0`)).toBe(false);
    inFlight.end('1');
    expect(traces('trace.log.0')).toHaveLength(2);
  });

  test('tensor entries do not count as traces toward log_frequency', () => {
    const t = tracer({ trace_level: ['TIMESTAMPS', 'TENSORS'], log_frequency: '2' });
    const trace = t.begin('m', 'HTTP_RECV_START')!;
    trace.tensors('TENSOR_QUEUE_INPUT', [{ name: 'IN', tensor: { dtype: 'FP32', shape: [1], data: new Float32Array([1]) } as never }]);
    trace.end('1');
    expect(files()).toEqual([]);
    requests(t, 1);
    expect(traces('trace.log.0')).toHaveLength(3);
  });
});

describe('trace count', () => {
  test('is counted down as traces are taken; spent, it shows "0" and its traces are written to the next index at once', () => {
    // qa/L0_trace/test.sh "Update trace count": 20 traces before, then trace_count=5.
    const t = tracer();
    expect(requests(t, 20)).toBe(20);
    expect(t.settings().trace_count).toBe('-1');
    expect(t.update({ trace_count: '5' }).trace_count).toBe('5');
    requests(t, 2);
    expect(t.settings('m').trace_count).toBe('3');
    expect(requests(t, 18)).toBe(3);
    expect(t.settings().trace_count).toBe('0');
    expect(t.settings('m').trace_count).toBe('0');
    // Before shutdown: the 5 counted traces are in <file>.0.
    expect(traces('trace.log.0')).toHaveLength(5);
    t.flush();
    expect(files()).toEqual(['trace.log', 'trace.log.0']);
    expect(traces('trace.log')).toHaveLength(20);
  });

  test('a count set at start-up counts down too', () => {
    const t = tracer({ trace_count: '2' });
    expect(t.settings().trace_count).toBe('2');
    requests(t, 1);
    expect(t.settings().trace_count).toBe('1');
    requests(t, 5);
    expect(t.settings().trace_count).toBe('0');
    expect(traces('trace.log.0')).toHaveLength(2);
  });

  test('the spent traces are written once the last one taken has ended', () => {
    const t = tracer({ trace_count: '2' });
    const first = t.begin('m', 'HTTP_RECV_START')!;
    const second = t.begin('m', 'HTTP_RECV_START')!;
    expect(t.begin('m', 'HTTP_RECV_START')).toBeNull();
    second.end('1');
    expect(files()).toEqual([]);
    first.end('1');
    expect(traces('trace.log.0')).toHaveLength(2);
  });

  test("a model's own count is counted down apart from the global one", () => {
    const t = tracer();
    t.update({ trace_count: '2' }, 'simple');
    expect(requests(t, 4, 'simple')).toBe(2);
    requests(t, 3, 'other');
    expect(t.settings('simple').trace_count).toBe('0');
    expect(t.settings().trace_count).toBe('-1');
    expect(traces('trace.log.0').map((e) => e.model_name)).toEqual(['simple', 'simple']);
  });

  test('what is left is kept when another setting changes, and a cleared count goes back to the start-up one', () => {
    const t = tracer({ trace_count: '7' });
    t.update({ trace_count: '3' });
    requests(t, 1);
    expect(t.update({ log_frequency: '4' }).trace_count).toBe('2');
    t.update({ trace_count: '3' }, 'simple');
    requests(t, 1, 'simple');
    expect(t.update({ trace_rate: '1' }, 'simple').trace_count).toBe('2');
    expect(t.update({ trace_count: null }).trace_count).toBe('7');
  });
});

describe('--trace-config at start-up (command_line_parser.cc SetGlobalTraceArgs, ParseTraceLevelOption)', () => {
  test('levels given several times add up; OFF among them turns tracing off', () => {
    expect(traceSettingsFromConfig(['triton,file=/t', 'level=TENSORS', 'level=TIMESTAMPS']).trace_level).toEqual(['TIMESTAMPS', 'TENSORS']);
    expect(traceSettingsFromConfig(['level=timestamps', 'level=TIMESTAMPS']).trace_level).toEqual(['TIMESTAMPS']);
    expect(traceSettingsFromConfig(['level=TIMESTAMPS', 'level=OFF']).trace_level).toEqual(['OFF']);
    expect(traceSettingsFromConfig(['level=max']).trace_level).toEqual(['TIMESTAMPS']);
  });

  test('good values are read', () => {
    expect(traceSettingsFromConfig(['triton,file=/t/x.log', 'rate=4', 'count=6', 'mode=Triton', 'triton,log-frequency=2'])).toEqual({
      trace_file: '/t/x.log', trace_rate: '4', trace_count: '6', trace_mode: 'triton', log_frequency: '2',
    });
  });

  test.each([
    [['level=BOGUS'], 'Bad option: "--trace-config level".\ninvalid value for trace level option: BOGUS'],
    [['rate=abc'], 'Bad option: "--trace-config rate".\nInvalid option value. Got abc'],
    [['rate=0'], 'Bad option: "--trace-config rate".\nExpecting value >= 1, got: 0'],
    [['rate=99999999999'], 'Bad option: "--trace-config rate".\nProvided option value is out of bound. Got 99999999999'],
    [['count=-2'], 'Bad option: "--trace-config count".\nExpecting value >= -1, got: -2'],
    [['count=1.5'], 'Bad option: "--trace-config count".\nInvalid option value. Got 1.5'],
    [['triton,log-frequency=often'], 'Bad option: "--trace-config triton,log-frequency".\nInvalid option value. Got often'],
    [['mode=opentelemetry'], 'trace mode opentelemetry is not supported by infernode'],
    [['opentelemetry,url=localhost:4318'], 'Bad option: "--trace-config opentelemetry,url".\ntrace mode opentelemetry is not supported by infernode'],
    [['mode=jaeger'], 'invalid value for trace mode option: jaeger'],
    [['bogus,level=TIMESTAMPS'], 'invalid value for trace mode option: bogus'],
    [['level='], "--trace-config option format is '<trace mode>,<setting>=<value>'. Got level="],
    [['colour=red'], "unknown setting 'colour'"],
  ])('%j is refused: %s', (entries, message) => {
    expect(() => traceSettingsFromConfig(entries)).toThrow(message);
  });
});

describe('trace level over HTTP and gRPC (Tracer.update)', () => {
  test('OFF only alone; the others add up in Triton\'s order', () => {
    const t = tracer();
    expect(() => t.update({ trace_level: ['OFF', 'TIMESTAMPS'] })).toThrow("Expect only one trace level 'OFF' is specified");
    expect(t.update({ trace_level: ['TENSORS', 'TIMESTAMPS', 'TENSORS'] }).trace_level).toEqual(['TIMESTAMPS', 'TENSORS']);
  });
});

describe('sampling by trace_rate (Triton\'s TraceSetting::SampleTrace: one counter per setting)', () => {
  test('models without a setting of their own share the global counter', () => {
    const t = tracer({ trace_rate: '4' });
    // Requests 1..8 alternate between two models: the 4th and the 8th are traced, both to 'b'.
    const traced = Array.from({ length: 8 }, (_, i) => {
      const model = i % 2 === 0 ? 'a' : 'b';
      const trace = t.begin(model, 'HTTP_RECV_START');
      trace?.end('1');
      return trace ? model : null;
    }).filter((m) => m !== null);
    expect(traced).toEqual(['b', 'b']);
  });

  test('a model with its own setting counts apart, and a changed setting starts counting again', () => {
    const t = tracer({ trace_rate: '3' });
    t.update({ trace_rate: '2' }, 'own');
    expect(requests(t, 2, 'shared')).toBe(0);
    expect(requests(t, 2, 'own')).toBe(1);      // its 2nd request, not the global count's 4th
    expect(requests(t, 1, 'shared')).toBe(1);   // the global count's 3rd
    expect(requests(t, 2, 'shared')).toBe(0);
    t.update({ trace_rate: '2' });              // a new global setting: counting starts at 0
    expect(requests(t, 1, 'shared')).toBe(0);
    expect(requests(t, 1, 'shared')).toBe(1);
  });
});
