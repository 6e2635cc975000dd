// Reading one sample back out of a registry's text exposition, for tests that check what an
// instrumented component exported against what it did.
#ifndef ARBOR_TESTS_SUPPORT_METRIC_SAMPLES_H_
#define ARBOR_TESTS_SUPPORT_METRIC_SAMPLES_H_

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace arbor::metrics::testing {

// The value of the sample line `series` ("name" or "name{labels}", exactly as rendered) in
// `text`; fails the test and returns -1 when there is none.
inline double SampleValue(const std::string& text, absl::string_view series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() > series.size() && line.substr(0, series.size()) == series &&
        line[series.size()] == ' ') {
      double value = 0;
      EXPECT_TRUE(absl::SimpleAtod(line.substr(series.size() + 1), &value)) << line;
      return value;
    }
  }
  ADD_FAILURE() << "no sample " << series << " in\n" << text;
  return -1;
}

}  // namespace arbor::metrics::testing

#endif  // ARBOR_TESTS_SUPPORT_METRIC_SAMPLES_H_
