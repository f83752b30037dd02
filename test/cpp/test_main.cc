#include "harness.h"

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  int passed = 0;
  int failed = 0;
  for (const auto& test : harness::Registry()) {
    if (!filter.empty() && std::string(test.name).find(filter) == std::string::npos) continue;
    harness::FailuresInCurrentTest() = 0;
    test.fn();
    if (harness::FailuresInCurrentTest() == 0) {
      ++passed;
      std::cout << "  ok   " << test.name << "\n";
    } else {
      ++failed;
      std::cout << "  FAIL " << test.name << "\n";
    }
  }
  std::cout << "native: " << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
