// Reverse-mode differentiation of a graph: the joint forward + backward graph, and its partition
// into a forward graph (which also returns the tensors the backward needs) and a backward graph.
#pragma once

#include "tensorc/IR/Graph.h"

#include <set>
#include <string>
#include <vector>

namespace tensorc::autodiff {

/// Forward and backward in one graph (AOTAutograd's joint graph): the forward graph's nodes come
/// first, then the backward's. Outputs: the forward outputs, then one gradient per `wrt`.
struct JointGraph {
  Graph graph;
  size_t numForwardNodes = 0;
  size_t numForwardOutputs = 0;
  std::vector<std::string> wrt;
  /// Placeholders seeding the output gradients ("tangent_<output>"); empty for a scalar loss,
  /// whose gradient is seeded with 1.
  std::vector<std::string> tangents;
};

struct GradOptions {
  /// Placeholders to differentiate with respect to (floating point).
  std::vector<std::string> wrt;
  /// The graph has one scalar output, the loss, seeded with 1; otherwise each output gets a
  /// tangent placeholder.
  bool scalarLoss = true;
};

/// Differentiates `forward` (decomposed to primitive ops) with the registry's gradient rules.
/// Errors name the node whose op has no rule, and an unknown or non-float `wrt`.
Expected<JointGraph> buildJointGraph(const Graph &forward, const GradOptions &options,
                                     const OpRegistry &registry);

/// How the forward decides what the backward reads.
enum class PartitionKind {
  Default, // save every forward value the backward reads (what eager autograd keeps)
  MinCut,  // save the cheapest cut; recompute elementwise ops and views in the backward
};
Expected<PartitionKind> parsePartitionKind(const std::string &name);

/// A partition of a joint graph.
struct Partition {
  PartitionKind kind = PartitionKind::Default;
  /// Forward values the backward reads (placeholders excluded: they stay alive anyway).
  std::vector<std::string> saved;
  /// Forward nodes the backward computes again from saved values instead.
  std::vector<std::string> recomputed;
  /// Bytes of `saved` with every symbol bound to the hint (see partitionJoint).
  int64_t savedBytes = 0;
  /// primals -> (forward outputs..., saved...)
  Graph forward;
  /// (saved..., tangents...) plus the primals it reads -> gradients
  Graph backward;
  /// The joint graph rebuilt so that the backward reads only saved and recomputed values: what
  /// a training step compiles (one graph, so that scheduling and buffer planning see it whole).
  Graph joint;
};

/// Partitions `joint`. Sizes of symbolic dims count as `symbolHint` each (for choosing and
/// reporting; the decision does not depend on it much, since every activation scales alike).
Expected<Partition> partitionJoint(const JointGraph &joint, PartitionKind kind,
                                   int64_t symbolHint = 64);

} // namespace tensorc::autodiff
