// Model configs for the native tests: a tensor spec and a model of given inputs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model_config.h"

namespace test_configs {

inline infernode::TensorConfig Spec(const std::string& name, infernode::DataType dtype, infernode::Shape dims,
                                    bool optional = false, bool ragged = false) {
  infernode::TensorConfig spec;
  spec.name = name;
  spec.dtype = dtype;
  spec.dims = std::move(dims);
  spec.optional = optional;
  spec.allow_ragged_batch = ragged;
  return spec;
}

inline infernode::ModelConfig Model(int64_t max_batch_size, std::vector<infernode::TensorConfig> inputs) {
  infernode::ModelConfig config;
  config.name = "m";
  config.max_batch_size = max_batch_size;
  config.inputs = std::move(inputs);
  return config;
}

}  // namespace test_configs
