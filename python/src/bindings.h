//===- bindings.h - Shared pieces of the _vmjit extension -------*- C++ -*-===//
//
// The extension module behind `import vmjit` (python/vmjit/ is the Python
// layer on top). Values cross between Python and vmjit in convert.cpp,
// errors in errors.cpp; machine.cpp holds a VM with its lock,
// function_object.cpp the callable type whose calls release the GIL, and
// global_functions.cpp Python callables registered as packed functions;
// machine_kernels.cpp a VM's kernel tier (kernels=, model.bc);
// machine_bind.cpp binding a function's parameters (bind_params).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_PYTHON_BINDINGS_H
#define VMJIT_PYTHON_BINDINGS_H

#include "gil.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/aot_library.h"
#include "vmjit/vm/virtual_machine.h"

#include <nlohmann/json_fwd.hpp>
#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vmjit::jit {
class KernelTier;
} // namespace vmjit::jit

namespace vmjit::python {

namespace py = pybind11;

class Machine;

/// Classes of the Python layer the extension creates values of, handed
/// over by vmjit/__init__.py through _vmjit._set_hooks.
struct Hooks {
  py::object ShapeType;  ///< vmjit.Shape (a tuple subclass)
  py::object DeviceType; ///< vmjit.Device (a named tuple)
  py::object MakeError;  ///< vmjit.errors._make(kind, message, frames, text)
  /// vmjit.tensors._tensor_general(data, dtype, device): vmjit.tensor for
  /// what is not an array taken as it is (lists, scalars, a dtype).
  py::object TensorGeneral;
};
Hooks &hooks();

//===--- convert.cpp ------------------------------------------------------===//

/// A Python value as an owned vmjit value. `Arg` (1-based; 0: not an
/// argument) names the argument in the TypeError raised for a value that
/// has no vmjit form.
Any toAny(PyObject *Obj, size_t Arg);
/// Whether an array going into vmjit is copied.
enum class CopyPolicy {
  IfNeeded, ///< shared, unless read-only or strided (then a compact copy)
  Always,   ///< copied
  Never,    ///< shared, or BufferError if it would have to be copied
};
/// An array (an object with a buffer or __dlpack__) as a CPU tensor, under
/// `Policy`; nullopt if `Obj` is neither. Raises (throws) for an array
/// vmjit cannot take: another device, an unknown dtype, big-endian data.
std::optional<Tensor> arrayToTensor(PyObject *Obj, size_t Arg,
                                    CopyPolicy Policy);
/// An exact numpy.ndarray that is writable and C-contiguous, of a dtype
/// vmjit has, as a tensor over its memory (holding the array); nullopt
/// for anything else (numpy_arrays.cpp).
std::optional<Tensor> numpyArrayToTensor(PyObject *Obj);
/// The type numpy.`Name` once NumPy is imported (kept in `Cache` for the
/// process), or null while it is not (convert.cpp).
PyTypeObject *numpyType(const char *Name, PyTypeObject *&Cache);
/// Py_DECREF, taking the GIL if this thread does not hold it (nothing
/// while the interpreter exits).
void releaseWithGil(PyObject *Obj) noexcept;
/// A vmjit value as a new Python reference. Functions and closures it
/// holds call through `Owner` (the VM that made them; may be null).
PyObject *toPython(const AnyView &V, const std::shared_ptr<Machine> &Owner);
void registerValues(py::module_ &M);
/// vmjit.Tensor, vmjit.empty, vmjit.tensor (tensor_object.cpp).
void registerTensor(py::module_ &M);
/// A new vmjit.Tensor (null with the Python error set if out of memory).
PyObject *wrapTensor(Tensor T);
/// The tensor a vmjit.Tensor holds, or null if `Obj` is not one.
const Tensor *tensorOf(PyObject *Obj);
/// A compact row-major copy of a CPU tensor, of any layout (ValueError for
/// a strided tensor of a packed sub-byte dtype, or another device).
Tensor compactCopy(const Tensor &Src);
/// A device as users name it: "cpu:0", "cuda:1", or its DLPack numbers.
std::string deviceName(DLDevice D);
/// The buffer protocol's format of a dtype, or null if it has none.
const char *bufferFormat(DLDataType T);
/// The dtype of a buffer's elements, or nullopt if vmjit has none.
std::optional<DLDataType> bufferDType(const Py_buffer &B);
/// _vmjit.Executable, load, assemble (executable_object.cpp).
void registerExecutable(py::module_ &M);

//===--- errors.cpp -------------------------------------------------------===//

/// Sets the Python exception for `E` (the class of its kind in
/// vmjit.errors; the frames in the message). A Python exception that a
/// callback raised while E propagated is set instead, with the VM frames
/// added as a note.
void setPythonError(const Error &E);
/// Converts the Python exception being handled (a callback's) into the
/// Error that unwinds the VM, keeping the Python exception for
/// setPythonError. Needs the GIL.
Error errorFromPython(const char *Where);

//===--- signals.cpp ------------------------------------------------------===//

/// Runs Python's signal handlers (Ctrl-C) during long VM calls made on the
/// main thread.
void registerSignalCheck(py::module_ &M);
void registerErrors(py::module_ &M);

//===--- machine.cpp ------------------------------------------------------===//

/// A VirtualMachine as Python uses it (it keeps its executable and
/// libraries), with the lock that lets one Python thread at a time run it.
class Machine {
public:
  /// The instrument's Python callback (the VM's InstrumentFn refers to it
  /// without a reference of its own). Before VM: destroyed after it.
  py::object Instrument;
  /// The kernel tier whose library the VM calls (null: TVM's machine code
  /// only, or no JIT in the build). Before VM: destroyed after it.
  std::shared_ptr<jit::KernelTier> Kernels;
  /// Whether the kernel tier's failure was given as a warning.
  bool KernelsWarned = false;
  /// A `vmjit compile --kernels` library's code: what its kernels were
  /// recorded to do with their arguments (the same IR as the model
  /// library's machine code, which kernels=False runs) binds parameters
  /// (bind_params) where no kernel tier runs.
  std::shared_ptr<const vm::AotCode> Aot;
  std::unique_ptr<vm::VirtualMachine> VM;
  std::string Mode;
  /// How VM was created, and its tier attached: bind_params makes the VM
  /// of the bound executable the same way.
  vm::VMOptions Options;
  std::function<void(Machine &)> AttachTier;
  /// VMs bind_params replaced (a call may still be running on one).
  std::vector<std::unique_ptr<vm::VirtualMachine>> Replaced;
  /// bind_params's statistics ("bind" in stats(); "" before any binding).
  std::string BindStats;
  /// Held (with the GIL released) while a call runs; recursive so that a
  /// callback running inside a call may call the same VM.
  std::recursive_mutex Lock;
};

/// Runs `Body` with the GIL released and, when `M` is given, its VM
/// locked. Returns false with the Python exception set if it threw.
template <typename F> bool runUnlocked(Machine *M, F &&Body) {
  std::optional<Error> Failed;
  {
    GilRelease NoGil;
    std::unique_lock<std::recursive_mutex> Guard;
    if (M)
      Guard = std::unique_lock<std::recursive_mutex>(M->Lock);
    try {
      Body();
    } catch (const Error &E) {
      Failed.emplace(E);
    } catch (const std::bad_alloc &) {
      Failed.emplace("MemoryError", "out of memory");
    } catch (const std::exception &E) {
      Failed.emplace("InternalError", E.what());
    }
  }
  if (Failed)
    setPythonError(*Failed);
  return !Failed;
}
template <typename F> bool runUnlocked(Machine &M, F &&Body) {
  return runUnlocked(&M, std::forward<F>(Body));
}

void registerMachine(py::module_ &M);

//===--- machine_bind.cpp -------------------------------------------------===//

/// Machine.bind_params(func, params).
void registerMachineBind(py::class_<Machine, std::shared_ptr<Machine>> &Cls);

//===--- machine_kernels.cpp ----------------------------------------------===//

/// What VirtualMachine(kernels=...) chose (vmjit/virtual_machine.py).
struct KernelChoice {
  /// The bitcode file kernels= named ("": none named).
  std::string Bitcode;
  /// No bitcode named: look for the STEM.bc beside program file Program.
  bool FindBeside = false;
  std::string Program;
  bool Wait = false;
  bool FastMath = false;
  /// The VM's object cache (cache_dir, no_cache; VMJIT_CACHE_DIR).
  std::string CacheDir;
  bool NoCache = false;
};

/// Starts `M`'s kernel tier as `C` asks, for the kernels of the first of
/// `Libs` (the model library), and puts its library ahead of them. Runs
/// without the GIL; returns a warning to give ("" none): a bitcode named
/// with no library to check it against. Does nothing without the JIT.
std::string startKernelTier(Machine &M, const KernelChoice &C,
                            std::vector<std::shared_ptr<KernelLibrary>> &Libs);
/// Gives the kernel tier's failure as a RuntimeWarning, once per Machine,
/// when the tier is Failed (GIL held; throws error_already_set when the
/// warning is an error).
void warnIfKernelsFailed(Machine &M);
/// Waits for the kernel tier's compile (GIL released).
void waitForKernels(Machine &M);
/// "kernel_tier" in `Stats` and its line ahead of `Table`, when there is a
/// tier (the machine's lock held).
void addKernelTierStats(Machine &M, nlohmann::ordered_json &Stats,
                        std::string &Table);
/// A Python object holding `M`'s kernel tier alive (None without one): the
/// Executable keeps it, so that later VMs of it share the compiled kernels.
py::object kernelTierHandle(Machine &M);

//===--- function_object.cpp ----------------------------------------------===//

/// A callable for function `Index` of `M`'s VM, or for `Fn` (a saved
/// function) when Index is -1. `Fn` is what the callable is as a value.
PyObject *makeBoundFunction(std::shared_ptr<Machine> M, int64_t Index,
                            Function Fn, const std::string &Name);
/// A callable for a function value (a closure a VM returned, ...): calls go
/// through `Owner`'s lock when there is one. One made with no owner while a
/// CallbackArguments is alive on this thread belongs to that callback.
PyObject *makeValueFunction(Function F, std::shared_ptr<Machine> Owner);

/// The call of a Python function by a VM (register_func). The functions
/// and closures among its arguments run without a VM's lock, so they may be
/// called only by the callback, on its thread, while it runs: made while
/// `converting()`, they refuse any other call.
class CallbackArguments {
public:
  /// Where and while the callback's functions may run.
  struct Scope {
    std::thread::id Thread;
    std::atomic<bool> Live{true};
  };
  /// While it lives, functions made on this thread with no owner are the
  /// callback's.
  class Converting {
  public:
    explicit Converting(const std::shared_ptr<Scope> &S);
    ~Converting();
    Converting(const Converting &) = delete;
    Converting &operator=(const Converting &) = delete;
  };

  CallbackArguments();
  ~CallbackArguments();
  CallbackArguments(const CallbackArguments &) = delete;
  CallbackArguments &operator=(const CallbackArguments &) = delete;
  [[nodiscard]] Converting converting() { return Converting(S); }

private:
  std::shared_ptr<Scope> S;
};
/// The function a vmjit.Function object holds, if `Obj` is one.
std::optional<Function> functionOf(PyObject *Obj);
void registerFunctionType(py::module_ &M);

//===--- global_functions.cpp ---------------------------------------------===//

/// register_func, get_global_func, remove_global_func,
/// list_global_func_names: Python callables as packed functions.
void registerGlobalFunctions(py::module_ &M);

} // namespace vmjit::python

#endif // VMJIT_PYTHON_BINDINGS_H
