//===- RegionAnalysis.cpp - tiles and halos of region groups --------------===//
#include "passes/RegionAnalysis.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::region;

std::array<unsigned, 2> region::spatialAxes(Layout layout) {
  return layout == Layout::NCHW ? std::array<unsigned, 2>{2, 3}
                                : std::array<unsigned, 2>{1, 2};
}

unsigned region::channelAxis(Layout layout) {
  return layout == Layout::NCHW ? 1 : 3;
}

StringRef region::layoutName(Layout layout) {
  return layout == Layout::NCHW ? "NCHW" : "NHWC";
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static bool isRank4(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == 4;
}

std::optional<RegionOpInfo> region::regionInfo(Operation *op) {
  RegionOpInfo info;
  if (auto conv = dyn_cast<Conv2dOp>(op)) {
    info.kind = RegionOpInfo::Kind::Conv;
    info.layout = conv.getNhwc() ? Layout::NHWC : Layout::NCHW;
    // Weight: [O, C/groups, KH, KW] or, channels last, [O, KH, KW, C/groups].
    ArrayRef<int64_t> w = shapeOf(conv.getWeight());
    bool nhwc = *info.layout == Layout::NHWC;
    int64_t cinPerGroup = nhwc ? w[3] : w[1];
    info.kernel = {nhwc ? w[1] : w[2], nhwc ? w[2] : w[3]};
    info.stride = {conv.getStrides()[0], conv.getStrides()[1]};
    info.dilation = {conv.getDilations()[0], conv.getDilations()[1]};
    ArrayRef<int64_t> pads = conv.getPads();
    info.pads = {pads[0], pads[1], pads[2], pads[3]};
    info.groups = conv.getGroups();
    info.flopsPerElement = 2 * cinPerGroup * info.kernel[0] * info.kernel[1];
    info.windowed = conv.getInput();
    return info;
  }
  auto pool = [&](auto p, RegionOpInfo::Kind kind) {
    info.kind = kind;
    info.layout = p.getNhwc() ? Layout::NHWC : Layout::NCHW;
    info.kernel = {p.getKernel()[0], p.getKernel()[1]};
    info.stride = {p.getStrides()[0], p.getStrides()[1]};
    ArrayRef<int64_t> pads = p.getPads();
    info.pads = {pads[0], pads[1], pads[2], pads[3]};
    info.flopsPerElement = info.kernel[0] * info.kernel[1];
    info.windowed = p.getInput();
    return info;
  };
  if (auto p = dyn_cast<MaxPool2dOp>(op))
    return pool(p, RegionOpInfo::Kind::MaxPool);
  if (auto p = dyn_cast<AvgPool2dOp>(op))
    return pool(p, RegionOpInfo::Kind::AvgPool);
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    // Only a channel concat keeps every spatial position where it was.
    if (!isRank4(concat.getResult()) ||
        (concat.getAxis() != 1 && concat.getAxis() != 3))
      return std::nullopt;
    info.kind = RegionOpInfo::Kind::Concat;
    info.layout = concat.getAxis() == 1 ? Layout::NCHW : Layout::NHWC;
    return info;
  }
  if (isElementwise(op) && op->getNumResults() == 1 &&
      isRank4(op->getResult(0))) {
    // The verifiers hold the operands to NumPy broadcasting against the
    // result, so each operand is read at the result's position or broadcast.
    info.kind = RegionOpInfo::Kind::Pointwise;
    info.flopsPerElement = 1;
    return info;
  }
  return std::nullopt;
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "'";
  return s;
}

FailureOr<GroupFootprint> region::groupFootprint(ArrayRef<Operation *> members,
                                                 std::array<int64_t, 2> tile,
                                                 RegionError &error) {
  auto fail = [&](Operation *op, const Twine &message) {
    error.op = op;
    error.message = message.str();
    return failure();
  };
  if (tile[0] <= 0 || tile[1] <= 0)
    return fail(nullptr, "region tile " + Twine(tile[0]) + "x" +
                             Twine(tile[1]) + " is not positive");
  if (members.empty())
    return fail(nullptr, "region group has no members");

  // Block order is a topological order of the members.
  SmallVector<Operation *> ops(members);
  Block *block = ops.front()->getBlock();
  for (Operation *op : ops)
    if (op->getBlock() != block)
      return fail(op, "region group member is not in the same block as " +
                          describe(ops.front()));
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SmallPtrSet<Operation *, 16> inGroup(ops.begin(), ops.end());

  DenseMap<Operation *, RegionOpInfo> infos;
  for (Operation *op : ops) {
    std::optional<RegionOpInfo> info = regionInfo(op);
    if (!info)
      return fail(op, describe(op) +
                          " is not a region op (convolution, pool, "
                          "element-wise op or channel concat on rank-4 "
                          "tensors)");
    infos[op] = *info;
  }

  // In-group producers of each member's operands.
  auto producer = [&](Value v) -> Operation * {
    Operation *def = v.getDefiningOp();
    return def && inGroup.contains(def) ? def : nullptr;
  };

  // Connected through def-use edges, in either direction.
  llvm::EquivalenceClasses<Operation *> components;
  for (Operation *op : ops)
    components.insert(op);
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      if (Operation *def = producer(v))
        components.unionSets(op, def);
  for (Operation *op : ops)
    if (!components.isEquivalent(op, ops.front()))
      return fail(op, describe(op) +
                          " is not connected to the group's first member " +
                          describe(ops.front()));

  // Element-wise members take the layout of their neighbours.
  DenseMap<Operation *, Layout> layouts;
  for (Operation *op : ops)
    if (infos[op].layout)
      layouts[op] = *infos[op].layout;
  if (layouts.empty())
    return fail(ops.front(), "region group has no convolution, pool or "
                             "channel concat to tell its spatial axes");
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : ops) {
      if (layouts.count(op))
        continue;
      auto adopt = [&](Operation *from) {
        auto it = layouts.find(from);
        if (it == layouts.end())
          return false;
        layouts[op] = it->second;
        return changed = true;
      };
      bool done = false;
      for (Value v : op->getOperands())
        if (Operation *def = producer(v); def && !done)
          done = adopt(def);
      for (Operation *user : op->getUsers())
        if (inGroup.contains(user) && !done)
          done = adopt(user);
    }
  }
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      if (Operation *def = producer(v); def && layouts[def] != layouts[op])
        return fail(op, describe(op) + " (" + layoutName(layouts[op]) +
                            ") reads " + describe(def) + " (" +
                            layoutName(layouts[def]) + ") in one region group");

  // The group's outputs define the tile grid.
  SmallVector<Operation *> outputs;
  for (Operation *op : ops)
    if (op->use_empty() || llvm::any_of(op->getUsers(), [&](Operation *u) {
          return !inGroup.contains(u);
        }))
      outputs.push_back(op);
  auto extents = [&](Operation *op) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    std::array<unsigned, 2> axes = spatialAxes(layouts[op]);
    return std::array<int64_t, 3>{shape[0], shape[axes[0]], shape[axes[1]]};
  };
  std::array<int64_t, 3> grid = extents(outputs.front());
  for (Operation *op : outputs)
    if (extents(op) != grid) {
      std::array<int64_t, 3> e = extents(op);
      return fail(op, "region group outputs differ in batch or spatial "
                      "extent: " +
                          Twine(e[0]) + "x" + Twine(e[1]) + "x" + Twine(e[2]) +
                          " and " + Twine(grid[0]) + "x" + Twine(grid[1]) +
                          "x" + Twine(grid[2]) + " (NxHxW)");
    }

  GroupFootprint result;
  result.tiles =
      ceilDiv(grid[1], tile[0]) * ceilDiv(grid[2], tile[1]) * grid[0];

  // Backwards: each member's output tile is the most any reader needs.
  DenseMap<Operation *, std::array<int64_t, 2>> need;
  for (Operation *op : outputs)
    need[op] = tile;
  DenseMap<Operation *, MemberTile> tiles;
  for (Operation *op : llvm::reverse(ops)) {
    const RegionOpInfo &info = infos[op];
    Layout layout = layouts[op];
    std::array<unsigned, 2> axes = spatialAxes(layout);
    ArrayRef<int64_t> outShape = shapeOf(op->getResult(0));
    MemberTile m;
    m.op = op;
    m.layout = layout;
    std::array<int64_t, 2> needed = need.lookup(op);
    for (int i = 0; i < 2; ++i) {
      // Every non-output member has an in-group reader (the group is
      // connected and its readers come later in the block), which asked.
      m.out[i] = std::min(needed[i], outShape[axes[i]]);
      if (info.windowed) {
        int64_t window = (m.out[i] - 1) * info.stride[i] +
                         (info.kernel[i] - 1) * info.dilation[i] + 1;
        m.in[i] = std::min(window, shapeOf(info.windowed)[axes[i]]);
        m.halo[i] = std::max<int64_t>(0, m.in[i] - m.out[i] * info.stride[i]);
      } else {
        m.in[i] = m.out[i];
      }
    }
    int64_t channels = outShape[channelAxis(layout)];
    m.flops = outShape[0] * channels * outShape[axes[0]] * outShape[axes[1]] *
              info.flopsPerElement;
    m.executed =
        result.tiles * m.out[0] * m.out[1] * channels * info.flopsPerElement;

    for (OpOperand &operand : op->getOpOperands()) {
      Operation *def = producer(operand.get());
      if (!def)
        continue;
      if (info.windowed && operand.get() != info.windowed)
        return fail(op, describe(op) + " reads its weights or bias from " +
                            describe(def) + " of its region group");
      // Broadcast axes (extent 1) need only their one element.
      ArrayRef<int64_t> shape = shapeOf(operand.get());
      std::array<int64_t, 2> &n = need[def];
      for (int i = 0; i < 2; ++i)
        n[i] = std::max(n[i], std::min(m.in[i], shape[axes[i]]));
    }
    tiles[op] = m;
  }
  for (Operation *op : ops)
    result.members.push_back(tiles[op]);
  return result;
}

namespace {

/// The chain rules of isKernelChain; with `templateRules` false, those of
/// isHostChain (any float type and layout, any channel count and grouping).
bool chainRules(ArrayRef<Operation *> members, std::string &why,
                bool templateRules) {
  auto fail = [&](const Twine &message) {
    why = message.str();
    return false;
  };
  llvm::SmallPtrSet<Operation *, 16> set(members.begin(), members.end());
  Type type;
  // The value a type and channel count are checked on.
  auto check = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 4 || !t.hasStaticShape())
      return false;
    if (!type)
      type = t.getElementType();
    if (!templateRules)
      return t.getElementType() == type && isa<FloatType>(type);
    return t.getElementType() == type && (type.isF16() || type.isBF16()) &&
           t.getDimSize(3) % 8 == 0;
  };
  const char *noResult = templateRules
                             ? "' has no 16-bit float NHWC result with "
                               "channels a multiple of 8"
                             : "' has no float result of one type";
  Value input, cur;
  SmallVector<Value> finals; // each heavy member's value after its epilogue
  bool hasResidual = false, hasActivation = false;
  for (Operation *op : members) {
    if (op->getNumResults() != 1 || !check(op->getResult(0)))
      return fail("'" + op->getName().getStringRef() + noResult);
    Value in;
    if (auto conv = dyn_cast<Conv2dOp>(op)) {
      auto wTy = cast<RankedTensorType>(conv.getWeight().getType());
      bool nhwc = conv.getNhwc();
      int64_t c = cast<RankedTensorType>(conv.getInput().getType())
                      .getDimSize(nhwc ? 3 : 1);
      bool depthwise = conv.getGroups() == c && wTy.getDimSize(0) == c &&
                       wTy.getDimSize(nhwc ? 3 : 1) == 1;
      if ((templateRules && !nhwc) || (conv.getGroups() != 1 && !depthwise))
        return fail("a convolution not channels last, or grouped");
      for (Value v : {conv.getWeight(), conv.getBias()})
        if (v && v.getDefiningOp() && set.contains(v.getDefiningOp()))
          return fail("a convolution's weight computed in the group");
      in = conv.getInput();
    } else if (auto pool = dyn_cast<MaxPool2dOp>(op)) {
      if ((templateRules && !pool.getNhwc()) || pool.getCeilMode())
        return fail("a pool not channels last, or rounding up");
      in = pool.getInput();
    } else if (auto pool = dyn_cast<AvgPool2dOp>(op)) {
      if (!templateRules)
        return fail("an average pool (the host's region kernels take "
                    "convolutions and max pools)");
      if (!pool.getNhwc() || pool.getCeilMode())
        return fail("a pool not channels last, or rounding up");
      in = pool.getInput();
    }
    if (in) {
      if (!cur) {
        if (in.getDefiningOp() && set.contains(in.getDefiningOp()))
          return fail("the chain's first member reads the group");
        if (!check(in))
          return fail(templateRules
                          ? "the chain's input is no 16-bit float NHWC tensor "
                            "with channels a multiple of 8"
                          : "the chain's input is no float tensor of the "
                            "chain's type");
        input = in;
      } else if (in != cur) {
        return fail("a member that does not read the chain's last value");
      }
      cur = op->getResult(0);
      finals.push_back(cur);
      hasResidual = hasActivation = false;
      continue;
    }
    if (!cur)
      return fail("the chain starts with '" + op->getName().getStringRef() +
                  "'");
    auto clamp = dyn_cast<ClampOp>(op);
    if (isa<ReluOp>(op) || clamp) {
      if (op->getOperand(0) != cur || hasActivation ||
          (clamp && !(clamp.getMin() && clamp.getMax() &&
                      clamp.getMin()->isZero() &&
                      clamp.getMax()->convertToDouble() == 6.0)))
        return fail("an activation the region template does not apply");
      hasActivation = true;
    } else if (isa<AddOp>(op)) {
      Value a = op->getOperand(0), b = op->getOperand(1);
      Value other = a == cur ? b : b == cur ? a : Value();
      bool earlier = other && (other == input ||
                               llvm::is_contained(
                                   ArrayRef<Value>(finals).drop_back(), other));
      if (!earlier || hasResidual || hasActivation ||
          a.getType() != b.getType())
        return fail("an add that is no residual of the chain's input or an "
                    "earlier member");
      hasResidual = true;
    } else {
      return fail("'" + op->getName().getStringRef() +
                  "' is no member of a kernel chain");
    }
    cur = finals.back() = op->getResult(0);
  }
  if (!cur)
    return fail("a group without convolutions or pools");
  // Only the chain's last value leaves the group.
  for (Operation *op : members)
    for (Value r : op->getResults())
      if (r != cur && llvm::any_of(r.getUsers(), [&](Operation *user) {
            return !set.contains(user);
          }))
        return fail("a member's result is read outside the group");
  return true;
}

} // namespace

bool mlir::tcc::region::isKernelChain(ArrayRef<Operation *> members,
                                      std::string &why) {
  return chainRules(members, why, /*templateRules=*/true);
}

bool mlir::tcc::region::isHostChain(ArrayRef<Operation *> members,
                                    std::string &why) {
  return chainRules(members, why, /*templateRules=*/false);
}
