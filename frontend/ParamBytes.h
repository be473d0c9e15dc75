//===- ParamBytes.h - a param's bytes, owned or mapped ------------*- C++
//-*-===//
//
// Weights given in safetensors files are not copied: a param's bytes are a
// read-only view of the mapped file, which the view keeps alive, and the
// bundle writer streams them from there. Initialisers that compute their
// values (literals, fills, random) own theirs.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTEND_PARAMBYTES_H
#define TCC_FRONTEND_PARAMBYTES_H

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tcc {

class ParamBytes {
public:
  /// Makes the bytes owned: `n` zero bytes, writable through data().
  void resize(size_t n) {
    keep.reset();
    view = nullptr;
    viewSize = 0;
    owned.assign(n, 0);
  }
  /// Makes the bytes the `n` bytes at `p`, valid while `owner` lives.
  void setView(std::shared_ptr<const void> owner, const uint8_t *p, size_t n) {
    owned.clear();
    owned.shrink_to_fit();
    keep = std::move(owner);
    view = p;
    viewSize = n;
  }
  /// The owned bytes, to fill after resize(); a mapped view is read-only.
  uint8_t *mutableData() {
    assert(!keep && "a mapped param's bytes are read-only");
    return owned.data();
  }
  const uint8_t *data() const { return keep ? view : owned.data(); }
  size_t size() const { return keep ? viewSize : owned.size(); }
  uint8_t operator[](size_t i) const { return data()[i]; }
  bool operator==(const std::vector<uint8_t> &other) const {
    return size() == other.size() &&
           std::equal(other.begin(), other.end(), data());
  }

private:
  std::vector<uint8_t> owned;
  std::shared_ptr<const void> keep;
  const uint8_t *view = nullptr;
  size_t viewSize = 0;
};

} // namespace tcc

#endif // TCC_FRONTEND_PARAMBYTES_H
