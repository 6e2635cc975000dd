// How `arbor generate` and `arbor watch` print a job's event stream on a terminal.
//
// The terminal must end up showing exactly the job's committed text. The gRPC stream sends every
// token at once and retracts it later with a backspace event, and a terminal cannot reliably
// unprint text (it may have wrapped or scrolled), so the text is printed through a
// CommittedStream (views/committed_stream.h): the latest token is held back until nothing
// can retract it, inserted tokens are printed as they come. Tokens are coloured by the strategy
// that produced them when colour is on, and escaped as in the tree view (newlines kept, other
// control characters escaped) so that a token cannot drive the terminal.
//
// While a search runs, the text of its traces (ReasoningEvent) goes dimmed to the error stream,
// so that the terminal shows the work before the answer and a redirected answer stays clean.
//
// With metrics on, every event is one row of one table instead, retracted tokens included
// (a backspace row names what it removed), and the committed text follows the table at the end.
// Rows are aligned by display width (tree_display.h), so CJK and emoji tokens keep the columns.
// JSON output is one proto3-JSON object per event, unchanged by any of this.
#ifndef ARBOR_TOOLS_STREAM_PRINTER_H_
#define ARBOR_TOOLS_STREAM_PRINTER_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "arbor/v1/generation.pb.h"
#include "tools/client.h"
#include "views/committed_stream.h"

namespace arbor::tools {

class StreamPrinter {
 public:
  // The answer (and the metrics table) goes to `out`; notes and the summary to `err`, so that
  // `arbor generate ... > answer.txt` holds the answer only.
  StreamPrinter(const ClientOptions& client, bool show_metrics, std::ostream& out,
                std::ostream& err)
      : client_(client), show_metrics_(show_metrics), out_(out), err_(err) {}

  // Prints what `event` changes. INTERNAL when the stream breaks the backspace contract (a
  // retraction of anything but the latest token); the rest of the stream can still be printed.
  absl::Status Print(const arbor::v1::GenerateEvent& event);

 private:
  // `text` in the colour of `strategy`, when colour is on.
  std::string Colored(arbor::v1::Strategy strategy, const std::string& text) const;
  // One table row; every metrics line goes through it, so all of them share the columns. `token`
  // is the token cell's text; none for events that carry no token.
  void Row(const std::string& position, const std::string& kind, arbor::v1::Strategy color,
           const std::optional<std::string>& token, const std::string& details);
  void PrintMetricsRow(const arbor::v1::GenerateEvent& event, const views::FinalPiece& piece);
  // The traces' text to `err`, dimmed; a blank line once the answer follows it.
  void PrintReasoning(const std::string& reasoning, bool answer_follows);

  const ClientOptions& client_;
  const bool show_metrics_;
  std::ostream& out_;
  std::ostream& err_;
  views::CommittedStream stream_;
  bool header_printed_ = false;
  std::string committed_;       // Metrics mode: the final text, printed after the table.
  int32_t next_position_ = -1;  // Position of the next committed token, once known.
  bool reasoning_open_ = false;  // Traces' text was printed and no answer since.
};

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_STREAM_PRINTER_H_
