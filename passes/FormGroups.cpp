//===- FormGroups.cpp - decide what becomes one kernel --------------------===//
//
// Every target outlines the groups made here, so the host and the GPU targets
// agree on kernel boundaries and `tcc inspect` shows the same launches.
//
// Rules, applied in program order:
//  - constants and iotas are cloned into each group that reads them (they are
//    recomputed, never stored), unless a function result reads them directly;
//    so is a reshape of a function input read only by tcc.attention ops (a
//    view of the input's buffer, which the attention kernel reads through
//    its strides: Q, K, V given [B, L, H·D]), instead of a copy kernel;
//  - an elementwise or data-movement op joins the group of an operand's
//    producer when that group is elementwise, or is anchored by a reduction
//    or heavy op whose result has the op's shape (an epilogue);
//  - a reduction joins the elementwise group of its operand (a prologue);
//    values of that group read elsewhere become extra results of the kernel,
//    so they are written once instead of computed twice;
//  - heavy ops (matmul, convolution, pooling, gathers, top-k) start a group;
//  - a reduction chain (tcc.chain, see FormChains.cpp) is one group: it joins
//    the elementwise group of a value it reads, like a reduction, and takes
//    epilogues shaped like its reduced tensor or one of its results; a chain
//    marked tcc.attention (the GPU attention template computes it whole)
//    joins nothing and takes nothing: its kernel is the chain alone;
//  - so is a tcc.attention op (a planned chain as tcc-form-attention forms
//    it); its group keeps the kind "chain", so that kernel names stay those
//    of the chain it was (k<N>_chain);
//  - when an elementwise op reads two elementwise groups, they merge (a mask
//    built from iotas meets the values it selects);
//  - with `row-members` (GPU targets): a chain joins the group of a gather
//    of one value a row (take_along_axis) whose result is shaped like one
//    of its per-row values (with the elementwise ops computing its indices
//    one value a row that the gather took in), and takes the gather's index
//    check; and a reduction of a per-row result to one value (a loss's
//    mean) joins the chain. The GPU row kernel computes them in the chain's
//    launch (tcc-gpu-row-fusion): cross-entropy reads its logits and
//    targets once;
//  - ops marked `tcc.region_group = N` (region fusion's search,
//    RegionFusion.cpp) form one group of kind "region" per N, whatever
//    their kinds; nothing else joins it but an activation or residual add
//    after its last member that keeps it a chain the region template runs
//    (region::isKernelChain) or the host's region kernel does
//    (region::isHostChain): the search costs those as its epilogue.
// A join or merge is refused when it would make the group graph cyclic.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/Passes.h"
#include "passes/RegionAnalysis.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <queue>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCFORMGROUPS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

enum class GroupKind { Elementwise, Reduction, Heavy };

struct Group {
  GroupKind kind = GroupKind::Elementwise;
  std::string name = "elementwise";
  SmallVector<Operation *> ops;
  /// Shapes an epilogue may have: the anchor's result (a chain's results
  /// and the shape it reduces).
  SmallVector<SmallVector<int64_t>, 1> anchorShapes;
  /// Groups whose values this one reads directly.
  llvm::SetVector<int> preds;
  /// Merged into another group.
  bool dead = false;
  /// A chain the attention template computes: nothing joins it.
  bool sealed = false;
  /// The group this one was merged into, or -1.
  int mergedInto = -1;
  /// The region group (tcc.region_group) this group runs, or -1.
  int64_t region = -1;
  /// The shapes of the per-row values of the chain anchoring the group.
  SmallVector<SmallVector<int64_t>, 1> rowShapes;
  /// Results of the whole reductions of per-row values that joined it.
  llvm::SmallDenseSet<Value, 2> wholeResults;
};

constexpr StringLiteral kRegionGroupAttr = "tcc.region_group";

/// The region group `op` is marked with, or -1.
int64_t regionGroupOf(Operation *op) {
  auto attr = op->getAttrOfType<IntegerAttr>(kRegionGroupAttr);
  return attr ? attr.getInt() : -1;
}

bool isSource(Operation *op) { return isa<ConstantOp, IotaOp>(op); }

/// A reshape of a function input read only by attention ops (Q, K, V in
/// [B, L, H·D] reshaped to [B, L, H, D]): a view of the input's buffer,
/// which the attention kernel reads through its strides. Cloned into each
/// attention group like a source, instead of a copy kernel of its own.
bool isInputView(Operation *op) {
  auto reshape = dyn_cast<ReshapeOp>(op);
  return reshape && isa<BlockArgument>(reshape.getInput()) &&
         !reshape->use_empty() &&
         llvm::all_of(reshape->getUsers(),
                      [](Operation *u) { return isa<AttentionOp>(u); });
}

/// Attention the GPU templates compute whole: a chain marked so, or the
/// tcc.attention op formed from one.
bool isAttention(Operation *op) {
  return isa<AttentionOp>(op) || op->hasAttr(kAttentionAttrName);
}

bool isLight(Operation *op) {
  return isElementwise(op) || isDataMovement(op) || isa<BatchNormOp>(op);
}

ArrayRef<int64_t> shapeOfResult(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getShape();
}

/// Values `op` reads, with those a chain's body captures from above.
SmallVector<Value> inputsOf(Operation *op) {
  SmallVector<Value> out(op->getOperands());
  if (isa<ChainOp>(op)) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    out.append(captured.begin(), captured.end());
  }
  return out;
}

/// The epilogue shapes of an anchor op.
SmallVector<SmallVector<int64_t>, 1> anchorShapesOf(Operation *op) {
  SmallVector<SmallVector<int64_t>, 1> shapes;
  auto add = [&](Type t) {
    ArrayRef<int64_t> s = cast<RankedTensorType>(t).getShape();
    if (!llvm::is_contained(shapes, s))
      shapes.emplace_back(s.begin(), s.end());
  };
  auto chain = dyn_cast<ChainOp>(op);
  if (!chain) {
    add(op->getResult(0).getType());
    return shapes;
  }
  chain.getBody().walk([&](Operation *inner) {
    if (isReduction(inner))
      add(inner->getOperand(0).getType());
  });
  for (Type t : chain.getResultTypes())
    add(t);
  return shapes;
}

/// The shapes of a chain's per-row values: its reductions' results.
SmallVector<SmallVector<int64_t>, 1> rowShapesOf(ChainOp chain) {
  SmallVector<SmallVector<int64_t>, 1> shapes;
  chain.getBody().walk([&](Operation *inner) {
    if (!isReduction(inner) || inner->getNumResults() != 1)
      return;
    ArrayRef<int64_t> s = shapeOfResult(inner);
    if (!llvm::is_contained(shapes, s))
      shapes.emplace_back(s.begin(), s.end());
  });
  return shapes;
}

/// Whether shapes `a` and `b` hold the same values in the same order: equal
/// but for axes of extent 1. A chain's per-row values given as [R], [R, 1]
/// or [1, R] (a loss's 1-D targets, its [R] terms) are then one row shape.
bool sameRows(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  auto nonUnit = [](ArrayRef<int64_t> s) {
    SmallVector<int64_t> out;
    for (int64_t d : s)
      if (d != 1)
        out.push_back(d);
    return out;
  };
  return nonUnit(a) == nonUnit(b);
}

bool containsRows(ArrayRef<SmallVector<int64_t>> shapes,
                  ArrayRef<int64_t> shape) {
  return llvm::any_of(shapes, [&](const SmallVector<int64_t> &s) {
    return sameRows(s, shape);
  });
}

/// A gather of one value a row along its axis.
bool isRowGather(Operation *op) {
  if (auto take = dyn_cast<TakeAlongAxisOp>(op))
    return take.getType().getDimSize(take.getAxis()) == 1;
  // A lookup in a 1-D table by one index a row (a loss's class weights at
  // the targets): its result has the indices' shape.
  if (auto gather = dyn_cast<GatherOp>(op))
    return gather.getData().getType().getRank() == 1 &&
           llvm::all_of(gather.getIndices().getType().getShape().take_back(1),
                        [](int64_t d) { return d == 1; });
  return false;
}

/// The indices of a row gather.
Value rowGatherIndices(Operation *op) {
  if (auto take = dyn_cast<TakeAlongAxisOp>(op))
    return take.getIndices();
  return cast<GatherOp>(op).getIndices();
}

class Grouper {
public:
  Grouper(Block &block, bool rowMembers)
      : block(block), rowMembers(rowMembers) {}

  void run() {
    for (Operation &op : block) {
      if (!isa<TccDialect>(op.getDialect()) || isa<GroupOp>(op) ||
          (isa<ChainOp>(op) && op.getNumResults() == 0))
        continue;
      if ((isSource(&op) && !feedsTerminator(&op)) || isInputView(&op))
        continue;
      place(&op);
    }
    materialize();
  }

private:
  bool feedsTerminator(Operation *op) {
    for (Operation *user : op->getUsers())
      if (user->hasTrait<OpTrait::IsTerminator>())
        return true;
    return false;
  }

  /// Groups that produce the (non-source) operands of `op`.
  SmallVector<int> operandGroups(Operation *op) {
    SmallVector<int> out;
    for (Value v : inputsOf(op)) {
      Operation *def = v.getDefiningOp();
      auto it = def ? groupOf.find(def) : groupOf.end();
      if (it == groupOf.end())
        continue;
      int g = find(it->second);
      if (!llvm::is_contained(out, g))
        out.push_back(g);
    }
    return out;
  }

  /// Joining `op` to `g` keeps the group graph acyclic when no other
  /// operand group of `op` depends on `g`.
  bool acyclicJoin(Operation *op, int g) {
    for (int h : operandGroups(op))
      if (h != g && dependsOn(h, g))
        return false;
    return true;
  }

  /// The group that group `g` was merged into, if it was (union-find).
  int find(int g) {
    while (groups[g].mergedInto >= 0) {
      int next = groups[g].mergedInto;
      if (groups[next].mergedInto >= 0)
        groups[g].mergedInto = groups[next].mergedInto;
      g = next;
    }
    return g;
  }

  /// Whether group `h` reads, transitively, from group `g`. Computed on
  /// demand: a cached closure would go stale as groups gain members.
  bool dependsOn(int h, int g) {
    SmallVector<int> stack{h};
    llvm::DenseSet<int> seen{h};
    while (!stack.empty()) {
      int cur = stack.pop_back_val();
      for (int p : groups[cur].preds) {
        p = find(p);
        if (p == cur)
          continue;
        if (p == g)
          return true;
        if (seen.insert(p).second)
          stack.push_back(p);
      }
    }
    return false;
  }

  /// Whether group `from` reads group `to` through at least one other group:
  /// merging the two would then put a group both before and after them.
  bool readsThroughOthers(int from, int to) {
    for (int p : groups[from].preds) {
      p = find(p);
      if (p != to && p != from && dependsOn(p, to))
        return true;
    }
    return false;
  }

  bool canMerge(int a, int b) {
    return groups[a].kind == GroupKind::Elementwise &&
           groups[b].kind == GroupKind::Elementwise &&
           !readsThroughOthers(a, b) && !readsThroughOthers(b, a);
  }

  /// Moves every op of group `from` into group `into`. Other groups keep
  /// `from` among their preds and groupOf keeps it for its ops: find()
  /// resolves it, so a merge costs the smaller group's size, not a pass
  /// over every group.
  void merge(int into, int from) {
    Group &dst = groups[into], &src = groups[from];
    if (src.ops.size() > dst.ops.size())
      std::swap(src.ops, dst.ops);
    dst.ops.append(src.ops.begin(), src.ops.end());
    if (src.preds.size() > dst.preds.size())
      std::swap(src.preds, dst.preds);
    for (int p : src.preds)
      dst.preds.insert(p);
    src.ops.clear();
    src.preds.clear();
    src.dead = true;
    src.mergedInto = into;
  }

  bool canJoin(Operation *op, int g) {
    Group &grp = groups[g];
    if (grp.sealed || isAttention(op) || !acyclicJoin(op, g))
      return false;
    // Members join only their region's group. Other ops join a region
    // group only as the epilogue of its last member (an activation or a
    // residual add; the search costs those as the group's epilogue), and
    // only while the group stays a chain the region template runs.
    if (regionGroupOf(op) >= 0)
      return grp.region == regionGroupOf(op);
    if (grp.region >= 0) {
      if (!isa<ReluOp, ClampOp, AddOp>(op))
        return false;
      SmallVector<Operation *> chain(grp.ops);
      chain.push_back(op);
      llvm::sort(chain, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      std::string why;
      // The group's members passed their target's rules (the GPU
      // template's or the host's): the epilogue must keep the chain one
      // of the two.
      return region::isKernelChain(chain, why) ||
             region::isHostChain(chain, why);
    }
    if (isLight(op)) {
      if (grp.kind == GroupKind::Elementwise)
        return true;
      // Not an op of a whole reduction's result (l - mean(l)): the row
      // kernel has it only after its launch. A single value computed from
      // such results alone (a loss's total over its count) the row
      // kernel's last block computes.
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return grp.wholeResults.contains(v); }))
        return cast<ShapedType>(op->getResult(0).getType()).getNumElements() ==
                   1 &&
               llvm::all_of(op->getOperands(), [&](Value v) {
                 return grp.wholeResults.contains(v) ||
                        isa_and_nonnull<ConstantOp>(v.getDefiningOp());
               });
      // A chain's per-row values in another shape of the same rows (its
      // [R, 1] losses reshaped to [R], masked by [R] targets) too.
      return llvm::is_contained(grp.anchorShapes, shapeOfResult(op)) ||
             (rowMembers && containsRows(grp.rowShapes, shapeOfResult(op)));
    }
    // A row gather takes in the elementwise group that computes its indices
    // one value a row (an ONNX loss's [N] targets made [N, 1], the
    // ignore_index entries sent to class 0): the row kernel computes them
    // beside it instead of writing them out for it.
    // So does it another row gather's group of the same rows (the class
    // weights' lookup at the targets the logits' gather read).
    if (rowMembers && isRowGather(op)) {
      ArrayRef<int64_t> rows =
          cast<ShapedType>(rowGatherIndices(op).getType()).getShape();
      bool gathers = llvm::any_of(grp.ops, isRowGather);
      if (grp.kind != GroupKind::Elementwise && !gathers)
        return false;
      return llvm::all_of(grp.ops, [&](Operation *m) {
        return isa<ReshapeOp, IndexCheckOp>(m) ||
               ((isLight(m) || isRowGather(m)) &&
                sameRows(shapeOfResult(m), rows));
      });
    }
    if (auto chain = dyn_cast<ChainOp>(op))
      return grp.kind == GroupKind::Elementwise ||
             (rowMembers && isRowGatherGroup(grp, chain));
    if (isReduction(op))
      return grp.kind == GroupKind::Elementwise || isWholeRowReduction(op, grp);
    return false;
  }

  /// A group of per-row gathers that `chain` reads one value a row from,
  /// with the per-row elementwise ops (and reshapes) computing their
  /// indices.
  bool isRowGatherGroup(const Group &grp, ChainOp chain) {
    SmallVector<SmallVector<int64_t>, 1> rows = rowShapesOf(chain);
    return llvm::all_of(grp.ops, [&](Operation *member) {
      return isa<IndexCheckOp, ReshapeOp>(member) ||
             ((isRowGather(member) || isLight(member)) &&
              containsRows(rows, shapeOfResult(member)));
    });
  }

  /// A reduction of one of a chain group's per-row values to one value, of
  /// the kinds the row kernel computes beside the chain (one combiner: not
  /// an arg-reduction's value and index).
  bool isWholeRowReduction(Operation *op, const Group &grp) {
    if (!rowMembers ||
        !isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(op))
      return false;
    auto in = cast<RankedTensorType>(op->getOperand(0).getType());
    auto out = cast<RankedTensorType>(op->getResult(0).getType());
    return out.getNumElements() == 1 && in.getNumElements() > 1 &&
           containsRows(grp.rowShapes, in.getShape());
  }

  /// Merges into chain group `g` the index checks of the row gathers it
  /// took in, each a group of its own (its count is only a status): the
  /// chain's kernel reads their indices anyway. A gather no chain takes
  /// keeps its check apart, which a lone gather's kernel would otherwise
  /// turn into one long row.
  void takeIndexChecks(int g) {
    SmallVector<Operation *> members(groups[g].ops);
    for (Operation *m : members) {
      if (!isRowGather(m))
        continue;
      for (Operation *user : rowGatherIndices(m).getUsers()) {
        auto it = groupOf.find(user);
        if (!isa<IndexCheckOp>(user) || it == groupOf.end())
          continue;
        int h = find(it->second);
        if (h != g && groups[h].ops.size() == 1 && !readsThroughOthers(g, h) &&
            !readsThroughOthers(h, g))
          merge(g, h);
      }
    }
  }

  void place(Operation *op) {
    int target = -1;
    int64_t region = regionGroupOf(op);
    // A whole reduction of a chain's per-row result, which the chain's
    // kernel computes beside it: the group keeps its kind, name and shapes.
    if (rowMembers && region < 0 && isReduction(op) && !isa<IndexCheckOp>(op)) {
      int g = -1;
      for (int h : operandGroups(op))
        if (g < 0 && !groups[h].rowShapes.empty() && canJoin(op, h))
          g = h;
      if (g >= 0) {
        for (int h : operandGroups(op))
          if (h != g)
            groups[g].preds.insert(h);
        groups[g].ops.push_back(op);
        groups[g].wholeResults.insert(op->getResult(0));
        groupOf[op] = g;
        return;
      }
    }
    // A member joins its region's group even where it reads none of it (a
    // branch of an Inception block that a later concat joins).
    if (auto it = regionGroups.find(region); it != regionGroups.end()) {
      int g = find(it->second);
      if (canJoin(op, g))
        target = g;
    }
    for (int g : operandGroups(op))
      if (target < 0 && canJoin(op, g)) {
        target = g;
        break;
      }
    if (target < 0) {
      target = groups.size();
      groups.emplace_back();
      if (isLight(op) || isSource(op)) {
        groups.back().kind = GroupKind::Elementwise;
      } else if (isReduction(op)) {
        groups.back().kind = GroupKind::Reduction;
      } else {
        groups.back().kind = GroupKind::Heavy;
      }
    }
    Group &grp = groups[target];
    if (isAttention(op))
      grp.sealed = true;
    if (region >= 0) {
      // A member the search placed where joining would make the group
      // graph cyclic starts a region group of its own instead.
      if (grp.region < 0)
        regionGroups[region] = target;
      grp.region = region;
      grp.kind = GroupKind::Heavy;
      grp.name = "region";
      grp.anchorShapes = anchorShapesOf(op);
    } else if (isReduction(op) || (!isLight(op) && !isSource(op))) {
      grp.kind = isReduction(op) ? GroupKind::Reduction : GroupKind::Heavy;
      grp.name =
          isa<AttentionOp>(op) ? "chain" : op->getName().stripDialect().str();
      grp.anchorShapes = anchorShapesOf(op);
      grp.rowShapes.clear();
      if (auto chain = dyn_cast<ChainOp>(op); chain && !isAttention(op))
        grp.rowShapes = rowShapesOf(chain);
    }
    for (int h : operandGroups(op))
      if (h != target)
        grp.preds.insert(h);
    grp.ops.push_back(op);
    groupOf[op] = target;
    // A single value computed from whole results is one too, for what
    // reads it next (a narrowed total's division, the quotient's cast).
    if (rowMembers && isLight(op) &&
        llvm::any_of(op->getOperands(),
                     [&](Value v) { return grp.wholeResults.contains(v); }))
      grp.wholeResults.insert(op->getResult(0));
    if (rowMembers && isa<ChainOp>(op) && !grp.rowShapes.empty())
      takeIndexChecks(target);
    // A check placed after the chain group took its gather (the indices
    // reshaped from [R] after the chain's ops) joins it then.
    if (rowMembers && isa<IndexCheckOp>(op))
      for (Operation *user : op->getOperand(0).getUsers())
        if (auto it = groupOf.find(user);
            isRowGather(user) && it != groupOf.end() &&
            !groups[find(it->second)].rowShapes.empty()) {
          takeIndexChecks(find(it->second));
          break;
        }
    if (isLight(op))
      for (int h : operandGroups(op))
        if (h != target && canMerge(target, h))
          merge(target, h);
  }

  /// Builds one tcc.group per group, in a topological order of the group
  /// graph, at the end of the block before the terminator.
  void materialize() {
    Operation *terminator = block.getTerminator();
    SmallVector<int> order = topologicalOrder();
    OpBuilder b(terminator);
    for (int g : order) {
      Group &grp = groups[g];
      // Merges append out of program order.
      llvm::sort(grp.ops, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      llvm::SmallPtrSet<Operation *, 16> members(grp.ops.begin(),
                                                 grp.ops.end());
      // A use inside a chain counts as the chain's.
      auto isMember = [&](Operation *user) {
        Operation *top = block.findAncestorOpInBlock(*user);
        return top && members.contains(top);
      };
      // Results used outside the group become the group's results.
      SmallVector<Value> escaping;
      for (Operation *op : grp.ops)
        for (Value r : op->getResults())
          if (llvm::any_of(r.getUsers(),
                           [&](Operation *u) { return !isMember(u); }))
            escaping.push_back(r);
      auto group = GroupOp::create(b, grp.ops.front()->getLoc(),
                                   ValueRange(escaping).getTypes(),
                                   b.getStringAttr(grp.name));
      Block *body = new Block();
      group.getBody().push_back(body);
      OpBuilder inner = OpBuilder::atBlockEnd(body);
      IRMapping map;
      for (Operation *op : grp.ops) {
        // Sources read by this op are recomputed inside the group.
        for (Value v : inputsOf(op))
          if (Operation *def = v.getDefiningOp())
            if ((isSource(def) || isInputView(def)) && !groupOf.count(def) &&
                !map.contains(v))
              map.map(v, inner.clone(*def)->getResult(0));
        inner.clone(*op, map);
      }
      SmallVector<Value> yielded;
      for (Value v : escaping)
        yielded.push_back(map.lookup(v));
      YieldOp::create(inner, group.getLoc(), yielded);
      for (auto [oldV, newV] : llvm::zip(escaping, group.getResults()))
        oldV.replaceUsesWithIf(newV, [&](OpOperand &use) {
          return !isMember(use.getOwner());
        });
    }
    // The originals are now dead; erase users before producers.
    SmallVector<Operation *> grouped;
    for (Group &grp : groups)
      grouped.append(grp.ops.begin(), grp.ops.end());
    llvm::sort(grouped, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : llvm::reverse(grouped))
      op->erase();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      // What is left ungrouped: sources and input views, once cloned.
      if ((isSource(&op) || isa<ReshapeOp>(op)) && op.use_empty())
        op.erase();
  }

  /// Groups are numbered by first op, so taking the lowest ready group
  /// each time keeps program order where the graph allows (Kahn's
  /// algorithm with a min-heap).
  SmallVector<int> topologicalOrder() {
    int n = groups.size();
    SmallVector<SmallVector<int>> succs(n);
    SmallVector<int> waiting(n, 0);
    for (int g = 0; g < n; ++g) {
      if (groups[g].dead)
        continue;
      llvm::SmallDenseSet<int, 8> preds;
      for (int p : groups[g].preds) {
        p = find(p);
        if (p != g && preds.insert(p).second) {
          succs[p].push_back(g);
          ++waiting[g];
        }
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int g = 0; g < n; ++g)
      if (!groups[g].dead && waiting[g] == 0)
        ready.push(g);
    SmallVector<int> order;
    while (!ready.empty()) {
      int g = ready.top();
      ready.pop();
      order.push_back(g);
      for (int s : succs[g])
        if (--waiting[s] == 0)
          ready.push(s);
    }
    // acyclicJoin keeps the graph a DAG, so every group is ordered.
    assert(llvm::count_if(groups, [](const Group &g) { return !g.dead; }) ==
               (int64_t)order.size() &&
           "group graph has a cycle");
    return order;
  }

  Block &block;
  bool rowMembers;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, int> groupOf;
  /// tcc.region_group -> the group its members form.
  llvm::DenseMap<int64_t, int> regionGroups;
};

struct TccFormGroups : mlir::tcc::impl::TccFormGroupsBase<TccFormGroups> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Grouper(func.getBody().front(), rowMembers).run();
  }
};

} // namespace
