//===- HostBackend.cpp - kernels from a host .so on a thread pool ---------===//
//
// Code objects are ELF shared objects for x86-64 Linux. They are loaded from
// memory through memfd_create (a temp file where that fails) and dlopen, so
// nothing is left on disk. Kernels have the C signature
//   void kernel(void **args, int64_t begin, int64_t end);
// and the pool splits a launch's grid into contiguous [begin, end) chunks.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Backend.h"
#include "runtime/src/FileIO.h"
#include "runtime/src/ThreadPool.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tcc::rt {
namespace {

using HostKernel = void (*)(void **, int64_t, int64_t);

/// What a KernelHandle of this backend points to: the entry point, and the
/// code object's `tcc_scratch_failure` (null in code without scratch), where
/// a kernel that could not allocate its scratch leaves the size it asked for
/// (tcc-host-checked-alloc) before returning early.
struct HostKernelEntry {
  HostKernel fn;
  std::atomic<int64_t> *scratchFailure;
};

class HostModule : public Module {
public:
  HostModule(void *handle, int fd, std::string name)
      : handle(handle), fd(fd), name(std::move(name)) {
    scratchFailure = static_cast<std::atomic<int64_t> *>(
        dlsym(handle, "tcc_scratch_failure"));
  }
  ~HostModule() override {
    dlclose(handle);
    ::close(fd);
  }

  bool getKernel(const std::string &symbol, KernelHandle &out,
                 std::string &error) override {
    dlerror();
    void *fn = dlsym(handle, symbol.c_str());
    if (!fn) {
      error = "kernel symbol '" + symbol + "' not found in code object '" +
              name + "'";
      return false;
    }
    // A deque: handles given out stay valid as more are added.
    entries.push_back({reinterpret_cast<HostKernel>(fn), scratchFailure});
    out = &entries.back();
    return true;
  }

private:
  void *handle;
  int fd; // held open so that no other code object reuses its path
  std::string name;
  std::atomic<int64_t> *scratchFailure = nullptr;
  std::deque<HostKernelEntry> entries;
};

/// A file descriptor holding `code`: a memfd, or an unlinked temp file.
int codeFile(const uint8_t *code, size_t size, std::string &error) {
  int fd = memfd_create("tcc-host-code", MFD_CLOEXEC);
  if (fd < 0) {
    const char *dir = std::getenv("TMPDIR");
    std::string path =
        std::string(dir && *dir ? dir : "/tmp") + "/tcc-host-code-XXXXXX";
    fd = mkstemp(path.data());
    if (fd < 0) {
      error = std::string("cannot create a file for host code: ") +
              std::strerror(errno);
      return -1;
    }
    ::unlink(path.c_str()); // loaded through /proc/self/fd like a memfd
  }
  if (!io::writeAll(fd, code, size)) {
    error = std::string("cannot write host code: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

class HostBackend : public Backend {
public:
  explicit HostBackend(unsigned numThreads) : pool(numThreads) {
    // Kernels may import libm; make its symbols global for their dlopen
    // even if the application itself was linked without it.
    libm = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL);
  }
  ~HostBackend() override {
    if (libm)
      dlclose(libm);
  }

  bool acceptsTarget(const std::string &target) const override {
    return target == "host";
  }
  std::string describe() const override {
    return "host (" + std::to_string(pool.size()) + " threads)";
  }

  bool allocate(size_t bytes, void *&out, std::string &error) override {
    // aligned_alloc wants a multiple of the alignment; zero bytes still get
    // a distinct pointer. Sizes whose rounding would wrap are refused.
    size_t rounded = (bytes + 63) / 64 * 64;
    out = bytes > SIZE_MAX - 63
              ? nullptr
              : std::aligned_alloc(64, rounded ? rounded : 64);
    if (!out) {
      error = "cannot allocate " + std::to_string(bytes) +
              " bytes of host "
              "memory";
      return false;
    }
    return true;
  }
  void deallocate(void *ptr) override { std::free(ptr); }

  bool availableMemory(uint64_t &bytes, std::string &what) override {
    return hostAvailableMemory(bytes, what);
  }

  bool copyToDevice(void *dst, const void *src, size_t bytes,
                    std::string &) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return true;
  }
  bool copyToHost(void *dst, const void *src, size_t bytes,
                  std::string &) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return true;
  }
  bool copyOnDevice(void *dst, const void *src, size_t bytes,
                    std::string &) override {
    if (bytes)
      std::memmove(dst, src, bytes);
    return true;
  }
  bool fillZero(void *dst, size_t bytes, std::string &) override {
    if (bytes)
      std::memset(dst, 0, bytes);
    return true;
  }

  std::unique_ptr<Module> loadModule(const uint8_t *code, size_t size,
                                     const std::string &name,
                                     std::string &error) override {
    // Refuse what is plainly not an x86-64 ELF shared object before the
    // dynamic loader sees it.
    static const uint8_t elf[] = {0x7f, 'E',          'L',
                                  'F',  2 /*64-bit*/, 1 /*little-endian*/};
    if (size < 64 || std::memcmp(code, elf, sizeof(elf)) != 0 ||
        code[16] != 3 /*ET_DYN*/ || code[18] != 62 /*EM_X86_64*/) {
      error = "code object '" + name + "' is not an x86-64 ELF shared object";
      return nullptr;
    }
    int fd = codeFile(code, size, error);
    if (fd < 0)
      return nullptr;
    // The loader identifies objects by path and would hand back an object
    // still loaded under the same /proc/self/fd/N (one that dlclose could
    // not unload) instead of ours: move to a descriptor number that is free.
    std::string path;
    for (;;) {
      path = "/proc/self/fd/" + std::to_string(fd);
      void *stale = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
      if (!stale)
        break;
      dlclose(stale);
      int other = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
      ::close(fd);
      if (other < 0) {
        error = std::string("cannot load code object '") + name +
                "': " + std::strerror(errno);
        return nullptr;
      }
      fd = other;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      ::close(fd);
      error = "cannot load code object '" + name +
              "': " + (why ? why : "dlopen failed");
      return nullptr;
    }
    return std::make_unique<HostModule>(handle, fd, name);
  }

  bool launch(KernelHandle kernel, void **args, size_t, int64_t grid,
              std::string &error) override {
    const auto &entry = *static_cast<const HostKernelEntry *>(kernel);
    HostKernel fn = entry.fn;
    if (grid == 1)
      fn(args, 0, 1);
    else
      pool.parallelFor(
          grid, [&](int64_t begin, int64_t end) { fn(args, begin, end); });
    if (entry.scratchFailure) {
      if (int64_t bytes = entry.scratchFailure->exchange(0)) {
        error = "could not allocate " + std::to_string(bytes) +
                " bytes of scratch memory on the host (out of memory)";
        return false;
      }
    }
    return true;
  }

  bool synchronize(std::string &) override { return true; }

private:
  ThreadPool pool;
  void *libm = nullptr;
};

} // namespace

std::unique_ptr<Backend> createHostBackend(unsigned numThreads) {
  return std::make_unique<HostBackend>(numThreads);
}

} // namespace tcc::rt
