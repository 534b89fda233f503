// The skeleton of the CPU's compile-time weight packing passes (PackGemmWeights.cpp,
// PackConvWeights.cpp): which template kernels read a packable weight view, where each packed copy
// goes (in the weight's place, or a new weight), and the kernels' argument lists.
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tensorc::cpu {

/// The data of the weight `view` reads when that is an f32 weight buffer with f32 data (what
/// compile-time packing takes), else nullptr.
inline const Tensor *packableWeight(const loop::LoopProgram &program,
                                    const loop::StridedView &view) {
  if (view.buffer < 0 || size_t(view.buffer) >= program.buffers.size())
    return nullptr;
  const loop::Buffer &buffer = program.buffers[size_t(view.buffer)];
  auto data = program.weights.find(buffer.name);
  if (buffer.kind != loop::Buffer::Kind::Weight || buffer.dtype != DType::F32 ||
      data == program.weights.end() || data->second.dtype() != DType::F32)
    return nullptr;
  return &data->second;
}

/// Whether every element a view reads, from `offset` with an (extent, stride) pair per dim, lies
/// inside `numel` elements: its lowest and highest do.
inline bool viewInside(int64_t offset,
                       std::initializer_list<std::pair<int64_t, int64_t>> extentsAndStrides,
                       int64_t numel) {
  int64_t lo = offset, hi = offset;
  for (auto [extent, stride] : extentsAndStrides) {
    int64_t reach = (extent - 1) * stride;
    (reach < 0 ? lo : hi) += reach;
  }
  return lo >= 0 && hi < numel;
}

/// For each scheduled template kernel whose node `keyOf(program, node)` gives a Key (with an `int
/// buffer`: the weight, and how to pack it; nodes with equal keys share one copy), makes
/// `pack(weight, key)` and calls `rewrite(node, key, target)` to point the node at buffer
/// `target`. The copy takes the weight's place when no program output, no other node and no
/// other operand of a packed node (`otherOperand(node)`) reads the weight, and `takesPlace(keys,
/// key)` says so for the weight's keys; otherwise it is a new weight named `<name><suffix>`
/// (then `<name><suffix>_1`, ...) added to the kernel's args. Returns the nodes rewritten.
template <typename Key, typename KeyOf, typename OtherOperand, typename TakesPlace, typename Pack,
          typename Rewrite>
Expected<int> packTemplateWeights(loop::LoopProgram &program, sched::Schedule &schedule,
                                  const std::string &suffix, KeyOf keyOf, OtherOperand otherOperand,
                                  TakesPlace takesPlace, Pack pack, Rewrite rewrite) {
  using loop::Buffer;
  std::map<Key, std::vector<std::pair<size_t, int>>> users; // key -> (kernel, node)
  for (size_t kernel = 0; kernel < schedule.kernels.size(); ++kernel) {
    const sched::Kernel &k = schedule.kernels[kernel];
    if (k.kind != sched::Kernel::Kind::Template || k.nodes.empty() || k.nodes[0] < 0 ||
        size_t(k.nodes[0]) >= program.nodes.size())
      continue;
    if (std::optional<Key> key = keyOf(program, program.nodes[size_t(k.nodes[0])]))
      users[*key].push_back({kernel, k.nodes[0]});
  }
  if (users.empty())
    return 0;

  std::map<int, std::set<Key>> keysOf;
  std::set<int> packedNodes;
  for (const auto &[key, list] : users) {
    keysOf[key.buffer].insert(key);
    for (const auto &[kernel, node] : list)
      packedNodes.insert(node);
  }
  std::set<int> sharedWeights(program.outputs.begin(), program.outputs.end());
  for (const loop::LoopNode &node : program.nodes) {
    bool packed = packedNodes.count(node.id) > 0;
    for (int buffer : node.reads())
      if (!packed || otherOperand(node) == buffer)
        sharedWeights.insert(buffer);
  }
  std::set<std::string> names;
  for (const Buffer &buffer : program.buffers)
    names.insert(buffer.name);

  int rewritten = 0;
  for (const auto &[key, list] : users) {
    Buffer &source = program.buffers[size_t(key.buffer)];
    TC_ASSIGN_OR_RETURN(Tensor packed, pack(program.weights.at(source.name), key));
    int target = key.buffer;
    if (!sharedWeights.count(key.buffer) && takesPlace(keysOf[key.buffer], key)) {
      source.shape = {SymInt(packed.numel())};
      program.weights[source.name] = std::move(packed);
    } else {
      Buffer copy;
      copy.id = int(program.buffers.size());
      copy.name = source.name + suffix;
      for (int i = 1; names.count(copy.name); ++i)
        copy.name = source.name + suffix + "_" + std::to_string(i);
      copy.kind = Buffer::Kind::Weight;
      copy.dtype = DType::F32;
      copy.shape = {SymInt(packed.numel())};
      names.insert(copy.name);
      program.weights[copy.name] = std::move(packed);
      target = copy.id;
      program.buffers.push_back(std::move(copy));
      if (schedule.plan.offsets.size() + 1 == program.buffers.size())
        schedule.plan.offsets.push_back(SymInt(0));
    }
    for (const auto &[kernel, nodeId] : list) {
      rewrite(program.nodes[size_t(nodeId)], key, target);
      std::vector<int> &args = schedule.kernels[kernel].args;
      if (!std::binary_search(args.begin(), args.end(), target))
        args.insert(std::upper_bound(args.begin(), args.end(), target), target);
      ++rewritten;
    }
  }
  return rewritten;
}

} // namespace tensorc::cpu
