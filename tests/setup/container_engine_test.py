"""scripts/container-engine.sh picks an engine only when it answers: a docker whose daemon is
not running is named as such (`make image` said a debootstrap was missing instead), and a host
with neither engine is told what to install. The engines are stand-in scripts on PATH.
"""

import os
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "container-engine.sh")


def pick_engine(engines):
    """Runs container_engine with only `engines` ({name: script body}) on PATH besides bash's
    own tools; returns (exit status, ENGINE or stderr)."""
    with tempfile.TemporaryDirectory() as bin_dir:
        for name, body in engines.items():
            path = os.path.join(bin_dir, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(path, 0o755)
        env = {"PATH": bin_dir + ":/usr/bin:/bin"}
        out = subprocess.run(["/bin/bash", "-c", f'source "{SCRIPT}" && container_engine && '
                              'echo "$ENGINE"'], capture_output=True, text=True, env=env)
        return out.returncode, (out.stdout.strip() if out.returncode == 0 else out.stderr)


class ContainerEngineTest(unittest.TestCase):

    def test_a_docker_without_its_daemon_is_named(self):
        if os.path.exists("/usr/bin/podman") or os.path.exists("/bin/podman"):
            self.skipTest("a real podman on /usr/bin would be picked first")
        code, said = pick_engine({"docker": 'echo "Cannot connect to the Docker daemon at '
                                            'unix:///var/run/docker.sock." >&2; exit 1'})
        self.assertEqual(code, 1)
        self.assertIn("docker is installed but cannot serve requests", said)
        self.assertIn("Cannot connect to the Docker daemon", said)
        self.assertNotIn("debootstrap", said)

    def test_an_engine_that_answers_is_picked(self):
        if os.path.exists("/usr/bin/podman") or os.path.exists("/bin/podman"):
            self.skipTest("a real podman on /usr/bin would be picked first")
        self.assertEqual(pick_engine({"docker": "exit 0"}), (0, "docker"))

    def test_no_engine_says_what_to_install(self):
        if any(os.path.exists(p) for p in ("/usr/bin/podman", "/usr/bin/docker", "/bin/docker")):
            self.skipTest("an engine is installed on /usr/bin")
        code, said = pick_engine({})
        self.assertEqual(code, 1)
        self.assertIn("apt-get install podman", said)


if __name__ == "__main__":
    unittest.main()
