//===- numpy_arrays.cpp - NumPy arrays in without the buffer protocol -----===//
//
// The fast path of the commonest argument, an exact numpy.ndarray that is
// writable, C-contiguous and of a dtype vmjit has: its data pointer, shape
// and dtype are read from the array object itself, and the tensor holds a
// reference to the array (released with the GIL), where the buffer protocol
// costs a format string, a lookup in NumPy's buffer-info cache and a heap
// block per call. Everything else (subclasses, read-only, strided, other
// dtypes) takes the general path in convert.cpp.
//
// The fields read are the leading members of NumPy's array and dtype
// objects, part of NumPy's C ABI since 1.7 and the same in NumPy 2.x
// (data, nd, dimensions, strides, base, descr, flags; a dtype's
// byteorder and type_num), and the type numbers and flag bits of NumPy's
// public headers. The first array taken is checked against its buffer
// protocol view; should they ever disagree, the fast path turns itself off.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/object_pool.h"

#include <cstring>

namespace vmjit::python {

namespace {

/// The leading members of NumPy's PyArrayObject_fields.
struct NumpyArrayHead {
  PyObject_HEAD;
  char *Data;
  int NDim;
  Py_ssize_t *Dims;
  Py_ssize_t *Strides;
  PyObject *Base;
  PyObject *Descr;
  int Flags;
};

/// The leading members of NumPy's PyArray_Descr.
struct NumpyDescrHead {
  PyObject_HEAD;
  PyTypeObject *ScalarType;
  char Kind;
  char Type;
  char ByteOrder;
  char DescrFlags;
  int TypeNum;
};

// NumPy's flag bits (NPY_ARRAY_C_CONTIGUOUS, NPY_ARRAY_WRITEABLE).
constexpr int kCContiguous = 0x0001;
constexpr int kWriteable = 0x0400;

static_assert(sizeof(Py_ssize_t) == sizeof(int64_t),
              "NumPy's dimensions are read as int64");

/// A Python object that owns memory a tensor views: the tensor keeps it
/// alive, and the last reference to the tensor releases it (taking the
/// GIL when the thread does not hold it).
class PythonOwnerObj : public Object {
public:
  static int32_t typeIndex() {
    static const int32_t Index = registerDynamicType("python.Owner");
    return Index;
  }
  explicit PythonOwnerObj(PyObject *Owned)
      : Object(typeIndex(), recycledObjectDeleter<PythonOwnerObj>),
        Owned(Py_NewRef(Owned)) {}
  ~PythonOwnerObj() { releaseWithGil(Owned); }
  PythonOwnerObj(const PythonOwnerObj &) = delete;
  PythonOwnerObj &operator=(const PythonOwnerObj &) = delete;

private:
  PyObject *Owned;
};

/// Whether the fields read agree with the buffer protocol's view of array
/// `Obj` (checked once: the first array decides for the process).
bool layoutAgrees(PyObject *Obj, const NumpyArrayHead &A, DLDataType DT) {
  Py_buffer View;
  if (PyObject_GetBuffer(Obj, &View, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  bool Same =
      View.buf == A.Data && View.ndim == A.NDim &&
      static_cast<size_t>(View.itemsize) == dtypeBytes(DT) && !View.readonly &&
      (A.NDim == 0 ||
       std::memcmp(View.shape, A.Dims,
                   sizeof(Py_ssize_t) * static_cast<size_t>(A.NDim)) == 0) &&
      bufferDType(View) == DT;
  PyBuffer_Release(&View);
  return Same;
}

} // namespace

void releaseWithGil(PyObject *Obj) noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  const bool HoldsGil = PyThreadState_GetUnchecked() != nullptr;
#else
  const bool HoldsGil = _PyThreadState_UncheckedGet() != nullptr;
#endif
  if (HoldsGil) {
    Py_DECREF(Obj);
    return;
  }
  if (std::optional<PyGILState_STATE> S = ensureGilUnlessClosing()) {
    parkIfPythonEnds([Obj] { Py_DECREF(Obj); });
    PyGILState_Release(*S);
  } // else the interpreter is exiting: the object is left to it
}

std::optional<Tensor> numpyArrayToTensor(PyObject *Obj) {
  // Off: -1 unknown, 0 off (the layout disagreed), 1 on.
  static int State = -1;
  static PyTypeObject *NDArrayType = nullptr;
  PyTypeObject *NDArray = numpyType("ndarray", NDArrayType);
  if (!NDArray || Py_TYPE(Obj) != NDArray || State == 0)
    return std::nullopt;
  const auto &A = *reinterpret_cast<const NumpyArrayHead *>(Obj);
  if ((A.Flags & (kCContiguous | kWriteable)) != (kCContiguous | kWriteable))
    return std::nullopt;
  const auto &D = *reinterpret_cast<const NumpyDescrHead *>(A.Descr);
  if (D.ByteOrder != '=' && D.ByteOrder != '|')
    return std::nullopt;
  const DTypeTraits *Row = findDTypeByNumpyTypeNum(D.TypeNum);
  if (!Row)
    return std::nullopt;
  const DLDataType DT = Row->Type;
  if (State < 0) {
    State = layoutAgrees(Obj, A, DT) ? 1 : 0;
    if (!State)
      return std::nullopt;
  }
  std::span<const int64_t> Shape(reinterpret_cast<const int64_t *>(A.Dims),
                                 static_cast<size_t>(A.NDim));
  return Tensor::viewChecked(ObjectRef(makeRecycledObject<PythonOwnerObj>(Obj)),
                             A.Data, Shape, DT);
}

} // namespace vmjit::python
