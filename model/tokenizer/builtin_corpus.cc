// The text the BPE trainer learns from when `arbor make-model` builds a tokenizer. Written for
// this project: a mix of narrative prose, dialogue, technical notes, code in several languages,
// tables of numbers, punctuation runs and a little text in other scripts, so the learned merges
// cover what prompts in tests and demos contain. " ..." recurs on purpose: the entropix policy
// inserts it as its "thinking" token, so it must be a single token.
#include "model/tokenizer/bpe_trainer.h"

namespace arbor::model {
namespace {

constexpr char kProse[] =
    R"corpus(The lighthouse keeper woke before dawn, as he had every morning for thirty-one years. The sea was grey and quiet ... too quiet, he thought, for the first week of November. He lit the stove, filled the kettle, and climbed the one hundred and twelve steps to the lamp room. From there he could see the whole bay: the fishing boats still tied up in the harbour, the gulls standing on the breakwater, the long line of cliffs running north toward the village. Nothing moved. He wrote in the log: "06:12, wind light from the west, visibility good, sea calm." Then he sat down and waited for the light to come.

It is often said that the best way to learn something is to teach it. There is truth in that ... but it is not the whole truth. Teaching forces you to find the words for what you know, and in finding the words you discover what you do not know. The gaps appear the moment a student asks "why?" and you have no answer ready. A good teacher welcomes those moments; a poor one hides them.

The river rose for three days. On the first day the people of the lower town moved their furniture upstairs. On the second day they moved themselves. On the third day the water reached the steps of the church, and the old men who had seen the flood of 1953 said that this one was worse ... though they said that about every flood. By the fourth morning the rain had stopped, the clouds had broken, and the river began, slowly, to fall.

She opened the letter at the kitchen table. It was short: three lines, no signature, and a date that made no sense. "We will meet again where the road ends." She read it twice, then a third time, and then she put it in the drawer with the others. There were eleven of them now. The first had arrived in March; the last, yesterday. Each one was written in the same careful hand, on the same thin blue paper, and each one said something that only her brother could have known ... and her brother had been dead for nine years.

Science does not begin with observation; it begins with a question. Why does the apple fall? Why is the sky blue? Why do some wounds heal and others fester? The question directs the eye. Without it, the world is a blur of facts, each as important as the next, and none worth recording. With it, the world becomes a puzzle, and every fact is a clue.

The market opened at seven. By eight the square was full: farmers selling cheese and eggs and late apples, a man with a cart of second-hand books, children chasing pigeons between the stalls. The smell of bread and coffee drifted from the bakery on the corner. Prices were written in chalk on small black boards: apples 2.40 per kilo, eggs 3.10 a dozen, honey 7.50 a jar. Nobody seemed in a hurry. It was the kind of morning that makes you believe, just for an hour, that the world is a kind and orderly place.

In the spring of that year the company moved into a new building on the east side of the river. It had glass walls, open floors, and a cafeteria that served lunch for free. The engineers liked the coffee and disliked the noise. The managers liked the view and disliked the cost. Within six months half of the teams had put up screens and bookshelves to make small rooms inside the open floors ... which is, when you think about it, exactly what the old building had been.

Memory is not a recording. Each time we recall an event we rebuild it from pieces, and each time the pieces fit a little differently. That is why two people who lived through the same day can remember it so differently, and why both can be sincere. It is also why a story told many times grows smoother and more certain, even as it drifts further from what happened.

The train was late, of course. It was always late on Fridays. Maya stood on the platform with her hands in her pockets and counted the minutes: four, five, six ... eleven. When it finally arrived it was so full that she had to stand between the doors with her bag pressed against her knees. Outside the window the city slid past, then the suburbs, then fields, dark and wet under a low sky. She closed her eyes and thought about nothing at all.
)corpus";

constexpr char kDialogue[] = R"corpus(User: Can you explain what a hash table is?
Assistant: Sure. A hash table stores key-value pairs. It uses a hash function to turn each key into an index in an array, so looking up a key takes constant time on average. When two keys land on the same index (a "collision"), the table resolves it, for example by chaining entries in a list or by probing for the next free slot.
User: What happens when it gets full?
Assistant: It grows. Most implementations keep a load factor (entries divided by slots) below some limit, such as 0.75, and when the limit is reached they allocate a bigger array, usually twice the size, and re-insert every entry.
User: Thanks! And what's the worst case?
Assistant: If every key collides, a lookup degrades to a linear scan: O(n). Good hash functions and randomised seeds make that very unlikely in practice.

"Where are you going?" asked the fox.
"To the city," said the rabbit. "I've heard the streets are paved with carrots."
"Who told you that?"
"A crow. He said he'd seen it with his own eyes."
The fox laughed. "Crows will say anything ... especially to rabbits."
"Well, I'm going anyway," said the rabbit, and off he went.

Q: How many minutes are there in a week?
A: 7 days × 24 hours × 60 minutes = 10,080 minutes.
Q: And seconds?
A: 10,080 × 60 = 604,800 seconds.
Q: What is 15% of 240?
A: 0.15 × 240 = 36.
Q: Is 97 a prime number?
A: Yes. It is not divisible by 2, 3, 5 or 7, and 10 × 10 = 100 > 97, so no other factor needs checking.

User: I'm not sure which option to pick ... the cheaper plan or the faster one?
Assistant: It depends on how you'll use it. If you mostly browse and stream video, the cheaper plan's 100 Mbit/s is plenty. If you upload large files or several people work from home, the faster plan will save you time every day. You can usually switch later, so starting with the cheaper one is a low-risk choice.
User: OK, I'll start cheap. Thank you!
Assistant: You're welcome. Let me know if anything else comes up.

"Did you lock the door?" she asked.
"I think so."
"You think so?"
"I'm ... fairly sure."
"Fairly sure isn't sure, Tom."
He sighed, put his coat back on, and went downstairs to check. It was locked. It was always locked.

System: You are a helpful assistant. Answer briefly.
User: What's the capital of Australia?
Assistant: Canberra.
User: And of Canada?
Assistant: Ottawa.
User: Why not Sydney or Toronto?
Assistant: Both capitals were chosen as compromises between rival cities: Canberra was built between Sydney and Melbourne, and Ottawa was picked between Toronto and Montreal.
)corpus";

constexpr char kCode[] = R"corpus(#include <iostream>
#include <vector>

// Returns the sum of the squares of the values.
double SumOfSquares(const std::vector<double>& values) {
  double total = 0.0;
  for (double v : values) total += v * v;
  return total;
}

int main(int argc, char** argv) {
  std::vector<double> values = {1.5, 2.0, -3.25, 4.0};
  std::cout << "sum of squares: " << SumOfSquares(values) << "\n";
  if (argc > 1) {
    std::cerr << "unexpected argument: " << argv[1] << std::endl;
    return 1;
  }
  return 0;
}

def fibonacci(n: int) -> list[int]:
    """Returns the first n Fibonacci numbers."""
    numbers = [0, 1]
    while len(numbers) < n:
        numbers.append(numbers[-1] + numbers[-2])
    return numbers[:n]


class Counter:
    def __init__(self):
        self.counts = {}

    def add(self, key, amount=1):
        self.counts[key] = self.counts.get(key, 0) + amount

    def most_common(self, k=3):
        return sorted(self.counts.items(), key=lambda item: -item[1])[:k]


if __name__ == "__main__":
    print(fibonacci(10))
    counter = Counter()
    for word in "the cat sat on the mat with the hat".split():
        counter.add(word)
    print(counter.most_common())

fn parse_port(text: &str) -> Result<u16, String> {
    text.trim()
        .parse::<u16>()
        .map_err(|e| format!("invalid port {:?}: {}", text, e))
}

function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

SELECT name, COUNT(*) AS orders, SUM(total) AS revenue
FROM customers JOIN orders ON orders.customer_id = customers.id
WHERE orders.created_at >= '2024-01-01'
GROUP BY name
ORDER BY revenue DESC
LIMIT 10;

$ git commit -m "Fix off-by-one error in the ring buffer"
$ cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j8
$ curl -s http://localhost:8080/health | jq .status
{"status": "ok", "uptime_s": 3600, "version": "1.4.2", "workers": [0, 1, 2, 3]}

for (int i = 0; i < n; ++i) {
  for (int j = i + 1; j < n; ++j) {
    if (a[j] < a[i]) std::swap(a[i], a[j]);
  }
}

x = torch.randn(4, 8, dtype=torch.float32)
y = torch.softmax(x, dim=-1)
assert torch.allclose(y.sum(dim=-1), torch.ones(4))
)corpus";

constexpr char kNumbers[] =
    R"corpus(Quarterly results (in thousands): Q1 1,204.5; Q2 1,387.0; Q3 1,512.25; Q4 1,698.75. Growth: +15.2%, +9.0%, +12.3%.
Temperatures this week: Mon 12°C, Tue 14°C, Wed 9°C, Thu 7°C, Fri 11°C, Sat 15°C, Sun 16°C.
Flight BA 2490 departs at 14:35 from gate 23B and lands at 17:05 local time.
The invoice #20240317-0042 totals $1,849.99 (tax included), due on 2024-04-15.
Call 555-0123 or +44 20 7946 0958 between 9:00 and 17:30.
Version 3.11.4 fixed 27 bugs; version 3.12.0 added 143 features and removed 8.
Pi is approximately 3.14159265358979; e is approximately 2.71828182845905.
The population grew from 8,412,000 in 1990 to 9,876,543 in 2020, an increase of 17.4%.
Coordinates: 48.8566° N, 2.3522° E. Elevation: 35 m. Distance: 1,234 km.
0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
100 200 300 400 500 600 700 800 900 1000 2000 5000 10000 50000 100000 1000000
1st, 2nd, 3rd, 4th, 5th ... 10th, 20th, 21st, 22nd, 23rd, 100th.
3 + 4 = 7; 12 - 5 = 7; 6 * 7 = 42; 81 / 9 = 9; 2^10 = 1024; sqrt(144) = 12.
| id | name    | score | passed |
|----|---------|-------|--------|
| 1  | Alice   | 91.5  | yes    |
| 2  | Bob     | 78.0  | yes    |
| 3  | Charlie | 55.25 | no     |
| 4  | Dana    | 88.75 | yes    |
)corpus";

constexpr char kPunctuation[] =
    R"corpus(Wait ... what? No -- really?! Yes (really). "Quoted," she said; 'single-quoted,' he replied.
Hmm ... let me think ... OK ... I see ... so the answer is 42 ... or is it?
Lists: apples, pears, plums; tools: saw, drill, hammer. Ratio 3:2. Path: /usr/local/bin. URL: https://example.com/a/b?c=1&d=2#top.
Email: someone@example.org. Tags: #weekend #travel @friend. Price: €12.50, £9.99, ¥1200.
Brackets [like this], braces {like that}, angle <brackets>, and pipes | between | words.
Ellipses ... everywhere ... because the thought trails off ... and then comes back.
It's, don't, won't, can't, I'm, you're, they've, we'll, she'd, he's, isn't, aren't, wasn't.
IT'S LOUD, DON'T SHOUT, WE'LL SEE, THEY'VE GONE, I'D RATHER NOT.
*emphasis*, **strong**, _underline_, `code`, ~~strike~~ --- and a horizontal rule:
-----
    indented line with four spaces
	indented line with a tab
trailing spaces here   
two blank lines follow


and then the text goes on.
)corpus";

constexpr char kOtherScripts[] =
    R"corpus(Français : Le café est prêt ; voulez-vous du sucre ? Très bien, merci beaucoup. À bientôt !
Deutsch: Die Straße ist nass, weil es die ganze Nacht geregnet hat. Schöne Grüße aus München.
Español: ¿Dónde está la estación? Está a dos calles, al lado del mercado. ¡Gracias, señora!
Português: A informação está disponível no relatório anual, página 42.
Русский: Привет, как дела? Всё хорошо, спасибо. Сегодня холодно, но солнечно.
Ελληνικά: Καλημέρα! Η θάλασσα είναι ήρεμη σήμερα.
中文：今天天气很好，我们去公园散步吧。学习新的语言需要时间和耐心。
日本語：おはようございます。今日はいい天気ですね。東京は人が多いです。
한국어: 안녕하세요. 만나서 반갑습니다. 오늘 날씨가 좋네요.
العربية: مرحبا بكم في المكتبة العامة.
हिन्दी: नमस्ते, आप कैसे हैं?
Emoji: 😀 🎉 👍 🚀 ❤️ 🌍 🐍 ☕ 👩‍💻 🇫🇷 — happy, party, thumbs up, rocket, heart, globe, snake, coffee.
Combining marks: e\u0301 is written é (e + U+0301) or é; n + ̃ gives ñ; a + ̈ gives ä.
Math: ∀x ∈ ℝ, x² ≥ 0; ∑ᵢ aᵢ = 1; α + β = γ; ∞ ≠ 0; ≤ ≥ ± × ÷ √ π.
)corpus";

constexpr char kNotes[] = R"corpus(Release notes, version 2.3.0

New:
- Streaming responses: tokens are sent as soon as they are generated.
- A new flag, --max-batch-size, limits how many requests are batched together (default 32).
- The server reports its health on /healthz and its metrics on /metrics.
Fixed:
- A race between cancellation and completion could leave a request hanging ... fixed.
- Unicode text split across tokens was sometimes printed as replacement characters.
- The command-line client now exits with status 2 on invalid arguments.
Changed:
- The default temperature is now 0.7 (was 1.0).
- Logs use ISO 8601 timestamps, e.g. 2024-05-01T12:34:56Z.

Meeting notes, Tuesday
Attendees: Priya, Lukas, Mei, Omar, Sara.
1. Latency: p50 is 41 ms, p99 is 180 ms. Goal for next month: p99 under 120 ms.
2. The cache hit rate rose from 62% to 78% after the prefix-sharing change.
3. Open question: should we shard by user or by model? Omar prefers by model ... Mei is not convinced.
Action items: Lukas writes the load test; Sara updates the dashboard; Priya reviews the design doc by Friday.

Recipe: simple tomato soup (serves 4)
Ingredients: 1 kg ripe tomatoes, 1 onion, 2 cloves of garlic, 2 tbsp olive oil, 500 ml stock, salt, pepper, fresh basil.
Steps:
1. Chop the onion and garlic; soften them in the oil for 5 minutes.
2. Add the tomatoes, roughly chopped, and cook for 10 minutes.
3. Pour in the stock, simmer for 20 minutes, then blend until smooth.
4. Season, add the basil, and serve hot ... with bread, if you like.

Weather forecast: Monday, sunny spells, high of 18 degrees. Tuesday, showers in the afternoon, high of 15. Wednesday, cloudy with a chance of rain, high of 14. Thursday and Friday, dry and bright, highs of 17 and 19. The weekend looks warm ... but bring an umbrella just in case.

Thinking out loud ... the first approach was too slow, the second used too much memory ... maybe a third approach: sort once, then scan. That is O(n log n) time and O(1) extra space ... good enough. Let me check the edge cases ... empty input, one element, all equal ... all fine.
)corpus";

}  // namespace

absl::string_view BuiltinCorpus() {
  static const std::string* corpus =
      new std::string(std::string(kProse) + kDialogue + kCode + kNumbers + kPunctuation +
                      kOtherScripts + kNotes + kProse + kDialogue + kNotes);
  return *corpus;
}

}  // namespace arbor::model
