// A model instance whose engine is a JS callable (bind()). Executing hands the batch's request
// ids to JS through the channel; JS runs the callable and reports back with completeBatch.
#pragma once

#include "engines/engine.h"
#include "napi/js_channel.h"

namespace infernode {

class JsInstance final : public ModelInstance {
 public:
  explicit JsInstance(JsChannel* channel) : channel_(channel) {}

  void Execute(const Batch& batch) override {
    std::vector<uint64_t> ids;
    ids.reserve(batch.requests.size());
    for (const auto& request : batch.requests) ids.push_back(request->id);
    channel_->PostExecute(batch.instance, batch.token, std::move(ids));
  }

  bool RunsOnCallerThread() const override { return true; }

 private:
  JsChannel* channel_;  // owned by the NativeModel, which outlives its scheduler's instances
};

}  // namespace infernode
