#include "views/tree_diff.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace arbor::views {
namespace {

// A node as a replay must reproduce it.
arbor::v1::TreeNode Comparable(arbor::v1::TreeNode node) {
  node.clear_sequence_id();
  return node;
}

// The fields in which `a` and `b` differ, as text; empty when they are equal.
std::string Differences(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::MessageDifferencer differencer;
  std::string report;
  differencer.ReportDifferencesToString(&report);
  return differencer.Compare(a, b) ? "" : report;
}

}  // namespace

std::optional<TreeDifference> FirstTreeDifference(const arbor::v1::Tree& expected,
                                                  const arbor::v1::Tree& actual) {
  if (!std::equal(expected.prompt_token_ids().begin(), expected.prompt_token_ids().end(),
                  actual.prompt_token_ids().begin(), actual.prompt_token_ids().end())) {
    return TreeDifference{-1, std::nullopt, "prompt_token_ids differ"};
  }
  const int common = std::min(expected.nodes_size(), actual.nodes_size());
  for (int i = 0; i < common; ++i) {
    const std::string what =
        Differences(Comparable(expected.nodes(i)), Comparable(actual.nodes(i)));
    if (!what.empty()) return TreeDifference{i, expected.nodes(i), what};
  }
  if (expected.nodes_size() == actual.nodes_size()) return std::nullopt;
  const bool longer = expected.nodes_size() > actual.nodes_size();
  return TreeDifference{
      common, longer ? expected.nodes(common) : actual.nodes(common),
      absl::StrCat(longer ? "the replay ends" : "the replay goes on", " after ", common, " nodes (",
                   expected.nodes_size(), " expected, ", actual.nodes_size(), " replayed)")};
}

arbor::v1::ReplayResult CompareReplayTrees(const arbor::v1::Tree& expected,
                                           const arbor::v1::Tree& actual) {
  arbor::v1::ReplayResult result;
  result.set_nodes(expected.nodes_size());
  const std::optional<TreeDifference> difference = FirstTreeDifference(expected, actual);
  result.set_identical(!difference.has_value());
  if (!difference) return result;
  result.set_first_difference_index(difference->index);
  if (difference->node) *result.mutable_first_difference() = *difference->node;
  result.set_difference(difference->what);
  return result;
}

}  // namespace arbor::views
