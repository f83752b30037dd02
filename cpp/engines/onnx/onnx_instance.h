// A model instance running an ONNX Runtime session on its own thread. The scheduler hands it one
// batch at a time (a one-slot mailbox); the thread gathers the inputs into pooled buffers, runs
// the session, splits the outputs per request and reports back through the BatchCompleter; the
// released responses go to the CompletionSink (JS).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/completion_sink.h"
#include "core/model_config.h"
#include "engines/engine.h"
#include "engines/onnx/onnx_session.h"

namespace infernode {

class OnnxInstance final : public ModelInstance {
 public:
  // `config`, `pool`, `completer` and `sink` outlive the instance (the NativeModel owns them).
  OnnxInstance(std::unique_ptr<OnnxSession> session, const ModelConfig* config, BufferPool* pool,
               BatchCompleter* completer, CompletionSink* sink);
  ~OnnxInstance() override;

  void Execute(const Batch& batch) override;
  void Shutdown() override;

 private:
  void Loop();
  void RunBatch(const Batch& batch);

  std::unique_ptr<OnnxSession> session_;
  const ModelConfig* config_;
  std::vector<std::string> served_outputs_;  // the config's outputs: all the session fetches
  BufferPool* pool_;
  BatchCompleter* completer_;
  CompletionSink* sink_;

  std::mutex mu_;
  std::condition_variable cv_;
  const Batch* next_ = nullptr;  // owned by the scheduler until this instance completes it
  bool stopping_ = false;
  std::thread thread_;
};

// Splits a batch output (rows first) into each request's rows. BYTES outputs are walked element
// by element; the pieces share the batch output's owner.
// Outputs with a configured reshape get their config dims back: the engine produced `reshape`.
void UndoOutputReshapes(const ModelConfig& config, std::vector<OutputTensor>* outputs);

Status SplitOutputs(const Batch& batch, bool batching, const std::vector<OutputTensor>& outputs,
                    std::vector<std::vector<OutputTensor>>* per_request);

}  // namespace infernode
