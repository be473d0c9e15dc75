//===- TuningRecords.cpp - measured schedules, reused at compile time ----===//

#include "compiler/TuningRecords.h"

#include "runtime/src/FileIO.h"

namespace tcc {

int64_t templateVersion(const std::string &templ) {
  // Bump a template's version when its schedule knobs change meaning.
  if (templ == "wgmma" || templ == "mma")
    return 1;
  return 0;
}

bool TuningRecords::load(const std::string &file, std::string &error) {
  records.clear();
  path = file;
  if (file.empty())
    return true;
  std::string text;
  if (!io::readRegularFile(file, text, error))
    return false;
  nlohmann::json j =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto fail = [&](const std::string &what) {
    error = file + ": " + what;
    return false;
  };
  if (!j.is_object() || !j.contains("records") || !j["records"].is_array())
    return fail("a tuning records file is a JSON object with a \"records\" "
                "array (docs/cli.md)");
  if (!j.contains("version") || j["version"] != 1)
    return fail("unknown tuning records version (this tcc reads version 1)");
  for (const nlohmann::json &r : j["records"]) {
    size_t i = records.size();
    auto str = [&](const char *key, std::string &out) {
      if (!r.contains(key) || !r[key].is_string())
        return false;
      out = r[key].get<std::string>();
      return true;
    };
    TuningRecord rec;
    if (!r.is_object() || !str("gpu", rec.gpu) || !str("kernel", rec.kernel) ||
        !str("template", rec.templ) || !r.contains("signature") ||
        !r["signature"].is_object() || !r.contains("schedule") ||
        !r["schedule"].is_object() || !r.contains("template_version") ||
        !r["template_version"].is_number_integer())
      return fail("record " + std::to_string(i) +
                  " needs gpu, kernel, template (strings), template_version "
                  "(an integer), signature and schedule (objects)");
    rec.signature = r["signature"];
    rec.schedule = r["schedule"];
    rec.templateVersion = r["template_version"].get<int64_t>();
    if (r.contains("ms") && r["ms"].is_number())
      rec.ms = r["ms"].get<double>();
    records.push_back(std::move(rec));
  }
  return true;
}

const TuningRecord *
TuningRecords::find(const std::string &kernel, const nlohmann::json &signature,
                    const std::string &gpu,
                    std::vector<std::string> &warnings) const {
  const TuningRecord *best = nullptr;
  for (const TuningRecord &r : records) {
    if (r.kernel != kernel || r.signature != signature)
      continue;
    if (r.gpu != gpu) {
      warnings.push_back(path + ": a record for " + r.gpu +
                         " is ignored (compiling for " + gpu + ")");
      continue;
    }
    if (r.templateVersion != templateVersion(r.templ)) {
      warnings.push_back(path + ": a record for template " + r.templ +
                         " version " + std::to_string(r.templateVersion) +
                         " is ignored (this tcc's is version " +
                         std::to_string(templateVersion(r.templ)) + ")");
      continue;
    }
    // The fastest of several records for the same kernel.
    if (!best || r.ms < best->ms)
      best = &r;
  }
  return best;
}

} // namespace tcc
