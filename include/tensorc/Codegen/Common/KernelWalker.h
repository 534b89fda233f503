// One kernel walker for every backend: the checks a scheduled kernel passes before any code is
// emitted for it, and the shapes backends emit kernels in (loop stages, or a template with its
// epilogue), handed to a backend's KernelVisitor.
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace tensorc::codegen {

/// A Loop kernel's stages: each pointwise or a reduction, ranging over the kernel's outer ranges
/// first (a reduction over exactly them).
struct LoopKernel {
  std::vector<const loop::LoopNode *> stages;
  /// Every stage is pointwise over exactly the outer ranges: one sweep over the flat range, each
  /// stage reading earlier stages' results only at its own element.
  bool elementwise = false;
};

/// A Template kernel: the template node, its optional pointwise epilogue, and the buffer the
/// kernel's result lands in (the epilogue's output when there is one). An epilogue chain of
/// several nodes comes as one node (`composed` holds it): the last link with each link's loads of
/// the link before it replaced by that link's body, so backends emit one epilogue body whose
/// intermediate results stay in registers.
struct TemplateKernel {
  const loop::LoopNode *node = nullptr;
  const loop::LoopNode *epilogue = nullptr;
  int output = -1;
  std::shared_ptr<const loop::LoopNode> composed;
};

/// How a template's output element binds its epilogue's loop variables. The template's dims are
/// [outer..., row, columns...] (GEMM: one column dim; convolution: OH and OW); the epilogue's
/// variables x0, x1, ... are those dims in order, all of them, or all but the size-1 ones (the
/// lowering drops those).
struct EpilogueLayout {
  std::vector<SymInt> outerRanges;
  std::vector<std::string> outerVars;
  std::string rowVar; // empty when the row dim is a dropped size-1 dim
  std::vector<SymInt> columnRanges;
  std::vector<std::string> columnVars;
};
EpilogueLayout epilogueLayout(const loop::LoopNode &templateNode, const loop::LoopNode &epilogue,
                              size_t columnDims);

/// What a backend emits for each kind of kernel.
class KernelVisitor {
public:
  virtual ~KernelVisitor() = default;
  virtual Status loopKernel(const LoopKernel &kernel) = 0;
  virtual Status gemmKernel(const TemplateKernel &kernel) = 0;
  virtual Status convKernel(const TemplateKernel &kernel) = 0;
  virtual Status attentionKernel(const TemplateKernel &kernel) = 0;
};

/// Checks `kernel` against `program` (its args distinct buffers; its nodes of the kinds and
/// shapes its kind needs: GEMM operand views of 2 or 3 strides, 4-D convolutions, attention
/// without an epilogue and with a mask stride per dim) and calls the visitor's method for its
/// kind. Extern kernels are an error: the runtime runs them.
Status walkKernel(const loop::LoopProgram &program, const sched::Kernel &kernel,
                  KernelVisitor &visitor);

} // namespace tensorc::codegen
