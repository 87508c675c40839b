//===- convert.cpp - Values between Python and vmjit ----------------------===//
//
// Python to vmjit: None, bool, int (int64), float, str, bytes, vmjit.Shape,
// tuples and lists (an Array of their items), vmjit.Tensor, vmjit.Function,
// vmjit.Device, and arrays: a buffer (a NumPy array, a memoryview) or
// else a DLPack capsule, shared when writable, compact and on the CPU;
// read-only memory (a DLPack 1.x READ_ONLY flag too) and strided layouts
// are copied into a compact tensor, other devices refused. vmjit to
// Python: the same types back, tuples for Arrays, a vmjit.Tensor for a
// tensor (DLPack and the buffer protocol, no copy).
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/runtime/array.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/literals.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>

namespace vmjit::python {

Hooks &hooks() {
  static Hooks *H = new Hooks(); // never destroyed: outlives the interpreter
  return *H;
}

namespace {

/// A vmjit value Python has no type for (a Map, a Storage, ...): passed
/// back to the VM as it is.
struct OpaqueValue {
  Any Value;
};

PyTypeObject *OpaqueType = nullptr;

[[noreturn]] void throwArgTypeError(PyObject *Obj, size_t Arg,
                                    const char *Why) {
  std::string Where = Arg ? fmt::format("argument {}: ", Arg) : "";
  throw py::type_error(fmt::format("{}cannot pass a '{}' to vmjit{}", Where,
                                   Py_TYPE(Obj)->tp_name, Why));
}

[[noreturn]] void throwBufferError(const std::string &Message) {
  PyErr_SetString(PyExc_BufferError, Message.c_str());
  throw py::error_already_set();
}

std::string argPrefix(size_t Arg) {
  return Arg ? fmt::format("argument {}: ", Arg) : "";
}

/// Why an array whose memory is `ReadOnly` or not compact row-major must be
/// copied before vmjit takes it; null when it need not be.
const char *whyCopy(bool ReadOnly, bool Compact) {
  if (ReadOnly)
    return "its memory is read-only and vmjit's kernels may write into "
           "their arguments";
  if (!Compact)
    return "it is strided and vmjit's kernels take compact row-major "
           "tensors";
  return nullptr;
}

/// Whether an array that is `ReadOnly` or not `Compact` is copied under
/// `Policy`; a BufferError for copy=False when a copy is needed.
bool mustCopy(bool ReadOnly, bool Compact, PyObject *Obj, size_t Arg,
              CopyPolicy Policy) {
  const char *Why = whyCopy(ReadOnly, Compact);
  if (Why && Policy == CopyPolicy::Never)
    throwBufferError(fmt::format("{}cannot share the memory of a '{}' with "
                                 "vmjit (copy=False): {}",
                                 argPrefix(Arg), Py_TYPE(Obj)->tp_name, Why));
  return Why || Policy == CopyPolicy::Always;
}

//===--- Buffers (no working __dlpack__) ----------------------------------===//

/// A writable buffer lent to vmjit: released (with the GIL) when the
/// tensor's last reference goes.
struct LentBuffer {
  Py_buffer View{};
  std::vector<int64_t> Shape;
  DLManagedTensor Managed{};
  static void release(DLManagedTensor *M) {
    auto *L = static_cast<LentBuffer *>(M->manager_ctx);
    if (std::optional<PyGILState_STATE> S = ensureGilUnlessClosing()) {
      parkIfPythonEnds([L] { PyBuffer_Release(&L->View); });
      PyGILState_Release(*S);
    } // else the interpreter is exiting: the buffer is left to it
    delete L;
  }
};

/// A tensor over `Obj`'s buffer: shared when it is writable and compact
/// row-major, else copied into a compact tensor (vmjit may write into
/// what it is given, and takes compact tensors), as `Policy` allows.
/// nullopt when the buffer's format has no vmjit dtype.
std::optional<Tensor> tensorFromBuffer(PyObject *Obj, size_t Arg,
                                       CopyPolicy Policy, bool &BigEndian) {
  auto L = std::make_unique<LentBuffer>();
  if (PyObject_GetBuffer(Obj, &L->View, PyBUF_RECORDS_RO) != 0) {
    // NumPy refuses a buffer of a dtype the buffer protocol cannot spell
    // (datetime64, ...): then it has no vmjit dtype either.
    if (PyErr_ExceptionMatches(PyExc_ValueError) ||
        PyErr_ExceptionMatches(PyExc_BufferError)) {
      PyErr_Clear();
      return std::nullopt;
    }
    throw py::error_already_set();
  }
  std::optional<DLDataType> DT = bufferDType(L->View);
  if (!DT) {
    const char *F = L->View.format;
    BigEndian = F && (*F == '>' || *F == '!');
    PyBuffer_Release(&L->View);
    return std::nullopt;
  }
  const Py_buffer &V = L->View;
  L->Shape.assign(V.shape, V.shape + V.ndim);
  bool Copy;
  try {
    Copy =
        mustCopy(V.readonly, PyBuffer_IsContiguous(&V, 'C'), Obj, Arg, Policy);
  } catch (...) {
    PyBuffer_Release(&L->View);
    throw;
  }
  if (Copy) {
    Tensor T = Tensor::empty(L->Shape, *DT);
    int Rc = PyBuffer_ToContiguous(T.data(), &L->View, V.len, 'C');
    PyBuffer_Release(&L->View);
    if (Rc != 0)
      throw py::error_already_set();
    return T;
  }
  DLTensor &DL = L->Managed.dl_tensor;
  DL.data = V.buf;
  DL.device = cpuDevice();
  DL.ndim = V.ndim;
  DL.dtype = *DT;
  DL.shape = L->Shape.data();
  DL.strides = nullptr; // compact row-major
  L->Managed.manager_ctx = L.get();
  L->Managed.deleter = LentBuffer::release;
  DLManagedTensor *M = &L->Managed;
  Tensor T = Tensor::fromDLPack(M); // throws without taking it
  L.release();
  return T;
}

//===--- DLPack ------------------------------------------------------------===//

PyObject *dlpackName() {
  static PyObject *Name = PyUnicode_InternFromString("__dlpack__");
  return Name;
}

/// Whether `T` (or a base) defines __dlpack__; raises nothing.
bool hasDLPack(PyTypeObject *T) {
  return _PyType_Lookup(T, dlpackName()) != nullptr;
}

bool hasBuffer(PyTypeObject *T) {
  return T->tp_as_buffer && T->tp_as_buffer->bf_getbuffer &&
         !PyType_IsSubtype(T, &PyBytes_Type);
}

/// The name of `Obj`'s dtype as its library spells it (`str(obj.dtype)`),
/// or nullopt.
std::optional<std::string> ownDTypeName(PyObject *Obj) {
  PyObject *D = PyObject_GetAttrString(Obj, "dtype");
  if (!D) {
    PyErr_Clear();
    return std::nullopt;
  }
  py::object Owner = py::reinterpret_steal<py::object>(D);
  PyObject *S = PyObject_Str(D);
  if (!S) {
    PyErr_Clear();
    return std::nullopt;
  }
  py::str Str = py::reinterpret_steal<py::str>(S);
  return std::string(Str);
}

/// TypeError for an array whose dtype `Name` vmjit does not have (`Arg`:
/// the argument it is, from 1, or 0).
[[noreturn]] void throwNoSuchDType(PyObject *Obj, size_t Arg,
                                   const std::string &Name) {
  throw py::type_error(fmt::format("{}cannot pass a '{}' of dtype {} to "
                                   "vmjit: vmjit has no such dtype",
                                   argPrefix(Arg), Py_TYPE(Obj)->tp_name,
                                   Name));
}

Tensor checkedDType(Tensor T, PyObject *Obj, size_t Arg) {
  if (!vm::isVmasmTensorDType(T.dtype()))
    throwNoSuchDType(Obj, Arg,
                     ownDTypeName(Obj).value_or(dtypeName(T.dtype())));
  return T;
}

/// What DLPack capsule `Cap` holds may go into vmjit: on the CPU, of a
/// version vmjit reads. Checked before the capsule is taken, so that its
/// destructor frees a refused one.
void checkImportable(const DLTensor &DL, uint32_t Major, PyObject *Obj,
                     size_t Arg) {
  if (Major > DLPACK_MAJOR_VERSION)
    throwBufferError(fmt::format("{}'{}'.__dlpack__() gave a DLPack {}.x "
                                 "tensor; vmjit reads DLPack {}.x and older",
                                 argPrefix(Arg), Py_TYPE(Obj)->tp_name, Major,
                                 DLPACK_MAJOR_VERSION));
  if (DL.device.device_type != kDLCPU)
    throwBufferError(fmt::format("{}cannot pass a '{}' on {} to vmjit: vmjit "
                                 "runs on the CPU only (copy it to the CPU "
                                 "first)",
                                 argPrefix(Arg), Py_TYPE(Obj)->tp_name,
                                 deviceName(DL.device)));
}

uint32_t majorOf(const DLManagedTensor *) { return 0; }
uint32_t majorOf(const DLManagedTensorVersioned *M) { return M->version.major; }
bool readOnly(const DLManagedTensor *) { return false; }
bool readOnly(const DLManagedTensorVersioned *M) {
  return (M->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
}

/// The tensor of DLPack capsule `Cap` if it is named `Name` (then renamed
/// `Used`, which tells its producer it was consumed), shared or copied as
/// `Policy` says: read-only memory (a versioned capsule's READ_ONLY flag)
/// and strided layouts are copied, never aliased.
template <typename ManagedT>
std::optional<Tensor> importCapsule(PyObject *Cap, const char *Name,
                                    const char *Used, PyObject *Obj, size_t Arg,
                                    CopyPolicy Policy) {
  if (!PyCapsule_IsValid(Cap, Name))
    return std::nullopt;
  auto *M = static_cast<ManagedT *>(PyCapsule_GetPointer(Cap, Name));
  checkImportable(M->dl_tensor, majorOf(M), Obj, Arg);
  const bool ReadOnly = readOnly(M);
  Tensor T = Tensor::fromDLPack(M);
  PyCapsule_SetName(Cap, Used);
  T = checkedDType(std::move(T), Obj, Arg);
  if (mustCopy(ReadOnly, T.isContiguous(), Obj, Arg, Policy))
    return compactCopy(T); // T, and with it the capsule's memory, goes
  return T;
}

/// Obj.__dlpack__(max_version=(1, minor)), or Obj.__dlpack__() from a
/// producer older than DLPack 1.0 (which refuses max_version with a
/// TypeError). Null, with the error set, if it fails.
PyObject *callDLPack(PyObject *Obj) {
  static PyObject *KwNames = Py_BuildValue("(s)", "max_version");
  static PyObject *Version =
      Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
  PyObject *Args[] = {Obj, Version};
  PyObject *Cap = PyObject_VectorcallMethod(dlpackName(), Args, 1, KwNames);
  if (Cap || !PyErr_ExceptionMatches(PyExc_TypeError))
    return Cap;
  PyErr_Clear();
  return PyObject_CallMethodNoArgs(Obj, dlpackName());
}

/// Imports the capsule `Obj.__dlpack__()` returns; nullopt (with no Python
/// error set) when the object refused to export (BufferError, TypeError).
std::optional<Tensor> tensorFromDLPack(PyObject *Obj, size_t Arg,
                                       CopyPolicy Policy) {
  PyObject *Cap = callDLPack(Obj);
  if (!Cap) {
    if (PyErr_ExceptionMatches(PyExc_BufferError) ||
        PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      return std::nullopt;
    }
    throw py::error_already_set();
  }
  py::object Owner = py::reinterpret_steal<py::object>(Cap);
  std::optional<Tensor> T = importCapsule<DLManagedTensor>(
      Cap, "dltensor", "used_dltensor", Obj, Arg, Policy);
  if (!T)
    T = importCapsule<DLManagedTensorVersioned>(
        Cap, "dltensor_versioned", "used_dltensor_versioned", Obj, Arg, Policy);
  if (T)
    return T;
  throw py::type_error(fmt::format(
      "{}.__dlpack__() returned a '{}', not a DLPack capsule",
      Py_TYPE(Obj)->tp_name, Py_TYPE(Cap)->tp_name));
}

/// Python's recursion limit on nested conversions, as repr() has it: a
/// self-referential or very deep list raises RecursionError instead of
/// overflowing the C stack.
class RecursionGuard {
public:
  explicit RecursionGuard(const char *Where) {
    if (Py_EnterRecursiveCall(Where))
      throw py::error_already_set();
  }
  ~RecursionGuard() { Py_LeaveRecursiveCall(); }
  RecursionGuard(const RecursionGuard &) = delete;
  RecursionGuard &operator=(const RecursionGuard &) = delete;
};

Any sequenceToArray(PyObject *Obj, size_t Arg) {
  RecursionGuard Guard(" while converting a tuple or list to a vmjit value");
  py::sequence Seq = py::reinterpret_borrow<py::sequence>(Obj);
  std::vector<Any> Items;
  Items.reserve(Seq.size());
  for (py::handle Item : Seq)
    Items.push_back(toAny(Item.ptr(), Arg));
  return Any(Array(std::move(Items)));
}

/// An int (or anything with __index__) as int64; ValueError if it does
/// not fit.
Any intToAny(PyObject *Obj, size_t Arg) {
  py::object Index = py::reinterpret_steal<py::object>(PyNumber_Index(Obj));
  if (!Index)
    throw py::error_already_set();
  int Overflow = 0;
  long long V = PyLong_AsLongLongAndOverflow(Index.ptr(), &Overflow);
  if (V == -1 && PyErr_Occurred())
    throw py::error_already_set();
  if (Overflow)
    throw py::value_error(fmt::format(
        "{}int {} does not fit in int64",
        Arg ? fmt::format("argument {}: ", Arg) : "",
        py::str(Index).cast<std::string>()));
  return Any(static_cast<int64_t>(V));
}

/// A NumPy scalar (numpy.int64(2), numpy.float32(0.5), numpy.bool_) as the
/// Python scalar it stands for; nullopt for other objects.
std::optional<Any> numpyScalarToAny(PyObject *Obj, size_t Arg) {
  static PyTypeObject *GenericType = nullptr;
  PyTypeObject *Generic = numpyType("generic", GenericType);
  if (!Generic || !PyObject_TypeCheck(Obj, Generic))
    return std::nullopt;
  py::object Item = py::reinterpret_borrow<py::object>(Obj).attr("item")();
  PyObject *I = Item.ptr();
  if (PyBool_Check(I))
    return Any(I == Py_True);
  if (PyLong_Check(I))
    return intToAny(I, Arg);
  if (PyFloat_Check(I))
    return Any(PyFloat_AS_DOUBLE(I));
  return std::nullopt; // complex, str_, ...: as an array, or refused
}

Any stringToAny(PyObject *Obj) {
  Py_ssize_t Len = 0;
  const char *S = PyUnicode_AsUTF8AndSize(Obj, &Len);
  if (!S)
    throw py::error_already_set();
  return Any(std::string(S, static_cast<size_t>(Len)));
}

Any shapeToAny(PyObject *Obj) {
  std::vector<int64_t> Dims;
  for (py::handle D : py::reinterpret_borrow<py::tuple>(Obj))
    Dims.push_back(D.cast<int64_t>());
  return Any(Shape(std::move(Dims)));
}

/// The less common Python types, after the fast paths of toAny.
Any otherToAny(PyObject *Obj, size_t Arg) {
  if (PyObject_TypeCheck(Obj, OpaqueType))
    return py::handle(Obj).cast<const OpaqueValue &>().Value;
  if (std::optional<Function> F = functionOf(Obj))
    return Any(*F);
  if (PyObject_IsInstance(Obj, hooks().ShapeType.ptr()) == 1)
    return shapeToAny(Obj);
  if (PyObject_IsInstance(Obj, hooks().DeviceType.ptr()) == 1) {
    auto T = py::reinterpret_borrow<py::tuple>(Obj);
    return Any(DLDevice{static_cast<DLDeviceType>(T[0].cast<int>()),
                        T[1].cast<int>()});
  }
  if (PyUnicode_Check(Obj))
    return stringToAny(Obj);
  if (PyBytes_Check(Obj))
    return Any(Bytes(std::string(PyBytes_AS_STRING(Obj),
                                 PyBytes_GET_SIZE(Obj))));
  if (PyTuple_Check(Obj) || PyList_Check(Obj))
    return sequenceToArray(Obj, Arg);
  if (PyBool_Check(Obj))
    return Any(Obj == Py_True);
  if (PyIndex_Check(Obj)) // int subclasses, IntEnum, ...
    return intToAny(Obj, Arg);
  if (PyFloat_Check(Obj))
    return Any(PyFloat_AsDouble(Obj));
  throwArgTypeError(Obj, Arg, "");
}

} // namespace

PyTypeObject *numpyType(const char *Name, PyTypeObject *&Cache) {
  if (Cache)
    return Cache;
  // Checked for every argument that is not an int until NumPy is imported:
  // no string made per call.
  static PyObject *ModuleName = PyUnicode_InternFromString("numpy");
  PyObject *NumPy = PyImport_GetModule(ModuleName);
  if (!NumPy) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject *T = PyObject_GetAttrString(NumPy, Name);
  Py_DECREF(NumPy);
  if (!T || !PyType_Check(T)) {
    Py_XDECREF(T);
    PyErr_Clear();
    return nullptr;
  }
  Cache = reinterpret_cast<PyTypeObject *>(T); // kept for the process
  return Cache;
}

std::optional<Tensor> arrayToTensor(PyObject *Obj, size_t Arg,
                                    CopyPolicy Policy) {
  if (Policy != CopyPolicy::Always)
    if (std::optional<Tensor> Ten = numpyArrayToTensor(Obj))
      return Ten;
  // Arrays: their buffer when it has a vmjit dtype (a NumPy array's, with
  // no copy), else DLPack (torch, JAX, ... and NumPy's other dtypes).
  PyTypeObject *T = Py_TYPE(Obj);
  const bool Buffer = hasBuffer(T);
  bool BigEndian = false;
  if (Buffer)
    if (std::optional<Tensor> Ten =
            tensorFromBuffer(Obj, Arg, Policy, BigEndian))
      return Ten;
  if (hasDLPack(T))
    if (std::optional<Tensor> Ten = tensorFromDLPack(Obj, Arg, Policy))
      return Ten;
  if (BigEndian)
    throwArgTypeError(Obj, Arg,
                      ": its data is big-endian; vmjit takes the machine's "
                      "byte order (NumPy: a.astype(a.dtype.newbyteorder("
                      "'=')))");
  if (Buffer || hasDLPack(T))
    if (std::optional<std::string> Name = ownDTypeName(Obj))
      throwNoSuchDType(Obj, Arg, *Name);
  if (hasDLPack(T))
    throwArgTypeError(Obj, Arg, ": its __dlpack__ refused to export it");
  if (Buffer)
    throwArgTypeError(Obj, Arg, ": its buffer's format has no vmjit dtype");
  return std::nullopt;
}

Any toAny(PyObject *Obj, size_t Arg) {
  PyTypeObject *T = Py_TYPE(Obj);
  if (T == &PyLong_Type) {
    int Overflow = 0;
    long long V = PyLong_AsLongLongAndOverflow(Obj, &Overflow);
    if (!Overflow)
      return Any(static_cast<int64_t>(V));
    return intToAny(Obj, Arg); // the error
  }
  if (T == &PyFloat_Type)
    return Any(PyFloat_AS_DOUBLE(Obj));
  if (T == &PyBool_Type)
    return Any(Obj == Py_True);
  if (Obj == Py_None)
    return Any();
  if (const Tensor *Ten = tensorOf(Obj))
    return Any(*Ten);
  if (std::optional<Tensor> Ten = numpyArrayToTensor(Obj))
    return Any(std::move(*Ten));
  if (T == &PyUnicode_Type)
    return stringToAny(Obj);
  if (std::optional<Any> Scalar = numpyScalarToAny(Obj, Arg))
    return std::move(*Scalar);
  if (std::optional<Tensor> Ten = arrayToTensor(Obj, Arg, CopyPolicy::IfNeeded))
    return Any(std::move(*Ten));
  return otherToAny(Obj, Arg);
}

namespace {

PyObject *arrayToTuple(const Array &A, const std::shared_ptr<Machine> &Owner) {
  RecursionGuard Guard(" while converting a vmjit tuple to Python");
  py::tuple Out(A.size());
  for (size_t I = 0; I < A.size(); ++I) {
    PyObject *Item = toPython(A[I], Owner);
    if (!Item)
      throw py::error_already_set();
    PyTuple_SET_ITEM(Out.ptr(), I, Item);
  }
  return Out.release().ptr();
}

PyObject *objectToPython(const AnyView &V,
                         const std::shared_ptr<Machine> &Owner) {
  switch (V.typeIndex()) {
  case kVMJITStr:
  case kVMJITSmallStr:
  case kVMJITRawStr: {
    std::string_view S = *detail::stringView(V.raw());
    return PyUnicode_DecodeUTF8(S.data(), static_cast<Py_ssize_t>(S.size()),
                                "surrogateescape");
  }
  case kVMJITBytes:
  case kVMJITSmallBytes:
  case kVMJITByteArrayPtr: {
    std::string_view B = *detail::bytesView(V.raw());
    return PyBytes_FromStringAndSize(B.data(),
                                     static_cast<Py_ssize_t>(B.size()));
  }
  case kVMJITTensor:
    return wrapTensor(V.cast<Tensor>());
  case kVMJITShape: {
    Shape S = V.cast<Shape>();
    py::tuple Dims(S.size());
    for (size_t I = 0; I < S.size(); ++I)
      PyTuple_SET_ITEM(Dims.ptr(), I, PyLong_FromLongLong(S[I]));
    return hooks().ShapeType(Dims).release().ptr();
  }
  case kVMJITArray:
    return arrayToTuple(V.cast<Array>(), Owner);
  case kVMJITFunction:
    return makeValueFunction(V.cast<Function>(), Owner);
  case kVMJITDataType:
    return py::str(dtypeName(V.cast<DLDataType>())).release().ptr();
  case kVMJITDevice: {
    DLDevice D = V.cast<DLDevice>();
    return hooks()
        .DeviceType(static_cast<int>(D.device_type), D.device_id)
        .release()
        .ptr();
  }
  default:
    return py::cast(OpaqueValue{Any(V)}).release().ptr();
  }
}

} // namespace

PyObject *toPython(const AnyView &V, const std::shared_ptr<Machine> &Owner) {
  const VMJITAny &R = V.raw();
  switch (R.type_index) {
  case kVMJITNone:
    Py_RETURN_NONE;
  case kVMJITInt:
    return PyLong_FromLongLong(R.v_int64);
  case kVMJITFloat:
    return PyFloat_FromDouble(R.v_float64);
  case kVMJITBool:
    return PyBool_FromLong(R.v_int64 != 0);
  default:
    return objectToPython(V, Owner);
  }
}

void registerValues(py::module_ &M) {
  py::class_<OpaqueValue>(M, "Object",
                          "A vmjit value Python has no type for (a map, a "
                          "storage block, ...); it can be passed back to "
                          "the VM.")
      .def_property_readonly("type_name",
                             [](const OpaqueValue &O) {
                               return std::string(O.Value.typeName());
                             })
      .def("__repr__", [](const OpaqueValue &O) {
        return fmt::format("<vmjit.Object {}>", O.Value.typeName());
      });
  OpaqueType = reinterpret_cast<PyTypeObject *>(
      M.attr("Object").ptr());
  registerTensor(M);
  M.def("_set_hooks", [](py::object Shape, py::object Device,
                         py::object MakeError) {
    hooks().ShapeType = std::move(Shape);
    hooks().DeviceType = std::move(Device);
    hooks().MakeError = std::move(MakeError);
  });
  M.def("_to_vmjit_and_back", [](py::handle Obj) {
    return py::reinterpret_steal<py::object>(toPython(toAny(Obj.ptr(), 0), nullptr));
  }, "Converts a value to vmjit's form and back (for tests).");
}

} // namespace vmjit::python
