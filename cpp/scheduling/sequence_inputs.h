// The inputs the sequence batcher adds to each batch row: control tensors (START, END, READY,
// CORRID), implicit state, and the zero-filled "null" rows of the direct strategy. Every added
// input owns its bytes (a shared buffer), so engines on any thread and JS views read them safely.
//
// Threads: built once by the scheduler; used under the scheduler's mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model_config.h"
#include "core/request.h"

namespace infernode {

// One state tensor of one sequence: its current shape (without the batch axis) and bytes.
// Replaced, never written in place: an execution (or a JS view) may still read the old bytes.
struct StateValue {
  Shape shape;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
};

class SequenceInputs {
 public:
  explicit SequenceInputs(const ModelConfig& config);

  // Each state's value at START (initial_state, or zeros of its dims).
  std::vector<StateValue> InitialStates() const;

  // Appends the control inputs of a row: START/END/READY as flags say, CORRID from `id`.
  void AppendControls(InferenceRequest* request, bool start, bool end, bool ready, const CorrelationId& id) const;

  // Appends the state inputs, read from `states` (the sequence's current values).
  void AppendStates(InferenceRequest* request, const std::vector<StateValue>& states) const;

  // A READY = 0 row shaped like `like` (zeros everywhere; states zero too, shaped like `like_states`).
  std::unique_ptr<InferenceRequest> MakeNullRow(const InferenceRequest& like,
                                                const std::vector<StateValue>& like_states) const;

  // Moves each state output found in `outputs` (one request's) into `states`; an output that
  // is not also a declared model output is removed from `outputs`. Returns an error when a
  // state output does not match its state's datatype.
  Status TakeStateOutputs(std::vector<OutputTensor>* outputs, std::vector<StateValue>* states) const;

 private:
  InputTensor Tensor(const std::string& name, DataType dtype, Shape shape,
                     std::shared_ptr<const std::vector<uint8_t>> bytes) const;
  InputTensor CorrIdTensor(const ControlConfig& control, const CorrelationId& id) const;

  const ModelConfig& config_;  // the scheduler's, which outlives this object
  bool batching_ = false;
  // START/END/READY: their [false, true] tensors, made once and shared by every row.
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> false_bytes_;
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> true_bytes_;
};

}  // namespace infernode
