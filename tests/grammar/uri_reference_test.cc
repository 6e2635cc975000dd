// URI reference resolution (grammar/uri_reference.h) against RFC 3986 §5.4's examples and, on
// random references, Python's urllib.parse.urljoin (tests/grammar/uri_oracle.py).
#include "grammar/uri_reference.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {
namespace {

constexpr char kBase[] = "http://a/b/c/d;p?q";

void ExpectResolves(const std::vector<std::pair<std::string, std::string>>& examples) {
  for (const auto& [reference, target] : examples) {
    EXPECT_EQ(ResolveUriReference(kBase, reference), target) << reference;
  }
}

TEST(UriReference, ResolvesTheNormalExamplesOfRfc3986) {
  ExpectResolves({{"g:h", "g:h"},
                  {"g", "http://a/b/c/g"},
                  {"./g", "http://a/b/c/g"},
                  {"g/", "http://a/b/c/g/"},
                  {"/g", "http://a/g"},
                  {"//g", "http://g"},
                  {"?y", "http://a/b/c/d;p?y"},
                  {"g?y", "http://a/b/c/g?y"},
                  {"#s", "http://a/b/c/d;p?q#s"},
                  {"g#s", "http://a/b/c/g#s"},
                  {"g?y#s", "http://a/b/c/g?y#s"},
                  {";x", "http://a/b/c/;x"},
                  {"g;x", "http://a/b/c/g;x"},
                  {"g;x?y#s", "http://a/b/c/g;x?y#s"},
                  {"", "http://a/b/c/d;p?q"},
                  {".", "http://a/b/c/"},
                  {"./", "http://a/b/c/"},
                  {"..", "http://a/b/"},
                  {"../", "http://a/b/"},
                  {"../g", "http://a/b/g"},
                  {"../..", "http://a/"},
                  {"../../", "http://a/"},
                  {"../../g", "http://a/g"}});
}

TEST(UriReference, ResolvesTheAbnormalExamplesOfRfc3986) {
  ExpectResolves({{"../../../g", "http://a/g"},
                  {"../../../../g", "http://a/g"},
                  {"/./g", "http://a/g"},
                  {"/../g", "http://a/g"},
                  {"g.", "http://a/b/c/g."},
                  {".g", "http://a/b/c/.g"},
                  {"g..", "http://a/b/c/g.."},
                  {"..g", "http://a/b/c/..g"},
                  {"./../g", "http://a/b/g"},
                  {"./g/.", "http://a/b/c/g/"},
                  {"g/./h", "http://a/b/c/g/h"},
                  {"g/../h", "http://a/b/c/h"},
                  {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
                  {"g;x=1/../y", "http://a/b/c/y"},
                  {"g?y/./x", "http://a/b/c/g?y/./x"},
                  {"g?y/../x", "http://a/b/c/g?y/../x"},
                  {"g#s/./x", "http://a/b/c/g#s/./x"},
                  {"g#s/../x", "http://a/b/c/g#s/../x"},
                  {"http:g", "http:g"}});  // The strict parser.
}

TEST(UriReference, ParsesComponentsAndTellsEmptyFromAbsent) {
  const UriReference uri = ParseUriReference("urn:uuid:deadbeef-1234#/$defs/a");
  EXPECT_EQ(uri.scheme, "urn");
  EXPECT_FALSE(uri.authority.has_value());
  EXPECT_EQ(uri.path, "uuid:deadbeef-1234");
  EXPECT_EQ(uri.fragment, "/$defs/a");
  const UriReference empty = ParseUriReference("http://h?#");
  EXPECT_EQ(empty.authority, "h");
  EXPECT_EQ(empty.query, "");
  EXPECT_EQ(empty.fragment, "");
  EXPECT_EQ(RecomposeUri(empty), "http://h?#");
  EXPECT_FALSE(ParseUriReference("http://h").query.has_value());
  EXPECT_EQ(ResolveUriReference("urn:uuid:x", "#foo"), "urn:uuid:x#foo");
  EXPECT_EQ(PercentDecode("a%25b%7e%2"), "a%b~%2");
}

TEST(UriReference, AgreesWithUrljoinOnRandomReferences) {
  const nlohmann::json answer = testing::RunPythonReference(
      "tests/grammar/uri_oracle.py", {{"seed", TestSeed()}, {"count", 400}});
  ASSERT_TRUE(answer.is_object());
  for (const nlohmann::json& c : answer["cases"]) {
    EXPECT_EQ(ResolveUriReference(c["base"].get<std::string>(), c["reference"].get<std::string>()),
              c["target"].get<std::string>())
        << c.dump();
  }
}

}  // namespace
}  // namespace arbor::grammar
