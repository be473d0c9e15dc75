//===- JsonDepth.h - refuse deep JSON before a recursive parser sees it -*- C++
//-*-===//
//
// nlohmann/json parses recursively, so hostile nesting could overflow the
// stack. The frontend (model files) and the runtime (bundle manifests) scan
// the text with this first; it counts brackets outside strings and cannot
// recurse or fail itself.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_JSONDEPTH_H
#define TCC_RUNTIME_JSONDEPTH_H

#include <cstddef>
#include <string_view>

namespace tcc {

/// The offset of the first bracket nested deeper than `maxDepth`, or npos.
inline size_t findNestingBeyond(std::string_view text, int maxDepth) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

} // namespace tcc

#endif // TCC_RUNTIME_JSONDEPTH_H
