//===- code_key.cpp - What compiled code depends on -----------------------===//
//
// The encoding of jit/code_key.h: ',' then a type letter per value (i
// signed, u unsigned, s a length-prefixed string), so that no two record
// sequences share a text.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/code_key.h"

#include <fmt/format.h>

namespace vmjit::jit {

void CodeKey::addInt(int64_t V) { Text += fmt::format(",i{}", V); }

void CodeKey::addUnsigned(uint64_t V) { Text += fmt::format(",u{:x}", V); }

void CodeKey::addText(std::string_view S) {
  Text += fmt::format(",s{}:", S.size());
  Text += S;
}

} // namespace vmjit::jit
