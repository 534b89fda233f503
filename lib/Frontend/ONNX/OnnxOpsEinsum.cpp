// ONNX Einsum: the equation parsed, repeated letters taken as diagonals, then the operands
// contracted pairwise with batched matmuls and unused letters summed out.
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "ViewEmitters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace tensorc::onnx {

using Ints = std::vector<int64_t>;

namespace {

/// An operand of the contraction: its value and one subscript letter per dim.
struct Term {
  Value *value;
  std::string letters;
};

/// Sums the letters of `term` not in `keep`.
Expected<Term> sumOut(ConvertContext &c, Term term, const std::string &keep) {
  Ints dims;
  std::string kept;
  for (size_t i = 0; i < term.letters.size(); ++i) {
    if (keep.find(term.letters[i]) == std::string::npos)
      dims.push_back(int64_t(i));
    else
      kept += term.letters[i];
  }
  if (dims.empty())
    return term;
  TC_ASSIGN_OR_RETURN(term.value,
                      reduceOp(c, "aten.sum", term.value, dims, false, term.value->type().dtype));
  term.letters = kept;
  return term;
}

/// `term` permuted so that its letters read `order` (a permutation of them).
Expected<Value *> permuteLetters(ConvertContext &c, const Term &term, const std::string &order) {
  Ints perm;
  for (char letter : order)
    perm.push_back(int64_t(term.letters.find(letter)));
  return permuteTo(c, term.value, perm);
}

/// Contracts two terms with one batched matmul: [batch, aOnly, shared] x [batch, shared, bOnly].
/// Letters of each term that `keep` lacks and the other term lacks are summed first.
Expected<Term> contract(ConvertContext &c, Term a, Term b, const std::string &keep) {
  TC_ASSIGN_OR_RETURN(a, sumOut(c, a, keep + b.letters));
  TC_ASSIGN_OR_RETURN(b, sumOut(c, b, keep + a.letters));
  std::string batch, aOnly, bOnly, shared;
  for (char letter : a.letters) {
    bool inB = b.letters.find(letter) != std::string::npos;
    bool kept = keep.find(letter) != std::string::npos;
    (inB ? (kept ? batch : shared) : aOnly) += letter;
  }
  for (char letter : b.letters)
    if (a.letters.find(letter) == std::string::npos)
      bOnly += letter;
  auto sizes = [](const Term &term, const std::string &letters) {
    std::vector<SymInt> result;
    for (char letter : letters)
      result.push_back(term.value->type().shape[term.letters.find(letter)]);
    return result;
  };
  std::vector<SymInt> batchSizes = sizes(a, batch), aSizes = sizes(a, aOnly),
                      bSizes = sizes(b, bOnly), sharedSizes = sizes(a, shared);
  TC_ASSIGN_OR_RETURN(Value * left, permuteLetters(c, a, batch + aOnly + shared));
  TC_ASSIGN_OR_RETURN(left,
                      reshapeTo(c, left, {numel(batchSizes), numel(aSizes), numel(sharedSizes)}));
  TC_ASSIGN_OR_RETURN(Value * right, permuteLetters(c, b, batch + shared + bOnly));
  TC_ASSIGN_OR_RETURN(right,
                      reshapeTo(c, right, {numel(batchSizes), numel(sharedSizes), numel(bSizes)}));
  TC_ASSIGN_OR_RETURN(Value * result, c.emit("aten.bmm", {left, right}));
  std::vector<SymInt> shape = batchSizes;
  shape.insert(shape.end(), aSizes.begin(), aSizes.end());
  shape.insert(shape.end(), bSizes.begin(), bSizes.end());
  TC_ASSIGN_OR_RETURN(result, reshapeTo(c, result, shape));
  return Term{result, batch + aOnly + bOnly};
}

/// Takes the diagonal of every letter repeated within `term` ("ii->i"): the operand times an
/// identity mask, summed over the second occurrence. Needs the repeated dims' size at import.
Expected<Term> takeDiagonals(ConvertContext &c, Term term, const std::string &equation) {
  for (size_t first = 0; first < term.letters.size();) {
    size_t second = term.letters.find(term.letters[first], first + 1);
    if (second == std::string::npos) {
      ++first;
      continue;
    }
    const Shape &shape = term.value->type().shape;
    std::optional<int64_t> size = shape[first].constant();
    if (!size || shape[second].constant() != size)
      return c.error(strCat("equation '", equation, "': repeated subscript '", term.letters[first],
                            "' needs equal dims known at import time"));
    std::vector<int64_t> maskShape(shape.size(), 1);
    maskShape[first] = maskShape[second] = *size;
    TC_ASSIGN_OR_RETURN(Tensor mask,
                        c.newTensor(term.value->type().dtype, maskShape, "the diagonal mask"));
    int64_t stride = 1;
    for (size_t i = second + 1; i < shape.size(); ++i)
      stride *= maskShape[i];
    int64_t firstStride = stride;
    for (size_t i = first + 1; i <= second; ++i)
      firstStride *= maskShape[i];
    for (int64_t k = 0; k < *size; ++k)
      mask.setDouble(k * firstStride + k * stride, 1);
    TC_ASSIGN_OR_RETURN(Value * maskValue, c.constant(std::move(mask)));
    TC_ASSIGN_OR_RETURN(Value * masked, c.emit("aten.mul", {term.value, maskValue}));
    TC_ASSIGN_OR_RETURN(term.value, reduceOp(c, "aten.sum", masked, {int64_t(second)}, false,
                                             masked->type().dtype));
    term.letters.erase(second, 1); // the letter may repeat a third time: look again
  }
  return term;
}

/// Replaces "..." in `subscripts` by `count` letters of `ellipsis` (right-aligned).
Expected<std::string> expandEllipsis(ConvertContext &c, const std::string &subscripts, size_t count,
                                     const std::string &ellipsis) {
  size_t at = subscripts.find("...");
  if (at == std::string::npos)
    return subscripts;
  if (count > ellipsis.size())
    return c.error("the ellipsis covers more dims than the operands have");
  std::string rest = subscripts.substr(at + 3);
  if (rest.find('.') != std::string::npos)
    return c.error("more than one ellipsis in one term");
  return subscripts.substr(0, at) + ellipsis.substr(ellipsis.size() - count) + rest;
}

} // namespace

Status convertEinsum(ConvertContext &c) {
  std::string equation;
  for (char ch : c.stringAttr("equation", ""))
    if (ch != ' ')
      equation += ch;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> subscripts;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    subscripts.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (subscripts.size() != c.numInputs())
    return c.error(strCat("equation '", equation, "' has ", subscripts.size(), " terms for ",
                          c.numInputs(), " inputs"));
  // Ellipsis dims get the letters '0'.. (not valid subscripts), right-aligned across operands.
  std::vector<Term> terms;
  size_t ellipsisDims = 0;
  for (size_t i = 0; i < subscripts.size(); ++i) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
    size_t explicitLetters = 0;
    for (char ch : subscripts[i])
      explicitLetters += ch != '.';
    if (subscripts[i].find("...") != std::string::npos && value->type().rank() >= explicitLetters)
      ellipsisDims = std::max(ellipsisDims, value->type().rank() - explicitLetters);
    terms.push_back({value, subscripts[i]});
  }
  const std::string ellipsis = "0123456789";
  for (Term &term : terms) {
    size_t explicitLetters = 0;
    for (char ch : term.letters)
      explicitLetters += ch != '.';
    size_t rank = term.value->type().rank();
    TC_ASSIGN_OR_RETURN(term.letters,
                        expandEllipsis(c, term.letters,
                                       rank >= explicitLetters ? rank - explicitLetters : 0,
                                       ellipsis));
    if (term.letters.size() != rank)
      return c.error(strCat("term '", term.letters, "' does not match operand of rank ", rank));
  }
  std::string output;
  if (arrow != std::string::npos) {
    TC_ASSIGN_OR_RETURN(output,
                        expandEllipsis(c, equation.substr(arrow + 2), ellipsisDims, ellipsis));
  } else {
    // Implicit output: the ellipsis dims, then the letters used once, alphabetically.
    output = ellipsis.substr(ellipsis.size() - ellipsisDims);
    std::string all;
    for (const Term &term : terms)
      all += term.letters;
    std::string once;
    for (char letter : all)
      if (std::isalpha(static_cast<unsigned char>(letter)) &&
          std::count(all.begin(), all.end(), letter) == 1)
        once += letter;
    std::sort(once.begin(), once.end());
    output += once;
  }
  for (Term &term : terms) {
    TC_ASSIGN_OR_RETURN(term, takeDiagonals(c, term, equation));
  }
  for (char letter : output) {
    bool known = false;
    for (const Term &term : terms)
      known = known || term.letters.find(letter) != std::string::npos;
    if (!known || std::count(output.begin(), output.end(), letter) != 1)
      return c.error(strCat("equation '", equation, "': bad output subscript '", letter, "'"));
  }
  // Fold left: each contraction keeps the letters the output or a later operand needs.
  Term result = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::string keep = output;
    for (size_t j = i + 1; j < terms.size(); ++j)
      keep += terms[j].letters;
    TC_ASSIGN_OR_RETURN(result, contract(c, result, terms[i], keep));
  }
  TC_ASSIGN_OR_RETURN(result, sumOut(c, result, output));
  TC_ASSIGN_OR_RETURN(Value * value, permuteLetters(c, result, output));
  if (value == terms[0].value) {
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.clone", {value}));
  }
  return c.setOutput(0, value);
}

} // namespace tensorc::onnx
