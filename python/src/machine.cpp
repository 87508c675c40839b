//===- machine.cpp - _vmjit.Machine: a VM as Python drives it -------------===//
//
// Creating a VM (mode, JIT options, libraries, limits), TVM's stateful API,
// saved functions, the instrument, statistics, interrupt and the timing
// loop of time_evaluator (the kernel tier: machine_kernels.cpp). Every call
// into the VM runs with the GIL released and the Machine's lock held
// (runUnlocked).
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/report/stats_json.h"
#include "vmjit/vm/program.h"
#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/tier_manager.h"
#endif

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <chrono>
#include <thread>

namespace vmjit::python {

namespace {

/// What VirtualMachine(...) was given (vmjit/virtual_machine.py checks and
/// fills it).
struct MachineOptions {
  std::string Mode = "tiered";
  int64_t TierThreshold = 0;
  int64_t BaselineThreshold = 0;
  int OptLevel = -1;
  std::string CacheDir;
  bool NoCache = false;
  std::vector<std::string> Libs;
  uint64_t MaxSteps = 0;
  double TimeoutSeconds = 0;
  /// The kernel tier (kernels=, wait_kernels=, fast_math=).
  std::string Kernels;
  bool FindKernels = false;
  std::string Program;
  bool WaitKernels = false;
  bool FastMath = false;
  /// kernels=False: TVM's machine code, also for a `vmjit compile
  /// --kernels` library's kernels (vm::dropCompiledKernels).
  bool NoKernels = false;
};

KernelChoice kernelChoiceOf(const MachineOptions &O) {
  KernelChoice C;
  C.Bitcode = O.Kernels;
  C.FindBeside = O.FindKernels;
  C.Program = O.Program;
  C.Wait = O.WaitKernels;
  C.FastMath = O.FastMath;
  C.CacheDir = O.CacheDir;
  C.NoCache = O.NoCache;
  return C;
}

/// Gives `Message` as a RuntimeWarning ("" none).
void warnRuntime(const std::string &Message) {
  if (!Message.empty() &&
      PyErr_WarnEx(PyExc_RuntimeWarning, Message.c_str(), 1) < 0)
    throw py::error_already_set();
}

vm::CallLimits limitsOf(uint64_t MaxSteps, double TimeoutSeconds) {
  vm::CallLimits L;
  L.MaxSteps = MaxSteps;
  L.Timeout = std::chrono::nanoseconds(
      static_cast<int64_t>(TimeoutSeconds * 1e9));
  return L;
}

void enableTier(Machine &M, const MachineOptions &O, vm::ExecMode Mode) {
#ifdef VMJIT_HAVE_JIT
  if (Mode == vm::ExecMode::Bytecode)
    return;
  jit::JITOptions JO;
  JO.Mode = Mode;
  JO.Threshold = O.TierThreshold;
  JO.BaselineThreshold = O.BaselineThreshold;
  if (O.OptLevel >= 0)
    JO.OptLevel = O.OptLevel;
  JO.CacheDir = O.CacheDir;
  JO.NoCache = O.NoCache;
  jit::enableJIT(*M.VM, JO);
#else
  (void)M, (void)O, (void)Mode;
#endif
}

std::shared_ptr<Machine> createMachine(const vm::OpenedProgram &P,
                                       const MachineOptions &O) {
  std::optional<vm::ExecMode> Mode = vm::parseExecMode(O.Mode);
  if (!Mode)
    throw py::value_error(fmt::format(
        "mode '{}': expected 'bytecode', 'baseline', 'compiled' or 'tiered'",
        O.Mode));
  auto M = std::make_shared<Machine>();
  M->Mode = O.Mode;
  std::string AotUnused; // why the program's ahead-of-time code is not used
  std::string KernelsUnused; // why the kernels named are not used
  {
    GilRelease NoGil;
    vm::VMOptions VO;
    VO.Libraries = P.Libraries;
    if (O.NoKernels) {
      vm::OpenedProgram Without = P;
      vm::dropCompiledKernels(Without);
      VO.Libraries = std::move(Without.Libraries);
    }
    for (const std::string &Path : O.Libs)
      VO.Libraries.push_back(KernelLibrary::load(Path));
    KernelsUnused = startKernelTier(*M, kernelChoiceOf(O), VO.Libraries);
    VO.Limits = limitsOf(O.MaxSteps, O.TimeoutSeconds);
    M->Options = VO;
    if (P.Aot && P.Aot->hasKernels())
      M->Aot = P.Aot;
    M->VM = vm::VirtualMachine::create(P.Exe, std::move(VO));
    // A `vmjit compile` library's code, where the mode runs native code;
    // the JIT otherwise.
    bool Attached = false;
    if (P.Aot && vm::modeRunsAotCode(*Mode)) {
      AotUnused = P.Aot->attach(*M->VM);
      Attached = AotUnused.empty();
    }
    if (!Attached)
      enableTier(*M, O, *Mode);
    M->AttachTier = [O, Mode = *Mode](Machine &Self) {
      enableTier(Self, O, Mode);
    };
  }
  if (!AotUnused.empty())
    warnRuntime(fmt::format("the program's ahead-of-time code is not used: {}",
                            AotUnused));
  warnRuntime(KernelsUnused);
  warnIfKernelsFailed(*M);
  return M;
}

std::vector<Any> toAnys(const py::tuple &Args) {
  std::vector<Any> Out;
  for (size_t I = 0; I < Args.size(); ++I)
    Out.push_back(toAny(Args[I].ptr(), I + 1));
  return Out;
}

py::object resultOf(const Any &V, const std::shared_ptr<Machine> &M) {
  PyObject *R = toPython(V, M);
  if (!R)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(R);
}

/// Runs `Body` on the machine; throws error_already_set if it failed.
template <typename F> void run(Machine &M, F &&Body) {
  if (!runUnlocked(M, std::forward<F>(Body)))
    throw py::error_already_set();
}

/// The instrument: TVM's callback signature, func(func, name, before,
/// result, *args) returning None/0 (continue) or 1 (skip the call).
/// `Callback` is kept alive by Machine::Instrument (so that the garbage
/// collector sees it); the function holds no Python reference, and can be
/// destroyed without the GIL.
vm::InstrumentFn makeInstrument(PyObject *Callback,
                                std::weak_ptr<Machine> Weak) {
  return [Callback, Weak](const vm::CallEvent &E) {
    GilAcquire Gil;
    std::shared_ptr<Machine> M = Weak.lock();
    try {
      py::tuple Args(4 + E.Args.size());
      Function Callee(ObjectPtr<Object>::share(E.VM.poolEntry(E.Callee)));
      Args[0] = py::reinterpret_steal<py::object>(
          makeValueFunction(std::move(Callee), M));
      Args[1] = py::str(E.CalleeName.data(), E.CalleeName.size());
      Args[2] = py::bool_(E.Before);
      Args[3] = E.Result ? resultOf(*E.Result, M) : py::none();
      for (size_t I = 0; I < E.Args.size(); ++I)
        Args[4 + I] = resultOf(Any(E.Args[I]), M);
      // Python may end this thread in the call (at interpreter exit).
      auto R = py::reinterpret_steal<py::object>(parkIfPythonEnds(
          [&] { return PyObject_Call(Callback, Args.ptr(), nullptr); }));
      if (!R)
        throw py::error_already_set();
      if (R.is_none())
        return vm::InstrumentAction::Continue;
      if (!PyLong_Check(R.ptr()))
        throw Error("TypeError",
                    fmt::format("the instrument returned a '{}': expected "
                                "None or a vmjit.InstrumentReturnKind "
                                "(NO_OP, SKIP_RUN)",
                                Py_TYPE(R.ptr())->tp_name));
      return PyLong_AsLongLong(R.ptr()) == 1 ? vm::InstrumentAction::SkipCall
                                             : vm::InstrumentAction::Continue;
    } catch (py::error_already_set &PyErr) {
      PyErr.restore();
      throw errorFromPython("the instrument");
    }
  };
}

void setInstrument(const std::shared_ptr<Machine> &Self, py::object Callback) {
  vm::InstrumentFn Fn;
  if (!Callback.is_none())
    Fn = makeInstrument(Callback.ptr(), Self);
  run(*Self, [&] { Self->VM->setInstrument(std::move(Fn)); });
  Self->Instrument = std::move(Callback); // the old one goes, with the GIL
}

/// The garbage collector's view of a Machine: its instrument callback,
/// which may refer back to the VirtualMachine that holds the Machine.
void machineTypeSetup(PyHeapTypeObject *Heap) {
  PyTypeObject *Type = &Heap->ht_type;
  Type->tp_flags |= Py_TPFLAGS_HAVE_GC;
  Type->tp_traverse = [](PyObject *Self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(Self));
    auto *Inst = reinterpret_cast<py::detail::instance *>(Self);
    if (Inst->get_value_and_holder().holder_constructed())
      Py_VISIT(py::cast<Machine &>(py::handle(Self)).Instrument.ptr());
    return 0;
  };
  Type->tp_clear = [](PyObject *Self) {
    auto *Inst = reinterpret_cast<py::detail::instance *>(Self);
    if (!Inst->get_value_and_holder().holder_constructed())
      return 0;
    Machine &M = py::cast<Machine &>(py::handle(Self));
    // A call running in another thread (through a function object) keeps
    // its instrument: the cycle is then left for a later collection.
    std::unique_lock<std::recursive_mutex> Lock(M.Lock, std::try_to_lock);
    if (!Lock.owns_lock())
      return 0;
    M.VM->setInstrument(nullptr);
    Lock.unlock();
    M.Instrument = py::none();
    return 0;
  };
}

/// time_evaluator's loop: seconds per call, one entry per repeat.
std::vector<double> timeCalls(Machine &M, const std::string &Name,
                              const py::tuple &PyArgs, int64_t Number,
                              int64_t Repeat, double MinRepeatMs,
                              double CooldownMs) {
  std::vector<Any> Args = toAnys(PyArgs);
  std::vector<AnyView> Views(Args.begin(), Args.end());
  std::vector<double> Times;
  run(M, [&] {
    using Clock = std::chrono::steady_clock;
    int64_t FuncIndex = M.VM->functionIndex(Name);
    M.VM->invoke(FuncIndex, Views); // warm-up: not timed
    for (int64_t R = 0; R < Repeat; ++R) {
      if (R > 0 && CooldownMs > 0)
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(CooldownMs));
      double Ms = 0;
      int64_t N = Number;
      for (;;) {
        auto Start = Clock::now();
        for (int64_t I = 0; I < N; ++I)
          M.VM->invoke(FuncIndex, Views);
        Ms = std::chrono::duration<double, std::milli>(Clock::now() - Start)
                 .count();
        if (Ms >= MinRepeatMs || N >= (int64_t(1) << 40))
          break;
        // Too short: scale the count up toward MinRepeatMs, as TVM does.
        N = std::max<int64_t>(N * 2, static_cast<int64_t>(
                                         N * MinRepeatMs / std::max(Ms, 1e-3) *
                                         1.1));
      }
      Times.push_back(Ms / 1000.0 / static_cast<double>(N));
    }
  });
  return Times;
}

/// vm.profile: one call of `Name` with the VM's per-callee profiler on
/// (bytecode functions run on the interpreter meanwhile). Returns the
/// call's own time in ns and (callee, calls, inclusive ns) per callee.
py::tuple profileCall(Machine &M, const std::string &Name,
                      const py::tuple &PyArgs) {
  std::vector<Any> Args = toAnys(PyArgs);
  std::vector<AnyView> Views(Args.begin(), Args.end());
  std::vector<vm::ProfileEntry> Entries;
  double TotalNs = 0;
  Any Result; // dropped with the GIL held
  run(M, [&] {
    vm::VirtualMachine &VM = *M.VM;
    const int64_t FuncIndex = VM.functionIndex(Name);
    VM.resetProfile();
    VM.setProfiling(true);
    struct ProfilingOff {
      vm::VirtualMachine &VM;
      ~ProfilingOff() { VM.setProfiling(false); }
    } Off{VM};
    const auto Start = std::chrono::steady_clock::now();
    Result = VM.invoke(FuncIndex, Views);
    TotalNs = std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - Start)
                  .count();
    Entries = VM.profile();
  });
  py::list Rows;
  for (const vm::ProfileEntry &E : Entries)
    Rows.append(py::make_tuple(E.Name, E.Calls, E.TotalNs));
  return py::make_tuple(TotalNs, Rows);
}

/// Machine.function(name, drop_result): the VM's function of a name, bound
/// to the machine. DropResult: a function returning None after the call
/// (TVM's save_function with include_return=False).
py::object boundFunction(std::shared_ptr<Machine> Self, const std::string &Name,
                         bool DropResult) {
  int64_t FuncIndex = -1;
  Function Fn;
  run(*Self, [&] {
    Fn = Self->VM->getFunction(Name); // throws LookupError
    if (!Self->VM->isSavedFunction(Name))
      FuncIndex = Self->VM->functionIndex(Name);
  });
  if (DropResult) {
    FuncIndex = -1;
    Fn = Function::fromPacked(
        Name, [Inner = std::move(Fn)](PackedArgs A, Any *Result) {
          Inner.callPacked(A.data(), A.size());
          Result->reset();
        });
  }
  return py::reinterpret_steal<py::object>(
      makeBoundFunction(Self, FuncIndex, std::move(Fn), Name));
}

/// Machine.wait_compiles(): waits for the kernel tier and the background
/// compiles queued so far (with those the kernels' arrival queued).
void waitCompiles(Machine &Self) {
  {
    GilRelease NoGil;
    waitForKernels(Self);
#ifdef VMJIT_HAVE_JIT
    if (jit::TierManager *TM = jit::tierManagerOf(*Self.VM))
      TM->drain();
#endif
  }
  warnIfKernelsFailed(Self);
}

/// Machine.stats(): the statistics document and its table.
py::tuple machineStats(Machine &Self) {
#ifdef VMJIT_HAVE_JIT
  constexpr bool Counts = true;
#else
  constexpr bool Counts = false;
#endif
  nlohmann::ordered_json Stats;
  std::string Table;
  run(Self, [&] {
    nlohmann::ordered_json VMStats = report::vmStatsJson(*Self.VM, Counts);
    Table = report::vmStatsTable(VMStats);
    addKernelTierStats(Self, Stats, Table);
    if (!Self.BindStats.empty())
      Stats["bind"] = nlohmann::ordered_json::parse(Self.BindStats);
    Stats.update(VMStats);
  });
  warnIfKernelsFailed(Self);
  return py::make_tuple(Stats.dump(), Table);
}

/// Machine.thresholds(): the tier thresholds in effect (empty without a
/// tier manager).
py::dict tierThresholds(Machine &Self) {
  py::dict Thresholds;
#ifdef VMJIT_HAVE_JIT
  if (jit::TierManager *TM = jit::tierManagerOf(*Self.VM)) {
    Thresholds["baseline_threshold"] = TM->threshold();
    Thresholds["tier_threshold"] = TM->options().Threshold;
  }
#else
  (void)Self;
#endif
  return Thresholds;
}

void registerMachineOptions(py::module_ &M) {
  py::class_<MachineOptions>(M, "MachineOptions")
      .def(py::init<>())
      .def_readwrite("mode", &MachineOptions::Mode)
      .def_readwrite("tier_threshold", &MachineOptions::TierThreshold)
      .def_readwrite("baseline_threshold", &MachineOptions::BaselineThreshold)
      .def_readwrite("opt_level", &MachineOptions::OptLevel)
      .def_readwrite("cache_dir", &MachineOptions::CacheDir)
      .def_readwrite("no_cache", &MachineOptions::NoCache)
      .def_readwrite("libs", &MachineOptions::Libs)
      .def_readwrite("max_steps", &MachineOptions::MaxSteps)
      .def_readwrite("timeout", &MachineOptions::TimeoutSeconds)
      .def_readwrite("kernels", &MachineOptions::Kernels)
      .def_readwrite("find_kernels", &MachineOptions::FindKernels)
      .def_readwrite("no_kernels", &MachineOptions::NoKernels)
      .def_readwrite("program", &MachineOptions::Program)
      .def_readwrite("wait_kernels", &MachineOptions::WaitKernels)
      .def_readwrite("fast_math", &MachineOptions::FastMath);
}

using MachineClass = py::class_<Machine, std::shared_ptr<Machine>>;

/// TVM's stateful API: set_input, invoke_stateful, get_output and
/// save_function.
void defineStatefulApi(MachineClass &Cls) {
  Cls.def("set_input",
          [](Machine &Self, const std::string &Name, const py::tuple &Args) {
            std::vector<Any> Values = toAnys(Args);
            run(Self, [&] { Self.VM->setInput(Name, std::move(Values)); });
          })
      .def("invoke_stateful",
           [](std::shared_ptr<Machine> Self, const std::string &Name) {
             Any R;
             run(*Self, [&] { R = Self->VM->invokeStateful(Name); });
             return resultOf(R, Self);
           })
      .def("get_output",
           [](std::shared_ptr<Machine> Self, const std::string &Name) {
             Any R;
             run(*Self, [&] { R = Self->VM->getOutput(Name); });
             return resultOf(R, Self);
           })
      .def("save_function",
           [](Machine &Self, const std::string &Name, const std::string &Saved,
              const py::tuple &Args) {
             std::vector<Any> Values = toAnys(Args);
             run(Self, [&] {
               Self.VM->saveFunction(Name, Saved, std::move(Values));
             });
           });
}

void registerMachineClass(py::module_ &M) {
  MachineClass Cls(M, "Machine", py::custom_type_setup(machineTypeSetup));
  Cls.def(py::init(&createMachine))
      .def_readonly("mode", &Machine::Mode)
      .def("function", &boundFunction);
  defineStatefulApi(Cls);
  registerMachineBind(Cls);
  Cls.def("set_instrument", &setInstrument)
      .def("set_limits",
           [](Machine &Self, uint64_t MaxSteps, double Timeout) {
             run(Self, [&] {
               Self.VM->setCallLimits(limitsOf(MaxSteps, Timeout));
             });
           })
      .def("interrupt", [](Machine &Self) { Self.VM->interrupt(); })
      .def("clear_interrupt", [](Machine &Self) { Self.VM->clearInterrupt(); })
      .def("steps_taken", [](Machine &Self) { return Self.VM->stepsTaken(); })
      .def("wait_compiles", &waitCompiles)
      .def("stats", &machineStats)
      .def("kernel_tier", &kernelTierHandle)
      .def("thresholds", &tierThresholds)
      .def("profile_call", &profileCall)
      .def("time_calls", [](Machine &Self, const std::string &Name,
                            const py::tuple &Args, int64_t Number,
                            int64_t Repeat, double MinRepeatMs,
                            double CooldownMs) {
        return timeCalls(Self, Name, Args, Number, Repeat, MinRepeatMs,
                         CooldownMs);
      });
}

/// _stop_background_compiles, jit_available and baseline_available.
void registerJitState(py::module_ &M) {
  M.def("_stop_background_compiles", [] {
#ifdef VMJIT_HAVE_JIT
    GilRelease NoGil;
    jit::stopBackgroundCompiles();
#endif
  });
#ifdef VMJIT_HAVE_JIT
  M.attr("jit_available") = true;
  M.attr("baseline_available") = jit::baselineAvailable();
#else
  M.attr("jit_available") = false;
  M.attr("baseline_available") = false;
#endif
}

} // namespace

void registerMachine(py::module_ &M) {
  registerMachineOptions(M);
  registerMachineClass(M);
  registerJitState(M);
}

} // namespace vmjit::python
