#include "coordinator/http/completion_handler.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/http/choice_runner.h"
#include "coordinator/http/client_connection.h"
#include "coordinator/http/openai_response.h"
#include "coordinator/http/tool_calls.h"
#include "views/committed_stream.h"

namespace arbor::coordinator::http {
namespace {

struct ChoiceState {
  views::CommittedStream stream;
  std::vector<views::FinalPiece> pending;  // Final but not yet streamed (or, blocking: all of it).
  bool started = false;                    // Has had an event.
  bool ended = false;                      // Its call has ended.
  std::optional<ToolCallReader> tool_calls;  // When the request's tools are called (Reader()).
};

// The choice's reader of calls, made once its job id is known; null when calls are not read.
ToolCallReader* Reader(const OpenAiRequest& request, ChoiceState& choice) {
  if (!request.tools.parses_calls()) return nullptr;
  if (!choice.tool_calls) choice.tool_calls.emplace(&request.tools, choice.stream.job_id());
  return &*choice.tool_calls;
}

// One request's choices in flight; shared with the SSE provider, which outlives the handler.
struct Run {
  OpenAiRequest request;
  ResponseContext context;
  std::vector<ChoiceState> choices;
  int open = 0;  // Choices whose call has not ended.
  absl::Status error;
  std::unique_ptr<ChoiceRunner> runner;  // Last: destroyed first, while the rest still exists.
};

// A finished event that is not a success, as the request's error.
absl::Status FinishedError(const std::string& job_id, const arbor::v1::FinishedEvent& finished) {
  switch (finished.reason()) {
    case arbor::v1::FINISH_REASON_ERROR:
      return absl::UnavailableError(absl::StrCat("job ", job_id, " failed: ", finished.error()));
    case arbor::v1::FINISH_REASON_CANCELLED:
      return absl::AbortedError(absl::StrCat("job ", job_id, " was cancelled"));
    default:
      return absl::OkStatus();
  }
}

// How often a blocking request looks whether its client is still there.
constexpr absl::Duration kClientCheck = absl::Milliseconds(250);

// Takes `item` of the merged stream into its choice. Returns the choice's index; the first error
// of the request is kept in run.error and cancels the other choices.
int Take(Run& run, ChoiceRunner::Item item) {
  ChoiceState& choice = run.choices[item.index];
  absl::Status status = item.status;
  if (!item.event) {
    choice.ended = true;
    --run.open;
    if (status.ok() && !choice.stream.finished()) {
      status = absl::InternalError("a job's stream ended without its finished event");
    }
  } else {
    choice.started = true;
    absl::StatusOr<views::FinalPiece> piece = choice.stream.Push(*item.event);
    if (!piece.ok()) {
      status = piece.status();
    } else if (!piece->empty() || item.event->has_finished()) {
      choice.pending.push_back(*std::move(piece));
    }
    if (status.ok() && item.event->has_finished()) {
      status = FinishedError(choice.stream.job_id(), item.event->finished());
    }
  }
  if (!status.ok() && run.error.ok()) {
    run.error = status;
    run.runner->CancelAll();
  }
  return item.index;
}

// Takes the next item of the merged stream (Take).
int Advance(Run& run) { return Take(run, run.runner->Next()); }

// A blocking request's client, looked at every kClientCheck while its jobs run.
struct WaitingClient {
  explicit WaitingClient(const httplib::Request& request)
      : request(request), next_check(absl::Now() + kClientCheck) {}
  const httplib::Request& request;
  std::optional<ClientConnection> connection;  // Found once, and only for requests that wait.
  absl::Time next_check;
};

// Blocking requests write nothing until their jobs end, so a client that leaves is noticed
// only by looking (client_connection.h): then every job is cancelled, as for a stream. Events
// keep coming while the jobs run, so the look is on a clock, not on a quiet queue.
void AdvanceWhileClientWaits(Run& run, WaitingClient& client) {
  while (true) {
    std::optional<ChoiceRunner::Item> item =
        run.runner->NextWithin(std::max(client.next_check - absl::Now(), absl::ZeroDuration()));
    if (absl::Now() >= client.next_check) {
      client.next_check = absl::Now() + kClientCheck;
      if (!client.connection) client.connection.emplace(client.request);
      if (run.error.ok() && client.connection->gone()) {
        run.error = absl::CancelledError("the client closed the connection");
        run.runner->CancelAll();
      }
    }
    if (item) {
      Take(run, *std::move(item));
      return;
    }
  }
}

views::FinalPiece Concatenate(const std::vector<views::FinalPiece>& pieces) {
  views::FinalPiece whole;
  for (const views::FinalPiece& piece : pieces) {
    whole.text += piece.text;
    whole.reasoning += piece.reasoning;
    whole.tokens.insert(whole.tokens.end(), piece.tokens.begin(), piece.tokens.end());
  }
  return whole;
}

void SetContext(Run& run, const std::string& model_id) {
  const bool chat = run.request.endpoint == Endpoint::kChatCompletions;
  run.context.request = &run.request;
  run.context.id = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", run.choices[0].stream.job_id());
  run.context.created = absl::ToUnixSeconds(absl::Now());
  run.context.model = model_id;
}

void AnswerWhole(Run& run, WaitingClient& client, httplib::Response& response) {
  while (run.open > 0) AdvanceWhileClientWaits(run, client);
  if (!run.error.ok()) return SetError(run.error, response);
  std::vector<ChoiceResult> results;
  for (ChoiceState& choice : run.choices) {
    ChoiceResult& result = results.emplace_back(ChoiceResult{
        choice.stream.job_id(), Concatenate(choice.pending), *choice.stream.finished(), {}});
    if (ToolCallReader* reader = Reader(run.request, choice); reader != nullptr) {
      ToolCallReader::Output read = reader->Push(result.output.text);
      ToolCallReader::Output rest = reader->Finish();
      result.output.text = read.content + rest.content;
      result.tool_calls = std::move(read.calls);
      result.tool_calls.insert(result.tool_calls.end(), rest.calls.begin(), rest.calls.end());
    }
  }
  response.set_content(CompletionJson(run.context, results), "application/json");
}

using Send = std::function<bool(const std::string&)>;

// Sends a final piece of choice i, with its finish reason when it is the `last`. When the
// request's tools are called, the calls are read out of its text (tool_calls.h) and sent as
// OpenAI's call deltas after the content, and the finish reason comes in a chunk of its own.
bool SendPiece(Run& run, int i, views::FinalPiece piece, bool last, bool first, size_t* offset,
               const Send& send) {
  ChoiceState& choice = run.choices[i];
  const std::string& job_id = choice.stream.job_id();
  const arbor::v1::FinishedEvent* finished = last ? &*choice.stream.finished() : nullptr;
  ToolCallReader* reader = Reader(run.request, choice);
  if (reader == nullptr) {
    return send(ChunkJson(run.context, i, job_id, piece, finished, first, offset));
  }
  ToolCallReader::Output read = reader->Push(piece.text);
  if (last) {
    ToolCallReader::Output rest = reader->Finish();
    read.content += rest.content;
    read.calls.insert(read.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  piece.text = std::move(read.content);
  if ((first || !piece.text.empty() || !piece.reasoning.empty() || !piece.tokens.empty()) &&
      !send(ChunkJson(run.context, i, job_id, piece, nullptr, first, offset))) {
    return false;
  }
  for (const ReturnedToolCall& call : read.calls) {
    for (const std::string& chunk : ToolCallChunksJson(run.context, i, job_id, call)) {
      if (!send(chunk)) return false;
    }
  }
  return !last || send(ChunkJson(run.context, i, job_id, views::FinalPiece{}, finished,
                                 /*first=*/false, offset, reader->calls() > 0));
}

// Streams run's choices; false when the client has gone (the runner then cancels the jobs).
bool StreamEvents(Run& run, httplib::DataSink& sink) {
  const Send send = [&sink](const std::string& data) {
    const std::string frame = absl::StrCat("data: ", data, "\n\n");
    return sink.write(frame.data(), frame.size());
  };
  std::vector<size_t> offsets(run.choices.size(), 0);
  std::vector<bool> opened(run.choices.size(), false);
  // Sends what choice i has pending; its first chunk carries the chat role even when empty.
  auto flush = [&](size_t i) {
    ChoiceState& choice = run.choices[i];
    const bool chat = run.request.endpoint == Endpoint::kChatCompletions;
    if (chat && !opened[i] && choice.pending.empty()) choice.pending.emplace_back();
    for (size_t p = 0; p < choice.pending.size(); ++p) {
      const bool last = p + 1 == choice.pending.size() && choice.stream.finished().has_value();
      if (!SendPiece(run, static_cast<int>(i), std::move(choice.pending[p]), last, !opened[i],
                     &offsets[i], send)) {
        return false;
      }
      opened[i] = true;
    }
    choice.pending.clear();
    return true;
  };
  for (size_t i = 0; i < run.choices.size(); ++i) {
    if (!flush(i)) return false;
  }
  while (run.open > 0 && run.error.ok()) {
    const int i = Advance(run);
    if (run.error.ok() && !flush(i)) return false;
  }
  if (!run.error.ok()) return send(ErrorJson(run.error));
  if (run.request.include_usage) {
    std::vector<arbor::v1::Usage> usages;
    for (const ChoiceState& choice : run.choices)
      usages.push_back(choice.stream.finished()->usage());
    if (!send(UsageChunkJson(run.context, usages))) return false;
  }
  return send("[DONE]");
}

}  // namespace

void SetError(const absl::Status& status, httplib::Response& response) {
  response.status = HttpStatus(status.code());
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    response.set_header("Retry-After", "1");
  }
  response.set_content(ErrorJson(status), "application/json");
}

void AnswerCompletion(arbor::v1::Generation::StubInterface* stub, OpenAiRequest request,
                      const std::string& model_id, const std::string& authorization,
                      const httplib::Request& http_request, httplib::Response& response) {
  auto run = std::make_shared<Run>();
  run->request = std::move(request);
  run->choices.resize(run->request.choices.size());
  run->open = static_cast<int>(run->choices.size());
  run->runner = std::make_unique<ChoiceRunner>(stub, authorization, run->request.choices);
  if (!run->request.stream) {
    // Blocking: the response waits for every choice anyway.
    WaitingClient client(http_request);
    while (run->open > 0 && !run->choices[0].started && run->error.ok()) {
      AdvanceWhileClientWaits(*run, client);
    }
    SetContext(*run, model_id);
    return AnswerWhole(*run, client, response);
  }
  auto waiting = [&run] {
    for (const ChoiceState& c : run->choices) {
      if (!c.started && !c.ended) return true;
    }
    return false;
  };
  while (run->error.ok() && waiting()) Advance(*run);
  // Nothing was sent yet: a plain HTTP error (the runner cancels the other choices).
  if (!run->error.ok()) return SetError(run->error, response);
  SetContext(*run, model_id);
  SetEventStream(response, [run](httplib::DataSink& sink) { return StreamEvents(*run, sink); });
}

void SetEventStream(httplib::Response& response, std::function<bool(httplib::DataSink&)> write) {
  response.set_header("Cache-Control", "no-cache");
  response.set_header("X-Accel-Buffering", "no");  // Proxies must not buffer the events.
  response.set_chunked_content_provider(
      "text/event-stream", [write = std::move(write)](size_t, httplib::DataSink& sink) {
        if (!write(sink)) return false;
        sink.done();
        return true;
      });
}

}  // namespace arbor::coordinator::http
