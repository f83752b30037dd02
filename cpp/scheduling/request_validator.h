// Checks a request against its model's config before it is queued, and derives what batching
// needs: the request's batch size and its batch key. Runs on the caller's thread.
#pragma once

#include "core/model_config.h"
#include "core/request.h"

namespace infernode {

// INVALID_ARG naming the model, the input and the expectation on any mismatch.
Status ValidateRequest(const ModelConfig& config, InferenceRequest* request);

}  // namespace infernode
