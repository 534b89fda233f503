// Tests of the CPU runtime and its C ABI on small bundles written by hand (test kernels in
// test/runtime/test_kernels.c).
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/Sha256.h"
#include "tensorc/tensorc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace tensorc;
using namespace tensorc::bundle;
namespace fs = std::filesystem;

namespace {

#if defined(__aarch64__)
constexpr const char *kHostArch = "aarch64";
constexpr const char *kOtherArch = "x86_64";
#else
constexpr const char *kHostArch = "x86_64";
constexpr const char *kOtherArch = "aarch64";
#endif

SizeExpr expr(const std::string &text) { return SizeExpr::parse(text).value(); }
SizeExpr constant(int64_t value) { return SizeExpr::constant(value); }

constexpr const char *kAddGraph =
    "graph(%a: f32[n, 4], %b: f32[4]):\n"
    "  %c : f32[n, 4] = call_function[target=aten.add](args=(%a, %b))\n"
    "  return (%c,)\n";

/// out = x + y + w (kernel, extern aten.add, copy) and rows[r] = 1000*batch + r (a kernel
/// reading the symbols).
Manifest sampleManifest() {
  Manifest m;
  m.model = "sample.fx";
  m.symbols = {"batch"};
  std::vector<SizeExpr> matrix = {expr("batch"), constant(4)};
  m.inputs = {{"x", DType::F32, matrix}, {"y", DType::F32, matrix}};
  m.outputs = {{"out", DType::F32, matrix}, {"rows", DType::F32, {expr("batch")}}};
  m.buffers = {
      {0, "x", BufferKind::Input, DType::F32, matrix, 0, "", {}},
      {1, "y", BufferKind::Input, DType::F32, matrix, 1, "", {}},
      {2, "w", BufferKind::Weight, DType::F32, {constant(4)}, 0, "w", {}},
      {3, "sum", BufferKind::Arena, DType::F32, matrix, 0, "", constant(0)},
      {4, "biased", BufferKind::Arena, DType::F32, matrix, 0, "", expr("64*batch")},
      {5, "out", BufferKind::Output, DType::F32, matrix, 0, "", {}},
      {6, "rows", BufferKind::Output, DType::F32, {expr("batch")}, 1, "", {}},
  };
  m.arenaBytes = expr("128*batch");
  Launch add;
  add.name = "tc_test_add_f32";
  add.args = {0, 1, 3};
  add.range = expr("4*batch");
  add.grain = 16;
  Launch bias;
  bias.kind = LaunchKind::Extern;
  bias.name = "aten.add";
  bias.args = {3, 2, 4};
  bias.graph = kAddGraph;
  Launch copy;
  copy.kind = LaunchKind::Copy;
  copy.name = "copy";
  copy.args = {4, 5};
  Launch rows;
  rows.name = "tc_test_fill_batch_f32";
  rows.args = {6};
  rows.range = expr("batch");
  m.launches = {add, bias, copy, rows};
  m.cpu = {{kHostArch, kHostArch, std::string("cpu/") + kHostArch + ".so", {}, 0}};
  m.guards = {{expr("(batch + 4095)//4096"), constant(1), "input 'x' dim 0 must be 1 to 4096"}};
  return m;
}

Tensor filled(std::vector<int64_t> shape, float start, DType dtype = DType::F32) {
  Tensor tensor = Tensor::zerosUnchecked(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.numel(); ++i)
    tensor.setDouble(i, start + 0.5 * double(i % 97));
  return tensor;
}

const float kWeights[4] = {100, 200, 300, 400};

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tensorc-rt-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Writes weights.safetensors (w: f32[4]), the test kernels as every variant, and then
  /// manifest.json listing their digests.
  void writeBundle(Manifest manifest) {
    fs::create_directories(fs::path(dir_) / "cpu");
    Tensor w = Tensor::zerosUnchecked(DType::F32, {4});
    std::copy(kWeights, kWeights + 4, w.mutableDataAs<float>());
    ASSERT_TRUE(writeSafetensors(dir_ + "/weights.safetensors", {{"w", w}}).isOk());
    manifest.files.push_back(
        {"weights.safetensors", sha256File(dir_ + "/weights.safetensors").value()});
    // Copy, then rename: overwriting a library in place would corrupt a model that has it open.
    for (const CpuVariant &variant : manifest.cpu) {
      fs::path target = fs::path(dir_) / variant.file;
      fs::copy_file(TENSORC_TEST_KERNELS, target.string() + ".tmp",
                    fs::copy_options::overwrite_existing);
      fs::rename(target.string() + ".tmp", target);
      if (!manifest.findFile(variant.file))
        manifest.files.push_back({variant.file, sha256File(target.string()).value()});
    }
    std::ofstream(fs::path(dir_) / "manifest.json") << manifest.toJson().dump(2);
  }

  std::unique_ptr<rt::Model> load(const rt::LoadOptions &options = {}) {
    auto model = rt::Model::load(dir_, options);
    EXPECT_TRUE(model) << model.error().message();
    return model ? std::move(model).value() : nullptr;
  }

  std::string loadError(const rt::LoadOptions &options = {}) {
    auto model = rt::Model::load(dir_, options);
    return model ? "(loaded)" : model.error().message();
  }

  static void expectSampleResults(const std::vector<Tensor> &outputs, const Tensor &x,
                                  const Tensor &y) {
    ASSERT_EQ(outputs.size(), 2u);
    int64_t batch = x.dim(0);
    ASSERT_EQ(outputs[0].shape(), (std::vector<int64_t>{batch, 4}));
    ASSERT_EQ(outputs[1].shape(), (std::vector<int64_t>{batch}));
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_FLOAT_EQ(outputs[0].dataAs<float>()[i],
                      x.dataAs<float>()[i] + y.dataAs<float>()[i] + kWeights[i % 4])
          << "element " << i;
    for (int64_t r = 0; r < batch; ++r)
      ASSERT_EQ(outputs[1].dataAs<float>()[r], float(1000 * batch + r));
  }

  std::string dir_;
};

} // namespace

TEST_F(RuntimeTest, RunsKernelExternAndCopyLaunchesWithSymbolicBatch) {
  writeBundle(sampleManifest());
  auto model = load({1, ""});
  ASSERT_TRUE(model);
  EXPECT_EQ(model->variant(), kHostArch);

  Tensor x = filled({3, 4}, 1), y = filled({3, 4}, -7);
  auto outputs = model->run({x, y});
  ASSERT_TRUE(outputs) << outputs.error().message();
  expectSampleResults(*outputs, x, y);
  EXPECT_EQ(model->arenaCapacity(), 384u);

  // A larger batch grows the arena; a smaller one afterwards reuses it.
  Tensor x7 = filled({7, 4}, 2), y7 = filled({7, 4}, 3);
  outputs = model->run({x7, y7});
  ASSERT_TRUE(outputs) << outputs.error().message();
  expectSampleResults(*outputs, x7, y7);
  EXPECT_EQ(model->arenaCapacity(), 896u);
  Tensor x2 = filled({2, 4}, 5), y2 = filled({2, 4}, 6);
  outputs = model->run({x2, y2});
  ASSERT_TRUE(outputs) << outputs.error().message();
  expectSampleResults(*outputs, x2, y2);
  EXPECT_EQ(model->arenaCapacity(), 896u);
  // Inputs are only read.
  EXPECT_TRUE(x2.equals(filled({2, 4}, 5)));
}

TEST_F(RuntimeTest, CpuWeightsAreTheBytesVerifiedAtLoad) {
  // A CPU model reads its weights into memory of its own at load (on huge pages where the kernel
  // allows): what runs is what the digest check saw, even if the file is rewritten in place
  // afterwards (a mapping of the file would show the new bytes).
  writeBundle(sampleManifest());
  auto model = load({1, ""});
  ASSERT_TRUE(model);
  std::string path = dir_ + "/weights.safetensors";
  auto size = fs::file_size(path);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(size - 16)); // w's 16 bytes end the file
    for (int i = 0; i < 16; ++i)
      file.put('\x7f');
  }
  Tensor x = filled({3, 4}, 1), y = filled({3, 4}, -7);
  auto outputs = model->run({x, y});
  ASSERT_TRUE(outputs) << outputs.error().message();
  expectSampleResults(*outputs, x, y);
  // Loaded again, the rewritten file fails its digest.
  EXPECT_EQ(loadError(), path + ": corrupt (its SHA-256 does not match the manifest's)");
}

TEST_F(RuntimeTest, OneAndFourThreadsAgree) {
  writeBundle(sampleManifest());
  auto serial = load({1, ""});
  auto parallel = load({4, ""});
  ASSERT_TRUE(serial && parallel);
  EXPECT_EQ(parallel->numThreads(), 4);
  Tensor x = filled({1000, 4}, 1), y = filled({1000, 4}, 2);
  for (int repeat = 0; repeat < 3; ++repeat) {
    auto a = serial->run({x, y});
    auto b = parallel->run({x, y});
    ASSERT_TRUE(a && b);
    expectSampleResults(*b, x, y);
    EXPECT_TRUE((*a)[0].equals((*b)[0]));
    EXPECT_TRUE((*a)[1].equals((*b)[1]));
  }
}

TEST_F(RuntimeTest, ChecksInputsAgainstTheManifest) {
  writeBundle(sampleManifest());
  auto model = load({2, ""});
  ASSERT_TRUE(model);
  auto error = [&](std::vector<Tensor> inputs) {
    auto outputs = model->run(inputs);
    return outputs ? "(ran)" : outputs.error().message();
  };
  EXPECT_EQ(error({filled({3, 4}, 0)}), "expected 2 inputs, got 1");
  EXPECT_EQ(error({filled({3, 4}, 0, DType::I32), filled({3, 4}, 0)}),
            "input 'x' is i32[3, 4], expected f32[batch, 4]");
  EXPECT_EQ(error({filled({3, 4, 1}, 0), filled({3, 4}, 0)}),
            "input 'x' is f32[3, 4, 1], expected f32[batch, 4]");
  EXPECT_EQ(error({filled({3, 5}, 0), filled({3, 5}, 0)}), "input 'x' dim 1 is 5, expected 4");
  EXPECT_EQ(error({filled({5, 4}, 0), filled({3, 4}, 0)}),
            "input 'y' dim 0 is 3, but batch is already 5 from input 'x'");
  EXPECT_EQ(error({filled({5000, 4}, 0), filled({5000, 4}, 0)}),
            "input 'x' dim 0 must be 1 to 4096 ((batch + 4095)//4096 is 2, expected 1)");
  // Errors leave the model usable.
  Tensor x = filled({3, 4}, 1), y = filled({3, 4}, 2);
  auto outputs = model->run({x, y});
  ASSERT_TRUE(outputs) << outputs.error().message();
  expectSampleResults(*outputs, x, y);
}

TEST_F(RuntimeTest, ChecksCompoundInputDims) {
  Manifest manifest = sampleManifest();
  manifest.inputs[1].shape = {expr("batch"), expr("2*batch")};
  manifest.buffers[1].shape = manifest.inputs[1].shape;
  manifest.launches = {manifest.launches[3]};
  writeBundle(manifest);
  auto model = load();
  ASSERT_TRUE(model);
  auto outputs = model->run({filled({3, 4}, 0), filled({3, 5}, 0)});
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error().message(), "input 'y' dim 1 is 5, expected 2*batch = 6");
  EXPECT_TRUE(model->run({filled({3, 4}, 0), filled({3, 6}, 0)}));
}

TEST_F(RuntimeTest, ReportsLaunchesWhoseBuffersDisagree) {
  Manifest manifest = sampleManifest();
  manifest.buffers[4].shape = {constant(4), expr("batch")};
  writeBundle(manifest);
  auto model = load();
  ASSERT_TRUE(model);
  auto outputs = model->run({filled({3, 4}, 0), filled({3, 4}, 0)});
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error().message(), "launches[1] (extern aten.add): result 0 is f32[3, 4], but "
                                       "buffer 'biased' is f32[4, 3]");

  manifest = sampleManifest();
  manifest.buffers[3].shape = {expr("batch"), constant(2)};
  manifest.launches = {manifest.launches[2]};
  manifest.launches[0].args = {3, 5};
  writeBundle(manifest);
  model = load();
  ASSERT_TRUE(model);
  outputs = model->run({filled({3, 4}, 0), filled({3, 4}, 0)});
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error().message(),
            "launches[0] (copy copy): copies 6 elements into a buffer of 12");
}

TEST_F(RuntimeTest, ReportsMissingKernelSymbol) {
  Manifest manifest = sampleManifest();
  manifest.launches[3].name = "tc_test_missing";
  writeBundle(manifest);
  std::string error = loadError();
  EXPECT_NE(error.find("launches[3] (kernel tc_test_missing): "), std::string::npos) << error;
  EXPECT_NE(error.find("cpu/" + std::string(kHostArch) + ".so has no kernel of that name"),
            std::string::npos)
      << error;
}

TEST_F(RuntimeTest, PicksASupportedVariant) {
  Manifest manifest = sampleManifest();
  std::string host = kHostArch;
  manifest.cpu = {{host, host, "cpu/a.so", {}, 1},
                  {host + "-best", host, "cpu/b.so", {}, 5},
                  {host + "-future", host, "cpu/c.so", {"tensorc-test-feature"}, 9}};
  writeBundle(manifest);
  auto model = load();
  ASSERT_TRUE(model);
  EXPECT_EQ(model->variant(), host + "-best");
  auto forced = load({0, host});
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->variant(), host);
  EXPECT_EQ(loadError({0, host + "-future"}),
            "CPU variant '" + host +
                "-future' needs tensorc-test-feature, which this machine lacks");
  EXPECT_EQ(loadError({0, "nope"}).substr(0, 32), "bundle has no CPU variant 'nope'");
}

TEST_F(RuntimeTest, RejectsUnsupportedVariants) {
  Manifest manifest = sampleManifest();
  manifest.cpu = {{kOtherArch, kOtherArch, "cpu/other.so", {}, 0}};
  writeBundle(manifest);
  EXPECT_EQ(loadError(), std::string("bundle has CPU code for ") + kOtherArch +
                             " only, this machine is " + kHostArch);

  manifest.cpu = {{"future", kHostArch, "cpu/future.so", {"tensorc-test-feature"}, 0}};
  writeBundle(manifest);
  EXPECT_EQ(loadError(), "no CPU variant of the bundle runs on this machine: future needs "
                         "tensorc-test-feature");
}

TEST_F(RuntimeTest, ReportsBadBundleFiles) {
  EXPECT_NE(loadError().find(dir_ + "/manifest.json"), std::string::npos);
  fs::create_directories(dir_);
  std::ofstream(fs::path(dir_) / "manifest.json") << "{\"format_version\": 1,";
  std::string error = loadError();
  EXPECT_EQ(error.rfind(dir_ + "/manifest.json: ", 0), 0u) << error;

  Manifest manifest = sampleManifest();
  manifest.formatVersion = 5;
  writeBundle(manifest);
  EXPECT_EQ(loadError(),
            dir_ + "/manifest.json: bundle format version 5, this runtime reads 3 to 4");

  manifest = sampleManifest();
  manifest.buffers[2].shape = {constant(5)};
  writeBundle(manifest);
  EXPECT_EQ(loadError(), dir_ + "/weights.safetensors: tensor 'w' is f32[4], but buffers[2] 'w' "
                                "is f32[5]");

  manifest = sampleManifest();
  manifest.buffers[2].weight = "v";
  writeBundle(manifest);
  EXPECT_EQ(loadError(), dir_ + "/weights.safetensors: no tensor 'v' for buffers[2] 'w'");

  manifest = sampleManifest();
  manifest.launches[1].args = {3, 4};
  writeBundle(manifest);
  EXPECT_EQ(loadError(), "launches[1] (extern aten.add): its graph has 2 inputs and 1 outputs, "
                         "but the launch passes 2 buffers");
}

TEST_F(RuntimeTest, VerifiesBundleFiles) {
  std::string so = std::string("cpu/") + kHostArch + ".so";
  // A corrupt file: its digest no longer matches the manifest's.
  writeBundle(sampleManifest());
  {
    std::fstream file(fs::path(dir_) / so, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x5a');
  }
  EXPECT_EQ(loadError(), dir_ + "/" + so + ": corrupt (its SHA-256 does not match the manifest's)");

  // A variant symlinked to a file outside the bundle (even one with the right digest).
  writeBundle(sampleManifest());
  fs::path outside = fs::path(dir_).parent_path() / (fs::path(dir_).filename().string() + ".so");
  fs::copy_file(fs::path(dir_) / so, outside, fs::copy_options::overwrite_existing);
  fs::remove(fs::path(dir_) / so);
  fs::create_symlink(outside, fs::path(dir_) / so);
  std::string error = loadError();
  fs::remove(outside);
  EXPECT_EQ(error.rfind(dir_ + "/" + so + ": resolves to ", 0), 0u) << error;
  EXPECT_NE(error.find(", outside the bundle (symlinks must stay inside it)"), std::string::npos)
      << error;

  // A variant built for another architecture says so, not "no such file".
  writeBundle(sampleManifest());
  std::string bytes;
  {
    std::ifstream in(fs::path(dir_) / so, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  uint16_t other = std::string(kOtherArch) == "aarch64" ? 183 : 62; // ELF e_machine
  bytes[18] = char(other & 0xff);
  bytes[19] = char(other >> 8);
  std::ofstream(fs::path(dir_) / so, std::ios::binary | std::ios::trunc) << bytes;
  Manifest manifest = sampleManifest();
  manifest.files = {{so, sha256Hex(bytes)},
                    {"weights.safetensors", sha256File(dir_ + "/weights.safetensors").value()}};
  std::ofstream(fs::path(dir_) / "manifest.json", std::ios::trunc) << manifest.toJson().dump(2);
  EXPECT_EQ(loadError(),
            dir_ + "/" + so + ": built for " + kOtherArch + ", but this machine is " + kHostArch);
}

TEST_F(RuntimeTest, ChecksTheManifestAgainstTheKernelsSignatures) {
  // The sample's first kernel writes buffer 3 (f32[batch, 4]); shrinking it would let it write
  // past the arena slot.
  Manifest manifest = sampleManifest();
  manifest.buffers[3].shape = {expr("batch"), constant(1)};
  writeBundle(manifest);
  std::string so = dir_ + "/cpu/" + kHostArch + ".so";
  EXPECT_EQ(loadError(), "launches[0] (kernel tc_test_add_f32): argument 2 is buffer 'sum' "
                         "f32[batch, 1], but the kernel in " +
                             so + " was compiled for f32[batch, 4]");
  manifest = sampleManifest();
  manifest.launches[0].args = {0, 1};
  writeBundle(manifest);
  EXPECT_EQ(loadError(), "launches[0] (kernel tc_test_add_f32): passes 2 arguments, but the "
                         "kernel in " +
                             so + " takes 3");
}

TEST_F(RuntimeTest, RefusesTooManyThreadsAndOversizedBuffers) {
  writeBundle(sampleManifest());
  EXPECT_EQ(loadError({100000, ""}), "threads must be 0 (one per core) or 1 to 1024, got 100000");
  rt::LoadOptions options;
  options.maxTensorBytes = 64; // the sample's outputs are 16*batch and 4*batch bytes
  auto model = load(options);
  ASSERT_TRUE(model);
  EXPECT_TRUE(model->run({filled({4, 4}, 0), filled({4, 4}, 0)}));
  auto outputs = model->run({filled({5, 4}, 0), filled({5, 4}, 0)});
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error().message(),
            "output 'out' is f32[5, 4] (80 bytes), more than the tensor size limit of 64 bytes "
            "(raise it with --max-tensor-bytes or TENSORC_MAX_TENSOR_BYTES)");
}

TEST_F(RuntimeTest, CApiLoadsRunsAndFrees) {
  writeBundle(sampleManifest());
  tc_load_options options{2, nullptr};
  tc_model *model = nullptr;
  tc_status *status = tc_model_load(dir_.c_str(), &options, &model);
  ASSERT_EQ(status, nullptr) << tc_status_message(status);

  size_t numInputs = 0, numOutputs = 0;
  ASSERT_EQ(tc_model_num_inputs(model, &numInputs), nullptr);
  ASSERT_EQ(tc_model_num_outputs(model, &numOutputs), nullptr);
  EXPECT_EQ(numInputs, 2u);
  EXPECT_EQ(numOutputs, 2u);
  tc_tensor_info info{};
  ASSERT_EQ(tc_model_input_info(model, 1, &info), nullptr);
  EXPECT_STREQ(info.name, "y");
  EXPECT_EQ(info.dtype, TC_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_EQ(info.dims[1], 4);
  status = tc_model_output_info(model, 2, &info);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tc_status_get_code(status), TC_INVALID_ARGUMENT);
  tc_status_free(status);

  Tensor x = filled({3, 4}, 1), y = filled({3, 4}, 2);
  int64_t shape[2] = {3, 4};
  tc_tensor inputs[2] = {{TC_F32, 2, shape, x.mutableData()}, {TC_F32, 2, shape, y.mutableData()}};
  // Output 0 into the caller's buffer, output 1 allocated by the library.
  std::vector<float> out(12);
  tc_tensor outputs[2] = {{TC_F32, 2, shape, out.data()}, {TC_F32, 0, nullptr, nullptr}};
  status = tc_model_run(model, inputs, 2, outputs, 2);
  ASSERT_EQ(status, nullptr) << tc_status_message(status);
  for (int i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(out[size_t(i)], x.dataAs<float>()[i] + y.dataAs<float>()[i] + kWeights[i % 4]);
  ASSERT_EQ(outputs[1].rank, 1);
  EXPECT_EQ(outputs[1].shape[0], 3);
  EXPECT_EQ(static_cast<float *>(outputs[1].data)[2], 3002.0f);
  tc_tensor_free(&outputs[1]);
  EXPECT_EQ(outputs[1].data, nullptr);

  // A caller buffer of the wrong shape, and inputs the manifest rejects, are errors; the first
  // leaves the caller's buffers as they were.
  std::vector<float> before = out;
  int64_t wrong[2] = {3, 5};
  outputs[0].shape = wrong;
  status = tc_model_run(model, inputs, 2, outputs, 2);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tc_status_get_code(status), TC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tc_status_message(status)).find("outputs[0] ('out')"), std::string::npos);
  EXPECT_EQ(outputs[1].data, nullptr);
  EXPECT_EQ(out, before);
  tc_status_free(status);
  inputs[1].dtype = TC_I64;
  status = tc_model_run(model, inputs, 2, outputs, 2);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tc_status_get_code(status), TC_RUN_ERROR);
  EXPECT_STREQ(tc_status_message(status), "input 'y' is i64[3, 4], expected f32[batch, 4]");
  tc_status_free(status);
  tc_model_free(model);
}

TEST_F(RuntimeTest, OutputsGoWhereTheCallerSays) {
  writeBundle(sampleManifest());
  auto model = load({2, ""});
  ASSERT_TRUE(model);
  Tensor x = filled({3, 4}, 1), y = filled({3, 4}, 2);
  // Model::run with output memory: the outputs view it (the kernels wrote there).
  std::vector<float> out(12, -1.0f), rows(3, -1.0f);
  void *places[2] = {out.data(), rows.data()};
  auto outputs = model->run(
      {x, y}, nullptr,
      [&](size_t i, DType, const std::vector<int64_t> &) -> Expected<void *> { return places[i]; });
  ASSERT_TRUE(outputs) << outputs.error().message();
  EXPECT_EQ((*outputs)[0].data(), out.data());
  EXPECT_EQ((*outputs)[1].data(), rows.data());
  expectSampleResults(*outputs, x, y);

  // Through the C API, an output buffer that is also an input still gets the right result (the
  // library runs it in its own memory and copies).
  tc_load_options options{2, nullptr};
  tc_model *capi = nullptr;
  ASSERT_EQ(tc_model_load(dir_.c_str(), &options, &capi), nullptr);
  Tensor original = x.clone();
  int64_t shape[2] = {3, 4};
  tc_tensor inputs[2] = {{TC_F32, 2, shape, x.mutableData()}, {TC_F32, 2, shape, y.mutableData()}};
  tc_tensor results[2] = {{TC_F32, 2, shape, x.mutableData()}, {TC_F32, 0, nullptr, nullptr}};
  tc_status *status = tc_model_run(capi, inputs, 2, results, 2);
  ASSERT_EQ(status, nullptr) << tc_status_message(status);
  for (int i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(x.dataAs<float>()[i],
                    original.dataAs<float>()[i] + y.dataAs<float>()[i] + kWeights[i % 4]);
  tc_tensor_free(&results[1]);
  tc_model_free(capi);
}

TEST_F(RuntimeTest, CApiReportsBadPath) {
  tc_model *model = reinterpret_cast<tc_model *>(1);
  tc_status *status = tc_model_load((dir_ + "/missing").c_str(), nullptr, &model);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(tc_status_get_code(status), TC_LOAD_ERROR);
  EXPECT_NE(std::string(tc_status_message(status)).find("missing/manifest.json"),
            std::string::npos);
  tc_status_free(status);
  status = tc_model_load(nullptr, nullptr, &model);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tc_status_get_code(status), TC_INVALID_ARGUMENT);
  tc_status_free(status);
  EXPECT_STREQ(tc_status_message(nullptr), "");
  EXPECT_EQ(tc_dtype_size(TC_BF16), 2u);
}
