#include "coordinator/http/tool_request.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "grammar/exact_json.h"

namespace arbor::coordinator::http {
namespace {

using json = Fields::json;

// The names OpenAI accepts; they also need no escaping where templates write them into JSON.
bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

// A function's parameters: an object schema (absent or {} is an object of any properties).
absl::StatusOr<json> ReadParameters(Fields& fn) {
  const json* parameters = fn.Get("parameters");
  if (parameters == nullptr || (parameters->is_object() && parameters->empty())) {
    return json{{"type", "object"}};
  }
  if (!parameters->is_object() || !parameters->contains("type") ||
      (*parameters)["type"] != "object") {
    return FieldError(fn.Name("parameters"),
                      "must be a JSON Schema of an object ({\"type\": \"object\", ...})");
  }
  return *parameters;
}

absl::Status ReadTool(const json& tool, const std::string& field, ToolRequest& out) {
  if (!tool.is_object()) return FieldError(field, "must be an object");
  Fields t(tool, field + ".");
  ASSIGN_OR_RETURN(std::optional<std::string> type, t.String("type"));
  if (type != "function") return FieldError(t.Name("type"), "must be \"function\"");
  ASSIGN_OR_RETURN(const json* function, t.Object("function"));
  if (function == nullptr) return FieldError(t.Name("function"), "required");
  RETURN_IF_ERROR(t.NothingElse());
  Fields fn(*function, t.Name("function."));
  ASSIGN_OR_RETURN(std::optional<std::string> name, fn.String("name"));
  if (!name || !ValidFunctionName(*name)) {
    return FieldError(fn.Name("name"), "required: 1 to 64 of a-z, A-Z, 0-9, _ and -");
  }
  for (const ToolFunction& other : out.functions) {
    if (other.name == *name) return FieldError(fn.Name("name"), "repeats an earlier tool's name");
  }
  RETURN_IF_ERROR(fn.String("description").status());
  RETURN_IF_ERROR(fn.Bool("strict").status());  // Arguments are constrained either way.
  ASSIGN_OR_RETURN(const json parameters, ReadParameters(fn));
  RETURN_IF_ERROR(fn.NothingElse());
  ToolFunction& added = out.functions.emplace_back();
  added.name = *name;
  added.parameters = grammar::DumpExactJson(parameters);
  absl::StatusOr<grammar::JsonGrammar> compiled = grammar::CompileJsonSchema(added.parameters);
  if (!compiled.ok()) return FieldError(fn.Name("parameters"), compiled.status().message());
  added.grammar = std::make_shared<const grammar::JsonGrammar>(*std::move(compiled));
  return absl::OkStatus();
}

absl::Status ReadToolChoice(const json* choice, ToolRequest& out) {
  const bool have_tools = !out.functions.empty();
  out.choice = have_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (choice == nullptr || *choice == "auto") return absl::OkStatus();
  if (*choice == "none") {
    out.choice = ToolChoice::kNone;
    return absl::OkStatus();
  }
  if (*choice == "required") {
    if (!have_tools) return FieldError("tool_choice", "\"required\" needs tools");
    out.choice = ToolChoice::kRequired;
    return absl::OkStatus();
  }
  if (!choice->is_object()) {
    return FieldError("tool_choice",
                      "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                      "\"function\": {\"name\": ...}}");
  }
  Fields c(*choice, "tool_choice.");
  ASSIGN_OR_RETURN(std::optional<std::string> type, c.String("type"));
  if (type != "function") return FieldError(c.Name("type"), "must be \"function\"");
  ASSIGN_OR_RETURN(const json* function, c.Object("function"));
  if (function == nullptr) return FieldError(c.Name("function"), "required");
  RETURN_IF_ERROR(c.NothingElse());
  Fields fn(*function, "tool_choice.function.");
  ASSIGN_OR_RETURN(std::optional<std::string> name, fn.String("name"));
  RETURN_IF_ERROR(fn.NothingElse());
  if (!name) return FieldError(fn.Name("name"), "required");
  std::vector<std::string> names;
  for (const ToolFunction& function : out.functions) names.push_back(function.name);
  if (std::find(names.begin(), names.end(), *name) == names.end()) {
    return FieldError(fn.Name("name"),
                      absl::StrCat("'", *name, "' is not among tools (",
                                   names.empty() ? "none given" : absl::StrJoin(names, ", "), ")"));
  }
  out.choice = ToolChoice::kNamed;
  out.named = *name;
  return absl::OkStatus();
}

// Moves `schema`'s definitions ($defs, definitions) to `root`, where its local $refs
// ("#/$defs/X") point once the schema is nested in the call object.
absl::Status HoistDefinitions(json& schema, json& root) {
  for (const char* key : {"$defs", "definitions"}) {
    if (!schema.contains(key) || !schema[key].is_object()) continue;
    for (auto& [name, definition] : schema[key].items()) {
      if (root[key].contains(name) && root[key][name] != definition) {
        return FieldError("tools", absl::StrCat("two tools define ", key, "/", name,
                                                " differently; give the definitions distinct "
                                                "names"));
      }
      root[key][name] = definition;
    }
    schema.erase(key);
  }
  return absl::OkStatus();
}

// The JSON Schema of the call object a forced call writes.
absl::StatusOr<std::string> CallSchema(const ToolRequest& tools) {
  json root = json::object();
  json alternatives = json::array();
  for (const ToolFunction& function : tools.functions) {
    if (tools.choice == ToolChoice::kNamed && function.name != tools.named) continue;
    json parameters = json::parse(function.parameters);
    RETURN_IF_ERROR(HoistDefinitions(parameters, root));
    alternatives.push_back(
        {{"type", "object"},
         {"properties",
          {{"name", {{"const", function.name}}}, {tools.arguments_key(), std::move(parameters)}}},
         {"required", {"name", tools.arguments_key()}}});
  }
  json schema = alternatives.size() == 1 ? alternatives[0] : json{{"anyOf", alternatives}};
  for (auto& [key, definitions] : root.items()) schema[key] = definitions;
  std::string text = grammar::DumpExactJson(schema);
  if (absl::Status compiled = grammar::CompileJsonSchema(text).status(); !compiled.ok()) {
    return FieldError("tool_choice",
                      absl::StrCat("the call object of these tools: ", compiled.message()));
  }
  return text;
}

}  // namespace

absl::Status ReadTools(Fields& f, model::ToolFormat format, ToolRequest& out,
                       arbor::v1::ChatPrompt& chat) {
  out.format = format;
  ASSIGN_OR_RETURN(std::optional<bool> parallel, f.Bool("parallel_tool_calls"));
  out.parallel = parallel.value_or(true);
  const json* tools = f.Get("tools");
  if (tools != nullptr && !tools->is_array()) {
    return FieldError("tools", "must be an array of {\"type\": \"function\", \"function\": ...}");
  }
  if (tools != nullptr && !tools->empty()) {
    if (format == model::ToolFormat::kNone) {
      return FieldError("tools",
                        "the served model's chat template has no tool-calling format (ChatML "
                        "and Llama 3.1+ templates have one)");
    }
    if (tools->size() > 128) return FieldError("tools", "at most 128 tools");
    for (size_t i = 0; i < tools->size(); ++i) {
      RETURN_IF_ERROR(ReadTool((*tools)[i], absl::StrCat("tools[", i, "]"), out));
      chat.add_tools((*tools)[i].dump());
    }
  }
  return ReadToolChoice(f.Get("tool_choice"), out);
}

absl::Status ApplyTools(const ToolRequest& tools, arbor::v1::ChatPrompt& chat,
                        arbor::v1::OutputConstraint& constraint, std::vector<std::string>& stops) {
  if (!tools.parses_calls()) return absl::OkStatus();
  if (constraint.kind_case() != arbor::v1::OutputConstraint::KIND_NOT_SET) {
    return FieldError("response_format",
                      "cannot be combined with tools unless tool_choice is \"none\"");
  }
  if (!tools.forced()) {
    // One call: generation ends where the first call's block does.
    if (!tools.parallel && tools.format == model::ToolFormat::kChatMLToolCall) {
      stops.push_back("</tool_call>");
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::string schema, CallSchema(tools));
  constraint.set_json_schema(std::move(schema));
  chat.set_open_tool_call(tools.format == model::ToolFormat::kChatMLToolCall);
  return absl::OkStatus();
}

absl::Status ReadMessageToolCalls(const json& calls, const std::string& field,
                                  arbor::v1::ChatMessage& message) {
  if (!calls.is_array()) return FieldError(field, "must be an array of tool calls");
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string name = absl::StrCat(field, "[", i, "]");
    if (!calls[i].is_object()) return FieldError(name, "must be an object");
    Fields c(calls[i], name + ".");
    RETURN_IF_ERROR(c.String("id").status());
    ASSIGN_OR_RETURN(std::optional<std::string> type, c.String("type"));
    if (type.value_or("function") != "function") {
      return FieldError(c.Name("type"), "must be \"function\"");
    }
    ASSIGN_OR_RETURN(const json* function, c.Object("function"));
    if (function == nullptr) return FieldError(c.Name("function"), "required");
    RETURN_IF_ERROR(c.NothingElse());
    Fields fn(*function, c.Name("function."));
    ASSIGN_OR_RETURN(std::optional<std::string> function_name, fn.String("name"));
    if (!function_name || function_name->empty()) return FieldError(fn.Name("name"), "required");
    ASSIGN_OR_RETURN(std::optional<std::string> arguments, fn.String("arguments"));
    RETURN_IF_ERROR(fn.NothingElse());
    if (!arguments || !json::parse(*arguments, nullptr, /*allow_exceptions=*/false).is_object()) {
      return FieldError(fn.Name("arguments"), "required: a JSON object, as a string");
    }
    arbor::v1::ToolCall& call = *message.add_tool_calls();
    call.set_name(*function_name);
    call.set_arguments(*arguments);
  }
  return absl::OkStatus();
}

}  // namespace arbor::coordinator::http
