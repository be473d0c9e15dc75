//===- GpuBundles.cpp - writes the GPU test bundles -----------------------===//
//
//   tcc-gpu-bundles KERNELS.ptx DIR
//
// Writes DIR/chain.tccb, DIR/gather.tccb, DIR/badptx.tccb (the chain model
// with a PTX error) and DIR/w.npy (the chain model's param), for
// gpu_cli_test.py to run through `tcc run` and `tcc bench`.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Npy.h"
#include "tests/gpu/GpuModels.h"

#include <iostream>

using namespace tcc;
using namespace tcc::gputest;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: tcc-gpu-bundles KERNELS.ptx DIR\n";
    return 1;
  }
  std::string ptx, dir = argv[2], error;
  if (!readText(argv[1], ptx)) {
    std::cerr << "tcc-gpu-bundles: cannot read " << argv[1] << "\n";
    return 1;
  }
  // The broken PTX: an instruction modifier that does not exist. (Any text
  // makes the other bundles, e.g. to learn whether a GPU is there.)
  std::string bad = ptx;
  if (size_t at = bad.find("add.rn.f32"); at != std::string::npos)
    bad.replace(at, 10, "add.zz.f32");

  auto write = [&](const std::string &name, const json &manifest,
                   const std::string &code) {
    bundle::BundleWriter w;
    w.addBlob("kernels.ptx", std::vector<uint8_t>(code.begin(), code.end()));
    if (!manifest["params"].empty())
      w.addBlob("param.w", floatBytes(paramW()));
    w.setManifest(manifest);
    if (!w.writeFile(dir + "/" + name, error)) {
      std::cerr << "tcc-gpu-bundles: " << error << "\n";
      return false;
    }
    return true;
  };
  npy::Array w;
  w.dtype = DType::F32;
  w.shape = {kN};
  w.data = floatBytes(paramW());
  if (!write("chain.tccb", chainModel(), ptx) ||
      !write("gather.tccb", gatherModel(), ptx) ||
      !write("badptx.tccb", chainModel(), bad))
    return 1;
  if (!npy::writeFile(dir + "/w.npy", w, error)) {
    std::cerr << "tcc-gpu-bundles: " << error << "\n";
    return 1;
  }
  return 0;
}
