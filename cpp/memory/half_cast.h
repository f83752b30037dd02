// FP32 <-> FP16 / BF16 conversion kernels on a CUDA stream (cuda/half_cast.cu): what a GPU
// instance runs when its config serves an FP16 or BF16 model tensor as TYPE_FP32. They round as
// the host conversion does (core/half_float.h: to nearest, ties to even), so a model gives the
// same bits on KIND_GPU and KIND_CPU. Called through DeviceStream::Cast on the instance's thread.
// The CPU build (half_cast_none.cc) has no kernels and answers UNAVAILABLE.
#pragma once

#include <cstddef>

#include "core/datatype.h"
#include "core/status.h"

namespace infernode {

// Enqueues the conversion of `count` elements of device memory `src` into device memory `dst`
// (not overlapping) on `stream` (a cudaStream_t), whose device is current on the calling thread.
// One type is FP32, the other FP16 or BF16 (any other pair is INVALID_ARG); a count of 0
// launches nothing. Asynchronous: a failure of the kernel itself shows at the next synchronise.
Status LaunchHalfCast(void* stream, void* dst, DataType dst_type, const void* src, DataType src_type, size_t count);

// Loads the cast kernels on the current device now (CUDA loads a kernel lazily, at its first
// launch, and that load waits for kernels other instances have running on the device). Called
// by DeviceStream::Create, so the wait happens once, at model load; CUDA builds only.
void LoadHalfCastKernels();

}  // namespace infernode
