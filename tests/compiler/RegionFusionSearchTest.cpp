//===- RegionFusionSearchTest.cpp - the search against brute force -------===//
//
// tcc-region-fusion on small random graphs of convolutions, pools, relus,
// adds, concats and a transpose (not a region op): the grouping it marks
// must be legal (connected groups, an acyclic contracted graph, a cost the
// model accepts) and cost what the cheapest of every partition of the region
// ops into such groups costs, found by enumerating all of them.
//
//===----------------------------------------------------------------------===//
#include "compiler/Registration.h"
#include "passes/Passes.h"
#include "passes/RegionCostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"

#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

using namespace mlir;
using namespace mlir::tcc::region;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    ::tcc::registerAllDialects(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// A deterministic generator (the same numbers on every library).
struct Rng {
  uint64_t state;
  unsigned below(unsigned n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return unsigned(state >> 33) % n;
  }
};

/// A function of up to `count` region ops on 1xSxSx16 f16 tensors (NHWC),
/// each reading earlier values at random.
std::string randomFunction(uint64_t seed, int count) {
  Rng rng{seed};
  int size = 16 << rng.below(3); // 16, 32 or 64
  std::string t = "tensor<1x" + std::to_string(size) + "x" +
                  std::to_string(size) + "x16xf16>";
  std::string t32 = "tensor<1x" + std::to_string(size) + "x" +
                    std::to_string(size) + "x32xf16>";
  std::ostringstream body;
  std::vector<std::string> values = {"%x"};
  std::vector<int> uses = {0};
  int weights = 0;
  std::ostringstream args;
  auto conv = [&](const std::string &in, const std::string &inType, int cin,
                  int k) {
    std::string w = "%w" + std::to_string(weights++);
    std::string wType = "tensor<16x" + std::to_string(k) + "x" +
                        std::to_string(k) + "x" + std::to_string(cin) + "xf16>";
    args << ", " << w << ": " << wType;
    std::string pad = k == 3 ? "1" : "0";
    std::string out = "%v" + std::to_string(values.size());
    body << "  " << out << " = tcc.conv2d " << in << ", " << w
         << " {strides = array<i64: 1, 1>, pads = array<i64: " << pad << ", "
         << pad << ", " << pad << ", " << pad
         << ">, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : "
         << inType << ", " << wType << " -> " << t << "\n";
    return out;
  };
  auto pick = [&]() {
    // Recent values more often: chains, with some branches.
    int n = values.size();
    int i = rng.below(3) ? n - 1 - int(rng.below(std::min(n, 2)))
                         : int(rng.below(n));
    ++uses[i];
    return values[i];
  };
  for (int regionOps = 0; regionOps < count;) {
    std::string out = "%v" + std::to_string(values.size());
    unsigned kind = rng.below(7);
    // A concat and its conv are two region ops, a transpose none.
    regionOps += kind < 6 ? 1 : 2;
    switch (kind) {
    case 0:
    case 1:
      out = conv(pick(), t, 16, 3);
      break;
    case 2:
      out = conv(pick(), t, 16, 1);
      break;
    case 3:
      body << "  " << out << " = tcc.relu " << pick() << " : " << t << "\n";
      break;
    case 4: {
      std::string a = pick(), b = pick();
      body << "  " << out << " = tcc.add " << a << ", " << b << " : " << t
           << ", " << t << " -> " << t << "\n";
      break;
    }
    case 5:
      body << "  " << out << " = tcc.max_pool2d " << pick()
           << " {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads "
              "= array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : "
           << t << " -> " << t << "\n";
      break;
    default:
      if (regionOps <= count) {
        // A channel concat, back to 16 channels by a 1x1 conv.
        std::string a = pick(), b = pick();
        std::string cat = "%c" + std::to_string(values.size());
        body << "  " << cat << " = tcc.concat " << a << ", " << b
             << " {axis = 3 : i64} : " << t << ", " << t << " -> " << t32
             << "\n";
        out = conv(cat, t32, 32, 1);
      } else {
        // Not a region op: swaps H and W (the same shape).
        regionOps -= 2;
        body << "  " << out << " = tcc.transpose " << pick()
             << " {perm = array<i64: 0, 2, 1, 3>} : " << t << " -> " << t
             << "\n";
      }
      break;
    }
    values.push_back(out);
    uses.push_back(0);
  }
  // Every value nobody read is a result.
  std::vector<std::string> results;
  for (size_t i = 1; i < values.size(); ++i)
    if (!uses[i])
      results.push_back(values[i]);
  std::ostringstream f;
  f << "func.func @f(%x: " << t << args.str() << ") -> (";
  for (size_t i = 0; i < results.size(); ++i)
    f << (i ? ", " : "") << t;
  f << ") {\n" << body.str() << "  return ";
  for (size_t i = 0; i < results.size(); ++i)
    f << (i ? ", " : "") << results[i];
  f << " : ";
  for (size_t i = 0; i < results.size(); ++i)
    f << (i ? ", " : "") << t;
  f << "\n}\n";
  return f.str();
}

const std::array<int64_t, 2> kTiles[] = {{4, 4}, {8, 8}, {16, 16}, {32, 32}};
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The cost of a partition of the region ops (`groupOf`: a group number
/// per op of `ops`, -1 for an op that is no region op), or kInf when a group
/// is not connected, the contracted graph has a cycle, or the model refuses
/// a group.
double partitionCost(const CostModel &model, ArrayRef<Operation *> ops,
                     ArrayRef<int> groupOf,
                     std::map<SmallVector<int>, double> &cache) {
  DenseMap<Operation *, int> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  std::map<int, SmallVector<int>> groups;
  for (auto [i, g] : llvm::enumerate(groupOf))
    if (g >= 0)
      groups[g].push_back(i);
  // Nodes: a group each, and every op outside groups on its own.
  auto node = [&](int i) { return groupOf[i] >= 0 ? groupOf[i] : 1000 + i; };
  std::map<int, std::set<int>> succ;
  std::map<int, int> indegree;
  for (size_t i = 0; i < ops.size(); ++i)
    indegree[node(i)];
  for (size_t i = 0; i < ops.size(); ++i)
    for (Value v : ops[i]->getOperands())
      if (Operation *def = v.getDefiningOp(); def && index.count(def)) {
        int a = node(index[def]), b = node(i);
        if (a != b && succ[a].insert(b).second)
          ++indegree[b];
      }
  // Kahn's algorithm: every node comes off, or there is a cycle.
  std::vector<int> ready;
  for (auto &[n, d] : indegree)
    if (!d)
      ready.push_back(n);
  size_t done = 0;
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    ++done;
    for (int s : succ[n])
      if (!--indegree[s])
        ready.push_back(s);
  }
  if (done != indegree.size())
    return kInf;
  double total = 0;
  for (auto &[g, members] : groups) {
    if (members.size() == 1) {
      total += model.unfused(ops[members.front()]).us;
      continue;
    }
    auto [it, fresh] = cache.try_emplace(members, kInf);
    if (fresh) {
      SmallVector<Operation *> memberOps;
      for (int i : members)
        memberOps.push_back(ops[i]);
      std::string why;
      FailureOr<KernelCost> cost = model.bestGroup(memberOps, kTiles, why);
      if (succeeded(cost)) // else not connected, or refused
        it->second = cost->us;
    }
    total += it->second;
  }
  return total;
}

/// The cheapest partition of the region ops, by enumerating all of them
/// (restricted growth strings).
double bruteForce(const CostModel &model, ArrayRef<Operation *> ops) {
  SmallVector<int> region;
  for (auto [i, op] : llvm::enumerate(ops))
    if (regionInfo(op))
      region.push_back(i);
  SmallVector<int> groupOf(ops.size(), -1);
  double best = kInf;
  std::map<SmallVector<int>, double> cache;
  std::function<void(size_t, int)> assign = [&](size_t k, int groups) {
    if (k == region.size()) {
      best = std::min(best, partitionCost(model, ops, groupOf, cache));
      return;
    }
    for (int g = 0; g <= groups; ++g) {
      groupOf[region[k]] = g;
      assign(k + 1, std::max(groups, g + 1));
    }
    groupOf[region[k]] = -1;
  };
  assign(0, 0);
  return best;
}

} // namespace

TEST_CASE("tcc-region-fusion finds the cheapest grouping", "[region]") {
  CostModel model(*costTargetNamed("h200"), 8, false);
  int fusedSomething = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    std::string source = randomFunction(seed, 9);
    CAPTURE(seed, source);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context());
    REQUIRE(module);
    auto f = cast<func::FuncOp>(module->getBody()->front());
    SmallVector<Operation *> ops;
    for (Operation &op : f.getBody().front().without_terminator())
      ops.push_back(&op);
    double best = bruteForce(model, ops);

    PassManager pm(&context());
    pm.addNestedPass<func::FuncOp>(mlir::tcc::createTccRegionFusion());
    REQUIRE(succeeded(pm.run(*module)));
    // The pass's grouping: marked groups, and every other region op alone.
    SmallVector<int> groupOf(ops.size(), -1);
    int next = 1000;
    for (auto [i, op] : llvm::enumerate(ops)) {
      if (auto id = op->getAttrOfType<IntegerAttr>("tcc.region_group"))
        groupOf[i] = id.getInt();
      else if (regionInfo(op))
        groupOf[i] = next++;
    }
    fusedSomething += llvm::any_of(
        ops, [](Operation *o) { return o->hasAttr("tcc.region_group"); });
    std::map<SmallVector<int>, double> cache;
    double chosen = partitionCost(model, ops, groupOf, cache);
    REQUIRE(chosen < kInf);
    CHECK(chosen == Approx(best).epsilon(1e-12));
  }
  // The graphs are not all left unfused.
  CHECK(fusedSomething >= 40);
}
