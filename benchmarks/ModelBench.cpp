//===- ModelBench.cpp - Model drivers: a batch-1 MLP, a decoder step -------===//
//
// mlp/TIER/H<h>: relu(relu(x W1 + b1) W2 + b2) W3 + b3 with x [1, h],
//   W1, W2 [h, h], W3 [h, 16] (examples/mlp.vmasm's structure) for
//   h = 64, 256, 1024; allocating tensor.* kernels, OpenBLAS matmuls.
// decode/TIER/L<l>_H<h>: one decoding step of examples/decode.vmasm's
//   transformer decoder with l layers and hidden size h (FFN 2h, one head,
//   8 cached positions), generated with the builder in the same shape:
//   `main` checks x, calls `layer` l times with each layer's weights, and
//   writes the final norm into an allocated tensor; `layer` mixes
//   allocating tensor.* calls, alloc_storage / alloc_tensor and
//   destination-passing kernel.* calls.
//
// Weights are random (deterministic), generated once per configuration and
// kept for the whole run. Time per iteration is one step.
//
//   native  a hand-written C++ driver making the same calls, with the same
//           arguments, through the same safe-call entries (the builtins
//           get the VM pointer as %vm): the kernels' time, the floor. A
//           tier's time minus native's is what its driver costs.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "vmjit/bytecode/builder.h"
#include "vmjit/runtime/shape.h"

#include <cmath>
#include <map>
#include <mutex>

using namespace vmjit;
using namespace vmjit::vm;
using vmjit::bench::NativeCalls;

namespace {

//===----------------------------------------------------------------------===//
// mlp
//===----------------------------------------------------------------------===//

constexpr int64_t kMLPOut = 16;

struct MLPModel {
  int64_t Hidden;
  std::vector<Any> W; // w1 b1 w2 b2 w3 b3
  std::shared_ptr<Executable> Exe;
  Any X;
};

const MLPModel &mlpModel(int64_t H) {
  static std::mutex Mutex;
  static std::map<int64_t, std::unique_ptr<MLPModel>> Models;
  std::lock_guard Lock(Mutex);
  auto &Slot = Models[H];
  if (Slot)
    return *Slot;
  auto M = std::make_unique<MLPModel>();
  M->Hidden = H;
  uint64_t Seed = 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(H);
  const float WS = 1.0f / std::sqrt(static_cast<float>(H));
  M->W = {Any(bench::randomTensor({H, H}, WS, Seed)),
          Any(bench::randomTensor({H}, 0.1f, Seed)),
          Any(bench::randomTensor({H, H}, WS, Seed)),
          Any(bench::randomTensor({H}, 0.1f, Seed)),
          Any(bench::randomTensor({H, kMLPOut}, WS, Seed)),
          Any(bench::randomTensor({kMLPOut}, 0.1f, Seed))};
  M->X = Any(bench::randomTensor({1, H}, 1.0f, Seed));

  ExecutableBuilder B;
  int64_t MatMul = B.declarePacked("tensor.matmul");
  int64_t Add = B.declarePacked("tensor.add");
  int64_t Relu = B.declarePacked("tensor.relu");
  std::vector<int64_t> C;
  for (const Any &W : M->W)
    C.push_back(B.addConstant(W));
  FunctionBuilder &F = B.beginFunction("main", {"x"});
  RegName Cur = 0, Next = 1;
  for (int L = 0; L < 3; ++L) {
    RegName Mm = Next++, A = Next++;
    F.emitCall(Mm, MatMul, {Arg::reg(Cur), Arg::constant(C[2 * L])});
    F.emitCall(A, Add, {Arg::reg(Mm), Arg::constant(C[2 * L + 1])});
    Cur = A;
    if (L < 2) {
      RegName Hd = Next++;
      F.emitCall(Hd, Relu, {Arg::reg(A)});
      Cur = Hd;
    }
  }
  F.emitRet(Cur);
  B.endFunction();
  M->Exe = B.finish();
  Slot = std::move(M);
  return *Slot;
}

/// main(X) of `Exe` per iteration, in tier `Mode` (the mlp and decode VM
/// tiers).
void runMain(benchmark::State &State, ExecMode Mode,
             std::shared_ptr<const Executable> Exe, const Any &Input) {
  AnyView X(Input);
  auto VM = bench::makeVM(std::move(Exe), Mode, [&](VirtualMachine &V) {
    V.invoke(V.functionIndex("main"), {&X, 1});
  });
  int64_t Main = VM->functionIndex("main");
  for (auto _ : State) {
    Any R = VM->invoke(Main, {&X, 1});
    benchmark::DoNotOptimize(R);
  }
}

void mlpVM(benchmark::State &State, ExecMode Mode, int64_t H) {
  const MLPModel &M = mlpModel(H);
  runMain(State, Mode, M.Exe, M.X);
}

void mlpNative(benchmark::State &State, int64_t H) {
  const MLPModel &M = mlpModel(H);
  NativeCalls N;
  FunctionObj *MatMul = N.fn("tensor.matmul"), *Add = N.fn("tensor.add"),
              *Relu = N.fn("tensor.relu");
  const std::vector<Any> &W = M.W;
  for (auto _ : State) {
    Any Mm1 = NativeCalls::call(MatMul, {M.X, W[0]});
    Any A1 = NativeCalls::call(Add, {Mm1, W[1]});
    Any H1 = NativeCalls::call(Relu, {A1});
    Any Mm2 = NativeCalls::call(MatMul, {H1, W[2]});
    Any A2 = NativeCalls::call(Add, {Mm2, W[3]});
    Any H2 = NativeCalls::call(Relu, {A2});
    Any Mm3 = NativeCalls::call(MatMul, {H2, W[4]});
    Any Y = NativeCalls::call(Add, {Mm3, W[5]});
    benchmark::DoNotOptimize(Y);
  }
}

//===----------------------------------------------------------------------===//
// decode
//===----------------------------------------------------------------------===//

constexpr int64_t kCache = 8;

/// One layer's weights, in `layer`'s parameter order after x.
struct LayerWeights {
  Any Ln1, Wq, Wk, Wv, KCache, VCache, Wo, Ln2, Up, Down;
  std::vector<const Any *> all() const {
    return {&Ln1, &Wq, &Wk, &Wv, &KCache, &VCache, &Wo, &Ln2, &Up, &Down};
  }
};

/// decode.vmasm's constants, for hidden size H.
struct DecodeConsts {
  Any F32, Global, Eps, Scale, Zero, KVBytes, S9, S8, S1, S1F, MLPBytes,
      OutBytes, XErr;
  explicit DecodeConsts(int64_t H) {
    const int64_t F = 2 * H;
    F32 = Any(dtype::Float32);
    Global = Any(std::string("global"));
    Eps = Any(1e-5);
    Tensor Sc = Tensor::empty(std::span<const int64_t>(), dtype::Float32);
    Sc.data<float>()[0] = 1.0f / std::sqrt(static_cast<float>(H));
    Scale = Any(Sc);
    Tensor Z = Tensor::empty(std::span<const int64_t>(), dtype::Float32);
    Z.data<float>()[0] = 0.0f;
    Zero = Any(Z);
    KVBytes = Any(Shape({2 * (kCache + 1) * H * 4}));
    S9 = Any(Shape({kCache + 1, H}));
    S8 = Any(Shape({kCache, H}));
    S1 = Any(Shape({1, H}));
    S1F = Any(Shape({1, F}));
    MLPBytes = Any(Shape({(H + F) * 4}));
    OutBytes = Any(Shape({H * 4}));
    XErr = Any(std::string("decode: argument x"));
  }
};

struct DecodeModel {
  int64_t Layers, Hidden;
  std::unique_ptr<DecodeConsts> K;
  std::vector<LayerWeights> L;
  Any LnF;
  Any X;
  std::shared_ptr<Executable> Exe;
};

/// Byte offsets inside the K/V block: K rows [0, 9), V rows [9, 18).
struct KVOffsets {
  int64_t KNew, VAll, VNew;
  explicit KVOffsets(int64_t H)
      : KNew(kCache * H * 4), VAll((kCache + 1) * H * 4),
        VNew((2 * kCache + 1) * H * 4) {}
};

std::shared_ptr<Executable> decodeProgram(const DecodeModel &M) {
  const DecodeConsts &K = *M.K;
  const KVOffsets Off(M.Hidden);
  ExecutableBuilder B;
  auto P = [&](const char *Name) { return B.declarePacked(Name); };
  int64_t RmsNorm = P("tensor.rms_norm"), AllocStorage =
      P("vm.builtin.alloc_storage"), AllocTensor = P("vm.builtin.alloc_tensor"),
          KAdd = P("kernel.add"), KMatMul = P("kernel.matmul"),
          MatMul = P("tensor.matmul"), Transpose = P("tensor.transpose"),
          Mul = P("tensor.mul"), Softmax = P("tensor.softmax"),
          Add = P("tensor.add"), KRmsNorm = P("kernel.rms_norm"),
          Gelu = P("kernel.gelu"),
          CheckTensor = P("vm.builtin.check_tensor_info"),
          ShapeHeap = P("vm.builtin.alloc_shape_heap"),
          MatchShape = P("vm.builtin.match_shape"),
          MakeShape = P("vm.builtin.make_shape");
  auto C = [&](const Any &V) { return Arg::constant(B.addConstant(V)); };
  auto R = [](RegName Reg) { return Arg::reg(Reg); };
  auto I = [](int64_t V) { return Arg::imm(V); };

  int64_t Layer = B.declareFunction(
      "layer", {"x", "ln1", "wq", "wk", "wv", "kcache", "vcache", "wo", "ln2",
                "up", "down"});
  {
    FunctionBuilder &F = B.beginFunction(
        "layer", {"x", "ln1", "wq", "wk", "wv", "kcache", "vcache", "wo",
                  "ln2", "up", "down"});
    enum : RegName {
      X, Ln1, Wq, Wk, Wv, KCache, VCache, Wo, Ln2, Up, Down,
      Hn, KV, KAll, KPast, KNew, VAll, VPast, VNew, Q, KT, Scores, Scaled,
      Pr, Att, O, X1, MS, H2, U, D, X2
    };
    F.emitCall(Hn, RmsNorm, {R(X), R(Ln1), C(K.Eps)});
    F.emitCall(KV, AllocStorage,
               {Arg::vm(), C(K.KVBytes), I(0), C(K.F32), C(K.Global)});
    F.emitCall(KAll, AllocTensor, {R(KV), I(0), C(K.S9), C(K.F32), C(K.Global)});
    F.emitCall(KPast, AllocTensor,
               {R(KV), I(0), C(K.S8), C(K.F32), C(K.Global)});
    F.emitCall(KNew, AllocTensor,
               {R(KV), I(Off.KNew), C(K.S1), C(K.F32), C(K.Global)});
    F.emitCall(VAll, AllocTensor,
               {R(KV), I(Off.VAll), C(K.S9), C(K.F32), C(K.Global)});
    F.emitCall(VPast, AllocTensor,
               {R(KV), I(Off.VAll), C(K.S8), C(K.F32), C(K.Global)});
    F.emitCall(VNew, AllocTensor,
               {R(KV), I(Off.VNew), C(K.S1), C(K.F32), C(K.Global)});
    F.emitCall(kVoidRegister, KAdd, {R(KCache), C(K.Zero), R(KPast)});
    F.emitCall(kVoidRegister, KAdd, {R(VCache), C(K.Zero), R(VPast)});
    F.emitCall(kVoidRegister, KMatMul, {R(Hn), R(Wk), R(KNew)});
    F.emitCall(kVoidRegister, KMatMul, {R(Hn), R(Wv), R(VNew)});
    F.emitCall(Q, MatMul, {R(Hn), R(Wq)});
    F.emitCall(KT, Transpose, {R(KAll)});
    F.emitCall(Scores, MatMul, {R(Q), R(KT)});
    F.emitCall(Scaled, Mul, {R(Scores), C(K.Scale)});
    F.emitCall(Pr, Softmax, {R(Scaled), I(-1)});
    F.emitCall(Att, MatMul, {R(Pr), R(VAll)});
    F.emitCall(O, MatMul, {R(Att), R(Wo)});
    F.emitCall(X1, Add, {R(X), R(O)});
    F.emitCall(MS, AllocStorage,
               {Arg::vm(), C(K.MLPBytes), I(0), C(K.F32), C(K.Global)});
    F.emitCall(H2, AllocTensor, {R(MS), I(0), C(K.S1), C(K.F32), C(K.Global)});
    F.emitCall(U, AllocTensor,
               {R(MS), I(M.Hidden * 4), C(K.S1F), C(K.F32), C(K.Global)});
    F.emitCall(kVoidRegister, KRmsNorm, {R(X1), R(Ln2), C(K.Eps), R(H2)});
    F.emitCall(kVoidRegister, KMatMul, {R(H2), R(Up), R(U)});
    F.emitCall(kVoidRegister, Gelu, {R(U), R(U)});
    F.emitCall(D, MatMul, {R(U), R(Down)});
    F.emitCall(X2, Add, {R(X1), R(D)});
    F.emitRet(X2);
    B.endFunction();
  }
  {
    FunctionBuilder &F = B.beginFunction("main", {"x"});
    RegName X = 0, X0 = 1, Heap = 2, Y = 3;
    F.emitCall(X0, CheckTensor, {R(X), I(2), C(K.F32), C(K.XErr)});
    F.emitCall(Heap, ShapeHeap, {Arg::vm(), I(1)});
    F.emitCall(kVoidRegister, MatchShape,
               {R(X0), R(Heap), I(2), I(0), I(1), I(1), I(0), C(K.XErr)});
    RegName Cur = X0, Next = 4;
    for (const LayerWeights &W : M.L) {
      std::vector<Arg> Args{R(Cur)};
      for (const Any *A : W.all())
        Args.push_back(C(*A));
      F.emitCall(Next, Layer, std::move(Args));
      Cur = Next++;
    }
    RegName OS = Next++, OShape = Next++;
    F.emitCall(OS, AllocStorage,
               {Arg::vm(), C(K.OutBytes), I(0), C(K.F32), C(K.Global)});
    F.emitCall(OShape, MakeShape, {R(Heap), I(2), I(0), I(1), I(1), I(0)});
    F.emitCall(Y, AllocTensor, {R(OS), I(0), R(OShape), C(K.F32), C(K.Global)});
    F.emitCall(kVoidRegister, KRmsNorm, {R(Cur), C(M.LnF), C(K.Eps), R(Y)});
    F.emitRet(Y);
    B.endFunction();
  }
  return B.finish();
}

const DecodeModel &decodeModel(int64_t Layers, int64_t H) {
  static std::mutex Mutex;
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<DecodeModel>>
      Models;
  std::lock_guard Lock(Mutex);
  auto &Slot = Models[{Layers, H}];
  if (Slot)
    return *Slot;
  auto M = std::make_unique<DecodeModel>();
  M->Layers = Layers;
  M->Hidden = H;
  M->K = std::make_unique<DecodeConsts>(H);
  uint64_t Seed = 0xD1B54A32D192ED03ull + static_cast<uint64_t>(H * 131 + Layers);
  const int64_t F = 2 * H;
  const float SH = 1.0f / std::sqrt(static_cast<float>(H));
  const float SF = 1.0f / std::sqrt(static_cast<float>(F));
  auto Norm = [&] {
    Tensor T = bench::randomTensor({H}, 0.1f, Seed);
    for (int64_t J = 0; J < H; ++J)
      T.data<float>()[J] += 1.0f;
    return Any(T);
  };
  for (int64_t L = 0; L < Layers; ++L) {
    LayerWeights W;
    W.Ln1 = Norm();
    W.Wq = Any(bench::randomTensor({H, H}, SH, Seed));
    W.Wk = Any(bench::randomTensor({H, H}, SH, Seed));
    W.Wv = Any(bench::randomTensor({H, H}, SH, Seed));
    W.KCache = Any(bench::randomTensor({kCache, H}, 1.0f, Seed));
    W.VCache = Any(bench::randomTensor({kCache, H}, 1.0f, Seed));
    W.Wo = Any(bench::randomTensor({H, H}, SH, Seed));
    W.Ln2 = Norm();
    W.Up = Any(bench::randomTensor({H, F}, SH, Seed));
    W.Down = Any(bench::randomTensor({F, H}, SF, Seed));
    M->L.push_back(std::move(W));
  }
  M->LnF = Norm();
  M->X = Any(bench::randomTensor({1, H}, 1.0f, Seed));
  M->Exe = decodeProgram(*M);
  Slot = std::move(M);
  return *Slot;
}

void decodeVM(benchmark::State &State, ExecMode Mode, int64_t L, int64_t H) {
  const DecodeModel &M = decodeModel(L, H);
  runMain(State, Mode, M.Exe, M.X);
}

/// decodeProgram's calls, written out in C++.
class NativeDecoder {
public:
  NativeDecoder(const DecodeModel &M, VirtualMachine &VM)
      : M(M), K(*M.K), Off(M.Hidden), VMPtr(static_cast<void *>(&VM)) {}

  Any step(const Any &X) {
    Any X0 = call(CheckTensor, {X, Any(int64_t(2)), K.F32, K.XErr});
    Any Heap = call(ShapeHeap, {VMPtr, Any(int64_t(1))});
    call(MatchShape, {X0, Heap, i(2), i(0), i(1), i(1), i(0), K.XErr});
    Any Cur = X0;
    for (const LayerWeights &W : M.L)
      Cur = layer(Cur, W);
    Any OS = call(AllocStorage, {VMPtr, K.OutBytes, i(0), K.F32, K.Global});
    Any OShape = call(MakeShape, {Heap, i(2), i(0), i(1), i(1), i(0)});
    Any Y = call(AllocTensor, {OS, i(0), OShape, K.F32, K.Global});
    call(KRmsNorm, {Cur, M.LnF, K.Eps, Y});
    return Y;
  }

private:
  static Any call(FunctionObj *F, std::initializer_list<AnyView> Args) {
    return NativeCalls::call(F, Args);
  }
  static AnyView i(int64_t V) { return AnyView(V); }

  Any layer(const Any &X, const LayerWeights &W) {
    Any Hn = call(RmsNorm, {X, W.Ln1, K.Eps});
    Any KV = call(AllocStorage, {VMPtr, K.KVBytes, i(0), K.F32, K.Global});
    Any KAll = call(AllocTensor, {KV, i(0), K.S9, K.F32, K.Global});
    Any KPast = call(AllocTensor, {KV, i(0), K.S8, K.F32, K.Global});
    Any KNew = call(AllocTensor, {KV, i(Off.KNew), K.S1, K.F32, K.Global});
    Any VAll = call(AllocTensor, {KV, i(Off.VAll), K.S9, K.F32, K.Global});
    Any VPast = call(AllocTensor, {KV, i(Off.VAll), K.S8, K.F32, K.Global});
    Any VNew = call(AllocTensor, {KV, i(Off.VNew), K.S1, K.F32, K.Global});
    call(KAdd, {W.KCache, K.Zero, KPast});
    call(KAdd, {W.VCache, K.Zero, VPast});
    call(KMatMul, {Hn, W.Wk, KNew});
    call(KMatMul, {Hn, W.Wv, VNew});
    Any Q = call(MatMul, {Hn, W.Wq});
    Any KT = call(Transpose, {KAll});
    Any Scores = call(MatMul, {Q, KT});
    Any Scaled = call(Mul, {Scores, K.Scale});
    Any Pr = call(Softmax, {Scaled, i(-1)});
    Any Att = call(MatMul, {Pr, VAll});
    Any O = call(MatMul, {Att, W.Wo});
    Any X1 = call(Add, {X, O});
    Any MS = call(AllocStorage, {VMPtr, K.MLPBytes, i(0), K.F32, K.Global});
    Any H2 = call(AllocTensor, {MS, i(0), K.S1, K.F32, K.Global});
    Any U = call(AllocTensor, {MS, i(M.Hidden * 4), K.S1F, K.F32, K.Global});
    call(KRmsNorm, {X1, W.Ln2, K.Eps, H2});
    call(KMatMul, {H2, W.Up, U});
    call(Gelu, {U, U});
    Any D = call(MatMul, {U, W.Down});
    return call(Add, {X1, D});
  }

  const DecodeModel &M;
  const DecodeConsts &K;
  const KVOffsets Off;
  AnyView VMPtr;
  NativeCalls N;
  FunctionObj *RmsNorm = N.fn("tensor.rms_norm"),
              *AllocStorage = N.fn("vm.builtin.alloc_storage"),
              *AllocTensor = N.fn("vm.builtin.alloc_tensor"),
              *KAdd = N.fn("kernel.add"), *KMatMul = N.fn("kernel.matmul"),
              *MatMul = N.fn("tensor.matmul"),
              *Transpose = N.fn("tensor.transpose"), *Mul = N.fn("tensor.mul"),
              *Softmax = N.fn("tensor.softmax"), *Add = N.fn("tensor.add"),
              *KRmsNorm = N.fn("kernel.rms_norm"), *Gelu = N.fn("kernel.gelu"),
              *CheckTensor = N.fn("vm.builtin.check_tensor_info"),
              *ShapeHeap = N.fn("vm.builtin.alloc_shape_heap"),
              *MatchShape = N.fn("vm.builtin.match_shape"),
              *MakeShape = N.fn("vm.builtin.make_shape");
};

void decodeNative(benchmark::State &State, int64_t L, int64_t H) {
  const DecodeModel &M = decodeModel(L, H);
  // The VM only lends its allocator (%vm); its code never runs.
  auto VM = VirtualMachine::create(M.Exe);
  NativeDecoder D(M, *VM);
  for (auto _ : State) {
    Any Y = D.step(M.X);
    benchmark::DoNotOptimize(Y);
  }
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

bool registerModelBenchmarks() {
  struct Tier {
    std::string_view Name;
    ExecMode Mode;
    bool Native;
  };
  std::vector<Tier> Tiers = {
      {execModeName(ExecMode::Bytecode), ExecMode::Bytecode, false},
      {"native", ExecMode::Bytecode, true}};
#ifdef VMJIT_HAVE_JIT
  for (ExecMode M : {ExecMode::Baseline, ExecMode::Compiled, ExecMode::Tiered})
    Tiers.push_back({execModeName(M), M, false});
#endif
  // The sizes are captured, not passed with Arg()/Args(), which would
  // append "/64" to the names: the names carry the sizes already.
  for (const Tier &T : Tiers) {
    for (int64_t H : {64, 256, 1024}) {
      std::string Name =
          "mlp/" + std::string(T.Name) + "/H" + std::to_string(H);
      benchmark::RegisterBenchmark(Name.c_str(),
                                   [T, H](benchmark::State &S) {
                                     T.Native ? mlpNative(S, H)
                                              : mlpVM(S, T.Mode, H);
                                   })
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const Tier &T : Tiers) {
    for (std::pair<int64_t, int64_t> LH :
         {std::pair<int64_t, int64_t>{4, 64}, {4, 512}, {32, 64}, {32, 512}}) {
      int64_t L = LH.first, H = LH.second;
      std::string Name = "decode/" + std::string(T.Name) + "/L" +
                         std::to_string(L) + "_H" + std::to_string(H);
      benchmark::RegisterBenchmark(Name.c_str(),
                                   [T, L, H](benchmark::State &S) {
                                     T.Native ? decodeNative(S, L, H)
                                              : decodeVM(S, T.Mode, L, H);
                                   })
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}

[[maybe_unused]] const bool Registered = registerModelBenchmarks();

} // namespace
