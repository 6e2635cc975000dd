// The main sequence's life on its worker: a new one prefills the prompt, a Run makes it live and
// empties what the next Run must do first, inserts append, a backspace truncates and appends,
// a reset prefills the committed path again, a branch commit adopts the winner's sequence, and
// the main-path Run's fallback and recorded steps are spent by the next Run.
#include "coordinator/job/main_sequence.h"

#include <gtest/gtest.h>

#include <vector>

namespace arbor::coordinator {
namespace {

TEST(MainSequence, FollowsItsSequenceThroughTheJob) {
  MainSequence main(7, {1, 2, 3});
  EXPECT_EQ(main.id(), 7u);
  EXPECT_FALSE(main.live());
  EXPECT_TRUE(main.source().is_new);
  EXPECT_EQ(main.source().append, (std::vector<int32_t>{1, 2, 3}));

  EXPECT_TRUE(main.RanOnce());  // That Run prefilled it.
  EXPECT_TRUE(main.live());
  EXPECT_FALSE(main.source().is_new);
  EXPECT_TRUE(main.source().append.empty());
  EXPECT_FALSE(main.RanOnce());  // Continuing is no prefill.

  main.Append(40);
  main.Append(41);
  EXPECT_EQ(main.source().append, (std::vector<int32_t>{40, 41}));
  main.Redraw(5, 9);
  EXPECT_EQ(main.source().truncate_to, 5);
  EXPECT_EQ(main.source().append, std::vector<int32_t>{9});

  main.Reset({1, 2, 3, 9});
  EXPECT_FALSE(main.live());
  EXPECT_TRUE(main.source().is_new);
  EXPECT_EQ(main.source().append, (std::vector<int32_t>{1, 2, 3, 9}));

  SequenceSource continues;
  continues.append = {12};
  main.Adopt(11, continues);
  EXPECT_EQ(main.id(), 11u);
  EXPECT_TRUE(main.live());
  EXPECT_EQ(main.source().append, std::vector<int32_t>{12});
  SequenceSource fresh;
  fresh.is_new = true;
  main.Adopt(12, fresh);
  EXPECT_FALSE(main.live());  // A winner never made on the worker is prefilled.
  main.RanOnce();
  main.Released();
  EXPECT_FALSE(main.live());
}

TEST(MainSequence, TheNextRunSpendsTheFallbackAndTheRecordedSteps) {
  MainSequence main(1, {5});
  main.SkipStructuralOnce();
  main.StepRecorded();
  EXPECT_TRUE(main.structural_off_once());
  main.RunSent();
  EXPECT_FALSE(main.structural_off_once());
  main.StepRecorded();
  main.StepRecorded();
  EXPECT_EQ(main.TakeStepsRecorded(), 2);
  EXPECT_EQ(main.TakeStepsRecorded(), 0);
}

}  // namespace
}  // namespace arbor::coordinator
