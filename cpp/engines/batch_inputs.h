// Gathers a batch's inputs into one pooled buffer per input (the requests' rows concatenated
// in batch order): the single host copy a native engine reads from. Rows in a client's CUDA
// shared-memory region on the instance's own GPU are not copied here: they are listed, and the
// engine gathers them on the device. Runs on the instance thread.
#pragma once

#include <string>
#include <vector>

#include "core/model_config.h"
#include "engines/engine.h"
#include "memory/buffer_pool.h"

namespace infernode {

// Rows of a gathered input that stay in device memory: `bytes` at `src` (on the instance's GPU)
// belong at `offset` of the gathered input.
struct DeviceRows {
  uint64_t offset = 0;
  const void* src = nullptr;
  uint64_t bytes = 0;
};

struct GatheredInput {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;             // [rows, dims...]; [total elements] for a ragged input whose shapes differ
  uint64_t byte_size = 0;  // the whole input's
  // The host rows at their offsets; left empty when every row is on the device. The bytes at
  // device_rows' offsets are not written.
  PooledBuffer buffer;
  std::vector<DeviceRows> device_rows;  // empty unless a row is in CUDA shared memory
  // A GPU instance's input that is one request's large host buffer (memory/host_registration.h):
  // left where it is, to be copied to the device from there; `buffer` is then empty.
  const uint8_t* host_in_place = nullptr;
};

// One entry per config input present in the batch (a batch's requests agree on which optional
// inputs they carry; the batcher's key guarantees it). `device_id`: the GPU the instance runs on
// (-1 for a CPU instance); rows in device memory elsewhere are copied to the host, and a large
// input of a lone request is left in place for the GPU (GatheredInput::host_in_place).
Status GatherBatchInputs(const ModelConfig& config, const Batch& batch, BufferPool* pool, int device_id,
                         std::vector<GatheredInput>* out);

}  // namespace infernode
