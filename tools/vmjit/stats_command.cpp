//===- stats_command.cpp - vmjit stats -------------------------------------===//
//
// vmjit stats PROG [--json]: functions, sizes, constants and instruction
// counts of an executable.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/program.h"

#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

namespace vmjit::tool {
namespace {

std::string constantKind(const Any &C) {
  switch (C.typeIndex()) {
  case kVMJITNone:
    return "null";
  case kVMJITInt:
    return "int";
  case kVMJITFloat:
    return "float";
  case kVMJITBool:
    return "bool";
  case kVMJITSmallStr:
  case kVMJITStr:
    return "str";
  case kVMJITDataType:
    return "dtype";
  case kVMJITShape:
    return "shape";
  case kVMJITTensor:
    return "tensor";
  default:
    return std::string(C.typeName());
  }
}

nlohmann::ordered_json collectStats(const std::string &Name, uint64_t Bytes,
                                    vm::ProgramFormat Format,
                                    const vm::Executable &Exe) {
  using nlohmann::ordered_json;
  ordered_json J;
  J["file"] = Name;
  J["file_bytes"] = Bytes;
  J["format"] = std::string(vm::programFormatName(Format));

  std::map<std::string, int64_t> KindCounts;
  ordered_json Fns = ordered_json::array();
  for (size_t I = 0; I < Exe.functions().size(); ++I) {
    const vm::FunctionInfo &F = Exe.function(static_cast<int64_t>(I));
    std::string Kind(vm::functionKindName(F.Kind));
    ++KindCounts[Kind];
    ordered_json E;
    E["index"] = I;
    E["name"] = F.Name;
    E["kind"] = Kind;
    if (F.Kind == vm::FunctionKind::Native) {
      // TVM's VMTIR functions: arguments and result in a register file.
      E["params"] = F.NumParams;
      E["registers"] = F.RegisterFileSize;
    }
    if (F.Kind == vm::FunctionKind::Bytecode) {
      int64_t Calls = 0, Words = 0;
      for (int64_t P = F.StartInstr; P < F.EndInstr; ++P) {
        vm::InstrView In = Exe.instr(P);
        Calls += In.opcode() == vm::Opcode::Call;
        Words += In.numWords();
      }
      E["params"] = F.NumParams;
      E["registers"] = F.RegisterFileSize;
      E["instructions"] = F.numInstrs();
      E["calls"] = Calls;
      E["words"] = Words;
    }
    Fns.push_back(std::move(E));
  }
  ordered_json Counts = ordered_json::object();
  for (const char *K : {"bytecode", "packed", "native"})
    Counts[K] = KindCounts[K];
  J["functions"] = {{"count", Exe.functions().size()}, {"by_kind", Counts}};

  std::map<std::string, int64_t> ConstCounts;
  uint64_t TensorBytes = 0;
  for (const Any &C : Exe.constants()) {
    ++ConstCounts[constantKind(C)];
    if (auto T = C.as<Tensor>())
      TensorBytes += T->nbytes();
  }
  J["constants"] = {{"count", Exe.constants().size()},
                    {"by_kind", ConstCounts},
                    {"tensor_bytes", TensorBytes}};
  J["instructions"] = Exe.numInstrs();
  J["code_words"] = Exe.code().size();
  J["function_table"] = std::move(Fns);
  return J;
}

void printText(const nlohmann::ordered_json &J) {
  fmt::print("file: {} ({}, {} bytes)\n", J["file"].get<std::string>(),
             J["format"].get<std::string>(), J["file_bytes"].get<uint64_t>());
  const auto &F = J["functions"];
  fmt::print("functions: {} ({} bytecode, {} packed, {} native)\n",
             F["count"].get<int64_t>(), F["by_kind"]["bytecode"].get<int64_t>(),
             F["by_kind"]["packed"].get<int64_t>(),
             F["by_kind"]["native"].get<int64_t>());
  const auto &C = J["constants"];
  std::string Kinds;
  for (const auto &[K, V] : C["by_kind"].items())
    Kinds += fmt::format("{}{} {}", Kinds.empty() ? "" : ", ", V.get<int64_t>(),
                         K);
  fmt::print("constants: {}{}{}, tensor data {} bytes\n",
             C["count"].get<int64_t>(), Kinds.empty() ? "" : " (" + Kinds,
             Kinds.empty() ? "" : ")", C["tensor_bytes"].get<uint64_t>());
  fmt::print("instructions: {} ({} words)\n",
             J["instructions"].get<int64_t>(), J["code_words"].get<int64_t>());
  fmt::print("\n{:>5}  {:<8}  {:<24}  {:>6}  {:>9}  {:>12}  {:>6}\n", "index",
             "kind", "name", "params", "registers", "instructions", "calls");
  for (const auto &E : J["function_table"]) {
    auto Num = [&](const char *K) {
      return E.contains(K) ? std::to_string(E[K].get<int64_t>())
                           : std::string("-");
    };
    fmt::print("{:>5}  {:<8}  {:<24}  {:>6}  {:>9}  {:>12}  {:>6}\n",
               E["index"].get<int64_t>(), E["kind"].get<std::string>(),
               E["name"].get<std::string>(), Num("params"), Num("registers"),
               Num("instructions"), Num("calls"));
  }
}

} // namespace

void addStatsCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("stats", "functions, sizes, constants and "
                                          "instruction counts");
  auto Input = std::make_shared<std::string>();
  auto Json = std::make_shared<bool>(false);
  Cmd->add_option("PROG", *Input,
                  "the program, any format vmjit reads (by content; - reads standard input)")
      ->required();
  Cmd->add_flag("--json", *Json, "print one JSON object instead of a table");
  Cmd->callback([&Run, Input, Json] {
    Run = [Input, Json] {
      try {
        nlohmann::ordered_json J;
        if (vm::isStreamPath(*Input)) {
          // Standard input or a pipe: read once, measured as read.
          const std::string Name = vm::inputName(*Input);
          std::string Bytes =
              vm::readInput(*Input, vm::LoadOptions().MaxFileBytes);
          auto Prog = vm::openProgramBytes(Bytes, Name);
          J = collectStats(Name, Bytes.size(),
                           vm::detectProgramFormat(Bytes, Name), *Prog.Exe);
        } else {
          auto Exe = vm::loadProgram(*Input);
          std::error_code Ec;
          auto Size = std::filesystem::file_size(*Input, Ec);
          J = collectStats(*Input, Ec ? 0 : Size,
                           vm::detectProgramFormat(*Input), *Exe);
        }
        if (*Json)
          fmt::print("{}\n", J.dump());
        else
          printText(J);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
