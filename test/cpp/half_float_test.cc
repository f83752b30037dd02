// The host FP32 <-> FP16 / BF16 conversions (core/half_float.h), against hand-computed bit
// patterns: they are the CPU path of served-as-FP32 models and the reference the GPU kernels
// must agree with.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half_float.h"
#include "harness.h"

using namespace infernode;

namespace {

uint32_t Bits(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

bool IsQuietHalfNan(uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x0200u) != 0; }

}  // namespace

TEST(HalfFromFloatExactAndLargeValues) {
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalfBits(0.1f), 0x2e66);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);  // the largest FP16
  EXPECT_EQ(FloatToHalfBits(65519.0f), 0x7bff);  // below the tie: rounds down
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);  // the tie: to even, which is Inf
  EXPECT_EQ(FloatToHalfBits(-65520.0f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(1e6f), 0x7c00);  // overflow
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::max()), 0x7c00);
}

TEST(HalfFromFloatRoundsTiesToEven) {
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie between 0x3c00 and 0x3c01
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie between 0x3c01 and 0x3c02
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -12)), 0x3c01);  // above the tie
  EXPECT_EQ(FloatToHalfBits(2047.5f), 0x6800);                           // between 2047 (odd) and 2048: to 2048
}

TEST(HalfFromFloatSubnormals) {
  EXPECT_EQ(FloatToHalfBits(1e-8f), 0x0000);                  // under half the smallest subnormal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);  // exactly half of it: ties to even 0
  EXPECT_EQ(FloatToHalfBits(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);  // 5.96e-8, the smallest subnormal
  EXPECT_EQ(FloatToHalfBits(5.96e-8f), 0x0001);
  EXPECT_EQ(FloatToHalfBits(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 units ties to 2
  EXPECT_EQ(FloatToHalfBits(5 * std::ldexp(1.0f, -25)), 0x0002);  // 2.5 units ties to 2
  EXPECT_EQ(FloatToHalfBits(6.1e-5f), 0x03ff);                    // 1023.4 units: the largest subnormal
  EXPECT_EQ(FloatToHalfBits(1023 * std::ldexp(1.0f, -24)), 0x03ff);
  EXPECT_EQ(FloatToHalfBits(1023.5f * std::ldexp(1.0f, -24)), 0x0400);  // ties up into the smallest normal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);            // 6.1035e-5, the smallest normal
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(HalfFromFloatInfinityAndNan) {
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  // A signalling NaN whose payload sits below FP16's mantissa still comes out a (quiet) NaN.
  float snan = 0;
  const uint32_t snan_bits = 0x7f800001u;
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_TRUE(IsQuietHalfNan(FloatToHalfBits(snan)));
  EXPECT_TRUE(IsQuietHalfNan(FloatToHalfBits(-std::numeric_limits<float>::quiet_NaN())));
}

TEST(HalfToFloatEdgeValues) {
  EXPECT_EQ(Bits(HalfBitsToFloat(0x0000)), 0x00000000u);
  EXPECT_EQ(Bits(HalfBitsToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(HalfBitsToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfBitsToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfBitsToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfBitsToFloat(0x0200), std::ldexp(1.0f, -15));
  EXPECT_EQ(HalfBitsToFloat(0x03ff), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfBitsToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(HalfBitsToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(HalfBitsToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7c01)));  // a signalling FP16 NaN: read as a quiet one
  EXPECT_EQ(Bits(HalfBitsToFloat(0x7c01)) & 0x00400000u, 0x00400000u);
}

TEST(HalfRoundTripsEveryPattern) {
  int mismatches = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const uint16_t back = FloatToHalfBits(HalfBitsToFloat(bits));
    const bool nan = (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
    if (nan ? !IsQuietHalfNan(back) || (back & 0x8000u) != (bits & 0x8000u) : back != bits) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Bfloat16FromFloatRounding) {
  EXPECT_EQ(FloatToBfloat16Bits(0.0f), 0x0000);
  EXPECT_EQ(FloatToBfloat16Bits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBfloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBfloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);                          // tie: to even (down)
  EXPECT_EQ(FloatToBfloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);                      // tie: to even (up)
  EXPECT_EQ(FloatToBfloat16Bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);  // above the tie
  EXPECT_EQ(FloatToBfloat16Bits(65520.0f), 0x4780);                           // within BF16's range: no overflow
  EXPECT_EQ(FloatToBfloat16Bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest BF16
  EXPECT_EQ(FloatToBfloat16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(FloatToBfloat16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(FloatToBfloat16Bits(1e-40f), 0x0001);  // FP32 subnormals stay subnormal
  EXPECT_EQ(FloatToBfloat16Bits(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  float snan = 0;
  const uint32_t snan_bits = 0x7f800001u;  // rounding must not turn it into Inf
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_EQ(FloatToBfloat16Bits(snan) & 0x7fc0, 0x7fc0);
}

TEST(Bfloat16RoundTripsEveryPattern) {
  int mismatches = 0;
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float value = Bfloat16BitsToFloat(bits);
    if (Bits(value) != (b << 16)) ++mismatches;
    const uint16_t back = FloatToBfloat16Bits(value);
    const bool nan = (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
    if (nan ? (back & 0x7fc0u) != 0x7fc0u : back != bits) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(HostCastConvertsArraysBothWays) {
  const std::vector<float> values = {0.0f, -1.5f, 65520.0f, 3 * std::ldexp(1.0f, -25), 0.1f};
  std::vector<uint16_t> half(values.size());
  EXPECT_TRUE(HostCast(half.data(), DataType::kFp16, values.data(), DataType::kFp32, values.size()).IsOk());
  EXPECT_EQ(half[0], 0x0000);
  EXPECT_EQ(half[1], 0xbe00);
  EXPECT_EQ(half[2], 0x7c00);
  EXPECT_EQ(half[3], 0x0002);
  EXPECT_EQ(half[4], 0x2e66);
  std::vector<float> back(values.size());
  EXPECT_TRUE(HostCast(back.data(), DataType::kFp32, half.data(), DataType::kFp16, half.size()).IsOk());
  EXPECT_EQ(back[1], -1.5f);
  EXPECT_EQ(back[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(back[4], HalfBitsToFloat(0x2e66));
  std::vector<uint16_t> bf(values.size());
  EXPECT_TRUE(HostCast(bf.data(), DataType::kBf16, values.data(), DataType::kFp32, values.size()).IsOk());
  EXPECT_EQ(bf[1], 0xbfc0);
  EXPECT_TRUE(HostCast(back.data(), DataType::kFp32, bf.data(), DataType::kBf16, bf.size()).IsOk());
  EXPECT_EQ(back[1], -1.5f);
  EXPECT_TRUE(HostCast(nullptr, DataType::kFp16, nullptr, DataType::kFp32, 0).IsOk());
}

TEST(HostCastRefusesOtherPairs) {
  float f = 1;
  int32_t i = 0;
  const Status status = HostCast(&i, DataType::kInt32, &f, DataType::kFp32, 1);
  EXPECT_EQ(status.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(status.Message(), "FP32 to INT32");
  EXPECT_EQ(HostCast(&f, DataType::kFp32, &f, DataType::kFp32, 1).Code(), StatusCode::kInvalidArg);
  EXPECT_EQ(HostCast(&i, DataType::kFp16, &i, DataType::kBf16, 1).Code(), StatusCode::kInvalidArg);
}

TEST(HalfCastPairsAreFp32ServedForHalfModels) {
  EXPECT_TRUE(IsHalfCastPair(DataType::kFp32, DataType::kFp16));
  EXPECT_TRUE(IsHalfCastPair(DataType::kFp32, DataType::kBf16));
  EXPECT_TRUE(!IsHalfCastPair(DataType::kFp16, DataType::kFp32));
  EXPECT_TRUE(!IsHalfCastPair(DataType::kFp32, DataType::kFp32));
  EXPECT_TRUE(!IsHalfCastPair(DataType::kInt32, DataType::kFp16));
  EXPECT_TRUE(!IsHalfCastPair(DataType::kFp64, DataType::kFp16));
}
