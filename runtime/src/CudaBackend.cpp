//===- CudaBackend.cpp - kernels from PTX through the CUDA driver API -----===//
//
// libtccrt never links libcuda: the driver is opened with dlopen on first use
// and every entry point comes from cuGetProcAddress, so one libtccrt runs on
// machines with and without a GPU. cuda.h is included for types and constants
// only.
//
// A context is a device's primary context (the one the CUDA runtime shares)
// and one non-blocking stream; all work of its models goes to that stream in
// order. Every call makes the context current for its duration and restores
// the caller's, so an application's own CUDA state is left alone. PTX is
// compiled by the driver's JIT when a model loads.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Backend.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <dlfcn.h>

// cuGetProcAddress with its query result and the 12.0 prototypes below.
#if CUDA_VERSION < 12000
#error "the CUDA backend needs cuda.h from CUDA 12.0 or newer"
#endif
// Capture dependencies with edge data (CUDA 12.3): graphs that are not chains.
// cuda.h maps the plain names to the edge-data prototypes from CUDA 13 on
// (12.3-12.9 spell them _v3 and _v2); the driver has them from 12.3.
#define TCC_CUDA_CAPTURE_ORDER (CUDA_VERSION >= 13000)

namespace tcc::rt {
namespace {

// The driver entry points the backend uses: (member, cuda.h name). cuda.h
// maps some names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2);
// decltype sees the versioned prototype and cuGetProcAddress, given the plain
// name and a CUDA version, returns the matching symbol. The exception is a
// name that cuda.h maps to another function: cuGraphInstantiate is
// cuGraphInstantiateWithFlags there, but cuGetProcAddress("cuGraphInstantiate")
// is the old five-argument function, so that one is asked for by its own name.
#define TCC_CUDA_ENTRY_POINTS(X)                                               \
  X(init, cuInit)                                                              \
  X(getErrorName, cuGetErrorName)                                              \
  X(getErrorString, cuGetErrorString)                                          \
  X(deviceGetCount, cuDeviceGetCount)                                          \
  X(deviceGet, cuDeviceGet)                                                    \
  X(deviceGetName, cuDeviceGetName)                                            \
  X(deviceGetAttribute, cuDeviceGetAttribute)                                  \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain)                                \
  X(primaryCtxRelease, cuDevicePrimaryCtxRelease)                              \
  X(ctxGetCurrent, cuCtxGetCurrent)                                            \
  X(ctxPushCurrent, cuCtxPushCurrent)                                          \
  X(ctxPopCurrent, cuCtxPopCurrent)                                            \
  X(streamCreate, cuStreamCreate)                                              \
  X(streamDestroy, cuStreamDestroy)                                            \
  X(streamSynchronize, cuStreamSynchronize)                                    \
  X(memAlloc, cuMemAlloc)                                                      \
  X(memFree, cuMemFree)                                                        \
  X(memGetInfo, cuMemGetInfo)                                                  \
  X(memcpyHtoDAsync, cuMemcpyHtoDAsync)                                        \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync)                                        \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync)                                        \
  X(memsetD8Async, cuMemsetD8Async)                                            \
  X(memsetD32Async, cuMemsetD32Async)                                          \
  X(pointerGetAttributes, cuPointerGetAttributes)                              \
  X(moduleLoadDataEx, cuModuleLoadDataEx)                                      \
  X(moduleUnload, cuModuleUnload)                                              \
  X(moduleGetFunction, cuModuleGetFunction)                                    \
  X(funcGetAttribute, cuFuncGetAttribute)                                      \
  X(funcSetAttribute, cuFuncSetAttribute)                                      \
  X(launchKernel, cuLaunchKernel)                                              \
  X(streamBeginCapture, cuStreamBeginCapture)                                  \
  X(streamEndCapture, cuStreamEndCapture)                                      \
  X(graphInstantiate, cuGraphInstantiateWithFlags)                             \
  X(graphLaunch, cuGraphLaunch)                                                \
  X(graphExecDestroy, cuGraphExecDestroy)                                      \
  X(graphDestroy, cuGraphDestroy)                                              \
  X(eventCreate, cuEventCreate)                                                \
  X(eventDestroy, cuEventDestroy)                                              \
  X(eventRecord, cuEventRecord)                                                \
  X(eventElapsedTime, cuEventElapsedTime)

/// The oldest driver whose entry points have the prototypes of cuda.h 12+.
constexpr int kMinDriverVersion = 12000;

/// libcuda.so.1, loaded once per process and never unloaded (unloading a
/// driver that may still own threads and mappings is not safe).
struct Driver {
  bool loaded = false;
  OpenFailure failure = OpenFailure::Unavailable;
  std::string error;
  int version = 0;
#define TCC_CUDA_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  TCC_CUDA_ENTRY_POINTS(TCC_CUDA_MEMBER)
#undef TCC_CUDA_MEMBER
  /// CUDA 12.4+: lets loading check a kernel's parameter list; optional.
  CUresult (*funcGetParamInfo)(CUfunction, size_t, size_t *,
                               size_t *) = nullptr;
  /// Encodes the tensor maps of TMA kernels; optional, so that a driver
  /// without it still runs every other launch.
  decltype(&cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;
  decltype(&cuTensorMapEncodeIm2col) tensorMapEncodeIm2col = nullptr;
  /// Launches with attributes (programmatic dependent launch); optional:
  /// without it every launch waits for the one before.
  decltype(&cuLaunchKernelEx) launchKernelEx = nullptr;
  /// CUDA 12.3+ (asked for at that version, whose prototypes cuda.h 13
  /// keeps): capture dependencies with edge data, which let a recorded
  /// graph's launches wait only for what they share memory with; optional:
  /// without them a graph is a chain.
#if TCC_CUDA_CAPTURE_ORDER
  decltype(&cuStreamGetCaptureInfo) streamGetCaptureInfo = nullptr;
  decltype(&cuStreamUpdateCaptureDependencies) streamUpdateCaptureDependencies =
      nullptr;
#endif

  /// "CALL: CUDA_ERROR_NAME (description)".
  std::string describe(const char *call, CUresult result) const {
    const char *name = nullptr, *text = nullptr;
    std::string out = std::string(call) + ": ";
    if (getErrorName(result, &name) == CUDA_SUCCESS && name)
      out += name;
    else
      out += "CUresult " + std::to_string((int)result);
    if (getErrorString(result, &text) == CUDA_SUCCESS && text)
      out += std::string(" (") + text + ")";
    return out;
  }

  /// True on success; otherwise sets `error` to describe(call, result).
  bool check(CUresult result, const char *call, std::string &error) const {
    if (result == CUDA_SUCCESS)
      return true;
    error = describe(call, result);
    return false;
  }
};

Driver loadDriver() {
  Driver d;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    d.error = "no CUDA driver (libcuda.so.1 not found)";
    return d;
  }
  using GetProcAddress = decltype(&cuGetProcAddress);
  using DriverGetVersion = decltype(&cuDriverGetVersion);
  auto getProc =
      reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  auto getVersion =
      reinterpret_cast<DriverGetVersion>(dlsym(lib, "cuDriverGetVersion"));
  if (!getProc || !getVersion || getVersion(&d.version) != CUDA_SUCCESS ||
      d.version < kMinDriverVersion) {
    d.error = "the CUDA driver is too old (version " +
              std::to_string(d.version / 1000) + "." +
              std::to_string(d.version % 1000 / 10) +
              "; libtccrt needs CUDA 12.0 or newer)";
    return d;
  }
  // Ask for the ABI of the cuda.h we were built with, or of the driver when
  // it is older: the entry points used here kept their prototypes since 12.0.
  int want = std::min(d.version, CUDA_VERSION);
  auto resolve = [&](const char *name, void **fn) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return getProc(name, fn, want, CU_GET_PROC_ADDRESS_DEFAULT, &found) ==
               CUDA_SUCCESS &&
           found == CU_GET_PROC_ADDRESS_SUCCESS && *fn;
  };
#define TCC_CUDA_RESOLVE(member, symbol)                                       \
  if (!resolve(#symbol, reinterpret_cast<void **>(&d.member))) {               \
    d.error = "the CUDA driver lacks " #symbol;                                \
    return d;                                                                  \
  }
  TCC_CUDA_ENTRY_POINTS(TCC_CUDA_RESOLVE)
#undef TCC_CUDA_RESOLVE
  if (!resolve("cuFuncGetParamInfo",
               reinterpret_cast<void **>(&d.funcGetParamInfo)))
    d.funcGetParamInfo = nullptr;
  if (!resolve("cuTensorMapEncodeTiled",
               reinterpret_cast<void **>(&d.tensorMapEncodeTiled)))
    d.tensorMapEncodeTiled = nullptr;
  if (!resolve("cuTensorMapEncodeIm2col",
               reinterpret_cast<void **>(&d.tensorMapEncodeIm2col)))
    d.tensorMapEncodeIm2col = nullptr;
  if (!resolve("cuLaunchKernelEx",
               reinterpret_cast<void **>(&d.launchKernelEx)))
    d.launchKernelEx = nullptr;
#if TCC_CUDA_CAPTURE_ORDER
  // Both or neither, at the version whose prototypes take edge data.
  auto resolveAt = [&](const char *name, int version, void **fn) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return getProc(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) ==
               CUDA_SUCCESS &&
           found == CU_GET_PROC_ADDRESS_SUCCESS && *fn;
  };
  if (d.version < 12030 ||
      !resolveAt("cuStreamGetCaptureInfo", 12030,
                 reinterpret_cast<void **>(&d.streamGetCaptureInfo)) ||
      !resolveAt(
          "cuStreamUpdateCaptureDependencies", 12030,
          reinterpret_cast<void **>(&d.streamUpdateCaptureDependencies))) {
    d.streamGetCaptureInfo = nullptr;
    d.streamUpdateCaptureDependencies = nullptr;
  }
#endif

  CUresult r = d.init(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    d.error = "no CUDA device";
    return d;
  }
  if (r != CUDA_SUCCESS) {
    d.error = d.describe("cuInit", r);
    return d;
  }
  d.loaded = true;
  return d;
}

/// The process's driver; loaded by the first caller, thread-safely.
const Driver &driver() {
  static const Driver d = loadDriver();
  return d;
}

/// Makes `ctx` current on this thread while alive, restoring the caller's
/// context afterwards.
class ScopedContext {
public:
  ScopedContext(const Driver &d, CUcontext ctx) : d(d) {
    CUcontext current = nullptr;
    if (d.ctxGetCurrent(&current) != CUDA_SUCCESS || current != ctx)
      pushed = d.ctxPushCurrent(ctx) == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    CUcontext popped;
    if (pushed)
      d.ctxPopCurrent(&popped);
  }
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

private:
  const Driver &d;
  bool pushed = false;
};

static_assert(sizeof(CUtensorMap) == bundle::kTensorMapBytes &&
                  alignof(CUtensorMap) <= alignof(EncodedTensorMap),
              "EncodedTensorMap must hold a CUtensorMap");

/// The element type TMA moves for `t`: the 1-byte types as bytes (the zeros
/// of out-of-bounds elements read as 0 in each).
CUtensorMapDataType tensorMapType(DType t) {
  switch (t) {
  case DType::F64:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case DType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case DType::I8:
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::Bool:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle tensorMapSwizzle(bundle::TensorMapSwizzle s) {
  switch (s) {
  case bundle::TensorMapSwizzle::None:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  case bundle::TensorMapSwizzle::B32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case bundle::TensorMapSwizzle::B64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case bundle::TensorMapSwizzle::B128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

CUdeviceptr devicePtr(const void *p) {
  return (CUdeviceptr) reinterpret_cast<uintptr_t>(p);
}

/// Driver messages span lines; errors here are one line.
std::string oneLine(const char *text, size_t limit) {
  std::string out;
  bool space = false;
  for (const char *c = text; *c && out.size() < limit; ++c) {
    if (*c == '\n' || *c == '\r') {
      if (!out.empty() && !space)
        out += "; ";
      space = true;
      continue;
    }
    out += *c;
    space = false;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';'))
    out.pop_back();
  return out;
}

class CudaModule : public Module {
public:
  CudaModule(const Driver &d, CUcontext ctx, CUmodule module, std::string name)
      : d(d), ctx(ctx), module(module), name(std::move(name)) {}
  ~CudaModule() override {
    ScopedContext scope(d, ctx);
    d.moduleUnload(module);
  }

  bool getKernel(const std::string &symbol, KernelHandle &out,
                 std::string &error) override {
    ScopedContext scope(d, ctx);
    CUfunction f = nullptr;
    CUresult r = d.moduleGetFunction(&f, module, symbol.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) {
      error = "kernel symbol '" + symbol + "' not found in code object '" +
              name + "'";
      return false;
    }
    if (!d.check(r, "cuModuleGetFunction", error)) {
      error = "kernel '" + symbol + "' in '" + name + "': " + error;
      return false;
    }
    out = f;
    return true;
  }

private:
  const Driver &d;
  CUcontext ctx;
  CUmodule module;
  std::string name;
};

class CudaGraph : public Graph {
public:
  CudaGraph(const Driver &d, CUcontext ctx, CUstream stream, CUgraphExec exec)
      : d(d), ctx(ctx), stream(stream), exec(exec) {}
  ~CudaGraph() override {
    ScopedContext scope(d, ctx);
    d.graphExecDestroy(exec);
  }
  bool launch(std::string &error) override {
    ScopedContext scope(d, ctx);
    return d.check(d.graphLaunch(exec, stream), "cuGraphLaunch", error);
  }

private:
  const Driver &d;
  CUcontext ctx;
  CUstream stream;
  CUgraphExec exec;
};

class CudaBackend : public Backend {
public:
  CudaBackend(const Driver &d, int index) : d(d), index(index) {}
  ~CudaBackend() override {
    if (!ctx)
      return;
    {
      ScopedContext scope(d, ctx);
      for (CUevent e : events)
        d.eventDestroy(e);
      if (stream)
        d.streamDestroy(stream);
    }
    d.primaryCtxRelease(device);
  }

  /// Retains the primary context, makes the stream and reads the limits.
  bool open(OpenFailure &failure, std::string &error) {
    failure = OpenFailure::Device;
    int count = 0;
    if (!d.check(d.deviceGetCount(&count), "cuDeviceGetCount", error))
      return false;
    if (count == 0) {
      failure = OpenFailure::Unavailable;
      error = "no CUDA device";
      return false;
    }
    if (index < 0 || index >= count) {
      failure = OpenFailure::InvalidArgument;
      error = "CUDA device " + std::to_string(index) +
              " does not exist (this machine has " + std::to_string(count) +
              ")";
      return false;
    }
    char buf[256] = {0};
    int major = 0, minor = 0;
    if (!d.check(d.deviceGet(&device, index), "cuDeviceGet", error) ||
        !d.check(d.deviceGetName(buf, sizeof(buf) - 1, device),
                 "cuDeviceGetName", error) ||
        !attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major,
                   error) ||
        !attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor,
                   error) ||
        !attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                   sharedDefault, error) ||
        !attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                   sharedOptIn, error))
      return false;
    name = buf;
    capability = major * 10 + minor;
    CUcontext primary = nullptr;
    if (!d.check(d.primaryCtxRetain(&primary, device),
                 "cuDevicePrimaryCtxRetain", error))
      return false;
    ctx = primary;
    ScopedContext scope(d, ctx);
    return d.check(d.streamCreate(&stream, CU_STREAM_NON_BLOCKING),
                   "cuStreamCreate", error);
  }

  /// sm_NN runs on compute capability NN and later (the driver compiles its
  /// PTX for the device); sm_NNa only on NN itself; sm_NNf on NN and later
  /// members of the same family (same major version).
  bool acceptsTarget(const std::string &target) const override {
    if (target.rfind("sm_", 0) != 0 || target.size() < 4)
      return false;
    char suffix = target.back();
    bool hasSuffix = suffix == 'a' || suffix == 'f';
    std::string digits =
        target.substr(3, target.size() - 3 - (hasSuffix ? 1 : 0));
    if (digits.empty() || digits.size() > 4 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    int want = std::stoi(digits);
    if (suffix == 'a')
      return want == capability;
    if (suffix == 'f')
      return want / 10 == capability / 10 && want <= capability;
    return want <= capability;
  }

  std::string describe() const override {
    return "CUDA device " + std::to_string(index) + " (" + name + ", sm_" +
           std::to_string(capability) + ")";
  }

  bool allocate(size_t bytes, void *&out, std::string &error) override {
    ScopedContext scope(d, ctx);
    CUdeviceptr p = 0;
    // cuMemAlloc refuses 0 bytes, but callers want a distinct pointer.
    if (!d.check(d.memAlloc(&p, std::max<size_t>(bytes, 1)), "cuMemAlloc",
                 error)) {
      error = "cannot allocate " + std::to_string(bytes) + " bytes on " +
              describe() + ": " + error;
      return false;
    }
    out = reinterpret_cast<void *>((uintptr_t)p);
    return true;
  }

  void deallocate(void *ptr) override {
    ScopedContext scope(d, ctx);
    d.memFree(devicePtr(ptr));
  }

  bool availableMemory(uint64_t &bytes, std::string &what) override {
    ScopedContext scope(d, ctx);
    size_t free = 0, total = 0;
    if (d.memGetInfo(&free, &total) != CUDA_SUCCESS)
      return false;
    bytes = free;
    what = "free device memory";
    return true;
  }

  bool copyToDevice(void *dst, const void *src, size_t bytes,
                    std::string &error) override {
    if (!bytes)
      return true;
    ScopedContext scope(d, ctx);
    // Pageable host memory: the call may return before the copy is done.
    return checkRange(dst, bytes, "destination", error) &&
           d.check(d.memcpyHtoDAsync(devicePtr(dst), src, bytes, stream),
                   "cuMemcpyHtoDAsync", error) &&
           synchronize(error);
  }

  bool copyToHost(void *dst, const void *src, size_t bytes,
                  std::string &error) override {
    if (!bytes)
      return true;
    ScopedContext scope(d, ctx);
    return checkRange(src, bytes, "source", error) &&
           d.check(d.memcpyDtoHAsync(dst, devicePtr(src), bytes, stream),
                   "cuMemcpyDtoHAsync", error) &&
           synchronize(error);
  }

  bool copyOnDevice(void *dst, const void *src, size_t bytes,
                    std::string &error) override {
    if (!bytes)
      return true;
    ScopedContext scope(d, ctx);
    return d.check(
        d.memcpyDtoDAsync(devicePtr(dst), devicePtr(src), bytes, stream),
        "cuMemcpyDtoDAsync", error);
  }

  bool fillZero(void *dst, size_t bytes, std::string &error) override {
    if (!bytes)
      return true;
    ScopedContext scope(d, ctx);
    if (bytes % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0)
      return d.check(d.memsetD32Async(devicePtr(dst), 0, bytes / 4, stream),
                     "cuMemsetD32Async", error);
    return d.check(d.memsetD8Async(devicePtr(dst), 0, bytes, stream),
                   "cuMemsetD8Async", error);
  }

  std::unique_ptr<Module> loadModule(const uint8_t *code, size_t size,
                                     const std::string &blobName,
                                     std::string &error) override {
    // PTX is text; the driver would take a NUL-free prefix of anything else
    // (or parse an ELF cubin), so refuse what is not text up front.
    size_t end = size;
    while (end && code[end - 1] == 0)
      --end;
    if (end == 0 || std::memchr(code, 0, end)) {
      error = "code object '" + blobName + "' is not PTX text";
      return nullptr;
    }
    std::string ptx(reinterpret_cast<const char *>(code), end);
    std::vector<char> log(16384, 0);
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log.data(),
                      reinterpret_cast<void *>((uintptr_t)(log.size() - 1))};
    ScopedContext scope(d, ctx);
    CUmodule module = nullptr;
    CUresult r = d.moduleLoadDataEx(&module, ptx.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      error = "cannot load PTX '" + blobName +
              "': " + d.describe("cuModuleLoadDataEx", r);
      std::string jit = oneLine(log.data(), 4000);
      if (!jit.empty())
        error += ": " + jit;
      return nullptr;
    }
    return std::make_unique<CudaModule>(d, ctx, module, blobName);
  }

  bool launch(KernelHandle, void **, size_t, int64_t,
              std::string &error) override {
    error = "CUDA kernels are launched on a grid of blocks";
    return false;
  }

  bool synchronize(std::string &error) override {
    ScopedContext scope(d, ctx);
    CUresult r = d.streamSynchronize(stream);
    if (d.check(r, "cuStreamSynchronize", error))
      return true;
    // These errors are sticky: the context is unusable from now on.
    if (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
        r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
        r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_INVALID_PC ||
        r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_ASSERT)
      error += "; a kernel failed and this process cannot use " + describe() +
               " any more";
    return false;
  }

  bool prepareKernel(KernelHandle kernel, const KernelUse &use,
                     std::string &error) override {
    ScopedContext scope(d, ctx);
    auto f = static_cast<CUfunction>(kernel);
    std::string what = "kernel '" + use.name + "'";
    if (use.cluster[0] * use.cluster[1] * use.cluster[2] > 1 &&
        (capability < 90 || !d.launchKernelEx)) {
      error = what +
              " runs in thread-block clusters, which need compute "
              "capability 9.0 and cuLaunchKernelEx; " +
              describe() + " lacks them";
      return false;
    }
    if (use.launched && use.numTensorMaps && !d.tensorMapEncodeTiled) {
      error = what + " takes tensor maps but the CUDA driver lacks "
                     "cuTensorMapEncodeTiled";
      return false;
    }
    if (use.launched && d.funcGetParamInfo) {
      // A launch passing fewer pointers than the kernel reads would hand it
      // garbage: compare with the parameter list the PTX declares, pointers
      // first, then the 128-byte tensor maps.
      size_t count = 0, offset = 0, bytes = 0;
      while (count <= kMaxParams &&
             d.funcGetParamInfo(f, count, &offset, &bytes) == CUDA_SUCCESS) {
        bool isMap = count >= use.numArgs;
        size_t want = isMap ? bundle::kTensorMapBytes : sizeof(void *);
        if (count < use.numArgs + use.numTensorMaps && bytes != want) {
          error = what + ": parameter " + std::to_string(count) + " has " +
                  std::to_string(bytes) + " bytes but its launches pass " +
                  (isMap ? "a 128-byte tensor map"
                         : "an 8-byte buffer "
                           "pointer") +
                  " there (" + std::to_string(use.numArgs) +
                  " pointers, then " + std::to_string(use.numTensorMaps) +
                  " tensor maps)";
          return false;
        }
        ++count;
      }
      if (count != use.numArgs + use.numTensorMaps) {
        error =
            what + " takes " + std::to_string(count) +
            " parameters but its launches pass " + std::to_string(use.numArgs) +
            " buffers" +
            (use.numTensorMaps
                 ? " and " + std::to_string(use.numTensorMaps) + " tensor maps"
                 : std::string());
        return false;
      }
    }
    int staticShared = 0, maxThreads = 0, registers = 0;
    if (!functionAttribute(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, staticShared,
                           what, error) ||
        !functionAttribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                           maxThreads, what, error) ||
        !functionAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, registers, what,
                           error))
      return false;
    uint64_t shared = (uint64_t)use.sharedBytes + (uint64_t)staticShared;
    if (shared > (uint64_t)sharedOptIn) {
      error = what + " needs " + std::to_string(shared) +
              " bytes of shared memory a block (" +
              std::to_string(use.sharedBytes) + " dynamic, " +
              std::to_string(staticShared) + " static) but " + describe() +
              " has at most " + std::to_string(sharedOptIn);
      return false;
    }
    // Above the default limit a kernel must opt in to more dynamic memory.
    if (use.sharedBytes > (uint32_t)std::max(sharedDefault - staticShared, 0) &&
        !d.check(d.funcSetAttribute(
                     f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     (int)use.sharedBytes),
                 "cuFuncSetAttribute", error)) {
      error = what + ": " + error;
      return false;
    }
    if (use.launched && use.maxBlockThreads > (uint64_t)maxThreads) {
      error = what + " runs at most " + std::to_string(maxThreads) +
              " threads a block on " + describe() + " (it uses " +
              std::to_string(registers) +
              " registers a thread) but a launch asks for " +
              std::to_string(use.maxBlockThreads);
      return false;
    }
    return true;
  }

  bool launchBlocks(KernelHandle kernel, void **args, size_t numArgs,
                    const TensorMapArg *maps, size_t numMaps,
                    const std::array<uint32_t, 3> &grid,
                    const std::array<uint32_t, 3> &block, uint32_t sharedBytes,
                    const std::array<uint32_t, 3> &cluster,
                    bool overlapPrevious, std::string &error) override {
    ScopedContext scope(d, ctx);
    // cuLaunchKernel wants the address of each parameter's value; it copies
    // the values (a graph capture records them), so the maps' caches may be
    // re-encoded for a later launch.
    params.resize(numArgs + numMaps);
    for (size_t i = 0; i < numArgs; ++i)
      params[i] = &args[i];
    for (size_t i = 0; i < numMaps; ++i) {
      if (!encode(maps[i], i, error))
        return false;
      params[numArgs + i] = maps[i].encoded->bytes;
    }
    // Programmatic dependent launch (compute capability 9.0 and later): the
    // kernel may start while the previous one runs; it waits for it with
    // griddepcontrol.wait before touching memory (the manifest says so).
    // A kernel in clusters (prepareKernel checked the device) states them.
    CUlaunchAttribute attrs[2] = {};
    unsigned numAttrs = 0;
    if (overlapPrevious && d.launchKernelEx && capability >= 90) {
      attrs[numAttrs].id =
          CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[numAttrs++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster[0] * cluster[1] * cluster[2] > 1) {
      attrs[numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[numAttrs].value.clusterDim.x = cluster[0];
      attrs[numAttrs].value.clusterDim.y = cluster[1];
      attrs[numAttrs++].value.clusterDim.z = cluster[2];
    }
    if (numAttrs) {
      CUlaunchConfig config{};
      config.gridDimX = grid[0];
      config.gridDimY = grid[1];
      config.gridDimZ = grid[2];
      config.blockDimX = block[0];
      config.blockDimY = block[1];
      config.blockDimZ = block[2];
      config.sharedMemBytes = sharedBytes;
      config.hStream = stream;
      config.attrs = attrs;
      config.numAttrs = numAttrs;
      return d.check(d.launchKernelEx(&config, static_cast<CUfunction>(kernel),
                                      params.data(), nullptr),
                     "cuLaunchKernelEx", error);
    }
    return d.check(d.launchKernel(static_cast<CUfunction>(kernel), grid[0],
                                  grid[1], grid[2], block[0], block[1],
                                  block[2], sharedBytes, stream, params.data(),
                                  nullptr),
                   "cuLaunchKernel", error);
  }

  bool checkBuffer(const void *ptr, size_t bytes, std::string &error) override {
    if (!bytes)
      return true;
    ScopedContext scope(d, ctx);
    return checkRange(ptr, bytes, "buffer", error);
  }

#if TCC_CUDA_CAPTURE_ORDER
  bool capturesOrder() const override {
    return d.streamGetCaptureInfo && d.streamUpdateCaptureDependencies;
  }

  bool orderNextAfter(const std::vector<size_t> &after,
                      const std::vector<bool> &overlap,
                      std::string &error) override {
    if (!capturesOrder() || !capturing) {
      error = "ordering captured work needs a capture and CUDA 12.3";
      return false;
    }
    ScopedContext scope(d, ctx);
    // The stream's dependency set is now the node of the work queued since
    // the last call (each call sets it before one piece of work), or still
    // the set that call made when the work queued nothing (an empty copy):
    // then waiting for that work is waiting for what it waited for.
    if (orderedSoFar) {
      CUstreamCaptureStatus status;
      const CUgraphNode *last = nullptr;
      const CUgraphEdgeData *edges = nullptr;
      size_t count = 0;
      if (!d.check(d.streamGetCaptureInfo(stream, &status, nullptr, nullptr,
                                          &last, &edges, &count),
                   "cuStreamGetCaptureInfo", error))
        return false;
      if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        error = "the capture ended early";
        return false;
      }
      std::vector<CUgraphNode> now(last, last + count);
      if (now == lastSet)
        captured.push_back({lastSet, false});
      else if (count == 1)
        captured.push_back({now, true});
      else {
        error = "piece of work " + std::to_string(captured.size()) +
                " was recorded as " + std::to_string(count) + " nodes";
        return false;
      }
    }
    orderedSoFar = true;
    std::vector<CUgraphEdgeData> data;
    lastSet.clear();
    for (size_t i = 0; i < after.size(); ++i) {
      if (after[i] >= captured.size()) {
        error = "piece of work " + std::to_string(captured.size()) +
                " cannot wait for " + std::to_string(after[i]);
        return false;
      }
      const CapturedWork &w = captured[after[i]];
      for (CUgraphNode n : w.nodes) {
        if (std::find(lastSet.begin(), lastSet.end(), n) != lastSet.end())
          continue;
        lastSet.push_back(n);
        CUgraphEdgeData e{};
        if (w.own && i < overlap.size() && overlap[i] && capability >= 90) {
          e.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
          e.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
        }
        data.push_back(e);
      }
    }
    return d.check(d.streamUpdateCaptureDependencies(
                       stream, lastSet.data(), data.data(), lastSet.size(),
                       CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                   "cuStreamUpdateCaptureDependencies", error);
  }
#endif

  std::unique_ptr<Graph>
  capture(const std::function<bool(std::string &)> &enqueue,
          std::string &error) override {
    ScopedContext scope(d, ctx);
    captured.clear();
    lastSet.clear();
    orderedSoFar = false;
    // Thread-local mode: only this thread's capture-unsafe calls (which the
    // runtime does not make while enqueueing) would invalidate it.
    if (!d.check(
            d.streamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture", error))
      return nullptr;
    capturing = true;
    // The capture must end whatever happens while queueing: a stream left
    // capturing would refuse every later call.
    bool queued = false;
    try {
      queued = enqueue(error);
    } catch (...) {
      capturing = false;
      CUgraph partial = nullptr;
      d.streamEndCapture(stream, &partial);
      if (partial)
        d.graphDestroy(partial);
      throw;
    }
    capturing = false;
    CUgraph graph = nullptr;
    CUresult ended = d.streamEndCapture(stream, &graph);
    if (!queued || !d.check(ended, "cuStreamEndCapture", error)) {
      if (graph)
        d.graphDestroy(graph);
      return nullptr;
    }
    CUgraphExec exec = nullptr;
    CUresult made = d.graphInstantiate(&exec, graph, 0);
    d.graphDestroy(graph); // the executable graph is independent of it
    if (!d.check(made, "cuGraphInstantiate", error))
      return nullptr;
    return std::make_unique<CudaGraph>(d, ctx, stream, exec);
  }

  bool hasDeviceTimer() const override { return true; }

  bool startTimer(size_t count, std::string &error) override {
    ScopedContext scope(d, ctx);
    while (events.size() < count) {
      CUevent e = nullptr;
      if (!d.check(d.eventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate", error))
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
    ScopedContext scope(d, ctx);
    return d.check(d.eventRecord(events[i], stream), "cuEventRecord", error);
  }

  bool elapsedMs(size_t from, size_t to, double &ms,
                 std::string &error) override {
    if (from >= events.size() || to >= events.size()) {
      error = "timestamp was not made";
      return false;
    }
    ScopedContext scope(d, ctx);
    float value = 0;
    if (!d.check(d.eventElapsedTime(&value, events[from], events[to]),
                 "cuEventElapsedTime", error))
      return false;
    ms = value;
    return true;
  }

private:
  /// Encodes `map` into its cache unless the cache holds it for its base.
  bool encode(const TensorMapArg &map, size_t which, std::string &error) {
    const bundle::TensorMapDesc &t = *map.desc;
    if (map.encoded->base == map.base && map.base)
      return true;
    std::string what = "tensor map " + std::to_string(which);
    const char *call =
        t.im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled";
    if (t.im2col ? !d.tensorMapEncodeIm2col : !d.tensorMapEncodeTiled) {
      error = what + ": the CUDA driver lacks " + call;
      return false;
    }
    // TMA reads its global address in 16-byte units; the runtime's own
    // buffers are 64-byte aligned and bound ones checked, but never launch
    // a map that would be refused or, worse, misread.
    if (reinterpret_cast<uintptr_t>(map.base) % 16 != 0) {
      error = what + ": its buffer's address is not 16-byte aligned";
      return false;
    }
    size_t rank = t.dims.size();
    cuuint64_t dims[bundle::kMaxTensorMapRank] = {};
    cuuint64_t strides[bundle::kMaxTensorMapRank] = {};
    cuuint32_t box[bundle::kMaxTensorMapRank] = {};
    cuuint32_t ones[bundle::kMaxTensorMapRank] = {};
    for (size_t i = 0; i < rank; ++i) {
      dims[i] = t.dims[i];
      box[i] = t.im2col ? 0 : t.box[i];
      ones[i] = 1;
      if (i + 1 < rank)
        strides[i] = t.strides[i];
    }
    // The mapped tensor starts `offset` bytes in (a multiple of 16).
    void *start =
        const_cast<char *>(static_cast<const char *>(map.base)) + t.offset;
    CUtensorMap encoded;
    CUresult r;
    if (t.im2col) {
      int lower[bundle::kMaxTensorMapRank] = {};
      int upper[bundle::kMaxTensorMapRank] = {};
      cuuint32_t elementStrides[bundle::kMaxTensorMapRank] = {};
      for (size_t i = 0; i < t.lower.size(); ++i) {
        lower[i] = t.lower[i];
        upper[i] = t.upper[i];
      }
      for (size_t i = 0; i < rank; ++i)
        elementStrides[i] = t.elementStrides[i];
      r = d.tensorMapEncodeIm2col(
          &encoded, tensorMapType(t.dtype), (cuuint32_t)rank, start, dims,
          strides, lower, upper, t.channels, t.pixels, elementStrides,
          CU_TENSOR_MAP_INTERLEAVE_NONE, tensorMapSwizzle(t.swizzle),
          CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    } else {
      r = d.tensorMapEncodeTiled(
          &encoded, tensorMapType(t.dtype), (cuuint32_t)rank, start, dims,
          strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
          tensorMapSwizzle(t.swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    }
    if (!d.check(r, call, error)) {
      map.encoded->base = nullptr;
      error = what + ": " + error;
      return false;
    }
    std::memcpy(map.encoded->bytes, &encoded, sizeof(encoded));
    map.encoded->base = map.base;
    return true;
  }

  /// More parameters than any valid launch passes: stops the count early.
  static constexpr size_t kMaxParams = 4096;

  bool attribute(CUdevice_attribute a, int &out, std::string &error) {
    return d.check(d.deviceGetAttribute(&out, a, device),
                   "cuDeviceGetAttribute", error);
  }

  bool functionAttribute(CUfunction f, CUfunction_attribute a, int &out,
                         const std::string &what, std::string &error) {
    if (d.check(d.funcGetAttribute(&out, a, f), "cuFuncGetAttribute", error))
      return true;
    error = what + ": " + error;
    return false;
  }

  /// Whether [ptr, ptr + bytes) lies in one allocation of this device's
  /// memory (device or managed), so that a kernel or copy cannot stray.
  bool checkRange(const void *ptr, size_t bytes, const char *what,
                  std::string &error) {
    unsigned int memoryType = 0, managed = 0;
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&memoryType, &managed, &ordinal, &start, &size};
    // Unknown pointers are no error here: their attributes read as zero.
    if (!d.check(d.pointerGetAttributes(5, attrs, data, devicePtr(ptr)),
                 "cuPointerGetAttributes", error))
      return false;
    if (memoryType != CU_MEMORYTYPE_DEVICE && !managed) {
      error = std::string(what) + " is not CUDA device memory (use " +
              "tccrt_malloc or cuMemAlloc on " + describe() + ")";
      return false;
    }
    if (!managed && ordinal != index) {
      error = std::string(what) + " is memory of CUDA device " +
              std::to_string(ordinal) + ", not of " + describe();
      return false;
    }
    uint64_t offset = devicePtr(ptr) - start;
    if (size && (offset > size || bytes > size - offset)) {
      error = std::string(what) + " of " + std::to_string(bytes) +
              " bytes runs past the end of its allocation (" +
              std::to_string(size - std::min<uint64_t>(offset, size)) +
              " bytes left)";
      return false;
    }
    return true;
  }

  const Driver &d;
  int index;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  std::string name;
  int capability = 0;
  int sharedDefault = 0, sharedOptIn = 0;
  std::vector<void *> params;
  /// While capturing with orderNextAfter: the node of each piece of work
  /// queued so far.
  bool capturing = false, orderedSoFar = false;
  /// What waiting for a piece of work means: its own node, or (work that
  /// queued nothing) the nodes it waited for.
  struct CapturedWork {
    std::vector<CUgraphNode> nodes;
    bool own = false;
  };
  std::vector<CapturedWork> captured;
  std::vector<CUgraphNode> lastSet; ///< The dependency set made last.
  std::vector<CUevent> events;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(int index, OpenFailure &failure,
                                           std::string &error) {
  const Driver &d = driver();
  if (!d.loaded) {
    failure = d.failure;
    error = d.error;
    return nullptr;
  }
  auto backend = std::make_unique<CudaBackend>(d, index);
  if (!backend->open(failure, error))
    return nullptr;
  return backend;
}

} // namespace tcc::rt
