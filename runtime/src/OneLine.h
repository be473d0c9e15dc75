//===- OneLine.h - keeping error messages on one line -----------*- C++ -*-===//
//
// Error messages quote names from bundles and files (tensor names, blob
// names, dtypes), which may hold any character. Every error is one line, so
// the places that hand messages out (the C API, the CLIs, the bundle reader)
// pass them through oneLine.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_ONELINE_H
#define TCC_RUNTIME_ONELINE_H

#include <string>

namespace tcc {

/// `text` with every control character (newlines, tabs, NUL, DEL) written
/// as \xNN; other bytes, UTF-8 included, are kept.
inline std::string oneLine(const std::string &text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) {
      out += (char)c;
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

} // namespace tcc

#endif // TCC_RUNTIME_ONELINE_H
