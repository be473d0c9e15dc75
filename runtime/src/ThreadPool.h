//===- ThreadPool.h - the host backend's fork-join pool ---------*- C++ -*-===//
//
// Host kernels take a sub-range [begin, end) of their grid. The pool splits a
// grid into contiguous chunks, one per thread, and the calling thread takes
// the first chunk so that a pool of N threads starts only N-1 workers.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_THREADPOOL_H
#define TCC_RUNTIME_THREADPOOL_H

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tcc::rt {

class ThreadPool {
public:
  /// A pool of `numThreads` threads, the caller included (at least 1).
  explicit ThreadPool(unsigned numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return numThreads; }

  /// Chunk `i` of `n` over [0, total): contiguous, in order, sizes differing
  /// by at most one (the first total % n chunks are one larger).
  static std::pair<int64_t, int64_t> chunk(int64_t total, unsigned n,
                                           unsigned i);

  /// Calls fn(begin, end) on min(size(), total) chunks covering [0, total)
  /// and returns when all are done. A single chunk runs on the calling thread
  /// without waking anyone. Concurrent callers are served one at a time.
  void parallelFor(int64_t total,
                   const std::function<void(int64_t, int64_t)> &fn);

private:
  void workerLoop(unsigned index);

  unsigned numThreads;
  std::vector<std::thread> workers;
  std::mutex callMutex; // one parallelFor at a time
  std::mutex mutex;     // guards the fields below
  std::condition_variable wake, done;
  const std::function<void(int64_t, int64_t)> *job = nullptr;
  int64_t jobTotal = 0;
  unsigned jobChunks = 0;
  unsigned pending = 0;
  uint64_t generation = 0;
  bool stopping = false;
};

/// The host thread count: TCC_NUM_THREADS when set (1..1024), else the
/// hardware concurrency. False with `error` when the variable is malformed.
bool hostThreadCount(unsigned &out, std::string &error);

} // namespace tcc::rt

#endif // TCC_RUNTIME_THREADPOOL_H
