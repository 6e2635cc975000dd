#include "tools/eval/tasks/word_problems.h"

#include <algorithm>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "tools/eval/tasks/family.h"
#include "tools/eval/tasks/words.h"

namespace arbor::tools::eval {
namespace {

// One story. Placeholders: {name}, {obj} (plural noun), {n} (start), {k} (amount added or
// taken), {g} and {m} (groups of), {d} (parts), {double}/{doubles} ("double"/"triple" and their
// third-person forms).
struct StoryTemplate {
  std::span<const absl::string_view> objects;
  absl::string_view intro;
  absl::string_view add[2];
  absl::string_view subtract[2];
  absl::string_view add_groups;
  absl::string_view multiply;
  absl::string_view share;
  absl::string_view question;
};

constexpr absl::string_view kCollectibles[] = {"marbles", "stickers", "stamps",
                                               "shells",  "cards",    "beads"};
constexpr absl::string_view kBakes[] = {"cookies", "muffins",  "cupcakes",
                                        "rolls",   "pancakes", "biscuits"};
constexpr absl::string_view kProduce[] = {"apples", "oranges", "lemons", "melons", "pears"};
constexpr absl::string_view kDollars[] = {"dollars"};
constexpr absl::string_view kPassengers[] = {"passengers"};
constexpr absl::string_view kEggs[] = {"eggs"};
constexpr absl::string_view kBooks[] = {"books"};

constexpr StoryTemplate kStories[] = {
    {kCollectibles,
     "{name} has {n} {obj}.",
     {"{name} finds {k} more {obj}.", "A friend gives {name} {k} {obj}."},
     {"{name} gives {k} {obj} to a friend.", "{name} loses {k} {obj}."},
     "{name} buys {g} packs of {obj} with {m} in each pack.",
     "{name}'s cousin gives {name} enough {obj} to {double} the collection.",
     "{name} sorts the {obj} into {d} equal piles and gives away all but one pile.",
     "How many {obj} does {name} have now?"},
    {kBakes,
     "{name} bakes {n} {obj}.",
     {"{name} bakes {k} more {obj}.", "A neighbor brings {name} {k} {obj}."},
     {"{name}'s family eats {k} of the {obj}.", "{name} gives {k} {obj} to a neighbor."},
     "{name} bakes {g} more trays with {m} {obj} on each tray.",
     "{name} bakes another batch, enough to {double} the number of {obj}.",
     "{name} packs the {obj} into {d} equal boxes and gives away all but one box.",
     "How many {obj} does {name} have now?"},
    {kProduce,
     "{name}'s shop has {n} {obj}.",
     {"A delivery brings {k} more {obj} to the shop.",
      "{name} finds {k} more {obj} in the storeroom and adds them to the shop."},
     {"Customers buy {k} {obj}.", "{name} throws away {k} {obj} that have gone bad."},
     "A truck delivers {g} crates with {m} {obj} in each crate.",
     "{name} orders enough {obj} to {double} the stock in the shop.",
     "{name} divides the {obj} into {d} equal parts and sends all but one part to other shops.",
     "How many {obj} are in {name}'s shop now?"},
    {kDollars,
     "{name} has {n} {obj}.",
     {"{name} earns {k} {obj} doing chores.", "{name}'s grandmother gives {name} {k} {obj}."},
     {"{name} spends {k} {obj} on a book.", "{name} spends {k} {obj} on lunch."},
     "{name} washes {g} cars and earns {m} {obj} for each car.",
     "{name}'s uncle gives {name} enough money to {double} the savings.",
     "{name} puts the money into {d} envelopes with equal amounts and gives away all but one "
     "envelope.",
     "How many {obj} does {name} have now?"},
    {kPassengers,
     "{name} drives a bus with {n} {obj} on board.",
     {"At the next stop, {k} {obj} get on.", "At the market, {k} more {obj} get on."},
     {"At the next stop, {k} {obj} get off.", "At the park, {k} {obj} get off."},
     "At the school, {g} groups of {m} students get on as {obj}.",
     "At the main station, the number of {obj} on the bus {doubles}.",
     "At the depot, the {obj} are split into {d} equal groups, and only one group stays on "
     "{name}'s bus.",
     "How many {obj} are on {name}'s bus now?"},
    {kEggs,
     "{name} has {n} {obj} in a basket.",
     {"The hens lay {k} more {obj}, and {name} puts them in the basket.",
      "A neighbor gives {name} {k} {obj} for the basket."},
     {"{name} uses {k} {obj} to bake a cake.", "{name} drops the basket and {k} {obj} break."},
     "{name} collects {obj} from {g} nests, with {m} {obj} in each nest, and puts them in the "
     "basket.",
     "The next morning {name} collects enough {obj} to {double} the number in the basket.",
     "{name} packs the {obj} into {d} equal cartons and sells all but one carton.",
     "How many {obj} does {name} have now?"},
    {kBooks,
     "{name}'s class library has {n} {obj}.",
     {"The school gives the class {k} new {obj}.",
      "{name} brings {k} {obj} from home for the library."},
     {"Students borrow {k} {obj} and take them home.", "The teacher gives {k} old {obj} away."},
     "The class receives {g} boxes with {m} {obj} in each box.",
     "A book sale lets the class {double} the number of {obj} in the library.",
     "The teacher divides the {obj} equally among {d} classrooms, and {name}'s class keeps one "
     "share.",
     "How many {obj} are in {name}'s class library now?"},
};

// Bounds that keep the numbers small.
constexpr int64_t kMaxToMultiply = 30;
constexpr int64_t kShareDivisors[] = {2, 3, 4, 5};

// The part counts `amount` splits into exactly, each part still at least 2.
std::vector<int64_t> ShareDivisors(int64_t amount) {
  std::vector<int64_t> divisors;
  for (int64_t d : kShareDivisors) {
    if (amount % d == 0 && amount / d >= 2) divisors.push_back(d);
  }
  return divisors;
}

// The steps a problem may take next from `amount`, given the operations left to spend.
std::vector<StepKind> FeasibleSteps(int level, int64_t amount, int remaining) {
  std::vector<StepKind> kinds = {StepKind::kAdd};
  if (amount >= 3) kinds.push_back(StepKind::kSubtract);
  if (level >= 3) {
    if (remaining >= 2) kinds.push_back(StepKind::kAddGroups);
    if (amount <= kMaxToMultiply) kinds.push_back(StepKind::kMultiply);
    if (!ShareDivisors(amount).empty()) kinds.push_back(StepKind::kShare);
  }
  return kinds;
}

// Draws the numbers of a `kind` step from `amount` (which FeasibleSteps allowed).
Step DrawStep(StepKind kind, int64_t amount, TaskRng& rng) {
  Step step{kind};
  switch (kind) {
    case StepKind::kAdd:
      step.a = rng.Between(2, 12);
      break;
    case StepKind::kSubtract:
      step.a = rng.Between(2, std::min<int64_t>(12, amount - 1));
      break;
    case StepKind::kAddGroups:
      step.a = rng.Between(2, 5);
      step.b = rng.Between(2, 10);
      break;
    case StepKind::kMultiply:
      step.a = rng.Between(2, 3);
      break;
    case StepKind::kShare:
      step.a = rng.Pick(ShareDivisors(amount));
      break;
  }
  return step;
}

int64_t Apply(const Step& step, int64_t amount) {
  switch (step.kind) {
    case StepKind::kAdd:
      return amount + step.a;
    case StepKind::kSubtract:
      return amount - step.a;
    case StepKind::kAddGroups:
      return amount + step.a * step.b;
    case StepKind::kMultiply:
      return amount * step.a;
    case StepKind::kShare:
      return amount / step.a;
  }
  return amount;
}

absl::string_view StepPattern(const StoryTemplate& story, const Step& step, TaskRng& rng) {
  switch (step.kind) {
    case StepKind::kAdd:
      return story.add[rng.Below(2)];
    case StepKind::kSubtract:
      return story.subtract[rng.Below(2)];
    case StepKind::kAddGroups:
      return story.add_groups;
    case StepKind::kMultiply:
      return story.multiply;
    case StepKind::kShare:
      return story.share;
  }
  return {};
}

nlohmann::json MakeWordProblemItem(int level, TaskRng& rng) {
  WordProblem problem = MakeWordProblem(level, rng);
  nlohmann::json item = ChatItem(std::move(problem.text), absl::StrCat(problem.answer), "number");
  // More steps, more room for a model that works the problem through before answering.
  item["max_tokens"] = 32 + 8 * level;
  return item;
}

}  // namespace

int StepOperations(StepKind kind) { return kind == StepKind::kAddGroups ? 2 : 1; }

WordProblem MakeWordProblem(int level, TaskRng& rng) {
  const StoryTemplate& story = rng.Pick(kStories);
  const absl::string_view name = rng.Pick(GivenNames());
  const absl::string_view object = rng.Pick(story.objects);
  const std::vector<std::pair<absl::string_view, absl::string_view>> fixed = {{"{name}", name},
                                                                              {"{obj}", object}};

  WordProblem problem;
  problem.start = rng.Between(2, 20);
  std::string text = absl::StrReplaceAll(
      story.intro, {{"{name}", name}, {"{obj}", object}, {"{n}", absl::StrCat(problem.start)}});

  int64_t amount = problem.start;
  for (int remaining = level; remaining > 0;) {
    const std::vector<StepKind> kinds = FeasibleSteps(level, amount, remaining);
    const Step step = DrawStep(rng.Pick(kinds), amount, rng);
    const absl::string_view multiplier = step.a == 2 ? "double" : "triple";
    const std::string sentence = absl::StrReplaceAll(StepPattern(story, step, rng),
                                                     {{"{name}", name},
                                                      {"{obj}", object},
                                                      {"{k}", absl::StrCat(step.a)},
                                                      {"{g}", absl::StrCat(step.a)},
                                                      {"{m}", absl::StrCat(step.b)},
                                                      {"{d}", absl::StrCat(step.a)},
                                                      {"{doubles}", absl::StrCat(multiplier, "s")},
                                                      {"{double}", multiplier}});
    absl::StrAppend(&text, " ", sentence);
    amount = Apply(step, amount);
    problem.steps.push_back(step);
    remaining -= StepOperations(step.kind);
  }
  absl::StrAppend(&text, " ", absl::StrReplaceAll(story.question, fixed),
                  " Answer with just the number.");
  problem.text = std::move(text);
  problem.answer = amount;
  return problem;
}

const TaskFamily& WordProblemsFamily() {
  static constexpr TaskFamily kFamily{"word_problems", kWordProblemsMaxLevel, &MakeWordProblemItem};
  return kFamily;
}

}  // namespace arbor::tools::eval
