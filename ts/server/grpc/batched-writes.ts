/**
 * Lets a grpc-js server stream hand several queued messages to HTTP/2 at once.
 *
 * grpc-js's ServerDuplexStream is a Writable with only `_write`, which sends one message and
 * calls back when HTTP/2 has written it: messages written faster than that (a decoupled model's
 * responses, produced many per turn of the event loop) leave one per write completion, each in
 * its own DATA frame. With `_writev`, the Writable hands over everything queued at once: each
 * message is still sent by grpc-js's own `sendMessage` (framing, size limit, metadata, status on
 * failure), but back to back, so the HTTP/2 stream batches them into one write.
 *
 * This reaches one grpc-js member, the stream's `call` (its ServerInterceptingCall, whose
 * `sendMessage` `_write` itself uses, grpc-js 1.10 to 1.14). Where it is absent the stream is
 * left as it is: correct, only slower.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';

interface SendsMessages {
  call?: { sendMessage?: (message: unknown, callback: (error?: Error | null) => void) => void };
  _writev?: (chunks: { chunk: unknown }[], callback: (error?: Error | null) => void) => void;
}

export function batchWrites(stream: ServerDuplexStream<unknown, unknown>): void {
  const s = stream as unknown as SendsMessages;
  const call = s.call;
  if (!call || typeof call.sendMessage !== 'function' || s._writev) return;
  s._writev = (chunks, callback) => {
    let remaining = chunks.length;
    let failure: Error | null = null;
    const sent = (error?: Error | null): void => {
      failure ??= error ?? null;
      if (--remaining === 0) callback(failure);
    };
    for (const { chunk } of chunks) call.sendMessage!(chunk, sent);
  };
}
