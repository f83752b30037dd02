// The clocks of the native core: a monotonic one for durations and deadlines, the wall clock
// for timestamps reported to clients (last_inference).
#pragma once

#include <chrono>
#include <cstdint>

namespace infernode {

inline uint64_t SteadyNowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

inline uint64_t WallNowMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// The longest wait the schedulers count: 2^52 µs, about 142 years. A config's batching delay or
// sequence idle time may be anything up to 2^64 - 1 µs (uint64 in Triton's ModelConfig); one
// beyond this waits this long instead, which never ends while a server runs, and keeps the
// schedulers' arithmetic in ns (delay * 1000, now + wait, condition_variable::wait_for's
// int64 deadline) far from overflowing.
constexpr uint64_t kLongestWaitUs = uint64_t{1} << 52;

inline uint64_t LongestWaitUs(uint64_t us) { return us < kLongestWaitUs ? us : kLongestWaitUs; }

// When something waiting `timeout_us` from `now_ns` (steady clock) expires; 0 for no timeout. A
// timeout too long to count in ns (up to 2^64 - 1 µs from in-process callers or a config) never
// expires rather than wrapping to a deadline already past.
inline uint64_t DeadlineNs(uint64_t now_ns, uint64_t timeout_us) {
  if (timeout_us == 0 || timeout_us > (UINT64_MAX - now_ns) / 1000) return 0;
  return now_ns + timeout_us * 1000;
}

}  // namespace infernode
