//===- HostMemory.cpp - how much host memory a model may still get --------===//
//
// Loading refuses a model whose memory plan cannot fit (Runtime.cpp), before
// anything is allocated: Linux overcommits, so allocations that exceed the
// machine succeed and the process is killed later, half-way through a run.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Backend.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <sys/resource.h>
#include <unistd.h>

namespace tcc::rt {
namespace {

/// Reads the first line of a small /proc or /sys file.
bool firstLine(const std::string &path, std::string &line) {
  std::ifstream in(path);
  return in && std::getline(in, line);
}

/// MemAvailable + SwapFree from /proc/meminfo, in bytes.
bool meminfo(uint64_t &bytes) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value, available = 0, swap = 0;
  bool found = false;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit); // " kB"
    if (key == "MemAvailable:") {
      available = value * 1024;
      found = true;
    } else if (key == "SwapFree:") {
      swap = value * 1024;
    }
  }
  bytes = available + swap;
  return found;
}

/// The room left under the memory.max of this process's cgroup (v2) and of
/// every cgroup above it.
bool cgroupRoom(uint64_t &bytes) {
  std::string line;
  if (!firstLine("/proc/self/cgroup", line) || line.rfind("0::", 0) != 0)
    return false;
  std::string path = line.substr(3);
  bool found = false;
  for (;;) {
    std::string dir = "/sys/fs/cgroup" + (path == "/" ? "" : path);
    std::string max, current;
    if (firstLine(dir + "/memory.max", max) && max != "max" &&
        firstLine(dir + "/memory.current", current)) {
      uint64_t m = std::strtoull(max.c_str(), nullptr, 10);
      uint64_t c = std::strtoull(current.c_str(), nullptr, 10);
      uint64_t room = m > c ? m - c : 0;
      bytes = found ? std::min(bytes, room) : room;
      found = true;
    }
    if (path.empty() || path == "/")
      break;
    size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return found;
}

/// The address space left under RLIMIT_AS (ulimit -v).
bool addressSpaceRoom(uint64_t &bytes) {
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return false;
  std::string line;
  if (!firstLine("/proc/self/statm", line))
    return false;
  uint64_t pages = std::strtoull(line.c_str(), nullptr, 10);
  uint64_t used = pages * (uint64_t)sysconf(_SC_PAGESIZE);
  bytes = limit.rlim_cur > used ? limit.rlim_cur - used : 0;
  return true;
}

} // namespace

bool hostAvailableMemory(uint64_t &bytes, std::string &what) {
  bool found = false;
  auto consider = [&](bool (*read)(uint64_t &), const char *source) {
    uint64_t room = 0;
    if (read(room) && (!found || room < bytes)) {
      bytes = room;
      what = source;
      found = true;
    }
  };
  consider(meminfo, "available host memory");
  consider(cgroupRoom, "host memory left under the cgroup limit");
  consider(addressSpaceRoom,
           "address space left under the process limit (ulimit -v)");
  return found;
}

} // namespace tcc::rt
