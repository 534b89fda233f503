// libFuzzer harness, structure-aware: mutates the attribute values, constant tensors, input dims
// and attribute types of valid ONNX models (the seeds are small valid models) instead of their
// bytes, most of which would only test the protobuf parser. The target is the import, as in
// FuzzOnnxImport.cpp.
#include "FuzzCommon.h"

#include "tensorc/Frontend/ONNX/OnnxImporter.h"
#include "tensorc/IR/Printer.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tensorc;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

using Rng = std::minstd_rand;

template <typename T> const T &pick(Rng &rng, const std::vector<T> &items) {
  return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
}

bool chance(Rng &rng, int percent) { return int(rng() % 100) < percent; }

int64_t interestingInt(Rng &rng, int64_t current) {
  static const std::vector<int64_t> values = {0,
                                              1,
                                              -1,
                                              2,
                                              3,
                                              -2,
                                              4,
                                              7,
                                              16,
                                              255,
                                              256,
                                              65536,
                                              int64_t(1) << 31,
                                              (int64_t(1) << 31) - 1,
                                              -(int64_t(1) << 31),
                                              int64_t(1) << 32,
                                              int64_t(1) << 62,
                                              -(int64_t(1) << 62),
                                              std::numeric_limits<int64_t>::max(),
                                              std::numeric_limits<int64_t>::min(),
                                              std::numeric_limits<int64_t>::max() - 1,
                                              std::numeric_limits<int64_t>::min() + 1};
  switch (rng() % 5) {
  case 0:
    return int64_t(uint64_t(current) + 1);
  case 1:
    return int64_t(uint64_t(current) - 1);
  case 2:
    return int64_t(uint64_t(current) * 2);
  case 3:
    return int64_t(rng() % 33) - 16;
  default:
    return pick(rng, values);
  }
}

float interestingFloat(Rng &rng, float current) {
  static const std::vector<float> values = {0.0f,
                                            -0.0f,
                                            1.0f,
                                            -1.0f,
                                            0.5f,
                                            1e-30f,
                                            1e30f,
                                            -1e30f,
                                            std::numeric_limits<float>::infinity(),
                                            -std::numeric_limits<float>::infinity(),
                                            std::numeric_limits<float>::quiet_NaN(),
                                            std::numeric_limits<float>::max(),
                                            std::numeric_limits<float>::denorm_min(),
                                            4294967296.0f,
                                            9.3e18f};
  if (chance(rng, 30))
    return current * float(int(rng() % 7) - 3);
  return pick(rng, values);
}

std::string interestingString(Rng &rng) {
  static const std::vector<std::string> values = {"",
                                                  "NOTSET",
                                                  "SAME_UPPER",
                                                  "SAME_LOWER",
                                                  "VALID",
                                                  "constant",
                                                  "reflect",
                                                  "edge",
                                                  "wrap",
                                                  "DCR",
                                                  "CRD",
                                                  "linear",
                                                  "nearest",
                                                  "cubic",
                                                  "floor",
                                                  "ceil",
                                                  "round_prefer_floor",
                                                  "half_pixel",
                                                  "asymmetric",
                                                  "align_corners",
                                                  "tf_crop_and_resize",
                                                  "forward",
                                                  "reverse",
                                                  "bidirectional",
                                                  "Relu",
                                                  "Tanh",
                                                  "Sigmoid",
                                                  "Affine",
                                                  "HardSigmoid",
                                                  "mean",
                                                  "sum",
                                                  "none",
                                                  "zeros",
                                                  "border",
                                                  "reflection",
                                                  "bilinear",
                                                  "bicubic",
                                                  "ii->i",
                                                  "ij,jk->ik",
                                                  "...ij->...ji",
                                                  "i,i->",
                                                  "abc,cd->",
                                                  "bhij,bhjd->bhid",
                                                  "->",
                                                  "a->aa",
                                                  "\n\x1b[31m",
                                                  std::string(300, 'x')};
  return pick(rng, values);
}

/// Mutates one attribute in place: its value, its element list, or its declared type.
void mutateAttribute(Rng &rng, ::onnx::AttributeProto &attr) {
  using A = ::onnx::AttributeProto;
  if (chance(rng, 8)) { // a wrong declared type with the payload kept
    static const std::vector<A::AttributeType> types = {A::FLOAT,  A::INT,     A::STRING,
                                                        A::TENSOR, A::GRAPH,   A::INTS,
                                                        A::FLOATS, A::STRINGS, A::UNDEFINED};
    attr.set_type(pick(rng, types));
    return;
  }
  switch (attr.type()) {
  case A::INT:
    attr.set_i(interestingInt(rng, attr.i()));
    return;
  case A::FLOAT:
    attr.set_f(interestingFloat(rng, attr.f()));
    return;
  case A::STRING:
    attr.set_s(interestingString(rng));
    return;
  case A::INTS: {
    if (attr.ints_size() == 0 || chance(rng, 20)) {
      int count = int(rng() % 9);
      attr.clear_ints();
      for (int i = 0; i < count; ++i)
        attr.add_ints(interestingInt(rng, 1));
      return;
    }
    int index = int(rng() % uint32_t(attr.ints_size()));
    if (chance(rng, 15)) {
      attr.mutable_ints()->erase(attr.mutable_ints()->begin() + index);
      return;
    }
    if (chance(rng, 15)) {
      attr.add_ints(attr.ints(index));
      return;
    }
    attr.set_ints(index, interestingInt(rng, attr.ints(index)));
    return;
  }
  case A::FLOATS: {
    if (attr.floats_size() == 0 || chance(rng, 20)) {
      int count = int(rng() % 9);
      attr.clear_floats();
      for (int i = 0; i < count; ++i)
        attr.add_floats(interestingFloat(rng, 1));
      return;
    }
    int index = int(rng() % uint32_t(attr.floats_size()));
    attr.set_floats(index, interestingFloat(rng, attr.floats(index)));
    return;
  }
  case A::STRINGS:
    if (attr.strings_size() > 0 && chance(rng, 70))
      attr.set_strings(int(rng() % uint32_t(attr.strings_size())), interestingString(rng));
    else
      attr.add_strings(interestingString(rng));
    return;
  default:
    attr.set_i(interestingInt(rng, 0));
    attr.set_type(A::INT);
    return;
  }
}

/// Mutates a tensor's dims or data (initializers, Constant values: the depths, pads, shapes and
/// axes that converters read at import time).
void mutateTensor(Rng &rng, ::onnx::TensorProto &tensor) {
  if (tensor.dims_size() > 0 && chance(rng, 25)) {
    int index = int(rng() % uint32_t(tensor.dims_size()));
    tensor.set_dims(index, interestingInt(rng, tensor.dims(index)));
    return;
  }
  if (tensor.int64_data_size() > 0) {
    int index = int(rng() % uint32_t(tensor.int64_data_size()));
    tensor.set_int64_data(index, interestingInt(rng, tensor.int64_data(index)));
    return;
  }
  if (tensor.float_data_size() > 0) {
    int index = int(rng() % uint32_t(tensor.float_data_size()));
    tensor.set_float_data(index, interestingFloat(rng, tensor.float_data(index)));
    return;
  }
  if (tensor.int32_data_size() > 0) {
    int index = int(rng() % uint32_t(tensor.int32_data_size()));
    tensor.set_int32_data(index, int32_t(interestingInt(rng, tensor.int32_data(index))));
    return;
  }
  std::string *raw = tensor.mutable_raw_data();
  if (tensor.data_type() == ::onnx::TensorProto::INT64 && raw->size() >= 8) {
    size_t index = (rng() % (raw->size() / 8)) * 8;
    int64_t value = 0;
    std::memcpy(&value, raw->data() + index, 8);
    value = interestingInt(rng, value);
    std::memcpy(raw->data() + index, &value, 8);
  } else if (tensor.data_type() == ::onnx::TensorProto::FLOAT && raw->size() >= 4) {
    size_t index = (rng() % (raw->size() / 4)) * 4;
    float value = 0;
    std::memcpy(&value, raw->data() + index, 4);
    value = interestingFloat(rng, value);
    std::memcpy(raw->data() + index, &value, 4);
  } else if (!raw->empty()) {
    (*raw)[rng() % raw->size()] = char(rng());
  }
}

/// Every graph of the model: the main graph and the subgraphs of its attributes.
void collectGraphs(::onnx::GraphProto &graph, std::vector<::onnx::GraphProto *> &graphs) {
  graphs.push_back(&graph);
  for (auto &node : *graph.mutable_node())
    for (auto &attr : *node.mutable_attribute()) {
      if (attr.has_g())
        collectGraphs(*attr.mutable_g(), graphs);
      for (auto &subgraph : *attr.mutable_graphs())
        collectGraphs(subgraph, graphs);
    }
}

void mutateModel(Rng &rng, ::onnx::ModelProto &model) {
  std::vector<::onnx::GraphProto *> graphs;
  collectGraphs(*model.mutable_graph(), graphs);
  ::onnx::GraphProto &graph = *pick(rng, graphs);
  int what = int(rng() % 100);
  if (what < 55 && graph.node_size() > 0) {
    ::onnx::NodeProto &node = *graph.mutable_node(int(rng() % uint32_t(graph.node_size())));
    if (node.attribute_size() > 0 && !chance(rng, 10)) {
      int index = int(rng() % uint32_t(node.attribute_size()));
      ::onnx::AttributeProto &attr = *node.mutable_attribute(index);
      if (attr.has_t())
        mutateTensor(rng, *attr.mutable_t());
      else if (chance(rng, 4))
        node.mutable_attribute()->erase(node.mutable_attribute()->begin() + index);
      else
        mutateAttribute(rng, attr);
      return;
    }
    // A new attribute with a name converters read.
    static const std::vector<std::string> names = {"axis",
                                                   "axes",
                                                   "keepdims",
                                                   "group",
                                                   "pads",
                                                   "strides",
                                                   "dilations",
                                                   "kernel_shape",
                                                   "auto_pad",
                                                   "blocksize",
                                                   "mode",
                                                   "perm",
                                                   "to",
                                                   "alpha",
                                                   "beta",
                                                   "epsilon",
                                                   "transA",
                                                   "transB",
                                                   "split",
                                                   "starts",
                                                   "ends",
                                                   "upper",
                                                   "k",
                                                   "largest",
                                                   "sorted",
                                                   "direction",
                                                   "hidden_size",
                                                   "layout",
                                                   "ceil_mode",
                                                   "count_include_pad",
                                                   "p",
                                                   "exclusive",
                                                   "reverse",
                                                   "reduction",
                                                   "equation",
                                                   "output_padding",
                                                   "output_shape",
                                                   "select_last_index",
                                                   "noop_with_empty_axes",
                                                   "value",
                                                   "coordinate_transformation_mode",
                                                   "storage_order",
                                                   "dtype",
                                                   "seed",
                                                   "batch_dims"};
    ::onnx::AttributeProto &attr = *node.add_attribute();
    attr.set_name(pick(rng, names));
    switch (rng() % 3) {
    case 0:
      attr.set_type(::onnx::AttributeProto::INT);
      attr.set_i(interestingInt(rng, 1));
      break;
    case 1:
      attr.set_type(::onnx::AttributeProto::INTS);
      for (int i = int(rng() % 5); i > 0; --i)
        attr.add_ints(interestingInt(rng, 1));
      break;
    default:
      attr.set_type(::onnx::AttributeProto::STRING);
      attr.set_s(interestingString(rng));
      break;
    }
    return;
  }
  if (what < 80 && graph.initializer_size() > 0) {
    mutateTensor(rng, *graph.mutable_initializer(int(rng() % uint32_t(graph.initializer_size()))));
    return;
  }
  if (what < 92 && graph.input_size() > 0) {
    ::onnx::ValueInfoProto &input = *graph.mutable_input(int(rng() % uint32_t(graph.input_size())));
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape())
      return;
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0 || chance(rng, 10)) {
      shape->add_dim()->set_dim_value(interestingInt(rng, 1));
      return;
    }
    auto *dim = shape->mutable_dim(int(rng() % uint32_t(shape->dim_size())));
    if (chance(rng, 20))
      dim->set_dim_param("s" + std::to_string(rng() % 3));
    else
      dim->set_dim_value(interestingInt(rng, dim->has_dim_value() ? dim->dim_value() : 1));
    return;
  }
  // Opset and op type: converters branch on both.
  if (model.opset_import_size() > 0 && chance(rng, 50)) {
    model.mutable_opset_import(0)->set_version(int64_t(rng() % 25));
    return;
  }
  if (graph.node_size() > 1) {
    int a = int(rng() % uint32_t(graph.node_size())), b = int(rng() % uint32_t(graph.node_size()));
    graph.mutable_node(a)->set_op_type(graph.node(b).op_type());
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitTensorBytes();
  fuzz::registry();
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  ::onnx::ModelProto model;
  Rng rng(seed);
  // One in ten mutations stays byte-level, so protobuf framing keeps some coverage too.
  if (chance(rng, 10) || !model.ParseFromArray(data, int(size)) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, maxSize);
  int rounds = 1 + int(rng() % 3);
  for (int i = 0; i < rounds; ++i)
    mutateModel(rng, model);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

/// Elements of the tensor literals the graph's nodes carry (folded constants).
static int64_t literalElements(const Graph &graph) {
  int64_t total = 0;
  for (const auto &node : graph.nodes())
    for (const auto &[name, attr] : node->attrs())
      if (attr.isTensor())
        total += attr.asTensor().numel();
  return total;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  Expected<Graph> graph =
      ::tensorc::onnx::importOnnxBytes(bytes, fuzz::scratchDir(), fuzz::registry());
  // The printer writes every element of a literal (linear, but a folded constant of millions of
  // elements takes seconds under the sanitizers): graphs with more are imported, not printed.
  if (graph && literalElements(*graph) <= (int64_t(1) << 16))
    (void)printGraph(*graph);
  return 0;
}
