// The serialized BYTES tensor format (Triton's): per element, a 4-byte little-endian length, then
// that many bytes. This is the one walker of that format in the native code: request validation,
// the ONNX engine's string inputs and the per-request split of BYTES outputs all go through it,
// and it is bounds-checked (security.md: lengths come from the wire).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace infernode {

// Reads elements one at a time from a buffer it does not own (the buffer outlives the walker and
// the views it hands out). Single-threaded; cheap to copy.
class SerializedBytesWalker {
 public:
  SerializedBytesWalker(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  // The next element's bytes. False at the clean end of the buffer, or when the next element is
  // malformed: then Error() says which element and how.
  bool Next(std::string_view* element);

  // Success after a clean end; the reason Next stopped otherwise.
  const Status& Error() const { return error_; }

  // Bytes consumed so far: the offset of the next element's length prefix.
  uint64_t Offset() const { return offset_; }

  // Elements read so far.
  int64_t Count() const { return count_; }

 private:
  std::string Where() const;  // "BYTES element 3 at byte offset 17", for errors

  const uint8_t* data_;
  uint64_t size_;
  uint64_t offset_ = 0;
  int64_t count_ = 0;
  Status error_;
};

// Counts the elements. Fails (INVALID_ARG) when an element runs past the end or 1-3 bytes remain
// after the last element.
Status CountSerializedBytes(const uint8_t* data, uint64_t size, int64_t* count);

// The elements as views into `data`, with the same checks.
Status SplitSerializedBytes(const uint8_t* data, uint64_t size, std::vector<std::string_view>* elements);

// Byte offsets of every element boundary (count + 1 entries: 0, the end of each element), with
// the same checks. Element i spans [offsets[i], offsets[i + 1]) including its length prefix.
Status SerializedBytesOffsets(const uint8_t* data, uint64_t size, std::vector<uint64_t>* offsets);

}  // namespace infernode
