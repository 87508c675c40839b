// Tests TVM's legacy attention KV cache builtins
// (vm.builtin.attention_kv_cache_*): create, append with the reserve
// doubling, view (with and without a shape), update, the windowed appends
// with and without sinks (wrapping around), popn and clear over arrays of
// caches, the errors (each leaving the cache as it was), and a program
// that runs the decode loop of shared/tvm-models/kvcache through the VM.
#include "BuiltinTestUtil.h"

#include "vmjit/runtime/data_type.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::HasSubstr;

namespace {

struct BuiltinKvCacheTest : ::testing::Test {
  Function Create = builtin("vm.builtin.attention_kv_cache_create");
  Function Append = builtin("vm.builtin.attention_kv_cache_append");
  Function Update = builtin("vm.builtin.attention_kv_cache_update");
  Function View = builtin("vm.builtin.attention_kv_cache_view");
  Function Window = builtin("vm.builtin.attention_kv_cache_window_override");
  Function WindowSinks =
      builtin("vm.builtin.attention_kv_cache_window_override_with_sinks");
  Function PopN = builtin("vm.builtin.attention_kv_cache_array_popn");
  Function Clear = builtin("vm.builtin.attention_kv_cache_array_clear");

  /// A [Rows, 2] float32 tensor whose row R is {Base + R, -(Base + R)}.
  static Tensor rows(int64_t Rows, float Base) {
    std::vector<float> V;
    for (int64_t R = 0; R < Rows; ++R) {
      V.push_back(Base + static_cast<float>(R));
      V.push_back(-(Base + static_cast<float>(R)));
    }
    return tensorOf<float>({Rows, 2}, V, dtype::Float32);
  }
  /// The first column of the cache's full view (one value per row).
  std::vector<float> firstColumn(const Any &Cache) {
    Tensor V = View(Cache).cast<Tensor>();
    std::vector<float> All = valuesOf<float>(V), Out;
    for (size_t I = 0; I < All.size(); I += 2)
      Out.push_back(All[I]);
    return Out;
  }
  /// An empty cache of [Reserve, 2] float32 rows.
  Any empty(int64_t Reserve) {
    return Create(rows(0, 0), Shape{Reserve, 2}, 0);
  }
};

} // namespace

TEST_F(BuiltinKvCacheTest, CreateAppendView) {
  // As the model's run3: zeros [1, 4] reserved as [8, 4], fill count 0.
  Tensor Zeros = tensorOf<float>({1, 4}, {0, 0, 0, 0}, dtype::Float32);
  Any C = Create(Zeros, Shape{8, 4}, 0);
  EXPECT_EQ(typeIndexName(C.typeIndex()), "relax.vm.AttentionKVCacheLegacy");
  EXPECT_EQ(View(C).cast<Tensor>().shape()[0], 0);
  for (int I = 0; I < 3; ++I) {
    float F = static_cast<float>(I + 1);
    Any Same = Append(C, tensorOf<float>({1, 4}, {F, F, F, F}, dtype::Float32));
    // The cache changes in place and is returned.
    EXPECT_EQ(Same.raw().v_obj, C.raw().v_obj);
  }
  Tensor V = View(C, Shape{3, 4}).cast<Tensor>();
  EXPECT_EQ(valuesOf<float>(V),
            (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  // Without a shape: [fill count, row shape...].
  Tensor All = View(C).cast<Tensor>();
  EXPECT_THAT(std::vector<int64_t>(All.shape().begin(), All.shape().end()),
              ::testing::ElementsAre(3, 4));
  EXPECT_EQ(All.data(), V.data()); // views of the cache's memory
}

TEST_F(BuiltinKvCacheTest, CreateKeepsInitRowsWithANegativeFillCount) {
  // Fill count >= 0 replaces the appended rows' count; -1 keeps it.
  Any Kept = Create(rows(2, 10), Shape{4, 2}, -1);
  EXPECT_EQ(firstColumn(Kept), (std::vector<float>{10, 11}));
  Any Reset = Create(rows(2, 10), Shape{4, 2}, 1);
  EXPECT_EQ(firstColumn(Reset), (std::vector<float>{10}));
  // The init rows may outgrow the reserve: it doubles.
  Any Grown = Create(rows(3, 0), Shape{1, 2}, -1);
  EXPECT_EQ(firstColumn(Grown), (std::vector<float>{0, 1, 2}));
}

TEST_F(BuiltinKvCacheTest, AppendGrowsAndOldViewsKeepTheirValues) {
  // As the model's create_kv_cache: reserve [1, 4]; 8 decode steps.
  Any C =
      Create(tensorOf<float>({1, 2}, {7, 7}, dtype::Float32), Shape{1, 2}, 0);
  std::vector<Tensor> Views;
  std::vector<float> Want;
  for (int I = 0; I < 8; ++I) {
    Append(C, rows(1, static_cast<float>(I)));
    Want.push_back(static_cast<float>(I));
    Views.push_back(View(C, Shape{I + 1, 2}).cast<Tensor>());
    EXPECT_EQ(firstColumn(C), Want);
  }
  // The view of step 0 still reads row 0 after the reserve moved.
  EXPECT_EQ(valuesOf<float>(Views[0]), (std::vector<float>{0, -0.0f}));
  EXPECT_EQ(valuesOf<float>(Views[3])[6], 3);
  // Several rows at once.
  Append(C, rows(3, 100));
  EXPECT_THAT(firstColumn(C),
              ::testing::ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 102));
}

TEST_F(BuiltinKvCacheTest, AppendsAStridedValue) {
  // A [2, 2] column-major value (a DLPack import) is copied by element.
  Tensor Owner = tensorOf<float>({4}, {1, 3, 2, 4}, dtype::Float32);
  Any C = empty(2);
  Append(C, importedView(Owner, 0, {2, 2}, {1, 2}));
  EXPECT_EQ(valuesOf<float>(View(C).cast<Tensor>()),
            (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(BuiltinKvCacheTest, UpdateReplacesTheFilledRows) {
  Any C = empty(4);
  Append(C, rows(2, 0));
  Any Same = Update(C, rows(2, 50));
  EXPECT_EQ(Same.raw().v_obj, C.raw().v_obj);
  EXPECT_EQ(firstColumn(C), (std::vector<float>{50, 51}));
  EXPECT_EQ(errorText([&] { Update(C, rows(3, 0)); }),
            "ValueError: vm.builtin.attention_kv_cache_update: the value has "
            "3 rows but the cache holds 2: update replaces every filled row");
  EXPECT_EQ(firstColumn(C), (std::vector<float>{50, 51}));
}

TEST_F(BuiltinKvCacheTest, WindowOverrideWrapsAround) {
  Any C = empty(1);
  for (int I = 0; I < 6; ++I)
    Window(C, rows(1, static_cast<float>(I)), 4);
  // Rows 4 and 5 went to the start of the window of 4.
  EXPECT_EQ(firstColumn(C), (std::vector<float>{4, 5, 2, 3}));
  // Two rows where one is left before the end: one wraps.
  Any D = empty(4);
  Window(D, rows(3, 0), 4);
  Window(D, rows(2, 10), 4);
  EXPECT_EQ(firstColumn(D), (std::vector<float>{11, 1, 2, 10}));
  Window(D, rows(1, 20), 4); // continues after the wrapped row
  EXPECT_EQ(firstColumn(D), (std::vector<float>{11, 20, 2, 10}));
}

TEST_F(BuiltinKvCacheTest, WindowOverrideWithSinksKeepsTheFirstRows) {
  Any C = empty(2);
  for (int I = 0; I < 6; ++I)
    WindowSinks(C, rows(1, static_cast<float>(I)), 4, 1);
  // Row 0 is the sink; 4 and 5 wrapped to rows 1 and 2.
  EXPECT_EQ(firstColumn(C), (std::vector<float>{0, 4, 5, 3}));
  EXPECT_EQ(errorText([&] { WindowSinks(C, rows(4, 0), 4, 1); }),
            "ValueError: "
            "vm.builtin.attention_kv_cache_window_override_with_sinks: the "
            "value has 4 rows, more than max_cache_size (4) less the sinks "
            "(1)");
  EXPECT_EQ(errorText([&] { WindowSinks(C, rows(1, 0), 4, 5); }),
            "ValueError: "
            "vm.builtin.attention_kv_cache_window_override_with_sinks: the "
            "sinks (5) must be between 0 and max_cache_size (4)");
  EXPECT_EQ(errorText([&] { WindowSinks(C, rows(1, 0), 4, -1); }),
            "ValueError: "
            "vm.builtin.attention_kv_cache_window_override_with_sinks: the "
            "sinks (-1) must be between 0 and max_cache_size (4)");
  EXPECT_EQ(firstColumn(C), (std::vector<float>{0, 4, 5, 3}));
}

TEST_F(BuiltinKvCacheTest, WindowOverrideCannotWrapAPoppedCache) {
  // After popn the fill count is below the window position; a write that
  // must wrap is refused before anything changes (TVM fails half-way).
  Any C = empty(4);
  Window(C, rows(4, 0), 4);
  PopN(Array({C}), 2);
  EXPECT_EQ(errorText([&] { Window(C, rows(1, 9), 4); }),
            "ValueError: vm.builtin.attention_kv_cache_window_override: "
            "cannot wrap around: the window position is 4 but only 2 of 4 "
            "rows are filled");
  EXPECT_EQ(firstColumn(C), (std::vector<float>{0, 1}));
  // A smaller max_cache_size than the position already reached.
  EXPECT_EQ(errorText([&] { Window(C, rows(1, 9), 3); }),
            "ValueError: vm.builtin.attention_kv_cache_window_override: the "
            "window position 4 is beyond max_cache_size 3");
}

TEST_F(BuiltinKvCacheTest, PopNAndClearEveryCacheOfAnArray) {
  Any A = empty(4), B = empty(4);
  Append(A, rows(3, 0));
  Append(B, rows(2, 10));
  EXPECT_TRUE(PopN(Array({A, B}), 1).isNone());
  EXPECT_EQ(firstColumn(A), (std::vector<float>{0, 1}));
  EXPECT_EQ(firstColumn(B), (std::vector<float>{10}));
  // Too many for B: neither changes.
  EXPECT_EQ(errorText([&] {
              PopN(Array({A, B}), 2);
            }),
            "ValueError: vm.builtin.attention_kv_cache_array_popn: cannot pop "
            "2 rows from cache 1, which holds 1");
  EXPECT_EQ(errorText([&] { PopN(Array({A}), -1); }),
            "ValueError: vm.builtin.attention_kv_cache_array_popn: cannot pop "
            "-1 rows from cache 0, which holds 2");
  EXPECT_EQ(firstColumn(A), (std::vector<float>{0, 1}));
  // Appending after popn overwrites the popped rows.
  Append(A, rows(1, 7));
  EXPECT_EQ(firstColumn(A), (std::vector<float>{0, 1, 7}));
  EXPECT_TRUE(Clear(Array({A, B})).isNone());
  EXPECT_EQ(View(A).cast<Tensor>().shape()[0], 0);
  EXPECT_EQ(View(B).cast<Tensor>().shape()[0], 0);
  EXPECT_EQ(errorText([&] {
              Clear(Array({A, Any(3)}));
            }),
            "TypeError: vm.builtin.attention_kv_cache_array_clear: element 1 "
            "of the array is int, not a KV cache");
  EXPECT_EQ(errorText([&] { PopN(A, 1); }),
            "TypeError: vm.builtin.attention_kv_cache_array_popn: argument 1 "
            "expected Array but got relax.vm.AttentionKVCacheLegacy");
}

TEST_F(BuiltinKvCacheTest, ValueErrors) {
  Any C = empty(2);
  Append(C, rows(1, 0));
  EXPECT_EQ(errorText([&] {
              Append(C, tensorOf<int32_t>({1, 2}, {1, 2}, dtype::Int32));
            }),
            "TypeError: vm.builtin.attention_kv_cache_append: the value is "
            "int32 but the cache holds float32");
  EXPECT_EQ(errorText([&] {
              Append(C, tensorOf<float>({1, 3}, {1, 2, 3}, dtype::Float32));
            }),
            "ValueError: vm.builtin.attention_kv_cache_append: dimension 1 of "
            "the value is 3, the cache's is 2 (value shape [1, 3], cache rows "
            "of shape [2])");
  EXPECT_EQ(errorText([&] {
              Append(C, tensorOf<float>({2}, {1, 2}, dtype::Float32));
            }),
            "ValueError: vm.builtin.attention_kv_cache_append: the value has "
            "rank 1 but the cache has rank 2 (rows of shape [2])");
  EXPECT_EQ(errorText([&] { Append(rows(1, 0), rows(1, 0)); }),
            "TypeError: vm.builtin.attention_kv_cache_append: argument 1 "
            "expected relax.vm.AttentionKVCacheLegacy but got Tensor");
  EXPECT_EQ(errorText([&] { Append(C, Shape{1}); }),
            "TypeError: vm.builtin.attention_kv_cache_append: argument 2 "
            "expected Tensor but got Shape");
  EXPECT_EQ(firstColumn(C), (std::vector<float>{0}));
}

TEST_F(BuiltinKvCacheTest, ViewErrors) {
  Any C = empty(4);
  Append(C, rows(2, 0));
  EXPECT_EQ(errorText([&] {
              View(C, Shape{3, 2});
            }),
            "ValueError: vm.builtin.attention_kv_cache_view: cannot view the "
            "cache as [3, 2]: it holds 2 filled rows, a view must have shape "
            "[2, 2]");
  EXPECT_EQ(errorText([&] {
              View(C, Shape{2, 1});
            }),
            "ValueError: vm.builtin.attention_kv_cache_view: cannot view the "
            "cache as [2, 1]: it holds 2 filled rows, a view must have shape "
            "[2, 2]");
  EXPECT_EQ(errorText([&] {
              View(C, Shape{2, 2, 1});
            }),
            "ValueError: vm.builtin.attention_kv_cache_view: cannot view the "
            "cache as [2, 2, 1]: it holds 2 filled rows, a view must have "
            "shape [2, 2]");
  // TVM: "expects 1 or 2 arguments" is a ValueError.
  EXPECT_EQ(errorText([&] {
              View(C, Shape{2, 2}, 1);
            }),
            "ValueError: vm.builtin.attention_kv_cache_view: expected 1 or 2 "
            "arguments but got 3");
  EXPECT_EQ(errorText([&] { View(); }),
            "ValueError: vm.builtin.attention_kv_cache_view: expected 1 or 2 "
            "arguments but got 0");
  EXPECT_EQ(errorText([&] { View(C, 2); }),
            "TypeError: vm.builtin.attention_kv_cache_view: argument 2 "
            "expected Shape but got int");
  EXPECT_EQ(errorText([&] { View(nullptr); }),
            "TypeError: vm.builtin.attention_kv_cache_view: argument 1 "
            "expected relax.vm.AttentionKVCacheLegacy but got None");
}

TEST_F(BuiltinKvCacheTest, CreateErrors) {
  EXPECT_EQ(errorText([&] { Create(rows(1, 0), Shape{4}, 0); }),
            "ValueError: vm.builtin.attention_kv_cache_create: the reserve "
            "shape [4] must have the init data's rank 2 (at least 1)");
  EXPECT_EQ(errorText([&] {
              Create(rows(1, 0), Shape{4, 3}, 0);
            }),
            "ValueError: vm.builtin.attention_kv_cache_create: dimension 1 of "
            "the value is 2, the cache's is 3 (value shape [1, 2], cache rows "
            "of shape [3])");
  EXPECT_EQ(errorText([&] {
              Create(rows(1, 0), Shape{-4, 2}, 0);
            }),
            "ValueError: vm.builtin.attention_kv_cache_create: negative "
            "dimension in the reserve shape [-4, 2]");
  EXPECT_EQ(errorText([&] {
              Create(rows(1, 0), Shape{4, 2}, 5);
            }),
            "ValueError: vm.builtin.attention_kv_cache_create: the init fill "
            "count 5 is more than the 4 reserved rows");
  EXPECT_EQ(
      errorText([&] {
        Create(Tensor::empty({1, 2}, DLDataType{kDLInt, 4, 1}), Shape{4, 2}, 0);
      }),
      "TypeError: vm.builtin.attention_kv_cache_create: cannot cache "
      "elements of type int4 (not whole bytes)");
  EXPECT_EQ(errorText([&] {
              Create(rows(1, 0), Shape{4, 2});
            }),
            "TypeError: vm.builtin.attention_kv_cache_create: expected 3 "
            "arguments but got 2");
}

TEST_F(BuiltinKvCacheTest, DecodeLoopThroughTheVM) {
  // shared/tvm-models/kvcache's create_kv_cache and main without their
  // kernels: each step appends a row and returns the view and the cache.
  auto VM = makeVM(R"(
.const $init = tensor float32 [1, 2] [1, 1]
.const $reserve = shape [1, 2]

.func create_kv_cache()
  %c = call vm.builtin.attention_kv_cache_create($init, $reserve, 0)
  ret %c
.end

.func main(x, shape, cache)
  %c = call vm.builtin.attention_kv_cache_append(%cache, %x)
  %kv = call vm.builtin.attention_kv_cache_view(%c, %shape)
  %out = call vm.builtin.make_tuple(%kv, %c)
  ret %out
.end
)");
  Any Cache = VM->call("create_kv_cache");
  for (int I = 0; I < 8; ++I) {
    Array Out =
        VM->call("main", rows(1, static_cast<float>(I)), Shape{I + 1, 2}, Cache)
            .cast<Array>();
    Tensor KV = Out[0].cast<Tensor>();
    Cache = Out[1];
    ASSERT_EQ(KV.shape()[0], I + 1);
    EXPECT_EQ(valuesOf<float>(KV)[2 * static_cast<size_t>(I)],
              static_cast<float>(I));
  }
  EXPECT_EQ(firstColumn(Cache), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THAT(errorText([&] {
                VM->call("main", rows(1, 0), Shape{3, 2}, Cache);
              }),
              HasSubstr("ValueError: vm.builtin.attention_kv_cache_view: "
                        "cannot view the cache as [3, 2]: it holds 9 filled "
                        "rows"));
}
