//===- ThreadPool.cpp - the host backend's fork-join pool -----------------===//
#include "runtime/src/ThreadPool.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace tcc::rt {

ThreadPool::ThreadPool(unsigned n) : numThreads(std::max(n, 1u)) {
  for (unsigned i = 1; i < numThreads; ++i)
    workers.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

std::pair<int64_t, int64_t> ThreadPool::chunk(int64_t total, unsigned n,
                                              unsigned i) {
  // Written without total * i, which could overflow for huge grids.
  int64_t base = total / n, extra = total % n;
  int64_t begin = base * i + std::min<int64_t>(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

void ThreadPool::parallelFor(int64_t total,
                             const std::function<void(int64_t, int64_t)> &fn) {
  if (total <= 0)
    return;
  unsigned chunks = (unsigned)std::min<int64_t>(numThreads, total);
  if (chunks == 1) {
    fn(0, total);
    return;
  }
  std::lock_guard<std::mutex> serial(callMutex);
  {
    std::lock_guard<std::mutex> lock(mutex);
    job = &fn;
    jobTotal = total;
    jobChunks = chunks;
    pending = chunks - 1;
    ++generation;
  }
  wake.notify_all();
  auto [begin, end] = chunk(total, chunks, 0);
  fn(begin, end);
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [this] { return pending == 0; });
  job = nullptr;
}

void ThreadPool::workerLoop(unsigned index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    wake.wait(lock, [&] { return stopping || generation != seen; });
    if (stopping)
      return;
    seen = generation;
    // Small grids use fewer chunks than threads; the rest sit this one out.
    if (index >= jobChunks)
      continue;
    const auto *fn = job;
    auto [begin, end] = chunk(jobTotal, jobChunks, index);
    lock.unlock();
    (*fn)(begin, end);
    lock.lock();
    if (--pending == 0)
      done.notify_one();
  }
}

bool hostThreadCount(unsigned &out, std::string &error) {
  if (const char *env = std::getenv("TCC_NUM_THREADS")) {
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(env, &end, 10);
    if (!*env || *end || errno || v < 1 || v > 1024) {
      error = std::string("TCC_NUM_THREADS must be an integer in [1, 1024], "
                          "got '") +
              env + "'";
      return false;
    }
    out = (unsigned)v;
    return true;
  }
  out = std::max(std::thread::hardware_concurrency(), 1u);
  return true;
}

} // namespace tcc::rt
