"""Coordinators sharing one PostgreSQL job store, and the workers they all dial, as real
processes that a chaos run kills and restarts.

Each coordinator sits in a slot with fixed loopback ports (gRPC and HTTP), so that clients and a
gateway keep one address per slot across its restarts: SIGKILL a slot's coordinator, start it
again under the same --coordinator_id (it runs its own unfinished jobs again at once) or under a
new one (a replacement: the dead one's jobs are taken over when their lease lapses). Workers
are dialled by every coordinator (--workers): a worker registers with one coordinator only, and
a static worker serves any that calls it. Import it after putting this folder on sys.path.
"""

import signal
import threading

from arbor_processes import Processes, wait_ready

# Short leases: a dead coordinator's jobs move after about 2.4 s.
LEASE = ("--job_lease=2s", "--job_lease_renewal=400ms")
LEASE_SECONDS = 2.4


class Slot:
    """One coordinator's place: its id now, its ports, and its process's index in Processes."""

    def __init__(self, coordinator_id):
        self.coordinator_id = coordinator_id
        self.port = 0
        self.http_port = 0
        self.index = None
        self.up = False

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def base(self):
        return f"http://127.0.0.1:{self.http_port}"


class StoreCluster:
    """`workers` workers on `model` and one coordinator per id of `ids` on the store at
    `conninfo`, started by the constructor; `processes` (arbor_processes.Processes) owns them."""

    def __init__(self, processes: Processes, model, conninfo, ids=("a", "b"), workers=2,
                 worker_flags=()):
        self.processes = processes
        self.model = model
        self.conninfo = conninfo
        self.lock = threading.Lock()
        # A killed coordinator's sequences leave the workers' KV soon (default 30 s).
        ports = [processes.start("arbor-worker", f"--model={model}", "--listen=127.0.0.1:0",
                                 "--threads=1", "--owner_lease_seconds=5", *worker_flags)[0]
                 for _ in range(workers)]
        self.workers = ",".join(f"127.0.0.1:{p}" for p in ports)
        self.slots = [Slot(i) for i in ids]
        for slot in self.slots:
            self._start(slot)
        for slot in self.slots:
            wait_ready(slot.base, timeout=60)

    def _start(self, slot):
        slot.index = len(self.processes.processes)
        slot.port, slot.http_port = self.processes.start(
            "arbor-coordinator", f"--model={self.model}", f"--listen={slot.address}",
            f"--http_listen=127.0.0.1:{slot.http_port}", f"--workers={self.workers}",
            f"--job_store=postgres:{self.conninfo}", f"--coordinator_id={slot.coordinator_id}",
            "--steps_per_run=4", *LEASE, port_flags=("--port_file", "--http_port_file"))
        slot.up = True

    def kill(self, slot):
        """SIGKILL: the coordinator dies mid-job, holding its leases."""
        with self.lock:
            slot.up = False
            process = self.processes.processes[slot.index]
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)

    def restart(self, slot, coordinator_id=None):
        """Starts the slot's coordinator again on its ports, under `coordinator_id` when given
        (a replacement), and waits until it is ready."""
        with self.lock:
            if coordinator_id is not None:
                slot.coordinator_id = coordinator_id
            self._start(slot)
        wait_ready(slot.base, timeout=60)

    def up_slots(self):
        with self.lock:
            return [s for s in self.slots if s.up]
