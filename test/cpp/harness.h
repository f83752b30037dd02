// A minimal test harness for the native unit tests (no network to fetch a framework; nothing
// here needs more). TEST registers a function; EXPECT_* record failures and go on.
// EXPECT_CONTAINS checks a substring (error messages). test_main.cc runs every test and prints
// "N passed, N failed".
#pragma once

#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/datatype.h"
#include "core/status.h"

namespace infernode {
inline std::ostream& operator<<(std::ostream& os, StatusCode code) { return os << static_cast<int>(code); }
inline std::ostream& operator<<(std::ostream& os, DataType dtype) { return os << static_cast<int>(dtype); }
}  // namespace infernode

namespace harness {

struct TestCase {
  const char* name;
  std::function<void()> fn;
};

inline std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

inline int& FailuresInCurrentTest() {
  static int failures = 0;
  return failures;
}

struct Registrar {
  Registrar(const char* name, std::function<void()> fn) { Registry().push_back({name, std::move(fn)}); }
};

inline void Fail(const char* file, int line, const std::string& what) {
  ++FailuresInCurrentTest();
  std::cerr << "    " << file << ":" << line << ": " << what << "\n";
}

}  // namespace harness

#define TEST(name)                                           \
  static void name();                                        \
  static ::harness::Registrar name##_registrar(#name, name); \
  static void name()

#define EXPECT_TRUE(cond)                                                \
  do {                                                                   \
    if (!(cond)) ::harness::Fail(__FILE__, __LINE__, "expected " #cond); \
  } while (false)

#define EXPECT_EQ(a, b)                                                       \
  do {                                                                        \
    const auto& va__ = (a);                                                   \
    const auto& vb__ = (b);                                                   \
    if (!(va__ == vb__)) {                                                    \
      std::ostringstream os__;                                                \
      os__ << "expected " #a " == " #b " (" << va__ << " vs " << vb__ << ")"; \
      ::harness::Fail(__FILE__, __LINE__, os__.str());                        \
    }                                                                         \
  } while (false)

#define EXPECT_CONTAINS(haystack, needle)                                                           \
  do {                                                                                              \
    const std::string hs__ = (haystack);                                                            \
    const std::string nd__ = (needle);                                                              \
    if (hs__.find(nd__) == std::string::npos) {                                                     \
      ::harness::Fail(__FILE__, __LINE__, "expected \"" + hs__ + "\" to contain \"" + nd__ + "\""); \
    }                                                                                               \
  } while (false)
