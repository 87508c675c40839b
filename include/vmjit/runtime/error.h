//===- vmjit/runtime/error.h - Errors and the safe-call boundary -*- C++ -*-===//
//
// An Error (type 67) carries a kind ("TypeError", "ValueError", ...), the
// original message, and the VM frames it passed through ("in function F,
// instruction N"), appended as it propagates. The same class is the C++
// exception the runtime throws internally; at every C boundary it becomes a
// -1 return code plus the thread-local raised error, and back.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_ERROR_H
#define VMJIT_RUNTIME_ERROR_H

#include "vmjit/runtime/any.h"

#include <exception>
#include <functional>
#include <optional>
#include <new>
#include <string>
#include <vector>

namespace vmjit {

/// The frames an error passed through, collapsed and bounded the way
/// Python's tracebacks are: a frame that repeats the one before it is
/// written three times, then once as "[previous frame repeated N more
/// times]"; past kHeadLines lines only the outermost kTailLines are kept,
/// with one "[N frames omitted]" line between. An error from a recursion
/// of any depth holds at most kHeadLines + kTailLines + 1 lines.
class FrameTrace {
public:
  static constexpr size_t kHeadLines = 100;
  static constexpr size_t kTailLines = 20;
  static constexpr uint64_t kShownRepeats = 3;

  /// Appends the next outer frame.
  VMJIT_DLL void add(std::string Frame);
  /// The lines to print, innermost first.
  VMJIT_DLL std::vector<std::string> lines() const;
  /// How many frames were added, shown or not.
  uint64_t count() const noexcept { return Count; }

private:
  struct Line {
    std::string Text;
    uint64_t Frames = 1; // >1: a "[previous frame repeated]" line
  };
  Line &newest();
  void push(Line L);

  std::vector<Line> Head;
  std::vector<Line> Tail; // a ring once full; TailStart is its oldest line
  size_t TailStart = 0;
  uint64_t Omitted = 0; // frames in lines dropped between Head and Tail
  uint64_t Count = 0;
  uint64_t Run = 0; // how many times the last frame repeated in a row
  std::string LastFrame;
};

class ErrorObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITError;
  ErrorObj(std::string Kind, std::string Message)
      : Object(kTypeIndex, objectDeleter<ErrorObj>), Kind(std::move(Kind)),
        Message(std::move(Message)) {}

  std::string Kind;
  std::string Message;
  /// Innermost first: "in function F, instruction N (call G)".
  FrameTrace Frames;
};

/// A reference to an error object, and the runtime's exception type.
class Error : public ObjectRef, public std::exception {
public:
  using ContainerType = ErrorObj;
  static constexpr const char *kTypeName = "Error";
  explicit Error(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  Error(std::string Kind, std::string Message)
      : ObjectRef(makeObject<ErrorObj>(std::move(Kind), std::move(Message))) {}

  ErrorObj *get() const noexcept {
    return static_cast<ErrorObj *>(ObjectRef::get());
  }
  const std::string &kind() const noexcept { return get()->Kind; }
  const std::string &message() const noexcept { return get()->Message; }
  /// The frames as printed, innermost first: repeats collapsed and long
  /// traces cut (FrameTrace).
  std::vector<std::string> frames() const { return get()->Frames.lines(); }
  /// How many frames the error passed through, shown or not.
  uint64_t frameCount() const noexcept { return get()->Frames.count(); }
  /// Appends a frame as the error passes outward through it.
  void addFrame(std::string Frame) const {
    get()->Frames.add(std::move(Frame));
  }
  /// "Kind: message" followed by one "  in ..." line per printed frame.
  VMJIT_DLL std::string format() const;

  /// The original message.
  const char *what() const noexcept override { return message().c_str(); }
};

template <> struct TypeTraits<Error> : ObjectRefTypeTraits<Error> {};

/// Throws an Error of the given kind.
[[noreturn]] VMJIT_DLL void throwError(std::string Kind, std::string Message);

/// Stores `E` as this thread's raised error.
VMJIT_DLL void setRaisedError(const Error &E) noexcept;
/// Takes this thread's raised error; if a callee returned -1 without
/// raising one, an InternalError saying so.
VMJIT_DLL Error takeRaisedError() noexcept;

/// Adds a place takeRaisedError looks when this thread's slot is empty:
/// another FFI runtime in the process (a kernel built with tvm-ffi raises
/// its errors in libtvm_ffi.so). `Take` returns that runtime's raised error
/// for this thread, converted, or nullopt.
VMJIT_DLL void addForeignErrorSource(std::function<std::optional<Error>()> Take);
/// Throws this thread's raised error (after a safe call returned non-zero).
[[noreturn]] VMJIT_DLL void throwRaisedError();

namespace detail {
VMJIT_DLL int raiseCurrentException() noexcept;
} // namespace detail

/// Runs `F` and converts any exception it throws into the raised error and
/// a -1 return code: the body of every safe-call entry written in C++.
template <typename F> int safeCallGuard(F &&Body) noexcept {
  try {
    Body();
    return 0;
  } catch (...) {
    return detail::raiseCurrentException();
  }
}

} // namespace vmjit

#endif // VMJIT_RUNTIME_ERROR_H
