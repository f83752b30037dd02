// libFuzzer target: the BYTES walker (core/bytes_tensor.h) on arbitrary buffers. It must never
// read outside the buffer (ASan), and its three entry points must agree with each other and with
// the element views they hand out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/bytes_tensor.h"

using namespace infernode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copied so ASan sees the exact end of the buffer (libFuzzer's own buffer is exact too, but the
  // copy also covers size 0 with a null pointer).
  std::vector<uint8_t> copy(data, data + size);
  const uint8_t* buffer = copy.empty() ? nullptr : copy.data();

  int64_t count = -1;
  const Status counted = CountSerializedBytes(buffer, size, &count);
  std::vector<std::string_view> elements;
  const Status split = SplitSerializedBytes(buffer, size, &elements);
  std::vector<uint64_t> offsets;
  const Status walked = SerializedBytesOffsets(buffer, size, &offsets);

  if (counted.IsOk() != split.IsOk() || split.IsOk() != walked.IsOk()) std::abort();
  if (!counted.IsOk()) {
    if (counted.Code() != StatusCode::kInvalidArg || counted.Message().empty()) std::abort();
    return 0;
  }
  if (static_cast<size_t>(count) != elements.size() || offsets.size() != elements.size() + 1) std::abort();
  if (offsets.back() != size) std::abort();  // a clean walk consumes every byte
  uint64_t total = 0;
  for (size_t i = 0; i < elements.size(); ++i) {
    const std::string_view e = elements[i];
    if (!e.empty() && (reinterpret_cast<const uint8_t*>(e.data()) < buffer ||
                       reinterpret_cast<const uint8_t*>(e.data()) + e.size() > buffer + size)) {
      std::abort();
    }
    if (offsets[i + 1] - offsets[i] != 4 + e.size()) std::abort();
    total += 4 + e.size();
    volatile char touch = e.empty() ? 0 : e[e.size() - 1];  // the last byte is readable
    (void)touch;
  }
  if (total != size) std::abort();
  return 0;
}
