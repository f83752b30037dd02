#include "core/bytes_tensor.h"

#include <cstring>
#include <string>

namespace infernode {

namespace {
constexpr uint64_t kLengthPrefix = 4;
}  // namespace

std::string SerializedBytesWalker::Where() const {
  return "BYTES element " + std::to_string(count_) + " at byte offset " + std::to_string(offset_);
}

bool SerializedBytesWalker::Next(std::string_view* element) {
  if (!error_.IsOk() || offset_ == size_) return false;
  const uint64_t left = size_ - offset_;
  if (left < kLengthPrefix) {
    error_ = InvalidArg(Where() + ": " + std::to_string(left) +
                        " trailing byte(s), too few for a 4-byte length prefix (each element is a 4-byte "
                        "little-endian length followed by that many bytes)");
    return false;
  }
  uint32_t len = 0;
  std::memcpy(&len, data_ + offset_, kLengthPrefix);  // little-endian hosts only (x86-64, arm64)
  if (len > left - kLengthPrefix) {
    error_ = InvalidArg(Where() + " declares " + std::to_string(len) + " bytes but only " +
                        std::to_string(left - kLengthPrefix) + " remain in the tensor data");
    return false;
  }
  *element = std::string_view(reinterpret_cast<const char*>(data_ + offset_ + kLengthPrefix), len);
  offset_ += kLengthPrefix + len;
  ++count_;
  return true;
}

Status CountSerializedBytes(const uint8_t* data, uint64_t size, int64_t* count) {
  SerializedBytesWalker walker(data, size);
  std::string_view element;
  while (walker.Next(&element)) {}
  RETURN_IF_ERROR(walker.Error());
  *count = walker.Count();
  return Status::Success();
}

Status SplitSerializedBytes(const uint8_t* data, uint64_t size, std::vector<std::string_view>* elements) {
  elements->clear();
  SerializedBytesWalker walker(data, size);
  std::string_view element;
  while (walker.Next(&element)) elements->push_back(element);
  return walker.Error();
}

Status SerializedBytesOffsets(const uint8_t* data, uint64_t size, std::vector<uint64_t>* offsets) {
  offsets->assign(1, 0);
  SerializedBytesWalker walker(data, size);
  std::string_view element;
  while (walker.Next(&element)) offsets->push_back(walker.Offset());
  return walker.Error();
}

}  // namespace infernode
