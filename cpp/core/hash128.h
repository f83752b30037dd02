// XXH3-128 (xxHash 0.8, Yann Collet, BSD-2-Clause), a fast non-cryptographic 128-bit hash, written
// from its published specification (doc/xxhash_spec.md and the reference xxhash.h); its outputs
// equal the reference's XXH3_128bits() and XXH3_128bits_withSecret() (test/cpp/hash128_test.cc
// checks the reference's own known answers). Why XXH3-128 rather than MurmurHash3_x64_128: it
// runs near memory speed on long inputs (the response cache hashes every input byte of a request,
// megabytes for images) and, unlike Murmur3, it takes a whole secret (not a 64-bit seed) that
// keys every byte it mixes, so a secret the clients never see keeps them from predicting keys.
//
// NOT a cryptographic hash: it does not resist an adversary who knows the secret (with the
// default secret anyone can construct collisions). Users that need keys clients cannot collide
// pass a random secret (Hash128RandomSecret()), which is what the response cache does.
//
// Streaming: Update() any number of spans, then Final(); the result equals the one-shot hash of
// the spans concatenated, whatever the split. A state is one thread's; it never allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace infernode {

/** A 128-bit hash, as the reference's XXH128_hash_t. */
struct Hash128 {
  uint64_t low64 = 0;
  uint64_t high64 = 0;
  bool operator==(const Hash128& other) const { return low64 == other.low64 && high64 == other.high64; }
  bool operator!=(const Hash128& other) const { return !(*this == other); }
};

/** The size of the reference's default secret, and of the secrets Hash128RandomSecret() draws. */
constexpr size_t kHash128SecretSize = 192;
/** The smallest secret XXH3 accepts (XXH3_SECRET_SIZE_MIN). */
constexpr size_t kHash128MinSecretSize = 136;

using Hash128Secret = std::array<uint8_t, kHash128SecretSize>;

/** The reference's default secret (XXH3_kSecret): XXH3_128bits() uses it. */
const Hash128Secret& Hash128DefaultSecret();

/** A secret drawn from the operating system's random source (std::random_device). */
Hash128Secret Hash128RandomSecret();

/** XXH3_128bits_withSecret of one span (`secret_size` >= kHash128MinSecretSize). */
Hash128 Hash128Of(const void* data, size_t size, const uint8_t* secret, size_t secret_size);

/** XXH3_128bits (the default secret). */
inline Hash128 Hash128Of(const void* data, size_t size) {
  return Hash128Of(data, size, Hash128DefaultSecret().data(), kHash128SecretSize);
}

/**
 * The streaming form (the reference's XXH3_state_t with the 128-bit digest). The secret is
 * borrowed: it must outlive the state and not change.
 */
class Hash128State {
 public:
  /** With the default secret. */
  Hash128State();
  /** With a caller's secret (`secret_size` >= kHash128MinSecretSize). */
  Hash128State(const uint8_t* secret, size_t secret_size);

  void Update(const void* data, size_t size);
  /** The hash of everything updated so far; the state stays usable (more Update()s may follow). */
  Hash128 Final() const;

 private:
  static constexpr size_t kStripeBytes = 64;
  static constexpr size_t kBufferBytes = 256;  // XXH3_INTERNALBUFFER_SIZE: 4 stripes, >= 240

  // Accumulates `stripes` stripes of `input` into `acc`, scrambling at block ends; returns the
  // end of what it consumed.
  const uint8_t* ConsumeStripes(uint64_t* acc, size_t* stripes_so_far, const uint8_t* input, size_t stripes) const;

  alignas(64) uint64_t acc_[8];
  alignas(64) uint8_t buffer_[kBufferBytes];
  const uint8_t* secret_;
  size_t secret_limit_;  // secret size - one stripe
  size_t stripes_per_block_;
  size_t stripes_so_far_ = 0;  // in the current block
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

/** The canonical form (XXH128_canonicalFromHash: high64 then low64, big-endian) in lower-case hex. */
void Hash128ToHex(const Hash128& hash, char out[32]);

}  // namespace infernode
