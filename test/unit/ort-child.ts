/**
 * onnxruntime-node in a child process, for unit tests that check the project's ONNX writer
 * against a real ONNX Runtime: its library must not share a process with the one infernode's
 * addon loads (two ONNX Runtimes in one process deadlock when suites run in band), and under
 * Jest's sandbox its outputs would be typed arrays of another realm, failing onnxruntime-common's
 * `instanceof` checks. Data crosses by structured clone (IPC with advanced serialization).
 *
 * `script` is the child's program: it requires onnxruntime-node from `process.argv[1]`, answers
 * each `{ id, ...request }` message with `{ id, result }` or `{ id, error }`, and exits on
 * 'disconnect'.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface OrtChild<Request, Result> {
  run(request: Request): Promise<Result>;
  close(): void;
}

export function startOrtChild<Request extends object, Result>(script: string): OrtChild<Request, Result> {
  const child: ChildProcess = spawn(process.execPath, ['-e', script, require.resolve('onnxruntime-node')], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced',
  });
  const pending = new Map<number, { resolve: (r: Result) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  child.on('message', (message) => {
    const { id, result, error } = message as { id: number; result?: Result; error?: string };
    const p = pending.get(id)!;
    pending.delete(id);
    if (error !== undefined) p.reject(new Error(error));
    else p.resolve(result!);
  });
  child.on('exit', (code) => pending.forEach((p) => p.reject(new Error(`the onnxruntime-node process exited (${code})`))));
  return {
    run: (request) => new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, ...request });
    }),
    close: () => child.disconnect(),
  };
}
