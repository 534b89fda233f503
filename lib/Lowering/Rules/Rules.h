// The lowering rules, one file per op family, and the table that holds them by OpId: each op of
// OpList.def is either lowered by a rule or listed as a fallback with its reason, in its family's
// file (a new rule is a change to that one file).
#pragma once

#include "../LowerContext.h"
#include "tensorc/Lowering/LoweringRules.h"

#include <array>
#include <optional>

namespace tensorc::loop {

/// Lowers one node: defines its results in the context (loaders, buffers, nodes), or falls back
/// with LowerContext::fallback for the cases it does not handle, saying why.
using LowerFn = Status (*)(LowerContext &context, const Node &node);

/// Every op's rule or fallback reason, by OpId.
class RuleTable {
public:
  struct Entry {
    LowerFn rule = nullptr;
    std::string fallbackReason; // when there is no rule
    const char *family = nullptr;
  };
  void setFamily(const char *family) { family_ = family; }
  /// `rule` lowers each of `ids`.
  void add(std::initializer_list<OpId> ids, LowerFn rule);
  /// `ids` run on their reference kernels, for `reason`.
  void fallback(std::initializer_list<OpId> ids, const std::string &reason);
  const Entry &get(OpId id) const { return entries_[size_t(id)]; }
  /// Ops registered twice, or never: both are errors (the union must be OpList.def exactly).
  Status check() const;

private:
  std::array<Entry, kNumOps> entries_;
  std::vector<OpId> duplicates_;
  const char *family_ = nullptr;
};

/// The rules, built once; an incomplete table is an internal error.
Expected<const RuleTable *> ruleTable();

// The families (lib/Lowering/Rules/<Family>.cpp).
void addCreationRules(RuleTable &table);
void addPointwiseRules(RuleTable &table);
void addReductionRules(RuleTable &table);
void addViewRules(RuleTable &table);
void addGemmConvRules(RuleTable &table);
void addPoolingRules(RuleTable &table);
void addAttentionRules(RuleTable &table);
void addIndexingRules(RuleTable &table);
void addExternRules(RuleTable &table);

/// The loop IR op of an elementwise graph op, if it is one (Pointwise.cpp).
std::optional<UnaryOp> unaryOpFor(OpId id);
std::optional<BinaryOp> binaryOpFor(OpId id);
/// Ops whose lowering is a pointwise function of their inputs at the same index, which a GEMM
/// epilogue can absorb (Pointwise.cpp).
bool isPointwiseOp(OpId id);

} // namespace tensorc::loop
