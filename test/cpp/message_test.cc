// Client text in error messages is clipped (core/message.h): names and shapes of any size
// make messages of bounded size, cut on whole UTF-8 characters.
#include <string>

#include "core/message.h"
#include "harness.h"

using namespace infernode;

TEST(ClipKeepsShortTextAndCutsLongText) {
  EXPECT_EQ(Clip("model"), std::string("model"));
  const std::string long_name(1 << 20, 'm');
  const std::string clipped = Clip(long_name);
  EXPECT_EQ(clipped, std::string(256, 'm') + "\xE2\x80\xA6 (1048576 bytes)");
  // "é" is two bytes: a cut inside it backs up to the character's start.
  EXPECT_EQ(Clip("a\xC3\xA9", 2), std::string("a\xE2\x80\xA6 (3 bytes)"));
}

TEST(ClippedShapeBoundsHugeShapes) {
  EXPECT_EQ(ClippedShape({2, -1, 3}), std::string("[2,-1,3]"));
  EXPECT_EQ(ClippedShape({}), std::string("[]"));
  const std::string huge = ClippedShape(Shape(1000000, 1));
  EXPECT_TRUE(huge.size() < 300);
  EXPECT_CONTAINS(huge, "[1,1,1,");
  EXPECT_CONTAINS(huge, ",\xE2\x80\xA6] (1000000 dims)");
}
