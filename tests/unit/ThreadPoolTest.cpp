//===- ThreadPoolTest.cpp - grid splitting of the host backend ------------===//
#include "runtime/src/ThreadPool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <map>
#include <set>

using tcc::rt::ThreadPool;

TEST_CASE("chunks are contiguous, ordered and balanced", "[threadpool]") {
  // Hand-derived: 10 over 4 is 3, 3, 2, 2.
  CHECK(ThreadPool::chunk(10, 4, 0) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(ThreadPool::chunk(10, 4, 1) == std::pair<int64_t, int64_t>{3, 6});
  CHECK(ThreadPool::chunk(10, 4, 2) == std::pair<int64_t, int64_t>{6, 8});
  CHECK(ThreadPool::chunk(10, 4, 3) == std::pair<int64_t, int64_t>{8, 10});
  for (int64_t total : {1LL, 2LL, 7LL, 64LL, 1000003LL, 1LL << 62})
    for (unsigned n = 1; n <= 9; ++n) {
      int64_t pos = 0;
      for (unsigned i = 0; i < n; ++i) {
        auto [b, e] = ThreadPool::chunk(total, n, i);
        REQUIRE(b == pos);
        REQUIRE(e - b >= total / n);
        REQUIRE(e - b <= total / n + 1);
        pos = e;
      }
      REQUIRE(pos == total);
    }
}

TEST_CASE("parallelFor covers the grid exactly once", "[threadpool]") {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    REQUIRE(pool.size() == threads);
    for (int64_t total : {0, 1, 2, 3, 5, 8, 9, 100, 1001}) {
      std::vector<std::atomic<int>> hits(total);
      std::atomic<unsigned> calls{0};
      std::mutex m;
      std::set<std::thread::id> ids;
      pool.parallelFor(total, [&](int64_t b, int64_t e) {
        ++calls;
        {
          std::lock_guard<std::mutex> lock(m);
          ids.insert(std::this_thread::get_id());
        }
        for (int64_t i = b; i < e; ++i)
          ++hits[i];
      });
      INFO("threads " << threads << " total " << total);
      for (int64_t i = 0; i < total; ++i)
        REQUIRE(hits[i] == 1);
      unsigned expectChunks = (unsigned)std::min<int64_t>(threads, total);
      REQUIRE(calls == expectChunks);
      REQUIRE(ids.size() == expectChunks); // one chunk per thread
      if (expectChunks == 1)
        REQUIRE(*ids.begin() == std::this_thread::get_id());
    }
  }
}

TEST_CASE("parallelFor serves concurrent callers", "[threadpool]") {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  auto work = [&] {
    for (int r = 0; r < 200; ++r)
      pool.parallelFor(37, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          sum += i;
      });
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  CHECK(sum == 2 * 200 * (36 * 37 / 2));
}

TEST_CASE("TCC_NUM_THREADS overrides the thread count", "[threadpool]") {
  unsigned n = 0;
  std::string err;
  setenv("TCC_NUM_THREADS", "3", 1);
  CHECK(tcc::rt::hostThreadCount(n, err));
  CHECK(n == 3);
  for (const char *bad : {"0", "-2", "abc", "", "4x", "100000"}) {
    setenv("TCC_NUM_THREADS", bad, 1);
    CHECK_FALSE(tcc::rt::hostThreadCount(n, err));
    CHECK(err.find("TCC_NUM_THREADS") != std::string::npos);
  }
  unsetenv("TCC_NUM_THREADS");
  CHECK(tcc::rt::hostThreadCount(n, err));
  CHECK(n >= 1);
}
