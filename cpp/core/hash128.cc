// XXH3-128 as the reference xxhash.h v0.8 computes it with seed 0 (XXH3_128bits_withSecret and its
// streaming state); names in comments are the reference's. The long-input loop uses SSE2 where the
// compiler targets it (every x86-64), else the reference's scalar rounds; both give the same bits.
#include "core/hash128.h"

#include <cassert>
#include <cstring>
#include <random>

#if defined(__SSE2__) && !defined(INFERNODE_HASH128_SCALAR)
#include <emmintrin.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hash128.cc reads little-endian words with memcpy; add byte swaps for a big-endian target"
#endif

namespace infernode {

namespace {

__extension__ typedef unsigned __int128 U128;

constexpr uint64_t kPrime32_1 = 0x9E3779B1U;
constexpr uint64_t kPrime32_2 = 0x85EBCA77U;
constexpr uint64_t kPrime32_3 = 0xC2B2AE3DU;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ULL;
constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9ULL;
constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ULL;

constexpr size_t kStripeBytes = 64;
constexpr size_t kSecretConsumeRate = 8;   // XXH_SECRET_CONSUME_RATE
constexpr size_t kMidSizeMax = 240;        // XXH3_MIDSIZE_MAX
constexpr size_t kMidSizeStartOffset = 3;  // XXH3_MIDSIZE_STARTOFFSET
constexpr size_t kMidSizeLastOffset = 17;  // XXH3_MIDSIZE_LASTOFFSET
constexpr size_t kSecretLastAccStart = 7;  // XXH_SECRET_LASTACC_START
constexpr size_t kSecretMergeAccsStart = 11;

alignas(64) constexpr Hash128Secret kDefaultSecret = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4,
    0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e,
    0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43,
    0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb,
    0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19,
    0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7,
    0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78,
    0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16,
    0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f,
    0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

inline uint64_t Read64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint32_t Read32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint64_t Rotl64(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }
inline uint32_t Rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

inline Hash128 Mult64To128(uint64_t a, uint64_t b) {
  const U128 product = static_cast<U128>(a) * b;
  return {static_cast<uint64_t>(product), static_cast<uint64_t>(product >> 64)};
}

// XXH3_mul128_fold64
inline uint64_t Mul128Fold64(uint64_t a, uint64_t b) {
  const Hash128 product = Mult64To128(a, b);
  return product.low64 ^ product.high64;
}

inline uint64_t XorShift64(uint64_t v, int shift) { return v ^ (v >> shift); }

uint64_t Xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  h ^= h >> 32;
  return h;
}

uint64_t Xxh3Avalanche(uint64_t h) {
  h = XorShift64(h, 37);
  h *= kPrimeMx1;
  return XorShift64(h, 32);
}

// ---- Short inputs (<= 240 bytes) ----

Hash128 Len1To3(const uint8_t* input, size_t len, const uint8_t* secret) {
  const uint32_t c1 = input[0];
  const uint32_t c2 = input[len >> 1];
  const uint32_t c3 = input[len - 1];
  const uint32_t combined_lo = (c1 << 16) | (c2 << 24) | (c3 << 0) | (static_cast<uint32_t>(len) << 8);
  const uint32_t combined_hi = Rotl32(__builtin_bswap32(combined_lo), 13);
  const uint64_t bitflip_lo = Read32(secret) ^ Read32(secret + 4);
  const uint64_t bitflip_hi = Read32(secret + 8) ^ Read32(secret + 12);
  return {Xxh64Avalanche(combined_lo ^ bitflip_lo), Xxh64Avalanche(combined_hi ^ bitflip_hi)};
}

Hash128 Len4To8(const uint8_t* input, size_t len, const uint8_t* secret) {
  const uint64_t input_lo = Read32(input);
  const uint64_t input_hi = Read32(input + len - 4);
  const uint64_t input64 = input_lo + (input_hi << 32);
  const uint64_t bitflip = Read64(secret + 16) ^ Read64(secret + 24);
  Hash128 m = Mult64To128(input64 ^ bitflip, kPrime64_1 + (static_cast<uint64_t>(len) << 2));
  m.high64 += m.low64 << 1;
  m.low64 ^= m.high64 >> 3;
  m.low64 = XorShift64(m.low64, 35);
  m.low64 *= kPrimeMx2;
  m.low64 = XorShift64(m.low64, 28);
  m.high64 = Xxh3Avalanche(m.high64);
  return m;
}

Hash128 Len9To16(const uint8_t* input, size_t len, const uint8_t* secret) {
  const uint64_t bitflip_lo = Read64(secret + 32) ^ Read64(secret + 40);
  const uint64_t bitflip_hi = Read64(secret + 48) ^ Read64(secret + 56);
  const uint64_t input_lo = Read64(input);
  uint64_t input_hi = Read64(input + len - 8);
  Hash128 m = Mult64To128(input_lo ^ input_hi ^ bitflip_lo, kPrime64_1);
  m.low64 += static_cast<uint64_t>(len - 1) << 54;
  input_hi ^= bitflip_hi;
  m.high64 += input_hi + static_cast<uint64_t>(static_cast<uint32_t>(input_hi)) * (kPrime32_2 - 1);
  m.low64 ^= __builtin_bswap64(m.high64);
  Hash128 h = Mult64To128(m.low64, kPrime64_2);
  h.high64 += m.high64 * kPrime64_2;
  h.low64 = Xxh3Avalanche(h.low64);
  h.high64 = Xxh3Avalanche(h.high64);
  return h;
}

Hash128 Len0To16(const uint8_t* input, size_t len, const uint8_t* secret) {
  if (len > 8) return Len9To16(input, len, secret);
  if (len >= 4) return Len4To8(input, len, secret);
  if (len > 0) return Len1To3(input, len, secret);
  return {Xxh64Avalanche(Read64(secret + 64) ^ Read64(secret + 72)),
          Xxh64Avalanche(Read64(secret + 80) ^ Read64(secret + 88))};
}

// XXH3_mix16B with seed 0
inline uint64_t Mix16B(const uint8_t* input, const uint8_t* secret) {
  return Mul128Fold64(Read64(input) ^ Read64(secret), Read64(input + 8) ^ Read64(secret + 8));
}

// XXH128_mix32B with seed 0
inline void Mix32B(Hash128* acc, const uint8_t* input1, const uint8_t* input2, const uint8_t* secret) {
  acc->low64 += Mix16B(input1, secret);
  acc->low64 ^= Read64(input2) + Read64(input2 + 8);
  acc->high64 += Mix16B(input2, secret + 16);
  acc->high64 ^= Read64(input1) + Read64(input1 + 8);
}

Hash128 FinishMid(const Hash128& acc, size_t len) {
  Hash128 h;
  h.low64 = Xxh3Avalanche(acc.low64 + acc.high64);
  h.high64 = 0 - Xxh3Avalanche(acc.low64 * kPrime64_1 + acc.high64 * kPrime64_4 + len * kPrime64_2);
  return h;
}

Hash128 Len17To128(const uint8_t* input, size_t len, const uint8_t* secret) {
  Hash128 acc{len * kPrime64_1, 0};
  if (len > 32) {
    if (len > 64) {
      if (len > 96) Mix32B(&acc, input + 48, input + len - 64, secret + 96);
      Mix32B(&acc, input + 32, input + len - 48, secret + 64);
    }
    Mix32B(&acc, input + 16, input + len - 32, secret + 32);
  }
  Mix32B(&acc, input, input + len - 16, secret);
  return FinishMid(acc, len);
}

Hash128 Len129To240(const uint8_t* input, size_t len, const uint8_t* secret) {
  Hash128 acc{len * kPrime64_1, 0};
  for (size_t i = 32; i < 160; i += 32) Mix32B(&acc, input + i - 32, input + i - 16, secret + i - 32);
  acc.low64 = Xxh3Avalanche(acc.low64);
  acc.high64 = Xxh3Avalanche(acc.high64);
  for (size_t i = 160; i <= len; i += 32) {
    Mix32B(&acc, input + i - 32, input + i - 16, secret + kMidSizeStartOffset + i - 160);
  }
  Mix32B(&acc, input + len - 16, input + len - 32, secret + kHash128MinSecretSize - kMidSizeLastOffset - 16);
  return FinishMid(acc, len);
}

Hash128 HashShort(const uint8_t* input, size_t len, const uint8_t* secret) {
  if (len <= 16) return Len0To16(input, len, secret);
  if (len <= 128) return Len17To128(input, len, secret);
  return Len129To240(input, len, secret);
}

// ---- Long inputs: 8 lanes of 64-bit accumulators over 64-byte stripes ----

constexpr uint64_t kInitAcc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                                  kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};

// XXH3_accumulate_512: `acc` is 16-byte aligned.
inline void Accumulate512(uint64_t* acc, const uint8_t* input, const uint8_t* secret) {
#if defined(__SSE2__) && !defined(INFERNODE_HASH128_SCALAR)
  __m128i* xacc = reinterpret_cast<__m128i*>(acc);
  for (int i = 0; i < 4; ++i) {
    const __m128i data = _mm_loadu_si128(reinterpret_cast<const __m128i*>(input) + i);
    const __m128i key = _mm_loadu_si128(reinterpret_cast<const __m128i*>(secret) + i);
    const __m128i data_key = _mm_xor_si128(data, key);
    const __m128i data_key_hi = _mm_shuffle_epi32(data_key, _MM_SHUFFLE(0, 3, 0, 1));
    const __m128i product = _mm_mul_epu32(data_key, data_key_hi);
    const __m128i data_swap = _mm_shuffle_epi32(data, _MM_SHUFFLE(1, 0, 3, 2));
    xacc[i] = _mm_add_epi64(product, _mm_add_epi64(xacc[i], data_swap));
  }
#else
  for (size_t lane = 0; lane < 8; ++lane) {
    const uint64_t data = Read64(input + lane * 8);
    const uint64_t data_key = data ^ Read64(secret + lane * 8);
    acc[lane ^ 1] += data;
    acc[lane] += (data_key & 0xFFFFFFFFULL) * (data_key >> 32);
  }
#endif
}

// XXH3_scrambleAcc
inline void ScrambleAcc(uint64_t* acc, const uint8_t* secret) {
#if defined(__SSE2__) && !defined(INFERNODE_HASH128_SCALAR)
  __m128i* xacc = reinterpret_cast<__m128i*>(acc);
  const __m128i prime32 = _mm_set1_epi32(static_cast<int>(kPrime32_1));
  for (int i = 0; i < 4; ++i) {
    const __m128i shifted = _mm_xor_si128(xacc[i], _mm_srli_epi64(xacc[i], 47));
    const __m128i key = _mm_loadu_si128(reinterpret_cast<const __m128i*>(secret) + i);
    const __m128i data_key = _mm_xor_si128(shifted, key);
    const __m128i data_key_hi = _mm_shuffle_epi32(data_key, _MM_SHUFFLE(0, 3, 0, 1));
    const __m128i product_lo = _mm_mul_epu32(data_key, prime32);
    const __m128i product_hi = _mm_mul_epu32(data_key_hi, prime32);
    xacc[i] = _mm_add_epi64(product_lo, _mm_slli_epi64(product_hi, 32));
  }
#else
  for (size_t lane = 0; lane < 8; ++lane) {
    uint64_t a = XorShift64(acc[lane], 47);
    a ^= Read64(secret + lane * 8);
    acc[lane] = a * kPrime32_1;
  }
#endif
}

inline void Accumulate(uint64_t* acc, const uint8_t* input, const uint8_t* secret, size_t stripes) {
  for (size_t n = 0; n < stripes; ++n) {
    Accumulate512(acc, input + n * kStripeBytes, secret + n * kSecretConsumeRate);
  }
}

uint64_t MergeAccs(const uint64_t* acc, const uint8_t* secret, uint64_t start) {
  uint64_t result = start;
  for (size_t i = 0; i < 4; ++i) {
    result += Mul128Fold64(acc[2 * i] ^ Read64(secret + 16 * i), acc[2 * i + 1] ^ Read64(secret + 16 * i + 8));
  }
  return Xxh3Avalanche(result);
}

Hash128 MergeLong(const uint64_t* acc, uint64_t total, const uint8_t* secret, size_t secret_size) {
  Hash128 h;
  h.low64 = MergeAccs(acc, secret + kSecretMergeAccsStart, total * kPrime64_1);
  h.high64 = MergeAccs(acc, secret + secret_size - 64 - kSecretMergeAccsStart, ~(total * kPrime64_2));
  return h;
}

// XXH3_hashLong_128b_internal (one shot)
Hash128 HashLong(const uint8_t* input, size_t len, const uint8_t* secret, size_t secret_size) {
  alignas(64) uint64_t acc[8];
  std::memcpy(acc, kInitAcc, sizeof(acc));
  const size_t stripes_per_block = (secret_size - kStripeBytes) / kSecretConsumeRate;
  const size_t block_len = kStripeBytes * stripes_per_block;
  const size_t blocks = (len - 1) / block_len;
  for (size_t n = 0; n < blocks; ++n) {
    Accumulate(acc, input + n * block_len, secret, stripes_per_block);
    ScrambleAcc(acc, secret + secret_size - kStripeBytes);
  }
  const size_t stripes = ((len - 1) - block_len * blocks) / kStripeBytes;
  Accumulate(acc, input + blocks * block_len, secret, stripes);
  Accumulate512(acc, input + len - kStripeBytes, secret + secret_size - kStripeBytes - kSecretLastAccStart);
  return MergeLong(acc, len, secret, secret_size);
}

}  // namespace

const Hash128Secret& Hash128DefaultSecret() { return kDefaultSecret; }

Hash128Secret Hash128RandomSecret() {
  std::random_device random;  // the OS's source (getrandom / /dev/urandom, or RDRAND) on Linux
  Hash128Secret secret;
  for (size_t i = 0; i < secret.size(); i += 4) {
    const uint32_t word = random();
    std::memcpy(secret.data() + i, &word, 4);
  }
  return secret;
}

Hash128 Hash128Of(const void* data, size_t size, const uint8_t* secret, size_t secret_size) {
  assert(secret_size >= kHash128MinSecretSize);
  const auto* input = static_cast<const uint8_t*>(data);
  if (size <= kMidSizeMax) return HashShort(input, size, secret);
  return HashLong(input, size, secret, secret_size);
}

Hash128State::Hash128State() : Hash128State(kDefaultSecret.data(), kDefaultSecret.size()) {}

Hash128State::Hash128State(const uint8_t* secret, size_t secret_size)
    : secret_(secret),
      secret_limit_(secret_size - kStripeBytes),
      stripes_per_block_((secret_size - kStripeBytes) / kSecretConsumeRate) {
  assert(secret_size >= kHash128MinSecretSize);
  std::memcpy(acc_, kInitAcc, sizeof(acc_));
}

// XXH3_consumeStripes
const uint8_t* Hash128State::ConsumeStripes(uint64_t* acc_out, size_t* stripes_so_far, const uint8_t* input,
                                            size_t stripes) const {
  // Accumulators and members in locals (registers): stores through `acc_out` could alias the
  // members and the input as far as the compiler knows (the reference's XXH3_STREAM_USE_STACK).
  alignas(64) uint64_t acc[8];
  std::memcpy(acc, acc_out, sizeof(acc));
  const uint8_t* const secret = secret_;
  const size_t per_block = stripes_per_block_;
  const size_t so_far = *stripes_so_far;
  const uint8_t* first_secret = secret + so_far * kSecretConsumeRate;
  if (stripes >= per_block - so_far) {
    size_t this_round = per_block - so_far;
    do {
      Accumulate(acc, input, first_secret, this_round);
      ScrambleAcc(acc, secret + secret_limit_);
      input += this_round * kStripeBytes;
      stripes -= this_round;
      this_round = per_block;
      first_secret = secret;
    } while (stripes >= per_block);
    *stripes_so_far = 0;
  }
  if (stripes > 0) {
    Accumulate(acc, input, first_secret, stripes);
    input += stripes * kStripeBytes;
    *stripes_so_far += stripes;
  }
  std::memcpy(acc_out, acc, sizeof(acc));
  return input;
}

// XXH3_update: input is buffered until more than the buffer holds has arrived, so the last
// stripe (hashed differently at Final) is always still in the buffer.
void Hash128State::Update(const void* data, size_t size) {
  if (size == 0) return;
  const auto* input = static_cast<const uint8_t*>(data);
  const uint8_t* const end = input + size;
  total_ += size;
  if (size <= kBufferBytes - buffered_) {
    std::memcpy(buffer_ + buffered_, input, size);
    buffered_ += size;
    return;
  }
  if (buffered_ > 0) {
    const size_t fill = kBufferBytes - buffered_;
    std::memcpy(buffer_ + buffered_, input, fill);
    input += fill;
    ConsumeStripes(acc_, &stripes_so_far_, buffer_, kBufferBytes / kStripeBytes);
    buffered_ = 0;
  }
  if (static_cast<size_t>(end - input) > kBufferBytes) {
    const size_t stripes = static_cast<size_t>(end - 1 - input) / kStripeBytes;
    input = ConsumeStripes(acc_, &stripes_so_far_, input, stripes);
    // The stripe before what stays buffered, for Final's catch-up when fewer than 64 bytes stay.
    std::memcpy(buffer_ + kBufferBytes - kStripeBytes, input - kStripeBytes, kStripeBytes);
  }
  std::memcpy(buffer_, input, static_cast<size_t>(end - input));
  buffered_ = static_cast<size_t>(end - input);
}

// XXH3_128bits_digest
Hash128 Hash128State::Final() const {
  const size_t secret_size = secret_limit_ + kStripeBytes;
  if (total_ <= kMidSizeMax) return HashShort(buffer_, static_cast<size_t>(total_), secret_);
  // XXH3_digest_long: a copy of the accumulators, so the state can go on.
  alignas(64) uint64_t acc[8];
  std::memcpy(acc, acc_, sizeof(acc));
  const uint8_t* last_stripe;
  uint8_t catch_up[kStripeBytes];
  if (buffered_ >= kStripeBytes) {
    const size_t stripes = (buffered_ - 1) / kStripeBytes;
    size_t stripes_so_far = stripes_so_far_;
    ConsumeStripes(acc, &stripes_so_far, buffer_, stripes);
    last_stripe = buffer_ + buffered_ - kStripeBytes;
  } else {
    const size_t from_before = kStripeBytes - buffered_;
    std::memcpy(catch_up, buffer_ + kBufferBytes - from_before, from_before);
    std::memcpy(catch_up + from_before, buffer_, buffered_);
    last_stripe = catch_up;
  }
  Accumulate512(acc, last_stripe, secret_ + secret_limit_ - kSecretLastAccStart);
  return MergeLong(acc, total_, secret_, secret_size);
}

void Hash128ToHex(const Hash128& hash, char out[32]) {
  static const char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    out[i] = kDigits[(hash.high64 >> (60 - 4 * i)) & 0xF];
    out[16 + i] = kDigits[(hash.low64 >> (60 - 4 * i)) & 0xF];
  }
}

}  // namespace infernode
