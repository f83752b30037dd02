// Scheduling priority of compute threads. Engine instance threads and ONNX Runtime's thread
// pools run at a higher nice value than the JS thread, so when the cores are busy the event
// loop (HTTP/gRPC I/O, completions) is scheduled first and compute fills the time it leaves;
// on an idle machine nice changes nothing.
#pragma once

namespace infernode {

// Adds `increment` (1..19; 0 does nothing) to the calling thread's nice value, capped at 19.
// Linux sets it per thread (setpriority on the thread id); elsewhere it does nothing. Returns
// whether the thread's priority is now as asked.
bool LowerThreadPriority(int increment);

// The calling thread's nice value (0 where it cannot be read).
int CurrentThreadNice();

}  // namespace infernode
