// Sets of Unicode code points as sorted, disjoint, non-adjacent ranges: the character classes of
// a regular expression (regex_parser.h) before they become DFA transitions (regex_dfa.h).
#ifndef ARBOR_GRAMMAR_CODE_POINT_SET_H_
#define ARBOR_GRAMMAR_CODE_POINT_SET_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace arbor::grammar {

class CodePointSet {
 public:
  CodePointSet() = default;
  // [lo, hi] for each pair, in any order, overlapping or not.
  explicit CodePointSet(std::vector<std::pair<uint32_t, uint32_t>> ranges);
  static CodePointSet Of(uint32_t code_point) { return CodePointSet({{code_point, code_point}}); }
  static CodePointSet All();

  CodePointSet Union(const CodePointSet& other) const;
  CodePointSet Complement() const;
  CodePointSet Intersect(const CodePointSet& other) const;
  bool Contains(uint32_t code_point) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

  bool operator==(const CodePointSet& other) const { return ranges_ == other.ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_CODE_POINT_SET_H_
