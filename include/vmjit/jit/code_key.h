//===- vmjit/jit/code_key.h - What compiled code depends on ----*- C++ -*-===//
//
// The object-cache key of tier-2 code (jit/object_cache.h) is derived, not
// kept by hand: every decision the emitted code depends on besides the
// words of its functions (how a callee is bound, what is inlined where, a
// constant's type embedded, what is speculated, flat or promoted, the
// build, the host, the pipeline) is recorded through CodeKey::record when
// it is made. The rule: code that emits something from a fact not in the
// bytecode records that fact here. Records are encoded unambiguously
// (each value typed and strings length-prefixed), so two different
// sequences of decisions never give the same key.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CODE_KEY_H
#define VMJIT_JIT_CODE_KEY_H

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace vmjit::jit {

/// The decisions compiled code depends on, in the order they were made.
class CodeKey {
public:
  /// Records decision `What` (a fixed tag naming it) with its values
  /// (integers, enums, bools or strings).
  template <typename... Ts> void record(std::string_view What, const Ts &...V) {
    addText(What);
    (add(V), ...);
    Text += ';';
  }
  /// Appends every decision `Other` recorded.
  void append(const CodeKey &Other) { Text += Other.Text; }
  /// The encoded decisions.
  const std::string &text() const { return Text; }
  bool operator==(const CodeKey &O) const { return Text == O.Text; }

private:
  template <typename T> void add(const T &V) {
    if constexpr (std::is_enum_v<T>)
      addInt(static_cast<int64_t>(V));
    else if constexpr (std::is_same_v<T, bool>)
      addInt(V ? 1 : 0);
    else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>)
      addUnsigned(static_cast<uint64_t>(V));
    else if constexpr (std::is_integral_v<T>)
      addInt(static_cast<int64_t>(V));
    else
      addText(std::string_view(V));
  }
  void addInt(int64_t V);
  void addUnsigned(uint64_t V);
  void addText(std::string_view S);

  std::string Text;
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_CODE_KEY_H
