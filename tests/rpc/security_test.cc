// Bearer tokens (the token file, lookup, reload, the metadata a server reads) and TLS (mutual,
// with certificates made by scripts/make-certs.sh in the test) over real loopback gRPC, and the
// refusal to serve beyond loopback unprotected.
#include "rpc/security.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "base/files.h"
#include "rpc/grpc_status.h"
#include "rpc/server.h"
#include "rpc/tokens.h"

ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, tls_server_name);
ABSL_DECLARE_FLAG(std::string, token_file);
ABSL_DECLARE_FLAG(bool, insecure);
ABSL_DECLARE_FLAG(int, tls_refresh_seconds);

namespace arbor::rpc {
namespace {

constexpr char kTokens[] =
    "# name role\n"
    "aaaaaaaaaaaaaaaaaaaaaaaa alice user   # trailing comment\n"
    "\n"
    "bbbbbbbbbbbbbbbbbbbbbbbb ops admin\n"
    "cccccccccccccccccccccccc node-1 worker\n";

std::string TempPath(const std::string& name) {
  return absl::StrCat(testing::TempDir(), "/security-test-", getpid(), "-", name);
}

TEST(TokenTable, FindsEachTokensIdentity) {
  absl::StatusOr<TokenTable> table = TokenTable::Parse(kTokens);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 3u);
  std::optional<Identity> alice = table->Find("aaaaaaaaaaaaaaaaaaaaaaaa");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->role, Role::kUser);
  EXPECT_EQ(table->Find("bbbbbbbbbbbbbbbbbbbbbbbb")->role, Role::kAdmin);
  EXPECT_EQ(table->Find("cccccccccccccccccccccccc")->role, Role::kWorker);
  EXPECT_FALSE(table->Find("aaaaaaaaaaaaaaaaaaaaaaab").has_value());
  EXPECT_FALSE(table->Find("aaaaaaaaaaaaaaaaaaaaaaa").has_value());  // A prefix.
  EXPECT_FALSE(table->Find("").has_value());
}

TEST(TokenTable, MalformedLinesAreNamed) {
  const std::pair<std::string, std::string> cases[] = {
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice\n", "line 1: expected `TOKEN NAME ROLE [jobs=N] [rows=N]`"},
      {"# ok\nshort alice user\n", "line 2: the token must be 16"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice root\n", "line 1: the role must be user, admin or worker"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa al!ce user\n", "line 1: the name must be"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa a user\naaaaaaaaaaaaaaaaaaaaaaaa b user\n",
       "line 2: this token is already listed"},
      {"aaaaaaaaaaaa\xff"
       "aaaaaaaaaaa a user\n",
       "line 1: the token must be"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<TokenTable> table = TokenTable::Parse(text);
    ASSERT_FALSE(table.ok()) << text;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find(message), std::string::npos) << table.status();
  }
}

TEST(TokenTable, LimitsFollowTheRole) {
  absl::StatusOr<TokenTable> table = TokenTable::Parse(
      "aaaaaaaaaaaaaaaaaaaaaaaa alice user jobs=4 rows=16\n"
      "dddddddddddddddddddddddd alice user\tjobs=4   rows=16  # a second token of alice\n"
      "bbbbbbbbbbbbbbbbbbbbbbbb bob admin rows=8\n"
      "cccccccccccccccccccccccc carol user\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find("aaaaaaaaaaaaaaaaaaaaaaaa")->limits, (TenantLimits{4, 16}));
  EXPECT_EQ(table->Find("dddddddddddddddddddddddd")->limits, (TenantLimits{4, 16}));
  EXPECT_EQ(table->Find("bbbbbbbbbbbbbbbbbbbbbbbb")->limits, (TenantLimits{0, 8}));
  EXPECT_EQ(table->Find("cccccccccccccccccccccccc")->limits, TenantLimits())
      << "a line without limits is unlimited";
  EXPECT_EQ(table->Names(), (std::vector<std::string>{"alice", "bob", "carol"}));
}

TEST(TokenTable, BadLimitsNameTheLineAndKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user gpus=2\n", "line 1: unknown field `gpus=2`"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user jobs\n", "line 1: unknown field `jobs`"},
      {"# x\naaaaaaaaaaaaaaaaaaaaaaaa alice user jobs=0\n", "line 2: jobs: `0` is not a whole"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user rows=-3\n", "line 1: rows: `-3` is not a whole"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user rows=4x\n", "line 1: rows: `4x` is not a whole"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user rows=99999999999\n", "line 1: rows: `99999999999`"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user jobs=2 jobs=3\n", "line 1: jobs: given twice"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa node-1 worker jobs=2\n", "line 1: a worker token runs no jobs"},
      {"aaaaaaaaaaaaaaaaaaaaaaaa alice user jobs=2\nbbbbbbbbbbbbbbbbbbbbbbbb alice user\n",
       "line 2: another line of 'alice' gives other limits"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<TokenTable> table = TokenTable::Parse(text);
    ASSERT_FALSE(table.ok()) << text;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find(message), std::string::npos) << table.status();
  }
}

TEST(ConstantTimeEquals, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("abcd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals("a", ""));
}

// A Worker service whose Info answers the caller's name, or the authentication error.
class WhoAmI final : public arbor::v1::Worker::Service {
 public:
  explicit WhoAmI(const Authenticator* auth) : auth_(auth) {}
  grpc::Status Info(grpc::ServerContext* context, const arbor::v1::InfoRequest*,
                    arbor::v1::WorkerInfo* info) override {
    absl::StatusOr<Identity> identity = auth_->Authenticate(*context);
    if (!identity.ok()) return ToGrpcStatus(identity.status());
    info->set_worker_id(identity->name);
    return grpc::Status::OK;
  }

 private:
  const Authenticator* auth_;
};

// The process flags this test sets, restored after each test.
class SecurityFlags : public testing::Test {
 protected:
  void TearDown() override {
    absl::SetFlag(&FLAGS_tls_cert, "");
    absl::SetFlag(&FLAGS_tls_key, "");
    absl::SetFlag(&FLAGS_tls_ca, "");
    absl::SetFlag(&FLAGS_tls_server_name, "");
    absl::SetFlag(&FLAGS_token_file, "");
    absl::SetFlag(&FLAGS_insecure, false);
    absl::SetFlag(&FLAGS_tls_refresh_seconds, 60);
  }

  // A client Security with `token` and the TLS files named (empty: none).
  static Security Client(const std::string& token, const std::string& dir = "",
                         const std::string& name = "") {
    absl::SetFlag(&FLAGS_tls_ca, dir.empty() ? "" : dir + "/ca.pem");
    absl::SetFlag(&FLAGS_tls_cert, name.empty() ? "" : dir + "/" + name + ".pem");
    absl::SetFlag(&FLAGS_tls_key, name.empty() ? "" : dir + "/" + name + ".key");
    const std::string file = TempPath("client-token");
    if (!token.empty()) {
      EXPECT_TRUE(base::WriteFileAtomically(file, token + "\n").ok());
    }
    absl::SetFlag(&FLAGS_token_file, token.empty() ? "" : file);
    absl::StatusOr<Security> security = Security::FromFlags();
    EXPECT_TRUE(security.ok()) << security.status();
    return *security;
  }

  static grpc::Status Info(const Security& client, const std::string& address,
                           arbor::v1::WorkerInfo* info) {
    auto stub = arbor::v1::Worker::NewStub(client.Dial(address));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub->Info(&context, {}, info);
  }
};

TEST_F(SecurityFlags, BearerTokensNameTheCallerAndReloadReplacesThem) {
  const std::string file = TempPath("tokens");
  ASSERT_TRUE(base::WriteFileAtomically(file, kTokens).ok());
  absl::StatusOr<std::unique_ptr<Authenticator>> auth = Authenticator::Load(file);
  ASSERT_TRUE(auth.ok()) << auth.status();
  WhoAmI service(auth->get());
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();

  arbor::v1::WorkerInfo info;
  grpc::Status status = Info(Client(""), address, &info);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("requires a bearer token"), std::string::npos);
  status = Info(Client("zzzzzzzzzzzzzzzzzzzzzzzz"), address, &info);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(status.error_message().find("zzzz"), std::string::npos);  // Never echoed.
  ASSERT_TRUE(Info(Client("aaaaaaaaaaaaaaaaaaaaaaaa"), address, &info).ok());
  EXPECT_EQ(info.worker_id(), "alice");

  // A broken file keeps the tokens in force; a good one replaces them.
  ASSERT_TRUE(base::WriteFileAtomically(file, "not a token file\n").ok());
  EXPECT_FALSE((*auth)->Reload().ok());
  EXPECT_TRUE(Info(Client("aaaaaaaaaaaaaaaaaaaaaaaa"), address, &info).ok());
  ASSERT_TRUE(base::WriteFileAtomically(file, "dddddddddddddddddddddddd dora user\n").ok());
  ASSERT_TRUE((*auth)->Reload().ok());
  EXPECT_EQ(Info(Client("aaaaaaaaaaaaaaaaaaaaaaaa"), address, &info).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(Info(Client("dddddddddddddddddddddddd"), address, &info).ok());
  EXPECT_EQ(info.worker_id(), "dora");
  std::filesystem::remove(file);
}

// Two CAs made by the project's script: the cluster's, and a stranger's.
class MutualTls : public SecurityFlags {
 protected:
  static void SetUpTestSuite() {
    for (const char* dir : {"cluster", "stranger"}) {
      const std::string command = absl::StrCat(ARBOR_SOURCE_DIR, "/scripts/make-certs.sh ",
                                               TempPath(dir), " server member >/dev/null");
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
    }
  }
  static void TearDownTestSuite() {
    for (const char* dir : {"cluster", "stranger"}) std::filesystem::remove_all(TempPath(dir));
  }

  // Serves WhoAmI with the test tokens over TLS, with the server certificate of the CA in
  // `dir`, taking clients with or without certificates as `clients` says.
  void Serve(const std::string& dir, ClientCerts clients) {
    ASSERT_TRUE(base::WriteFileAtomically(TempPath("tokens"), kTokens).ok());
    absl::StatusOr<std::unique_ptr<Authenticator>> auth = Authenticator::Load(TempPath("tokens"));
    ASSERT_TRUE(auth.ok());
    auth_ = *std::move(auth);
    service_ = std::make_unique<WhoAmI>(auth_.get());
    const Security security = Client("", dir, "server");
    ASSERT_TRUE(security.tls());
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::Start("127.0.0.1:0", {service_.get()}, security.ServerCredentials(clients));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  std::string address() const { return server_->address(); }

 private:
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<WhoAmI> service_;
  std::unique_ptr<Server> server_;  // Stops before the service and tokens it uses go.
};

TEST_F(MutualTls, OnlyHoldersOfAClusterCertificateConnect) {
  const std::string cluster = TempPath("cluster"), stranger = TempPath("stranger");
  ASSERT_NO_FATAL_FAILURE(Serve(cluster, ClientCerts::kRequired));
  const std::string address = this->address();

  arbor::v1::WorkerInfo info;
  grpc::Status status = Info(Client("aaaaaaaaaaaaaaaaaaaaaaaa", cluster, "member"), address, &info);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(info.worker_id(), "alice");
  // Without a certificate, with one from another CA, or in plaintext: no connection at all.
  for (const Security& client : {Client("aaaaaaaaaaaaaaaaaaaaaaaa", cluster),
                                 Client("aaaaaaaaaaaaaaaaaaaaaaaa", stranger, "member"),
                                 Client("aaaaaaaaaaaaaaaaaaaaaaaa")}) {
    EXPECT_EQ(Info(client, address, &info).error_code(), grpc::StatusCode::UNAVAILABLE);
  }
}

TEST_F(MutualTls, APublicPortTakesClientsWithoutCertificates) {
  const std::string cluster = TempPath("cluster");
  ASSERT_NO_FATAL_FAILURE(Serve(cluster, ClientCerts::kOptional));
  arbor::v1::WorkerInfo info;
  ASSERT_TRUE(Info(Client("bbbbbbbbbbbbbbbbbbbbbbbb", cluster), address(), &info).ok());
  EXPECT_EQ(info.worker_id(), "ops");
  EXPECT_EQ(Info(Client("bbbbbbbbbbbbbbbbbbbbbbbb"), address(), &info).error_code(),
            grpc::StatusCode::UNAVAILABLE);  // Plaintext against TLS.
}

TEST_F(MutualTls, DialNamedChecksItsNameInsteadOfTheServerNameFlag) {
  const std::string cluster = TempPath("cluster");
  ASSERT_NO_FATAL_FAILURE(Serve(cluster, ClientCerts::kOptional));
  absl::SetFlag(&FLAGS_tls_server_name, "member");  // Another certificate's name.
  const Security client = Client("bbbbbbbbbbbbbbbbbbbbbbbb", cluster, "member");
  arbor::v1::WorkerInfo info;
  EXPECT_EQ(Info(client, address(), &info).error_code(), grpc::StatusCode::UNAVAILABLE);
  auto stub = arbor::v1::Worker::NewStub(client.DialNamed(address(), "server"));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status status = stub->Info(&context, {}, &info);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(info.worker_id(), "ops");
}

TEST_F(MutualTls, RenewedCertificatesTakeEffectWithoutARestart) {
  const std::string rotating = TempPath("rotating");
  std::filesystem::create_directories(rotating);
  const auto install = [&](const std::string& from) {
    for (const char* file : {"ca.pem", "server.pem", "server.key"}) {
      std::filesystem::copy_file(from + "/" + file, rotating + "/" + file,
                                 std::filesystem::copy_options::overwrite_existing);
    }
  };
  install(TempPath("cluster"));
  absl::SetFlag(&FLAGS_tls_refresh_seconds, 1);
  ASSERT_NO_FATAL_FAILURE(Serve(rotating, ClientCerts::kRequired));
  const std::string address = this->address();
  const std::string token = "aaaaaaaaaaaaaaaaaaaaaaaa";
  arbor::v1::WorkerInfo info;
  ASSERT_TRUE(Info(Client(token, TempPath("cluster"), "member"), address, &info).ok());

  // The server's files now hold the stranger's CA and a certificate it signed.
  install(TempPath("stranger"));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!Info(Client(token, TempPath("stranger"), "member"), address, &info).ok()) {
    ASSERT_LT(absl::Now(), deadline) << "the renewed certificates were never picked up";
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(Info(Client(token, TempPath("cluster"), "member"), address, &info).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  std::filesystem::remove_all(rotating);
}

TEST_F(SecurityFlags, IncompleteOrMissingFilesAreRefusedByFlag) {
  absl::SetFlag(&FLAGS_tls_cert, "/nonexistent/cert.pem");
  EXPECT_NE(Security::FromFlags().status().message().find("go together"), std::string::npos);
  absl::SetFlag(&FLAGS_tls_key, "/nonexistent/key.pem");
  absl::SetFlag(&FLAGS_tls_ca, "/nonexistent/ca.pem");
  EXPECT_NE(Security::FromFlags().status().message().find("--tls_ca"), std::string::npos);
  const std::string not_pem = TempPath("not-pem");
  ASSERT_TRUE(base::WriteFileAtomically(not_pem, "hello\n").ok());
  absl::SetFlag(&FLAGS_tls_ca, not_pem);
  EXPECT_NE(Security::FromFlags().status().message().find("is not a PEM file"), std::string::npos);
  std::filesystem::remove(not_pem);
}

TEST_F(SecurityFlags, ServingBeyondLoopbackNeedsProtectionOrInsecure) {
  EXPECT_TRUE(CheckExposure("listen", "127.0.0.1:50051", false, true, false).ok());
  EXPECT_TRUE(CheckExposure("listen", "localhost:0", false, true, false).ok());
  EXPECT_TRUE(CheckExposure("listen", "[::1]:0", false, true, false).ok());
  const absl::Status open = CheckExposure("listen", "0.0.0.0:50051", false, true, false);
  EXPECT_EQ(open.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(open.message().find("without TLS and bearer tokens"), std::string::npos);
  EXPECT_NE(open.message().find("scripts/make-certs.sh"), std::string::npos);
  EXPECT_FALSE(CheckExposure("listen", "0.0.0.0:1", true, true, false).ok());  // No tokens.
  EXPECT_TRUE(CheckExposure("listen", "0.0.0.0:1", true, true, true).ok());
  EXPECT_TRUE(CheckExposure("cluster_listen", "10.0.0.1:1", true, false, false).ok());
  EXPECT_FALSE(CheckExposure("listen", "10.0.0.1:1", false, false, false).ok());
  absl::SetFlag(&FLAGS_insecure, true);
  EXPECT_TRUE(CheckExposure("listen", "0.0.0.0:50051", false, true, false).ok());
}

}  // namespace
}  // namespace arbor::rpc
