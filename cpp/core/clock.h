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

}  // namespace infernode
