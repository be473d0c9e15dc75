//===- NpyFuzzer.cpp - libFuzzer target for the .npy reader ---------------===//
//
// Feeds bytes to npy::parse (what `tcc run --input` reads). What parses must
// be consistent (data size = element count x element size, bools 0 or 1)
// and survive a round trip through serialize. Any crash, sanitizer report,
// leak or timeout is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace tcc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  npy::Array a;
  std::string error;
  if (!npy::parse(bytes, a, error)) {
    if (error.empty() || error.find('\n') != std::string::npos)
      std::abort(); // one line
    return 0;
  }
  uint64_t elements = 1;
  for (int64_t d : a.shape) {
    if (d < 0)
      std::abort();
    elements *= (uint64_t)d;
  }
  if (a.data.size() != elements * dtypeSize(a.dtype))
    std::abort();
  if (a.dtype == DType::Bool)
    for (uint8_t b : a.data)
      if (b > 1)
        std::abort();
  npy::Array back;
  if (!npy::parse(npy::serialize(a), back, error) || back.dtype != a.dtype ||
      back.shape != a.shape || back.data != a.data)
    std::abort();
  return 0;
}
