"""A private PostgreSQL server for the integration tests, as the job store's C++ tests start one
(tests/coordinator/store/postgres_server.h): initdb into a fresh folder, then `postgres`
listening only on a Unix socket there, so it touches no system cluster and no TCP port. As root
it runs as the `postgres` user (PostgreSQL refuses root). Import it after putting this folder on
sys.path.
"""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time

PORT = "5432"  # Only names the socket file: nothing listens on TCP.
USER = "arbor"


def find_binaries():
    """The newest /usr/lib/postgresql/N/bin with initdb and postgres, or None (the postgresql
    package is not installed)."""
    found = [d for d in glob.glob("/usr/lib/postgresql/*/bin")
             if os.path.exists(os.path.join(d, "initdb"))
             and os.path.exists(os.path.join(d, "postgres"))]
    found.sort(key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else -1)
    return found[-1] if found else None


class PostgresServer:
    """Started by the constructor; stop() ends it and removes its folder. Tests run it with
    fsync off (nothing they check needs the disk); `fsync` on, for measuring the store's cost,
    it commits as a production server does."""

    def __init__(self, bin_dir, fsync=False):
        # Short, and reachable by the postgres user: a Unix socket's path has at most 107 bytes.
        self.dir = tempfile.mkdtemp(prefix="arbor-pg-", dir="/tmp")
        as_user = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            as_user = ["setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups",
                       "--reset-env"]
        data = os.path.join(self.dir, "data")
        init = subprocess.run(as_user + [os.path.join(bin_dir, "initdb"), "-D", data, "-U", USER,
                                         "-A", "trust", "--no-sync", "--no-instructions"],
                              capture_output=True, text=True, timeout=120)
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{init.stdout}{init.stderr}")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.process = subprocess.Popen(
            as_user + [os.path.join(bin_dir, "postgres"), "-D", data, "-k", self.dir, "-p", PORT,
                       "-c", "listen_addresses=", "-c", f"fsync={'on' if fsync else 'off'}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.conninfo = f"host={self.dir} port={PORT} user={USER} dbname=postgres"
        deadline = time.monotonic() + 60
        ready = [os.path.join(bin_dir, "pg_isready"), "-q", "-h", self.dir, "-p", PORT]
        while subprocess.run(ready).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(os.path.join(self.dir, "server.log")) as f:
                    log = f.read()
                self.stop()
                raise RuntimeError(f"postgres did not start:\n{log}")
            time.sleep(0.05)

    def stop(self):
        """Fast shutdown (SIGINT), then the folder goes."""
        if self.process.poll() is None:
            self.process.send_signal(2)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
