// Client-supplied text in error messages. A request can carry megabytes of names or a shape
// with a million dims; echoed whole, a message would not fit a gRPC status (HTTP/2 trailers).
// Message builders pass what they echo from a request through these (the TypeScript twins are
// clip/clipShape in ts/errors.ts, with the same limit).
#pragma once

#include <cstddef>
#include <string>

#include "core/shape.h"

namespace infernode {

// The most bytes of one piece of client text a message echoes (ts/errors.ts MAX_ECHOED_CHARS).
constexpr size_t kMaxEchoedBytes = 256;

// `text` when short, else its first kMaxEchoedBytes bytes (whole UTF-8 characters), "…" and
// its length.
std::string Clip(const std::string& text, size_t max = kMaxEchoedBytes);

// "[1,2,3]", or "[1,1,…] (1000000 dims)" past kMaxEchoedBytes.
std::string ClippedShape(const Shape& shape, size_t max = kMaxEchoedBytes);

}  // namespace infernode
