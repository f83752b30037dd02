#include "core/half_float.h"

#include <cstring>
#include <string>

namespace infernode {

namespace {

uint32_t FloatBits(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// `value` shifted right by `shift` (1..31), rounded to nearest, ties to even.
uint32_t ShiftRoundEven(uint32_t value, int shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

uint16_t FloatToHalfBits(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // quiet NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (tie to even): Inf
  if (abs >= 0x38800000u) {
    // A normal FP16: rebias the exponent (127 -> 15); a carry out of the mantissa bumps it.
    return static_cast<uint16_t>(sign | ShiftRoundEven(abs - 0x38000000u, 13));
  }
  if (abs <= 0x33000000u) return sign;  // <= 2^-25: half the smallest subnormal rounds (to even) to 0
  // A subnormal FP16: the value in units of 2^-24, from the mantissa with its implicit bit. The
  // largest one may round up to 0x0400, which is exactly the smallest normal's encoding.
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const int exponent = static_cast<int>(abs >> 23);  // 102..112 here
  return static_cast<uint16_t>(sign | ShiftRoundEven(mantissa, 126 - exponent));
}

float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) {
    const uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return BitsFloat(sign | 0x7f800000u | quiet | (mantissa << 13));
  }
  if (exponent != 0) return BitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return BitsFloat(sign);
  // A subnormal: normalise it (every FP16 subnormal is a normal FP32).
  uint32_t e = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return BitsFloat(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

uint16_t FloatToBfloat16Bits(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  // Same exponent range as FP32: rounding is all there is (a carry may reach Inf, as it should).
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float Bfloat16BitsToFloat(uint16_t bits) { return BitsFloat(static_cast<uint32_t>(bits) << 16); }

bool IsHalfCastPair(DataType served, DataType model) {
  return served == DataType::kFp32 && (model == DataType::kFp16 || model == DataType::kBf16);
}

Status HostCast(void* dst, DataType dst_type, const void* src, DataType src_type, size_t count) {
  // Element by element through memcpy: the blocks need no particular alignment.
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  if (src_type == DataType::kFp32 && (dst_type == DataType::kFp16 || dst_type == DataType::kBf16)) {
    const bool half = dst_type == DataType::kFp16;
    for (size_t i = 0; i < count; ++i) {
      float value = 0;
      std::memcpy(&value, in + i * 4, 4);
      const uint16_t bits = half ? FloatToHalfBits(value) : FloatToBfloat16Bits(value);
      std::memcpy(out + i * 2, &bits, 2);
    }
    return Status::Success();
  }
  if (dst_type == DataType::kFp32 && (src_type == DataType::kFp16 || src_type == DataType::kBf16)) {
    const bool half = src_type == DataType::kFp16;
    for (size_t i = 0; i < count; ++i) {
      uint16_t bits = 0;
      std::memcpy(&bits, in + i * 2, 2);
      const float value = half ? HalfBitsToFloat(bits) : Bfloat16BitsToFloat(bits);
      std::memcpy(out + i * 4, &value, 4);
    }
    return Status::Success();
  }
  return InvalidArg(std::string("no conversion from ") + DataTypeName(src_type) + " to " + DataTypeName(dst_type) +
                    " (only FP32 <-> FP16 and FP32 <-> BF16)");
}

}  // namespace infernode
