#include "core/shape.h"

#include <limits>

namespace infernode {

std::string ShapeToString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Status ElementCount(const Shape& shape, int64_t* count) {
  int64_t total = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return InvalidArg("negative dimension in shape " + ShapeToString(shape));
    if (dim != 0 && total > std::numeric_limits<int64_t>::max() / dim) {
      return InvalidArg("element count of shape " + ShapeToString(shape) + " overflows");
    }
    total *= dim;
  }
  *count = total;
  return Status::Success();
}

Status ByteSize(DataType dtype, const Shape& shape, uint64_t* bytes) {
  const size_t elem = DataTypeByteSize(dtype);
  if (elem == 0) { return InvalidArg(std::string("datatype ") + DataTypeName(dtype) + " has no fixed byte size"); }
  int64_t count = 0;
  RETURN_IF_ERROR(ElementCount(shape, &count));
  const uint64_t n = static_cast<uint64_t>(count);
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elem) {
    return InvalidArg("byte size of shape " + ShapeToString(shape) + " overflows");
  }
  *bytes = n * elem;
  return Status::Success();
}

Shape MapReshape(const Shape& actual, const Shape& from, const Shape& to) {
  std::vector<int64_t> variable;
  for (size_t i = 0; i < from.size() && i < actual.size(); ++i) {
    if (from[i] == -1) variable.push_back(actual[i]);
  }
  Shape out = to;
  size_t next = 0;
  for (int64_t& d : out) {
    if (d == -1) d = next < variable.size() ? variable[next++] : 0;
  }
  return out;
}

bool ShapeMatches(const Shape& dims, const Shape& shape) {
  if (dims.size() != shape.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != -1 && dims[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace infernode
