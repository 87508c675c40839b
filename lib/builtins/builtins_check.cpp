//===- builtins_check.cpp - The argument checks of compiled drivers --------===//
//
// vm.builtin.check_tensor_info, check_shape_info, check_tuple_info,
// check_prim_value_info and check_func_info: TVM's drivers call them on
// their arguments before anything else. Each takes an error-context text
// (str or None) that starts its messages. A value of the wrong kind is a
// TypeError, a wrong rank, size or dtype a ValueError, as in TVM.
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/type_error_hint.h"

#include <fmt/format.h>

namespace vmjit::vm::builtin {
namespace {

/// check_tensor_info(x, ndim, [dtype or None,] text): x if it is a tensor
/// of rank ndim (-1: any) and that dtype (None or left out: any). TVM's
/// three-argument form has no dtype; TVM returns None, vmjit returns x.
void checkTensorInfo(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.check_tensor_info";
  needArgs(Fn, A, 3, 4);
  // Plain values, no optionals: this runs once per argument per call.
  const int64_t NDim = arg<int64_t>(Fn, A, 1);
  const bool HasDType = A.size() == 4 && !A[2].isNone();
  DLDataType Want{};
  if (HasDType)
    Want = A[2].typeIndex() == kVMJITDataType ? A[2].raw().v_dtype
                                              : arg<DLDataType>(Fn, A, 2);
  const int32_t TextIndex = A.size() - 1;
  std::string_view Text;
  if (!A[TextIndex].isNone())
    Text = arg<std::string_view>(Fn, A, TextIndex);
  const ErrorContext Ctx(Text);
  const DLTensor *T;
  if (A[0].typeIndex() == kVMJITTensor)
    T = &reinterpret_cast<const TensorObj *>(A[0].raw().v_obj)->DL;
  else if (A[0].typeIndex() == kVMJITDLTensorPtr)
    T = static_cast<const DLTensor *>(A[0].raw().v_ptr);
  else
    fail(Fn,
         fmt::format("{}expected a Tensor but got {}", Ctx.prefix(),
                     A[0].typeName()),
         "TypeError");
  if (NDim != -1 && T->ndim != NDim)
    fail(Fn, fmt::format("{}expected a tensor of rank {} but got rank {}",
                         Ctx.prefix(), NDim, T->ndim));
  if (HasDType && T->dtype != Want)
    fail(Fn, fmt::format("{}expected dtype {} but got {}", Ctx.prefix(),
                         dtypeName(Want), dtypeName(T->dtype)));
  *Rv = Any(A[0]);
}

/// check_shape_info(x, ndim, text): x is a shape of ndim dimensions (-1:
/// any).
void checkShapeInfo(AnyView X, int64_t NDim, std::optional<std::string_view> Text) {
  const char *Fn = "vm.builtin.check_shape_info";
  const ErrorContext Ctx(Text);
  auto S = X.as<Shape>();
  if (!S)
    fail(Fn,
         fmt::format("{}expected a Shape but got {}{}", Ctx.prefix(),
                     X.typeName(), detail::typeErrorHint("Shape", X.typeName())),
         "TypeError");
  if (NDim != -1 && static_cast<int64_t>(S->size()) != NDim)
    fail(Fn, fmt::format("{}expected a shape of {} dimensions but got {}",
                         Ctx.prefix(), NDim, shapeString(S->dims())));
}

/// check_tuple_info(x, size, text): x is a tuple of `size` elements.
void checkTupleInfo(AnyView X, int64_t Size, std::optional<std::string_view> Text) {
  const char *Fn = "vm.builtin.check_tuple_info";
  const ErrorContext Ctx(Text);
  auto T = X.as<Array>();
  if (!T)
    fail(Fn,
         fmt::format("{}expected a tuple but got {}", Ctx.prefix(), X.typeName()),
         "TypeError");
  if (static_cast<int64_t>(T->size()) != Size)
    fail(Fn, fmt::format("{}expected a tuple of {} elements but got {}",
                         Ctx.prefix(), Size, T->size()));
}

/// check_func_info(x, text): x is a function or closure.
void checkFuncInfo(AnyView X, std::optional<std::string_view> Text) {
  if (X.typeIndex() != kVMJITFunction)
    fail("vm.builtin.check_func_info",
         fmt::format("{}expected a function but got {}", ErrorContext(Text).prefix(),
                     X.typeName()),
         "TypeError");
}

/// check_prim_value_info(x, dtype, text): x is a scalar that converts to
/// dtype: bool and int take an int or bool, uint the same, float also a
/// float, a handle an opaque pointer or None. A handle with 0 bits and 0
/// lanes (void) or another type code is unsupported, as in TVM.
void checkPrimValueInfo(AnyView X, DLDataType DType,
                        std::optional<std::string_view> Text) {
  const char *Fn = "vm.builtin.check_prim_value_info";
  const ErrorContext Ctx(Text);
  bool Ok;
  switch (DType.code) {
  case kDLBool:
  case kDLInt:
  case kDLUInt:
    Ok = X.as<int64_t>().has_value();
    break;
  case kDLFloat:
    Ok = X.as<double>().has_value();
    break;
  case kDLOpaqueHandle:
    if (DType.bits == 0 && DType.lanes == 0)
      fail(Fn, fmt::format("{}unsupported dtype {}", Ctx.prefix(), dtypeName(DType)),
           "TypeError");
    Ok = X.as<void *>().has_value();
    break;
  default:
    fail(Fn, fmt::format("{}unsupported dtype {}", Ctx.prefix(), dtypeName(DType)),
         "TypeError");
  }
  if (!Ok)
    fail(Fn,
         fmt::format("{}expected a {} value but got {}", Ctx.prefix(),
                     dtypeName(DType), X.typeName()),
         "TypeError");
}

} // namespace

void registerCheckTvmAbiVariants(const Registry &Standard) {
  // TVM's check_tensor_info returns nothing; its compiled code drops the
  // result unreleased.
  if (std::optional<Function> Std = Standard.find("vm.builtin.check_tensor_info"))
    setTvmAbiVariant(*Std, Function::fromPacked("vm.builtin.check_tensor_info",
                                                [](PackedArgs A, Any *) {
                                                  Any Dropped;
                                                  checkTensorInfo(A, &Dropped);
                                                }));
}

void registerCheckBuiltins(GlobalDef &D) {
  D.defPacked("vm.builtin.check_tensor_info", checkTensorInfo)
      .def("vm.builtin.check_shape_info", checkShapeInfo)
      .def("vm.builtin.check_tuple_info", checkTupleInfo)
      .def("vm.builtin.check_prim_value_info", checkPrimValueInfo)
      .def("vm.builtin.check_func_info", checkFuncInfo);
}

} // namespace vmjit::vm::builtin
