// SymInt: a symbolic integer (dims and, later, index expressions) kept as a canonical polynomial.
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tensorc {

class SymInt;
using SymbolBindings = std::map<std::string, int64_t>;

/// A polynomial with integer coefficients over atoms; an atom is a symbol (`s0`), a floor
/// division `(e)//c` or a remainder `(e)%c` of a polynomial by a positive constant. Terms are kept
/// sorted and merged, so equal expressions compare equal (`4*s0 == s0*4`).
class SymInt {
public:
  SymInt(int64_t constant = 0);
  static SymInt symbol(const std::string &name);
  /// Python floor division / modulo by a positive constant; folds when exact or constant.
  static SymInt floorDiv(const SymInt &numerator, int64_t denominator);
  static SymInt mod(const SymInt &numerator, int64_t denominator);
  /// `a / b` when it divides exactly as polynomials (b constant or a single monomial).
  static std::optional<SymInt> exactDiv(const SymInt &a, const SymInt &b);

  bool isConstant() const;
  std::optional<int64_t> constant() const;
  /// The name when this is exactly one symbol with coefficient 1.
  std::optional<std::string> symbolName() const;

  SymInt operator+(const SymInt &other) const;
  SymInt operator-(const SymInt &other) const;
  SymInt operator*(const SymInt &other) const;
  SymInt operator-() const { return *this * SymInt(-1); }

  bool operator==(const SymInt &other) const { return key() == other.key(); }
  bool operator!=(const SymInt &other) const { return !(*this == other); }
  bool operator<(const SymInt &other) const { return key() < other.key(); }

  /// Canonical text: "s0", "4*s0 + 1", "(s0 + 1)//2". Parses back through the FX parser.
  std::string str() const;
  /// Value under `bindings`; errors name the first unbound symbol.
  Expected<int64_t> evaluate(const SymbolBindings &bindings) const;
  void collectSymbols(std::set<std::string> &symbols) const;
  /// Replaces symbols by expressions (floor divisions and remainders fold again afterwards).
  SymInt substitute(const std::map<std::string, SymInt> &replacements) const;
  /// Simplifies knowing 0 <= symbol < bound for the symbols in `bounds` (loop variables):
  /// `(128*x0 + x1)//128 -> x0` and `(128*x0 + x1)%128 -> x1` when x1 < 128.
  SymInt simplify(const std::map<std::string, int64_t> &bounds) const;

  struct Atom;
  using AtomPtr = std::shared_ptr<const Atom>;
  /// Sorted atoms with repetition for powers; empty for the constant term.
  using Monomial = std::vector<AtomPtr>;
  /// The terms in canonical order: a product of atoms (empty for the constant) and a coefficient.
  std::vector<std::pair<Monomial, int64_t>> termList() const;

private:
  const std::string &key() const { return text_; }
  static SymInt fromTerms(std::map<std::string, std::pair<Monomial, int64_t>> terms);
  /// c*m*(n//m) + c*(n%m) -> c*n, repeatedly.
  static SymInt recombineDivMod(const SymInt &value);
  /// The value that is `atom` alone (coefficient 1).
  static SymInt fromAtom(Atom atom);

  // Terms keyed by monomial text ("" for the constant), each with its atoms and coefficient.
  std::map<std::string, std::pair<Monomial, int64_t>> terms_;
  std::string text_;
};

struct SymInt::Atom {
  enum class Kind { Symbol, FloorDiv, Mod } kind;
  std::string name; // Symbol
  SymInt numerator; // FloorDiv, Mod
  int64_t denominator = 1;
  std::string text; // canonical print, also the sort key
};

inline std::ostream &operator<<(std::ostream &os, const SymInt &value) { return os << value.str(); }

/// Python semantics: floor division and a remainder with the divisor's sign.
int64_t floorDivInt(int64_t a, int64_t b);
int64_t floorModInt(int64_t a, int64_t b);

} // namespace tensorc
