// The one BYTES walker (core/bytes_tensor.h): every malformed buffer fails with INVALID_ARG and a
// message naming the element and offset; well-formed ones yield views, counts and offsets.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes_tensor.h"
#include "harness.h"

using namespace infernode;

namespace {
std::vector<uint8_t> Serialize(const std::vector<std::string>& elements) {
  std::vector<uint8_t> out;
  for (const std::string& e : elements) {
    const uint32_t len = static_cast<uint32_t>(e.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}
}  // namespace

TEST(BytesWalkerYieldsEachElement) {
  const std::vector<uint8_t> data = Serialize({"hi", "", "there"});
  std::vector<std::string_view> elements;
  EXPECT_TRUE(SplitSerializedBytes(data.data(), data.size(), &elements).IsOk());
  EXPECT_EQ(elements.size(), 3u);
  EXPECT_EQ(std::string(elements.at(0)), std::string("hi"));
  EXPECT_EQ(std::string(elements.at(1)), std::string(""));
  EXPECT_EQ(std::string(elements.at(2)), std::string("there"));
  int64_t count = -1;
  EXPECT_TRUE(CountSerializedBytes(data.data(), data.size(), &count).IsOk());
  EXPECT_EQ(count, 3);
  std::vector<uint64_t> offsets;
  EXPECT_TRUE(SerializedBytesOffsets(data.data(), data.size(), &offsets).IsOk());
  EXPECT_TRUE((offsets == std::vector<uint64_t>{0, 6, 10, 19}));
}

TEST(BytesWalkerAcceptsAnEmptyBuffer) {
  int64_t count = -1;
  EXPECT_TRUE(CountSerializedBytes(nullptr, 0, &count).IsOk());
  EXPECT_EQ(count, 0);
  std::vector<uint64_t> offsets;
  EXPECT_TRUE(SerializedBytesOffsets(nullptr, 0, &offsets).IsOk());
  EXPECT_TRUE((offsets == std::vector<uint64_t>{0}));
}

TEST(BytesWalkerRejectsAnElementPastTheEnd) {
  const uint8_t past_end[] = {2, 0, 0, 0, 'h', 'i', 9, 0, 0, 0, 'x'};
  int64_t count = 0;
  const Status s = CountSerializedBytes(past_end, sizeof(past_end), &count);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "BYTES element 1 at byte offset 6 declares 9 bytes but only 1 remain");
  const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(CountSerializedBytes(huge, sizeof(huge), &count).Code(), StatusCode::kInvalidArg);
  std::vector<std::string_view> elements;
  EXPECT_EQ(SplitSerializedBytes(past_end, sizeof(past_end), &elements).Code(), StatusCode::kInvalidArg);
  std::vector<uint64_t> offsets;
  EXPECT_EQ(SerializedBytesOffsets(past_end, sizeof(past_end), &offsets).Code(), StatusCode::kInvalidArg);
}

TEST(BytesWalkerRejectsTrailingBytes) {
  const uint8_t trailing[] = {1, 0, 0, 0, 'a', 7, 0};
  int64_t count = 0;
  const Status s = CountSerializedBytes(trailing, sizeof(trailing), &count);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "BYTES element 1 at byte offset 5: 2 trailing byte(s)");
  const uint8_t short_len[] = {1, 0};
  EXPECT_EQ(CountSerializedBytes(short_len, sizeof(short_len), &count).Code(), StatusCode::kInvalidArg);
}

TEST(BytesWalkerStopsAtTheFirstBadElement) {
  const uint8_t bad[] = {1, 0, 0, 0, 'a', 5, 0, 0, 0, 'b'};
  SerializedBytesWalker walker(bad, sizeof(bad));
  std::string_view element;
  EXPECT_TRUE(walker.Next(&element));
  EXPECT_EQ(std::string(element), std::string("a"));
  EXPECT_TRUE(!walker.Next(&element));
  EXPECT_TRUE(!walker.Next(&element));  // stays stopped
  EXPECT_EQ(walker.Count(), 1);
  EXPECT_EQ(walker.Offset(), 5u);
  EXPECT_EQ(walker.Error().Code(), StatusCode::kInvalidArg);
}
