//===- FuseElementwise.cpp - elementwise linalg.generic DAGs in one op ----===//
//
// A kernel of N elementwise ops lowers to N linalg.generic ops. MLIR's
// pairwise elementwise fusion merges them one producer at a time, copying the
// whole fused body at each step (quadratic in N: a 20,000-op chain took
// minutes), and only fuses a producer with one use, so a value read twice
// (a skip connection, a branch) ends the fusion: each becomes a loop of its
// own with a temporary buffer.
//
// This pass fuses each cluster of all-parallel generics in one step, in one
// walk over the block: a generic joins an open cluster when it reads a value
// of the cluster through a permutation (the same element, so nothing is
// recomputed) or, reading nothing of it, has the cluster's iteration domain.
// A value read by an op outside the cluster closes the cluster there, so the
// fused op, placed at the cluster's last member, comes before every use of
// its results. Each member's body is cloned once; values used outside
// become the fused op's results. A generic whose only use is a consumer that
// cannot join (a reduction) stays out, so the pairwise fusion that follows
// still makes it the consumer's prologue, as before. First, a generic that
// reads another's result element by element from its body (a concat, a
// slice, a gather: tensor.extract) recomputes that element instead, so that
// it reads only the kernel's arguments and may join a cluster too.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// A generic this pass may fuse: on tensors, all loops parallel, static
/// loop ranges, every result written once per iteration (permutation
/// output maps), the results' initial values unread, and no tensor or
/// buffer captured from above but the kernel's arguments (a gather, a
/// concat or a slice reads its input that way: never a value a cluster
/// computes, which the fused loop would read before it is complete).
bool isCandidate(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumResults() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops() || op.getNumLoops() == 0)
    return false;
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isPermutation() ||
        op.payloadUsesValueFromOperand(&init))
      return false;
  bool capturesShaped = false;
  visitUsedValuesDefinedAbove(op->getRegions(), [&](OpOperand *use) {
    if (isa<ShapedType>(use->get().getType()) &&
        !isa<BlockArgument>(use->get()))
      capturesShaped = true;
  });
  return !capturesShaped;
}

/// A generic whose result an element-wise reader may recompute at one
/// element: on tensors, all loops parallel, the result written through a
/// permutation, the initial values unread, and a short body (each reader's
/// element pays for it once).
bool isRecomputable(linalg::GenericOp op, OpResult result) {
  if (!op.hasPureTensorSemantics() ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getIndexingMapMatchingResult(result).isPermutation())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.payloadUsesValueFromOperand(&init))
      return false;
  int64_t ops = 0;
  op.getRegion().walk([&](Operation *) { ++ops; });
  return ops <= 64;
}

/// tensor.extract of an element-wise generic's result, inside a generic of
/// parallel loops (a concat, a slice or a gather reading it, as RoPE's
/// rotate_half concatenates a negated slice): the producer's body at that
/// element instead, reading the producer's inputs where it would. The
/// reader then captures only what the producer read (the kernel's
/// arguments, for RoPE), so it can join the cluster of its consumers, and
/// the producer's tensor is never written.
struct ExtractOfElementwise : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractOp op,
                                PatternRewriter &rewriter) const override {
    auto result = dyn_cast<OpResult>(op.getTensor());
    auto producer =
        result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
    auto reader = op->getParentOfType<linalg::GenericOp>();
    if (!producer || !reader ||
        reader.getNumParallelLoops() != reader.getNumLoops() ||
        !isRecomputable(producer, result))
      return failure();
    Location loc = op.getLoc();
    AffineMap written = producer.getIndexingMapMatchingResult(result);
    SmallVector<Value> loops(producer.getNumLoops());
    for (auto [k, index] : llvm::enumerate(op.getIndices()))
      loops[written.getDimPosition(k)] = index;
    Block &body = producer.getRegion().front();
    IRMapping map;
    for (OpOperand *in : producer.getDpsInputOperands()) {
      BlockArgument arg = body.getArgument(in->getOperandNumber());
      if (!isa<RankedTensorType>(in->get().getType())) {
        map.map(arg, in->get());
        continue;
      }
      SmallVector<Value> at;
      for (AffineExpr e : producer.getMatchingIndexingMap(in).getResults())
        at.push_back(affine::expandAffineExpr(rewriter, loc, e, loops, {}));
      map.map(arg, tensor::ExtractOp::create(rewriter, loc, in->get(), at));
    }
    for (Operation &o : body.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(o))
        map.map(index.getResult(), loops[index.getDim()]);
      else
        rewriter.clone(o, map);
    }
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    rewriter.replaceOp(
        op, map.lookupOrDefault(yield.getOperand(result.getResultNumber())));
    return success();
  }
};

/// A generic that computes its result from loop indices and scalars alone
/// (iotas compared: a causal mask built [L, L]), small and all parallel.
bool isIndexOnly(linalg::GenericOp op) {
  if (op->getNumResults() != 1 || !isRecomputable(op, op->getResult(0)))
    return false;
  for (OpOperand *in : op.getDpsInputOperands())
    if (isa<ShapedType>(in->get().getType()))
      return false;
  bool capturesShaped = false;
  visitUsedValuesDefinedAbove(op->getRegions(), [&](OpOperand *use) {
    capturesShaped |= isa<ShapedType>(use->get().getType());
  });
  return !capturesShaped;
}

/// An index-only generic read through a broadcast (the [L, L] mask of
/// scores [B, H, L, L]) is recomputed in each reader instead: a few integer
/// ops an element cost less than writing and reading the mask, and the
/// reader, freed of an operand of another shape, can join its cluster or
/// the row kernel of its chain (a masked softmax was ten launches). A
/// producer read elsewhere too is cloned for this reader first.
void inlineBroadcastIndexProducers(func::FuncOp f) {
  IRRewriter rewriter(f.getContext());
  SmallVector<linalg::GenericOp> readers;
  f.walk([&](linalg::GenericOp g) { readers.push_back(g); });
  llvm::DenseSet<Operation *> erased;
  for (linalg::GenericOp reader : readers) {
    if (erased.contains(reader.getOperation()))
      continue;
    bool fusedOne = true;
    while (fusedOne) {
      fusedOne = false;
      for (OpOperand *in : reader.getDpsInputOperands()) {
        auto result = dyn_cast<OpResult>(in->get());
        auto producer =
            result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
        // Checked before cloning, so that a refusal leaves no clone behind.
        if (!producer || !isIndexOnly(producer) ||
            reader.getMatchingIndexingMap(in).isPermutation() ||
            !linalg::areElementwiseOpsFusable(in))
          continue;
        if (!result.hasOneUse()) {
          rewriter.setInsertionPoint(producer);
          producer = cast<linalg::GenericOp>(rewriter.clone(*producer));
          in->set(producer->getResult(0));
        }
        rewriter.setInsertionPoint(reader);
        FailureOr<linalg::ElementwiseOpFusionResult> fused =
            linalg::fuseElementwiseOps(rewriter, in);
        if (failed(fused))
          continue;
        for (OpResult r : reader->getResults())
          rewriter.replaceAllUsesWith(r, fused->replacements.lookup(r));
        rewriter.eraseOp(reader);
        if (producer->use_empty()) {
          erased.insert(producer.getOperation());
          rewriter.eraseOp(producer);
        }
        reader = cast<linalg::GenericOp>(fused->fusedOp);
        fusedOne = true;
        break;
      }
    }
  }
}

/// Whether pairwise fusion would make `op` the prologue of its only user,
/// an op that cannot join a cluster (a reduction, a transpose into a
/// reduction...): then `op` stays out and keeps that role.
bool feedsOnlyAConsumer(linalg::GenericOp op) {
  if (!op->hasOneUse())
    return false;
  OpOperand &use = *op->getUses().begin();
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!consumer || isCandidate(consumer))
    return false;
  return consumer.isDpsInput(&use) &&
         consumer.getMatchingIndexingMap(&use).isPermutation();
}

struct Member {
  linalg::GenericOp op;
  /// The cluster's iteration space to the member's (a permutation).
  AffineMap toMember;
};

struct Cluster {
  SmallVector<int64_t> domain;
  SmallVector<Member> members;
  bool open = true;
  /// Scalar ops in the members' bodies.
  int64_t ops = 0;
};

class Fuser {
public:
  Fuser(Block &block, int64_t maxOps) : block(block), maxOps(maxOps) {}

  void run() {
    for (Operation &op : block)
      visit(&op);
    for (Cluster &c : clusters)
      if (c.members.size() > 1)
        materialize(c);
  }

private:
  /// The open cluster that defines `v`, or -1.
  int openClusterOf(Value v) {
    auto it = clusterOf.find(v.getDefiningOp());
    if (it == clusterOf.end() || !clusters[it->second].open)
      return -1;
    return it->second;
  }

  void close(int c) {
    if (clusters[c].open) {
      clusters[c].open = false;
      auto it = openByDomain.find(clusters[c].domain);
      if (it != openByDomain.end() && it->second == c)
        openByDomain.erase(it);
    }
  }

  /// Closes every open cluster whose values `op` reads (directly or inside
  /// its regions) other than `except`.
  void closeReadClusters(Operation *op, int except) {
    auto check = [&](Value v) {
      int c = openClusterOf(v);
      if (c >= 0 && c != except)
        close(c);
    };
    for (Value v : op->getOperands())
      check(v);
    if (op->getNumRegions())
      visitUsedValuesDefinedAbove(op->getRegions(),
                                  [&](OpOperand *use) { check(use->get()); });
  }

  /// The loop ranges of `g` seen from a cluster through `toMember`, or
  /// nothing when `toMember` is not a permutation of g's loops.
  std::optional<SmallVector<int64_t>> domainOf(linalg::GenericOp g,
                                               AffineMap toMember) {
    if (!toMember.isPermutation() || toMember.getNumDims() != g.getNumLoops())
      return std::nullopt;
    SmallVector<int64_t> ranges = g.getStaticLoopRanges();
    SmallVector<int64_t> domain(ranges.size());
    for (auto [k, e] : llvm::enumerate(toMember.getResults()))
      domain[cast<AffineDimExpr>(e).getPosition()] = ranges[k];
    return domain;
  }

  /// The cluster `g` joins through the values it reads, with g's place in
  /// its iteration space; -1 when it reads no open cluster fusably.
  int joinThroughOperands(linalg::GenericOp g, AffineMap &toMember) {
    int cluster = -1;
    for (OpOperand *in : g.getDpsInputOperands()) {
      int c = openClusterOf(in->get());
      if (c < 0 || (cluster >= 0 && c != cluster))
        continue;
      AffineMap read = g.getMatchingIndexingMap(in);
      auto producer = cast<linalg::GenericOp>(in->get().getDefiningOp());
      AffineMap written =
          producer.getIndexingMapMatchingResult(cast<OpResult>(in->get()));
      if (!read.isPermutation())
        return -1;
      AffineMap derived = inversePermutation(read).compose(
          written.compose(memberOf.lookup(producer.getOperation()).toMember));
      if (cluster >= 0 && derived != toMember)
        return -1;
      cluster = c;
      toMember = derived;
    }
    if (cluster < 0)
      return -1;
    std::optional<SmallVector<int64_t>> domain = domainOf(g, toMember);
    if (!domain || *domain != clusters[cluster].domain)
      return -1;
    return cluster;
  }

  void visit(Operation *op) {
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g || !isCandidate(g) || feedsOnlyAConsumer(g)) {
      closeReadClusters(op, -1);
      return;
    }
    AffineMap toMember;
    int c = joinThroughOperands(g, toMember);
    if (c < 0) {
      // Not through a value: a cluster of the same domain that g does not
      // read, or a new one.
      toMember =
          AffineMap::getMultiDimIdentityMap(g.getNumLoops(), g.getContext());
      SmallVector<int64_t> domain = g.getStaticLoopRanges();
      auto it = openByDomain.find(domain);
      c = it == openByDomain.end() ? -1 : it->second;
      if (c >= 0 && llvm::any_of(g->getOperands(), [&](Value v) {
            return openClusterOf(v) == c;
          }))
        c = -1;
      if (c < 0) {
        c = clusters.size();
        clusters.push_back(Cluster{domain, {}, true});
      }
      openByDomain[domain] = c;
    }
    closeReadClusters(op, c);
    Cluster &cluster = clusters[c];
    cluster.members.push_back({g, toMember});
    cluster.ops += g.getBody()->getOperations().size() - 1; // not the yield
    clusterOf[op] = c;
    memberOf[op] = cluster.members.back();
    if (cluster.ops >= maxOps)
      close(c);
  }

  /// Replaces the members of `c` by one generic at the last member.
  void materialize(Cluster &c) {
    MLIRContext *ctx = block.getParentOp()->getContext();
    int id = clusterOf.lookup(c.members.front().op.getOperation());
    auto inCluster = [&](Operation *op) {
      auto it = clusterOf.find(op);
      return it != clusterOf.end() && it->second == id;
    };
    // Inputs: values from outside, deduplicated with their maps.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> inputMaps;
    llvm::MapVector<std::pair<Value, AffineMap>, unsigned> inputIndex;
    // Results: member results read outside.
    SmallVector<OpResult> escaping;
    SmallVector<Value> inits;
    SmallVector<AffineMap> outputMaps;
    for (Member &m : c.members) {
      for (OpOperand *in : m.op.getDpsInputOperands()) {
        Operation *def = in->get().getDefiningOp();
        if (def && inCluster(def))
          continue;
        AffineMap map = m.op.getMatchingIndexingMap(in).compose(m.toMember);
        auto [it, inserted] =
            inputIndex.insert({{in->get(), map}, (unsigned)inputs.size()});
        if (inserted) {
          inputs.push_back(in->get());
          inputMaps.push_back(map);
        }
      }
      for (OpResult r : m.op->getResults()) {
        if (llvm::all_of(r.getUsers(),
                         [&](Operation *u) { return inCluster(u); }))
          continue;
        escaping.push_back(r);
        inits.push_back(m.op.getDpsInits()[r.getResultNumber()]);
        outputMaps.push_back(
            m.op.getIndexingMapMatchingResult(r).compose(m.toMember));
      }
    }
    SmallVector<AffineMap> maps(inputMaps);
    maps.append(outputMaps);
    SmallVector<utils::IteratorType> iterators(c.domain.size(),
                                               utils::IteratorType::parallel);
    linalg::GenericOp last = c.members.back().op;
    OpBuilder b(last);
    auto fused = linalg::GenericOp::create(b, last.getLoc(),
                                           ValueRange(inits).getTypes(), inputs,
                                           inits, maps, iterators);
    Block *body = b.createBlock(&fused.getRegion());
    for (Value v : inputs)
      body->addArgument(getElementTypeOrSelf(v.getType()), v.getLoc());
    for (Value v : inits)
      body->addArgument(getElementTypeOrSelf(v.getType()), v.getLoc());
    b.setInsertionPointToStart(body);

    // Each member's scalar results, by result.
    llvm::DenseMap<Value, Value> scalarOf;
    for (Member &m : c.members) {
      IRMapping map;
      Block &mb = m.op.getRegion().front();
      for (OpOperand *in : m.op.getDpsInputOperands()) {
        BlockArgument arg = m.op.getMatchingBlockArgument(in);
        Operation *def = in->get().getDefiningOp();
        if (def && inCluster(def)) {
          map.map(arg, scalarOf.lookup(in->get()));
          continue;
        }
        AffineMap am = m.op.getMatchingIndexingMap(in).compose(m.toMember);
        map.map(arg, body->getArgument(inputIndex.lookup({in->get(), am})));
      }
      for (Operation &inner : mb.without_terminator()) {
        // Loop k of the member is loop toMember(k) of the fused op.
        if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
          unsigned dim =
              cast<AffineDimExpr>(m.toMember.getResult(index.getDim()))
                  .getPosition();
          map.map(index.getResult(),
                  linalg::IndexOp::create(b, index.getLoc(), dim).getResult());
          continue;
        }
        b.clone(inner, map);
      }
      auto yield = cast<linalg::YieldOp>(mb.getTerminator());
      for (auto [r, v] : llvm::zip(m.op->getResults(), yield.getValues()))
        scalarOf[r] = map.lookupOrDefault(v);
    }
    SmallVector<Value> yielded;
    for (OpResult r : escaping)
      yielded.push_back(scalarOf.lookup(r));
    linalg::YieldOp::create(b, last.getLoc(), yielded);

    for (auto [r, v] : llvm::zip(escaping, fused->getResults()))
      r.replaceUsesWithIf(
          v, [&](OpOperand &use) { return !inCluster(use.getOwner()); });
    for (Member &m : llvm::reverse(c.members)) {
      clusterOf.erase(m.op.getOperation());
      m.op->dropAllUses();
      m.op->erase();
    }
    (void)ctx;
  }

  Block &block;
  int64_t maxOps;
  std::vector<Cluster> clusters;
  std::map<SmallVector<int64_t>, int> openByDomain;
  llvm::DenseMap<Operation *, int> clusterOf;
  llvm::DenseMap<Operation *, Member> memberOf;
};

struct TccFuseElementwise
    : mlir::tcc::impl::TccFuseElementwiseBase<TccFuseElementwise> {
  using TccFuseElementwiseBase::TccFuseElementwiseBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExtractOfElementwise>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    for (Block &block : getOperation().getBody())
      Fuser(block, maxOps).run();
    // After the clusters: a mask of iotas compared is one generic by now.
    inlineBroadcastIndexProducers(getOperation());
  }
};

} // namespace
