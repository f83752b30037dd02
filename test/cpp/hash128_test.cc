// XXH3-128 (cpp/core/hash128.h) against the known answers of its reference implementation
// (xxHash v0.8, cli/xsum_sanity_check.c: XSUM_XXH128_testdata with seed 0, and
// XSUM_XXH128_withSecret_testdata), the streaming state against the one-shot hash at every split
// point, and distinct inputs giving distinct hashes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/hash128.h"
#include "harness.h"

namespace infernode {
// For EXPECT_EQ's messages (found by argument-dependent lookup).
std::ostream& operator<<(std::ostream& os, const Hash128& hash) {
  char out[32];
  Hash128ToHex(hash, out);
  return os << std::string(out, 32);
}
}  // namespace infernode

using namespace infernode;

namespace {

// XSUM_fillTestBuffer: the reference's pseudorandom test data.
std::vector<uint8_t> SanityBuffer(size_t len) {
  std::vector<uint8_t> buffer(len);
  uint64_t byte_gen = 2654435761U;  // PRIME32
  for (size_t i = 0; i < len; ++i) {
    buffer[i] = static_cast<uint8_t>(byte_gen >> 56);
    byte_gen *= 11400714785074694797ULL;  // PRIME64
  }
  return buffer;
}

constexpr size_t kSanityBufferSize = 2367;

struct KnownAnswer {
  size_t len;
  Hash128 hash;  // {low64, high64}
};

// XSUM_XXH128_testdata, the seed-0 rows (the default secret).
const KnownAnswer kDefaultSecretAnswers[] = {
    {0, {0x6001C324468D497FULL, 0x99AA06D3014798D8ULL}},     // empty
    {1, {0xC44BDFF4074EECDBULL, 0xA6CD5E9392000F6AULL}},     // 1-3
    {6, {0x3E7039BDDA43CFC6ULL, 0x082AFE0B8162D12AULL}},     // 4-8
    {12, {0x061A192713F69AD9ULL, 0x6E3EFD8FC7802B18ULL}},    // 9-16
    {24, {0x1E7044D28B1B901DULL, 0x0CE966E4678D3761ULL}},    // 17-32
    {48, {0xF942219AED80F67BULL, 0xA002AC4E5478227EULL}},    // 33-64
    {81, {0x5E8BAFB9F95FB803ULL, 0x4952F58181AB0042ULL}},    // 65-96
    {222, {0xF1AEBD597CEC6B3AULL, 0x337E09641B948717ULL}},   // 129-240
    {403, {0xCDEB804D65C6DEA4ULL, 0x1B6DE21E332DD73DULL}},   // one block, last stripe overlapping
    {512, {0x617E49599013CB6BULL, 0x18D2D110DCC9BCA1ULL}},   // one block, ends on a stripe
    {2048, {0xDD59E2C3A5F038E0ULL, 0xF736557FD47073A5ULL}},  // 2 blocks, ends on a block
    {2240, {0x6E73A90539CF2948ULL, 0xCCB134FBFA7CE49DULL}},  // 3 blocks, ends on a stripe
    {2367, {0xCB37AEB9E5D361EDULL, 0xE89C0F6FF369B427ULL}},  // 3 blocks, last stripe overlapping
};

// XSUM_XXH128_withSecret_testdata: secret = sanity buffer + 7, XXH3_SECRET_SIZE_MIN + 11 bytes.
const KnownAnswer kCustomSecretAnswers[] = {
    {0, {0x005923CCEECBE8AEULL, 0x5F70F4EA232F1D38ULL}},
    {1, {0x8A52451418B2DA4DULL, 0x3A66AF5A9819198EULL}},
    {6, {0x0B61C8ACA7D4778FULL, 0x376BD91B6432F36DULL}},
    {12, {0xAF82F6EBA263D7D8ULL, 0x90A3C2D839F57D0FULL}},
};

constexpr size_t kCustomSecretOffset = 7;
constexpr size_t kCustomSecretSize = kHash128MinSecretSize + 11;

std::string Hex(const Hash128& hash) {
  char out[32];
  Hash128ToHex(hash, out);
  return std::string(out, 32);
}

Hash128 Streamed(const std::vector<std::pair<const uint8_t*, size_t>>& spans, const uint8_t* secret,
                 size_t secret_size) {
  Hash128State state(secret, secret_size);
  for (const auto& span : spans) state.Update(span.first, span.second);
  return state.Final();
}

// Every split of `len` bytes into two spans, and into three around a few fixed cuts, equals the
// one-shot hash.
int CountSplitMismatches(const uint8_t* data, size_t len, const uint8_t* secret, size_t secret_size) {
  const Hash128 whole = Hash128Of(data, len, secret, secret_size);
  int mismatches = 0;
  for (size_t cut = 0; cut <= len; ++cut) {
    if (Streamed({{data, cut}, {data + cut, len - cut}}, secret, secret_size) != whole) ++mismatches;
    const size_t second = cut + (len - cut) / 3;
    if (Streamed({{data, cut}, {data + cut, second - cut}, {data + second, len - second}}, secret, secret_size) !=
        whole) {
      ++mismatches;
    }
  }
  return mismatches;
}

}  // namespace

TEST(Hash128MatchesReferenceKnownAnswersWithTheDefaultSecret) {
  const std::vector<uint8_t> data = SanityBuffer(kSanityBufferSize);
  for (const KnownAnswer& answer : kDefaultSecretAnswers) {
    EXPECT_EQ(Hash128Of(data.data(), answer.len), answer.hash);
    Hash128State state;
    state.Update(data.data(), answer.len);
    EXPECT_EQ(state.Final(), answer.hash);
  }
  // The canonical form of XXH3_128bits(""), as `xxh128sum` prints it.
  EXPECT_EQ(Hex(Hash128Of("", 0)), std::string("99aa06d3014798d86001c324468d497f"));
}

TEST(Hash128MatchesReferenceKnownAnswersWithACustomSecret) {
  const std::vector<uint8_t> data = SanityBuffer(kSanityBufferSize);
  const uint8_t* secret = data.data() + kCustomSecretOffset;
  for (const KnownAnswer& answer : kCustomSecretAnswers) {
    EXPECT_EQ(Hash128Of(data.data(), answer.len, secret, kCustomSecretSize), answer.hash);
    EXPECT_EQ(Streamed({{data.data(), answer.len}}, secret, kCustomSecretSize), answer.hash);
  }
}

TEST(Hash128StreamingEqualsOneShotAtEverySplitPoint) {
  const std::vector<uint8_t> data = SanityBuffer(kSanityBufferSize);
  const uint8_t* default_secret = Hash128DefaultSecret().data();
  const uint8_t* custom_secret = data.data() + kCustomSecretOffset;  // 10 stripes per block
  // Every path: short, mid, one block, the buffer's edges (240, 256, 320), several blocks.
  for (size_t len : {0,   1,   3,   4,   8,   9,   16,  17,   128,  129,  240,  241, 255,
                     256, 257, 319, 320, 321, 403, 512, 1024, 1025, 2048, 2240, 2367}) {
    EXPECT_EQ(CountSplitMismatches(data.data(), len, default_secret, kHash128SecretSize), 0);
    EXPECT_EQ(CountSplitMismatches(data.data(), len, custom_secret, kCustomSecretSize), 0);
  }
}

TEST(Hash128StreamingEqualsOneShotForManySmallSpansOfALargeInput) {
  std::vector<uint8_t> data = SanityBuffer(kSanityBufferSize);
  while (data.size() < 300000) data.insert(data.end(), data.begin(), data.begin() + kSanityBufferSize);
  const Hash128 whole = Hash128Of(data.data(), data.size());
  for (size_t span : {1, 7, 63, 64, 65, 255, 256, 257, 4096, 65537}) {
    Hash128State state;
    for (size_t at = 0; at < data.size(); at += span) state.Update(data.data() + at, std::min(span, data.size() - at));
    EXPECT_EQ(state.Final(), whole);
  }
  // Final() leaves the state usable.
  Hash128State state;
  state.Update(data.data(), 1000);
  const Hash128 first = state.Final();
  EXPECT_EQ(state.Final(), first);
  state.Update(data.data() + 1000, data.size() - 1000);
  EXPECT_EQ(state.Final(), whole);
}

TEST(Hash128DiffersForDifferentInputsAndSecrets) {
  std::vector<uint8_t> data = SanityBuffer(300);
  std::set<std::string> seen;
  seen.insert(Hex(Hash128Of(data.data(), data.size())));
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {  // every single-bit change
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    seen.insert(Hex(Hash128Of(data.data(), data.size())));
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
  EXPECT_EQ(seen.size(), data.size() * 8 + 1);
  for (size_t len = 0; len <= data.size(); ++len) seen.insert(Hex(Hash128Of(data.data(), len)));  // every prefix
  EXPECT_EQ(seen.size(), data.size() * 9 + 1);  // the 300-byte prefix is the original

  const Hash128Secret a = Hash128RandomSecret();
  const Hash128Secret b = Hash128RandomSecret();
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(a != Hash128DefaultSecret());
  for (size_t len : {0, 5, 100, 300}) {
    EXPECT_TRUE(Hash128Of(data.data(), len, a.data(), a.size()) != Hash128Of(data.data(), len, b.data(), b.size()));
    EXPECT_TRUE(Hash128Of(data.data(), len, a.data(), a.size()) != Hash128Of(data.data(), len));
  }
}
