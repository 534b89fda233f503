// Common-subexpression elimination: a node equal to an earlier one (op, operands, attributes) is
// replaced by it.
#include "tensorc/IR/Rewriter.h"
#include "tensorc/Transforms/CSE.h"

#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <map>
#include <set>
#include <tuple>

namespace tensorc {

namespace {

/// What makes two nodes compute the same thing: the op, the operands in the graph being built
/// (so earlier merges carry over) and the attributes as printed (printing distinguishes what
/// `==` may not: 0.0 and -0.0, an int and a float scalar).
using NodeKey = std::tuple<OpId, std::vector<const Value *>, std::string>;

std::string attributeKey(const AttrMap &attrs) {
  std::string key;
  for (const auto &[name, value] : attrs)
    key += strCat(name, "=", value.str(), ";");
  return key;
}

/// Symbols that some node's attributes mention (`view(x, [n_d0, 2])`). A data-dependent node
/// whose result symbols appear here is not merged: its users would need their attributes
/// rewritten to the kept node's symbols.
std::set<std::string> symbolsInAttributes(const Graph &graph) {
  std::set<std::string> symbols;
  for (const auto &node : graph.nodes())
    for (const auto &[name, value] : node->attrs())
      if (value.isInts())
        for (const SymInt &dim : value.asInts())
          dim.collectSymbols(symbols);
  return symbols;
}

/// Why `duplicate` cannot be replaced by `kept`, or "" when it can. With the same op, operands
/// and attributes, inference gives the same types except for data-dependent dims, which carry
/// symbols named after their node: the duplicate's symbols then stand for the kept node's, and
/// that is only sound when no attribute mentions them.
Expected<std::string> whyNotMergeable(const Node &kept, const Node &duplicate,
                                      const std::set<std::string> &attributeSymbols) {
  if (!duplicate.op().dataDependentShape)
    return std::string();
  std::vector<const TensorType *> inputTypes;
  for (const Value *input : kept.inputs())
    inputTypes.push_back(input ? &input->type() : nullptr);
  AttrMap attrs = kept.attrs();
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> inferred, inferTypes(kept.op(), inputTypes, attrs));
  for (size_t i = 0; i < inferred.size() && i < duplicate.numOutputs(); ++i) {
    const TensorType &type = duplicate.output(i)->type();
    for (size_t d = 0; d < inferred[i].rank() && d < type.rank(); ++d) {
      if (!isDataDependentDim(inferred[i].shape[d]))
        continue;
      std::set<std::string> symbols;
      type.shape[d].collectSymbols(symbols);
      for (const std::string &symbol : symbols)
        if (attributeSymbols.count(symbol))
          return strCat("its data-dependent dim ", symbol, " appears in an attribute");
    }
  }
  return std::string();
}

} // namespace

Status eliminateCommonSubexpressions(Graph &graph, const PassContext &) {
  std::set<std::string> attributeSymbols = symbolsInAttributes(graph);

  // The graph is rebuilt rather than edited: a merged node is simply not copied, and its users
  // take the kept node's results (their types are inferred again, so a data-dependent symbol of
  // the merged node is replaced by the kept node's).
  Graph target;
  TC_ASSIGN_OR_RETURN(ValueMap mapped, ValueMap::withInputs(graph, target));

  // Keyed by pointers for lookup only; never iterated.
  std::map<NodeKey, Node *> seen;
  bool changed = false;
  for (const auto &node : graph.nodes()) {
    std::vector<Value *> operands = mapped.operands(*node);
    NodeKey key(node->opId(), std::vector<const Value *>(operands.begin(), operands.end()),
                attributeKey(node->attrs()));

    if (auto it = seen.find(key); it != seen.end()) {
      Node *kept = it->second;
      TC_ASSIGN_OR_RETURN(std::string reason, whyNotMergeable(*kept, *node, attributeSymbols));
      if (reason.empty()) {
        log::debug("cse", strCat("merged ", node->describe(), " into %", kept->name()));
        mapped.mapResults(*node, *kept);
        changed = true;
        continue;
      }
      log::debug("cse",
                 strCat("not merging ", node->describe(), " into %", kept->name(), ": ", reason));
    }

    TC_ASSIGN_OR_RETURN(Node * copy, copyNode(target, *node, std::move(operands)));
    mapped.mapResults(*node, *copy);
    seen.emplace(std::move(key), copy);
  }
  if (!changed)
    return Status::ok();

  target.setOutputs(mapped.map(graph.outputs()));
  graph = std::move(target);
  return Status::ok();
}

} // namespace tensorc
