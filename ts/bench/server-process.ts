/**
 * A bench server in a child process of its own (its own event loop, CPU time and event-loop
 * delay), driven over IPC: the child sends `{ port }` once listening (or `{ error }` with its
 * reason and exits non-zero); the parent asks with a string ('report' → one answer message), sends
 * 'reset', and 'stop' (the child exits).
 */
import { fork, type ChildProcess } from 'node:child_process';

export class ServerProcess {
  private constructor(private readonly child: ChildProcess, readonly port: number) {}

  /** Forks `script` with `args`; `what` names the server in the error when it exits before listening. */
  static start(script: string, args: string[], what: string): Promise<ServerProcess> {
    const child = fork(script, args, { stdio: 'inherit' });
    return new Promise((resolve, reject) => {
      let reason = '';
      child.once('message', (m: { port?: number; error?: string }) => {
        if (m.port !== undefined) resolve(new ServerProcess(child, m.port));
        else reason = m.error ?? '';
      });
      // 'close', not 'exit': it comes after the IPC channel is drained, so the child's last
      // message (its reason) has been read by then.
      child.once('close', (code) => reject(new Error(`${what} exited with ${code} before listening: ${reason || 'its reason is above'}`)));
    });
  }

  /** Sends `message` and resolves with the child's next message. */
  ask<T>(message: string): Promise<T> {
    return new Promise((resolve) => {
      this.child.once('message', (m: T) => resolve(m));
      this.child.send(message);
    });
  }

  reset(): void {
    this.child.send('reset');
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.send('stop');
    });
  }
}
