//===- Backend.h - what the runtime needs from a device ---------*- C++ -*-===//
//
// The runtime core (Runtime.cpp) plans memory, binds buffers and walks the
// launch list; a backend supplies memory, copies, code loading and launches
// for one kind of device. The host backend is built in; CUDA and HIP backends
// will load their driver libraries with dlopen behind the same interface.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_BACKEND_H
#define TCC_RUNTIME_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tcc::rt {

/// A kernel entry point as the backend resolved it (a host function pointer,
/// a CUfunction, ...).
using KernelHandle = void *;

/// A loaded code object; unloading happens on destruction.
class Module {
public:
  virtual ~Module() = default;
  virtual bool getKernel(const std::string &symbol, KernelHandle &out,
                         std::string &error) = 0;
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
};

/// The host backend: a thread pool of `numThreads` (caller included).
std::unique_ptr<Backend> createHostBackend(unsigned numThreads);

} // namespace tcc::rt

#endif // TCC_RUNTIME_BACKEND_H
