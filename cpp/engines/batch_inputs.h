// Gathers a batch's inputs into one pooled buffer per input (the requests' rows concatenated
// in batch order): the single host copy a native engine reads from. Runs on the instance thread.
#pragma once

#include <string>
#include <vector>

#include "core/model_config.h"
#include "engines/engine.h"
#include "memory/buffer_pool.h"

namespace infernode {

struct GatheredInput {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;  // [rows, dims...]; [total elements] for a ragged input whose shapes differ
  PooledBuffer buffer;
};

// One entry per config input present in the batch (a batch's requests agree on which optional
// inputs they carry; the batcher's key guarantees it).
Status GatherBatchInputs(const ModelConfig& config, const Batch& batch, BufferPool* pool,
                         std::vector<GatheredInput>* out);

}  // namespace infernode
