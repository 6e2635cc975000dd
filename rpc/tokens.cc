#include "rpc/tokens.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "base/ascii_class.h"
#include "base/files.h"

namespace arbor::rpc {
namespace {

constexpr size_t kMinTokenChars = 16;
constexpr size_t kMaxTokenChars = 512;
constexpr size_t kMaxNameChars = 64;
constexpr int kMaxLimit = 1 << 20;

std::optional<Role> ParseRole(absl::string_view role) {
  if (role == "user") return Role::kUser;
  if (role == "admin") return Role::kAdmin;
  if (role == "worker") return Role::kWorker;
  return std::nullopt;
}

absl::Status LineError(int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

// The `key=value` fields after the role: each key once, each value a whole number in range.
absl::StatusOr<TenantLimits> ParseLimits(absl::Span<const absl::string_view> fields, int line) {
  TenantLimits limits;
  bool jobs_seen = false, rows_seen = false;
  for (absl::string_view field : fields) {
    const size_t equals = field.find('=');
    const absl::string_view key = field.substr(0, equals);
    int* value = key == "jobs" ? &limits.jobs : key == "rows" ? &limits.rows : nullptr;
    bool* seen = key == "jobs" ? &jobs_seen : &rows_seen;
    if (equals == absl::string_view::npos || value == nullptr) {
      return LineError(line, absl::StrCat("unknown field `", field,
                                          "` after the role: the limits are jobs=N and rows=N"));
    }
    if (*seen) return LineError(line, absl::StrCat(key, ": given twice"));
    *seen = true;
    if (!absl::SimpleAtoi(field.substr(equals + 1), value) || *value < 1 || *value > kMaxLimit) {
      return LineError(line, absl::StrCat(key, ": `", field.substr(equals + 1),
                                          "` is not a whole number in [1, ", kMaxLimit,
                                          "]; leave the field out for no limit"));
    }
  }
  return limits;
}

}  // namespace

Identity OpenIdentity() { return Identity{"", Role::kAdmin, TenantLimits()}; }

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    diff |= static_cast<unsigned char>(a.empty() ? 1 : a[i % a.size()] ^ b[i]);
  }
  return diff == 0;
}

absl::StatusOr<TokenTable> TokenTable::Parse(const std::string& text) {
  TokenTable table;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() < 3) {
      return LineError(number,
                       "expected `TOKEN NAME ROLE [jobs=N] [rows=N]` (at least three fields)");
    }
    const absl::string_view token = fields[0], name = fields[1];
    if (token.size() < kMinTokenChars || token.size() > kMaxTokenChars ||
        !base::AlnumOr(token, "._~+/=-")) {
      return LineError(number, absl::StrCat("the token must be ", kMinTokenChars, " to ",
                                            kMaxTokenChars, " characters of [A-Za-z0-9._~+/=-]"));
    }
    if (name.size() > kMaxNameChars || !base::AlnumOr(name, "._@-")) {
      return LineError(number, absl::StrCat("the name must be at most ", kMaxNameChars,
                                            " characters of [A-Za-z0-9._@-]"));
    }
    const std::optional<Role> role = ParseRole(fields[2]);
    if (!role) return LineError(number, "the role must be user, admin or worker");
    absl::StatusOr<TenantLimits> limits =
        ParseLimits(absl::MakeConstSpan(fields).subspan(3), number);
    if (!limits.ok()) return limits.status();
    if (*role == Role::kWorker && !(*limits == TenantLimits())) {
      return LineError(number, "a worker token runs no jobs: remove its jobs= and rows=");
    }
    for (const Entry& entry : table.entries_) {
      if (entry.token == token) return LineError(number, "this token is already listed");
      if (entry.identity.name == name && !(entry.identity.limits == *limits)) {
        return LineError(number, absl::StrCat("another line of '", name,
                                              "' gives other limits; its lines share one set of "
                                              "limits, so give each the same jobs= and rows="));
      }
    }
    table.entries_.push_back({std::string(token), Identity{std::string(name), *role, *limits}});
  }
  return table;
}

std::vector<std::string> TokenTable::Names() const {
  std::vector<std::string> names;
  for (const Entry& entry : entries_) {
    if (std::find(names.begin(), names.end(), entry.identity.name) == names.end()) {
      names.push_back(entry.identity.name);
    }
  }
  return names;
}

std::optional<Identity> TokenTable::Find(const std::string& token) const {
  std::optional<Identity> found;
  for (const Entry& entry : entries_) {  // No early exit: every entry costs the same.
    if (ConstantTimeEquals(entry.token, token)) found = entry.identity;
  }
  return found;
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Load(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<TokenTable> table = TokenTable::Parse(*text);
  if (!table.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", table.status().message()));
  }
  return std::unique_ptr<Authenticator>(new Authenticator(path, *std::move(table)));
}

absl::Status Authenticator::Reload() {
  absl::StatusOr<std::unique_ptr<Authenticator>> fresh = Load(path_);
  if (!fresh.ok()) return fresh.status();
  absl::MutexLock lock(&mu_);
  absl::MutexLock other(&(*fresh)->mu_);
  table_ = std::move((*fresh)->table_);
  return absl::OkStatus();
}

std::optional<std::string> BearerToken(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return BearerToken(absl::string_view(it->second.data(), it->second.size()));
}

std::optional<std::string> BearerToken(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(authorization, kScheme)) {
    return std::nullopt;
  }
  return std::string(absl::StripAsciiWhitespace(authorization.substr(kScheme.size())));
}

absl::StatusOr<Identity> Authenticator::Authenticate(const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  return Authenticate(it == metadata.end()
                          ? absl::string_view()
                          : absl::string_view(it->second.data(), it->second.size()));
}

std::vector<std::string> Authenticator::Names() const {
  absl::MutexLock lock(&mu_);
  return table_.Names();
}

absl::StatusOr<Identity> Authenticator::Authenticate(absl::string_view authorization) const {
  const std::optional<std::string> token = BearerToken(authorization);
  if (!token) {
    return absl::UnauthenticatedError(
        "this server requires a bearer token: send `authorization: Bearer TOKEN` metadata "
        "(arbor: --token_file or ARBOR_TOKEN; HTTP: an Authorization header)");
  }
  std::optional<Identity> identity;
  {
    absl::MutexLock lock(&mu_);
    identity = table_.Find(*token);
  }
  if (!identity) return absl::UnauthenticatedError("the bearer token is not valid here");
  return *identity;
}

}  // namespace arbor::rpc
