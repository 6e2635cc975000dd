"""Security against real processes: TLS and mutual TLS, bearer tokens, job ownership, and a
Cluster API that strangers cannot use (docs/SECURITY.md).

A coordinator serves TLS with a token file; a worker with a certificate from the cluster's CA
registers over mutual TLS. Certificates come from scripts/make-certs.sh, made in the test, for
the cluster's CA and for a stranger's. Clients are the `arbor` CLI (with --tls_ca, --tls_cert,
--token_file) and urllib over HTTPS. The attacks a stranger on the network could make before
this — registering a rogue worker, draining real ones, reading and cancelling others' jobs,
registering with a megabyte-long id, speaking plaintext — must all fail.
"""

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import BIN, Processes  # noqa: E402  (path set above)
import browser  # noqa: E402

SOURCE = os.environ.get("ARBOR_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TOKENS = {"alice": ("a" * 32, "user"), "bob": ("b" * 32, "user"), "ops": ("o" * 32, "admin"),
          "node": ("n" * 32, "worker")}


class SecureCluster(Processes):
    """Certificates, tokens, a TLS coordinator (HTTPS too) and a worker over mutual TLS."""

    def __init__(self):
        super().__init__(prefix="arbor-security-")
        self.certs = os.path.join(self.dir, "cluster")
        self.stranger = os.path.join(self.dir, "stranger")
        make = os.path.join(SOURCE, "scripts", "make-certs.sh")
        subprocess.run([make, self.certs, "coordinator", "worker", "admin"], check=True,
                       capture_output=True)
        subprocess.run([make, self.stranger, "rogue"], check=True, capture_output=True)
        self.token_files = {}
        with open(os.path.join(self.dir, "tokens"), "w") as f:
            for name, (token, role) in TOKENS.items():
                f.write(f"{token} {name} {role}\n")
                self.token_files[name] = os.path.join(self.dir, f"{name}.token")
                with open(self.token_files[name], "w") as t:
                    t.write(token + "\n")
        self.model = self.make_model()
        port, http = self.start(
            "arbor-coordinator", f"--model={self.model}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", "--heartbeat_ms=200",
            f"--auth_tokens_file={os.path.join(self.dir, 'tokens')}", *self.tls("coordinator"),
            port_flags=("--port_file", "--http_port_file"))
        self.address = f"127.0.0.1:{port}"
        self.https = f"https://127.0.0.1:{http}"
        self.worker_id = self.start_worker("worker", self.certs)
        self.wait(lambda: self.worker_state(self.worker_id) == "WORKER_STATE_READY")

    def tls(self, name, certs=None):
        certs = certs or self.certs
        return [f"--tls_cert={certs}/{name}.pem", f"--tls_key={certs}/{name}.key",
                f"--tls_ca={certs}/ca.pem"]

    def start_worker(self, name, certs, *flags):
        """Starts a worker registering with the coordinator; returns its listen address."""
        tls = self.tls(name, certs) if name else []
        [port] = self.start("arbor-worker", f"--model={self.model}", "--threads=1",
                            "--kv_tokens=4096", "--listen=127.0.0.1:0",
                            f"--coordinator={self.address}", *tls, *flags)
        return f"127.0.0.1:{port}"

    def arbor(self, *args, who=None, cert=None, tls=True):
        """Runs the CLI against the coordinator as `who` (a token name, or None)."""
        flags = [f"--coordinator={self.address}", "--timeout_s=10"]
        if tls:
            flags.append(f"--tls_ca={self.certs}/ca.pem")
        if cert:
            flags += self.tls(cert)
        if who:
            flags.append(f"--token_file={self.token_files[who]}")
        return subprocess.run([os.path.join(BIN, "arbor"), *args, *flags], capture_output=True,
                              text=True, timeout=60)

    def workers(self):
        r = self.arbor("workers", "--json", cert="admin")
        assert r.returncode == 0, r.stderr
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def worker_state(self, worker_id):
        for line in self.workers():
            for w in line.get("workers", []):
                if w.get("workerId") == worker_id or w.get("address") == worker_id:
                    return w.get("state")
        return None

    def https_json(self, path, who=None):
        context = ssl.create_default_context(cafile=f"{self.certs}/ca.pem")
        headers = {"Authorization": f"Bearer {TOKENS[who][0]}"} if who else {}
        request = urllib.request.Request(self.https + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    @staticmethod
    def wait(condition, timeout=30):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError("condition not reached")
            time.sleep(0.1)


class SecurityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise unittest.SkipTest("openssl is not installed")
        cls.cluster = SecureCluster()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def submit(self, who):
        r = self.cluster.arbor("submit", "--tokens=1,2,3", "--max_tokens=4", who=who)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_a_missing_or_wrong_token_is_unauthenticated(self):
        r = self.cluster.arbor("jobs")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("UNAUTHENTICATED", r.stderr)
        self.assertIn("bearer token", r.stderr)
        with open(self.cluster.token_files["alice"] + ".bad", "w") as f:
            f.write("x" * 32)
        r = subprocess.run([os.path.join(BIN, "arbor"), "jobs",
                            f"--coordinator={self.cluster.address}",
                            f"--tls_ca={self.cluster.certs}/ca.pem",
                            f"--token_file={self.cluster.token_files['alice']}.bad"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("UNAUTHENTICATED", r.stderr)
        self.assertNotIn("x" * 32, r.stderr)
        self.assertEqual(self.cluster.https_json("/v1/jobs")[0], 401)

    def test_users_see_only_their_own_jobs_and_admins_see_all(self):
        job = self.submit("alice")
        for command in (["job", job], ["tree", job], ["cancel", job], ["watch", job]):
            r = self.cluster.arbor(*command, who="bob")
            self.assertNotEqual(r.returncode, 0, command)
            self.assertIn("NOT_FOUND", r.stderr, command)
        self.assertNotIn(job, self.cluster.arbor("jobs", "--json", who="bob").stdout)
        self.assertEqual(self.cluster.https_json(f"/v1/jobs/{job}", who="bob")[0], 404)
        self.assertEqual(self.cluster.https_json(f"/v1/jobs/{job}/tree", who="bob")[0], 404)

        self.assertEqual(self.cluster.arbor("job", job, who="alice").returncode, 0)
        self.assertIn(job, self.cluster.arbor("jobs", "--json", who="alice").stdout)
        status, body = self.cluster.https_json(f"/v1/jobs/{job}", who="alice")
        self.assertEqual((status, body["job_id"]), (200, job))
        self.assertIn(job, self.cluster.arbor("jobs", "--json", who="ops").stdout)
        self.assertEqual(self.cluster.arbor("cancel", job, who="ops").returncode, 0)
        # A worker's token runs no jobs.
        r = self.cluster.arbor("jobs", who="node")
        self.assertIn("PERMISSION_DENIED", r.stderr)

    def test_a_worker_with_another_cas_certificate_cannot_register(self):
        rogue = self.cluster.start_worker("rogue", self.cluster.stranger)
        # A plaintext worker presenting a user's token is refused too.
        thief = self.cluster.start_worker(
            None, None, f"--token_file={self.cluster.token_files['alice']}",
            f"--tls_ca={self.cluster.certs}/ca.pem")
        time.sleep(3)  # Several registration attempts.
        addresses = [w.get("address") for line in self.cluster.workers()
                     for w in line.get("workers", [])]
        self.assertIn(self.cluster.worker_id, addresses)
        self.assertNotIn(rogue, addresses)
        self.assertNotIn(thief, addresses)
        logs = "".join(self.cluster.log(i) for i in range(len(self.cluster.processes)))
        self.assertIn("certificate verify failed", logs)  # The rogue's handshake.
        self.assertIn("token 'alice' may not do this", logs)  # The thief's registration.

    def test_strangers_cannot_drain_and_admins_can_undrain(self):
        worker = self.cluster.worker_id
        for who, code in ((None, "UNAUTHENTICATED"), ("alice", "PERMISSION_DENIED"),
                          ("node", "PERMISSION_DENIED")):
            r = self.cluster.arbor("drain", worker, who=who)
            self.assertIn(code, r.stderr, who)
        self.assertEqual(self.cluster.worker_state(worker), "WORKER_STATE_READY")
        self.assertEqual(self.cluster.arbor("drain", worker, who="ops").returncode, 0)
        self.assertEqual(self.cluster.worker_state(worker), "WORKER_STATE_DRAINING")
        r = self.cluster.arbor("undrain", worker, who="alice")
        self.assertIn("PERMISSION_DENIED", r.stderr)
        r = self.cluster.arbor("undrain", worker, cert="admin")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.cluster.wait(lambda: self.cluster.worker_state(worker) == "WORKER_STATE_READY")
        self.submit("alice")  # The worker takes jobs again.

    def test_oversized_worker_ids_are_refused(self):
        huge = "w" * 100_000
        self.cluster.start_worker("worker", self.cluster.certs, f"--advertise={huge}:1")
        time.sleep(2)
        listed = json.dumps(self.cluster.workers())
        self.assertNotIn("w" * 200, listed)
        self.assertLess(len(listed), 10_000)
        logs = "".join(self.cluster.log(i) for i in range(len(self.cluster.processes)))
        self.assertIn("address: longer than 256 bytes", logs)

    def test_a_plaintext_client_against_tls_fails_cleanly(self):
        started = time.monotonic()
        r = self.cluster.arbor("jobs", who="alice", tls=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("UNAVAILABLE", r.stderr)
        self.assertLess(time.monotonic() - started, 30)

    def test_a_separate_cluster_port_takes_only_cluster_certificates(self):
        c = self.cluster
        port, cluster_port, http = c.start(
            "arbor-coordinator", f"--model={c.model}", "--listen=127.0.0.1:0",
            "--cluster_listen=127.0.0.1:0", "--http_listen=127.0.0.1:0", "--heartbeat_ms=200",
            f"--auth_tokens_file={os.path.join(c.dir, 'tokens')}", *c.tls("coordinator"),
            port_flags=("--port_file", "--cluster_port_file", "--http_port_file"))
        c.start("arbor-worker", f"--model={c.model}", "--threads=1", "--kv_tokens=4096",
                "--listen=127.0.0.1:0", f"--coordinator=127.0.0.1:{cluster_port}",
                *c.tls("worker"))
        cli = [os.path.join(BIN, "arbor"), "workers", "--json", f"--tls_ca={c.certs}/ca.pem"]
        admin = cli + [f"--coordinator=127.0.0.1:{cluster_port}", *c.tls("admin")]
        c.wait(lambda: "WORKER_STATE_READY" in subprocess.run(
            admin, capture_output=True, text=True, timeout=60).stdout)
        # /health reads the worker list from the cluster server, in process.
        context = ssl.create_default_context(cafile=f"{c.certs}/ca.pem")
        with urllib.request.urlopen(f"https://127.0.0.1:{http}/health", timeout=30,
                                    context=context) as r:
            self.assertEqual(json.loads(r.read())["workers_ready"], 1)
        # Without a certificate the cluster port does not even complete a handshake; an admin
        # token on the public port finds no Cluster API there.
        r = subprocess.run(cli + [f"--coordinator=127.0.0.1:{cluster_port}",
                                  f"--token_file={c.token_files['ops']}"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("UNAVAILABLE", r.stderr)
        r = subprocess.run(cli + [f"--coordinator=127.0.0.1:{port}",
                                  f"--token_file={c.token_files['ops']}"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("UNIMPLEMENTED", r.stderr)

    def test_serving_beyond_loopback_unprotected_is_refused(self):
        r = subprocess.run([os.path.join(BIN, "arbor-coordinator"), "--listen=0.0.0.0:0",
                            f"--model={self.cluster.model}"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("scripts/make-certs.sh", r.stderr)
        self.assertIn("--insecure", r.stderr)
        r = subprocess.run([os.path.join(BIN, "arbor-worker"), "--listen=0.0.0.0:0",
                            f"--model={self.cluster.model}"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("without TLS", r.stderr)

    def test_the_viewer_asks_for_a_token_and_shows_only_its_users_jobs(self):
        if browser.unavailable():
            self.skipTest(browser.unavailable())
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        mine, theirs = self.submit("alice"), self.submit("bob")
        page = browser.chrome(accept_certificates=True)
        try:
            page.get(self.cluster.https + "/ui/")
            form = page.find_element(By.ID, "token-form")
            WebDriverWait(page, 30).until(lambda p: form.is_displayed())
            self.assertIn("needs an API token", page.find_element(By.ID, "status-line").text)
            page.find_element(By.ID, "token-input").send_keys(TOKENS["alice"][0])
            page.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
            listed = "return [...document.querySelectorAll('.job-item')].map(e => e.dataset.job)"
            WebDriverWait(page, 30).until(lambda p: mine in p.execute_script(listed))
            self.assertNotIn(theirs, page.execute_script(listed))
            page.get(f"{self.cluster.https}/ui/#/jobs/{theirs}")
            box = page.find_element(By.ID, "error-box")
            WebDriverWait(page, 30).until(lambda p: box.is_displayed())
            self.assertIn("not known", box.text)  # Bob's job is as good as absent.
        finally:
            page.quit()


if __name__ == "__main__":
    unittest.main()
