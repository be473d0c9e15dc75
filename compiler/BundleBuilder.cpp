//===- BundleBuilder.cpp - manifest, memory plan and blobs ----------------===//
//
// Every tensor value of the entry function is one buffer. Inputs and outputs
// are bound by the user, params are filled from their blobs at load, and the
// rest (temps) share one arena placed by planMemory. An output that is an
// input, a param or another output's value gets its own buffer and a copy.
//
// Params-only work (tcc-hoist-param-computations' init function) becomes the
// init launches, run once at load; their results are "derived" buffers that
// persist like params, and their temps share the arena with the run's.
//
//===----------------------------------------------------------------------===//
#include "compiler/BundleBuilder.h"
#include "compiler/MemoryPlan.h"
#include "compiler/RegionGroups.h"
#include "runtime/src/Bundle.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using json = nlohmann::json;

namespace {

std::string blobNameOf(const tcc::CodeArtifact &code) {
  return code.target == "host" ? "host.so" : code.target + "." + code.format;
}

std::string dtypeOf(Type t) {
  if (t.isF64())
    return "f64";
  if (t.isF32())
    return "f32";
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (isa<Float8E4M3FNType>(t))
    return "f8e4m3";
  if (isa<Float8E5M2Type>(t))
    return "f8e5m2";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(8))
    return "i8";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(64))
    return "i64";
  return "";
}

uint64_t bytesOf(RankedTensorType t) {
  unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return uint64_t(t.getNumElements()) * (bits < 8 ? 1 : bits / 8);
}

std::string stringAttr(func::FuncOp f, unsigned i, StringRef name,
                       bool result) {
  auto attr = result ? f.getResultAttrOfType<StringAttr>(i, name)
                     : f.getArgAttrOfType<StringAttr>(i, name);
  return attr ? attr.str() : "";
}

class ManifestBuilder {
public:
  ManifestBuilder(func::FuncOp entry, func::FuncOp init)
      : entry(entry), init(init) {}

  LogicalResult build(const std::vector<tcc::ParamData> &params,
                      const tcc::CodeArtifact &code, bool keepRecipes,
                      json &manifest) {
    bool host = code.target == "host";
    std::string blobName = blobNameOf(code);
    ModuleOp module = entry->getParentOfType<ModuleOp>();
    manifest["format_version"] = 1;
    auto modelName = module->getAttrOfType<StringAttr>("tcc.model");
    manifest["model"] = modelName ? modelName.str() : "model";
    manifest["targets"] = json::array({code.target});
    manifest["inputs"] = json::array();
    manifest["params"] = json::array();
    manifest["outputs"] = json::array();
    manifest["status"] = json::array();
    manifest["kernels"] = json::array();
    manifest["launches"] = json::array();

    // Arguments: inputs then params.
    size_t paramIndex = 0;
    for (BlockArgument arg : entry.getArguments()) {
      std::string kind =
          stringAttr(entry, arg.getArgNumber(), "tcc.kind", false);
      std::string name =
          stringAttr(entry, arg.getArgNumber(), "tcc.name", false);
      if (kind == "derived" || kind == "view")
        continue; // the buffer of an init result or a param, below
      int id = newBuffer(arg, kind == "param" ? "param" : "input");
      json t = tensorJson(name, arg.getType(), id);
      if (kind == "param") {
        if (paramIndex >= params.size())
          return entry.emitError("more param arguments than param data");
        const tcc::ParamData &p = params[paramIndex];
        if (keepRecipes && p.recipe) {
          t["init"] = tcc::bundle::recipeToJson(*p.recipe, p.dtype);
          // Older runtimes refuse it by its version.
          manifest["format_version"] = 2;
        } else {
          t["blob"] = "param." + std::to_string(paramIndex);
        }
        ++paramIndex;
        manifest["params"].push_back(t);
      } else {
        manifest["inputs"].push_back(t);
      }
    }

    // Outputs bind the buffers of the values they return when they can.
    auto ret = cast<func::ReturnOp>(entry.getBody().front().getTerminator());
    llvm::DenseMap<Value, unsigned> outputOf;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (stringAttr(entry, i, "tcc.kind", true) != "status" &&
          !isa<BlockArgument>(v) && !outputOf.count(v))
        outputOf[v] = i;

    // Kernel functions → their plan; device functions → manifest kernels.
    llvm::StringMap<const tcc::KernelPlan *> planOf;
    llvm::StringMap<int> deviceIndex;
    for (const tcc::KernelPlan &plan : code.kernels) {
      planOf[plan.name] = &plan;
      auto func = module.lookupSymbol<func::FuncOp>(plan.name);
      json ops = json::array();
      if (func)
        func.walk([&](Operation *op) {
          if (!isa<func::ReturnOp>(op) && op != func.getOperation())
            ops.push_back(op->getName().getStringRef().str());
        });
      for (const tcc::DeviceLaunch &l : plan.launches) {
        if (deviceIndex.count(l.symbol))
          continue;
        deviceIndex[l.symbol] = manifest["kernels"].size();
        json k = {
            {"name", l.symbol},
            {"symbol", l.symbol},
            {"kind", func && func->hasAttr("tcc.kind")
                         ? func->getAttrOfType<StringAttr>("tcc.kind").str()
                         : "kernel"},
            {"ops", ops},
            {"code", blobName}};
        if (!host && l.sharedBytes > 0)
          k["shared_bytes"] = l.sharedBytes;
        if (!host && l.cluster[0] * l.cluster[1] * l.cluster[2] > 1)
          k["cluster"] =
              json(std::vector<int64_t>(l.cluster.begin(), l.cluster.end()));
        if (code.waitingKernels.count(l.symbol))
          k["grid_dependency"] = true;
        if (!l.templateName.empty()) {
          k["template"] = l.templateName;
          k["schedule"] = json::parse(l.scheduleJson, nullptr, false);
          if (l.tuned)
            k["tuning_record"] = true;
          if (!l.signatureJson.empty()) {
            k["tuning_kernel"] = l.tuningKernel;
            k["signature"] = json::parse(l.signatureJson, nullptr, false);
          }
        }
        // The template and schedule a fused attention kernel was built with
        // (tcc-gpu-attention-plan's attribute), for `tcc inspect`: template
        // kernels are named after their function with a suffix (a chain
        // the template refused after all runs as the function itself).
        if (func && l.symbol != plan.name)
          func.walk([&](Operation *op) {
            if (Attribute a = op->getAttr("tcc.attention_plan")) {
              std::string text;
              llvm::raw_string_ostream os(text);
              a.print(os);
              k["plan"] = text;
            }
          });
        manifest["kernels"].push_back(k);
      }
    }

    // A view of a param (tcc-hoist-param-computations: a reshape) is the
    // param's buffer.
    for (BlockArgument arg : entry.getArguments()) {
      if (stringAttr(entry, arg.getArgNumber(), "tcc.kind", false) != "view")
        continue;
      auto of = entry.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                    "tcc.view_of");
      if (!of || of.getInt() < 0 ||
          of.getInt() >= (int64_t)entry.getNumArguments() ||
          !bufferOf.count(entry.getArgument(of.getInt())) ||
          bytesOf(cast<RankedTensorType>(arg.getType())) !=
              bytesOf(cast<RankedTensorType>(
                  entry.getArgument(of.getInt()).getType())))
        return entry.emitError("view argument ")
               << arg.getArgNumber() << " is not a view of a param";
      bufferOf[arg] = bufferOf.lookup(entry.getArgument(of.getInt()));
    }

    // The init sequence first (its launches come first in the memory plan's
    // time, so its temps share the arena with the run's), then the run's.
    int launch = 0;
    if (init) {
      manifest["init_launches"] = json::array();
      for (BlockArgument arg : init.getArguments()) {
        auto param =
            init.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tcc.param");
        if (!param || param.getInt() < 0 ||
            param.getInt() >= (int64_t)entry.getNumArguments() ||
            !bufferOf.count(entry.getArgument(param.getInt())))
          return init.emitError("init argument ")
                 << arg.getArgNumber() << " is not a param of the entry";
        bufferOf[arg] = bufferOf.lookup(entry.getArgument(param.getInt()));
      }
      auto initRet =
          cast<func::ReturnOp>(init.getBody().front().getTerminator());
      llvm::DenseSet<Value> derived(initRet.getOperands().begin(),
                                    initRet.getOperands().end());
      llvm::DenseMap<Value, unsigned> noOutputs;
      if (failed(emitCalls(init, derived, noOutputs, planOf, deviceIndex, host,
                           manifest["init_launches"], launch)))
        return failure();
      for (Value v : initRet.getOperands())
        if (isa<BlockArgument>(v))
          return init.emitError("an init result must be a kernel result");
      for (BlockArgument arg : entry.getArguments()) {
        if (stringAttr(entry, arg.getArgNumber(), "tcc.kind", false) !=
            "derived")
          continue;
        auto index = entry.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                         "tcc.derived");
        if (!index || index.getInt() < 0 ||
            index.getInt() >= (int64_t)initRet.getNumOperands())
          return entry.emitError("derived argument ")
                 << arg.getArgNumber() << " names no init result";
        bufferOf[arg] = bufferOf.lookup(initRet.getOperand(index.getInt()));
      }
      // Older runtimes refuse it by its version.
      manifest["format_version"] = 3;
    }
    if (failed(bindConcatsInPlace(outputOf)))
      return failure();
    llvm::DenseSet<Value> noDerived;
    std::map<std::string, tcc::KernelFunctionLaunches> launchesOf;
    if (!host)
      holdForConcurrency(entry, launch);
    if (failed(emitCalls(entry, noDerived, outputOf, planOf, deviceIndex, host,
                         manifest["launches"], launch, &launchesOf)))
      return failure();
    // Older runtimes refuse it by its version.
    if (usesTensorMaps)
      manifest["format_version"] = usesMapOffsets ? 6 : usesIm2col ? 5 : 4;

    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      if (stringAttr(entry, i, "tcc.kind", true) == "status") {
        touch(v, launch); // read after the last launch
        if (buffers[bufferOf.lookup(v)]["kind"] != "temp")
          return entry.emitError("a status result must be a kernel result");
        manifest["status"].push_back(
            {{"buffer", bufferOf.lookup(v)},
             {"message", stringAttr(entry, i, "tcc.message", true)}});
        continue;
      }
      std::string name = stringAttr(entry, i, "tcc.name", true);
      int id;
      auto it = outputOf.find(v);
      if (it != outputOf.end() && it->second == i) {
        id = bufferOf.lookup(v);
      } else {
        // Inputs, params and repeated values are copied into their own
        // output buffer after the kernels.
        id = addBuffer("output", bytesOf(cast<RankedTensorType>(v.getType())));
        manifest["launches"].push_back({{"copy",
                                         {{"src", bufferOf.lookup(v)},
                                          {"dst", id},
                                          {"bytes", buffers[id]["bytes"]}}}});
        touch(v, launch);
      }
      manifest["outputs"].push_back(tensorJson(name, v.getType(), id));
    }

    // Place temps.
    std::vector<tcc::Lifetime> lifetimes;
    std::vector<int> tempIds;
    for (auto [id, buf] : llvm::enumerate(buffers))
      if (buf["kind"] == "temp") {
        tempIds.push_back(id);
        lifetimes.push_back(
            {buf["bytes"].get<uint64_t>(), first[id], last[id]});
      }
    tcc::MemoryPlan plan = tcc::planMemory(lifetimes);
    for (auto [i, id] : llvm::enumerate(tempIds))
      buffers[id]["offset"] = plan.offsets[i];
    manifest["buffers"] = buffers;
    manifest["arena_bytes"] = plan.arenaBytes;
    json entry = {
        {"target", code.target}, {"blob", blobName}, {"format", code.format}};
    // The runtime refuses host code whose CPU features the machine lacks.
    if (!code.cpu.empty()) {
      entry["cpu"] = code.cpu;
      entry["cpu_features"] = code.cpuFeatures;
    }
    manifest["code"] = json::array({entry});
    // The region groups tcc-region-fusion chose, for `tcc inspect`.
    if (json groups = tcc::regionGroupsJson(module, launchesOf);
        !groups.empty())
      manifest["region_groups"] = std::move(groups);
    return success();
  }

private:
  /// tcc-concat-in-place: the result of a call to a kernel marked
  /// `tcc.concat_in_place` and its inputs (each the one-use result of the
  /// call that stored it there) are one buffer; the call launches nothing.
  LogicalResult
  bindConcatsInPlace(const llvm::DenseMap<Value, unsigned> &outputOf) {
    ModuleOp module = entry->getParentOfType<ModuleOp>();
    for (auto call : entry.getBody().front().getOps<func::CallOp>()) {
      auto f = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!f || !f->hasAttr("tcc.concat_in_place"))
        continue;
      if (call.getNumResults() != 1)
        return call.emitError("an in-place concat has one result");
      Value r = call.getResult(0);
      int id = newBuffer(r, outputOf.count(r) ? "output" : "temp");
      for (Value v : call.getOperands()) {
        if (!v.getDefiningOp<func::CallOp>() || !v.hasOneUse() ||
            bufferOf.count(v))
          return call.emitError("an input of an in-place concat must be the "
                                "one-use result of a kernel call");
        bufferOf[v] = id;
      }
    }
    return success();
  }

  /// The launches of `f`'s kernel calls, appended to `launches`; `launch`
  /// counts calls for the memory plan. Call results in `derived` get derived
  /// buffers, those in `outputOf` output buffers, the others temps. With
  /// `launchesOf`, records per kernel function its symbols and launches.
  LogicalResult
  emitCalls(func::FuncOp f, const llvm::DenseSet<Value> &derived,
            const llvm::DenseMap<Value, unsigned> &outputOf,
            const llvm::StringMap<const tcc::KernelPlan *> &planOf,
            const llvm::StringMap<int> &deviceIndex, bool host, json &launches,
            int &launch,
            std::map<std::string, tcc::KernelFunctionLaunches> *launchesOf =
                nullptr) {
    for (Operation &op : f.getBody().front().without_terminator()) {
      auto call = dyn_cast<func::CallOp>(op);
      if (!call || !planOf.count(call.getCallee()))
        return op.emitError("the entry and init functions must hold only "
                            "kernel calls after outlining");
      const tcc::KernelPlan &plan = *planOf.lookup(call.getCallee());
      std::vector<int> buffersOfCall;
      for (Value v : call.getOperands()) {
        buffersOfCall.push_back(bufferOf.lookup(v));
        touch(v, launch);
      }
      // Results stored into their channels of a concat's buffer: the bytes
      // of each pixel they write (offset, bytes, stride), by position in
      // buffersOfCall.
      llvm::SmallDenseMap<int, std::array<int64_t, 3>> slices;
      auto callee =
          entry->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(
              call.getCallee());
      auto outSlice =
          callee ? callee->getAttrOfType<DenseI64ArrayAttr>("tcc.out_slice")
                 : DenseI64ArrayAttr();
      // tcc-view-kernels: a reshape's result is its argument's bytes, in
      // its buffer; the plan launches nothing.
      if (callee && callee->hasAttr("tcc.view")) {
        Value r = call.getResult(0);
        if (outputOf.count(r) || derived.count(r) || bufferOf.count(r))
          return call.emitError("a view kernel's result must be a temporary");
        bufferOf[r] = bufferOf.lookup(call.getOperand(0));
      }
      for (Value r : call.getResults()) {
        // A concat's input stored in place has the concat's buffer already.
        auto bound = bufferOf.find(r);
        auto t = cast<RankedTensorType>(r.getType());
        if (bound != bufferOf.end() && outSlice && outSlice.size() == 2 &&
            t.getRank() > 0) {
          int64_t elem =
              bytesOf(RankedTensorType::get({1}, t.getElementType()));
          slices[int(buffersOfCall.size())] = {outSlice[0] * elem,
                                               t.getShape().back() * elem,
                                               outSlice[1] * elem};
        }
        buffersOfCall.push_back(bound != bufferOf.end()
                                    ? bound->second
                                    : newBuffer(r, derived.count(r) ? "derived"
                                                   : outputOf.count(r)
                                                       ? "output"
                                                       : "temp"));
        touch(r, launch);
      }
      size_t numBuffers = buffersOfCall.size();
      for (uint64_t bytes : plan.scratchBytes) {
        int id = addBuffer("temp", bytes);
        first[id] = last[id] = launch;
        if (size_t(launch) < heldUntil.size())
          last[id] = std::max(last[id], heldUntil[launch]);
        defined.insert(id);
        buffersOfCall.push_back(id);
      }
      for (const tcc::DeviceLaunch &l : plan.launches) {
        json args = json::array();
        for (int a : l.args) {
          if (a < 0 || size_t(a) >= buffersOfCall.size())
            return call.emitError("kernel ")
                   << plan.name << ": launch argument " << a
                   << " is not one of its " << numBuffers << " buffers and "
                   << plan.scratchBytes.size() << " scratch buffers";
          args.push_back(buffersOfCall[a]);
        }
        json j = {{"kernel", deviceIndex.lookup(l.symbol)}, {"args", args}};
        // A kernel writes its results and scratch only: the runtime orders a
        // CUDA graph's launches by it (runtime/src/LaunchOrder.h).
        if (!host) {
          json writes = json::array();
          json writeSlices = json::array();
          for (auto [p, a] : llvm::enumerate(l.args)) {
            if (size_t(a) < call.getNumOperands())
              continue;
            writes.push_back(p);
            if (auto it = slices.find(a); it != slices.end())
              writeSlices.push_back({{"arg", p},
                                     {"offset", it->second[0]},
                                     {"bytes", it->second[1]},
                                     {"stride", it->second[2]}});
          }
          j["writes"] = writes;
          if (!writeSlices.empty())
            j["write_slices"] = writeSlices;
        }
        if (!l.tensorMaps.empty()) {
          json maps = json::array();
          for (const tcc::DeviceLaunch::TensorMap &m : l.tensorMaps) {
            if (m.arg < 0 || size_t(m.arg) >= buffersOfCall.size())
              return call.emitError("kernel ")
                     << plan.name << ": tensor map over argument " << m.arg
                     << ", not one of its buffers";
            json map = {{"buffer", buffersOfCall[m.arg]},
                        {"dtype", m.dtype},
                        {"dims", m.dims},
                        {"strides", m.strides},
                        {"swizzle", m.swizzle}};
            if (m.im2col) {
              map["im2col"] = {{"channels", m.channels},
                               {"pixels", m.pixels},
                               {"lower", m.lower},
                               {"upper", m.upper},
                               {"element_strides", m.elementStrides}};
              usesIm2col = true;
            } else {
              map["box"] = m.box;
            }
            if (m.offset) {
              map["offset"] = m.offset;
              usesMapOffsets = true;
            }
            maps.push_back(map);
          }
          j["tensor_maps"] = maps;
          usesTensorMaps = true;
        }
        if (host) {
          j["grid"] = l.grid[0];
        } else {
          j["grid"] = json(std::vector<int64_t>(l.grid.begin(), l.grid.end()));
          j["block"] =
              json(std::vector<int64_t>(l.block.begin(), l.block.end()));
        }
        if (launchesOf) {
          tcc::KernelFunctionLaunches &of = (*launchesOf)[plan.name];
          if (std::find(of.symbols.begin(), of.symbols.end(), l.symbol) ==
              of.symbols.end())
            of.symbols.push_back(l.symbol);
          of.launches.push_back(int64_t(launches.size()));
        }
        launches.push_back(j);
      }
      ++launch;
    }

    return success();
  }

  json tensorJson(const std::string &name, Type type, int buffer) {
    auto t = cast<RankedTensorType>(type);
    return {{"name", name},
            {"dtype", dtypeOf(t.getElementType())},
            {"shape", json(std::vector<int64_t>(t.getShape().begin(),
                                                t.getShape().end()))},
            {"buffer", buffer}};
  }

  int addBuffer(const std::string &kind, uint64_t bytes) {
    int id = buffers.size();
    buffers.push_back({{"id", id}, {"kind", kind}, {"bytes", bytes}});
    first.push_back(0);
    last.push_back(0);
    return id;
  }

  int newBuffer(Value v, const std::string &kind) {
    int id = addBuffer(kind, bytesOf(cast<RankedTensorType>(v.getType())));
    bufferOf[v] = id;
    return id;
  }

  void touch(Value v, int launch) {
    int id = bufferOf.lookup(v);
    if (first[id] == 0 && last[id] == 0 && !defined.count(id)) {
      first[id] = launch;
      defined.insert(id);
    }
    last[id] = std::max(last[id], launch);
    if (size_t(launch) < heldUntil.size())
      last[id] = std::max(last[id], heldUntil[launch]);
  }

  /// A CUDA graph runs the calls of independent branches side by side (the
  /// runtime orders launches by the memory they share), so the memory plan
  /// may give a temp's bytes to a later temp only when every call touching
  /// the first is an ancestor of the second's writer; otherwise the reuse
  /// itself would order the branches. Call u's buffers are held through
  /// the call before the first from which every later call descends from
  /// u: heldUntil[base + u]. Calls of `f` in order, numbered from `base`.
  void holdForConcurrency(func::FuncOp f, int base) {
    std::vector<func::CallOp> calls;
    llvm::DenseMap<Operation *, size_t> indexOf;
    for (auto call : f.getBody().front().getOps<func::CallOp>()) {
      indexOf[call] = calls.size();
      calls.push_back(call);
    }
    size_t n = calls.size();
    std::vector<llvm::BitVector> ancestors(n, llvm::BitVector(n));
    for (size_t i = 0; i < n; ++i)
      for (Value v : calls[i].getOperands())
        if (Operation *def = v.getDefiningOp()) {
          auto it = indexOf.find(def);
          if (it == indexOf.end())
            continue;
          ancestors[i] |= ancestors[it->second];
          ancestors[i].set(it->second);
        }
    heldUntil.assign(base + n, 0);
    for (size_t u = 0; u < n; ++u) {
      size_t lastIndependent = u;
      for (size_t j = n; j-- > u + 1;)
        if (!ancestors[j].test(u)) {
          lastIndependent = j;
          break;
        }
      heldUntil[base + u] = base + int(lastIndependent);
    }
  }

  func::FuncOp entry;
  func::FuncOp init; ///< tcc-hoist-param-computations' init function, if any
  json buffers = json::array();
  /// Some launch passes tensor maps (manifest version 4).
  bool usesTensorMaps = false, usesIm2col = false, usesMapOffsets = false;
  std::vector<int> first, last;
  /// Per call (numbered as `launch`): the last call its buffers are held
  /// through (holdForConcurrency); empty on the host.
  std::vector<int> heldUntil;
  llvm::DenseSet<int> defined;
  llvm::DenseMap<Value, int> bufferOf;
};

} // namespace

LogicalResult tcc::buildBundle(ModuleOp module, std::vector<ParamData> &params,
                               const CodeArtifact &code,
                               bundle::BundleWriter &writer, bool keepRecipes) {
  func::FuncOp entry, init;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f->hasAttr("tcc.entry"))
      entry = f;
    if (f->hasAttr("tcc.init"))
      init = f;
  }
  if (!entry)
    return module.emitError("no entry function (tcc.entry)");
  json manifest;
  if (failed(ManifestBuilder(entry, init)
                 .build(params, code, keepRecipes, manifest)))
    return failure();
  writer.addBlob(blobNameOf(code), code.code);
  // Weights can be gigabytes, often a mapped file: the writer streams them
  // from where they are.
  for (auto [i, p] : llvm::enumerate(params)) {
    if (keepRecipes && p.recipe)
      continue;
    p.materialise();
    writer.addBlobView("param." + std::to_string(i), p.bytes.data(),
                       p.bytes.size());
  }
  writer.setManifest(std::move(manifest));
  return success();
}
