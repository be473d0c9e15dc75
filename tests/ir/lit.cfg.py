# lit configuration for tcc's IR tests: one file per pass or dialect feature,
# run through tcc-opt and checked with FileCheck.
import os
import lit.formats

config.name = "tcc-ir"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tcc_build_dir, "tests", "ir")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in"]
config.environment["PATH"] = os.pathsep.join(
    [config.tcc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
