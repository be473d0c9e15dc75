//===- HipBackend.cpp - kernels from HSACO through the HIP runtime --------===//
//
// The sibling of CudaBackend.cpp for AMD GPUs. libtccrt never links
// libamdhip64: the HIP runtime is opened with dlopen on first use and every
// entry point comes from dlsym, so one libtccrt runs on machines with and
// without ROCm. The HIP headers are included for types and constants only.
//
// A context is one device and one non-blocking stream; all work of its
// models goes to that stream in order. HIP has a current device per thread
// rather than contexts: every call makes the context's device current for
// its duration and restores the caller's, so an application's own HIP state
// is left alone. Code objects are HSACO (ELF for amdgcn-amd-amdhsa), already
// compiled for the device's architecture.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Backend.h"
#include "runtime/src/Manifest.h"

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <dlfcn.h>

namespace tcc::rt {
namespace {

// The runtime entry points the backend uses: (member, hip_runtime_api.h
// name). HIP 6+ headers map some names to versioned symbols
// (hipGetDeviceProperties -> hipGetDevicePropertiesR0600, whose struct has
// another layout); decltype sees the header's prototype, and the name given
// to dlsym is the macro-expanded one, so both always agree. hipMalloc has
// C++ template overloads: its C prototype is named by the cast below.
#define TCC_HIP_ENTRY_POINTS(X)                                                \
  X(init, hipInit)                                                             \
  X(runtimeGetVersion, hipRuntimeGetVersion)                                   \
  X(getErrorName, hipGetErrorName)                                             \
  X(getErrorString, hipGetErrorString)                                         \
  X(getDeviceCount, hipGetDeviceCount)                                         \
  X(getDevice, hipGetDevice)                                                   \
  X(setDevice, hipSetDevice)                                                   \
  X(getDeviceProperties, hipGetDeviceProperties)                               \
  X(streamCreateWithFlags, hipStreamCreateWithFlags)                           \
  X(streamDestroy, hipStreamDestroy)                                           \
  X(streamSynchronize, hipStreamSynchronize)                                   \
  X(memAlloc, hipMalloc)                                                       \
  X(memFree, hipFree)                                                          \
  X(memGetInfo, hipMemGetInfo)                                                 \
  X(memcpyHtoDAsync, hipMemcpyHtoDAsync)                                       \
  X(memcpyDtoHAsync, hipMemcpyDtoHAsync)                                       \
  X(memcpyDtoDAsync, hipMemcpyDtoDAsync)                                       \
  X(memsetD8Async, hipMemsetD8Async)                                           \
  X(memsetD32Async, hipMemsetD32Async)                                         \
  X(pointerGetAttributes, hipPointerGetAttributes)                             \
  X(memGetAddressRange, hipMemGetAddressRange)                                 \
  X(moduleLoadData, hipModuleLoadData)                                         \
  X(moduleUnload, hipModuleUnload)                                             \
  X(moduleGetFunction, hipModuleGetFunction)                                   \
  X(funcGetAttribute, hipFuncGetAttribute)                                     \
  X(moduleLaunchKernel, hipModuleLaunchKernel)                                 \
  X(streamBeginCapture, hipStreamBeginCapture)                                 \
  X(streamEndCapture, hipStreamEndCapture)                                     \
  X(graphInstantiate, hipGraphInstantiate)                                     \
  X(graphLaunch, hipGraphLaunch)                                               \
  X(graphExecDestroy, hipGraphExecDestroy)                                     \
  X(graphDestroy, hipGraphDestroy)                                             \
  X(eventCreateWithFlags, hipEventCreateWithFlags)                             \
  X(eventDestroy, hipEventDestroy)                                             \
  X(eventRecord, hipEventRecord)                                               \
  X(eventElapsedTime, hipEventElapsedTime)

#define TCC_HIP_EXPANDED_NAME(symbol) TCC_HIP_STRING(symbol)
#define TCC_HIP_STRING(symbol) #symbol

/// HIP_VERSION encodes major * 10^7 + minor * 10^5 + patch.
constexpr int kVersionMajor = 10000000, kVersionMinor = 100000;
/// The oldest HIP whose runtime API has every entry point used here.
constexpr int kMinMajor = 5;

/// Names an entry point's C prototype: the identity, except that of the
/// overloads of hipMalloc it picks the C function.
template <typename Fn> Fn *cPrototype(Fn *fn) { return fn; }
inline auto cPrototype(hipError_t (*fn)(void **, size_t)) { return fn; }

/// The HIP runtime, loaded once per process and never unloaded (unloading a
/// runtime that may still own threads and mappings is not safe).
struct HipRuntime {
  bool loaded = false;
  OpenFailure failure = OpenFailure::Unavailable;
  std::string error;
  int version = 0;
#define TCC_HIP_MEMBER(member, symbol)                                         \
  decltype(cPrototype(&symbol)) member = nullptr;
  TCC_HIP_ENTRY_POINTS(TCC_HIP_MEMBER)
#undef TCC_HIP_MEMBER

  int major() const { return version / kVersionMajor; }

  /// "CALL: hipErrorName (description)".
  std::string describe(const char *call, hipError_t result) const {
    const char *name = getErrorName(result);
    const char *text = getErrorString(result);
    std::string out = std::string(call) + ": ";
    out += name && *name ? std::string(name)
                         : "hipError_t " + std::to_string((int)result);
    if (text && *text && (!name || std::strcmp(name, text) != 0))
      out += std::string(" (") + text + ")";
    return out;
  }

  /// True on success; otherwise sets `error` to describe(call, result).
  bool check(hipError_t result, const char *call, std::string &error) const {
    if (result == hipSuccess)
      return true;
    error = describe(call, result);
    return false;
  }

  /// Whether a hipMemoryType value read from the runtime means device memory:
  /// HIP 6 renumbered the enum (to CUDA's values), so the loaded runtime's
  /// version decides, not the headers'.
  bool isDeviceMemoryType(int type) const {
    return type == (major() >= 6 ? 2 : 1);
  }
};

HipRuntime loadRuntime() {
  HipRuntime d;
  void *lib = nullptr;
  for (const char *name : {"libamdhip64.so", "libamdhip64.so.7",
                           "libamdhip64.so.6", "libamdhip64.so.5"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!lib) {
    d.error = "no HIP runtime (libamdhip64.so not found)";
    return d;
  }
#define TCC_HIP_RESOLVE(member, symbol)                                        \
  d.member = reinterpret_cast<decltype(d.member)>(                             \
      dlsym(lib, TCC_HIP_EXPANDED_NAME(symbol)));                              \
  if (!d.member) {                                                             \
    d.error = "the HIP runtime lacks " TCC_HIP_EXPANDED_NAME(symbol);          \
    return d;                                                                  \
  }
  TCC_HIP_ENTRY_POINTS(TCC_HIP_RESOLVE)
#undef TCC_HIP_RESOLVE

  if (d.runtimeGetVersion(&d.version) != hipSuccess ||
      d.major() < std::max(kMinMajor, HIP_VERSION_MAJOR)) {
    d.error =
        "the HIP runtime is too old (version " + std::to_string(d.major()) +
        "." + std::to_string(d.version % kVersionMajor / kVersionMinor) +
        "; this libtccrt needs HIP " +
        std::to_string(std::max(kMinMajor, HIP_VERSION_MAJOR)) + ".0 or newer)";
    return d;
  }
  hipError_t r = d.init(0);
  if (r != hipSuccess) {
    // Without a GPU (no /dev/kfd) hipInit fails with one of these.
    int count = 0;
    if (r == hipErrorNoDevice || r == hipErrorInvalidDevice ||
        d.getDeviceCount(&count) == hipErrorNoDevice)
      d.error = "no HIP device";
    else
      d.error = d.describe("hipInit", r);
    return d;
  }
  d.loaded = true;
  return d;
}

/// The process's HIP runtime; loaded by the first caller, thread-safely.
const HipRuntime &runtime() {
  static const HipRuntime d = loadRuntime();
  return d;
}

/// Makes `device` current on this thread while alive, restoring the
/// caller's device afterwards.
class ScopedDevice {
public:
  ScopedDevice(const HipRuntime &d, int device) : d(d) {
    if (d.getDevice(&previous) != hipSuccess)
      previous = -1;
    if (previous != device)
      restore = d.setDevice(device) == hipSuccess && previous >= 0;
  }
  ~ScopedDevice() {
    if (restore)
      (void)d.setDevice(previous);
  }
  ScopedDevice(const ScopedDevice &) = delete;
  ScopedDevice &operator=(const ScopedDevice &) = delete;

private:
  const HipRuntime &d;
  int previous = -1;
  bool restore = false;
};

/// Device properties with room to spare: a runtime newer than the headers
/// must not write past what we hand it.
union DeviceProperties {
  hipDeviceProp_t props;
  char room[16384];
};

/// Whether `code` is an ELF file for AMD GPUs (64-bit, little-endian,
/// EM_AMDGPU), which is what a HSACO is.
bool isAmdGpuElf(const uint8_t *code, size_t size) {
  constexpr uint16_t kMachineAmdGpu = 224;
  return size >= 64 &&
         std::memcmp(code,
                     "\x7f"
                     "ELF",
                     4) == 0 &&
         code[4] == 2 && code[5] == 1 &&
         (uint16_t)(code[18] | code[19] << 8) == kMachineAmdGpu;
}

class HipModule : public Module {
public:
  HipModule(const HipRuntime &d, int device, hipModule_t module,
            std::vector<uint8_t> image, std::string name)
      : d(d), device(device), module(module), image(std::move(image)),
        name(std::move(name)) {}
  ~HipModule() override {
    ScopedDevice scope(d, device);
    (void)d.moduleUnload(module);
  }

  bool getKernel(const std::string &symbol, KernelHandle &out,
                 std::string &error) override {
    ScopedDevice scope(d, device);
    hipFunction_t f = nullptr;
    hipError_t r = d.moduleGetFunction(&f, module, symbol.c_str());
    if (r == hipErrorNotFound) {
      error = "kernel symbol '" + symbol + "' not found in code object '" +
              name + "'";
      return false;
    }
    if (!d.check(r, "hipModuleGetFunction", error)) {
      error = "kernel '" + symbol + "' in '" + name + "': " + error;
      return false;
    }
    out = f;
    return true;
  }

private:
  const HipRuntime &d;
  int device;
  hipModule_t module;
  std::vector<uint8_t> image; // the runtime may read it after loading
  std::string name;
};

class HipGraph : public Graph {
public:
  HipGraph(const HipRuntime &d, int device, hipStream_t stream,
           hipGraphExec_t exec)
      : d(d), device(device), stream(stream), exec(exec) {}
  ~HipGraph() override {
    ScopedDevice scope(d, device);
    (void)d.graphExecDestroy(exec);
  }
  bool launch(std::string &error) override {
    ScopedDevice scope(d, device);
    return d.check(d.graphLaunch(exec, stream), "hipGraphLaunch", error);
  }

private:
  const HipRuntime &d;
  int device;
  hipStream_t stream;
  hipGraphExec_t exec;
};

class HipBackend : public Backend {
public:
  HipBackend(const HipRuntime &d, int index) : d(d), index(index) {}
  ~HipBackend() override {
    if (!stream)
      return;
    ScopedDevice scope(d, index);
    for (hipEvent_t e : events)
      (void)d.eventDestroy(e);
    (void)d.streamDestroy(stream);
  }

  /// Reads the device's properties and makes the stream.
  bool open(OpenFailure &failure, std::string &error) {
    failure = OpenFailure::Device;
    int count = 0;
    hipError_t r = d.getDeviceCount(&count);
    if (r == hipErrorNoDevice || (r == hipSuccess && count == 0)) {
      failure = OpenFailure::Unavailable;
      error = "no HIP device";
      return false;
    }
    if (!d.check(r, "hipGetDeviceCount", error))
      return false;
    if (index < 0 || index >= count) {
      failure = OpenFailure::InvalidArgument;
      error = "HIP device " + std::to_string(index) +
              " does not exist (this machine has " + std::to_string(count) +
              ")";
      return false;
    }
    ScopedDevice scope(d, index);
    DeviceProperties p;
    std::memset(&p, 0, sizeof(p));
    if (!d.check(d.getDeviceProperties(&p.props, index),
                 "hipGetDeviceProperties", error))
      return false;
    name.assign(p.props.name, strnlen(p.props.name, sizeof(p.props.name)));
    arch.assign(p.props.gcnArchName,
                strnlen(p.props.gcnArchName, sizeof(p.props.gcnArchName)));
    sharedPerBlock = p.props.sharedMemPerBlock;
    return d.check(d.streamCreateWithFlags(&stream, hipStreamNonBlocking),
                   "hipStreamCreateWithFlags", error);
  }

  /// gfxNNN runs only on that architecture: HSACO is machine code.
  bool acceptsTarget(const std::string &target) const override {
    return bundle::hipArchMatches(arch, target);
  }

  std::string describe() const override {
    return "HIP device " + std::to_string(index) + " (" + name + ", " + arch +
           ")";
  }

  bool allocate(size_t bytes, void *&out, std::string &error) override {
    ScopedDevice scope(d, index);
    void *p = nullptr;
    // Callers want a distinct pointer even for 0 bytes.
    if (!d.check(d.memAlloc(&p, std::max<size_t>(bytes, 1)), "hipMalloc",
                 error)) {
      error = "cannot allocate " + std::to_string(bytes) + " bytes on " +
              describe() + ": " + error;
      return false;
    }
    out = p;
    return true;
  }

  void deallocate(void *ptr) override {
    ScopedDevice scope(d, index);
    (void)d.memFree(ptr);
  }

  bool availableMemory(uint64_t &bytes, std::string &what) override {
    ScopedDevice scope(d, index);
    size_t free = 0, total = 0;
    if (d.memGetInfo(&free, &total) != hipSuccess)
      return false;
    bytes = free;
    what = "free device memory";
    return true;
  }

  bool copyToDevice(void *dst, const void *src, size_t bytes,
                    std::string &error) override {
    if (!bytes)
      return true;
    ScopedDevice scope(d, index);
    // Pageable host memory: the call may return before the copy is done.
    return checkRange(dst, bytes, "destination", error) &&
           d.check(
               d.memcpyHtoDAsync(dst, const_cast<void *>(src), bytes, stream),
               "hipMemcpyHtoDAsync", error) &&
           synchronize(error);
  }

  bool copyToHost(void *dst, const void *src, size_t bytes,
                  std::string &error) override {
    if (!bytes)
      return true;
    ScopedDevice scope(d, index);
    return checkRange(src, bytes, "source", error) &&
           d.check(
               d.memcpyDtoHAsync(dst, const_cast<void *>(src), bytes, stream),
               "hipMemcpyDtoHAsync", error) &&
           synchronize(error);
  }

  bool copyOnDevice(void *dst, const void *src, size_t bytes,
                    std::string &error) override {
    if (!bytes)
      return true;
    ScopedDevice scope(d, index);
    return d.check(
        d.memcpyDtoDAsync(dst, const_cast<void *>(src), bytes, stream),
        "hipMemcpyDtoDAsync", error);
  }

  bool fillZero(void *dst, size_t bytes, std::string &error) override {
    if (!bytes)
      return true;
    ScopedDevice scope(d, index);
    if (bytes % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0)
      return d.check(d.memsetD32Async(dst, 0, bytes / 4, stream),
                     "hipMemsetD32Async", error);
    return d.check(d.memsetD8Async(dst, 0, bytes, stream), "hipMemsetD8Async",
                   error);
  }

  std::unique_ptr<Module> loadModule(const uint8_t *code, size_t size,
                                     const std::string &blobName,
                                     std::string &error) override {
    // hipModuleLoadData has no size argument: it must not be handed
    // anything but an ELF file.
    if (!isAmdGpuElf(code, size)) {
      error = "code object '" + blobName +
              "' is not an AMD GPU code object (HSACO: an ELF file for "
              "amdgcn-amd-amdhsa)";
      return nullptr;
    }
    std::vector<uint8_t> image(code, code + size);
    ScopedDevice scope(d, index);
    hipModule_t module = nullptr;
    hipError_t r = d.moduleLoadData(&module, image.data());
    if (r != hipSuccess) {
      error = "cannot load HSACO '" + blobName + "' on " + describe() + ": " +
              d.describe("hipModuleLoadData", r);
      return nullptr;
    }
    return std::make_unique<HipModule>(d, index, module, std::move(image),
                                       blobName);
  }

  bool launch(KernelHandle, void **, size_t, int64_t,
              std::string &error) override {
    error = "HIP kernels are launched on a grid of blocks";
    return false;
  }

  bool synchronize(std::string &error) override {
    // A kernel's memory fault usually ends the process inside the HIP
    // runtime before this returns; other failures are reported here.
    ScopedDevice scope(d, index);
    return d.check(d.streamSynchronize(stream), "hipStreamSynchronize", error);
  }

  bool prepareKernel(KernelHandle kernel, const KernelUse &use,
                     std::string &error) override {
    ScopedDevice scope(d, index);
    auto f = static_cast<hipFunction_t>(kernel);
    std::string what = "kernel '" + use.name + "'";
    // HIP cannot list a kernel's parameters, so their count is not checked
    // here (the CUDA backend does).
    if (use.numTensorMaps) {
      error = what + " takes tensor maps, which are CUDA's (TMA)";
      return false;
    }
    int staticShared = 0, maxThreads = 0, registers = 0;
    if (!functionAttribute(f, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                           staticShared, what, error) ||
        !functionAttribute(f, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                           maxThreads, what, error) ||
        !functionAttribute(f, HIP_FUNC_ATTRIBUTE_NUM_REGS, registers, what,
                           error))
      return false;
    // AMD GPUs need no opt-in for dynamic LDS: the limit is the device's.
    uint64_t shared = (uint64_t)use.sharedBytes + (uint64_t)staticShared;
    if (shared > sharedPerBlock) {
      error = what + " needs " + std::to_string(shared) +
              " bytes of shared memory a block (" +
              std::to_string(use.sharedBytes) + " dynamic, " +
              std::to_string(staticShared) + " static) but " + describe() +
              " has at most " + std::to_string(sharedPerBlock);
      return false;
    }
    if (!use.launched)
      return true;
    // The code object fixes the largest block (its max flat work-group
    // size, 256 unless the compiler declared more).
    if (use.maxBlockThreads > (uint64_t)maxThreads) {
      error = what + " runs at most " + std::to_string(maxThreads) +
              " threads a block on " + describe() + " (it uses " +
              std::to_string(registers) +
              " registers a thread) but a launch asks for " +
              std::to_string(use.maxBlockThreads);
      return false;
    }
    // HSA dispatches count threads, not blocks, in 32 bits a dimension.
    for (int i = 0; i < 3; ++i)
      if (use.maxGridThreads[i] > UINT32_MAX) {
        error = what + ": a launch runs " +
                std::to_string(use.maxGridThreads[i]) + " threads in " +
                "xyz"[i] + " but AMD GPUs run at most " +
                std::to_string(UINT32_MAX) + " a dimension";
        return false;
      }
    return true;
  }

  bool launchBlocks(KernelHandle kernel, void **args, size_t numArgs,
                    const TensorMapArg *, size_t numMaps,
                    const std::array<uint32_t, 3> &grid,
                    const std::array<uint32_t, 3> &block, uint32_t sharedBytes,
                    const std::array<uint32_t, 3> & /*cluster*/,
                    bool /*overlapPrevious*/, std::string &error) override {
    // The manifest allows tensor maps on CUDA launches only.
    if (numMaps) {
      error = "tensor maps are CUDA's (TMA); " + describe() + " has none";
      return false;
    }
    // hipModuleLaunchKernel wants the address of each parameter's value.
    params.resize(numArgs);
    for (size_t i = 0; i < numArgs; ++i)
      params[i] = &args[i];
    ScopedDevice scope(d, index);
    return d.check(d.moduleLaunchKernel(static_cast<hipFunction_t>(kernel),
                                        grid[0], grid[1], grid[2], block[0],
                                        block[1], block[2], sharedBytes, stream,
                                        params.data(), nullptr),
                   "hipModuleLaunchKernel", error);
  }

  bool checkBuffer(const void *ptr, size_t bytes, std::string &error) override {
    if (!bytes)
      return true;
    ScopedDevice scope(d, index);
    return checkRange(ptr, bytes, "buffer", error);
  }

  std::unique_ptr<Graph>
  capture(const std::function<bool(std::string &)> &enqueue,
          std::string &error) override {
    ScopedDevice scope(d, index);
    // Thread-local mode: only this thread's capture-unsafe calls (which the
    // runtime does not make while enqueueing) would invalidate it.
    if (!d.check(d.streamBeginCapture(stream, hipStreamCaptureModeThreadLocal),
                 "hipStreamBeginCapture", error))
      return nullptr;
    bool queued = enqueue(error);
    hipGraph_t graph = nullptr;
    hipError_t ended = d.streamEndCapture(stream, &graph);
    if (!queued || !d.check(ended, "hipStreamEndCapture", error)) {
      if (graph)
        (void)d.graphDestroy(graph);
      return nullptr;
    }
    hipGraphExec_t exec = nullptr;
    hipError_t made = d.graphInstantiate(&exec, graph, nullptr, nullptr, 0);
    (void)d.graphDestroy(graph); // the executable graph is independent of it
    if (!d.check(made, "hipGraphInstantiate", error))
      return nullptr;
    return std::make_unique<HipGraph>(d, index, stream, exec);
  }

  bool hasDeviceTimer() const override { return true; }

  bool startTimer(size_t count, std::string &error) override {
    ScopedDevice scope(d, index);
    while (events.size() < count) {
      hipEvent_t e = nullptr;
      if (!d.check(d.eventCreateWithFlags(&e, hipEventDefault),
                   "hipEventCreateWithFlags", error))
        return false;
      events.push_back(e);
    }
    return true;
  }

  bool recordTimestamp(size_t i, std::string &error) override {
    if (i >= events.size()) {
      error = "timestamp " + std::to_string(i) + " was not made";
      return false;
    }
    ScopedDevice scope(d, index);
    return d.check(d.eventRecord(events[i], stream), "hipEventRecord", error);
  }

  bool elapsedMs(size_t from, size_t to, double &ms,
                 std::string &error) override {
    if (from >= events.size() || to >= events.size()) {
      error = "timestamp was not made";
      return false;
    }
    ScopedDevice scope(d, index);
    float value = 0;
    if (!d.check(d.eventElapsedTime(&value, events[from], events[to]),
                 "hipEventElapsedTime", error))
      return false;
    ms = value;
    return true;
  }

private:
  bool functionAttribute(hipFunction_t f, hipFunction_attribute a, int &out,
                         const std::string &what, std::string &error) {
    if (d.check(d.funcGetAttribute(&out, a, f), "hipFuncGetAttribute", error))
      return true;
    error = what + ": " + error;
    return false;
  }

  /// Whether [ptr, ptr + bytes) lies in one allocation of this device's
  /// memory (device or managed), so that a kernel or copy cannot stray.
  bool checkRange(const void *ptr, size_t bytes, const char *what,
                  std::string &error) {
    hipPointerAttribute_t attrs;
    std::memset(&attrs, 0, sizeof(attrs));
    // Unknown (host) pointers fail the call on HIP 5 and read as
    // "unregistered" on HIP 6: both mean the same here.
    bool known = d.pointerGetAttributes(&attrs, ptr) == hipSuccess;
#if HIP_VERSION_MAJOR >= 6
    int type = attrs.type;
#else
    int type = attrs.memoryType;
#endif
    if (!known || (!attrs.isManaged && !d.isDeviceMemoryType(type))) {
      error = std::string(what) + " is not HIP device memory (use " +
              "tccrt_malloc or hipMalloc on " + describe() + ")";
      return false;
    }
    if (!attrs.isManaged && attrs.device != index) {
      error = std::string(what) + " is memory of HIP device " +
              std::to_string(attrs.device) + ", not of " + describe();
      return false;
    }
    hipDeviceptr_t base = nullptr;
    size_t size = 0;
    hipError_t r = d.memGetAddressRange(&base, &size, const_cast<void *>(ptr));
    if (r != hipSuccess) {
      if (attrs.isManaged) // the range of managed memory may be unknown
        return true;
      d.check(r, "hipMemGetAddressRange", error);
      error = std::string(what) + ": " + error;
      return false;
    }
    uint64_t offset =
        reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(base);
    if (size && (offset > size || bytes > size - offset)) {
      error = std::string(what) + " of " + std::to_string(bytes) +
              " bytes runs past the end of its allocation (" +
              std::to_string(size - std::min<uint64_t>(offset, size)) +
              " bytes left)";
      return false;
    }
    return true;
  }

  const HipRuntime &d;
  int index;
  hipStream_t stream = nullptr;
  std::string name, arch;
  uint64_t sharedPerBlock = 0;
  std::vector<void *> params;
  std::vector<hipEvent_t> events;
};

} // namespace

std::unique_ptr<Backend> createHipBackend(int index, OpenFailure &failure,
                                          std::string &error) {
  const HipRuntime &d = runtime();
  if (!d.loaded) {
    failure = d.failure;
    error = d.error;
    return nullptr;
  }
  auto backend = std::make_unique<HipBackend>(d, index);
  if (!backend->open(failure, error))
    return nullptr;
  return backend;
}

} // namespace tcc::rt
