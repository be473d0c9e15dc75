//===- LibEmitter.h - a bundle as a C header and static library ---*- C++
//-*-===//
#ifndef TCC_COMPILER_LIBEMITTER_H
#define TCC_COMPILER_LIBEMITTER_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {

/// For `outputPath` = DIR/NAME writes DIR/NAME.h and DIR/libNAME.a. The
/// archive holds the bundle's bytes as `NAME_bundle` / `NAME_bundle_size`;
/// the header declares them, lists the model's inputs and outputs, and
/// defines `NAME_load(ctx, &model)`, which loads the embedded bundle through
/// libtccrt. NAME is made a C identifier.
bool emitLibrary(const std::vector<uint8_t> &bundle,
                 const std::string &outputPath, std::string &error);

} // namespace tcc

#endif // TCC_COMPILER_LIBEMITTER_H
