#include "core/thread_priority.h"

#include <algorithm>
#include <cerrno>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace infernode {

#if defined(__linux__)

int CurrentThreadNice() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  return errno == 0 ? nice : 0;
}

bool LowerThreadPriority(int increment) {
  if (increment <= 0) return true;
  const int target = std::min(19, CurrentThreadNice() + increment);
  // Raising one's own nice value needs no privilege (lowering it would).
  return setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), target) == 0;
}

#else

int CurrentThreadNice() { return 0; }

bool LowerThreadPriority(int increment) { return increment <= 0; }

#endif

}  // namespace infernode
