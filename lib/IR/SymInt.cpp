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

/// `numerator // denominator` or `numerator % denominator`, as an atom.
SymInt::Atom divisionAtom(SymInt::Atom::Kind kind, const SymInt &numerator, int64_t denominator) {
  SymInt::Atom atom;
  atom.kind = kind;
  atom.numerator = numerator;
  atom.denominator = denominator;
  return atom;
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

SymInt SymInt::fromAtom(Atom atom) {
  AtomPtr ptr = makeAtom(std::move(atom));
  std::map<std::string, std::pair<Monomial, int64_t>> terms;
  terms[ptr->text] = {Monomial{ptr}, 1};
  return fromTerms(std::move(terms));
}

SymInt SymInt::symbol(const std::string &name) {
  Atom atom;
  atom.kind = Atom::Kind::Symbol;
  atom.name = name;
  return fromAtom(std::move(atom));
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

namespace {

// Coefficients saturate instead of overflowing (undefined behaviour): a hostile model's dims stay
// huge (and fail the size checks downstream) rather than wrapping around to small ones.
int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum))
    return sum;
  return a < 0 ? INT64_MIN : INT64_MAX;
}

int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (!__builtin_mul_overflow(a, b, &product))
    return product;
  return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

} // namespace

SymInt SymInt::operator+(const SymInt &other) const {
  auto terms = terms_;
  for (const auto &[key, term] : other.terms_) {
    auto [it, inserted] = terms.emplace(key, term);
    if (!inserted)
      it->second.second = saturatingAdd(it->second.second, term.second);
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
      int64_t coefficient = saturatingMul(termA.second, termB.second);
      auto [it, inserted] = terms.emplace(key, std::make_pair(monomial, coefficient));
      if (!inserted)
        it->second.second = saturatingAdd(it->second.second, coefficient);
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
  return fromAtom(divisionAtom(Atom::Kind::FloorDiv, numerator, denominator));
}

SymInt SymInt::mod(const SymInt &numerator, int64_t denominator) {
  if (denominator == 1)
    return SymInt(0);
  if (auto value = numerator.constant())
    return SymInt(floorModInt(*value, denominator));
  if (exactDiv(numerator, SymInt(denominator)))
    return SymInt(0);
  return fromAtom(divisionAtom(Atom::Kind::Mod, numerator, denominator));
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
      auto it = std::find_if(remaining.begin(), remaining.end(), [&](const AtomPtr &candidate) {
        return candidate->text == atom->text;
      });
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
    // In a product a division or remainder is parenthesized: "128*((s0 + 63)//64)" reads the
    // same in Python, where * and // bind equally from the left.
    bool product = term->first.size() > 1 || magnitude != 1;
    std::string atoms;
    for (const AtomPtr &atom : term->first) {
      if (!atoms.empty())
        atoms += "*";
      atoms += product && atom->kind != Atom::Kind::Symbol ? "(" + atom->text + ")" : atom->text;
    }
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

std::vector<std::pair<SymInt::Monomial, int64_t>> SymInt::termList() const {
  std::vector<std::pair<Monomial, int64_t>> terms;
  for (const auto &[key, term] : terms_)
    terms.push_back(term);
  return terms;
}

SymInt SymInt::substitute(const std::map<std::string, SymInt> &replacements) const {
  SymInt result(0);
  for (const auto &[key, term] : terms_) {
    SymInt product(term.second);
    for (const AtomPtr &atom : term.first) {
      switch (atom->kind) {
      case Atom::Kind::Symbol: {
        auto it = replacements.find(atom->name);
        product = product * (it == replacements.end() ? symbol(atom->name) : it->second);
        break;
      }
      case Atom::Kind::FloorDiv:
        product = product * floorDiv(atom->numerator.substitute(replacements), atom->denominator);
        break;
      case Atom::Kind::Mod:
        product = product * mod(atom->numerator.substitute(replacements), atom->denominator);
        break;
      }
    }
    result = result + product;
  }
  return result;
}

namespace {

/// Inclusive bounds of a value, when known.
struct Interval {
  bool known = false;
  int64_t lo = 0, hi = 0;
};

Interval multiply(Interval a, Interval b) {
  if (!a.known || !b.known)
    return {};
  int64_t products[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &products[0]) ||
      __builtin_mul_overflow(a.lo, b.hi, &products[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &products[2]) ||
      __builtin_mul_overflow(a.hi, b.hi, &products[3]))
    return {};
  return {true, *std::min_element(products, products + 4),
          *std::max_element(products, products + 4)};
}

Interval add(Interval a, Interval b) {
  Interval sum{true, 0, 0};
  if (!a.known || !b.known || __builtin_add_overflow(a.lo, b.lo, &sum.lo) ||
      __builtin_add_overflow(a.hi, b.hi, &sum.hi))
    return {};
  return sum;
}

Interval bounds(const SymInt &value, const std::map<std::string, int64_t> &limits) {
  Interval total{true, 0, 0};
  for (const auto &[atoms, coefficient] : value.termList()) {
    Interval term{true, coefficient, coefficient};
    for (const SymInt::AtomPtr &atom : atoms) {
      Interval factor;
      switch (atom->kind) {
      case SymInt::Atom::Kind::Symbol:
        if (auto it = limits.find(atom->name); it != limits.end())
          factor = {true, 0, it->second - 1};
        break;
      case SymInt::Atom::Kind::FloorDiv: {
        Interval n = bounds(atom->numerator, limits);
        if (n.known)
          factor = {true, floorDivInt(n.lo, atom->denominator),
                    floorDivInt(n.hi, atom->denominator)};
        break;
      }
      case SymInt::Atom::Kind::Mod:
        factor = {true, 0, atom->denominator - 1};
        break;
      }
      term = multiply(term, factor);
    }
    total = add(total, term);
  }
  return total;
}

} // namespace

SymInt SymInt::simplify(const std::map<std::string, int64_t> &limits) const {
  SymInt result(0);
  for (const auto &[key, term] : terms_) {
    SymInt product(term.second);
    for (const AtomPtr &atom : term.first) {
      if (atom->kind == Atom::Kind::Symbol) {
        product = product * symbol(atom->name);
        continue;
      }
      SymInt numerator = atom->numerator.simplify(limits);
      int64_t divisor = atom->denominator;
      std::vector<std::pair<Monomial, int64_t>> terms = numerator.termList();
      // Split the numerator as g*K + r with g dividing the divisor and every coefficient of K's
      // terms; when 0 <= r < g (r bounded by the loop variables' extents):
      //   (g*K + r)//d = K//(d/g) and (g*K + r)%d = g*(K%(d/g)) + r.
      // Tried from g = d down through the divisor's common factors with the coefficients:
      // (3072*x0 + x1)//393216 = x0//128 for x1 < 3072 (a merged dim's view). When none fits,
      // the exact part still leaves: (d*K + r)//d = K + r//d and (d*K + r)%d = r%d.
      std::vector<int64_t> factors{divisor};
      for (const auto &[atoms, coefficient] : terms) {
        int64_t g = std::gcd(coefficient, divisor);
        if (g > 1 && std::find(factors.begin(), factors.end(), g) == factors.end())
          factors.push_back(g);
      }
      std::sort(factors.begin() + 1, factors.end(), std::greater<>());
      // multiple = g*K (the terms whose coefficient g divides, as K) and the rest r.
      auto split = [&](int64_t g) {
        SymInt multiple(0), rest(0);
        for (const auto &[atoms, coefficient] : terms) {
          SymInt part(coefficient);
          for (const AtomPtr &inner : atoms)
            part = part * fromTerms({{inner->text, {Monomial{inner}, 1}}});
          if (coefficient % g == 0)
            multiple = multiple + part;
          else
            rest = rest + part;
        }
        return std::pair{*exactDiv(multiple, SymInt(g)), rest};
      };
      std::optional<SymInt> folded;
      for (int64_t g : factors) {
        auto [quotient, rest] = split(g);
        Interval restBounds = bounds(rest, limits);
        if (!restBounds.known || restBounds.lo < 0 || restBounds.hi >= g)
          continue;
        folded = atom->kind == Atom::Kind::FloorDiv ? floorDiv(quotient, divisor / g)
                                                    : SymInt(g) * mod(quotient, divisor / g) + rest;
        break;
      }
      if (!folded) { // only the exact part leaves the division
        auto [quotient, rest] = split(divisor);
        folded = atom->kind == Atom::Kind::FloorDiv ? quotient + floorDiv(rest, divisor)
                                                    : mod(rest, divisor);
      }
      product = product * *folded;
    }
    result = result + product;
  }
  return recombineDivMod(result);
}

SymInt SymInt::recombineDivMod(const SymInt &value) {
  // c*m*(n//m) + c*(n%m) = c*n for floor division and its remainder (any sign of n): a dim split
  // by one view and merged back by the next. When n is itself q//a, n//m is kept as q//(a*m)
  // (floorDiv folds nested divisions), so that form matches too: a reshape of [rows, C] into
  // [N, H, W, C] and back ((x0//56)%56 and x0//3136 of x0 < 25088) recombines level by level.
  std::vector<std::pair<Monomial, int64_t>> terms = value.termList();
  for (const auto &[modAtoms, c] : terms) {
    if (modAtoms.size() != 1 || modAtoms[0]->kind != Atom::Kind::Mod)
      continue;
    const Atom &rem = *modAtoms[0];
    int64_t want = 0;
    if (__builtin_mul_overflow(c, rem.denominator, &want))
      continue;
    // rem.numerator as q//a (a single floor division), for the nested form.
    const Atom *inner = nullptr;
    int64_t nested = 0;
    if (std::vector<std::pair<Monomial, int64_t>> n = rem.numerator.termList();
        rem.denominator > 0 && n.size() == 1 && n[0].second == 1 && n[0].first.size() == 1 &&
        n[0].first[0]->kind == Atom::Kind::FloorDiv && n[0].first[0]->denominator > 0 &&
        !__builtin_mul_overflow(n[0].first[0]->denominator, rem.denominator, &nested))
      inner = n[0].first[0].get();
    for (const auto &[divAtoms, coefficient] : terms) {
      if (divAtoms.size() != 1 || divAtoms[0]->kind != Atom::Kind::FloorDiv || coefficient != want)
        continue;
      const Atom &div = *divAtoms[0];
      bool direct = div.denominator == rem.denominator && div.numerator == rem.numerator;
      bool viaInner = inner && div.denominator == nested && div.numerator == inner->numerator;
      if (!direct && !viaInner)
        continue;
      SymInt rest = value - SymInt(c) * fromTerms({{rem.text, {modAtoms, 1}}}) -
                    SymInt(want) * fromTerms({{divAtoms[0]->text, {divAtoms, 1}}});
      return recombineDivMod(rest + SymInt(c) * rem.numerator);
    }
  }
  return value;
}

} // namespace tensorc
