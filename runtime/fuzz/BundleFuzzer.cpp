//===- BundleFuzzer.cpp - libFuzzer target for bundles given to libtccrt --===//
//
// Feeds bytes to tccrt_model_load_memory on a host context, then binds and
// runs what loads. The first byte picks how the rest becomes a bundle, so
// that mutations reach past the checksums:
//   0: the bytes as they are (truncations, flipped bytes, bad magic);
//   1: the bytes with the header's and the manifest's checksums recomputed
//      (lying file, manifest and blob sizes and offsets);
//   2: "MANIFEST\0BLOB" packed by BundleWriter, so the blob table is right
//      and the manifest schema is what is fuzzed.
// Any crash, sanitizer report, leak or timeout is a bug: every input must
// load, or fail with a status and a one-line message.
//
// A bundle's code objects are machine code that libtccrt runs (tccrt.h:
// "load only bundles you trust"), so bundles with a code table are parsed
// and validated but not loaded: dlopen of mutated ELF files is not part of
// what the runtime can defend.
//
//===----------------------------------------------------------------------===//
#include "runtime/include/tccrt.h"
#include "runtime/src/Bundle.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tcc::bundle;

namespace {

tccrt_context *ctx = nullptr;

void putLE(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t getLE(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/// Mode 1: recomputes the checksums the header holds, when the manifest
/// range it states lies inside the bytes.
void fixChecksums(std::vector<uint8_t> &b) {
  if (b.size() < kHeaderSize)
    return;
  uint64_t offset = getLE(&b[16]), size = getLE(&b[24]);
  if (offset <= b.size() && size <= b.size() - offset)
    putLE(&b[32], fnv1a64(&b[offset], size));
  putLE(&b[56], fnv1a64(b.data(), 56));
}

/// Mode 2: the manifest text up to the first NUL, one blob after it.
std::vector<uint8_t> pack(const uint8_t *data, size_t size) {
  const uint8_t *nul = (const uint8_t *)std::memchr(data, 0, size);
  size_t textSize = nul ? (size_t)(nul - data) : size;
  nlohmann::json manifest = nlohmann::json::parse(
      data, data + textSize, nullptr, /*allow_exceptions=*/false);
  BundleWriter w;
  if (nul)
    w.addBlob("b", std::vector<uint8_t>(nul + 1, data + size));
  w.setManifest(manifest.is_discarded() ? nlohmann::json::object() : manifest);
  return w.serialize();
}

/// Binds zeroed buffers to every input and output and runs the model.
void bindAndRun(tccrt_model *model) {
  size_t inputs = 0, outputs = 0;
  tccrt_model_num_inputs(model, &inputs);
  tccrt_model_num_outputs(model, &outputs);
  std::vector<void *> buffers;
  for (size_t i = 0; i < inputs + outputs; ++i) {
    tccrt_tensor_info info;
    bool input = i < inputs;
    if ((input ? tccrt_model_input_info(model, i, &info)
               : tccrt_model_output_info(model, i - inputs, &info)) != TCCRT_OK)
      std::abort();
    void *p = nullptr;
    if (tccrt_malloc(ctx, info.bytes, &p) != TCCRT_OK)
      break;
    buffers.push_back(p);
    std::vector<uint8_t> zero(info.bytes);
    tccrt_copy_to_device(ctx, p, zero.data(), zero.size());
    tccrt_status s =
        input ? tccrt_model_bind_input(model, i, p, info.bytes)
              : tccrt_model_bind_output(model, i - inputs, p, info.bytes);
    if (s != TCCRT_OK)
      std::abort(); // sizes from the model's own info must bind
  }
  tccrt_model_run(model);
  double ms[2];
  tccrt_model_time_runs(model, 2, ms);
  // Per-launch timing walks the launch list with its own timestamps.
  size_t numLaunches = 0;
  if (tccrt_model_num_launches(model, &numLaunches) != TCCRT_OK)
    std::abort();
  for (size_t i = 0; i < numLaunches; ++i) {
    tccrt_launch_info info;
    if (tccrt_model_launch_info(model, i, &info) != TCCRT_OK)
      std::abort();
  }
  std::vector<double> launchMs(numLaunches), gapMs(numLaunches);
  tccrt_model_profile_runs(model, 1, launchMs.data(), gapMs.data(), ms);
  for (void *p : buffers)
    tccrt_free(ctx, p);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("TCC_NUM_THREADS", "2", 1);
  if (tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) != TCCRT_OK)
    std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int mode = data[0] % 3;
  std::vector<uint8_t> bytes;
  if (mode == 2)
    bytes = pack(data + 1, size - 1);
  else
    bytes.assign(data + 1, data + size);
  if (mode == 1)
    fixChecksums(bytes);

  std::string error;
  auto bundle = Bundle::parse(bytes, error);
  if (!bundle) {
    tccrt_model *model = nullptr;
    if (tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) ==
        TCCRT_OK)
      std::abort(); // the runtime must refuse what the parser refuses
    if (error.empty() || error.find('\n') != std::string::npos)
      std::abort(); // one line
    return 0;
  }
  const ModelDesc &d = bundle->model();
  if (!d.code.empty())
    return 0;
  // Models too large for a fuzzing process: the plan check is tested
  // elsewhere, and allocations over libFuzzer's limit count as crashes.
  uint64_t total = d.arenaBytes;
  for (const auto *list : {&d.inputs, &d.outputs, &d.params})
    for (const TensorDesc &t : *list)
      total += t.bytes;
  if (total > (uint64_t(16) << 20))
    return 0;
  tccrt_model *model = nullptr;
  if (tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) !=
      TCCRT_OK)
    std::abort(); // it parsed, has no code and fits: it must load
  bindAndRun(model);
  tccrt_model_destroy(model);
  return 0;
}
