#include "tools/eval/tasks/words.h"

#include "absl/strings/str_split.h"

namespace arbor::tools::eval {
namespace {

// Space-separated, one literal per word length: four hundred words in a few lines.
constexpr absl::string_view kCommonWordsByLength[] = {
    // 3 letters
    "cat dog sun hat cup pen box bed car bus egg map net pig red fox owl ant bee cow hen jam key "
    "leg arm ear eye lip toe ice sky sea oak fan fig gum ink jar kit log mud nut pot rug tap tub "
    "van web zoo bag bat bow cap den dot elf fin fog gap hop hug jet kid lab mat mop nap pad pan "
    "pie ram rat rod row saw toy tin tie wig yam",
    // 4 letters
    "tree bird fish milk cake book door lamp ship frog duck moon star rain snow wind fire lake "
    "road farm king ring song nose hand foot leaf seed rock sand gold salt rope coat shoe sock "
    "boat kite drum bell desk sofa soup rice corn pear plum lime bear deer goat wolf lion swan "
    "crab worm girl baby city town hill cave wall roof gate park shop bank mail note wave time "
    "game ball",
    // 5 letters
    "apple house water table chair bread grass plant horse mouse sheep tiger zebra snake whale "
    "shark eagle robin spoon knife plate glass clock watch phone paper river ocean beach cloud "
    "storm light night dream heart smile music dance party lemon mango melon peach grape onion "
    "bacon candy honey pizza juice shirt dress skirt scarf glove boots train truck plane wheel "
    "brush chalk couch shelf towel money piano flute queen child woman uncle",
    // 6 letters
    "garden window basket bottle bridge castle circle flower forest friend guitar hammer island "
    "jacket kitten ladder letter market monkey mother father sister planet pocket rabbit rocket "
    "school silver spider summer winter spring autumn tomato potato carrot banana cherry orange "
    "purple yellow turtle parrot pillow mirror candle wallet button helmet saddle violin pencil "
    "doctor farmer singer player dinner butter cheese coffee",
    // 7 letters
    "chicken dolphin giraffe penguin kitchen library morning evening holiday picture blanket "
    "teacher brother captain machine rainbow thunder diamond village country cabbage pumpkin "
    "biscuit popcorn sausage sweater lantern balloon bicycle scooter trumpet whistle compass "
    "feather kingdom mystery pancake",
    // 8 letters
    "elephant dinosaur mountain hospital sandwich umbrella football birthday airplane treasure "
    "notebook elevator computer calendar mushroom broccoli squirrel kangaroo hedgehog flamingo "
    "necklace painting sunlight triangle daughter neighbor princess",
    // 9 letters
    "chocolate adventure beautiful butterfly important wonderful vegetable dangerous celebrate "
    "breakfast telephone newspaper different hamburger community something afternoon furniture "
    "crocodile pineapple astronaut character delicious invention detective spaghetti",
    // 10 letters
    "television restaurant basketball understand background playground everything government "
    "strawberry photograph watermelon motorcycle helicopter lighthouse skateboard friendship",
    // 11 and 12 letters
    "grasshopper imagination temperature information celebration caterpillar refrigerator "
    "thunderstorm kindergarten",
};

constexpr absl::string_view kGivenNames[] = {
    "Ava",  "Ben",  "Chloe", "Daniel", "Emma",   "Felix", "Grace", "Henry", "Isla", "Jack",
    "Kate", "Leo",  "Mia",   "Noah",   "Olivia", "Omar",  "Priya", "Quinn", "Rosa", "Sam",
    "Tara", "Umar", "Vera",  "Will",   "Yara",   "Zoe",   "Maria", "Ken",   "Lucy", "Ravi",
    "Nina", "Hugo", "Amir",  "Sofia",  "Mateo",  "Hana",  "Ivan",  "Lena",  "Kofi", "Mei",
};

constexpr absl::string_view kColors[] = {"red",  "blue",  "green", "yellow", "purple",
                                         "pink", "brown", "black", "white",  "gray"};
constexpr absl::string_view kFruits[] = {"apple", "banana",  "cherry",     "grape",    "lemon",
                                         "mango", "melon",   "peach",      "pear",     "plum",
                                         "kiwi",  "apricot", "strawberry", "pineapple"};
constexpr absl::string_view kVegetables[] = {"carrot",   "potato",  "onion",   "cabbage",
                                             "broccoli", "spinach", "lettuce", "celery",
                                             "garlic",   "radish",  "turnip",  "leek"};
constexpr absl::string_view kMammals[] = {"dog",   "cat",  "horse",  "cow",      "lion",
                                          "tiger", "bear", "rabbit", "elephant", "monkey",
                                          "sheep", "goat", "mouse"};
constexpr absl::string_view kBirds[] = {"eagle",   "robin",   "sparrow", "parrot", "owl",
                                        "penguin", "swan",    "duck",    "pigeon", "crow",
                                        "hawk",    "ostrich", "flamingo"};
constexpr absl::string_view kFish[] = {"salmon", "trout",    "tuna",    "cod",
                                       "shark",  "herring",  "sardine", "goldfish",
                                       "carp",   "mackerel", "catfish", "haddock"};
constexpr absl::string_view kVehicles[] = {"car",     "bus",     "train", "truck",
                                           "bicycle", "boat",    "ship",  "airplane",
                                           "tractor", "scooter", "taxi",  "van"};
constexpr absl::string_view kClothes[] = {"shirt",   "dress", "skirt",  "scarf",
                                          "glove",   "sock",  "jacket", "coat",
                                          "sweater", "hat",   "boot",   "trousers"};
constexpr absl::string_view kFurniture[] = {"chair", "table", "sofa",     "bed",
                                            "desk",  "shelf", "cupboard", "wardrobe",
                                            "stool", "bench", "bookcase", "armchair"};
constexpr absl::string_view kInstruments[] = {"piano",    "guitar",   "violin", "drum",
                                              "flute",    "trumpet",  "harp",   "cello",
                                              "clarinet", "trombone", "banjo",  "saxophone"};
constexpr absl::string_view kBodyParts[] = {"hand",  "foot",     "nose",   "ear", "eye",  "knee",
                                            "elbow", "shoulder", "finger", "toe", "chin", "ankle"};

// Groups: 0 colours, 1 plants we eat, 2 animals, then one group each.
constexpr WordCategory kCategories[] = {
    {"color", "a color", 0, kColors},
    {"fruit", "a fruit", 1, kFruits},
    {"vegetable", "a vegetable", 1, kVegetables},
    {"mammal", "a mammal", 2, kMammals},
    {"bird", "a bird", 2, kBirds},
    {"fish", "a fish", 2, kFish},
    {"vehicle", "a vehicle", 3, kVehicles},
    {"clothing", "a piece of clothing", 4, kClothes},
    {"furniture", "a piece of furniture", 5, kFurniture},
    {"instrument", "a musical instrument", 6, kInstruments},
    {"body part", "a part of the body", 7, kBodyParts},
};

}  // namespace

std::span<const absl::string_view> CommonWords() {
  static const std::vector<absl::string_view>* const kWords = [] {
    auto* words = new std::vector<absl::string_view>;
    for (absl::string_view group : kCommonWordsByLength) {
      for (absl::string_view w : absl::StrSplit(group, ' ')) words->push_back(w);
    }
    return words;
  }();
  return *kWords;
}

std::vector<absl::string_view> CommonWordsOfLength(size_t min_len, size_t max_len) {
  std::vector<absl::string_view> out;
  for (absl::string_view w : CommonWords()) {
    if (w.size() >= min_len && w.size() <= max_len) out.push_back(w);
  }
  return out;
}

std::span<const absl::string_view> GivenNames() { return kGivenNames; }

std::span<const WordCategory> WordCategories() { return kCategories; }

}  // namespace arbor::tools::eval
