//===- registry.cpp - The global function registry -------------------------===//

#include "vmjit/runtime/registry.h"

#include <algorithm>
#include <fmt/format.h>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace vmjit {

struct Registry::Impl {
  mutable std::shared_mutex Mutex;
  std::unordered_map<std::string, Function> Functions;
};

Registry::Registry() : I(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

Registry &Registry::global() {
  // Never destroyed: functions may be looked up during static destruction.
  static Registry *R = new Registry();
  return *R;
}

void Registry::add(std::string Name, Function F, bool AllowOverride) {
  if (!F.defined())
    throwError("ValueError",
               fmt::format("cannot register a null function as '{}'", Name));
  std::unique_lock Lock(I->Mutex);
  auto [It, Inserted] = I->Functions.try_emplace(Name, F);
  if (Inserted)
    return;
  if (!AllowOverride)
    throwError("ValueError",
               fmt::format("a global function named '{}' is already "
                           "registered",
                           Name));
  It->second = std::move(F);
}

void Registry::addDefaults(const Registry &From) {
  if (&From == this)
    return;
  std::scoped_lock Lock(I->Mutex, From.I->Mutex);
  for (const auto &[Name, F] : From.I->Functions)
    I->Functions.try_emplace(Name, F);
}

std::optional<Function> Registry::find(std::string_view Name) const {
  std::shared_lock Lock(I->Mutex);
  auto It = I->Functions.find(std::string(Name));
  if (It == I->Functions.end())
    return std::nullopt;
  return It->second;
}

bool Registry::remove(std::string_view Name) {
  std::unique_lock Lock(I->Mutex);
  return I->Functions.erase(std::string(Name)) != 0;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> Names;
  {
    std::shared_lock Lock(I->Mutex);
    Names.reserve(I->Functions.size());
    for (const auto &KV : I->Functions)
      Names.push_back(KV.first);
  }
  std::sort(Names.begin(), Names.end());
  return Names;
}

namespace {
struct TvmAbiVariants {
  std::mutex Mutex;
  std::unordered_map<const FunctionObj *, Function> ByStandard;
};
TvmAbiVariants &tvmAbiVariants() {
  // Never destroyed, as the global registry.
  static auto *V = new TvmAbiVariants();
  return *V;
}
} // namespace

void setTvmAbiVariant(const Function &Standard, Function Variant) {
  TvmAbiVariants &V = tvmAbiVariants();
  std::lock_guard Lock(V.Mutex);
  V.ByStandard.insert_or_assign(Standard.get(), std::move(Variant));
}

std::optional<Function> tvmAbiVariant(const Function &F) {
  TvmAbiVariants &V = tvmAbiVariants();
  std::lock_guard Lock(V.Mutex);
  auto It = V.ByStandard.find(F.get());
  if (It == V.ByStandard.end())
    return std::nullopt;
  return It->second;
}

} // namespace vmjit
