#include <algorithm>
#include <string>

#include "harness.h"

// The argument, when given, is a comma-separated list of substrings: a test runs when its name
// contains any of them ("Scheduler,Queue" runs both families).
bool Selected(const std::string& filter, const std::string& name) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (start <= filter.size()) {
    const size_t end = std::min(filter.find(',', start), filter.size());
    const std::string part = filter.substr(start, end - start);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  int passed = 0;
  int failed = 0;
  for (const auto& test : harness::Registry()) {
    if (!Selected(filter, test.name)) continue;
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
