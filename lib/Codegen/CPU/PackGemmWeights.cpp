// Compile-time packing of the constant B operands of CPU GEMMs into the micro-kernels' strips.
#include "tensorc/Codegen/CPU/PackGemmWeights.h"

#include "PackTemplateWeights.h"

#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

namespace tensorc::cpu {

using loop::LoopNode;
using loop::LoopProgram;

namespace {

/// One static B view of a weight: what a packed copy is made of (GEMMs with equal keys share it).
struct PackKey {
  int buffer = -1;
  int64_t offset = 0, batchStride = 0, rowStride = 0, colStride = 0;
  int64_t batch = 1, k = 0, n = 0;
  bool batched = false; // the view has a batch stride
  auto tie() const {
    return std::tie(buffer, offset, batchStride, rowStride, colStride, batch, k, n, batched);
  }
  bool operator<(const PackKey &other) const { return tie() < other.tie(); }
  /// Distinct K x N operands: one when every batch reads the same one.
  int64_t copies() const { return batchStride == 0 ? 1 : batch; }
};

/// The key of a GEMM node whose B is a packable weight view: f32, static shape and strides, every
/// element inside the weight's data.
std::optional<PackKey> packKey(const LoopProgram &program, const LoopNode &node) {
  if (node.kind != LoopNode::Kind::Template || node.templateKind != LoopNode::TemplateKind::Gemm ||
      node.gemm.packedB)
    return std::nullopt;
  const LoopNode::Gemm &gemm = node.gemm;
  const loop::StridedView &view = gemm.b;
  const Tensor *data = packableWeight(program, view);
  if (!data)
    return std::nullopt;
  size_t base = view.strides.size() - 2;
  auto batch = gemm.batch.constant(), k = gemm.k.constant(), n = gemm.n.constant();
  auto offset = view.offset.constant();
  auto rowStride = view.strides[base].constant(), colStride = view.strides[base + 1].constant();
  std::optional<int64_t> batchStride = base ? view.strides[0].constant() : int64_t(0);
  if (!batch || !k || !n || !offset || !rowStride || !colStride || !batchStride || *batch < 1 ||
      *k < 1 || *n < 1)
    return std::nullopt;
  PackKey key{view.buffer, *offset, *batchStride, *rowStride, *colStride, *batch, *k, *n, base > 0};
  // Every element read must lie inside the data (the verifier says so too; the packing reads them
  // in this process).
  if (!viewInside(key.offset,
                  {{key.copies(), key.batchStride}, {key.k, key.rowStride}, {key.n, key.colStride}},
                  data->numel()))
    return std::nullopt;
  return key;
}

Expected<Tensor> pack(const Tensor &weight, const PackKey &key) {
  int64_t size = packedGemmBSize(key.k, key.n);
  TC_ASSIGN_OR_RETURN(Tensor packed, Tensor::zeros(DType::F32, {key.copies() * size}));
  const float *source = weight.dataAs<float>();
  float *out = packed.mutableDataAs<float>();
  for (int64_t c = 0; c < key.copies(); ++c)
    packGemmB(source + key.offset + c * key.batchStride, key.k, key.n, key.rowStride, key.colStride,
              out + c * size);
  return packed;
}

} // namespace

Expected<int> packGemmWeights(LoopProgram &program, sched::Schedule &schedule) {
  return packTemplateWeights<PackKey>(
      program, schedule, ".packed16", packKey,
      [](const LoopNode &node) { return node.gemm.a.buffer; },
      // An unshared weight read through several views keeps its data until the last one is
      // packed, which then takes its place.
      [](const std::set<PackKey> &keys, const PackKey &key) { return !(*keys.rbegin() < key); },
      pack,
      [](LoopNode &node, const PackKey &key, int target) {
        LoopNode::Gemm &gemm = node.gemm;
        gemm.b.buffer = target;
        gemm.b.offset = SymInt(0);
        // The dense K x N shape of the view stays (every bound checked on it holds: a packed
        // operand is at least K x N floats); the data is in strips (packedB).
        int64_t each = packedGemmBSize(key.k, key.n);
        gemm.b.strides = {SymInt(key.n), SymInt(1)};
        if (key.batched)
          gemm.b.strides.insert(gemm.b.strides.begin(), SymInt(key.copies() > 1 ? each : 0));
        gemm.packedB = true;
      });
}

} // namespace tensorc::cpu
