// The rule table: every op's rule or fallback, registered by the family files and checked complete.
#include "Rules.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::loop {

void RuleTable::add(std::initializer_list<OpId> ids, LowerFn rule) {
  for (OpId id : ids) {
    Entry &entry = entries_[size_t(id)];
    if (entry.family)
      duplicates_.push_back(id);
    entry = {rule, "", family_};
  }
}

void RuleTable::fallback(std::initializer_list<OpId> ids, const std::string &reason) {
  for (OpId id : ids) {
    Entry &entry = entries_[size_t(id)];
    if (entry.family)
      duplicates_.push_back(id);
    entry = {nullptr, reason, family_};
  }
}

Status RuleTable::check() const {
  std::vector<std::string> missing, twice;
  for (size_t i = 0; i < kNumOps; ++i)
    if (!entries_[i].family || (!entries_[i].rule && entries_[i].fallbackReason.empty()))
      missing.emplace_back(opIdName(OpId(i)));
  for (OpId id : duplicates_)
    twice.emplace_back(opIdName(id));
  if (!missing.empty())
    return makeError("internal: ops with neither a lowering rule nor a listed fallback: ",
                     join(missing, ", "));
  if (!twice.empty())
    return makeError("internal: ops registered twice in the lowering rules: ", join(twice, ", "));
  return Status::ok();
}

Expected<const RuleTable *> ruleTable() {
  static const RuleTable table = [] {
    RuleTable built;
    auto family = [&](const char *name, void (*add)(RuleTable &)) {
      built.setFamily(name);
      add(built);
    };
    family("creation", addCreationRules);
    family("pointwise", addPointwiseRules);
    family("reductions", addReductionRules);
    family("views", addViewRules);
    family("gemm-conv", addGemmConvRules);
    family("pooling", addPoolingRules);
    family("attention", addAttentionRules);
    family("indexing", addIndexingRules);
    family("extern", addExternRules);
    return built;
  }();
  static const Status complete = table.check();
  if (!complete)
    return Error(complete.message());
  return &table;
}

Expected<std::vector<LoweringRuleInfo>> describeLoweringRules() {
  TC_ASSIGN_OR_RETURN(const RuleTable *table, ruleTable());
  std::vector<LoweringRuleInfo> infos;
  for (size_t i = 0; i < kNumOps; ++i) {
    const RuleTable::Entry &entry = table->get(OpId(i));
    infos.push_back({OpId(i), entry.family, entry.rule != nullptr, entry.fallbackReason});
  }
  return infos;
}

} // namespace tensorc::loop
