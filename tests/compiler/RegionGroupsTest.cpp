//===- RegionGroupsTest.cpp - region groups and their kernels -------------===//
//
// regionGroupsJson names the one kernel a group became only when its
// members are one region kernel function launched as `<function>_region`;
// otherwise `kernel` is null with the reason, and `kernels`/`launches` list
// what the members' functions launch.
//
//===----------------------------------------------------------------------===//
#include "compiler/RegionGroups.h"
#include "compiler/Registration.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using nlohmann::json;

namespace {

// Group 0: one region function. Group 1: a region function the template
// refused (generic launches). Group 2: members in two plain functions.
const char *kModule = R"mlir(
func.func @k0(%a: f32) -> f32 attributes {tcc.kind = "region"} {
  %0 = arith.addf %a, %a {tcc.region_group = 0 : i64} : f32
  %1 = arith.mulf %0, %0 {tcc.region_group = 0 : i64} : f32
  return %1 : f32
}
func.func @k1(%a: f32) -> f32 attributes {tcc.kind = "region"} {
  %0 = arith.addf %a, %a {tcc.region_group = 1 : i64} : f32
  %1 = arith.mulf %0, %0 {tcc.region_group = 1 : i64} : f32
  return %1 : f32
}
func.func @k2(%a: f32) -> f32 attributes {tcc.kind = "elementwise"} {
  %0 = arith.addf %a, %a {tcc.region_group = 2 : i64} : f32
  return %0 : f32
}
func.func @k3(%a: f32) -> f32 attributes {tcc.kind = "elementwise"} {
  %0 = arith.mulf %a, %a {tcc.region_group = 2 : i64} : f32
  return %0 : f32
}
)mlir";

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

} // namespace

TEST_CASE("region groups name the kernel they became", "[region-groups]") {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kModule, &context());
  REQUIRE(module);
  std::map<std::string, ::tcc::KernelFunctionLaunches> launchesOf = {
      {"k0", {{"k0_region"}, {2}}},
      {"k1", {{"k1", "k1_1"}, {3, 4}}},
      {"k2", {{"k2"}, {0}}},
      {"k3", {{"k3"}, {1}}}};
  json groups = ::tcc::regionGroupsJson(*module, launchesOf);
  REQUIRE(groups.size() == 3);

  CHECK(groups[0]["group"] == 0);
  CHECK(groups[0]["ops"] == json({"arith.addf", "arith.mulf"}));
  CHECK(groups[0]["kernel"] == "k0_region");
  CHECK(groups[0]["kernels"] == json({"k0_region"}));
  CHECK(groups[0]["launches"] == json({2}));
  CHECK_FALSE(groups[0].contains("unfused_reason"));

  CHECK(groups[1]["kernel"].is_null());
  CHECK(groups[1]["kernels"] == json({"k1", "k1_1"}));
  CHECK(groups[1]["launches"] == json({3, 4}));
  CHECK(groups[1]["unfused_reason"].get<std::string>().find(
            "the region template refused it") == 0);

  CHECK(groups[2]["kernel"].is_null());
  CHECK(groups[2]["kernels"] == json({"k2", "k3"}));
  CHECK(groups[2]["launches"] == json({0, 1}));
  CHECK(groups[2]["unfused_reason"] ==
        "its members are in 2 kernel functions (tcc-form-groups did not form "
        "it)");

  // A region function launched as something else than its region kernel.
  launchesOf["k0"] = {{"k0_region", "k0_region_splitk"}, {2, 3}};
  CHECK(::tcc::regionGroupsJson(*module, launchesOf)[0]["kernel"].is_null());
  // No groups: an empty array.
  OwningOpRef<ModuleOp> empty =
      parseSourceString<ModuleOp>("func.func @f() { return }", &context());
  CHECK(::tcc::regionGroupsJson(*empty, {}) == json::array());
}
