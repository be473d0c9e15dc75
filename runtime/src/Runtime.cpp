//===- Runtime.cpp - the tccrt C API over the backends --------------------===//
//
// Loading turns a validated bundle into device state: params uploaded, one
// arena for the temps, kernels resolved. Running binds the user's buffers
// into the launch list, zeroes the status counters, launches, and turns a
// non-zero counter into the model's error message. On a CUDA or HIP device
// the queued part of a run (zeroing and launches) may be recorded once as a
// graph and replayed.
//
//===----------------------------------------------------------------------===//
#include "runtime/include/tccrt.h"

#include "runtime/src/Backend.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/CpuFeatures.h"
#include "runtime/src/FileIO.h"
#include "runtime/src/LaunchOrder.h"
#include "runtime/src/OneLine.h"
#include "runtime/src/ParamRecipe.h"
#include "runtime/src/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <unordered_set>

using namespace tcc;
using namespace tcc::bundle;
using namespace tcc::rt;

// The C enum mirrors tcc::DType so that conversions are casts.
static_assert((int)TCCRT_F64 == (int)DType::F64 &&
                  (int)TCCRT_F32 == (int)DType::F32 &&
                  (int)TCCRT_F16 == (int)DType::F16 &&
                  (int)TCCRT_BF16 == (int)DType::BF16 &&
                  (int)TCCRT_F8E4M3 == (int)DType::F8E4M3 &&
                  (int)TCCRT_F8E5M2 == (int)DType::F8E5M2 &&
                  (int)TCCRT_I8 == (int)DType::I8 &&
                  (int)TCCRT_I32 == (int)DType::I32 &&
                  (int)TCCRT_I64 == (int)DType::I64 &&
                  (int)TCCRT_BOOL == (int)DType::Bool,
              "tccrt_dtype must match tcc::DType");

namespace {
thread_local std::string threadError;
} // namespace

struct tccrt_context {
  tccrt_device_kind kind = TCCRT_DEVICE_HOST;
  std::unique_ptr<Backend> backend;
  /// Host threads that compute recipe params at load: the host backend's
  /// count (TCC_NUM_THREADS when the context was created).
  unsigned recipeThreads = 1;
  std::string lastError;
  size_t liveModels = 0;
  std::unordered_set<void *> userAllocations; // from tccrt_malloc
  /// Held by every call on the context or its models: the backend (its
  /// thread pool, stream), lastError and the models' bindings are shared
  /// state, so calls from several threads are serialized.
  std::mutex mutex;
};

struct tccrt_model {
  tccrt_context *ctx = nullptr;
  ModelDesc desc;
  std::vector<void *> buffers; // base pointer per buffer index
  std::vector<bool> inputBound, outputBound;
  std::vector<void *> deviceMemory; // params and the arena, freed at the end
  std::vector<std::unique_ptr<Module>> modules; // per code index (or null)
  std::vector<KernelHandle> kernels;            // per kernel index
  std::vector<void *> args;                     // scratch for one launch
  std::vector<TensorMapArg> maps;               // scratch for one launch
  /// Per init launch and per launch: its tensor maps as last encoded.
  std::vector<std::vector<EncodedTensorMap>> initMapCache, mapCache;
  bool useGraph = false;                        // option "cuda_graph"
  bool gridDependency = true;                   // option "grid_dependency"
  /// Option "graph_concurrency": a recorded graph orders launches by the
  /// memory they share (LaunchOrder.h) rather than as a chain.
  bool graphConcurrency = true;
  /// How the recorded graph orders its work (tccrt_model_graph_order).
  std::string graphOrder;
  std::unique_ptr<Graph> graph; // recorded at the first run after a change

  ~tccrt_model() {
    graph.reset();
    kernels.clear();
    modules.clear();
    for (void *p : deviceMemory)
      ctx->backend->deallocate(p);
  }
};

namespace {

tccrt_status fail(tccrt_context *ctx, tccrt_status status,
                  const std::string &message) {
  threadError = oneLine(message);
  if (ctx)
    ctx->lastError = threadError;
  return status;
}

/// Runs `body`, turning escaping C++ exceptions into statuses: nothing may
/// unwind through the C boundary.
template <typename Body> tccrt_status guarded(tccrt_context *ctx, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(ctx, TCCRT_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return fail(ctx, TCCRT_ERROR_DEVICE,
                std::string("internal error: ") + e.what());
  }
}

tccrt_status nullArg(tccrt_context *ctx, const char *what) {
  return fail(ctx, TCCRT_ERROR_INVALID_ARGUMENT,
              std::string(what) + " must not be NULL");
}

/// "1.50 GiB (1610612736 bytes)".
std::string formatBytes(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GiB (%llu bytes)",
                (double)bytes / (double)(1ull << 30),
                (unsigned long long)bytes);
  return buf;
}

/// Refuses a model whose memory plan (params, arena, and the inputs and
/// outputs a run needs bound on this device) exceeds what the device can
/// still give, before anything is allocated: Linux overcommits host memory,
/// so such a model would otherwise be killed half-way through a run.
tccrt_status checkMemoryPlan(tccrt_context *ctx, const ModelDesc &d) {
  // Each term is below 2^48 (Manifest.h), but a manifest may list 2^16 of
  // them: the sums saturate instead of wrapping.
  auto add = [](uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  };
  auto total = [&](const std::vector<TensorDesc> &list) {
    uint64_t sum = 0;
    for (const TensorDesc &t : list)
      sum = add(sum, t.bytes);
    return sum;
  };
  uint64_t params = total(d.params), inputs = total(d.inputs),
           outputs = total(d.outputs);
  // Derived params (version 3) persist like params; the raw params that
  // only the init reads are freed after it, but all live during it.
  for (const BufferDesc &b : d.buffers)
    if (b.kind == BufferKind::Derived)
      params = add(params, b.bytes);
  uint64_t need = add(add(params, d.arenaBytes), add(inputs, outputs));
  uint64_t available;
  std::string what;
  if (!ctx->backend->availableMemory(available, what) || need <= available)
    return TCCRT_OK;
  return fail(ctx, TCCRT_ERROR_OUT_OF_MEMORY,
              "model needs " + formatBytes(need) + " (params " +
                  formatBytes(params) + ", arena " + formatBytes(d.arenaBytes) +
                  ", inputs " + formatBytes(inputs) + ", outputs " +
                  formatBytes(outputs) + ") but " + ctx->backend->describe() +
                  " has only " + formatBytes(available) + " of " + what);
}

/// Elements [begin, end) of a recipe param at `dst`, on several threads when
/// there are many: the generator jumps to each thread's range, so the bytes
/// do not depend on the split. An 89 M-param random model takes seconds on
/// one thread.
void generateRecipe(const ParamRecipe &r, DType dtype, uint64_t begin,
                    uint64_t end, uint8_t *dst, unsigned maxThreads) {
  uint64_t n = end - begin;
  unsigned threads =
      n < (uint64_t(1) << 20)
          ? 1
          : (unsigned)std::min<uint64_t>({maxThreads, 16, n / (1 << 18) + 1});
  size_t esize = dtypeSize(dtype);
  auto part = [&](unsigned i) {
    auto [b, e] = ThreadPool::chunk((int64_t)n, threads, i);
    materialiseRecipe(r, dtype, begin + b, begin + e, dst + b * esize);
  };
  std::vector<std::thread> workers;
  unsigned i = 1;
  try {
    for (; i < threads; ++i)
      workers.emplace_back(part, i);
  } catch (const std::system_error &) {
    // No more threads: this one does the rest.
  }
  for (unsigned j = i; j < threads; ++j)
    part(j);
  part(0);
  for (std::thread &w : workers)
    w.join();
}

/// Fills a param's device memory from its recipe: in place on the host,
/// else through a bounded host buffer uploaded piece by piece.
bool materialiseParam(tccrt_context *ctx, const TensorDesc &p, void *mem,
                      std::string &err) {
  size_t esize = dtypeSize(p.dtype);
  uint64_t numel = esize ? p.bytes / esize : 0;
  if (ctx->kind == TCCRT_DEVICE_HOST) {
    generateRecipe(*p.recipe, p.dtype, 0, numel, static_cast<uint8_t *>(mem),
                   ctx->recipeThreads);
    return true;
  }
  const uint64_t chunk = (uint64_t(32) << 20) / esize;
  std::vector<uint8_t> staging((size_t)(std::min(numel, chunk) * esize));
  for (uint64_t begin = 0; begin < numel; begin += chunk) {
    uint64_t end = std::min(numel, begin + chunk);
    generateRecipe(*p.recipe, p.dtype, begin, end, staging.data(),
                   ctx->recipeThreads);
    if (!ctx->backend->copyToDevice(static_cast<uint8_t *>(mem) + begin * esize,
                                    staging.data(),
                                    (size_t)((end - begin) * esize), err))
      return false;
  }
  return true;
}

tccrt_status runInit(tccrt_model *m);

tccrt_status loadModel(tccrt_context *ctx, std::unique_ptr<Bundle> bundle,
                       tccrt_model **out) {
  auto m = std::make_unique<tccrt_model>();
  m->ctx = ctx;
  m->desc = bundle->model();
  const ModelDesc &d = m->desc;
  Backend &be = *ctx->backend;
  std::string err;
  // Encoded at the first launch, re-encoded when a binding moves a buffer.
  for (const LaunchDesc &l : d.initLaunches)
    m->initMapCache.emplace_back(l.tensorMaps.size());
  for (const LaunchDesc &l : d.launches)
    m->mapCache.emplace_back(l.tensorMaps.size());

  if (tccrt_status s = checkMemoryPlan(ctx, d); s != TCCRT_OK)
    return s;

  // Code: every kernel must come from a code object this device runs.
  m->modules.resize(d.code.size());
  for (const KernelDesc &k : d.kernels) {
    const CodeDesc &c = d.code[k.code];
    if (!be.acceptsTarget(c.target)) {
      std::string targets;
      for (const std::string &t : d.targets)
        targets += (targets.empty() ? "" : ", ") + t;
      return fail(ctx, TCCRT_ERROR_UNAVAILABLE,
                  "bundle was compiled for " + targets +
                      " but this context "
                      "runs " +
                      be.describe() + " (kernel '" + k.name +
                      "' has code for " + c.target + ")");
    }
    if (!m->modules[k.code]) {
      // Host code for a newer CPU would die of SIGILL in the middle of a run.
      if (c.kind == TargetKind::Host && !c.cpuFeatures.empty()) {
        std::vector<std::string> missing =
            tcc::cpu::missingFeatures(c.cpuFeatures);
        if (!missing.empty()) {
          std::string names;
          for (const std::string &f : missing)
            names += (names.empty() ? "" : ", ") + f;
          return fail(ctx, TCCRT_ERROR_UNAVAILABLE,
                      "bundle was compiled for CPU " +
                          (c.cpu.empty() ? std::string("?") : c.cpu) +
                          " and needs x86 features this CPU lacks: " + names);
        }
      }
      auto [bytes, size] = bundle->blob(c.blob);
      m->modules[k.code] = be.loadModule(bytes, size, c.blob, err);
      if (!m->modules[k.code])
        return fail(ctx, TCCRT_ERROR_INVALID_BUNDLE, err);
    }
    KernelHandle h;
    if (!m->modules[k.code]->getKernel(k.symbol, h, err))
      return fail(ctx, TCCRT_ERROR_INVALID_BUNDLE, err);
    m->kernels.push_back(h);
  }
  // GPU kernels: checked against their launches (parameters, block size,
  // shared memory) once, so that a run cannot fail on what loading can see.
  std::vector<KernelUse> uses(d.kernels.size());
  std::vector<const LaunchDesc *> allLaunches;
  for (const LaunchDesc &l : d.initLaunches)
    allLaunches.push_back(&l);
  for (const LaunchDesc &l : d.launches)
    allLaunches.push_back(&l);
  for (const LaunchDesc *launch : allLaunches) {
    const LaunchDesc &l = *launch;
    if (l.kind != LaunchDesc::Kind::Kernel || !l.gpu)
      continue;
    KernelUse &u = uses[l.kernel];
    const std::array<uint32_t, 3> &cluster = d.kernels[l.kernel].cluster;
    for (int i = 0; i < 3; ++i)
      if (l.gridDims[i] % cluster[i])
        return fail(ctx, TCCRT_ERROR_INVALID_BUNDLE,
                    "kernel '" + d.kernels[l.kernel].name + "': a grid of " +
                        std::to_string(l.gridDims[i]) + " blocks in " +
                        "xyz"[i] + " is not a multiple of its cluster's " +
                        std::to_string(cluster[i]));
    u.launched = true;
    u.numArgs = l.args.size();
    u.numTensorMaps = l.tensorMaps.size();
    u.maxBlockThreads = std::max<uint64_t>(u.maxBlockThreads,
                                           (uint64_t)l.blockDims[0] *
                                               l.blockDims[1] * l.blockDims[2]);
    for (int i = 0; i < 3; ++i)
      u.maxGridThreads[i] = std::max<uint64_t>(
          u.maxGridThreads[i], (uint64_t)l.gridDims[i] * l.blockDims[i]);
  }
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    if (d.code[d.kernels[i].code].kind == TargetKind::Host)
      continue;
    uses[i].name = d.kernels[i].name;
    uses[i].sharedBytes = d.kernels[i].sharedBytes;
    uses[i].cluster = d.kernels[i].cluster;
    if (!be.prepareKernel(m->kernels[i], uses[i], err))
      return fail(ctx, TCCRT_ERROR_INVALID_BUNDLE, err);
  }

  // Memory: params uploaded from their blobs or computed from their
  // recipes, temps placed in one arena.
  m->buffers.assign(d.buffers.size(), nullptr);
  for (const TensorDesc &p : d.params) {
    void *mem;
    if (!be.allocate(p.bytes, mem, err))
      return fail(ctx, TCCRT_ERROR_OUT_OF_MEMORY,
                  "param '" + p.name + "': " + err);
    m->deviceMemory.push_back(mem);
    if (p.recipe) {
      if (!materialiseParam(ctx, p, mem, err))
        return fail(ctx, TCCRT_ERROR_DEVICE, err);
      m->buffers[p.buffer] = mem;
      continue;
    }
    auto [bytes, size] = bundle->blob(p.blob);
    if (!be.copyToDevice(mem, bytes, size, err))
      return fail(ctx, TCCRT_ERROR_DEVICE, err);
    m->buffers[p.buffer] = mem;
  }
  void *arena;
  if (!be.allocate(d.arenaBytes, arena, err))
    return fail(ctx, TCCRT_ERROR_OUT_OF_MEMORY, "arena: " + err);
  m->deviceMemory.push_back(arena);
  for (size_t i = 0; i < d.buffers.size(); ++i)
    if (d.buffers[i].kind == BufferKind::Temp)
      m->buffers[i] = static_cast<uint8_t *>(arena) + d.buffers[i].offset;
  if (tccrt_status s = runInit(m.get()); s != TCCRT_OK)
    return s;

  m->inputBound.assign(d.inputs.size(), false);
  m->outputBound.assign(d.outputs.size(), false);
  ++ctx->liveModels;
  *out = m.release();
  return TCCRT_OK;
}

tccrt_status tensorInfo(const tccrt_model *m,
                        const std::vector<TensorDesc> &list, size_t index,
                        const char *what, tccrt_tensor_info *out) {
  if (index >= list.size())
    return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                std::string(what) + " index " + std::to_string(index) +
                    " is out of range (the model has " +
                    std::to_string(list.size()) + ")");
  if (!out)
    return nullArg(m->ctx, "info");
  const TensorDesc &t = list[index];
  out->name = t.name.c_str();
  out->dtype = static_cast<tccrt_dtype>(t.dtype);
  out->dtype_name = dtypeName(t.dtype);
  out->rank = (int32_t)t.shape.size();
  out->shape = t.shape.data();
  out->bytes = (size_t)t.bytes;
  return TCCRT_OK;
}

tccrt_status findTensor(const tccrt_model *m,
                        const std::vector<TensorDesc> &list, const char *name,
                        const char *what, size_t *index) {
  if (!name)
    return nullArg(m->ctx, "name");
  if (!index)
    return nullArg(m->ctx, "index");
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) {
      *index = i;
      return TCCRT_OK;
    }
  std::string known;
  for (const TensorDesc &t : list)
    known += (known.empty() ? "" : ", ") + t.name;
  return fail(m->ctx, TCCRT_ERROR_NOT_FOUND,
              std::string("model has no ") + what + " named '" + name + "' (" +
                  what + "s: " + (known.empty() ? "none" : known) + ")");
}

tccrt_status bind(tccrt_model *m, bool input, size_t index, const void *data,
                  size_t bytes) {
  const auto &list = input ? m->desc.inputs : m->desc.outputs;
  const char *what = input ? "input" : "output";
  if (index >= list.size())
    return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                std::string(what) + " index " + std::to_string(index) +
                    " is out of range (the model has " +
                    std::to_string(list.size()) + ")");
  const TensorDesc &t = list[index];
  if (bytes != t.bytes)
    return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                std::string(what) + " '" + t.name + "' (" + dtypeName(t.dtype) +
                    ") needs " + std::to_string(t.bytes) + " bytes, got " +
                    std::to_string(bytes));
  if (!data && t.bytes)
    return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                std::string("buffer for ") + what + " '" + t.name +
                    "' is NULL");
  // GPU kernels read and write 16 bytes at a time (vector accesses, cp.async)
  // and are compiled assuming it; device allocations are aligned far more.
  if (m->ctx->kind != TCCRT_DEVICE_HOST && t.bytes &&
      reinterpret_cast<uintptr_t>(data) % 16 != 0)
    return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                std::string("buffer for ") + what + " '" + t.name +
                    "' is not 16-byte aligned (GPU buffers must be; "
                    "tccrt_malloc's are)");
  std::string err;
  if (!m->ctx->backend->checkBuffer(data, t.bytes, err))
    return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                std::string(what) + " '" + t.name + "': " + err);
  // A recorded graph holds the old pointers.
  if (m->buffers[t.buffer] != data)
    m->graph.reset();
  // Kernels receive plain pointers; inputs are only ever read.
  m->buffers[t.buffer] = const_cast<void *>(data);
  (input ? m->inputBound : m->outputBound)[index] = true;
  return TCCRT_OK;
}

tccrt_status checkBound(tccrt_model *m) {
  const ModelDesc &d = m->desc;
  for (size_t i = 0; i < d.inputs.size(); ++i)
    if (!m->inputBound[i])
      return fail(m->ctx, TCCRT_ERROR_UNBOUND,
                  "input '" + d.inputs[i].name + "' is not bound");
  for (size_t i = 0; i < d.outputs.size(); ++i)
    if (!m->outputBound[i])
      return fail(m->ctx, TCCRT_ERROR_UNBOUND,
                  "output '" + d.outputs[i].name + "' is not bound");
  return TCCRT_OK;
}

/// Called before (`after` false) and after each launch of a list that is
/// profiled, with the launch's index.
using LaunchHook =
    std::function<bool(size_t index, bool after, std::string &err)>;

/// A recorded graph's order: per piece of work of a run (the status
/// counters' zero fills, then the launches), the earlier ones it waits for.
using WorkOrder = std::vector<std::vector<size_t>>;

/// Whether launch `l` may start beside its predecessor kernel, waiting for
/// that grid itself.
bool mayOverlap(const tccrt_model *m, const LaunchDesc &l, bool hooked) {
  return l.gpu && !hooked && m->gridDependency &&
         m->desc.kernels[l.kernel].gridDependency;
}

/// Queues `launches` in order; `mapCache` holds their encoded tensor maps.
/// `hook`, when given, runs around each launch (profiling). With `order`
/// (while recording a graph), launch i waits only for the work of
/// (*order)[first + i].
bool enqueueList(tccrt_model *m, const std::vector<LaunchDesc> &launches,
                 std::vector<std::vector<EncodedTensorMap>> &mapCache,
                 const char *what, std::string &err,
                 const LaunchHook *hook = nullptr,
                 const WorkOrder *order = nullptr, size_t first = 0) {
  const ModelDesc &d = m->desc;
  Backend &be = *m->ctx->backend;
  // Whether the work queued last is a GPU kernel: only a kernel's successor
  // may overlap it (a hook records events between launches).
  bool afterKernel = false;
  std::vector<bool> overlap;
  for (size_t i = 0; i < launches.size(); ++i) {
    const LaunchDesc &l = launches[i];
    if (hook && !(*hook)(i, false, err))
      return false;
    if (order) {
      // Edges from kernels into a kernel that waits for its grids itself
      // may let it start early, as the chain's launch attribute would.
      const std::vector<size_t> &after = (*order)[first + i];
      overlap.assign(after.size(), false);
      for (size_t a = 0; a < after.size(); ++a)
        overlap[a] =
            l.kind == LaunchDesc::Kind::Kernel && after[a] >= first &&
            launches[after[a] - first].kind == LaunchDesc::Kind::Kernel &&
            launches[after[a] - first].gpu && mayOverlap(m, l, hook);
      if (!be.orderNextAfter(after, overlap, err))
        return false;
      afterKernel = false; // the edges say it, not the launch
    }
    bool ok;
    if (l.kind == LaunchDesc::Kind::Copy) {
      ok = be.copyOnDevice(m->buffers[l.dst], m->buffers[l.src], l.bytes, err);
      afterKernel = false;
    } else {
      m->args.clear();
      for (size_t b : l.args)
        m->args.push_back(m->buffers[b]);
      m->maps.clear();
      for (size_t t = 0; t < l.tensorMaps.size(); ++t)
        m->maps.push_back({&l.tensorMaps[t], m->buffers[l.tensorMaps[t].buffer],
                           &mapCache[i][t]});
      if (l.gpu)
        ok = be.launchBlocks(
            m->kernels[l.kernel], m->args.data(), m->args.size(),
            m->maps.data(), m->maps.size(), l.gridDims, l.blockDims,
            d.kernels[l.kernel].sharedBytes, d.kernels[l.kernel].cluster,
            afterKernel && mayOverlap(m, l, hook), err);
      else if (!m->maps.empty())
        ok = false, err = "host kernels take no tensor maps";
      else
        ok = l.grid == 0 || be.launch(m->kernels[l.kernel], m->args.data(),
                                      m->args.size(), l.grid, err);
      afterKernel = l.gpu;
      if (!ok)
        err = std::string(what) + " " + std::to_string(i) + " (kernel '" +
              d.kernels[l.kernel].name + "'): " + err;
    }
    if (!ok || (hook && !(*hook)(i, true, err)))
      return false;
  }
  return true;
}

/// Queues a run's work: the status counters zeroed, then every launch and
/// copy in order; `hook` as enqueueList's, and also called with index
/// SIZE_MAX before and after the zeroing. `order` as enqueueList's.
bool enqueueLaunches(tccrt_model *m, std::string &err,
                     const LaunchHook *hook = nullptr,
                     const WorkOrder *order = nullptr) {
  Backend &be = *m->ctx->backend;
  if (hook && !(*hook)(SIZE_MAX, false, err))
    return false;
  const std::vector<StatusDesc> &status = m->desc.status;
  for (size_t i = 0; i < status.size(); ++i) {
    if (order && !be.orderNextAfter((*order)[i], {}, err))
      return false;
    if (!be.fillZero(m->buffers[status[i].buffer], 4, err))
      return false;
  }
  if (hook && !(*hook)(SIZE_MAX, true, err))
    return false;
  return enqueueList(m, m->desc.launches, m->mapCache, "launch", err, hook,
                     order, status.size());
}

/// The order of a run's work by the memory each piece touches at the
/// current bindings (LaunchOrder.h): the zero fills write their counters; a
/// launch writes the arguments its "writes" lists (all of them when it has
/// none; only their "write_slices" where it has them) and reads the rest
/// and its tensor maps' buffers; a copy reads its source and writes its
/// destination.
WorkOrder runOrder(const tccrt_model *m) {
  const ModelDesc &d = m->desc;
  auto range = [&](size_t b, bool write) {
    auto begin = reinterpret_cast<uintptr_t>(m->buffers[b]);
    return MemoryRange{begin, begin + (uintptr_t)d.buffers[b].bytes, write};
  };
  std::vector<std::vector<MemoryRange>> items;
  for (const StatusDesc &s : d.status)
    items.push_back({range(s.buffer, true)});
  for (const LaunchDesc &l : d.launches) {
    std::vector<MemoryRange> touched;
    if (l.kind == LaunchDesc::Kind::Copy) {
      touched = {range(l.src, false), range(l.dst, true)};
    } else {
      std::vector<bool> written(l.args.size(), !l.writesListed);
      for (size_t p : l.writes)
        written[p] = true;
      for (size_t a = 0; a < l.args.size(); ++a)
        touched.push_back(range(l.args[a], written[a]));
      for (const LaunchDesc::WriteSlice &w : l.writeSlices) {
        MemoryRange &r = touched[w.arg];
        r.stride = w.stride;
        r.offset = w.offset;
        r.bytes = w.bytes;
      }
      // A map over a buffer the arguments do not name is assumed written.
      for (const TensorMapDesc &t : l.tensorMaps)
        if (std::find(l.args.begin(), l.args.end(), t.buffer) == l.args.end())
          touched.push_back(range(t.buffer, true));
    }
    items.push_back(std::move(touched));
  }
  return orderDependencies(items);
}

/// Version 3: allocates the derived params, runs the init launches once
/// (params are filled, the arena is free) and waits for them; then frees
/// the params that no run reads (the raw weight of a transpose).
tccrt_status runInit(tccrt_model *m) {
  const ModelDesc &d = m->desc;
  if (d.initLaunches.empty())
    return TCCRT_OK;
  Backend &be = *m->ctx->backend;
  std::string err;
  for (size_t i = 0; i < d.buffers.size(); ++i) {
    if (d.buffers[i].kind != BufferKind::Derived)
      continue;
    void *mem;
    if (!be.allocate(d.buffers[i].bytes, mem, err))
      return fail(m->ctx, TCCRT_ERROR_OUT_OF_MEMORY,
                  "derived param buffer " + std::to_string(d.buffers[i].id) +
                      ": " + err);
    m->deviceMemory.push_back(mem);
    m->buffers[i] = mem;
  }
  if (!enqueueList(m, d.initLaunches, m->initMapCache, "init launch", err) ||
      !be.synchronize(err))
    return fail(m->ctx, TCCRT_ERROR_DEVICE, "model init: " + err);
  auto reads = [&](const std::vector<LaunchDesc> &launches) {
    std::vector<bool> read(d.buffers.size(), false);
    for (const LaunchDesc &l : launches) {
      for (size_t b : l.args)
        read[b] = true;
      for (const TensorMapDesc &t : l.tensorMaps)
        read[t.buffer] = true;
      if (l.kind == LaunchDesc::Kind::Copy)
        read[l.src] = true;
    }
    return read;
  };
  std::vector<bool> readByRun = reads(d.launches),
                    readByInit = reads(d.initLaunches);
  for (const TensorDesc &p : d.params) {
    void *mem = m->buffers[p.buffer];
    if (readByRun[p.buffer] || !readByInit[p.buffer] || !mem)
      continue;
    auto it = std::find(m->deviceMemory.begin(), m->deviceMemory.end(), mem);
    if (it == m->deviceMemory.end())
      continue;
    m->deviceMemory.erase(it);
    be.deallocate(mem);
    m->buffers[p.buffer] = nullptr;
  }
  return TCCRT_OK;
}

/// Queues one run, through the recorded graph when the model uses one.
tccrt_status enqueueRun(tccrt_model *m) {
  std::string err;
  if (m->useGraph) {
    if (!m->graph) {
      Backend &be = *m->ctx->backend;
      m->graphOrder = "chain";
      if (m->graphConcurrency && be.capturesOrder()) {
        WorkOrder order = runOrder(m);
        m->graph = be.capture(
            [m, &order](std::string &e) {
              return enqueueLaunches(m, e, nullptr, &order);
            },
            err);
        size_t edges = 0;
        for (const std::vector<size_t> &after : order)
          edges += after.size();
        // A driver that refuses the edges still runs the chain.
        m->graphOrder =
            m->graph
                ? "concurrent: " + std::to_string(edges) + " edges among " +
                      std::to_string(order.size()) + " pieces of work"
                : "chain: " + err;
      }
      if (!m->graph)
        m->graph = be.capture(
            [m](std::string &e) { return enqueueLaunches(m, e); }, err);
      if (!m->graph)
        return fail(m->ctx, TCCRT_ERROR_DEVICE,
                    std::string("recording the ") +
                        (m->ctx->kind == TCCRT_DEVICE_HIP ? "HIP" : "CUDA") +
                        " graph: " + err);
    }
    if (!m->graph->launch(err))
      return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
    return TCCRT_OK;
  }
  return enqueueLaunches(m, err) ? TCCRT_OK
                                 : fail(m->ctx, TCCRT_ERROR_DEVICE, err);
}

/// Waits for the queued work, then turns the first non-zero status counter
/// into the run's error.
tccrt_status finishRun(tccrt_model *m) {
  Backend &be = *m->ctx->backend;
  std::string err;
  if (!be.synchronize(err))
    return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
  for (const StatusDesc &s : m->desc.status) {
    int32_t count = 0;
    if (!be.copyToHost(&count, m->buffers[s.buffer], 4, err))
      return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
    if (count != 0)
      return fail(m->ctx, TCCRT_ERROR_RUN_FAILED, s.message);
  }
  return TCCRT_OK;
}

tccrt_status run(tccrt_model *m) {
  tccrt_status s = checkBound(m);
  if (s == TCCRT_OK)
    s = enqueueRun(m);
  return s == TCCRT_OK ? finishRun(m) : s;
}

/// Runs back to back and times each run: with device timestamps around the
/// queued work where the device has them (no wait between runs, so host
/// overheads between runs are not counted), else with the host clock around
/// whole runs.
tccrt_status timeRuns(tccrt_model *m, size_t runs, double *ms) {
  tccrt_status s = checkBound(m);
  if (s != TCCRT_OK)
    return s;
  Backend &be = *m->ctx->backend;
  if (!be.hasDeviceTimer()) {
    for (size_t i = 0; i < runs; ++i) {
      auto start = std::chrono::steady_clock::now();
      if ((s = enqueueRun(m)) != TCCRT_OK || (s = finishRun(m)) != TCCRT_OK)
        return s;
      auto end = std::chrono::steady_clock::now();
      ms[i] = std::chrono::duration<double, std::milli>(end - start).count();
    }
    return TCCRT_OK;
  }
  // Timestamps are reused chunk by chunk, so memory stays bounded.
  constexpr size_t kChunk = 256;
  std::string err;
  if (!be.startTimer(2 * std::min(runs, kChunk), err))
    return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
  for (size_t first = 0; first < runs; first += kChunk) {
    size_t n = std::min(kChunk, runs - first);
    for (size_t i = 0; i < n; ++i) {
      if (!be.recordTimestamp(2 * i, err))
        return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
      if ((s = enqueueRun(m)) != TCCRT_OK)
        return s;
      if (!be.recordTimestamp(2 * i + 1, err))
        return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
    }
    // Every run zeroes the counters first: this checks the chunk's last run,
    // and the runs all compute the same thing.
    if ((s = finishRun(m)) != TCCRT_OK)
      return s;
    for (size_t i = 0; i < n; ++i)
      if (!be.elapsedMs(2 * i, 2 * i + 1, ms[first + i], err))
        return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
  }
  return TCCRT_OK;
}

/// Runs back to back, timing every launch (tccrt_model_profile_runs): a
/// run's timestamps are its start, the end of the counters' zeroing, and
/// before and after each launch. On a GPU they are device events reused
/// chunk by chunk; on the host, the steady clock after waiting for the
/// work.
tccrt_status profileRuns(tccrt_model *m, size_t runs, double *launchMs,
                         double *gapMs, double *runMs) {
  tccrt_status s = checkBound(m);
  if (s != TCCRT_OK)
    return s;
  Backend &be = *m->ctx->backend;
  const size_t numLaunches = m->desc.launches.size();
  const size_t perRun = 2 * numLaunches + 2;
  // Timestamp k of a run: 0 its start, 1 after the zeroing, 2 + 2i before
  // launch i and 3 + 2i after it.
  auto slot = [](size_t index, bool after) {
    return index == SIZE_MAX ? size_t(after) : 2 + 2 * index + size_t(after);
  };
  const bool device = be.hasDeviceTimer();
  // Runs per chunk: a bounded number of events, at least one run.
  const size_t chunk = std::max<size_t>(1, 8192 / perRun);
  std::vector<double> host; // host clock readings (ms), per chunk
  std::string err;
  if (device && !be.startTimer(perRun * std::min(runs, chunk), err))
    return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
  const auto origin = std::chrono::steady_clock::now();
  for (size_t first = 0; first < runs; first += chunk) {
    size_t n = std::min(chunk, runs - first);
    host.assign(device ? 0 : n * perRun, 0.0);
    for (size_t r = 0; r < n; ++r) {
      LaunchHook hook = [&](size_t index, bool after, std::string &e) {
        size_t k = r * perRun + slot(index, after);
        if (device)
          return be.recordTimestamp(k, e);
        // Launches may return before they finish: wait for them.
        if (after && !be.synchronize(e))
          return false;
        host[k] = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - origin)
                      .count();
        return true;
      };
      if (!enqueueLaunches(m, err, &hook))
        return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
    }
    // Every run zeroes the counters first: this checks the chunk's last run.
    if ((s = finishRun(m)) != TCCRT_OK)
      return s;
    auto between = [&](size_t r, size_t from, size_t to, double &ms) -> bool {
      from += r * perRun, to += r * perRun;
      if (device)
        return be.elapsedMs(from, to, ms, err);
      ms = host[to] - host[from];
      return true;
    };
    for (size_t r = 0; r < n; ++r) {
      double *launch = launchMs + (first + r) * numLaunches;
      for (size_t i = 0; i < numLaunches; ++i) {
        if (!between(r, slot(i, false), slot(i, true), launch[i]))
          return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
        if (gapMs && !between(r, i ? slot(i - 1, true) : 1, slot(i, false),
                              gapMs[(first + r) * numLaunches + i]))
          return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
      }
      if (runMs && !between(r, 0, numLaunches ? slot(numLaunches - 1, true) : 1,
                            runMs[first + r]))
        return fail(m->ctx, TCCRT_ERROR_DEVICE, err);
    }
  }
  return TCCRT_OK;
}

tccrt_status setOption(tccrt_model *m, const std::string &name,
                       const std::string &value) {
  if (name == "cuda_graph") {
    if (value != "0" && value != "1")
      return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                  "option cuda_graph takes \"0\" or \"1\", not \"" + value +
                      "\"");
    // HIP mirrors CUDA's graphs, so the one option serves both.
    if (value == "1" && m->ctx->kind != TCCRT_DEVICE_CUDA &&
        m->ctx->kind != TCCRT_DEVICE_HIP)
      return fail(m->ctx, TCCRT_ERROR_UNAVAILABLE,
                  "option cuda_graph needs a CUDA context, this one runs " +
                      m->ctx->backend->describe() +
                      " (or a HIP context, where it records a HIP graph)");
    m->useGraph = value == "1";
    m->graph.reset();
    return TCCRT_OK;
  }
  // Options any context takes; a recorded graph depends on them.
  for (auto [option, flag] :
       {std::pair{"grid_dependency", &m->gridDependency},
        std::pair{"graph_concurrency", &m->graphConcurrency}}) {
    if (name != option)
      continue;
    if (value != "0" && value != "1")
      return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                  "option " + name + " takes \"0\" or \"1\", not \"" + value +
                      "\"");
    *flag = value == "1";
    m->graph.reset();
    return TCCRT_OK;
  }
  return fail(m->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
              "unknown model option '" + name +
                  "' (known: cuda_graph, grid_dependency, graph_concurrency)");
}

} // namespace

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

extern "C" {

int tccrt_api_version(void) { return TCCRT_API_VERSION; }

const char *tccrt_status_string(tccrt_status status) {
  switch (status) {
  case TCCRT_OK:
    return "ok";
  case TCCRT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case TCCRT_ERROR_INVALID_BUNDLE:
    return "invalid bundle";
  case TCCRT_ERROR_UNAVAILABLE:
    return "unavailable";
  case TCCRT_ERROR_NOT_FOUND:
    return "not found";
  case TCCRT_ERROR_UNBOUND:
    return "unbound input or output";
  case TCCRT_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case TCCRT_ERROR_RUN_FAILED:
    return "run failed";
  case TCCRT_ERROR_IO:
    return "I/O error";
  case TCCRT_ERROR_DEVICE:
    return "device error";
  }
  return "unknown status";
}

const char *tccrt_dtype_name(tccrt_dtype dtype) {
  if ((unsigned)dtype > (unsigned)TCCRT_BOOL)
    return "?";
  return dtypeName(static_cast<DType>(dtype));
}

size_t tccrt_dtype_size(tccrt_dtype dtype) {
  if ((unsigned)dtype > (unsigned)TCCRT_BOOL)
    return 0;
  return dtypeSize(static_cast<DType>(dtype));
}

const char *tccrt_last_error(void) { return threadError.c_str(); }

namespace {

using BackendFactory = std::unique_ptr<Backend> (*)(int, OpenFailure &,
                                                    std::string &);

/// A context on the GPU `create` opens (the CUDA or HIP backend), its
/// failures mapped to the C API's statuses.
[[maybe_unused]] tccrt_status openGpuContext(tccrt_device_kind kind,
                                             const std::string &api,
                                             BackendFactory create, int index,
                                             tccrt_context **out) {
  OpenFailure why;
  std::string err;
  std::unique_ptr<Backend> backend = create(index, why, err);
  if (!backend)
    return fail(nullptr,
                why == OpenFailure::InvalidArgument
                    ? TCCRT_ERROR_INVALID_ARGUMENT
                : why == OpenFailure::Device ? TCCRT_ERROR_DEVICE
                                             : TCCRT_ERROR_UNAVAILABLE,
                why == OpenFailure::Unavailable
                    ? api + " devices are not available: " + err
                    : err);
  auto ctx = std::make_unique<tccrt_context>();
  ctx->kind = kind;
  ctx->backend = std::move(backend);
  // GPU contexts compute recipes on the host too; a malformed
  // TCC_NUM_THREADS only matters to host contexts.
  if (std::string ignored; !hostThreadCount(ctx->recipeThreads, ignored))
    ctx->recipeThreads = 1;
  *out = ctx.release();
  return TCCRT_OK;
}

} // namespace

tccrt_status tccrt_context_create(tccrt_device_kind kind, int device_index,
                                  tccrt_context **out) {
  return guarded(nullptr, [&]() -> tccrt_status {
    if (!out)
      return nullArg(nullptr, "out");
    switch (kind) {
    case TCCRT_DEVICE_HOST: {
      if (device_index != 0)
        return fail(nullptr, TCCRT_ERROR_INVALID_ARGUMENT,
                    "the host has only device 0, not " +
                        std::to_string(device_index));
      unsigned threads;
      std::string err;
      if (!hostThreadCount(threads, err))
        return fail(nullptr, TCCRT_ERROR_INVALID_ARGUMENT, err);
      auto ctx = std::make_unique<tccrt_context>();
      ctx->kind = kind;
      ctx->backend = createHostBackend(threads);
      ctx->recipeThreads = threads;
      *out = ctx.release();
      return TCCRT_OK;
    }
    case TCCRT_DEVICE_CUDA:
#if TCC_RUNTIME_CUDA
      return openGpuContext(kind, "CUDA", createCudaBackend, device_index, out);
#else
      return fail(nullptr, TCCRT_ERROR_UNAVAILABLE,
                  "CUDA devices are not available: this libtccrt was built "
                  "without CUDA support (no cuda.h when it was configured)");
#endif
    case TCCRT_DEVICE_HIP:
#if TCC_RUNTIME_HIP
      return openGpuContext(kind, "HIP", createHipBackend, device_index, out);
#else
      return fail(nullptr, TCCRT_ERROR_UNAVAILABLE,
                  "HIP devices are not available: this libtccrt was built "
                  "without HIP support (no hip/hip_runtime_api.h when it was "
                  "configured)");
#endif
    }
    return fail(nullptr, TCCRT_ERROR_INVALID_ARGUMENT,
                "unknown device kind " + std::to_string((int)kind));
  });
}

tccrt_status tccrt_context_destroy(tccrt_context *ctx) {
  if (!ctx)
    return TCCRT_OK;
  std::unique_lock<std::mutex> lock(ctx->mutex);
  if (ctx->liveModels)
    return fail(ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                "context still has " + std::to_string(ctx->liveModels) +
                    " model(s); destroy them first");
  for (void *p : ctx->userAllocations)
    ctx->backend->deallocate(p);
  lock.unlock();
  delete ctx;
  return TCCRT_OK;
}

const char *tccrt_context_last_error(const tccrt_context *ctx) {
  return ctx ? ctx->lastError.c_str() : "";
}

tccrt_status tccrt_malloc(tccrt_context *ctx, size_t bytes, void **out) {
  if (!ctx)
    return nullArg(nullptr, "context");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  return guarded(ctx, [&]() -> tccrt_status {
    if (!out)
      return nullArg(ctx, "out");
    void *p;
    std::string err;
    if (!ctx->backend->allocate(bytes, p, err))
      return fail(ctx, TCCRT_ERROR_OUT_OF_MEMORY, err);
    ctx->userAllocations.insert(p);
    *out = p;
    return TCCRT_OK;
  });
}

tccrt_status tccrt_free(tccrt_context *ctx, void *ptr) {
  if (!ctx)
    return nullArg(nullptr, "context");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  if (!ptr)
    return TCCRT_OK;
  if (!ctx->userAllocations.erase(ptr))
    return fail(ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                "pointer was not allocated by tccrt_malloc on this context");
  ctx->backend->deallocate(ptr);
  return TCCRT_OK;
}

tccrt_status tccrt_copy_to_device(tccrt_context *ctx, void *dst,
                                  const void *src, size_t bytes) {
  if (!ctx)
    return nullArg(nullptr, "context");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  if (bytes && (!dst || !src))
    return nullArg(ctx, !dst ? "dst" : "src");
  std::string err;
  return ctx->backend->copyToDevice(dst, src, bytes, err)
             ? TCCRT_OK
             : fail(ctx, TCCRT_ERROR_DEVICE, err);
}

tccrt_status tccrt_copy_to_host(tccrt_context *ctx, void *dst, const void *src,
                                size_t bytes) {
  if (!ctx)
    return nullArg(nullptr, "context");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  if (bytes && (!dst || !src))
    return nullArg(ctx, !dst ? "dst" : "src");
  std::string err;
  return ctx->backend->copyToHost(dst, src, bytes, err)
             ? TCCRT_OK
             : fail(ctx, TCCRT_ERROR_DEVICE, err);
}

tccrt_status tccrt_model_load_file(tccrt_context *ctx, const char *path,
                                   tccrt_model **out) {
  if (!ctx)
    return nullArg(nullptr, "context");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  return guarded(ctx, [&]() -> tccrt_status {
    if (!path)
      return nullArg(ctx, "path");
    if (!out)
      return nullArg(ctx, "out");
    std::string err;
    std::vector<uint8_t> bytes;
    if (!io::readRegularFile(path, bytes, err))
      return fail(ctx, TCCRT_ERROR_IO, err);
    auto bundle = Bundle::parse(std::move(bytes), err);
    if (!bundle)
      return fail(ctx, TCCRT_ERROR_INVALID_BUNDLE,
                  std::string(path) + ": " + err);
    return loadModel(ctx, std::move(bundle), out);
  });
}

tccrt_status tccrt_model_load_memory(tccrt_context *ctx, const void *data,
                                     size_t size, tccrt_model **out) {
  if (!ctx)
    return nullArg(nullptr, "context");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  return guarded(ctx, [&]() -> tccrt_status {
    if (!data && size)
      return nullArg(ctx, "data");
    if (!out)
      return nullArg(ctx, "out");
    const uint8_t *p = static_cast<const uint8_t *>(data);
    std::string err;
    auto bundle = Bundle::parse(std::vector<uint8_t>(p, p + size), err);
    if (!bundle)
      return fail(ctx, TCCRT_ERROR_INVALID_BUNDLE, err);
    return loadModel(ctx, std::move(bundle), out);
  });
}

tccrt_status tccrt_model_destroy(tccrt_model *model) {
  if (!model)
    return TCCRT_OK;
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  --model->ctx->liveModels;
  delete model;
  return TCCRT_OK;
}

tccrt_status tccrt_model_name(const tccrt_model *model, const char **out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (!out)
    return nullArg(model->ctx, "out");
  *out = model->desc.model.c_str();
  return TCCRT_OK;
}

tccrt_status tccrt_model_num_inputs(const tccrt_model *model, size_t *out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (!out)
    return nullArg(model->ctx, "out");
  *out = model->desc.inputs.size();
  return TCCRT_OK;
}

tccrt_status tccrt_model_num_outputs(const tccrt_model *model, size_t *out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (!out)
    return nullArg(model->ctx, "out");
  *out = model->desc.outputs.size();
  return TCCRT_OK;
}

tccrt_status tccrt_model_input_info(const tccrt_model *model, size_t index,
                                    tccrt_tensor_info *out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return tensorInfo(model, model->desc.inputs, index, "input", out);
}

tccrt_status tccrt_model_output_info(const tccrt_model *model, size_t index,
                                     tccrt_tensor_info *out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return tensorInfo(model, model->desc.outputs, index, "output", out);
}

tccrt_status tccrt_model_find_input(const tccrt_model *model, const char *name,
                                    size_t *index) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return findTensor(model, model->desc.inputs, name, "input", index);
}

tccrt_status tccrt_model_find_output(const tccrt_model *model, const char *name,
                                     size_t *index) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return findTensor(model, model->desc.outputs, name, "output", index);
}

tccrt_status tccrt_model_bind_input(tccrt_model *model, size_t index,
                                    const void *data, size_t bytes) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return bind(model, true, index, data, bytes);
}

tccrt_status tccrt_model_bind_output(tccrt_model *model, size_t index,
                                     void *data, size_t bytes) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return bind(model, false, index, data, bytes);
}

tccrt_status tccrt_model_bind_input_by_name(tccrt_model *model,
                                            const char *name, const void *data,
                                            size_t bytes) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  size_t index;
  tccrt_status s = findTensor(model, model->desc.inputs, name, "input", &index);
  return s != TCCRT_OK ? s : bind(model, true, index, data, bytes);
}

tccrt_status tccrt_model_bind_output_by_name(tccrt_model *model,
                                             const char *name, void *data,
                                             size_t bytes) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  size_t index;
  tccrt_status s =
      findTensor(model, model->desc.outputs, name, "output", &index);
  return s != TCCRT_OK ? s : bind(model, false, index, data, bytes);
}

tccrt_status tccrt_model_run(tccrt_model *model) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  return guarded(model->ctx, [&] { return run(model); });
}

tccrt_status tccrt_model_set_option(tccrt_model *model, const char *name,
                                    const char *value) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (!name || !value)
    return nullArg(model->ctx, !name ? "name" : "value");
  return guarded(model->ctx, [&] { return setOption(model, name, value); });
}

tccrt_status tccrt_model_graph_order(const tccrt_model *model,
                                     const char **out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (!out)
    return nullArg(model->ctx, "out");
  *out = model->graph ? model->graphOrder.c_str() : "";
  return TCCRT_OK;
}

tccrt_status tccrt_model_num_launches(const tccrt_model *model, size_t *out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (!out)
    return nullArg(model->ctx, "out");
  *out = model->desc.launches.size();
  return TCCRT_OK;
}

tccrt_status tccrt_model_launch_info(const tccrt_model *model, size_t index,
                                     tccrt_launch_info *out) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  const ModelDesc &d = model->desc;
  if (index >= d.launches.size())
    return fail(model->ctx, TCCRT_ERROR_INVALID_ARGUMENT,
                "launch index " + std::to_string(index) +
                    " is out of range (the model has " +
                    std::to_string(d.launches.size()) + ")");
  if (!out)
    return nullArg(model->ctx, "info");
  const LaunchDesc &l = d.launches[index];
  tccrt_launch_info info;
  info.kernel = l.kind == LaunchDesc::Kind::Copy
                    ? nullptr
                    : d.kernels[l.kernel].symbol.c_str();
  info.gpu = l.kind == LaunchDesc::Kind::Kernel && l.gpu;
  for (int i = 0; i < 3; ++i) {
    info.grid[i] = info.gpu ? (int64_t)l.gridDims[i] : 1;
    info.block[i] = info.gpu ? (int64_t)l.blockDims[i] : 1;
  }
  if (!info.gpu)
    info.grid[0] = l.kind == LaunchDesc::Kind::Copy ? (int64_t)l.bytes : l.grid;
  *out = info;
  return TCCRT_OK;
}

tccrt_status tccrt_model_profile_runs(tccrt_model *model, size_t runs,
                                      double *launch_ms, double *gap_ms,
                                      double *run_ms) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (runs && !model->desc.launches.empty() && !launch_ms)
    return nullArg(model->ctx, "launch_ms");
  return guarded(model->ctx, [&] {
    return profileRuns(model, runs, launch_ms, gap_ms, run_ms);
  });
}

tccrt_status tccrt_model_time_runs(tccrt_model *model, size_t runs,
                                   double *ms) {
  if (!model)
    return nullArg(nullptr, "model");
  std::lock_guard<std::mutex> lock(model->ctx->mutex);
  if (runs && !ms)
    return nullArg(model->ctx, "ms");
  return guarded(model->ctx, [&] { return timeRuns(model, runs, ms); });
}

} // extern "C"
