//===- RegionFusion.cpp - choose region groups by search ------------------===//
//
// Region fusion (AFusion) picks which region ops run as one kernel. The
// choice is a partition of the function's region ops into connected groups;
// its cost is the sum of the groups' predicted times and of the unfused ops'
// (passes/RegionCostModel.h). A greedy agglomeration gives the first
// grouping to beat. The search then assigns ops in block order (a
// topological order): each op starts a group or joins one or more open
// groups whose results it reads (merging them: a concat joining its
// branches). A group whose members no later region op reads is closed
// and costed at once, so a partial assignment has an exact cost so far; with
// an admissible lower bound on the rest it is pruned against the best
// complete grouping found. The rest of the search from a state depends only
// on the open groups (their members, and what each reaches in the graph
// contracted by groups, which decides whether later joins make a cycle), so
// it is memoised per such state: on chains of convolutions the search is a
// dynamic program over few states per op, not an enumeration.
//
//===----------------------------------------------------------------------===//
#include "ir/TccAttrs.h"
#include "passes/Passes.h"
#include "passes/RegionCostModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCREGIONFUSION
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::region;

namespace {

constexpr StringLiteral kGroupAttr = "tcc.region_group";
constexpr StringLiteral kPlanAttr = "tcc.region_plan";
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The best cost of a group's members (region indices, ascending).
struct GroupChoice {
  double us = kInf; ///< kInf: illegal
  KernelCost cost;
  std::string why;
};

/// What the search found for one function.
struct SearchResult {
  /// Groups of two or more members, as region indices, in order of their
  /// first member.
  SmallVector<SmallVector<int>> groups;
  double us = 0, unfusedUs = 0;
  int64_t states = 0;
  bool complete = false; ///< the search ran to its end: the best grouping
  bool timedOut = false; ///< stopped by budget-ms (else by max-states)
};

/// The greedy grouping and the backtracking search over one block's region
/// ops.
class Search {
public:
  Search(Block &block, const CostModel &model,
         ArrayRef<std::array<int64_t, 2>> tiles, int64_t maxStates,
         int64_t budgetMs)
      : model(model), tiles(tiles), maxStates(maxStates), budgetMs(budgetMs) {
    for (Operation &op : block) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
    users.resize(ops.size());
    producers.resize(ops.size());
    lastUser.assign(ops.size(), -1);
    regionOf.assign(ops.size(), -1);
    for (unsigned i = 0; i < ops.size(); ++i) {
      Operation *op = ops[i];
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || def->getBlock() != &block)
          continue;
        int p = position.lookup(def);
        if (!llvm::is_contained(producers[i], p))
          producers[i].push_back(p);
      }
      // Values read inside nested regions count for the op that holds them.
      op->walk([&](Operation *inner) {
        if (inner == op)
          return;
        for (Value v : inner->getOperands())
          if (Operation *def = v.getDefiningOp();
              def && def->getBlock() == &block && def != op) {
            int p = position.lookup(def);
            if (!llvm::is_contained(producers[i], p))
              producers[i].push_back(p);
          }
      });
      if (regionInfo(op) && op->getNumResults() == 1) {
        regionOf[i] = region.size();
        region.push_back(i);
      }
    }
    for (unsigned i = 0; i < ops.size(); ++i)
      for (int p : producers[i]) {
        users[p].push_back(i);
        lastUser[p] = std::max<int>(lastUser[p], i);
      }
    unsigned n = region.size();
    lastRegionUser.assign(n, -1);
    regionProducers.resize(n);
    for (unsigned r = 0; r < n; ++r)
      for (int p : producers[region[r]])
        if (regionOf[p] >= 0) {
          regionProducers[r].push_back(regionOf[p]);
          lastRegionUser[regionOf[p]] =
              std::max<int>(lastRegionUser[regionOf[p]], r);
        }

    // Unfused costs and the lower bounds' per-op parts.
    unfusedUs.resize(n);
    unfusedCost.resize(n);
    launches.resize(n);
    memLb.assign(n + 1, 0);
    compLb.assign(n + 1, 0);
    llvm::DenseSet<Value> counted;
    for (unsigned r = 0; r < n; ++r) {
      Operation *op = ops[region[r]];
      unfusedCost[r] = model.unfused(op);
      unfusedUs[r] = unfusedCost[r].us;
      launches[r] = model.launchesUnfused(op);
      memLb[r] = double(model.memoryLowerBoundBytes(
                     op, [&](Value v) { return counted.insert(v).second; })) /
                 model.getTarget().dramBytesPerUs;
      compLb[r] = model.computeLowerBoundUs(op);
    }
    // Suffix sums: the bound on ops not yet placed.
    memSuffix.assign(n + 1, 0);
    compSuffix.assign(n + 1, 0);
    for (int r = int(n) - 1; r >= 0; --r) {
      memSuffix[r] = memSuffix[r + 1] + memLb[r];
      compSuffix[r] = compSuffix[r + 1] + compLb[r];
    }
    groupOf.assign(n, -1);
    members.resize(n);
    groupLast.assign(n, -1);
    stamp.assign(ops.size(), 0);
  }

  unsigned regionOps() const { return region.size(); }
  int64_t maxMembers() const { return model.getMaxMembers(); }
  Operation *regionOp(int r) const { return ops[region[r]]; }

  SearchResult run() {
    SearchResult result;
    unsigned n = region.size();
    for (unsigned r = 0; r < n; ++r)
      result.unfusedUs += unfusedUs[r];
    // The grouping to beat: every op unfused.
    bestUs = result.unfusedUs;
    best.clear();
    for (unsigned r = 0; r < n; ++r)
      best.push_back({int(r)});
    start = std::chrono::steady_clock::now();
    greedy();
    // A hair above, so that the greedy grouping is found when it is the
    // best.
    double bound = bestUs + 1e-9 * std::max(1.0, bestUs);
    // Not stopped: nothing cheaper than the best recorded exists.
    dfs(0, 0, bound);
    result.complete = !aborted;
    result.timedOut = timedOut;
    result.states = states;
    result.us = bestUs;
    for (const SmallVector<int> &g : best)
      if (g.size() >= 2)
        result.groups.push_back(g);
    llvm::sort(result.groups,
               [](const SmallVector<int> &a, const SmallVector<int> &b) {
                 return a.front() < b.front();
               });
    return result;
  }

  /// The first grouping to beat, agglomerative: clusters start as the
  /// unfused kernels (each op, element-wise epilogues with their anchor);
  /// the merge of two clusters joined by an edge that lowers the total most
  /// (the first on a tie) is made while one lowers it and keeps the
  /// contracted graph acyclic. A cluster of two or more convolutions and
  /// pools costs as a group, others as their ops unfused.
  void greedy() {
    unsigned n = region.size();
    SmallVector<int> cluster(n);
    for (unsigned r = 0; r < n; ++r) {
      cluster[r] = r;
      if (launches[r])
        continue;
      Operation *op = ops[region[r]];
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = def ? position.find(def) : position.end();
        if (it == position.end() || regionOf[it->second] < 0 ||
            isa<ConcatOp>(def))
          continue;
        cluster[r] = cluster[regionOf[it->second]];
        break;
      }
    }
    // The DFS's structures hold the clusters (all ops placed), so that
    // reach() sees them contracted.
    for (unsigned r = 0; r < n; ++r) {
      groupOf[r] = cluster[r];
      members[cluster[r]].push_back(r);
    }
    auto heavy = [&](ArrayRef<int> group) {
      return llvm::count_if(group, [&](int r) {
        return isa<Conv2dOp, MaxPool2dOp, AvgPool2dOp>(ops[region[r]]);
      });
    };
    auto costOf = [&](ArrayRef<int> group) {
      if (heavy(group) >= 2)
        return groupChoice(group).us;
      double us = 0;
      for (int r : group)
        us += unfusedUs[r];
      return us;
    };
    int limit = ops.size();
    while (true) {
      struct Merge {
        double gain;
        int a, b;
      };
      SmallVector<Merge> merges;
      for (unsigned r = 0; r < n; ++r)
        for (int p : regionProducers[r]) {
          int a = std::min(groupOf[p], groupOf[r]);
          int b = std::max(groupOf[p], groupOf[r]);
          if (a == b || (int64_t)(members[a].size() + members[b].size()) >
                            model.getMaxMembers())
            continue;
          SmallVector<int> both(members[a]);
          both.append(members[b]);
          llvm::sort(both);
          double gain = costOf(members[a]) + costOf(members[b]) - costOf(both);
          if (gain > 1e-9)
            merges.push_back({gain, a, b});
        }
      llvm::sort(merges, [](const Merge &x, const Merge &y) {
        if (x.gain != y.gain)
          return x.gain > y.gain;
        return std::make_pair(x.a, x.b) < std::make_pair(y.a, y.b);
      });
      auto legal = llvm::find_if(
          merges, [&](const Merge &m) { return !reach({m.a, m.b}, limit); });
      if (legal == merges.end())
        break;
      for (int r : members[legal->b]) {
        groupOf[r] = legal->a;
        members[legal->a].push_back(r);
      }
      members[legal->b].clear();
      llvm::sort(members[legal->a]);
    }
    double total = 0;
    SmallVector<SmallVector<int>> grouping;
    for (unsigned g = 0; g < n; ++g) {
      if (members[g].empty())
        continue;
      if (heavy(members[g]) >= 2) {
        total += groupChoice(members[g]).us;
        grouping.push_back(members[g]);
      } else {
        for (int r : members[g]) {
          total += unfusedUs[r];
          grouping.push_back({r});
        }
      }
    }
    greedyGroups.clear();
    for (const SmallVector<int> &g : grouping)
      if (g.size() >= 2)
        greedyGroups.push_back(g);
    llvm::sort(greedyGroups,
               [](const SmallVector<int> &a, const SmallVector<int> &b) {
                 return a.front() < b.front();
               });
    if (total < bestUs) {
      bestUs = total;
      best = std::move(grouping);
    }
    for (unsigned r = 0; r < n; ++r) {
      groupOf[r] = -1;
      members[r].clear();
    }
  }

  /// The best tile and cost of a group (cached by its members).
  const GroupChoice &groupChoice(ArrayRef<int> group) {
    std::vector<int> key(group.begin(), group.end());
    auto it = groupCache.find(key);
    if (it != groupCache.end())
      return it->second;
    GroupChoice choice;
    SmallVector<Operation *> memberOps;
    for (int r : group)
      memberOps.push_back(ops[region[r]]);
    FailureOr<KernelCost> cost = model.bestGroup(memberOps, tiles, choice.why);
    if (succeeded(cost)) {
      choice.cost = *cost;
      choice.us = cost->us;
    }
    return groupCache.emplace(std::move(key), std::move(choice)).first->second;
  }

  double unfused(int r) const { return unfusedUs[r]; }
  const KernelCost &unfusedKernel(int r) const { return unfusedCost[r]; }
  /// The greedy grouping's groups (two or more members), after run().
  ArrayRef<SmallVector<int>> greedyGrouping() const { return greedyGroups; }
  /// The region ops region op r reads (region indices).
  ArrayRef<int> regionReads(int r) const { return regionProducers[r]; }
  /// Whether region op r is a convolution or pool.
  bool heavy(int r) const {
    return isa<Conv2dOp, MaxPool2dOp, AvgPool2dOp>(ops[region[r]]);
  }

  /// Whether the block's graph with each of `groups` (region indices)
  /// contracted to one node has no cycle (Kahn's algorithm over all ops).
  bool acyclic(ArrayRef<SmallVector<int>> groups) const {
    SmallVector<int> node(ops.size());
    for (unsigned i = 0; i < ops.size(); ++i)
      node[i] = i;
    for (const SmallVector<int> &g : groups)
      for (int r : g)
        node[region[r]] = region[g.front()];
    SmallVector<int> indegree(ops.size(), 0);
    SmallVector<SmallVector<int>> edges(ops.size());
    for (unsigned i = 0; i < ops.size(); ++i)
      for (int p : producers[i])
        if (node[p] != node[i]) {
          edges[node[p]].push_back(node[i]);
          ++indegree[node[i]];
        }
    SmallVector<int> ready;
    unsigned nodes = 0;
    for (unsigned i = 0; i < ops.size(); ++i)
      if (node[i] == int(i)) {
        ++nodes;
        if (indegree[i] == 0)
          ready.push_back(i);
      }
    unsigned done = 0;
    while (!ready.empty()) {
      int x = ready.pop_back_val();
      ++done;
      for (int y : edges[x])
        if (--indegree[y] == 0)
          ready.push_back(y);
    }
    return done == nodes;
  }

private:
  struct Result {
    double value;
    bool exact;
  };
  struct Memo {
    double value;
    bool exact;
    /// Exact and finite: the groups op r joined (none: a group of its own).
    SmallVector<int> choice;
  };
  /// What apply() changed, for undo().
  struct Step {
    int r;
    SmallVector<int> merged; ///< the groups r joined (merged into the first)
    SmallVector<SmallVector<int>> oldMembers;
    SmallVector<int> oldLast;
    SmallVector<int> oldOpen;
    double delta = 0; ///< cost of the groups it closed; kInf: one is illegal
  };

  /// Puts region op r into the groups `merged` (merged into one, named by
  /// the first; none: a group of its own) and closes the groups that no
  /// later region op reads.
  Step apply(int r, ArrayRef<int> merged) {
    Step step;
    step.r = r;
    step.merged.assign(merged.begin(), merged.end());
    step.oldOpen = open;
    int rep = merged.empty() ? r : merged.front();
    for (int g : merged) {
      step.oldMembers.push_back(members[g]);
      step.oldLast.push_back(groupLast[g]);
    }
    if (merged.empty()) {
      step.oldLast.push_back(groupLast[r]);
      open.push_back(r);
    }
    for (int g : merged.drop_front(merged.empty() ? 0 : 1)) {
      for (int m : members[g]) {
        groupOf[m] = rep;
        members[rep].push_back(m);
      }
      members[g].clear();
      groupLast[rep] = std::max(groupLast[rep], groupLast[g]);
      llvm::erase(open, g);
    }
    groupOf[r] = rep;
    members[rep].push_back(r);
    llvm::sort(members[rep]);
    groupLast[rep] = std::max(groupLast[rep], lastRegionUser[r]);
    SmallVector<int> still;
    for (int g : open) {
      if (groupLast[g] > r) {
        still.push_back(g);
        continue;
      }
      double us = members[g].size() == 1 ? unfusedUs[members[g].front()]
                                         : groupChoice(members[g]).us;
      step.delta += us;
    }
    open = std::move(still);
    return step;
  }

  void undo(const Step &step) {
    open = step.oldOpen;
    groupOf[step.r] = -1;
    if (step.merged.empty()) {
      members[step.r].clear();
      groupLast[step.r] = step.oldLast.front();
      return;
    }
    for (auto [i, g] : llvm::enumerate(step.merged)) {
      members[g] = step.oldMembers[i];
      groupLast[g] = step.oldLast[i];
      for (int m : members[g])
        groupOf[m] = g;
    }
  }

  /// Marks (stamp == generation) every op that the groups `reps`, taken as
  /// one node, reach through ops before block position `limit`, other
  /// groups counting as one node each. Whether a path left the groups and
  /// came back (a cycle once they are one) is the result.
  bool reach(ArrayRef<int> reps, int limit) {
    ++generation;
    SmallVector<int> queue;
    bool back = false;
    auto inSet = [&](int op) {
      int r = regionOf[op];
      return r >= 0 && groupOf[r] >= 0 && llvm::is_contained(reps, groupOf[r]);
    };
    visited.clear();
    auto visit = [&](int op) {
      if (op >= limit || stamp[op] == generation)
        return;
      stamp[op] = generation;
      queue.push_back(op);
      visited.push_back(op);
    };
    for (int g : reps)
      for (int m : members[g])
        for (int u : users[region[m]])
          if (!inSet(u))
            visit(u);
    while (!queue.empty()) {
      int op = queue.pop_back_val();
      if (inSet(op)) {
        back = true;
        continue;
      }
      int r = regionOf[op];
      if (r >= 0 && groupOf[r] >= 0)
        for (int m : members[groupOf[r]])
          visit(region[m]);
      for (int u : users[op])
        if (!inSet(u))
          visit(u);
        else
          back = true;
    }
    return back;
  }

  /// Whether region op r joining the groups `reps` (merged into one) makes
  /// the contracted graph cyclic: a path from them leaves and comes back, or
  /// reaches another producer of r.
  bool makesCycle(int r, ArrayRef<int> reps) {
    int at = region[r];
    auto inSet = [&](int p) {
      int q = regionOf[p];
      return q >= 0 && groupOf[q] >= 0 && llvm::is_contained(reps, groupOf[q]);
    };
    // One group has no cycle through itself (the search keeps the
    // contracted graph acyclic); only r's other producers can close one.
    if (reps.size() == 1 && llvm::all_of(producers[at], inSet))
      return false;
    if (reach(reps, at))
      return true;
    return llvm::any_of(producers[at], [&](int p) {
      return !inSet(p) && stamp[p] == generation;
    });
  }

  /// The state before placing region op r: r, each open group's members
  /// and what it reaches that later ops may read (open groups, and other
  /// ops with readers at or after r).
  std::vector<int> key(int r) {
    std::vector<int> k{r};
    int limit = region[r];
    for (int g : open) {
      k.insert(k.end(), members[g].begin(), members[g].end());
      k.push_back(-1);
      reach({g}, limit);
      SmallVector<int> reached;
      for (int h : open)
        if (h != g && llvm::any_of(members[h], [&](int m) {
              return stamp[region[m]] == generation;
            }))
          reached.push_back(h);
      for (int op : visited) {
        if (lastUser[op] < limit)
          continue;
        int q = regionOf[op];
        if (q >= 0 && groupOf[q] >= 0 && llvm::is_contained(open, groupOf[q]))
          continue; // an open group: above
        reached.push_back(-2 - op);
      }
      llvm::sort(reached);
      k.insert(k.end(), reached.begin(), reached.end());
      k.push_back(-1);
    }
    return k;
  }

  /// key(r) computed for all open groups at once (up to 64): one sweep in
  /// block order carries, per op, the set of open groups that reach it (a
  /// bit each), a group's members sharing what reaches any of them; sweeps
  /// repeat until no set grows (contraction can carry bits backwards).
  std::vector<int> keyBySweep(int r) {
    int limit = region[r];
    unsigned count = open.size();
    // Ops reached can start at a group's earliest member (its name).
    int lo = limit;
    for (int g : open)
      lo = std::min(lo, region[g]);
    for (bool grown = true; grown;) {
      grown = false;
      for (int pos = lo; pos < limit && !grown; ++pos) {
        int q = regionOf[pos];
        if (q >= 0 && groupOf[q] >= 0 && region[groupOf[q]] < lo) {
          lo = region[groupOf[q]];
          grown = true;
        }
      }
    }
    SmallVector<uint64_t> openBit(region.size(), 0);
    for (unsigned i = 0; i < count; ++i)
      openBit[open[i]] = uint64_t(1) << i;
    sweepIn.assign(limit - lo, 0);
    groupIn.assign(region.size(), 0);
    auto groupAt = [&](int pos) {
      int q = regionOf[pos];
      return q >= 0 ? groupOf[q] : -1;
    };
    auto out = [&](int p) -> uint64_t {
      int h = groupAt(p);
      if (h >= 0)
        return groupIn[h] | openBit[h];
      return p >= lo ? sweepIn[p - lo] : 0;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (int x = lo; x < limit; ++x) {
        uint64_t in = 0;
        for (int p : producers[x])
          in |= out(p);
        uint64_t &slot = sweepIn[x - lo];
        if ((slot | in) != slot) {
          slot |= in;
          changed = true;
        }
        if (int h = groupAt(x); h >= 0 && (groupIn[h] | in) != groupIn[h]) {
          groupIn[h] |= in;
          changed = true;
        }
      }
    }
    std::vector<int> k{r};
    for (unsigned i = 0; i < count; ++i) {
      int g = open[i];
      uint64_t bit = uint64_t(1) << i;
      k.insert(k.end(), members[g].begin(), members[g].end());
      k.push_back(-1);
      SmallVector<int> reached;
      for (int h : open)
        if (h != g && (groupIn[h] & bit))
          reached.push_back(h);
      for (int x = lo; x < limit; ++x) {
        if (lastUser[x] < limit)
          continue;
        int h = groupAt(x);
        if (h >= 0 && openBit[h])
          continue; // an open group: above
        if ((h >= 0 ? groupIn[h] : sweepIn[x - lo]) & bit)
          reached.push_back(-2 - x);
      }
      llvm::sort(reached);
      k.insert(k.end(), reached.begin(), reached.end());
      k.push_back(-1);
    }
    return k;
  }

  /// key(r), by a search per open group where there are few (cheaper on
  /// chains), else by one sweep (DenseNet's concats keep a block's layers
  /// open: 2.3x faster on DenseNet-121). Both give the same key.
  std::vector<int> stateKey(int r) {
    return open.size() >= 3 && open.size() <= 64 ? keyBySweep(r) : key(r);
  }

  /// A lower bound on the cost of the groups still open and the ops not
  /// placed: the larger of their FLOPs at full rate and the bytes every
  /// grouping reads, plus a launch for every `max-members` members (at
  /// least one) of open groups that will launch. Open groups may still
  /// merge (a concat joining branches), so a launch per open group would
  /// overcount. A group's phase latency (CostModel) is left out: it is never
  /// negative and unfused kernels have none, so the bound stays below.
  double lowerBound(int r) const {
    double mem = memSuffix[r], comp = compSuffix[r];
    int64_t launching = 0;
    for (int g : open) {
      if (members[g].size() > 1 || launches[members[g].front()])
        launching += members[g].size();
      for (int m : members[g]) {
        mem += memLb[m];
        comp += compLb[m];
      }
    }
    int64_t kernels =
        (launching + model.getMaxMembers() - 1) / model.getMaxMembers();
    return double(kernels) * model.getTarget().launchUs + std::max(mem, comp);
  }

  bool outOfBudget() {
    if (aborted)
      return true;
    if (++states > maxStates) {
      aborted = true;
      return true;
    }
    if ((states & 255) == 0) {
      auto elapsed = std::chrono::steady_clock::now() - start;
      if (std::chrono::duration_cast<std::chrono::milliseconds>(elapsed)
              .count() > budgetMs) {
        aborted = timedOut = true;
        return true;
      }
    }
    return false;
  }

  /// Records the grouping of the current assignment (ops before r placed)
  /// completed by the memoised best choices from r on.
  void recordBest(int r, double us) {
    SmallVector<Step, 0> steps;
    unsigned n = region.size();
    for (int at = r; at < int(n); ++at) {
      auto it = memo.find(stateKey(at));
      if (it == memo.end() || !it->second.exact)
        break;
      steps.push_back(apply(at, it->second.choice));
    }
    if (r + steps.size() == n) {
      bestUs = us;
      best.clear();
      for (unsigned g = 0; g < n; ++g)
        if (!members[g].empty())
          best.push_back(members[g]);
    }
    for (const Step &s : llvm::reverse(steps))
      undo(s);
  }

  /// The least cost of placing region ops r... given the current state:
  /// exact when below `bound`, else a lower bound of at least `bound`.
  /// `prefix` is the cost of the groups closed so far.
  Result dfs(int r, double prefix, double bound) {
    if (r == int(region.size())) {
      if (prefix < bestUs)
        recordBest(r, prefix);
      return {0, true};
    }
    double lb = lowerBound(r);
    if (outOfBudget() || lb >= bound)
      return {lb, false};
    std::vector<int> k = stateKey(r);
    if (auto it = memo.find(k); it != memo.end()) {
      if (it->second.exact || it->second.value >= bound)
        return {it->second.value, it->second.exact};
    }
    // The open groups whose results r reads; r may join any set of them
    // (merging them: a concat joining its branches), larger sets first,
    // then a group of its own. More than four: one at a time, or all.
    SmallVector<int> readable;
    for (int g : open)
      if (llvm::any_of(regionProducers[r],
                       [&](int p) { return groupOf[p] == g; }))
        readable.push_back(g);
    SmallVector<SmallVector<int>> choices;
    unsigned count = readable.size();
    SmallVector<unsigned> masks;
    if (count <= 4) {
      for (unsigned mask = 1; mask < (1u << count); ++mask)
        masks.push_back(mask);
      llvm::sort(masks, [](unsigned a, unsigned b) {
        int na = llvm::popcount(a), nb = llvm::popcount(b);
        return na != nb ? na > nb : a < b;
      });
    } else {
      masks.push_back(~0u);
      for (unsigned i = 0; i < count; ++i)
        masks.push_back(1u << i);
    }
    for (unsigned mask : masks) {
      SmallVector<int> set;
      int64_t size = 1;
      for (unsigned i = 0; i < count; ++i)
        if (mask & (1u << i)) {
          set.push_back(readable[i]);
          size += members[readable[i]].size();
        }
      if (size <= model.getMaxMembers() && !makesCycle(r, set))
        choices.push_back(std::move(set));
    }
    choices.push_back({});

    double bestHere = kInf, lowest = kInf;
    int bestChoice = -1;
    for (auto [index, c] : llvm::enumerate(choices)) {
      Step step = apply(r, c);
      if (step.delta < kInf) {
        double childBound = std::min(bound, bestHere) - step.delta;
        Result child = dfs(r + 1, prefix + step.delta, childBound);
        double v = step.delta + child.value;
        if (child.exact) {
          if (v < bestHere) {
            bestHere = v;
            bestChoice = index;
          }
          if (!aborted && prefix + v < bestUs)
            recordBest(r + 1, prefix + v);
        } else {
          lowest = std::min(lowest, v);
        }
      }
      undo(step);
      if (aborted)
        break;
    }
    if (aborted)
      return {std::min(bestHere, lowest), false};
    Result result = bestHere < bound || (bestHere == kInf && lowest == kInf)
                        ? Result{bestHere, true}
                        : Result{std::min(bestHere, lowest), false};
    Memo &entry = memo[std::move(k)];
    entry = {result.value, result.exact, {}};
    if (bestChoice >= 0)
      entry.choice = choices[bestChoice];
    return result;
  }

  const CostModel &model;
  ArrayRef<std::array<int64_t, 2>> tiles;
  int64_t maxStates, budgetMs;

  // The block's ops and def-use edges (positions in the block).
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int> position;
  SmallVector<SmallVector<int>> users, producers;
  SmallVector<int> lastUser;
  // Region ops: region index -> position, and back (-1: not one).
  SmallVector<int> region, regionOf;
  SmallVector<int> lastRegionUser;
  SmallVector<SmallVector<int>> regionProducers;
  SmallVector<double> unfusedUs, memLb, compLb, memSuffix, compSuffix;
  SmallVector<KernelCost> unfusedCost;
  SmallVector<bool> launches;

  // The assignment: groups named by their first member.
  SmallVector<int> groupOf, groupLast;
  SmallVector<SmallVector<int>> members;
  SmallVector<int> open;

  SmallVector<unsigned> stamp;
  unsigned generation = 0;
  SmallVector<int> visited; ///< the ops the last reach() stamped
  SmallVector<uint64_t> sweepIn, groupIn; ///< keyBySweep's sets

  std::map<std::vector<int>, Memo> memo;
  std::map<std::vector<int>, GroupChoice> groupCache;
  double bestUs = kInf;
  SmallVector<SmallVector<int>> best, greedyGroups;
  int64_t states = 0;
  bool aborted = false, timedOut = false;
  std::chrono::steady_clock::time_point start;
};

/// A grouping of a function's region ops: its groups of two or more
/// members (region indices, ascending; groups ordered by first member).
using Grouping = std::vector<std::vector<int>>;

/// Stable names of a function's region ops, for files that name groups: an
/// op's location name (the ONNX importer's `node 12 "/conv1/Conv" (Conv)`,
/// the JSON importer's node pointer), `#k` appended for the k-th (from 0) of
/// several region ops with one name (a batch norm's mul and add); an op
/// without a name is `OPNAME@R`, R its index among the region ops in block
/// order.
std::vector<std::string> regionOpNames(Block &block) {
  std::function<std::string(Location)> nameOf = [&](Location loc) {
    if (auto name = dyn_cast<NameLoc>(loc))
      return name.getName().str();
    if (auto fused = dyn_cast<FusedLoc>(loc))
      for (Location inner : fused.getLocations())
        if (std::string n = nameOf(inner); !n.empty())
          return n;
    if (auto call = dyn_cast<CallSiteLoc>(loc))
      return nameOf(call.getCallee());
    return std::string();
  };
  // The search's region ops, in its order.
  SmallVector<Operation *> regionOps;
  for (Operation &op : block)
    if (regionInfo(&op) && op.getNumResults() == 1)
      regionOps.push_back(&op);
  unsigned n = regionOps.size();
  std::vector<std::string> names(n);
  std::map<std::string, int> count;
  for (unsigned r = 0; r < n; ++r) {
    names[r] = nameOf(regionOps[r]->getLoc());
    if (!names[r].empty())
      ++count[names[r]];
  }
  std::map<std::string, int> seen;
  for (unsigned r = 0; r < n; ++r) {
    Operation *op = regionOps[r];
    if (names[r].empty())
      names[r] = (op->getName().getStringRef() + "@" + Twine(r)).str();
    else if (count[names[r]] > 1)
      names[r] += "#" + std::to_string(seen[names[r]]++);
  }
  return names;
}

/// Legality, cost and features of whole groupings, and random legal
/// alternatives to a function's chosen grouping.
class Groupings {
public:
  explicit Groupings(Search &search) : search(search) {}

  /// Groups sorted and ordered; groups of fewer than two convolutions and
  /// pools dissolved (their ops run unfused, as the search costs them).
  Grouping normalize(Grouping g) const {
    Grouping out;
    for (std::vector<int> &group : g) {
      llvm::sort(group);
      if (llvm::count_if(group, [&](int r) { return search.heavy(r); }) >= 2)
        out.push_back(std::move(group));
    }
    llvm::sort(out);
    return out;
  }

  /// `g` as it is built: tcc-form-groups adds to a group each activation or
  /// residual add (not in a group) that reads its last value while the
  /// group stays a chain the region template runs. Two groupings with one
  /// built form make the same kernels.
  Grouping builtForm(Grouping g) {
    std::vector<bool> grouped(search.regionOps(), false);
    for (const std::vector<int> &group : g)
      for (int r : group)
        grouped[r] = true;
    for (std::vector<int> &group : g) {
      for (bool grown = true; grown;) {
        grown = false;
        for (int u : users(group.back())) {
          if (grouped[u] || u < group.back() ||
              !isa<ReluOp, ClampOp, AddOp>(search.regionOp(u)))
            continue;
          SmallVector<Operation *> chain;
          for (int r : group)
            chain.push_back(search.regionOp(r));
          chain.push_back(search.regionOp(u));
          std::string why;
          if (!isKernelChain(chain, why))
            continue;
          group.push_back(u);
          grouped[u] = grown = true;
          break;
        }
      }
    }
    return g;
  }

  /// The predicted time of `g` (its groups at their best tiles, the other
  /// region ops unfused); failure with `why` when a group is illegal or the
  /// contracted graph has a cycle.
  FailureOr<double> cost(const Grouping &g, std::string &why) {
    std::vector<bool> grouped(search.regionOps(), false);
    double us = 0;
    for (const std::vector<int> &group : g) {
      const GroupChoice &choice = search.groupChoice(group);
      if (choice.us == kInf) {
        why = choice.why;
        return failure();
      }
      us += choice.us;
      for (int r : group)
        grouped[r] = true;
    }
    for (unsigned r = 0; r < search.regionOps(); ++r)
      if (!grouped[r])
        us += search.unfused(r);
    SmallVector<SmallVector<int>> groups;
    for (const std::vector<int> &group : g)
      groups.emplace_back(group.begin(), group.end());
    if (!search.acyclic(groups)) {
      why = "the groups make the graph cyclic once each is one kernel";
      return failure();
    }
    return us;
  }

  /// Up to `count` legal groupings with distinct built forms: `first` (the
  /// search's), the greedy one, every op unfused, then random perturbations
  /// of those found (split a group in two, dissolve one, merge a group with
  /// a neighbouring group or unfused op, grow a group from an unfused
  /// convolution or pool along its readers), one to three moves each,
  /// deterministic for `seed`. Each is (origin, grouping, predicted us),
  /// the grouping and its cost as the search sees them (as for `first`;
  /// tcc-form-groups then adds the same epilogues either way).
  struct Alternative {
    std::string origin;
    Grouping groups;
    double us;
  };
  std::vector<Alternative> alternatives(const Grouping &first, int64_t count,
                                        uint64_t seed) {
    std::vector<Alternative> found;
    std::set<Grouping> keys;
    auto add = [&](const std::string &origin, Grouping g) {
      g = normalize(std::move(g));
      Grouping key = builtForm(g);
      if ((int64_t)found.size() >= count || keys.count(key))
        return;
      std::string why;
      FailureOr<double> us = cost(g, why);
      if (failed(us))
        return;
      keys.insert(std::move(key));
      found.push_back({origin, std::move(g), *us});
    };
    add("search", first);
    Grouping greedy;
    for (const SmallVector<int> &group : search.greedyGrouping())
      greedy.emplace_back(group.begin(), group.end());
    add("greedy", greedy);
    add("unfused", {});
    if (found.empty())
      return found;
    std::mt19937_64 rng(seed);
    auto pick = [&](size_t n) { return size_t(rng() % n); };
    // Every attempt is cheap (group costs are cached); the cap only ends
    // functions with few distinct groupings.
    for (int64_t attempt = 0;
         (int64_t)found.size() < count && attempt < 200 * count + 2000;
         ++attempt) {
      Grouping g = found[pick(found.size())].groups;
      int moves = 1 + pick(3);
      std::string origin;
      for (int m = 0; m < moves; ++m) {
        const char *name = move(g, pick, rng);
        if (!name)
          break;
        origin += origin.empty() ? name : std::string("+") + name;
      }
      if (!origin.empty())
        add(origin, std::move(g));
    }
    return found;
  }

private:
  /// One random move on `g` (normalized after); the move's name, or null
  /// when the one drawn has nothing to act on.
  template <typename Pick, typename Rng>
  const char *move(Grouping &g, Pick &pick, Rng &rng) {
    unsigned n = search.regionOps();
    std::vector<int> groupOf(n, -1);
    for (auto [i, group] : llvm::enumerate(g))
      for (int r : group)
        groupOf[r] = i;
    // Region ops next to r (it reads them or they read r).
    auto neighbours = [&](int r) {
      std::vector<int> out(search.regionReads(r).begin(),
                           search.regionReads(r).end());
      for (int u : users(r))
        out.push_back(u);
      return out;
    };
    switch (pick(4)) {
    case 0: { // split a group in two before a convolution or pool
      if (g.empty())
        return nullptr;
      size_t i = pick(g.size());
      std::vector<int> group = g[i];
      std::vector<size_t> cuts;
      for (size_t c = 1; c < group.size(); ++c)
        if (search.heavy(group[c]))
          cuts.push_back(c);
      if (cuts.empty())
        return nullptr;
      size_t cut = cuts[pick(cuts.size())];
      g.erase(g.begin() + i);
      g.emplace_back(group.begin(), group.begin() + cut);
      g.emplace_back(group.begin() + cut, group.end());
      g = normalize(std::move(g));
      return "split";
    }
    case 1: { // dissolve a group
      if (g.empty())
        return nullptr;
      g.erase(g.begin() + pick(g.size()));
      return "drop";
    }
    case 2: { // merge a group with a neighbouring group or unfused op
      if (g.empty())
        return nullptr;
      size_t i = pick(g.size());
      std::vector<int> next;
      for (int r : g[i])
        for (int q : neighbours(r))
          if (groupOf[q] != int(i))
            next.push_back(q);
      if (next.empty())
        return nullptr;
      int q = next[pick(next.size())];
      std::vector<int> merged = g[i];
      if (groupOf[q] >= 0) {
        merged.insert(merged.end(), g[groupOf[q]].begin(), g[groupOf[q]].end());
        g.erase(g.begin() + std::max<int>(i, groupOf[q]));
        g.erase(g.begin() + std::min<int>(i, groupOf[q]));
      } else {
        merged.push_back(q);
        g.erase(g.begin() + i);
      }
      g.push_back(std::move(merged));
      g = normalize(std::move(g));
      return "merge";
    }
    default: { // grow a group from an unfused convolution or pool
      std::vector<int> starts;
      for (unsigned r = 0; r < n; ++r)
        if (groupOf[r] < 0 && search.heavy(r))
          starts.push_back(r);
      if (starts.empty())
        return nullptr;
      std::vector<int> group{starts[pick(starts.size())]};
      int heavy = 1;
      int64_t limit = search.maxMembers();
      while ((int64_t)group.size() < limit) {
        std::vector<int> next;
        for (int u : users(group.back()))
          if (groupOf[u] < 0 && !llvm::is_contained(group, u))
            next.push_back(u);
        if (next.empty())
          break;
        int u = next[pick(next.size())];
        group.push_back(u);
        heavy += search.heavy(u);
        // Past two convolutions and pools, stop at random.
        if (heavy >= 2 && rng() % 2 == 0)
          break;
      }
      g.push_back(std::move(group));
      g = normalize(std::move(g));
      return "grow";
    }
    }
  }

  /// The region ops that read region op r.
  ArrayRef<int> users(int r) {
    if (regionUsers.empty()) {
      regionUsers.resize(search.regionOps());
      for (unsigned q = 0; q < search.regionOps(); ++q)
        for (int p : search.regionReads(q))
          regionUsers[p].push_back(q);
    }
    return regionUsers[r];
  }

  Search &search;
  std::vector<std::vector<int>> regionUsers;
};

/// A kernel's features, as the alternatives file lists them: what the cost
/// model's terms are made of, for refitting its constants.
void writeKernel(llvm::json::OStream &j, const KernelCost &k) {
  j.attribute("us", k.us);
  j.attribute("launch_us", k.launchUs);
  j.attribute("dram_bytes", k.dramBytes);
  j.attribute("l2_bytes", k.l2Bytes);
  j.attribute("tensor_flops", k.tensorFlops);
  j.attribute("cuda_flops", k.cudaFlops);
  j.attribute("blocks", k.blocks);
  j.attribute("utilization", k.utilization);
  j.attribute("waves", k.waves);
  j.attribute("gemm_members", k.gemmMembers);
  j.attribute("gemm_rounds", k.gemmRounds);
  j.attribute("k_steps", k.kSteps);
  j.attribute("cuda_members", k.cudaMembers);
  j.attribute("tap_steps", k.tapSteps);
  j.attribute("phase_us", k.phaseUs);
}

/// Writes the alternatives of `func` to `path` (format in
/// docs/architecture.md, "Alternative groupings").
LogicalResult writeAlternatives(func::FuncOp func, StringRef path,
                                const CostTarget &target, uint64_t seed,
                                Search &search,
                                ArrayRef<Groupings::Alternative> alternatives,
                                ArrayRef<std::string> names) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return func.emitError() << "tcc-region-fusion: cannot write '" << path
                            << "': " << ec.message();
  llvm::json::OStream j(os, /*IndentSize=*/1);
  j.object([&] {
    j.attribute("version", 1);
    j.attribute("function", func.getSymName());
    j.attribute("target", target.name);
    j.attribute("seed", int64_t(seed));
    j.attributeObject("constants", [&] {
      j.attribute("multiprocessors", target.multiprocessors);
      j.attribute("dram_bytes_per_us", target.dramBytesPerUs);
      j.attribute("l2_bytes_per_us", target.l2BytesPerUs);
      j.attribute("tensor_flops_per_us", target.tensorFlopsPerUs);
      j.attribute("cuda_flops_per_us", target.cudaFlopsPerUs);
      j.attribute("launch_us", target.launchUs);
      j.attribute("gemm_member_us", target.gemmMemberUs);
      j.attribute("gemm_round_us", target.gemmRoundUs);
      j.attribute("k_step_us", target.kStepUs);
      j.attribute("cuda_member_us", target.cudaMemberUs);
      j.attribute("cuda_tap_step_us", target.cudaTapStepUs);
    });
    // Ops computing on params alone (weight casts, a batch norm's scale)
    // move to the init function (tcc-hoist-param-computations): they do not
    // run per inference, which a fit to measured times must know.
    llvm::DenseSet<Value> paramOnly;
    for (BlockArgument arg : func.getArguments())
      if (auto kind =
              func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tcc.kind");
          kind && kind.getValue() == "param")
        paramOnly.insert(arg);
    for (Operation &op : func.getBody().front())
      if (op.getNumOperands() > 0 && op.getNumRegions() == 0 &&
          llvm::all_of(op.getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return paramOnly.contains(v) ||
                   (def && def->getNumOperands() == 0 &&
                    def->getNumRegions() == 0);
          }))
        for (Value v : op.getResults())
          paramOnly.insert(v);
    j.attributeArray("region_ops", [&] {
      for (unsigned r = 0; r < search.regionOps(); ++r)
        j.object([&] {
          Operation *op = search.regionOp(r);
          j.attribute("name", names[r]);
          j.attribute("op", op->getName().getStringRef());
          j.attribute("per_run", !paramOnly.contains(op->getResult(0)));
          j.attributeObject("unfused",
                            [&] { writeKernel(j, search.unfusedKernel(r)); });
        });
    });
    j.attributeArray("alternatives", [&] {
      for (size_t id = 0; id < alternatives.size(); ++id)
        j.object([&] {
          const Groupings::Alternative &alt = alternatives[id];
          j.attribute("id", int64_t(id));
          j.attribute("origin", alt.origin);
          j.attribute("predicted_us", alt.us);
          j.attributeArray("groups", [&] {
            for (const std::vector<int> &group : alt.groups)
              j.array([&] {
                for (int r : group)
                  j.value(names[r]);
              });
          });
          j.attributeArray("group_kernels", [&] {
            for (const std::vector<int> &group : alt.groups)
              j.object([&] {
                const GroupChoice &choice = search.groupChoice(group);
                j.attributeArray("tile", [&] {
                  j.value(choice.cost.tile[0]);
                  j.value(choice.cost.tile[1]);
                });
                j.attribute("shared_bytes", choice.cost.sharedBytes);
                writeKernel(j, choice.cost);
              });
          });
        });
    });
  });
  os << "\n";
  return success();
}

/// The grouping alternative `id` (-1: the file's only one) of the
/// alternatives file `path` names for `func`, read and checked: the file's
/// function (another function gets no groups: an empty grouping) and cost
/// target (into `fileTarget`), and each member a region op of `func`, in
/// one group at most. Errors are one line, at the function.
FailureOr<Grouping> readForced(func::FuncOp func, StringRef path, int64_t id,
                               ArrayRef<std::string> names,
                               std::string &fileTarget, bool &otherFunction) {
  auto fail = [&](const Twine &message) {
    func.emitError() << "tcc-region-fusion: " << path << ": " << message;
    return failure();
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    std::string why = llvm::toString(parsed.takeError());
    return fail("malformed JSON: " + why);
  }
  const llvm::json::Object *doc = parsed->getAsObject();
  if (!doc)
    return fail("malformed: not a JSON object");
  std::optional<StringRef> function = doc->getString("function");
  std::optional<StringRef> target = doc->getString("target");
  const llvm::json::Array *alts = doc->getArray("alternatives");
  if (!function || !target || !alts)
    return fail("malformed: needs \"function\", \"target\" and "
                "\"alternatives\"");
  fileTarget = target->str();
  otherFunction = *function != func.getSymName();
  if (otherFunction)
    return Grouping();
  const llvm::json::Object *chosen = nullptr;
  if (id < 0 && alts->size() != 1)
    return fail("holds " + Twine(alts->size()) +
                " alternatives: name one (FILE:ID)");
  for (const llvm::json::Value &alt : *alts) {
    const llvm::json::Object *o = alt.getAsObject();
    std::optional<int64_t> altId = o ? o->getInteger("id") : std::nullopt;
    if (!altId)
      return fail("malformed: an alternative without an integer \"id\"");
    if (id < 0 || *altId == id) {
      chosen = o;
      break;
    }
  }
  if (!chosen)
    return fail("no alternative with id " + Twine(id));
  const llvm::json::Array *groups = chosen->getArray("groups");
  if (!groups)
    return fail("malformed: alternative " + Twine(*chosen->getInteger("id")) +
                " has no \"groups\" list");
  std::map<std::string, int, std::less<>> index;
  for (auto [r, name] : llvm::enumerate(names))
    index[name] = r;
  Grouping result;
  std::map<int, size_t> groupOf;
  for (auto [g, group] : llvm::enumerate(*groups)) {
    const llvm::json::Array *members = group.getAsArray();
    if (!members)
      return fail("malformed: group " + Twine(g) +
                  " is not a list of member names");
    std::vector<int> ids;
    for (const llvm::json::Value &m : *members) {
      std::optional<StringRef> name = m.getAsString();
      if (!name)
        return fail("malformed: group " + Twine(g) +
                    " has a member that is not a string");
      auto it = index.find(*name);
      if (it == index.end())
        return fail("group " + Twine(g) + ": unknown member '" + *name +
                    "' (no region op of @" + func.getSymName() +
                    " has that name)");
      if (auto [at, inserted] = groupOf.emplace(it->second, g); !inserted)
        return fail("member '" + *name + "' is in groups " + Twine(at->second) +
                    " and " + Twine(g));
      ids.push_back(it->second);
    }
    if (ids.size() < 2)
      return fail("group " + Twine(g) + " has " + Twine(ids.size()) +
                  " member" + (ids.size() == 1 ? "" : "s") +
                  "; a group needs two or more");
    llvm::sort(ids);
    result.push_back(std::move(ids));
  }
  return result;
}

/// Microseconds with two decimals, for remarks.
std::string usText(double us) { return llvm::formatv("{0:F2}", us).str(); }

struct TccRegionFusion : mlir::tcc::impl::TccRegionFusionBase<TccRegionFusion> {
  using TccRegionFusionBase::TccRegionFusionBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (mode != "auto" && mode != "off") {
      func.emitError() << "tcc-region-fusion: unknown mode '" << mode
                       << "' (known: auto, off)";
      return signalPassFailure();
    }
    bool forcing = !force.empty();
    bool writing = !out.empty() && func.getSymName() == function;
    if (maxMembers < 2 || budgetMs < 0 || maxStates < 1) {
      func.emitError() << "tcc-region-fusion: max-members must be at least "
                          "2, budget-ms at least 0 and max-states at least 1";
      return signalPassFailure();
    }
    if ((alternatives > 0) != !out.empty() || alternatives < 0) {
      func.emitError() << "tcc-region-fusion: alternatives (a positive "
                          "count) and out (a file) go together";
      return signalPassFailure();
    }
    if (forcing && (!out.empty() || mode == "off")) {
      func.emitError() << "tcc-region-fusion: force goes with neither out "
                          "nor mode=off";
      return signalPassFailure();
    }
    for (int64_t t : tiles)
      if (t <= 0) {
        func.emitError() << "tcc-region-fusion: tile " << t
                         << " is not positive";
        return signalPassFailure();
      }
    func.walk([](Operation *op) {
      op->removeAttr(kGroupAttr);
      op->removeAttr(kPlanAttr);
    });
    if (mode == "off" || func.getBody().empty())
      return;

    // A forced grouping: FILE or FILE:ID (the last colon, digits after it).
    Block &block = func.getBody().front();
    std::optional<Grouping> forced;
    std::string forcedPath = force;
    int64_t forcedId = -1;
    std::string fileTarget;
    if (forcing) {
      StringRef text = force;
      size_t colon = text.rfind(':');
      if (colon != StringRef::npos && colon + 1 < text.size() &&
          llvm::all_of(text.drop_front(colon + 1), llvm::isDigit) &&
          !text.drop_front(colon + 1).getAsInteger(10, forcedId))
        forcedPath = text.take_front(colon).str();
      bool otherFunction = false;
      FailureOr<Grouping> read =
          readForced(func, forcedPath, forcedId, regionOpNames(block),
                     fileTarget, otherFunction);
      if (failed(read))
        return signalPassFailure();
      if (otherFunction)
        return;
      forced = std::move(*read);
    }
    // A grouping forced on a target without a cost model (the host, for
    // the ranking's plumbing) is checked and costed on the file's.
    std::optional<CostTarget> costTarget = costTargetNamed(target);
    if (!costTarget && forced)
      costTarget = costTargetNamed(fileTarget);
    if (!costTarget) {
      func.emitError() << "tcc-region-fusion: no cost model for target '"
                       << (forced ? fileTarget : std::string(target))
                       << "' (known: " << knownCostTargets() << ")";
      return signalPassFailure();
    }

    // Every pair of the sizes. On a GPU the default is the tiles the region
    // template runs (kKernelTileSizes), rectangles included: a
    // 1x7 tile of a 42x42 image is 252 blocks where 4x4 is 121, and the
    // kernel runs the tile planned here. The host's tiles are loop nests
    // whose per-tile overhead the model does not price: squares of 4 and
    // up.
    SmallVector<int64_t> sizes(tiles.begin(), tiles.end());
    bool squares = false;
    if (sizes.empty()) {
      squares = !costTarget->templateChains;
      sizes = squares ? SmallVector<int64_t>{4, 8, 16, 32}
                      : SmallVector<int64_t>(kKernelTileSizes.begin(),
                                             kKernelTileSizes.end());
    }
    SmallVector<std::array<int64_t, 2>> tileSet;
    for (int64_t h : sizes)
      for (int64_t w : sizes)
        if (!squares || h == w)
          tileSet.push_back({h, w});

    CostModel model(*costTarget, maxMembers, allowTf32);
    Search search(block, model, tileSet, maxStates, budgetMs);
    std::vector<std::string> names = regionOpNames(block);
    Groupings groupings(search);
    SearchResult result;
    if (forced) {
      // Checked as the search checks a group, then the whole grouping.
      for (auto [g, group] : llvm::enumerate(*forced)) {
        const GroupChoice &choice = search.groupChoice(group);
        if (choice.us < kInf)
          continue;
        std::string list;
        for (int r : group)
          list += (list.empty() ? "" : ", ") + names[r];
        func.emitError() << "tcc-region-fusion: " << forcedPath << ": group "
                         << g << " (" << list << ") is illegal: " << choice.why;
        return signalPassFailure();
      }
      std::string why;
      FailureOr<double> us = groupings.cost(*forced, why);
      if (failed(us)) {
        func.emitError() << "tcc-region-fusion: " << forcedPath << ": " << why;
        return signalPassFailure();
      }
      result.us = *us;
      for (unsigned r = 0; r < search.regionOps(); ++r)
        result.unfusedUs += search.unfused(r);
      for (const std::vector<int> &group : *forced)
        result.groups.emplace_back(group.begin(), group.end());
      llvm::sort(result.groups,
                 [](const SmallVector<int> &a, const SmallVector<int> &b) {
                   return a.front() < b.front();
                 });
    } else {
      result = search.run();
    }
    if (writing) {
      Grouping chosen;
      for (const SmallVector<int> &group : result.groups)
        chosen.emplace_back(group.begin(), group.end());
      std::vector<Groupings::Alternative> alts =
          groupings.alternatives(chosen, alternatives, seed);
      if (failed(writeAlternatives(func, out, *costTarget, seed, search, alts,
                                   names)))
        return signalPassFailure();
      if ((int64_t)alts.size() < alternatives)
        func.emitWarning() << "tcc-region-fusion: " << alts.size()
                           << " distinct legal groupings of @"
                           << func.getSymName() << " found, "
                           << int64_t(alternatives) << " asked";
    }
    MLIRContext *context = &getContext();
    Builder b(context);
    int64_t fused = 0;
    for (auto [id, group] : llvm::enumerate(result.groups)) {
      const GroupChoice &choice = search.groupChoice(group);
      double unfusedUs = 0;
      for (int r : group) {
        search.regionOp(r)->setAttr(kGroupAttr, b.getI64IntegerAttr(id));
        unfusedUs += search.unfused(r);
      }
      fused += group.size();
      Operation *last = search.regionOp(group.back());
      last->setAttr(kPlanAttr,
                    RegionPlanAttr::get(context, choice.cost.tile[0],
                                        choice.cost.tile[1], group.size(),
                                        std::llround(choice.us * 1000),
                                        std::llround(unfusedUs * 1000),
                                        choice.cost.sharedBytes));
      if (remarks)
        last->emitRemark() << "region group " << id << ": " << group.size()
                           << " members, tile " << choice.cost.tile[0] << "x"
                           << choice.cost.tile[1] << ", predicted "
                           << usText(choice.us) << " us against "
                           << usText(unfusedUs) << " us unfused";
    }
    if (!remarks || search.regionOps() == 0)
      return;
    InFlightDiagnostic remark = func.emitRemark();
    remark << "region fusion on " << costTarget->name << ": "
           << result.groups.size() << " region groups (" << fused << " of "
           << search.regionOps() << " region ops); predicted "
           << usText(result.us) << " us against " << usText(result.unfusedUs)
           << " us unfused; ";
    if (forced)
      remark << "forced from " << forcedPath
             << (forcedId >= 0 ? ":" + std::to_string(forcedId) : "");
    else
      remark << result.states << " states, "
             << (result.complete   ? "search complete"
                 : result.timedOut ? "stopped at budget-ms, best found kept"
                                   : "stopped at max-states, best found kept");
  }
};

} // namespace
