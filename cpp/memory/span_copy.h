// The span-copy kernel (cuda/span_copy.cu): device-to-device copies of many spans in one launch,
// what DeviceStream::CopySpans runs to gather a batch's rows from scattered device places into
// one buffer, or to scatter one buffer's rows to several places. The span table travels as a
// by-value kernel parameter (kMaxSpansPerLaunch spans, about 3 KiB), so a launch needs no
// allocation and no copy of its own; a cudaMemcpyAsync per span would pay a copy's fixed cost
// (microseconds) for every row. The CPU build (span_copy_none.cc) has no kernel and answers
// UNAVAILABLE.
#pragma once

#include <cstddef>

#include "core/status.h"
#include "memory/device_stream.h"

namespace infernode {

// Enqueues the copy of every span (device memory to device memory, not overlapping) on `stream`
// (a cudaStream_t), whose device is current on the calling thread: one kernel launch per
// kMaxSpansPerLaunch spans that have bytes. Zero-byte spans are skipped (their pointers may be
// null); a count of 0 launches nothing. A span with bytes and a null pointer is INVALID_ARG, and
// then nothing is enqueued. Asynchronous: a failure of the kernel itself shows at the next
// synchronise.
Status LaunchSpanCopy(void* stream, const DeviceSpan* spans, size_t count);

// Loads the span-copy kernel on the current device now, as LoadHalfCastKernels (half_cast.h)
// does for the casts; CUDA builds only.
void LoadSpanCopyKernel();

}  // namespace infernode
