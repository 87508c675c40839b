//===- EngineTest.cpp - The ORC engine and its object cache ---------------===//
//
// Small modules built with IRBuilder, compiled by vmjit::jit::Engine and
// called: plain code, externals bound through `Absolute`, unit isolation
// and removal, the object cache, errors, concurrent compiles, optimize().
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/engine.h"
#include "vmjit/runtime/error.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace vmjit::jit;
namespace fs = std::filesystem;

namespace {

/// A fresh context with an empty module.
struct IR {
  std::unique_ptr<llvm::LLVMContext> Ctx =
      std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> M =
      std::make_unique<llvm::Module>("test", *Ctx);
  std::unique_ptr<llvm::IRBuilder<>> B =
      std::make_unique<llvm::IRBuilder<>>(*Ctx);

  llvm::Type *i32() { return B->getInt32Ty(); }
  llvm::Type *ptr() { return B->getPtrTy(); }

  llvm::Function *define(const std::string &Name, llvm::Type *Ret,
                         std::vector<llvm::Type *> Params = {}) {
    auto *F = llvm::Function::Create(
        llvm::FunctionType::get(Ret, Params, false),
        llvm::Function::ExternalLinkage, Name, *M);
    B->SetInsertPoint(llvm::BasicBlock::Create(*Ctx, "entry", F));
    return F;
  }
};

/// `int32_t Name() { return Value; }`
IR returning(int Value, const std::string &Name = "answer") {
  IR I;
  I.define(Name, I.i32());
  I.B->CreateRet(I.B->getInt32(Value));
  return I;
}

/// `int32_t call_ext(int32_t X) { return ext(X); }`, ext external.
IR callingExternal(const std::string &Ext = "ext") {
  IR I;
  llvm::FunctionCallee Callee = I.M->getOrInsertFunction(
      Ext, llvm::FunctionType::get(I.i32(), {I.i32()}, false));
  llvm::Function *F = I.define("call_ext", I.i32(), {I.i32()});
  I.B->CreateRet(I.B->CreateCall(Callee, {F->getArg(0)}));
  return I;
}

/// Engine::create, its error (a thrown JITError) as text in `Error`.
std::unique_ptr<Engine> createEngine(const EngineOptions &Opts,
                                     std::string &Error) {
  try {
    return Engine::create(Opts);
  } catch (const vmjit::Error &E) {
    EXPECT_EQ(E.kind(), "JITError");
    Error = E.message();
    return nullptr;
  }
}

/// Engine::compile, its error (a thrown JITError) as text in `Error`.
std::unique_ptr<CompiledUnit>
compileUnit(Engine &E, std::unique_ptr<llvm::LLVMContext> Ctx,
            std::unique_ptr<llvm::Module> M,
            const std::map<std::string, uint64_t> &Abs,
            const std::vector<std::string> &Exports, const std::string &Key,
            std::string &Error) {
  try {
    return E.compile(std::move(Ctx), std::move(M), Abs, Exports, Key);
  } catch (const vmjit::Error &Ex) {
    EXPECT_EQ(Ex.kind(), "JITError");
    Error = Ex.message();
    return nullptr;
  }
}

std::unique_ptr<Engine> makeEngine(EngineOptions Opts = {}) {
  std::string Error;
  auto E = createEngine(Opts, Error);
  EXPECT_TRUE(E) << Error;
  return E;
}

std::unique_ptr<CompiledUnit> compile(Engine &E, IR I,
                                      std::map<std::string, uint64_t> Abs,
                                      std::vector<std::string> Exports,
                                      const std::string &Key = "") {
  std::string Error;
  auto U = compileUnit(E, std::move(I.Ctx), std::move(I.M), Abs, Exports, Key,
                       Error);
  EXPECT_TRUE(U) << Error;
  return U;
}

template <typename Fn> Fn *fn(const CompiledUnit &U, const std::string &Name) {
  uint64_t Addr = U.address(Name);
  EXPECT_NE(Addr, 0u) << Name;
  return reinterpret_cast<Fn *>(Addr);
}

template <typename Fn> uint64_t addr(Fn *F) {
  return reinterpret_cast<uint64_t>(F);
}

/// A fresh directory under the test temp dir, removed at the end.
struct TempDir {
  fs::path Path;
  TempDir() {
    std::string Model = (fs::path(testing::TempDir()) / "vmjit-jit-XXXXXX");
    EXPECT_NE(::mkdtemp(Model.data()), nullptr);
    Path = Model;
  }
  ~TempDir() {
    std::error_code EC;
    fs::remove_all(Path, EC);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> Out;
    for (const auto &E : fs::directory_iterator(Path))
      Out.push_back(E.path());
    std::sort(Out.begin(), Out.end());
    return Out;
  }
};

std::atomic<int> ExtCalls{0};
int32_t extDouble(int32_t X) {
  ++ExtCalls;
  return 2 * X;
}
int32_t extOne(int32_t) { return 1; }
int32_t extTwo(int32_t) { return 2; }
int32_t TestData = 1234;

TEST(EngineTest, ReturnsConstant) {
  auto E = makeEngine();
  auto U = compile(*E, returning(42), {}, {"answer"});
  ASSERT_TRUE(U);
  EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 42);
  EXPECT_FALSE(U->stats().CacheHit);
  EXPECT_GT(U->stats().ObjectBytes, 0u);
  EXPECT_GT(U->stats().CodegenMs, 0.0);
  EXPECT_EQ(U->address("not_exported"), 0u);
  EXPECT_EQ(E->options().OptLevel, 1);
  // Naming an export twice is harmless.
  auto V = compile(*E, returning(43), {}, {"answer", "answer"});
  ASSERT_TRUE(V);
  EXPECT_EQ(fn<int32_t()>(*V, "answer")(), 43);
}

TEST(EngineTest, AllOptLevels) {
  for (int Level = 0; Level <= 3; ++Level) {
    EngineOptions Opts;
    Opts.OptLevel = Level;
    auto E = makeEngine(Opts);
    auto U = compile(*E, returning(Level + 10), {}, {"answer"});
    ASSERT_TRUE(U);
    EXPECT_EQ(fn<int32_t()>(*U, "answer")(), Level + 10);
  }
}

TEST(EngineTest, RejectsBadOptLevel) {
  EngineOptions Opts;
  Opts.OptLevel = 4;
  std::string Error;
  EXPECT_FALSE(createEngine(Opts, Error));
  EXPECT_NE(Error.find("0..3"), std::string::npos) << Error;
}

TEST(EngineTest, CallsBoundExternal) {
  auto E = makeEngine();
  auto U = compile(*E, callingExternal(), {{"ext", addr(&extDouble)}},
                   {"call_ext"});
  ASSERT_TRUE(U);
  int Before = ExtCalls;
  EXPECT_EQ(fn<int32_t(int32_t)>(*U, "call_ext")(21), 42);
  EXPECT_EQ(ExtCalls, Before + 1);
}

TEST(EngineTest, ReadsBoundData) {
  IR I;
  auto *G = new llvm::GlobalVariable(*I.M, I.i32(), false,
                                     llvm::GlobalValue::ExternalLinkage,
                                     nullptr, "ext_data");
  I.define("read", I.i32());
  I.B->CreateRet(I.B->CreateLoad(I.i32(), G));
  auto E = makeEngine();
  auto U = compile(*E, std::move(I), {{"ext_data", addr(&TestData)}},
                   {"read"});
  ASSERT_TRUE(U);
  EXPECT_EQ(fn<int32_t()>(*U, "read")(), 1234);
}

TEST(EngineTest, UnitsBindNamesIndependently) {
  auto E = makeEngine();
  auto A = compile(*E, callingExternal(), {{"ext", addr(&extOne)}},
                   {"call_ext"});
  auto B = compile(*E, callingExternal(), {{"ext", addr(&extTwo)}},
                   {"call_ext"});
  ASSERT_TRUE(A && B);
  EXPECT_NE(A->address("call_ext"), B->address("call_ext"));
  EXPECT_EQ(fn<int32_t(int32_t)>(*A, "call_ext")(0), 1);
  EXPECT_EQ(fn<int32_t(int32_t)>(*B, "call_ext")(0), 2);
}

bool isMapped(uint64_t Addr) {
  long Page = ::sysconf(_SC_PAGESIZE);
  unsigned char Vec;
  void *Start = reinterpret_cast<void *>(Addr & ~uint64_t(Page - 1));
  return ::mincore(Start, 1, &Vec) == 0 || errno != ENOMEM;
}

TEST(EngineTest, DestroyingUnitRemovesCode) {
  auto E = makeEngine();
  auto U = compile(*E, returning(1), {}, {"answer"});
  ASSERT_TRUE(U);
  uint64_t Code = U->address("answer");
  EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 1);
  EXPECT_TRUE(isMapped(Code));
  U.reset();
  // JITLink's in-process memory manager unmaps a removed unit's memory.
  EXPECT_FALSE(isMapped(Code));
  auto V = compile(*E, returning(2), {}, {"answer"});
  ASSERT_TRUE(V);
  EXPECT_EQ(fn<int32_t()>(*V, "answer")(), 2);
}

TEST(EngineTest, UnitOutlivesEngine) {
  auto E = makeEngine();
  auto U = compile(*E, returning(5), {}, {"answer"});
  ASSERT_TRUE(U);
  E.reset();
  EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 5);
}

TEST(EngineTest, ObjectCache) {
  TempDir Dir;
  EngineOptions Opts;
  Opts.CacheDir = (Dir.Path / "cache").string(); // Created on first store.
  auto E = makeEngine(Opts);

  auto U1 = compile(*E, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U1);
  EXPECT_FALSE(U1->stats().CacheHit);
  EXPECT_EQ(fn<int32_t()>(*U1, "answer")(), 42);
  std::vector<fs::path> Files;
  for (const auto &F : fs::directory_iterator(Opts.CacheDir))
    Files.push_back(F.path());
  ASSERT_EQ(Files.size(), 1u);
  EXPECT_EQ(Files[0].extension(), ".o");
  EXPECT_EQ(Files[0].stem().string().size(), 32u);

  auto U2 = compile(*E, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U2);
  EXPECT_TRUE(U2->stats().CacheHit);
  EXPECT_EQ(U2->stats().OptimizeMs, 0.0);
  EXPECT_EQ(U2->stats().ObjectBytes, U1->stats().ObjectBytes);
  EXPECT_EQ(fn<int32_t()>(*U2, "answer")(), 42);

  auto U3 = compile(*E, returning(7), {}, {"answer"}, "key-2");
  ASSERT_TRUE(U3);
  EXPECT_FALSE(U3->stats().CacheHit);
  EXPECT_EQ(fn<int32_t()>(*U3, "answer")(), 7);

  // No key: no cache.
  auto U4 = compile(*E, returning(9), {}, {"answer"});
  ASSERT_TRUE(U4);
  EXPECT_FALSE(U4->stats().CacheHit);

  // A second engine (a second run) finds the objects; another opt level
  // does not.
  auto E2 = makeEngine(Opts);
  auto U5 = compile(*E2, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U5);
  EXPECT_TRUE(U5->stats().CacheHit);
  EXPECT_EQ(fn<int32_t()>(*U5, "answer")(), 42);
  EngineOptions O2 = Opts;
  O2.OptLevel = 2;
  auto E3 = makeEngine(O2);
  auto U6 = compile(*E3, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U6);
  EXPECT_FALSE(U6->stats().CacheHit);

  // Only complete files, no temporaries left behind.
  size_t N = 0;
  for (const auto &F : fs::directory_iterator(Opts.CacheDir)) {
    EXPECT_EQ(F.path().extension(), ".o") << F.path();
    ++N;
  }
  EXPECT_EQ(N, 3u);
}

TEST(EngineTest, ObjectCacheRefusesADirectoryEveryoneCanWrite) {
  TempDir Dir;
  EngineOptions Opts;
  Opts.CacheDir = Dir.Path.string();
  fs::permissions(Dir.Path, fs::perms::all); // 0777
  auto E = makeEngine(Opts);
  auto U1 = compile(*E, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U1);
  EXPECT_TRUE(Dir.files().empty()); // nothing stored there
  auto U2 = compile(*E, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U2);
  EXPECT_FALSE(U2->stats().CacheHit);
  EXPECT_EQ(fn<int32_t()>(*U2, "answer")(), 42);
  // Made private again, it is used.
  fs::permissions(Dir.Path, fs::perms::owner_all);
  compile(*E, returning(42), {}, {"answer"}, "key-1");
  auto U3 = compile(*E, returning(42), {}, {"answer"}, "key-1");
  ASSERT_TRUE(U3);
  EXPECT_TRUE(U3->stats().CacheHit);
}

TEST(EngineTest, ObjectCacheRemovesTemporariesOfDeadWriters) {
  TempDir Dir;
  EngineOptions Opts;
  Opts.CacheDir = Dir.Path.string();
  auto touch = [&](const char *Name, std::chrono::hours Age) {
    fs::path P = Dir.Path / Name;
    std::ofstream(P) << "partial";
    fs::last_write_time(P, fs::file_time_type::clock::now() - Age);
    return P;
  };
  fs::path Stale = touch("0123.o.tmp.99999.0", std::chrono::hours(2));
  fs::path Fresh = touch("4567.o.tmp.99999.1", std::chrono::hours(0));
  auto E = makeEngine(Opts);
  ASSERT_TRUE(compile(*E, returning(1), {}, {"answer"}, "key-1"));
  EXPECT_FALSE(fs::exists(Stale));
  EXPECT_TRUE(fs::exists(Fresh)); // perhaps another process's, still writing
}

TEST(EngineTest, CachedObjectBindsExternalsAgain) {
  TempDir Dir;
  EngineOptions Opts;
  Opts.CacheDir = Dir.Path.string();
  auto E = makeEngine(Opts);
  auto A = compile(*E, callingExternal(), {{"ext", addr(&extOne)}},
                   {"call_ext"}, "ext-key");
  auto B = compile(*E, callingExternal(), {{"ext", addr(&extTwo)}},
                   {"call_ext"}, "ext-key");
  ASSERT_TRUE(A && B);
  EXPECT_FALSE(A->stats().CacheHit);
  EXPECT_TRUE(B->stats().CacheHit);
  EXPECT_EQ(fn<int32_t(int32_t)>(*A, "call_ext")(0), 1);
  EXPECT_EQ(fn<int32_t(int32_t)>(*B, "call_ext")(0), 2);
}

void overwrite(const fs::path &P, const std::string &Bytes) {
  std::ofstream(P, std::ios::binary | std::ios::trunc) << Bytes;
}

std::string readFile(const fs::path &P) {
  std::ifstream In(P, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(In), {});
}

TEST(EngineTest, DamagedCacheFileIsAMiss) {
  TempDir Dir;
  EngineOptions Opts;
  Opts.CacheDir = Dir.Path.string();
  auto E = makeEngine(Opts);
  ASSERT_TRUE(compile(*E, returning(42), {}, {"answer"}, "k"));
  std::vector<fs::path> Files = Dir.files();
  ASSERT_EQ(Files.size(), 1u);
  std::string Good = readFile(Files[0]);

  std::string Flipped = Good;
  Flipped[Flipped.size() / 3] ^= 0x40;
  std::string Trailer = Good.substr(Good.size() - 32);
  for (const std::string &Bad :
       {std::string("garbage"), std::string(), std::string(4096, '\xff'),
        Good.substr(0, Good.size() / 2), Flipped,
        std::string("\x7f" "ELF") + Trailer}) {
    overwrite(Files[0], Bad);
    auto U = compile(*E, returning(42), {}, {"answer"}, "k");
    ASSERT_TRUE(U);
    EXPECT_FALSE(U->stats().CacheHit);
    EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 42);
    // Rewritten: the next compile hits.
    EXPECT_EQ(readFile(Files[0]), Good);
    auto V = compile(*E, returning(42), {}, {"answer"}, "k");
    ASSERT_TRUE(V);
    EXPECT_TRUE(V->stats().CacheHit);
  }
}

TEST(EngineTest, CacheKeyIsComparedOnLoad) {
  // Puts the object of key "b" (returns 7) under the file name of key "a",
  // as a hash collision would: "a" must miss and compile its own module.
  TempDir DirA, DirB;
  EngineOptions OptsA, OptsB;
  OptsA.CacheDir = DirA.Path.string();
  OptsB.CacheDir = DirB.Path.string();
  auto EA = makeEngine(OptsA), EB = makeEngine(OptsB);
  ASSERT_TRUE(compile(*EA, returning(42), {}, {"answer"}, "a"));
  ASSERT_TRUE(compile(*EB, returning(7), {}, {"answer"}, "b"));
  ASSERT_EQ(DirA.files().size(), 1u);
  ASSERT_EQ(DirB.files().size(), 1u);
  fs::copy_file(DirB.files()[0], DirA.files()[0],
                fs::copy_options::overwrite_existing);
  auto U = compile(*EA, returning(42), {}, {"answer"}, "a");
  ASSERT_TRUE(U);
  EXPECT_FALSE(U->stats().CacheHit);
  EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 42);
}

TEST(EngineTest, UnusableCacheDirIsNoCache) {
  TempDir Dir;
  overwrite(Dir.Path / "file", "x");
  EngineOptions Opts;
  Opts.CacheDir = (Dir.Path / "file" / "cache").string();
  auto E = makeEngine(Opts);
  for (int I = 0; I < 2; ++I) {
    auto U = compile(*E, returning(42), {}, {"answer"}, "k");
    ASSERT_TRUE(U);
    EXPECT_FALSE(U->stats().CacheHit);
    EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 42);
  }
}

TEST(EngineTest, InvalidModuleIsAnError) {
  IR I;
  I.define("broken", I.i32()); // A block without a terminator.
  I.B->CreateAdd(I.B->getInt32(1), I.B->getInt32(2));
  auto E = makeEngine();
  std::string Error;
  auto U = compileUnit(*E, std::move(I.Ctx), std::move(I.M), {}, {"broken"}, "",
                       Error);
  EXPECT_FALSE(U);
  EXPECT_NE(Error.find("invalid module"), std::string::npos) << Error;
}

TEST(EngineTest, UnresolvedExternalIsAnError) {
  auto E = makeEngine();
  IR I = callingExternal("no_such_function");
  std::string Error;
  auto U = compileUnit(*E, std::move(I.Ctx), std::move(I.M), {}, {"call_ext"},
                       "", Error);
  EXPECT_FALSE(U);
  EXPECT_NE(Error.find("no_such_function"), std::string::npos) << Error;
  // The process's own symbols are not visible either.
  IR J = callingExternal("getpid");
  Error.clear();
  U = compileUnit(*E, std::move(J.Ctx), std::move(J.M), {}, {"call_ext"}, "",
                  Error);
  EXPECT_FALSE(U);
  EXPECT_NE(Error.find("getpid"), std::string::npos) << Error;
  // The engine still works.
  auto V = compile(*E, returning(3), {}, {"answer"});
  ASSERT_TRUE(V);
  EXPECT_EQ(fn<int32_t()>(*V, "answer")(), 3);
}

TEST(EngineTest, MissingExportIsAnError) {
  auto E = makeEngine();
  IR I = returning(1);
  std::string Error;
  auto U = compileUnit(*E, std::move(I.Ctx), std::move(I.M), {},
                       {"answer", "nope"}, "", Error);
  EXPECT_FALSE(U);
  EXPECT_NE(Error.find("nope"), std::string::npos) << Error;
}

TEST(EngineTest, ModuleFromAnotherContextIsAnError) {
  auto E = makeEngine();
  IR I = returning(1);
  std::string Error;
  auto U = compileUnit(*E, std::make_unique<llvm::LLVMContext>(),
                       std::move(I.M), {}, {"answer"}, "", Error);
  EXPECT_FALSE(U);
  EXPECT_FALSE(Error.empty());
}

TEST(EngineTest, CodegenMayCallRuntimeFunctions) {
  // 128-bit division is a libgcc call; memset of a large unknown size is a
  // libc call. Neither is bound by the caller.
  IR I;
  llvm::Type *I128 = I.B->getInt128Ty();
  llvm::Function *F = I.define("div", I128, {I128, I128});
  I.B->CreateRet(I.B->CreateSDiv(F->getArg(0), F->getArg(1)));
  llvm::Function *G =
      I.define("fill", I.B->getVoidTy(), {I.ptr(), I.B->getInt64Ty()});
  I.B->CreateMemSet(G->getArg(0), I.B->getInt8(7), G->getArg(1),
                   llvm::MaybeAlign(1));
  I.B->CreateRetVoid();
  auto E = makeEngine();
  auto U = compile(*E, std::move(I), {}, {"div", "fill"});
  ASSERT_TRUE(U);
  __int128 Big = (__int128(1) << 100) + 12345;
  EXPECT_TRUE(fn<__int128(__int128, __int128)>(*U, "div")(Big, 3) == Big / 3);
  std::vector<char> Buf(1000, 0);
  fn<void(char *, int64_t)>(*U, "fill")(Buf.data(), 999);
  EXPECT_EQ(Buf[998], 7);
  EXPECT_EQ(Buf[999], 0);
}

TEST(EngineTest, ConcurrentCompiles) {
  auto E = makeEngine();
  // Code compiled earlier, called while the threads compile.
  auto Early = compile(*E, callingExternal(), {{"ext", addr(&extDouble)}},
                       {"call_ext"});
  ASSERT_TRUE(Early);
  auto *EarlyFn = fn<int32_t(int32_t)>(*Early, "call_ext");

  constexpr int Threads = 4, PerThread = 8;
  std::vector<std::vector<std::unique_ptr<CompiledUnit>>> Units(Threads);
  std::vector<std::string> Errors(Threads);
  std::atomic<bool> Done{false};
  std::thread Caller([&] {
    while (!Done)
      if (EarlyFn(4) != 8)
        std::abort();
  });
  std::vector<std::thread> Workers;
  for (int T = 0; T < Threads; ++T)
    Workers.emplace_back([&, T] {
      for (int K = 0; K < PerThread; ++K) {
        IR I = callingExternal();
        // Different modules: call_ext(x) = ext(x) + T * 100 + K.
        llvm::Function *F = I.M->getFunction("call_ext");
        llvm::ReturnInst *Ret =
            llvm::cast<llvm::ReturnInst>(F->getEntryBlock().getTerminator());
        I.B->SetInsertPoint(Ret);
        Ret->setOperand(0, I.B->CreateAdd(Ret->getOperand(0),
                                         I.B->getInt32(T * 100 + K)));
        std::string Error;
        auto U =
            compileUnit(*E, std::move(I.Ctx), std::move(I.M),
                        {{"ext", addr(&extDouble)}}, {"call_ext"}, "", Error);
        if (!U) {
          Errors[T] = Error;
          return;
        }
        Units[T].push_back(std::move(U));
      }
    });
  for (std::thread &W : Workers)
    W.join();
  Done = true;
  Caller.join();
  for (int T = 0; T < Threads; ++T) {
    EXPECT_EQ(Errors[T], "");
    ASSERT_EQ(Units[T].size(), size_t(PerThread));
    for (int K = 0; K < PerThread; ++K)
      EXPECT_EQ(fn<int32_t(int32_t)>(*Units[T][K], "call_ext")(1),
                2 + T * 100 + K);
  }
}

/// `int32_t six_times_seven()` computed through memory, so that only the
/// optimizer can fold it.
IR foldable() {
  IR I;
  I.define("six_times_seven", I.i32());
  llvm::Value *Slot = I.B->CreateAlloca(I.i32());
  I.B->CreateStore(I.B->getInt32(6), Slot);
  llvm::Value *X = I.B->CreateLoad(I.i32(), Slot);
  I.B->CreateRet(I.B->CreateMul(X, I.B->getInt32(7)));
  return I;
}

std::string print(const llvm::Module &M) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  M.print(OS, nullptr);
  return S;
}

TEST(EngineTest, OptimizeFoldsConstants) {
  EngineOptions Opts;
  Opts.OptLevel = 2;
  auto E = makeEngine(Opts);
  IR I = foldable();
  E->optimize(*I.M);
  std::string Text = print(*I.M);
  EXPECT_NE(Text.find("ret i32 42"), std::string::npos) << Text;
  EXPECT_EQ(Text.find("alloca"), std::string::npos) << Text;
  EXPECT_NE(Text.find("target triple"), std::string::npos) << Text;

  Opts.OptLevel = 0;
  auto E0 = makeEngine(Opts);
  IR J = foldable();
  E0->optimize(*J.M);
  EXPECT_NE(print(*J.M).find("alloca"), std::string::npos);
}

TEST(EngineTest, DebuggerSupport) {
  EngineOptions Opts;
  Opts.DebuggerSupport = true;
  auto E = makeEngine(Opts);
  ASSERT_TRUE(E);
  auto U = compile(*E, returning(42), {}, {"answer"});
  ASSERT_TRUE(U);
  EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 42);
}

/// Sets an environment variable for the scope.
struct ScopedEnv {
  std::string Name;
  std::optional<std::string> Saved;
  ScopedEnv(const std::string &Name, const std::string &Value) : Name(Name) {
    if (const char *Old = std::getenv(Name.c_str()))
      Saved = Old;
    ::setenv(Name.c_str(), Value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (Saved)
      ::setenv(Name.c_str(), Saved->c_str(), 1);
    else
      ::unsetenv(Name.c_str());
  }
};

TEST(EngineTest, PerfSupport) {
  TempDir Dir;
  ScopedEnv Env("JITDUMPDIR", Dir.Path.string());
  std::string Map = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
  bool HadMap = fs::exists(Map);
  {
    EngineOptions Opts;
    Opts.PerfSupport = true;
    auto E = makeEngine(Opts);
    ASSERT_TRUE(E);
    auto U = compile(*E, returning(42), {}, {"answer"});
    ASSERT_TRUE(U);
    EXPECT_EQ(fn<int32_t()>(*U, "answer")(), 42);
    EXPECT_TRUE(fs::exists(Dir.Path / ".debug" / "jit"));
    EXPECT_NE(readFile(Map).find(" answer\n"), std::string::npos);

    // The jitdump state is process-wide: a second engine with perf
    // support writes the perf map only (and does not fail).
    std::string Error;
    auto Second = createEngine(Opts, Error);
    ASSERT_TRUE(Second) << Error;
    auto U2 =
        compile(*Second, returning(7, "second_answer"), {}, {"second_answer"});
    ASSERT_TRUE(U2);
    EXPECT_EQ(fn<int32_t()>(*U2, "second_answer")(), 7);
    EXPECT_NE(readFile(Map).find(" second_answer\n"), std::string::npos);
  }
  if (!HadMap)
    fs::remove(Map);
  // Released with the engine.
  EngineOptions Opts;
  Opts.PerfSupport = true;
  auto E = makeEngine(Opts);
  EXPECT_TRUE(E);
  E.reset();
  if (!HadMap)
    fs::remove(Map);
}

TEST(EngineTest, PerfSupportFailureIsAnError) {
  TempDir Dir;
  overwrite(Dir.Path / "file", "x");
  ScopedEnv Env("JITDUMPDIR", (Dir.Path / "file").string());
  EngineOptions Opts;
  Opts.PerfSupport = true;
  std::string Error;
  EXPECT_FALSE(createEngine(Opts, Error));
  EXPECT_NE(Error.find("perf support"), std::string::npos) << Error;
  // Nothing was left claimed.
  ScopedEnv Env2("JITDUMPDIR", Dir.Path.string());
  EXPECT_TRUE(createEngine(Opts, Error)) << Error;
  fs::remove("/tmp/perf-" + std::to_string(::getpid()) + ".map");
}

} // namespace
