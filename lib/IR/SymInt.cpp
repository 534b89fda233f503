// SymInt arithmetic, canonical printing and evaluation.
#include "tensorc/IR/SymInt.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <climits>
#include <numeric>

namespace tensorc {

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

int64_t floorModInt(int64_t a, int64_t b) { return a - floorDivInt(a, b) * b; }

namespace {

std::string monomialKey(const SymInt::Monomial &monomial) {
  std::string key;
  for (const SymInt::AtomPtr &atom : monomial) {
    if (!key.empty())
      key += "*";
    key += atom->text;
  }
  return key;
}

SymInt::AtomPtr makeAtom(SymInt::Atom atom) {
  // Sums print in parentheses so that "(s0 + 1)//2" reads back the same way.
  auto wrap = [](const SymInt &value) {
    std::string text = value.str();
    bool simple = text.find_first_of(" *") == std::string::npos;
    return simple ? text : "(" + text + ")";
  };
  switch (atom.kind) {
  case SymInt::Atom::Kind::Symbol:
    atom.text = atom.name;
    break;
  case SymInt::Atom::Kind::FloorDiv:
    atom.text = wrap(atom.numerator) + "//" + std::to_string(atom.denominator);
    break;
  case SymInt::Atom::Kind::Mod:
    atom.text = wrap(atom.numerator) + "%" + std::to_string(atom.denominator);
    break;
  }
  return std::make_shared<const SymInt::Atom>(std::move(atom));
}

} // namespace

SymInt::SymInt(int64_t constant) {
  if (constant != 0)
    terms_[""] = {Monomial{}, constant};
  text_ = str();
}

SymInt SymInt::fromTerms(std::map<std::string, std::pair<Monomial, int64_t>> terms) {
  SymInt result;
  for (auto &[key, term] : terms)
    if (term.second != 0)
      result.terms_.emplace(key, std::move(term));
  result.text_ = result.str();
  return result;
}

SymInt SymInt::symbol(const std::string &name) {
  Atom atom;
  atom.kind = Atom::Kind::Symbol;
  atom.name = name;
  AtomPtr ptr = makeAtom(std::move(atom));
  std::map<std::string, std::pair<Monomial, int64_t>> terms;
  terms[ptr->text] = {Monomial{ptr}, 1};
  return fromTerms(std::move(terms));
}

bool SymInt::isConstant() const {
  return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty());
}

std::optional<int64_t> SymInt::constant() const {
  if (terms_.empty())
    return 0;
  if (isConstant())
    return terms_.begin()->second.second;
  return std::nullopt;
}

std::optional<std::string> SymInt::symbolName() const {
  if (terms_.size() != 1)
    return std::nullopt;
  const auto &[monomial, coefficient] = terms_.begin()->second;
  if (coefficient != 1 || monomial.size() != 1 || monomial[0]->kind != Atom::Kind::Symbol)
    return std::nullopt;
  return monomial[0]->name;
}

SymInt SymInt::operator+(const SymInt &other) const {
  auto terms = terms_;
  for (const auto &[key, term] : other.terms_) {
    auto [it, inserted] = terms.emplace(key, term);
    if (!inserted)
      it->second.second += term.second;
  }
  return fromTerms(std::move(terms));
}

SymInt SymInt::operator-(const SymInt &other) const { return *this + (-other); }

SymInt SymInt::operator*(const SymInt &other) const {
  std::map<std::string, std::pair<Monomial, int64_t>> terms;
  for (const auto &[keyA, termA] : terms_) {
    for (const auto &[keyB, termB] : other.terms_) {
      Monomial monomial = termA.first;
      monomial.insert(monomial.end(), termB.first.begin(), termB.first.end());
      std::sort(monomial.begin(), monomial.end(),
                [](const AtomPtr &a, const AtomPtr &b) { return a->text < b->text; });
      std::string key = monomialKey(monomial);
      auto [it, inserted] = terms.emplace(key, std::make_pair(monomial, termA.second * termB.second));
      if (!inserted)
        it->second.second += termA.second * termB.second;
    }
  }
  return fromTerms(std::move(terms));
}

SymInt SymInt::floorDiv(const SymInt &numerator, int64_t denominator) {
  if (denominator == 1)
    return numerator;
  if (auto value = numerator.constant())
    return SymInt(floorDivInt(*value, denominator));
  if (auto exact = exactDiv(numerator, SymInt(denominator)))
    return *exact;
  Atom atom;
  atom.kind = Atom::Kind::FloorDiv;
  atom.numerator = numerator;
  atom.denominator = denominator;
  AtomPtr ptr = makeAtom(std::move(atom));
  std::map<std::string, std::pair<Monomial, int64_t>> terms;
  terms[ptr->text] = {Monomial{ptr}, 1};
  return fromTerms(std::move(terms));
}

SymInt SymInt::mod(const SymInt &numerator, int64_t denominator) {
  if (denominator == 1)
    return SymInt(0);
  if (auto value = numerator.constant())
    return SymInt(floorModInt(*value, denominator));
  if (exactDiv(numerator, SymInt(denominator)))
    return SymInt(0);
  Atom atom;
  atom.kind = Atom::Kind::Mod;
  atom.numerator = numerator;
  atom.denominator = denominator;
  AtomPtr ptr = makeAtom(std::move(atom));
  std::map<std::string, std::pair<Monomial, int64_t>> terms;
  terms[ptr->text] = {Monomial{ptr}, 1};
  return fromTerms(std::move(terms));
}

std::optional<SymInt> SymInt::exactDiv(const SymInt &a, const SymInt &b) {
  if (b.terms_.size() != 1)
    return a == b ? std::optional<SymInt>(SymInt(1)) : std::nullopt;
  const auto &[divisorAtoms, divisorCoefficient] = b.terms_.begin()->second;
  if (divisorCoefficient == 0)
    return std::nullopt;
  std::map<std::string, std::pair<Monomial, int64_t>> terms;
  for (const auto &[key, term] : a.terms_) {
    if ((divisorCoefficient == -1 && term.second == INT64_MIN) ||
        term.second % divisorCoefficient != 0)
      return std::nullopt; // INT64_MIN / -1 overflows
    Monomial remaining = term.first;
    for (const AtomPtr &atom : divisorAtoms) {
      auto it = std::find_if(remaining.begin(), remaining.end(),
                             [&](const AtomPtr &candidate) { return candidate->text == atom->text; });
      if (it == remaining.end())
        return std::nullopt;
      remaining.erase(it);
    }
    terms[monomialKey(remaining)] = {remaining, term.second / divisorCoefficient};
  }
  return fromTerms(std::move(terms));
}

std::string SymInt::str() const {
  if (terms_.empty())
    return "0";
  std::string out;
  // The constant term (key "") sorts first in the map; print it last.
  std::vector<const std::pair<Monomial, int64_t> *> ordered;
  for (const auto &[key, term] : terms_)
    if (!key.empty())
      ordered.push_back(&term);
  if (auto it = terms_.find(""); it != terms_.end())
    ordered.push_back(&it->second);
  for (const auto *term : ordered) {
    int64_t coefficient = term->second;
    bool negative = coefficient < 0;
    uint64_t magnitude = negative ? uint64_t(0) - uint64_t(coefficient) : uint64_t(coefficient);
    if (out.empty())
      out += negative ? "-" : "";
    else
      out += negative ? " - " : " + ";
    std::string atoms = monomialKey(term->first);
    if (atoms.empty())
      out += std::to_string(magnitude);
    else if (magnitude == 1)
      out += atoms;
    else
      out += std::to_string(magnitude) + "*" + atoms;
  }
  return out;
}

Expected<int64_t> SymInt::evaluate(const SymbolBindings &bindings) const {
  int64_t total = 0;
  for (const auto &[key, term] : terms_) {
    int64_t product = term.second;
    for (const AtomPtr &atom : term.first) {
      int64_t value = 0;
      switch (atom->kind) {
      case Atom::Kind::Symbol: {
        auto it = bindings.find(atom->name);
        if (it == bindings.end())
          return makeError("symbol '", atom->name, "' has no value");
        value = it->second;
        break;
      }
      case Atom::Kind::FloorDiv: {
        TC_ASSIGN_OR_RETURN(int64_t numerator, atom->numerator.evaluate(bindings));
        value = floorDivInt(numerator, atom->denominator);
        break;
      }
      case Atom::Kind::Mod: {
        TC_ASSIGN_OR_RETURN(int64_t numerator, atom->numerator.evaluate(bindings));
        value = floorModInt(numerator, atom->denominator);
        break;
      }
      }
      if (__builtin_mul_overflow(product, value, &product))
        return makeError("symbolic expression ", text_, " overflows 64 bits");
    }
    if (__builtin_add_overflow(total, product, &total))
      return makeError("symbolic expression ", text_, " overflows 64 bits");
  }
  return total;
}

void SymInt::collectSymbols(std::set<std::string> &symbols) const {
  for (const auto &[key, term] : terms_)
    for (const AtomPtr &atom : term.first) {
      if (atom->kind == Atom::Kind::Symbol)
        symbols.insert(atom->name);
      else
        atom->numerator.collectSymbols(symbols);
    }
}

} // namespace tensorc
