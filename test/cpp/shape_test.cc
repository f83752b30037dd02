#include <cstdint>
#include <cstring>
#include <limits>

#include "core/shape.h"
#include "harness.h"

using namespace infernode;

TEST(ElementCountMultipliesDims) {
  int64_t count = 0;
  EXPECT_TRUE(ElementCount({2, 3, 4}, &count).IsOk());
  EXPECT_EQ(count, 24);
  EXPECT_TRUE(ElementCount({}, &count).IsOk());
  EXPECT_EQ(count, 1);
  EXPECT_TRUE(ElementCount({5, 0}, &count).IsOk());
  EXPECT_EQ(count, 0);
}

TEST(ElementCountRejectsNegativeAndOverflow) {
  int64_t count = 0;
  EXPECT_EQ(ElementCount({2, -1}, &count).Code(), StatusCode::kInvalidArg);
  const int64_t big = std::numeric_limits<int64_t>::max() / 2 + 1;
  EXPECT_EQ(ElementCount({big, 2}, &count).Code(), StatusCode::kInvalidArg);
  EXPECT_EQ(ElementCount({0, big, big}, &count).Code(), StatusCode::kSuccess);
}

TEST(ByteSizeDetectsOverflow) {
  uint64_t bytes = 0;
  EXPECT_TRUE(ByteSize(DataType::kFp32, {3, 2}, &bytes).IsOk());
  EXPECT_EQ(bytes, 24u);
  EXPECT_EQ(ByteSize(DataType::kFp64, {std::numeric_limits<int64_t>::max() / 4}, &bytes).Code(),
            StatusCode::kInvalidArg);
  EXPECT_EQ(ByteSize(DataType::kBytes, {1}, &bytes).Code(), StatusCode::kInvalidArg);
}

TEST(ShapeMatchesHonoursWildcards) {
  EXPECT_TRUE(ShapeMatches({-1, 3}, {7, 3}));
  EXPECT_TRUE(!ShapeMatches({-1, 3}, {7, 4}));
  EXPECT_TRUE(!ShapeMatches({3}, {3, 1}));
}

TEST(DataTypeNamesRoundTrip) {
  EXPECT_EQ(std::string(DataTypeName(DataType::kBytes)), std::string("BYTES"));
  EXPECT_TRUE(DataTypeFromName("BF16") == DataType::kBf16);
  EXPECT_TRUE(DataTypeFromName("TYPE_FP32") == DataType::kInvalid);
  EXPECT_TRUE(DataTypeFromCode(99) == DataType::kInvalid);
  EXPECT_EQ(DataTypeByteSize(DataType::kFp16), 2u);
}

TEST(MapReshapeCarriesVariableDimsAcross) {
  EXPECT_TRUE(MapReshape({6}, {6}, {2, 3}) == (Shape{2, 3}));
  EXPECT_TRUE(MapReshape({2, 3}, {2, 3}, {6}) == (Shape{6}));
  EXPECT_TRUE(MapReshape({1}, {1}, {}) == (Shape{}));
  EXPECT_TRUE(MapReshape({5, 4}, {-1, 4}, {-1, 2, 2}) == (Shape{5, 2, 2}));
  EXPECT_TRUE(MapReshape({5, 2, 2}, {-1, 2, 2}, {-1, 4}) == (Shape{5, 4}));
  EXPECT_TRUE(MapReshape({3, 7}, {-1, -1}, {-1, 1, -1}) == (Shape{3, 1, 7}));
}
