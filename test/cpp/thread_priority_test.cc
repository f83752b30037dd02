// LowerThreadPriority changes only the calling thread, by the increment asked, capped at 19.
#include <algorithm>
#include <thread>

#include "core/thread_priority.h"
#include "harness.h"

using namespace infernode;

TEST(ThreadPriorityChangesOnlyTheCallingThread) {
  const int before = CurrentThreadNice();
  int inside = -100;
  std::thread worker([&] {
    EXPECT_TRUE(LowerThreadPriority(5));
    inside = CurrentThreadNice();
  });
  worker.join();
#if defined(__linux__)
  const int expected = std::min(19, before + 5);
  EXPECT_EQ(inside, expected);
#endif
  EXPECT_EQ(CurrentThreadNice(), before);
}

TEST(ThreadPriorityIsCappedAt19AndZeroDoesNothing) {
  int capped = -100;
  int unchanged = -100;
  const int before = CurrentThreadNice();
  std::thread worker([&] {
    EXPECT_TRUE(LowerThreadPriority(0));
    unchanged = CurrentThreadNice();
    EXPECT_TRUE(LowerThreadPriority(40));
    capped = CurrentThreadNice();
  });
  worker.join();
  EXPECT_EQ(unchanged, before);
#if defined(__linux__)
  EXPECT_EQ(capped, 19);
#endif
}
