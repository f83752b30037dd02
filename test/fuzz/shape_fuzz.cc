// libFuzzer target: the size arithmetic on shapes from the wire (core/shape.h). Products and byte
// sizes must be exact when they succeed and fail (not wrap or trap in UBSan) when they overflow.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/shape.h"

using namespace infernode;

namespace {

Shape TakeShape(FuzzedDataProvider& in) {
  Shape shape(in.ConsumeIntegralInRange<size_t>(0, 8));
  for (int64_t& d : shape) {
    // Mostly small dims (so products succeed often), sometimes anything at all.
    d = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-2, 64) : in.ConsumeIntegral<int64_t>();
  }
  return shape;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const Shape shape = TakeShape(in);
  const DataType dtype = DataTypeFromCode(in.ConsumeIntegralInRange<int>(0, 20));

  int64_t count = -1;
  if (ElementCount(shape, &count).IsOk()) {
    // Recompute with 128-bit arithmetic: the checked product must be exact.
    unsigned __int128 exact = 1;
    for (int64_t d : shape) {
      if (d < 0) std::abort();
      exact *= static_cast<unsigned __int128>(d);
      if (exact > static_cast<unsigned __int128>(INT64_MAX)) exact = static_cast<unsigned __int128>(INT64_MAX) + 1;
    }
    bool zero = false;
    for (int64_t d : shape) zero = zero || d == 0;
    if (!zero && exact != static_cast<unsigned __int128>(count)) std::abort();
    if (zero && count != 0) std::abort();
    uint64_t bytes = 0;
    if (ByteSize(dtype, shape, &bytes).IsOk()) {
      const size_t elem = DataTypeByteSize(dtype);
      if (elem == 0 || bytes != static_cast<uint64_t>(count) * elem || bytes > static_cast<uint64_t>(INT64_MAX))
        std::abort();
    }
  }

  // Reshape mapping and matching take any dims without trapping.
  const Shape from = TakeShape(in);
  const Shape to = TakeShape(in);
  const Shape mapped = MapReshape(shape, from, to);
  if (mapped.size() != to.size()) std::abort();
  (void)ShapeMatches(from, shape);
  (void)ShapeToString(mapped);
  return 0;
}
