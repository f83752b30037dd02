// loopTurns(): a count of the event loop's iterations, shared with JS through a Float64Array of
// length 1, so TurnQueue (ts/server/turn.ts) can tell the calls of one turn from those of the
// next by reading a number, without scheduling a check-phase callback per call to find out.
//
// A uv_prepare_t of the environment's loop increments the count once per iteration, just before
// the loop polls: every I/O callback of that poll, and every setImmediate callback after it,
// reads the same value. The handle is unref'ed (it never keeps the loop alive) and is closed by
// an async cleanup hook when the environment is torn down, before the buffer it writes is freed.
// Main thread only; one per environment (worker threads have loops of their own).
#pragma once

#include <napi.h>

namespace infernode {

// loopTurns(): the environment's Float64Array view of its loop's iteration count.
Napi::Value LoopTurnsFunction(const Napi::CallbackInfo& info);

}  // namespace infernode
