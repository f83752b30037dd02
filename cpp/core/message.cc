#include "core/message.h"

namespace infernode {

std::string Clip(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is cut in half.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "\xE2\x80\xA6 (" + std::to_string(text.size()) + " bytes)";
}

std::string ClippedShape(const Shape& shape, size_t max) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    std::string dim = (i > 0 ? "," : "") + std::to_string(shape[i]);
    if (text.size() - 1 + dim.size() > max) {
      return text + ",\xE2\x80\xA6] (" + std::to_string(shape.size()) + " dims)";
    }
    text += dim;
  }
  return text + "]";
}

}  // namespace infernode
