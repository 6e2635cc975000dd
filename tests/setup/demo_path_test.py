"""`make demo` pulls in no test-only package or target; `make test` still pulls in everything.

The demo path is what `make -n demo` would run (a dry run: nothing is installed or built) and
the packages `scripts/install-deps.sh --demo --list` names. It must install none of the tools
that only tests and benchmarks use (PyTorch, Chromium, Prometheus, GoogleTest, Google
Benchmark, the fuzzers' clang, the reference engines) and build exactly the three binaries
`arbor demo` runs, in a build configured without tests, benchmarks or CUDA. The dry run of
`make test` must still install the full list and configure everything back on.
"""

import os
import re
import shlex
import subprocess
import tempfile
import unittest

SOURCE = os.environ.get("ARBOR_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
INSTALL = os.path.join(SOURCE, "scripts", "install-deps.sh")
DEMO_TARGETS = {"arbor", "arbor-coordinator", "arbor-worker"}
# Parts of package names that only tests and benchmarks need.
TEST_ONLY = ("torch", "chromium", "selenium", "prometheus", "gtest", "gmock", "googletest",
             "benchmark", "llama", "clang", "graphviz", "gguf", "tokenizers", "safetensors",
             "openai", "jsonschema", "jinja2", "grpcio", "python3-protobuf", "python3-yaml",
             "smg", "setproctitle")
# Installed by the full mode, so that `make test` keeps running every test.
FULL_MUST_HAVE = ("python3-torch", "chromium", "prometheus", "libgtest-dev", "libbenchmark-dev",
                  "prometheus-cpp-dev", "clang", "tokenizers", "openai", "smg")
DEMO_CONFIGURE = ("-DARBOR_TESTS=OFF", "-DARBOR_BENCHMARKS=OFF", "-DARBOR_WITH_CUDA=OFF")
FULL_CONFIGURE = ("-DARBOR_TESTS=ON", "-DARBOR_BENCHMARKS=ON")


def dry_run(goal, build_dir):
    """The shell commands `make <goal>` would run, one per entry, continuation lines joined."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    out = subprocess.run(["make", "-s", "-n", "-C", SOURCE, goal, f"BUILD_DIR={build_dir}",
                          "CMAKE_FLAGS="], env=env, capture_output=True, text=True, check=True,
                         timeout=30).stdout
    return [line.strip() for line in out.replace("\\\n", " ").splitlines() if line.strip()]


def installs(commands):
    """The argument lists of every install-deps.sh run among `commands`."""
    runs = []
    for command in commands:
        words = shlex.split(command)
        for i, word in enumerate(words):
            if word.endswith("install-deps.sh"):
                runs.append(words[i + 1:])
    return runs


def built_targets(command):
    """The --target list of a `cmake --build` command; None when it builds everything."""
    words = shlex.split(command)
    if "--target" not in words:
        return None
    targets = []
    for word in words[words.index("--target") + 1:]:
        if word.startswith("-"):
            break
        targets.append(word)
    return set(targets)


def listed(*args):
    """{"apt": [...], "pip": [...]} from install-deps.sh's --list, which installs nothing."""
    with open(INSTALL, encoding="utf-8") as f:
        if "--list)" not in f.read():
            # A script without --list would ignore the flag and install for real.
            raise AssertionError("scripts/install-deps.sh has no --list mode")
    out = subprocess.run(["bash", INSTALL, *args, "--list"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    packages = {}
    for line in out.splitlines():
        kind, _, names = line.partition(":")
        packages[kind.strip()] = names.split()
    return packages


class DemoPathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A build folder that does not exist: the dry run shows a fresh clone's configure.
        cls.tmp = tempfile.TemporaryDirectory()
        fresh = os.path.join(cls.tmp.name, "build")
        cls.demo = dry_run("demo", fresh)
        cls.test = dry_run("test", fresh)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_demo_installs_in_demo_mode_only(self):
        self.assertEqual(installs(self.demo), [["--demo"]], "\n".join(self.demo))

    def test_demo_packages_are_not_test_only(self):
        packages = listed("--demo")
        self.assertTrue(packages.get("apt"), "the demo installs no Debian package at all?")
        self.assertEqual(packages.get("pip"), [], "the demo's venv needs nothing but pip")
        offending = [name for kind in ("apt", "pip") for name in packages.get(kind, [])
                     if any(part in name for part in TEST_ONLY)]
        self.assertEqual(offending, [], "test-only packages on the demo path")

    def test_demo_builds_exactly_its_three_binaries(self):
        builds = [c for c in self.demo if re.search(r"\bcmake --build\b", c)]
        self.assertTrue(builds, "\n".join(self.demo))
        for command in builds:
            self.assertEqual(built_targets(command), DEMO_TARGETS, command)

    def test_fresh_demo_build_is_configured_without_tests_benchmarks_or_cuda(self):
        configures = [c for c in self.demo if re.search(r"\bcmake -S\b", c)]
        self.assertEqual(len(configures), 1, "\n".join(self.demo))
        for flag in DEMO_CONFIGURE:
            self.assertIn(flag, shlex.split(configures[0]))

    def test_demo_keeps_a_configured_build_as_it_is(self):
        # After `make test`, the demo must not turn the tests off in the folder they share.
        configured = os.path.join(self.tmp.name, "configured")
        os.makedirs(configured)
        open(os.path.join(configured, "CMakeCache.txt"), "w").close()
        commands = dry_run("demo", configured)
        configures = [c for c in commands if re.search(r"\bcmake -S\b", c)]
        self.assertEqual(len(configures), 1, "\n".join(commands))
        self.assertEqual([w for w in shlex.split(configures[0]) if w.startswith("-DARBOR_")], [])
        builds = [c for c in commands if re.search(r"\bcmake --build\b", c)]
        self.assertTrue(builds)
        for command in builds:
            self.assertEqual(built_targets(command), DEMO_TARGETS, command)

    def test_configure_options_exist(self):
        with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
            cmake = f.read()
        for flag in DEMO_CONFIGURE:
            name = flag[2:].split("=")[0]
            self.assertTrue(re.search(rf"^\s*(option|set)\({name}\b", cmake, re.M),
                            f"{name} is no option of CMakeLists.txt")

    def test_make_test_still_installs_and_builds_everything(self):
        self.assertEqual(installs(self.test), [[]], "\n".join(self.test))
        full = listed()
        demo = listed("--demo")
        names = full["apt"] + full["pip"]
        for package in FULL_MUST_HAVE:
            self.assertIn(package, names)
        self.assertLessEqual(set(demo["apt"]), set(full["apt"]))
        configures = [c for c in self.test if re.search(r"\bcmake -S\b", c)]
        self.assertEqual(len(configures), 1, "\n".join(self.test))
        for flag in FULL_CONFIGURE:
            self.assertIn(flag, shlex.split(configures[0]))
        builds = [c for c in self.test if re.search(r"\bcmake --build\b", c)]
        self.assertTrue(builds)
        for command in builds:
            self.assertIsNone(built_targets(command), command)


if __name__ == "__main__":
    unittest.main()
