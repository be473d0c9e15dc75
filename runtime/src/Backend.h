//===- Backend.h - what the runtime needs from a device ---------*- C++ -*-===//
//
// The runtime core (Runtime.cpp) plans memory, binds buffers and walks the
// launch list; a backend supplies memory, copies, code loading and launches
// for one kind of device. The host backend is built in; the CUDA backend
// (CudaBackend.cpp) loads libcuda.so.1 and the HIP backend (HipBackend.cpp)
// libamdhip64 with dlopen behind the same interface.
//
// Work is queued in order: copies on the device, zero fills and launches may
// return before they finish, synchronize() waits for them. Copies to and from
// the host are complete when they return.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_BACKEND_H
#define TCC_RUNTIME_BACKEND_H

#include "runtime/src/Manifest.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// A kernel entry point as the backend resolved it (a host function pointer,
/// a CUfunction, a hipFunction_t, ...).
using KernelHandle = void *;

/// A loaded code object; unloading happens on destruction.
class Module {
public:
  virtual ~Module() = default;
  virtual bool getKernel(const std::string &symbol, KernelHandle &out,
                         std::string &error) = 0;
};

/// A recorded sequence of device work that can be replayed (a CUDA or HIP
/// graph); freed on destruction.
class Graph {
public:
  virtual ~Graph() = default;
  /// Queues one replay.
  virtual bool launch(std::string &error) = 0;
};

/// A tensor map as a kernel parameter: the 128 bytes of a CUtensorMap,
/// encoded by the backend for the buffer address `base`. The runtime keeps
/// one per launch and map for the model's lifetime, so that the backend
/// re-encodes only when a binding moved the buffer. Aligned as CUDA 13's
/// CUtensorMap (128; 64 before, and as a kernel parameter).
struct alignas(128) EncodedTensorMap {
  uint8_t bytes[bundle::kTensorMapBytes] = {};
  const void *base = nullptr; ///< What `bytes` was encoded for (null: none).
};

/// One tensor map of a launch: what to encode, over which address, and the
/// launch's cache for it.
struct TensorMapArg {
  const bundle::TensorMapDesc *desc = nullptr;
  const void *base = nullptr; ///< The buffer's current device address.
  EncodedTensorMap *encoded = nullptr;
};

/// What the launches of one GPU kernel need; checked once, at load.
struct KernelUse {
  std::string name;             ///< The kernel's name, for messages.
  uint32_t sharedBytes = 0;     ///< Dynamic shared memory a block.
  /// Blocks of a thread-block cluster (1, 1, 1: none).
  std::array<uint32_t, 3> cluster{1, 1, 1};
  size_t numArgs = 0;           ///< Buffers every launch passes.
  size_t numTensorMaps = 0;     ///< Tensor maps every launch passes after.
  bool launched = false;        ///< False: numArgs and maxBlockThreads unknown.
  uint64_t maxBlockThreads = 0; ///< The largest block of any launch.
  /// The most threads any launch runs in x, y and z (grid times block).
  std::array<uint64_t, 3> maxGridThreads{0, 0, 0};
};

/// Every operation reports failure by returning false with a one-line error.
class Backend {
public:
  virtual ~Backend() = default;
  /// Whether code objects of this manifest target ("host", "sm_90", ...)
  /// run here.
  virtual bool acceptsTarget(const std::string &target) const = 0;
  /// A short description for messages, e.g. "host (8 threads)".
  virtual std::string describe() const = 0;

  /// Device memory, at least 64-byte aligned; never null on success, even for
  /// zero bytes.
  virtual bool allocate(size_t bytes, void *&out, std::string &error) = 0;
  virtual void deallocate(void *ptr) = 0;
  /// The memory an allocation can get now, and what limits it (for
  /// messages); false when the device cannot tell.
  virtual bool availableMemory(uint64_t & /*bytes*/, std::string & /*what*/) {
    return false;
  }
  virtual bool copyToDevice(void *dst, const void *src, size_t bytes,
                            std::string &error) = 0;
  virtual bool copyToHost(void *dst, const void *src, size_t bytes,
                          std::string &error) = 0;
  virtual bool copyOnDevice(void *dst, const void *src, size_t bytes,
                            std::string &error) = 0;
  virtual bool fillZero(void *dst, size_t bytes, std::string &error) = 0;

  /// Loads a code object; `code` need not outlive the call. `name` is the
  /// blob's name, for messages.
  virtual std::unique_ptr<Module> loadModule(const uint8_t *code, size_t size,
                                             const std::string &name,
                                             std::string &error) = 0;
  /// Runs `kernel` over [0, grid) with the buffers' base pointers.
  virtual bool launch(KernelHandle kernel, void **args, size_t numArgs,
                      int64_t grid, std::string &error) = 0;
  /// Waits until all launches and copies have finished.
  virtual bool synchronize(std::string &error) = 0;

  // GPU devices. The defaults serve devices without these features: a
  // manifest with GPU launches never reaches them, since acceptsTarget
  // refuses its code first.

  /// Checks that `kernel` can serve `use` on this device and prepares it
  /// (e.g. raises its shared memory limit).
  virtual bool prepareKernel(KernelHandle /*kernel*/, const KernelUse & /*use*/,
                             std::string & /*error*/) {
    return true;
  }
  /// Queues `kernel` on a grid of blocks; `args` are the buffers' base
  /// pointers, passed as the kernel's parameters in order, and then `maps`
  /// (CUDA only), each encoded into its cache when its base is not the one
  /// the cache holds, passed by value. With `overlapPrevious` (a kernel
  /// that waits for its predecessor's grid itself, queued right after
  /// another kernel) the device may start it before that kernel ends.
  /// `cluster`: the blocks of a thread-block cluster (CUDA only; checked by
  /// prepareKernel).
  virtual bool launchBlocks(KernelHandle /*kernel*/, void ** /*args*/,
                            size_t /*numArgs*/, const TensorMapArg * /*maps*/,
                            size_t /*numMaps*/,
                            const std::array<uint32_t, 3> & /*grid*/,
                            const std::array<uint32_t, 3> & /*block*/,
                            uint32_t /*sharedBytes*/,
                            const std::array<uint32_t, 3> & /*cluster*/,
                            bool /*overlapPrevious*/, std::string &error) {
    error = describe() + " has no GPU launches";
    return false;
  }
  /// Whether `ptr` may be bound as `bytes` of device memory: on a GPU, memory
  /// of this device that holds the whole range.
  virtual bool checkBuffer(const void * /*ptr*/, size_t /*bytes*/,
                           std::string & /*error*/) {
    return true;
  }
  /// Records the work that `enqueue` queues, without running it, for replays.
  /// Null with `error` where the device has no such thing.
  virtual std::unique_ptr<Graph>
  capture(const std::function<bool(std::string &)> & /*enqueue*/,
          std::string &error) {
    error = describe() + " cannot record graphs (CUDA and HIP devices only)";
    return nullptr;
  }

  /// Whether captures here take the order of their work from
  /// orderNextAfter (a graph whose independent launches run side by side);
  /// otherwise a capture records a chain, in queue order.
  virtual bool capturesOrder() const { return false; }
  /// During capture, before each piece of work (a zero fill, a copy or a
  /// launch): the next one waits only for the earlier ones in `after`,
  /// numbered in queue order from 0 since the capture began. An entry of
  /// `overlap` true marks a kernel that the next kernel may start beside
  /// (programmatic dependent launch: it waits for that grid itself); the
  /// launch itself then passes overlapPrevious false.
  virtual bool orderNextAfter(const std::vector<size_t> & /*after*/,
                              const std::vector<bool> & /*overlap*/,
                              std::string &error) {
    error = describe() + " cannot order captured work";
    return false;
  }

  /// Device timestamps: whether this device has them (the runtime falls back
  /// to the host clock); startTimer makes `count` of them, recordTimestamp(i)
  /// queues the i-th, and after synchronize elapsedMs reads the time between
  /// two.
  virtual bool hasDeviceTimer() const { return false; }
  virtual bool startTimer(size_t /*count*/, std::string &error) {
    error = "no device timer";
    return false;
  }
  virtual bool recordTimestamp(size_t /*index*/, std::string &error) {
    error = "no device timer";
    return false;
  }
  virtual bool elapsedMs(size_t /*from*/, size_t /*to*/, double & /*ms*/,
                         std::string &error) {
    error = "no device timer";
    return false;
  }
};

/// The host memory this process can still get: the least of the kernel's
/// MemAvailable plus free swap (/proc/meminfo), the room left under a
/// cgroup v2 memory.max, and the address space left under RLIMIT_AS. False
/// when none of them can be read.
bool hostAvailableMemory(uint64_t &bytes, std::string &what);

/// The host backend: a thread pool of `numThreads` (caller included).
std::unique_ptr<Backend> createHostBackend(unsigned numThreads);

/// Why a device backend could not be created.
enum class OpenFailure {
  Unavailable,     ///< No driver, no device, or a driver too old.
  InvalidArgument, ///< No device of that index.
  Device           ///< A driver call failed.
};

/// The CUDA backend on device `index`: the driver (libcuda.so.1) is loaded
/// with dlopen on first use. Null with `failure` and `error` when it cannot
/// be had. Exists only when libtccrt was built with the CUDA backend
/// (TCC_RUNTIME_CUDA).
std::unique_ptr<Backend> createCudaBackend(int index, OpenFailure &failure,
                                           std::string &error);

/// The HIP backend on device `index`: the HIP runtime (libamdhip64.so, else
/// .so.7, .so.6, .so.5) is loaded with dlopen on first use. Null with
/// `failure` and `error` when it cannot be had. Exists only when libtccrt was
/// built with the HIP backend (TCC_RUNTIME_HIP).
std::unique_ptr<Backend> createHipBackend(int index, OpenFailure &failure,
                                          std::string &error);

} // namespace tcc::rt

#endif // TCC_RUNTIME_BACKEND_H
