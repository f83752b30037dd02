// Shapes and the size arithmetic on them. Every product and byte size is checked for
// overflow before anything is allocated from it (security.md: sizes from the wire).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/bytes_tensor.h"  // CountSerializedBytes, for the callers that found it here
#include "core/datatype.h"
#include "core/status.h"

namespace infernode {

using Shape = std::vector<int64_t>;

// "[2,3]" for messages.
std::string ShapeToString(const Shape& shape);

// Product of the dims. Fails on a negative dim or when the product exceeds INT64_MAX.
Status ElementCount(const Shape& shape, int64_t* count);

// Element count times the datatype's size. Fails for BYTES, invalid types, and sizes beyond INT64_MAX.
Status ByteSize(DataType dtype, const Shape& shape, uint64_t* bytes);

// Maps an actual shape between a tensor's config dims and its `reshape` (either direction):
// `actual` matches `from`; the k-th variable (-1) dim of `to` takes the size of the k-th variable
// dim of `from` in `actual`. Triton's config checks guarantee both split into the same
// fixed-size runs around their variable dims, so element counts agree.
Shape MapReshape(const Shape& actual, const Shape& from, const Shape& to);

// True when `shape` matches `dims` where -1 in dims accepts any size.
bool ShapeMatches(const Shape& dims, const Shape& shape);

}  // namespace infernode
