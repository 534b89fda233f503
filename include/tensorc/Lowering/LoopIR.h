// LoopIR (DESIGN §4): lowered buffers as iteration ranges plus a small expression graph giving the
// value at each index; views are index arithmetic (SymInt over loop variables), not copies.
#pragma once

#include "tensorc/IR/SymInt.h"
#include "tensorc/Support/DType.h"
#include "tensorc/Support/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::loop {

// X(Enum, printed name)
#define TENSORC_FOR_EACH_UNARY(X)                                                                  \
  X(Neg, "neg") X(Abs, "abs") X(Exp, "exp") X(Log, "log") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")        \
  X(Reciprocal, "reciprocal") X(Tanh, "tanh") X(Sigmoid, "sigmoid") X(Erf, "erf")                  \
  X(Floor, "floor") X(Ceil, "ceil") X(Round, "round") X(Sign, "sign") X(Relu, "relu")              \
  X(LogicalNot, "logical_not") X(BitwiseNot, "bitwise_not") X(IsNan, "isnan")

#define TENSORC_FOR_EACH_BINARY(X)                                                                 \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Pow, "pow")                            \
  X(Remainder, "remainder") X(Fmod, "fmod") X(Maximum, "maximum") X(Minimum, "minimum")            \
  X(Eq, "eq") X(Ne, "ne") X(Lt, "lt") X(Le, "le") X(Gt, "gt") X(Ge, "ge")                          \
  X(LogicalAnd, "logical_and") X(LogicalOr, "logical_or") X(LogicalXor, "logical_xor")             \
  X(BitwiseAnd, "bitwise_and") X(BitwiseOr, "bitwise_or") X(BitwiseXor, "bitwise_xor")             \
  X(Shl, "shl") X(Shr, "shr")

enum class UnaryOp : uint8_t {
#define TENSORC_ENUM(e, n) e,
  TENSORC_FOR_EACH_UNARY(TENSORC_ENUM)
#undef TENSORC_ENUM
};
enum class BinaryOp : uint8_t {
#define TENSORC_ENUM(e, n) e,
  TENSORC_FOR_EACH_BINARY(TENSORC_ENUM)
#undef TENSORC_ENUM
};
const char *unaryName(UnaryOp op);
const char *binaryName(BinaryOp op);

enum class ExprKind : uint8_t {
  Constant, // `value` (integers are exact in a double up to 2^53; `intValue` holds them exactly)
  Load,     // buffer `buffer` at flat element index `index`
  Index,    // the integer `index` itself, as a value of `dtype`
  Unary,    // unary(operands[0]); comparisons and logical ops produce bool
  Binary,   // binary(operands[0], operands[1]) (operands share a dtype; the result may be bool)
  Select,   // operands[0] (bool) ? operands[1] : operands[2]
  Cast,     // operands[0] converted to `dtype` (float->int truncates, ->bool is != 0)
  // Buffer `buffer` at flat index `index` + operands[0], an i64 known only at run time (a loaded
  // index times a stride): gathers.
  IndirectLoad,
};
/// Every ExprKind, for code written once per kind (the visitor's and mutator's dispatch).
#define TENSORC_FOR_EACH_EXPR_KIND(X)                                                              \
  X(Constant) X(Load) X(Index) X(Unary) X(Binary) X(Select) X(Cast) X(IndirectLoad)

struct Expr;
using ExprRef = std::shared_ptr<const Expr>;

/// One node of a body's expression graph. Built only through the make* functions below, which
/// check operand dtypes; shared subexpressions are shared pointers (a DAG).
struct Expr {
  ExprKind kind = ExprKind::Constant;
  DType dtype = DType::F32;
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  double value = 0;
  int64_t intValue = 0;
  int buffer = -1;
  SymInt index;
  std::vector<ExprRef> operands;

  Expr() = default;
  Expr(const Expr &) = default;
  Expr &operator=(const Expr &) = default;
  /// Releases a deep chain of sole-owned operands iteratively, not one C++ frame per level.
  ~Expr();
};

ExprRef makeConstant(double value, DType dtype);
ExprRef makeIntConstant(int64_t value, DType dtype);
ExprRef makeLoad(int buffer, DType dtype, SymInt index);
/// Loads `buffer` at `index` + `offset` (an i64 expression, e.g. a loaded index times a stride).
/// Such a load reads its buffer at positions unknown until run time: the scheduler never fuses it
/// with the buffer's producer. The sum must stay in bounds: lowering wraps and clamps indices.
ExprRef makeIndirectLoad(int buffer, DType dtype, SymInt index, ExprRef offset);
ExprRef makeIndex(SymInt index, DType dtype);
ExprRef makeUnary(UnaryOp op, ExprRef x);
ExprRef makeBinary(BinaryOp op, ExprRef a, ExprRef b);
ExprRef makeSelect(ExprRef cond, ExprRef a, ExprRef b);
ExprRef makeCast(ExprRef x, DType dtype);
/// The result dtype of `op` on operands of `operandType` (bool for comparisons/logical ops).
DType binaryResultType(BinaryOp op, DType operandType);

/// Loop variables: outer/pointwise dims are `x0, x1, ...`, reduction dims `r0, r1, ...`; every
/// index expression is a SymInt over them and the graph's shape symbols.
std::string loopVar(size_t dim);
std::string reductionVar(size_t dim);

// clang-format would split a string literal here.
// clang-format off
#define TENSORC_FOR_EACH_REDUCE(X)                                                                 \
  X(Sum, "sum") X(Prod, "prod") X(Max, "max") X(Min, "min") X(ArgMax, "argmax")                    \
  X(ArgMin, "argmin")
// clang-format on
enum class ReduceOp : uint8_t {
#define TENSORC_ENUM(e, n) e,
  TENSORC_FOR_EACH_REDUCE(TENSORC_ENUM)
#undef TENSORC_ENUM
};
const char *reduceName(ReduceOp op);

/// A buffer of the lowered program. Buffers are dense and row-major; views never get one.
struct Buffer {
  enum class Kind : uint8_t { Input, Weight, Intermediate };
  int id = 0;
  std::string name; // the graph value it holds
  Kind kind = Kind::Intermediate;
  DType dtype = DType::F32;
  std::vector<SymInt> shape;
  int64_t inputIndex = -1; // Input: position among the user inputs
  SymInt numel() const;
};

/// A strided view of a buffer: element (i, j, ...) is at offset + sum(i_k * strides[k]).
struct StridedView {
  int buffer = -1;
  SymInt offset;
  std::vector<SymInt> strides;
};
/// Row-major strides of a dense tensor of `shape`.
std::vector<SymInt> contiguousStrides(const std::vector<SymInt> &shape);

/// One lowered node.
struct LoopNode {
  enum class Kind : uint8_t {
    Pointwise, // out[x] = body(x) over `ranges` (== the output's shape)
    Reduction, // out[x] = reduce over r in reductionRanges of body(x, r)
    Template,  // GEMM, 2-D convolution or attention (templateKind) as a generated kernel
    Extern,    // one graph op run by its reference kernel in the runtime (a fallback)
  };
  Kind kind = Kind::Pointwise;
  int id = 0;
  std::string name;
  int output = -1; // buffer id (Extern: the first output; see externOutputs)
  std::vector<SymInt> ranges;
  std::vector<SymInt> reductionRanges;
  ReduceOp reduceOp = ReduceOp::Sum;
  ExprRef body;
  std::vector<std::string> origins; // graph ops folded into this node ("add", "gelu"), in order

  // Template (GEMM): out[b, m, n] = sum_k A[b, m, k] * B[b, k, n]; A is batch x M x K, B is
  // batch x K x N, as strided views. `ranges` is the output shape, all dims kept.
  enum class TemplateKind : uint8_t { Gemm, Conv2d, Attention };
  TemplateKind templateKind = TemplateKind::Gemm;
  struct Gemm {
    StridedView a, b; // a.strides = {batch, m, k}; b.strides = {batch, k, n}
    SymInt batch = 1, m, n, k;
    /// B is a constant the CPU back end packed at compile time (cpu::packGemmWeights): b.buffer
    /// holds each batch's K x N operand as cpu::packGemmB strips of 16 columns, one after the other
    /// (b.strides[0] elements apart; 0 when every batch shares one), not at the view's offsets.
    /// The view keeps the dense K x N shape so that every bound checked on it still holds.
    bool packedB = false;
  } gemm;

  // Template (Conv2d): out[n, oc, oh, ow] = sum over (c, kh, kw) of the group's weight times
  // input[n, g*cg + c, oh*stride - pad + kh*dilation, ...] (0 outside), no bias: an implicit GEMM
  // per image and group. Only N may be symbolic; `ranges` is [N, OC, OH, OW].
  //
  // Channels-last (`channelsLast`, CUDA): the input buffer is dense [N, H, W, C], the output
  // buffer dense [N, OH, OW, OC] and `ranges` is [N, OH, OW, OC] (what the buffer holds, so an
  // epilogue reads it at its own index); `weight` is indexed [OC, KH, KW, C/groups], packed
  // dense in that order, or for depthwise convolutions (groups == C == OC) as [KH, KW, C].
  struct Conv {
    int input = -1;     // dense buffer [N, C, H, W] (channels-last: [N, H, W, C])
    StridedView weight; // [OC, C/groups, KH, KW]; the last three strides flatten to one (K)
    SymInt n;
    int64_t c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0, oh = 0, ow = 0;
    int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1;
    int64_t groups = 1;
    bool channelsLast = false;
    /// Channels-last on the CPU: the back end packed the constant weights at compile time
    /// (cpu::packConvTemplates), so weight.buffer holds per group the K x OC/groups operand in
    /// strips of 16 channels (depthwise: cpu::packDepthwiseWeights), not at the view's offsets
    /// (the view keeps its [OC, KH, KW, C/groups] shape: every bound checked on it still holds).
    /// The tasks are tiles of tileM output pixels x tileN channels per image and group
    /// (depthwise: tileM output rows x tileN channels per image).
    bool packedWeights = false;
    int64_t tileM = 0, tileN = 0;
    /// With packedWeights: Winograd F(2x2, 3x3) (cpu::winogradFits). The weights are then 16
    /// C x OC operands (one per point of the transformed 4 x 4 tile, cpu::packWinogradWeights)
    /// and tileM counts 2 x 2 output tiles, not pixels.
    bool winograd = false;
    /// With packedWeights: a grouped convolution run on the depthwise kernel
    /// (cpu::channelwiseFits; weights as cpu::packDepthwiseWeights with C / groups per group),
    /// its tiles as a depthwise one's.
    bool channelwise = false;
    /// A depthwise convolution: groups == C == OC.
    bool depthwise() const { return groups == c && oc == c && c > 1; }
  } conv;

  // Template (Attention): out[b, i, :] = softmax_j(q[b, i, :] . k[b, j, :] * scale [+ mask]) .
  // v[b, j, :] over q [batch, l, e], k [batch, s, e], v [batch, s, ev] (leading dims flattened
  // into batch). Each operand is a strided view over [batchDims..., rows, head dim] with unit
  // stride along the head dim and every other stride and the offset constant multiples of 8
  // (16-byte rows for f16: the heads of a Q/K/V projection's result, read in place); the output
  // is written through `outStrides` over [batchDims..., l, ev] (empty: dense; [b, l, h, ev]
  // storage for [b, h, l, ev] when its users read it so). `ranges` is the output buffer's shape.
  // GPU compiles only (CUDA renderer).
  // The optional mask (mask.buffer >= 0) is read through strides over [batchDims..., l, s]
  // (0 where it broadcasts): added to the scores when of q's dtype; when bool, false makes the
  // score -inf. With safeSoftmax, a row whose softmax is undefined (all keys masked out, NaN or
  // infinite scores) is 0.
  struct Attention {
    StridedView q, k, v;
    std::vector<SymInt> outStrides;
    SymInt batch = 1, l, s;
    int64_t e = 0, ev = 0;
    double scale = 1.0;
    bool safeSoftmax = false;
    std::vector<SymInt> batchDims; // the leading dims `batch` flattens
    StridedView mask;
    /// [batchDims..., rows, cols]: the dims an operand (or the output) is viewed over.
    std::vector<SymInt> dims(const SymInt &rows, int64_t cols) const {
      std::vector<SymInt> out = batchDims;
      out.push_back(rows);
      out.push_back(SymInt(cols));
      return out;
    }
  } attention;

  // Extern: the op as an FX-text graph of one node, its input and output buffers, and why it
  // has no generated kernel.
  std::string externOp;
  std::string externGraph;
  std::string externReason;
  std::vector<int> externInputs, externOutputs;

  /// Buffers read by the body (or the GEMM operands / extern inputs), sorted, unique.
  std::vector<int> reads() const;
};

/// The lowered program: buffers, nodes in a valid execution order, and the graph outputs.
struct LoopProgram {
  std::vector<Buffer> buffers;
  std::vector<LoopNode> nodes;
  std::vector<int> outputs;              // buffer per graph output
  std::vector<std::string> symbols;      // shape symbols, sorted
  std::map<std::string, Tensor> weights; // Weight buffers' data by buffer name
  std::vector<std::string> fallbacks;    // ops run as Extern, for reports
};

/// "[s0, 3, 8]".
std::string printDims(const std::vector<SymInt> &dims);

/// Human-readable dump (the `lower` stage of `tensorc inspect`).
std::string printExpr(const ExprRef &expr, const LoopProgram &program);
std::string printProgram(const LoopProgram &program);

} // namespace tensorc::loop
