// `tensorc minify`: delta debugging over a model's nodes, inputs and dims, one child process per
// check.
#include "tensorc/Debug/Minify.h"

#include "FailureCheck.h"
#include "Reducible.h"
#include "TempDir.h"

#include "tensorc/Support/StrCat.h"

#include <cctype>
#include <filesystem>

namespace tensorc::debug {

std::string failureSignature(const std::string &message) {
  size_t colon = message.rfind(": ");
  std::string cause = colon == std::string::npos ? message : message.substr(colon + 2);
  std::string signature;
  for (char c : cause) {
    bool digit = std::isdigit(static_cast<unsigned char>(c));
    if (!digit)
      signature += c;
    else if (signature.empty() || signature.back() != '#')
      signature += '#';
  }
  return signature;
}

namespace {

/// The largest power of two not above `n` (1 for n <= 1).
size_t floorPowerOfTwo(size_t n) {
  size_t power = 1;
  while (power * 2 <= n)
    power *= 2;
  return power;
}

class Minifier {
public:
  Minifier(const std::string &path, const OpRegistry &registry, const MinifyOptions &options,
           const std::function<void(const std::string &)> &print)
      : path_(path), registry_(registry), options_(options), print_(print) {}

  Expected<MinifyResult> run() {
    if (options_.check == "compile")
      check_.until = CheckStage::Compile;
    else if (options_.check == "run")
      check_.until = CheckStage::Run;
    else if (options_.check == "accuracy")
      check_.until = CheckStage::Accuracy;
    else
      return makeError("--check must be compile, run or accuracy, got '", options_.check, "'");
    TC_ASSIGN_OR_RETURN(current_, loadReducible(path_, registry_));
    if (!options_.output.ends_with(current_->extension()))
      return makeError("-o ", options_.output, ": the reduced model of ", path_, " is written as ",
                       current_->extension());
    TC_ASSIGN_OR_RETURN(work_, TempDir::create("tensorc-minify"));
    check_.target = options_.target;
    check_.variant = options_.variant;
    check_.cudaArch = options_.cudaArch;
    check_.cudaDevice = options_.cudaDevice;
    check_.seed = options_.seed;
    check_.dims = options_.dims;
    check_.timeoutSeconds = options_.timeoutSeconds;
    check_.workDir = work_.path();

    CheckOutcome original = checkModelFile(path_, registry_, check_);
    ++checks_;
    if (original.stage != check_.until)
      return makeError(
          path_, ": the model does not fail --check ", options_.check, " (",
          original.stage == CheckStage::Pass
              ? std::string("it passes")
              : strCat("it ", checkStageName(original.stage), " fails: ", original.message),
          ")");
    signature_ = failureSignature(original.message);
    print_(strCat("minify ", path_, " (--check ", options_.check, "): ", current_->numNodes(),
                  " nodes; fails: ", original.message));
    print_(options_.match.empty()
               ? "  a reduction is kept while it fails with: " + signature_
               : "  a reduction is kept while its failure contains: " + options_.match);
    MinifyResult result;
    result.nodesBefore = current_->numNodes();

    for (bool changed = true; changed && budgetLeft();) {
      changed = keepOneOutput() || truncate() || cutInputs() || bypassNodes();
    }
    shrinkDims();

    TC_RETURN_IF_ERROR(current_->save(options_.output));
    CheckOutcome final = checkModelFile(options_.output, registry_, check_);
    ++checks_;
    if (!persists(final))
      return makeError(options_.output, ": the written model no longer fails (",
                       checkStageName(final.stage), ": ", final.message, ")");
    result.nodesAfter = current_->numNodes();
    result.checks = checks_;
    result.failure = final.message;
    std::vector<std::string> nodes;
    for (size_t i = 0; i < current_->numNodes(); ++i)
      nodes.push_back(current_->describeNode(i));
    std::vector<std::string> inputs;
    for (const auto &[name, dims] : current_->inputShapes()) {
      std::vector<std::string> text;
      for (int64_t dim : dims)
        text.push_back(dim < 0 ? std::string("?") : std::to_string(dim));
      inputs.push_back(strCat(name, " [", join(text, ", "), "]"));
    }
    print_(strCat("wrote ", options_.output, ": ", result.nodesBefore, " -> ", result.nodesAfter,
                  " nodes (", nodes.empty() ? std::string("none") : join(nodes, ", "), "), inputs ",
                  inputs.empty() ? std::string("none") : join(inputs, ", "), "; ", checks_,
                  " checks"));
    print_("  still fails: " + final.message);
    return result;
  }

private:
  bool budgetLeft() const { return checks_ < options_.maxChecks; }

  bool persists(const CheckOutcome &outcome) const {
    if (outcome.stage != check_.until)
      return false;
    if (!options_.match.empty())
      return outcome.message.find(options_.match) != std::string::npos;
    return check_.until == CheckStage::Accuracy || failureSignature(outcome.message) == signature_;
  }

  /// Applies `edit` to a copy; keeps the copy when the edit applies and the copy still fails.
  template <typename Edit> bool tryEdit(const std::string &what, Edit edit) {
    if (!budgetLeft())
      return false;
    std::unique_ptr<Reducible> candidate = current_->clone();
    if (!edit(*candidate))
      return false;
    std::string file = strCat(work_.path(), "/candidate", candidates_++, candidate->extension());
    if (!candidate->save(file))
      return false;
    CheckOutcome outcome = checkModelFile(file, registry_, check_);
    ++checks_;
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
    std::filesystem::remove(file.substr(0, file.size() - 3) + ".safetensors", ignored);
    if (!persists(outcome))
      return false;
    print_(strCat("  ", what, ": ", current_->numNodes(), " -> ", candidate->numNodes(),
                  " nodes, still fails"));
    current_ = std::move(candidate);
    return true;
  }

  bool keepOneOutput() {
    std::vector<std::string> outputs = current_->outputs();
    if (outputs.size() < 2)
      return false;
    for (const std::string &output : outputs)
      if (tryEdit("keep output " + output,
                  [&](Reducible &model) { return model.setOutputs({output}).isOk(); }))
        return true;
    return false;
  }

  /// Cuts after node i (its results become the outputs), trying cut points from the front at
  /// halving strides: the first that still fails drops everything after it and every branch it
  /// does not need.
  bool truncate() {
    return atHalvingStrides([&](size_t stride) {
      for (size_t i = stride - 1; i + 1 < current_->numNodes(); i += stride) {
        std::vector<std::string> values = current_->nodeOutputs(i);
        if (values.empty())
          continue;
        std::string what = "cut after " + current_->describeNode(i);
        if (tryEdit(what, [&](Reducible &model) { return model.setOutputs(values).isOk(); }))
          return true;
      }
      return false;
    });
  }

  /// Turns the results of a run of `stride` nodes into inputs (their producers and what only
  /// they needed go), at halving strides.
  bool cutInputs() {
    return atHalvingStrides([&](size_t stride) {
      for (size_t start = 0; start < current_->numNodes(); start += stride) {
        std::vector<std::string> values;
        for (size_t i = start; i < std::min(start + stride, current_->numNodes()); ++i)
          for (const std::string &value : current_->nodeOutputs(i))
            values.push_back(value);
        if (values.empty())
          continue;
        std::string what = stride == 1 ? "input from " + current_->describeNode(start)
                                       : strCat("inputs from nodes ", start, "..",
                                                std::min(start + stride, current_->numNodes()) - 1);
        if (tryEdit(what, [&](Reducible &model) { return model.makeInputs(values).isOk(); }))
          return true;
      }
      return false;
    });
  }

  /// Calls `attempt(stride)` at halving strides, from half the node count down to 1, while the
  /// budget lasts; an attempt whose edit stuck (true) starts the strides over on the smaller
  /// model.
  bool atHalvingStrides(const std::function<bool(size_t)> &attempt) {
    bool any = false;
    for (size_t stride = floorPowerOfTwo(std::max<size_t>(current_->numNodes() / 2, 1));
         stride >= 1 && budgetLeft(); stride /= 2) {
      if (attempt(stride)) {
        any = true;
        stride = floorPowerOfTwo(std::max<size_t>(current_->numNodes() / 2, 1)) * 2;
      }
    }
    return any;
  }

  /// Removes single nodes whose result has the type of one of their operands.
  bool bypassNodes() {
    bool any = false;
    for (size_t i = 0; i < current_->numNodes() && budgetLeft(); ++i)
      for (size_t input = 0; input < current_->numNodeInputs(i); ++input) {
        std::string what = "drop " + current_->describeNode(i);
        if (tryEdit(what, [&](Reducible &model) { return model.bypassNode(i, input).isOk(); })) {
          any = true;
          --i;
          break;
        }
      }
    return any;
  }

  /// Static input dims: 1 if the failure survives it, else halved while it does.
  void shrinkDims() {
    for (const auto &[input, dims] : current_->inputShapes())
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t size = dims[d];
        for (int64_t next : {int64_t(1), size / 2}) {
          while (next >= 1 && next < size && budgetLeft()) {
            std::string what = strCat("input ", input, " dim ", d, ": ", size, " -> ", next);
            if (!tryEdit(what, [&, name = input](Reducible &model) {
                  return model.setInputDim(name, d, next).isOk();
                }))
              break;
            size = next;
            next = size / 2;
          }
          if (size == 1)
            break;
        }
      }
  }

  const std::string &path_;
  const OpRegistry &registry_;
  const MinifyOptions &options_;
  const std::function<void(const std::string &)> &print_;
  CheckOptions check_;
  TempDir work_;
  std::unique_ptr<Reducible> current_;
  std::string signature_;
  int checks_ = 0;
  int candidates_ = 0;
};

} // namespace

Expected<MinifyResult> minifyModel(const std::string &modelPath, const OpRegistry &registry,
                                   const MinifyOptions &options,
                                   const std::function<void(const std::string &)> &print) {
  return Minifier(modelPath, registry, options, print).run();
}

} // namespace tensorc::debug
