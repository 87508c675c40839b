// Tests how the builtins are registered: GlobalDef (typed and packed
// definitions, each name once), trailing std::optional parameters of typed
// functions (may be left out, None gives nullopt, the arity range in the
// message), and registerVMBuiltins into a registry of one's own.
#include "BuiltinTestUtil.h"

#include <fmt/format.h>
#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::HasSubstr;

namespace {

/// Every vm.builtin.* vmjit has: the contract's and the rest of TVM's CPU
/// set, with the other TVM runtime functions registerVMBuiltins defines
/// (sorted by name).
const std::vector<std::string> kAllBuiltins = {
    "runtime.TVMTensorCreateView",
    "tvm.contrib.sort.argsort",
    "tvm.contrib.sort.sort",
    "tvm.contrib.sort.topk",
    "vm.builtin.alloc_shape_heap",
    "vm.builtin.alloc_storage",
    "vm.builtin.alloc_tensor",
    "vm.builtin.apply_presence_and_frequency_penalty",
    "vm.builtin.apply_repetition_penalty",
    "vm.builtin.apply_softmax_with_temperature",
    "vm.builtin.attention_kv_cache_append",
    "vm.builtin.attention_kv_cache_append_mla_kv",
    "vm.builtin.attention_kv_cache_array_clear",
    "vm.builtin.attention_kv_cache_array_popn",
    "vm.builtin.attention_kv_cache_attention_with_fused_qkv",
    "vm.builtin.attention_kv_cache_attention_with_shared_kv",
    "vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes",
    "vm.builtin.attention_kv_cache_create",
    "vm.builtin.attention_kv_cache_cross_attention",
    "vm.builtin.attention_kv_cache_debug_get_kv",
    "vm.builtin.attention_kv_cache_debug_get_kv_mla",
    "vm.builtin.attention_kv_cache_empty",
    "vm.builtin.attention_kv_cache_enable_sliding_window_for_seq",
    "vm.builtin.attention_kv_cache_get_num_available_pages",
    "vm.builtin.attention_kv_cache_get_query_positions",
    "vm.builtin.attention_kv_cache_get_total_sequence_length",
    "vm.builtin.attention_kv_cache_merge_attn_output_inplace",
    "vm.builtin.attention_kv_cache_self_attention",
    "vm.builtin.attention_kv_cache_update",
    "vm.builtin.attention_kv_cache_view",
    "vm.builtin.attention_kv_cache_window_override",
    "vm.builtin.attention_kv_cache_window_override_with_sinks",
    "vm.builtin.call_tir_dyn",
    "vm.builtin.check_func_info",
    "vm.builtin.check_prim_value_info",
    "vm.builtin.check_shape_info",
    "vm.builtin.check_tensor_info",
    "vm.builtin.check_tuple_info",
    "vm.builtin.copy",
    "vm.builtin.ensure_zero_offset",
    "vm.builtin.invoke_closure",
    "vm.builtin.invoke_debug_func",
    "vm.builtin.kv_cache_disagg_mark_send",
    "vm.builtin.kv_cache_disagg_prepare_recv",
    "vm.builtin.kv_state_add_sequence",
    "vm.builtin.kv_state_begin_forward",
    "vm.builtin.kv_state_clear",
    "vm.builtin.kv_state_end_forward",
    "vm.builtin.kv_state_fork_sequence",
    "vm.builtin.kv_state_popn",
    "vm.builtin.kv_state_remove_sequence",
    "vm.builtin.make_closure",
    "vm.builtin.make_prim_value",
    "vm.builtin.make_shape",
    "vm.builtin.make_tuple",
    "vm.builtin.match_prim_value",
    "vm.builtin.match_shape",
    "vm.builtin.multinomial_from_uniform",
    "vm.builtin.null_value",
    "vm.builtin.paged_attention_kv_cache_create",
    "vm.builtin.read_if_cond",
    "vm.builtin.reshape",
    "vm.builtin.sample_top_p_from_logits",
    "vm.builtin.sample_top_p_from_prob",
    "vm.builtin.shape_of",
    "vm.builtin.tensor_to_shape",
    "vm.builtin.to_device",
    "vm.builtin.tuple_getitem",
    "vm.builtin.tuple_reset_item",
};

} // namespace

TEST(BuiltinRegistrationTest, EveryBuiltinOnceInAFreshRegistry) {
  Registry R;
  registerVMBuiltins(R);
  EXPECT_EQ(R.names(), kAllBuiltins); // sorted, nothing else
  for (const std::string &N : kAllBuiltins)
    EXPECT_EQ(R.find(N)->name(), N);
  // Registering twice is an error: each name is defined exactly once.
  EXPECT_EQ(errorText([&] { registerVMBuiltins(R); }),
            "ValueError: a global function named 'vm.builtin.copy' is "
            "already registered");
}

TEST(BuiltinRegistrationTest, TheGlobalRegistryHasThemAll) {
  registerVMBuiltins();
  registerVMBuiltins(); // once per process: a second call does nothing
  for (const std::string &N : kAllBuiltins)
    EXPECT_TRUE(Registry::global().find(N).has_value()) << N;
}

TEST(BuiltinRegistrationTest, GlobalDefChainsTypedAndPacked) {
  Registry R;
  GlobalDef(R)
      .def("t.add", [](int64_t A, int64_t B) { return A + B; })
      .defPacked("t.count", [](PackedArgs A, Any *Rv) { *Rv = A.size(); });
  EXPECT_EQ((*R.find("t.add"))(2, 40).cast<int64_t>(), 42);
  EXPECT_EQ((*R.find("t.count"))(1, 2, 3).cast<int64_t>(), 3);
  EXPECT_EQ(errorText([&] { (*R.find("t.add"))(1); }),
            "TypeError: t.add: expected 2 arguments but got 1");
  EXPECT_EQ(&GlobalDef(R).registry(), &R);
}

TEST(BuiltinRegistrationTest, TrailingOptionalParameters) {
  Function F = Function::fromTyped(
      "t.opt", [](int64_t A, std::optional<std::string> S,
                  std::optional<int64_t> B) {
        return fmt::format("{}/{}/{}", A, S ? *S : "-",
                           B ? std::to_string(*B) : "-");
      });
  EXPECT_EQ(F(1).cast<std::string>(), "1/-/-");
  EXPECT_EQ(F(1, "x").cast<std::string>(), "1/x/-");
  EXPECT_EQ(F(1, "x", 7).cast<std::string>(), "1/x/7");
  // None passes nullopt, wherever it is.
  EXPECT_EQ(F(1, nullptr, 7).cast<std::string>(), "1/-/7");
  EXPECT_EQ(errorText([&] { F(); }),
            "TypeError: t.opt: expected 1 to 3 arguments but got 0");
  EXPECT_EQ(errorText([&] { F(1, "x", 7, 8); }),
            "TypeError: t.opt: expected 1 to 3 arguments but got 4");
  // A present optional argument is still checked.
  EXPECT_EQ(errorText([&] { F(1, 2); }),
            "TypeError: t.opt: argument 2 expected str but got int");
  EXPECT_EQ(errorText([&] { F(1, "x", 1.5); }),
            "TypeError: t.opt: argument 3 expected int but got float");
}

TEST(BuiltinRegistrationTest, AllOptional) {
  Function F = Function::fromTyped("t.all", [](std::optional<int64_t> A) {
    return A.value_or(-1);
  });
  EXPECT_EQ(F().cast<int64_t>(), -1);
  EXPECT_EQ(F(5).cast<int64_t>(), 5);
  EXPECT_EQ(errorText([&] { F(1, 2); }),
            "TypeError: t.all: expected 0 to 1 arguments but got 2");
}

TEST(BuiltinRegistrationTest, TypedBuiltinsCheckTheirArguments) {
  // Typed builtins get the runtime's messages, named after the builtin.
  EXPECT_EQ(errorText([] { builtin("vm.builtin.copy")(); }),
            "TypeError: vm.builtin.copy: expected 1 argument but got 0");
  EXPECT_EQ(errorText([] { builtin("vm.builtin.tuple_getitem")(1, 2); }),
            "TypeError: vm.builtin.tuple_getitem: argument 1 expected Array "
            "but got int");
  EXPECT_EQ(errorText([] { builtin("vm.builtin.alloc_shape_heap")(3, 4); }),
            "TypeError: vm.builtin.alloc_shape_heap: argument 1 expected the "
            "VM (%vm) but got int");
  EXPECT_EQ(
      errorText([] { builtin("vm.builtin.alloc_storage")(nullptr, 1, 2); }),
      "TypeError: vm.builtin.alloc_storage: expected 4 to 5 arguments but "
      "got 3");
  EXPECT_EQ(errorText([] { builtin("vm.builtin.make_closure")(); }),
            "TypeError: vm.builtin.make_closure: expected at least 1 "
            "argument but got 0");
}
