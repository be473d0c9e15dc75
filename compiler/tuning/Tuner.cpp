//===- Tuner.cpp - tcc tune: schedules measured, learned and searched -----===//
#include "compiler/tuning/Tuner.h"

#include "compiler/GpuCodegen.h"
#include "compiler/Registration.h"
#include "compiler/Target.h"
#include "compiler/TuningRecords.h"
#include "compiler/tuning/CostModel.h"
#include "compiler/tuning/Search.h"
#include "runtime/src/FileIO.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace fs = std::filesystem;
using nlohmann::json;

namespace tcc::tuning {
namespace {

/// A matmul signature of the model, the kernels that have it, and the
/// schedule the heuristics gave them.
struct Signature {
  std::string kind; ///< the template family: "matmul" or "conv"
  json signature;
  std::vector<std::string> kernels;
  /// Launches a run of the model makes of them (kernels that are equal
  /// but for their name are one kernel launched several times).
  int64_t launches = 0;
  MatmulCandidate heuristic;
  std::vector<MatmulCandidate> space;
  SearchSpace search;
};

struct Measured {
  size_t sig, point;
  double ms;
  double seconds; ///< spent measuring it (0 where not recorded)
};

int fail(std::ostream &err, const std::string &msg) {
  err << "tcc: error: " << msg << "\n";
  return 1;
}

bool readJson(const fs::path &p, json &out, std::string &error) {
  std::ifstream in(p);
  if (!in) {
    error = "cannot read " + p.string();
    return false;
  }
  out = json::parse(in, nullptr, false);
  if (out.is_discarded()) {
    error = p.string() + ": not valid JSON";
    return false;
  }
  return true;
}

bool writeJson(const fs::path &p, const json &j, std::string &error) {
  std::string text = j.dump(1) + "\n";
  return io::writeFileAtomically(p.string(), text.data(), text.size(), error);
}

int64_t get(const json &o, const char *key, int64_t dflt) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : dflt;
}

/// A schedule's relaxed coordinates: wgmma or not, log2 of tile_m, tile_n
/// and tile_k, warps, stages, log2 of split_k, TMA copies or not, a
/// producer warpgroup or not.
std::vector<double> coordinates(const MatmulCandidate &c) {
  const json &s = c.schedule;
  bool wg = c.templ == "wgmma";
  double warps = wg ? 4.0 * get(s, "warpgroups", 1)
                    : double(get(s, "warps_m", 1) * get(s, "warps_n", 1));
  return {wg ? 1.0 : 0.0,
          std::log2(double(get(s, "tile_m", 64))),
          std::log2(double(get(s, "tile_n", 64))),
          wg ? 6.0 : std::log2(double(get(s, "tile_k", 32))),
          warps,
          double(get(s, "stages", 3)),
          std::log2(double(get(s, "split_k", 1))),
          s.value("tma", false) ? 1.0 : 0.0,
          double(get(s, "producer", 0))};
}

/// A convolution signature's output height and width.
std::pair<int64_t, int64_t> convOutput(const json &sig) {
  auto at = [&](const char *k, size_t i) {
    json a = sig.value(k, json::array());
    return a.is_array() && a.size() > i && a[i].is_number_integer()
               ? a[i].get<int64_t>()
               : int64_t(1);
  };
  auto size = [&](const char *in, const char *window, size_t axis) {
    return (get(sig, in, 1) + at("pads", axis) + at("pads", axis + 2) -
            at("dilations", axis) * (get(sig, window, 1) - 1) - 1) /
               std::max<int64_t>(1, at("strides", axis)) +
           1;
  };
  return {size("h", "kh", 0), size("w", "kw", 1)};
}

/// The GEMM a signature computes: log2 of M, N, K and the batch, and the
/// operands' element bytes (a convolution's implicit GEMM: output pixels,
/// output channels, the window's taps by a group's input channels).
std::array<double, 5> gemmView(const std::string &kind, const json &sig) {
  auto lg = [](int64_t v) {
    return std::log2(double(std::max<int64_t>(1, v)));
  };
  if (kind == "conv") {
    auto [oh, ow] = convOutput(sig);
    return {lg(get(sig, "n", 1) * oh * ow), lg(get(sig, "o", 1)),
            lg(get(sig, "kh", 1) * get(sig, "kw", 1) * get(sig, "c", 1) /
               std::max<int64_t>(1, get(sig, "groups", 1))),
            0.0, sig.value("input", "") == "f32" ? 4.0 : 2.0};
  }
  return {lg(get(sig, "m", 1)), lg(get(sig, "n", 1)), lg(get(sig, "k", 1)),
          lg(get(sig, "batch", 1)), sig.value("a", "") == "f32" ? 4.0 : 2.0};
}

/// The cost model's features at coordinates `c` for a problem `g`
/// (gemmView): the coordinates, the problem and smooth forms of what the
/// time follows (log2 of the blocks, of the waves of them over the
/// multiprocessors, of a block's work and of its shared-memory stages).
std::vector<double> features(const std::array<double, 5> &g, double processors,
                             const std::vector<double> &c) {
  auto [lm, ln, lk, lb, bytes] = g;
  double blocks =
      std::max(0.0, lm - c[1]) + std::max(0.0, ln - c[2]) + lb + c[6];
  double waves = std::log2(1.0 + std::exp2(blocks - std::log2(processors)));
  double work = c[1] + c[2] + lk - c[6];
  double smem = std::log2(std::exp2(c[1]) + std::exp2(c[2])) + c[3] +
                std::log2(bytes) + std::log2(std::max(1.0, c[5]));
  return {c[0], c[1], c[2], c[3], c[4],  c[5],   c[6],  c[7], c[8],
          lm,   ln,   lk,   lb,   bytes, blocks, waves, work, smem};
}

/// The matmul of `signature` alone, as a model file's JSON.
json standaloneModel(const json &sig, size_t index) {
  int64_t m = get(sig, "m", 1), n = get(sig, "n", 1), k = get(sig, "k", 1),
          batch = get(sig, "batch", 1);
  bool ta = sig.value("trans_a", false), tb = sig.value("trans_b", false);
  auto shape = [&](bool batched, int64_t r, int64_t c) {
    std::vector<int64_t> s;
    if (batched && batch > 1)
      s.push_back(batch);
    s.push_back(r);
    s.push_back(c);
    return s;
  };
  return {{"format", "tcc-model"},
          {"version", 1},
          {"name", "tune_matmul_" + std::to_string(index)},
          {"inputs",
           {{{"name", "a"},
             {"dtype", sig.value("a", "f32")},
             {"shape", ta ? shape(sig.value("a_batched", false), k, m)
                          : shape(sig.value("a_batched", false), m, k)}},
            {{"name", "b"},
             {"dtype", sig.value("b", "f32")},
             {"shape", tb ? shape(sig.value("b_batched", false), n, k)
                          : shape(sig.value("b_batched", false), k, n)}}}},
          {"params", json::array()},
          {"outputs", {"c"}},
          {"nodes",
           {{{"op", "matmul"},
             {"inputs", {"a", "b"}},
             {"outputs", {"c"}},
             {"attrs",
              {{"transpose_a", ta},
               {"transpose_b", tb},
               {"out_dtype", sig.value("c", "f32")}}}}}}};
}

/// The convolution of `sig` alone (with its bias, residual, ReLU and the
/// value before it where the model keeps that), as a model file's JSON:
/// NCHW as the model format has it, the weight and bias params random
/// recipes (kept as recipes: drawn, and laid out, when the bundle loads).
/// One written into a concat in place (out_stride, copy_out) is not
/// reproduced: its candidates are not built from their records.
json standaloneConv(const json &sig, size_t index) {
  int64_t n = get(sig, "n", 1), c = get(sig, "c", 1), o = get(sig, "o", 1),
          g = std::max<int64_t>(1, get(sig, "groups", 1));
  auto [oh, ow] = convOutput(sig);
  std::string t = sig.value("input", "f32");
  json random = {
      {"random", "normal"}, {"mean", 0.0}, {"std", 0.05}, {"seed", 1}};
  json inputs =
      json::array({{{"name", "x"},
                    {"dtype", t},
                    {"shape", {n, c, get(sig, "h", 1), get(sig, "w", 1)}}}});
  json params =
      json::array({{{"name", "w"},
                    {"dtype", sig.value("weight", t)},
                    {"shape", {o, c / g, get(sig, "kh", 1), get(sig, "kw", 1)}},
                    {"init", random}}});
  json convIn = {"x", "w"};
  if (!sig.value("bias", "").empty()) {
    params.push_back({{"name", "b"},
                      {"dtype", sig.value("bias", t)},
                      {"shape", {o}},
                      {"init", random}});
    convIn.push_back("b");
  }
  json nodes = json::array({{{"op", "conv2d"},
                             {"inputs", convIn},
                             {"outputs", {"y0"}},
                             {"attrs",
                              {{"strides", sig.at("strides")},
                               {"pads", sig.at("pads")},
                               {"dilations", sig.at("dilations")},
                               {"groups", g}}}}});
  std::string y = "y0";
  if (!sig.value("residual", "").empty()) {
    inputs.push_back({{"name", "r"},
                      {"dtype", sig.value("residual", t)},
                      {"shape", {n, o, oh, ow}}});
    nodes.push_back({{"op", "add"}, {"inputs", {y, "r"}}, {"outputs", {"y1"}}});
    y = "y1";
  }
  json outputs = json::array();
  if (sig.value("relu", false)) {
    // The value before the ReLU too, where the model stores it (raw_out).
    if (sig.value("raw_out", false))
      outputs.push_back(y);
    nodes.push_back({{"op", "relu"}, {"inputs", {y}}, {"outputs", {"y2"}}});
    y = "y2";
  }
  outputs.push_back(y);
  return {{"format", "tcc-model"},
          {"version", 1},
          {"name", "tune_conv_" + std::to_string(index)},
          {"inputs", inputs},
          {"params", params},
          {"outputs", outputs},
          {"nodes", nodes}};
}

/// The template kernels of a manifest, by family and signature, with the
/// launches a run makes of them.
std::vector<Signature> signaturesOf(const json &manifest) {
  std::vector<Signature> out;
  std::map<int64_t, int64_t> launchesOf;
  for (const json &l : manifest.value("launches", json::array()))
    if (l.is_object())
      ++launchesOf[get(l, "kernel", -1)];
  int64_t index = -1;
  for (const json &k : manifest.value("kernels", json::array())) {
    ++index;
    if (!k.contains("signature") || !k.contains("template"))
      continue;
    std::string kind = k.value("tuning_kernel", "matmul");
    auto it = std::find_if(out.begin(), out.end(), [&](const Signature &s) {
      return s.kind == kind && s.signature == k["signature"];
    });
    if (it == out.end()) {
      out.push_back({kind,
                     k["signature"],
                     {},
                     0,
                     {k["template"], k["schedule"]},
                     {},
                     {}});
      it = std::prev(out.end());
    }
    it->kernels.push_back(k.value("name", "?"));
    it->launches += launchesOf[index];
  }
  return out;
}

/// The kernel function of `manifest` with a `kind` kernel of `sig` built
/// with `c` from a record (its launches' symbols start with it: the
/// template kernel, a split-K reduction, B's transpose), or "".
std::string builtWith(const json &manifest, const std::string &kind,
                      const json &sig, const MatmulCandidate &c) {
  for (const json &k : manifest.value("kernels", json::array()))
    if (k.value("tuning_kernel", "matmul") == kind &&
        k.value("signature", json()) == sig &&
        k.value("template", "") == c.templ &&
        k.value("schedule", json()) == c.schedule &&
        k.value("tuning_record", false)) {
      std::string name = k.value("name", "");
      for (const char *suffix : {"_conv_wgmma", "_conv_mma", "_wgmma", "_mma"})
        if (llvm::StringRef(name).ends_with(suffix))
          return name.substr(0, name.size() - std::strlen(suffix));
      return name;
    }
  return "";
}

int roundNumber(const fs::path &p) {
  std::string n = p.filename().string();
  if (n.rfind("round-", 0) != 0 || n.size() == 6 ||
      n.find_first_not_of("0123456789", 6) != std::string::npos ||
      n.size() > 12)
    return 0;
  return std::stoi(n.substr(6));
}

} // namespace

namespace {

/// One round or the records; `roundDir` gets the round's folder and
/// `written` its number of candidates.
int tuneStep(const std::string &modelPath, const TuneOptions &options,
             const CompileFn &compile, const InspectFn &inspect,
             std::ostream &out, std::ostream &err, std::string &roundDir,
             int &written) {
  written = 0;
  std::string error;
  std::optional<TargetDesc> target = parseTarget(options.target, error);
  if (!target)
    return fail(err, error);
  if (!target->isNvidia())
    return fail(err, "tune: the matmul templates it tunes are NVIDIA's; "
                     "--target must be sm_80 or later");
  if (options.workDir.empty())
    return fail(err, "tune needs --work DIR");
  std::error_code ec;
  fs::create_directories(options.workDir, ec);
  if (ec)
    return fail(err, "cannot create " + options.workDir + ": " + ec.message());
  fs::path work(options.workDir);

  // The model's matmul kernels and the heuristics' schedules.
  std::vector<uint8_t> bundle;
  json manifest;
  if (!compile(modelPath, "", bundle) || !inspect(bundle, manifest))
    return 1;
  std::vector<Signature> sigs = signaturesOf(manifest);
  if (sigs.empty())
    return fail(err, modelPath +
                         ": no matmul or convolution template kernel "
                         "to tune on " +
                         options.target);
  mlir::MLIRContext context;
  double processors = double(target->multiprocessorsForHeuristics());
  for (size_t i = 0; i < sigs.size(); ++i) {
    Signature &s = sigs[i];
    s.space = tuningSpace(s.kind, s.signature, *target, context, error);
    if (s.space.empty())
      return fail(err, "kernel " + s.kernels.front() + ": " + error);
    for (const MatmulCandidate &c : s.space)
      s.search.points.push_back(coordinates(c));
    std::array<double, 5> g = gemmView(s.kind, s.signature);
    s.search.features = [g, processors](const std::vector<double> &c) {
      return features(g, processors, c);
    };
  }
  auto pointOf = [&](size_t sig, const std::string &templ,
                     const json &schedule) -> std::optional<size_t> {
    const std::vector<MatmulCandidate> &sp = sigs[sig].space;
    for (size_t p = 0; p < sp.size(); ++p)
      if (sp[p].templ == templ && sp[p].schedule == schedule)
        return p;
    return std::nullopt;
  };

  // Every round's measurements in order (a round not measured yet is
  // skipped).
  std::vector<Measured> measured;
  int lastRound = 0;
  std::vector<std::pair<int, fs::path>> rounds;
  for (const fs::directory_entry &e : fs::directory_iterator(work, ec))
    if (int r = roundNumber(e.path()); r && e.is_directory())
      rounds.push_back({r, e.path()});
  std::sort(rounds.begin(), rounds.end());
  for (const auto &[r, path] : rounds) {
    lastRound = std::max(lastRound, r);
    json cands, meas;
    if (!fs::exists(path / "measurements.json"))
      continue;
    if (!readJson(path / "candidates.json", cands, error) ||
        !readJson(path / "measurements.json", meas, error))
      return fail(err, error);
    std::map<int64_t, json> byId;
    for (const json &c : cands.value("candidates", json::array()))
      byId[get(c, "id", -1)] = c;
    for (const json &m : meas.value("measurements", json::array())) {
      if (!m.contains("id") || !(m.value("ms", -1.0) > 0))
        continue;
      auto c = byId.find(get(m, "id", -1));
      if (c == byId.end())
        continue;
      for (size_t i = 0; i < sigs.size(); ++i)
        if (sigs[i].kind == c->second.value("kernel", "matmul") &&
            sigs[i].signature == c->second.value("signature", json()))
          if (auto p = pointOf(i, c->second.value("template", ""),
                               c->second.value("schedule", json())))
            measured.push_back(
                {i, *p, m["ms"].get<double>(), m.value("seconds", 0.0)});
    }
  }

  auto best = [&](size_t sig) -> const Measured * {
    const Measured *b = nullptr;
    for (const Measured &m : measured)
      if (m.sig == sig && (!b || m.ms < b->ms))
        b = &m;
    return b;
  };
  auto heuristicMs = [&](size_t sig) -> double {
    auto p =
        pointOf(sig, sigs[sig].heuristic.templ, sigs[sig].heuristic.schedule);
    double ms = -1;
    for (const Measured &m : measured)
      if (p && m.sig == sig && m.point == *p && (ms < 0 || m.ms < ms))
        ms = m.ms;
    return ms;
  };
  // The standing of each signature: heuristic and best measured.
  for (size_t i = 0; i < sigs.size(); ++i) {
    const Measured *b = best(i);
    size_t n = std::count_if(measured.begin(), measured.end(),
                             [&](const Measured &m) { return m.sig == i; });
    std::array<double, 5> g = gemmView(sigs[i].kind, sigs[i].signature);
    out << "signature " << i << " (" << sigs[i].launches << " " << sigs[i].kind
        << " launch" << (sigs[i].launches != 1 ? "es" : "") << ", GEMM "
        << std::lround(std::exp2(g[0])) << "x" << std::lround(std::exp2(g[1]))
        << "x" << std::lround(std::exp2(g[2])) << "): " << sigs[i].space.size()
        << " schedules, " << n << " measured";
    if (b) {
      double h = heuristicMs(i);
      out << ", best " << b->ms << " ms (" << sigs[i].space[b->point].templ
          << " " << sigs[i].space[b->point].schedule.dump() << ")";
      if (h > 0)
        out << ", heuristic " << h << " ms";
    }
    out << "\n";
  }

  if (options.finish) {
    json records = json::array();
    for (size_t i = 0; i < sigs.size(); ++i)
      if (const Measured *b = best(i))
        records.push_back({{"gpu", options.target},
                           {"kernel", sigs[i].kind},
                           {"template", sigs[i].space[b->point].templ},
                           {"template_version",
                            templateVersion(sigs[i].space[b->point].templ)},
                           {"signature", sigs[i].signature},
                           {"schedule", sigs[i].space[b->point].schedule},
                           {"ms", b->ms}});
    if (records.empty())
      return fail(err, "tune --finish: nothing measured in " + options.workDir +
                           " yet (tcc tune-measure DIR/round-N)");
    if (!writeJson(work / "records.json",
                   {{"version", 1}, {"records", records}}, error))
      return fail(err, error);
    // The tuning curve: the model's matmul time with each signature's
    // fastest schedule so far, after each measurement.
    std::vector<double> bestSoFar(sigs.size(), 0.0);
    std::string csv = "measured,seconds,model_ms\n";
    double seconds = 0;
    for (size_t n = 0; n < measured.size(); ++n) {
      const Measured &m = measured[n];
      seconds += m.seconds;
      if (bestSoFar[m.sig] == 0 || m.ms < bestSoFar[m.sig])
        bestSoFar[m.sig] = m.ms;
      double total = 0;
      bool all = true;
      for (size_t i = 0; i < sigs.size(); ++i) {
        all &= bestSoFar[i] > 0;
        total += bestSoFar[i] * sigs[i].launches;
      }
      if (all)
        csv += std::to_string(n + 1) + "," + std::to_string(seconds) + "," +
               std::to_string(total) + "\n";
    }
    if (!io::writeFileAtomically((work / "curve.csv").string(), csv.data(),
                                 csv.size(), error))
      return fail(err, error);
    out << "wrote " << (work / "records.json").string() << " ("
        << records.size() << " record" << (records.size() > 1 ? "s" : "")
        << "): tcc compile --tuning-records "
        << (work / "records.json").string() << "\n";
    return 0;
  }

  // The cost model on every measurement, all signatures together (the
  // problem is among the features).
  CostModel model(32, options.seed + 1);
  {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const Measured &m : measured) {
      x.push_back(
          sigs[m.sig].search.features(sigs[m.sig].search.points[m.point]));
      y.push_back(m.ms);
    }
    if (x.size() >= 8 && options.strategy == "model")
      model.train(x, y);
  }
  int round = lastRound + 1;
  fs::path dir = work / ("round-" + std::to_string(round));
  roundDir = dir.string();
  fs::create_directories(dir / "models", ec);
  if (ec)
    return fail(err, "cannot create " + dir.string() + ": " + ec.message());
  std::mt19937_64 rng(options.seed * 7919 + round);
  // The round's candidates go where the model's time is: each signature's
  // share is its launches times its fastest time measured (before any,
  // its FLOPs), at least 2 (Felix weighs its tasks so).
  std::vector<double> weight(sigs.size());
  bool allMeasured = true;
  for (size_t i = 0; i < sigs.size(); ++i)
    allMeasured &= best(i) != nullptr;
  double weights = 0;
  for (size_t i = 0; i < sigs.size(); ++i) {
    std::array<double, 5> g = gemmView(sigs[i].kind, sigs[i].signature);
    weight[i] =
        std::max<int64_t>(1, sigs[i].launches) *
        (allMeasured ? best(i)->ms : std::exp2(g[0] + g[1] + g[2] + g[3]));
    weights += weight[i];
  }
  json candidates = json::array();
  int64_t id = 0;
  for (size_t i = 0; i < sigs.size(); ++i) {
    size_t quota = std::max<size_t>(
        2, size_t(std::lround(options.roundSize * weight[i] / weights)));
    std::set<size_t> done;
    std::vector<std::pair<double, size_t>> order;
    for (const Measured &m : measured)
      if (m.sig == i) {
        done.insert(m.point);
        order.push_back({m.ms, m.point});
      }
    std::sort(order.begin(), order.end());
    std::vector<size_t> starts;
    for (size_t j = 0; j < order.size() && j < 3; ++j)
      starts.push_back(order[j].second);
    std::vector<size_t> next;
    // The heuristic's schedule is measured first: the baseline.
    if (auto h =
            pointOf(i, sigs[i].heuristic.templ, sigs[i].heuristic.schedule);
        h && !done.count(*h)) {
      next.push_back(*h);
      done.insert(*h);
    }
    if (options.strategy == "grid") {
      // The space in its order (knob by knob), the baseline of a grid.
      for (size_t p = 0; p < sigs[i].space.size() && next.size() < quota; ++p)
        if (!done.count(p))
          next.push_back(p);
    } else if (model.trained() && options.strategy == "model") {
      for (size_t p : proposeCandidates(sigs[i].search, model, done, starts,
                                        quota - next.size(), quota / 4, rng))
        next.push_back(p);
    } else {
      // Before any model: random schedules, as many of each template (the
      // mma.sync space is some thirty times wgmma's, which would else be
      // all but absent).
      std::map<std::string, std::vector<size_t>> byTemplate;
      for (size_t p = 0; p < sigs[i].space.size(); ++p)
        if (!done.count(p))
          byTemplate[sigs[i].space[p].templ].push_back(p);
      for (auto &[t, ps] : byTemplate)
        std::shuffle(ps.begin(), ps.end(), rng);
      for (size_t k = 0; next.size() < quota; ++k) {
        bool any = false;
        for (auto &[t, ps] : byTemplate)
          if (k < ps.size() && next.size() < quota) {
            next.push_back(ps[k]);
            any = true;
          }
        if (!any)
          break;
      }
    }
    fs::path modelFile =
        dir / "models" / (sigs[i].kind + std::to_string(i) + ".json");
    if (!writeJson(modelFile,
                   sigs[i].kind == "conv"
                       ? standaloneConv(sigs[i].signature, i)
                       : standaloneModel(sigs[i].signature, i),
                   error))
      return fail(err, error);
    for (size_t p : next) {
      const MatmulCandidate &c = sigs[i].space[p];
      json record = {{"gpu", options.target},
                     {"kernel", sigs[i].kind},
                     {"template", c.templ},
                     {"template_version", templateVersion(c.templ)},
                     {"signature", sigs[i].signature},
                     {"schedule", c.schedule},
                     {"ms", 0.0}};
      fs::path recFile =
          dir / "models" / ("c" + std::to_string(id) + ".records.json");
      if (!writeJson(recFile, {{"version", 1}, {"records", {record}}}, error))
        return fail(err, error);
      std::vector<uint8_t> cand;
      json m;
      if (!compile(modelFile.string(), recFile.string(), cand) ||
          !inspect(cand, m))
        return 1;
      // The matmul alone must have the model's signature, and the record
      // must have given it this schedule.
      std::string function = builtWith(m, sigs[i].kind, sigs[i].signature, c);
      if (function.empty()) {
        // The kernel alone does not reproduce the signature (a convolution
        // writing into a concat in place): nothing of it can be tuned so.
        out << "note: signature " << i << " (kernel " << sigs[i].kernels.front()
            << ") is not reproduced by its " << sigs[i].kind
            << " alone; not tuned\n";
        break;
      }
      std::string name = "c" + std::to_string(id) + ".tccb";
      if (!io::writeFileAtomically((dir / name).string(), cand.data(),
                                   cand.size(), error))
        return fail(err, error);
      candidates.push_back({{"id", id},
                            {"bundle", name},
                            {"kernel", sigs[i].kind},
                            {"kernel_prefix", function},
                            {"signature", sigs[i].signature},
                            {"template", c.templ},
                            {"schedule", c.schedule}});
      ++id;
    }
  }
  if (!writeJson(dir / "candidates.json",
                 {{"round", round},
                  {"target", options.target},
                  {"strategy", options.strategy},
                  {"candidates", candidates}},
                 error))
    return fail(err, error);
  written = int(candidates.size());
  out << "round " << round << ": " << candidates.size() << " candidates in "
      << dir.string()
      << (options.strategy == "grid" ? " (the next of the grid)"
          : model.trained() ? " (proposed by the cost model)"
                            : " (random, and the heuristics' schedules)")
      << "\nmeasure them on the GPU: tcc tune-measure " << dir.string()
      << "\nthen: tcc tune again for the next round, or with --finish for the "
         "records\n";
  return 0;
}

} // namespace

int tune(const std::string &modelPath, const TuneOptions &options,
         const CompileFn &compile, const InspectFn &inspect, std::ostream &out,
         std::ostream &err, const MeasureFn &measure) {
  if (options.strategy != "model" && options.strategy != "random" &&
      options.strategy != "grid")
    return fail(err, "tune: --strategy must be model, random or grid, not '" +
                         options.strategy + "'");
  std::string roundDir;
  // Tuning files come from the user's folder: a wrong type there is a
  // one-line error, never an uncaught exception.
  auto step = [&](const TuneOptions &o, int &candidates) -> int {
    try {
      return tuneStep(modelPath, o, compile, inspect, out, err, roundDir,
                      candidates);
    } catch (const json::exception &e) {
      return fail(err, "tune: " + options.workDir +
                           ": a tuning file is malformed: " + e.what());
    }
  };
  int candidates = 0;
  if (!measure || options.rounds <= 0 || options.finish)
    return step(options, candidates);
  // Compile a round, measure it, again: on one machine with a GPU.
  TuneOptions each = options;
  each.finish = false;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < options.rounds; ++r) {
    if (int rc = step(each, candidates))
      return rc;
    if (candidates == 0) // the space is measured through
      break;
    if (int rc = measure(roundDir))
      return rc;
    double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (options.budgetSeconds > 0 && spent >= options.budgetSeconds)
      break;
  }
  each.finish = true;
  return step(each, candidates);
}

} // namespace tcc::tuning
