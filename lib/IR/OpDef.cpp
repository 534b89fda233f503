// OpDef queries and the OpRegistry.
#include "tensorc/IR/OpDef.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc {

std::string_view opIdName(OpId id) {
  switch (id) {
#define TENSORC_OP(id, name)                                                                       \
  case OpId::id:                                                                                   \
    return name;
#include "tensorc/IR/OpList.def"
#undef TENSORC_OP
  }
  return "?";
}

SymInt dataDependentDim() { return SymInt::symbol("?"); }
bool isDataDependentDim(const SymInt &dim) { return dim.symbolName() == std::optional<std::string>("?"); }

const Attribute &AttrReader::attr(const std::string &name) const {
  static const Attribute none;
  auto it = attrs_.find(name);
  return it == attrs_.end() ? none : it->second;
}

Expected<std::vector<int64_t>> AttrReader::getStaticInts(const std::string &name) const {
  const Attribute &value = attr(name);
  if (!value.isInts())
    return makeError("attribute '", name, "' is not an int list");
  std::vector<int64_t> result;
  for (const SymInt &entry : value.asInts()) {
    std::optional<int64_t> constant = entry.constant();
    if (!constant)
      return makeError("attribute '", name, "' entry ", entry, " is symbolic");
    result.push_back(*constant);
  }
  return result;
}

const ParamSpec *OpDef::findParam(std::string_view paramName) const {
  for (const ParamSpec &param : params)
    if (param.name == paramName)
      return &param;
  return nullptr;
}

size_t OpDef::numTensorParams() const {
  size_t count = 0;
  for (const ParamSpec &param : params)
    count += param.isTensor();
  return count;
}

bool OpDef::hasTensorList() const {
  for (const ParamSpec &param : params)
    if (param.kind == ParamSpec::Kind::TensorList)
      return true;
  return false;
}

Status OpRegistry::add(OpDef def) {
  if (byName_.count(def.name))
    return makeError("op '", def.name, "' is defined twice");
  if (byId_.count(def.id))
    return makeError("op id of '", def.name, "' is defined twice");
  if (!def.infer)
    return makeError("op '", def.name, "' has no shape inference");
  size_t lists = 0;
  for (const ParamSpec &param : def.params)
    lists += param.kind == ParamSpec::Kind::TensorList;
  if (lists > 1)
    return makeError("op '", def.name, "' has more than one tensor-list parameter");
  auto owned = std::make_unique<OpDef>(std::move(def));
  byName_[owned->name] = owned.get();
  byId_[owned->id] = owned.get();
  defs_.push_back(std::move(owned));
  return Status::ok();
}

Status OpRegistry::setGradient(OpId id, GradientFn rule) {
  for (auto &def : defs_) {
    if (def->id != id)
      continue;
    if (def->gradient)
      return makeError("op '", def->name, "' has two gradient rules");
    def->gradient = rule;
    return Status::ok();
  }
  return makeError("gradient rule for undefined op ", opIdName(id));
}

const OpDef *OpRegistry::lookup(std::string_view name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

const OpDef *OpRegistry::get(OpId id) const {
  auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : it->second;
}

std::vector<std::string> OpRegistry::missingOps() const {
  std::vector<std::string> missing;
#define TENSORC_OP(id, name)                                                                       \
  if (!byId_.count(OpId::id))                                                                      \
    missing.push_back(name);
#include "tensorc/IR/OpList.def"
#undef TENSORC_OP
  return missing;
}

} // namespace tensorc
