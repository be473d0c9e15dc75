//===- FileIO.h - reading and writing the files tcc's CLIs name -*- C++ -*-===//
//
// Every file a tcc command line reads (model JSON, bundles, .npy inputs,
// schedule files, safetensors) goes through openRegularFile: a device, FIFO
// or directory is refused with "PATH: not a regular file" instead of being
// read without bound (/dev/zero) or blocking (a FIFO with no writer). The
// open itself uses O_NONBLOCK so that a FIFO cannot block it, and the check
// is made on the opened descriptor, so the answer cannot change in between.
//
// Every file a CLI writes goes through writeFileAtomically: a temp file in
// the same folder renamed over the target, so a reader (or a second writer)
// never sees a half-written file.
//
// Header-only and free of LLVM and of other tcc code, so that the frontend,
// the compiler and the runtime-only build can all include it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_FILEIO_H
#define TCC_RUNTIME_FILEIO_H

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tcc::io {

/// Opens `path` for reading when it is a regular file (after following
/// symlinks) and returns the descriptor, with its size; -1 with a one-line
/// `error` ("PATH: not a regular file", "PATH: cannot open: REASON")
/// otherwise. The caller closes the descriptor.
inline int openRegularFile(const std::string &path, uint64_t &size,
                           std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = path + ": not a regular file";
    return -1;
  }
  // Regular files ignore O_NONBLOCK; clear it all the same.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  size = (uint64_t)st.st_size;
  return fd;
}

/// Reads exactly `size` bytes at `offset`; false with a one-line `error`
/// (naming `path`) on a read error or when the file is shorter.
inline bool readAt(int fd, uint64_t offset, void *dst, size_t size,
                   const std::string &path, std::string &error) {
  char *out = static_cast<char *>(dst);
  while (size) {
    ssize_t n = ::pread(fd, out, size, (off_t)offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = path + ": read error: " + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      error = path + ": file shrank while it was read";
      return false;
    }
    out += n;
    offset += (uint64_t)n;
    size -= (size_t)n;
  }
  return true;
}

/// Reads the whole regular file into `out` (a std::string or a byte
/// vector). Files over `maxBytes` are refused before anything is allocated;
/// so is a size this process cannot allocate.
template <typename Bytes>
bool readRegularFile(const std::string &path, Bytes &out, std::string &error,
                     uint64_t maxBytes = UINT64_MAX) {
  uint64_t size;
  int fd = openRegularFile(path, size, error);
  if (fd < 0)
    return false;
  if (size > maxBytes || size > (uint64_t)SIZE_MAX / 2) {
    ::close(fd);
    error = path + ": " + std::to_string(size) +
            " bytes is more than the limit of " + std::to_string(maxBytes);
    return false;
  }
  try {
    out.resize((size_t)size);
  } catch (const std::bad_alloc &) {
    ::close(fd);
    error = path + ": cannot allocate " + std::to_string(size) +
            " bytes to read it";
    return false;
  }
  bool ok = readAt(fd, 0, out.data(), (size_t)size, path, error);
  ::close(fd);
  if (!ok)
    out.clear();
  return ok;
}

/// Writes all `size` bytes to `fd`, through short writes and EINTR.
inline bool writeAll(int fd, const void *bytes, size_t size) {
  const char *data = static_cast<const char *>(bytes);
  while (size) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= (size_t)n;
  }
  return true;
}

/// Writes `size` bytes to `path` atomically: into a temp file in the same
/// folder, renamed over `path` once complete, so that `path` holds either
/// its old contents or all of the new ones (two concurrent writers: one of
/// the two complete files). A symlink is followed (its target is replaced).
/// An existing non-regular file (/dev/null, a FIFO) is written in place, as
/// it cannot be replaced by a rename. New files get 0666 less the umask.
/// `write(fd)` writes the contents (BundleWriter::streamToFile streams
/// gigabytes of weights without holding them in one buffer).
template <typename WriteFn>
bool writeFileAtomicallyWith(const std::string &path, std::string &error,
                             WriteFn write) {
  auto failWith = [&](const std::string &why) {
    error = "cannot write '" + path + "': " + why;
    return false;
  };
  std::string target = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char *real = ::realpath(path.c_str(), nullptr);
    if (real) {
      target = real;
      ::free(real);
    }
  }
  bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return failWith("is a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
      return failWith(std::strerror(errno));
    bool ok = write(fd);
    int saved = errno;
    if (::close(fd) != 0 && ok)
      return failWith(std::strerror(errno));
    return ok || failWith(std::strerror(saved));
  }
  size_t slash = target.rfind('/');
  std::string dir =
      slash == std::string::npos ? "" : target.substr(0, slash + 1);
  std::string base =
      slash == std::string::npos ? target : target.substr(slash + 1);
  // The temp name stays within NAME_MAX whatever the target's length.
  // A new file's temp file is created with mode 0666 so that the kernel
  // applies the umask (and a default ACL) as for any new file. Reading the
  // umask with umask(0)/umask(mask) instead would race with other threads
  // and could leave the host process's umask at 0. Replacing a file, it is
  // created 0600 and given the old mode once open: another user never gets
  // a moment with more access than the old file allowed.
  std::string temp;
  int fd = -1;
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    unsigned long salt = (unsigned long)::getpid() * 2654435761u ^
                         (unsigned long)std::chrono::steady_clock::now()
                             .time_since_epoch()
                             .count() ^
                         ((unsigned long)counter.fetch_add(1) << 20);
    temp = dir + "." + base.substr(0, 200) + ".tmp-" + std::to_string(salt);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                exists ? 0600 : 0666);
    if (fd < 0 && errno != EEXIST)
      return failWith(std::strerror(errno));
  }
  if (fd < 0)
    return failWith(std::strerror(errno));
  bool ok = (!exists || ::fchmod(fd, st.st_mode & 07777) == 0) && write(fd);
  int saved = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && ::rename(temp.c_str(), target.c_str()) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    return failWith(std::strerror(saved));
  }
  return true;
}

inline bool writeFileAtomically(const std::string &path, const void *data,
                                size_t size, std::string &error) {
  return writeFileAtomicallyWith(
      path, error, [&](int fd) { return writeAll(fd, data, size); });
}

} // namespace tcc::io

#endif // TCC_RUNTIME_FILEIO_H
