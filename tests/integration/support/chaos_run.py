"""A chaos run of coordinators on one job store, and its verdict.

Streaming load from client threads (chaos_clients: gRPC Generate, Submit + Watch, Submit + HTTP
events, streamed chat through the smg gateway; greedy and branching SEARCH requests) runs while
one coordinator after another is SIGKILLed and started again on its ports: under its own
--coordinator_id after a random pause of up to two leases (so that it runs its jobs again
itself, or finds them taken over by the survivor), and once for good, replaced after its lease
by a coordinator under a new id (the survivor takes the dead one's jobs over). Then every
request the clients sent is run once more, uninterrupted, and the run checks that no accepted
job was lost (each ends FINISHED on every coordinator), that each job's text, token ids and tree
equal its uninterrupted run's (the numerics are batch-invariant), that every client that
followed a job saw each of its events exactly once (the uninterrupted run's events, in order,
HTTP ids 1, 2, ...), and that a chat stream that ran to its end streamed the job's text.

Shared by tests/integration/coordinator_chaos_test.py (a short run in `make test`) and
bench/soak/coordinator_chaos.py (the long form). Import it after putting this folder on
sys.path; ARBOR_BINARY_DIR and ARBOR_SOURCE_DIR name the build and the sources.
"""

import bisect
import collections
import os
import random
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc

from arbor_processes import Processes
from chaos_clients import ChaosClients, Seen
from grpc_stubs import generate_stubs
from job_runs import JobRuns, as_run
import policies
import postgres_server
import smg_gateway
from store_cluster import LEASE_SECONDS, StoreCluster

MODEL = "tiny"
# The load threads' roles, taken in turn: how the client follows its job, and what it asks.
ROLES = (("generate", "greedy"), ("watch", "search"), ("sse", "greedy"), ("chat", "chat"),
         ("generate", "search"), ("watch", "greedy"), ("sse", "search"), ("chat", "chat"))
# A restarted coordinator is routed to again at its first good probe.
GATEWAY_FLAGS = ("--cb-timeout-duration-secs", "1", "--health-success-threshold", "1")
# A stream with an event less than this before or after a kill was live at the kill.
LIVE = 0.5
WORDS = ("tree", "river", "stone", "lamp", "garden", "cloud", "window", "letter", "bridge",
         "candle", "harbor", "meadow", "engine", "violin", "market", "forest")

Kill = collections.namedtuple("Kill", "time coordinator for_good down_seconds")
Reference = collections.namedtuple("Reference", "job tree events text")


class Stack:
    """PostgreSQL, a StoreCluster on a `tiny` checkpoint and, when installed and `gateway`,
    smg in front of the coordinators' HTTP gateways, with clients of them all; close() stops
    everything, the store last."""

    def __init__(self, prefix, gateway=True):
        self.gateway = None
        self.processes = None
        self.postgres = postgres_server.PostgresServer(postgres_server.find_binaries())
        try:
            self.processes = Processes(prefix=prefix)
            self.pb, self.rpc, self.entropix = generate_stubs(
                os.path.join(self.processes.dir, "stubs"))
            self.cluster = StoreCluster(self.processes, self.processes.make_model(MODEL),
                                        self.postgres.conninfo)
            slots = self.cluster.slots
            if gateway and smg_gateway.installed():
                self.gateway = smg_gateway.Gateway([s.base for s in slots],
                                                   os.path.join(self.processes.dir, "smg.log"),
                                                   GATEWAY_FLAGS)
        except BaseException:
            self.close()
            raise
        self.clients = ChaosClients(self.pb, self.rpc, [s.address for s in slots],
                                    [s.base for s in slots], self.gateway and self.gateway.base)

    def close(self):
        if self.gateway is not None:
            self.gateway.stop()
        if self.processes is not None:
            self.processes.stop()
        self.postgres.stop()


class Pool:
    """`size` distinct requests of each kind (greedy, search: GenerateRequests; chat: the
    body of a chat completion, greedy or branching in turn), drawn from `rng`."""

    def __init__(self, pb, entropix, rng, size, max_tokens):
        self.size = size
        made = JobRuns()  # Its greedy() and search() policies, as the takeover tests run them.
        made.pb, made.entropix = pb, entropix
        self.requests = {}
        for i in range(size):
            prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 12)))
            tokens = rng.randrange(max_tokens // 2, max_tokens + 1)
            seed = rng.randrange(1 << 31)
            for kind, policy in (("greedy", made.greedy()), ("search", made.search())):
                self.requests[(kind, i)] = pb.GenerateRequest(
                    text=prompt, max_tokens=tokens, seed=seed, policy=policy,
                    stop=entropix.StopConditions(ignore_eos=True))
            chat = {"model": MODEL, "messages": [{"role": "user", "content": prompt}],
                    "max_tokens": tokens, "seed": seed}
            if i % 2:
                chat["arbor"] = {"policy": policies.BRANCH_ALWAYS, "ignore_eos": True}
            else:
                chat.update(temperature=0, arbor={"ignore_eos": True})
            self.requests[("chat", i)] = chat


def load(clients, pool, role, rng, stop, records, lock):
    """One client thread: jobs of `role` one after another until `stop`."""
    how, kind = role
    while not stop.is_set():
        seen = Seen(how, (kind, rng.randrange(pool.size)))
        request = pool.requests[seen.key]
        try:
            if how == "chat":
                clients.chat(seen, request)
            else:
                getattr(clients, how)(seen, request, rng.randrange(len(clients.addresses)))
        except grpc.RpcError as e:
            seen.error = f"{how} of job {seen.job_id}: {e.code().name}: {e.details()}"
        with lock:
            records.append(seen)


def chaos(cluster, kills, every, rng, log, say):
    """`kills` SIGKILLs `every` seconds apart; the middle one for good."""
    for k in range(kills):
        time.sleep(every)
        slot = rng.choice(cluster.slots)
        killed, for_good = slot.coordinator_id, k == kills // 2
        start = time.monotonic()
        cluster.kill(slot)
        if for_good:
            time.sleep(LEASE_SECONDS + 1)  # Past the lease: the survivor takes its jobs over.
            cluster.restart(slot, coordinator_id=f"replaces-{killed}")
        else:
            time.sleep(rng.uniform(0, 2 * LEASE_SECONDS))
            cluster.restart(slot)
        log.append(Kill(start, killed, for_good, time.monotonic() - start))
        say(f"kill {k + 1}/{kills}: coordinator {killed} "
            f"{'for good, replaced' if for_good else 'restarted'} after "
            f"{log[-1].down_seconds:.1f} s")


def reference(clients, pool, key):
    """The request of `key` run uninterrupted on the first coordinator: its job, tree and
    events, and the text a client got (a chat's is streamed, as through the gateway)."""
    pb = clients.pb
    seen = Seen("reference", key)
    if key[0] == "chat":
        clients.chat(seen, pool.requests[key], base=clients.bases[0])
        if seen.text is None:
            raise RuntimeError(f"reference chat {key}: {seen.error or 'cut off'}")
    else:
        seen.job_id, _ = clients.submit(pool.requests[key], 0)
    clients.follow(seen, 0)
    job = clients.call(0, "GetJob", pb.JobRef(job_id=seen.job_id))
    tree = clients.call(0, "GetTree", pb.GetTreeRequest(job_id=seen.job_id,
                                                       include_top_logprobs=True))
    return Reference(job, tree, seen.events, job.text if seen.text is None else seen.text)


def run(stack, kills, every, threads, pool_size, max_tokens, seed, say=print):
    """The whole run; returns its Report."""
    rng = random.Random(seed)
    pool = Pool(stack.pb, stack.entropix, rng, pool_size, max_tokens)
    roles = [r for r in ROLES if stack.gateway is not None or r[0] != "chat"]
    stop, lock, records, kill_log = threading.Event(), threading.Lock(), [], []
    clients = [threading.Thread(target=load, args=(
        stack.clients, pool, roles[i % len(roles)], random.Random(rng.random()), stop, records,
        lock)) for i in range(threads)]
    start = time.monotonic()
    for t in clients:
        t.start()
    try:
        chaos(stack.cluster, kills, every, rng, kill_log, say)
        time.sleep(every)  # Load on the last restarted coordinator too.
    finally:
        stop.set()
        for t in clients:
            t.join()
    elapsed = time.monotonic() - start
    say(f"{len(records)} jobs in {elapsed:.0f} s; running them again uninterrupted")
    keys = sorted({seen.key for seen in records if seen.job_id})
    with ThreadPoolExecutor(8) as executor:
        references = dict(zip(keys, executor.map(
            lambda key: reference(stack.clients, pool, key), keys)))
    report = Report(records, kill_log, elapsed)
    report.check(stack.clients, references)
    return report


def same_tree(a, b):
    """Trees equal but for the workers' sequence ids, which are per run."""
    if len(a.nodes) != len(b.nodes):
        return False
    for x, y in zip(a.nodes, b.nodes):
        x.sequence_id = y.sequence_id = 0
    return list(a.nodes) == list(b.nodes)


def ended(clients, i, job_id, timeout=60):
    """GetJob of `job_id` on slot i once the job has ended (or as it is after `timeout`)."""
    pb = clients.pb
    deadline = time.monotonic() + timeout
    while True:
        job = clients.call(i, "GetJob", pb.JobRef(job_id=job_id))
        if job.state not in (pb.JOB_STATE_QUEUED, pb.JOB_STATE_RUNNING):
            return job
        if time.monotonic() > deadline:
            return job
        time.sleep(0.2)


class Report:
    """What a run did and what it found wrong; check() fills in the findings."""

    def __init__(self, records, kills, elapsed):
        self.kills = kills
        self.elapsed = elapsed
        self.accepted = [seen for seen in records if seen.job_id]
        self.client_errors = [seen.error for seen in records if seen.error]
        self.lost, self.unreadable, self.mismatches, self.stream_faults = [], [], [], []
        self.duplicates = 0  # Events a client got beyond those of the uninterrupted run.

    def check(self, clients, references):
        """Each accepted job on every coordinator, and what its client saw, against the
        uninterrupted run of its request."""
        for seen in self.accepted:
            ref = references[seen.key]
            for i in range(len(clients.addresses)):
                self._check_job(clients, i, seen, ref)
            self._check_stream(seen, ref)

    def _check_job(self, clients, i, seen, ref):
        pb = clients.pb
        where = f"job {seen.job_id} ({seen.role} {seen.key[0]} {seen.key[1]}) on slot {i}"
        try:
            job = ended(clients, i, seen.job_id)
        except grpc.RpcError as e:
            self.lost.append(f"{where}: GetJob {e.code().name}: {e.details()}")
            return
        if job.state != pb.JOB_STATE_FINISHED:
            self.lost.append(f"{where}: {pb.JobState.Name(job.state)} {job.error}")
            return
        if job.text != ref.job.text or list(job.token_ids) != list(ref.job.token_ids):
            self.mismatches.append(f"{where}: text or token ids differ from the uninterrupted "
                                   f"run's ({len(job.token_ids)} tokens, "
                                   f"{len(ref.job.token_ids)} uninterrupted)")
        try:
            tree = clients.call(i, "GetTree", pb.GetTreeRequest(job_id=seen.job_id,
                                                               include_top_logprobs=True))
        except grpc.RpcError as e:
            self.unreadable.append(f"{where}: GetTree {e.code().name}: {e.details()}")
            return
        if not same_tree(tree, ref.tree):
            self.mismatches.append(f"{where}: tree differs from the uninterrupted run's "
                                   f"({len(tree.nodes)} nodes, {len(ref.tree.nodes)})")

    def _check_stream(self, seen, ref):
        if seen.role == "chat":
            if seen.text is not None and seen.text != ref.text:
                self.mismatches.append(f"job {seen.job_id}: the chat streamed {seen.text!r}, "
                                       f"its uninterrupted stream {ref.text!r}")
            return
        where = f"job {seen.job_id} ({seen.role} {seen.key[0]} {seen.key[1]})"
        if seen.ids != list(range(1, len(seen.ids) + 1)):
            self.stream_faults.append(f"{where}: event ids {seen.ids}")
        got = [as_run(e) for e in seen.events]
        want = [as_run(e) for e in ref.events]
        if got == want:
            return
        self.duplicates += max(0, len(got) - len(want))
        first = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
        self.stream_faults.append(f"{where}: {len(got)} events where the uninterrupted run has "
                                  f"{len(want)}; first difference at event {first}")

    def stalls(self):
        """{kill: the longest wait, from the kill to the next event, of any gRPC or HTTP event
        stream live at it}: how long the dead coordinator's jobs stood still, whether their
        clients reconnected or were relayed. A stream is live at a kill when it got an event
        less than LIVE seconds before or after it: events sent before the kill may still be
        read after it, and the wait starts at the last of them."""
        worst = {}
        for seen in self.accepted:
            for kill in self.kills:
                first = bisect.bisect_left(seen.times, kill.time - LIVE)
                last = bisect.bisect_left(seen.times, kill.time + LIVE)
                for k in range(first, min(last, len(seen.times) - 1)):
                    worst[kill] = max(worst.get(kill, 0.0), seen.times[k + 1] - kill.time)
        return worst

    def resumed(self):
        return sum(1 for s in self.accepted for _, resumed in s.breaks if resumed is not None)

    def failures(self):
        return self.lost + self.unreadable + self.mismatches + self.stream_faults + \
            self.client_errors

    def summary(self):
        """The run in a few lines."""
        roles = collections.Counter(seen.role for seen in self.accepted)
        by_role = ", ".join(f"{n} {role}" for role, n in sorted(roles.items()))
        restarts = [k for k in self.kills if not k.for_good]
        down = [k.down_seconds for k in restarts] or [0]
        cut = sum(1 for s in self.accepted if s.role == "chat" and s.text is None)

        stalls = self.stalls()

        def spread(for_good):
            worst = [s for kill, s in stalls.items() if kill.for_good == for_good]
            if not worst:
                return "no live stream"
            return f"median {statistics.median(worst):.1f} s, max {max(worst):.1f} s"
        return [
            f"{len(self.kills)} SIGKILLs in {self.elapsed:.0f} s: {len(restarts)} restarted "
            f"under their id (down {min(down):.1f}-{max(down):.1f} s), "
            f"{len(self.kills) - len(restarts)} for good (replaced under a new id)",
            f"{len(self.accepted)} jobs accepted ({by_role}); "
            f"{self.resumed()} event streams broken and resumed, {cut} chat streams cut off",
            f"lost {len(self.lost)}, trees unreadable {len(self.unreadable)}, mismatches "
            f"{len(self.mismatches)}, event streams wrong {len(self.stream_faults)} "
            f"(duplicated events {self.duplicates}), clients that gave up "
            f"{len(self.client_errors)}",
            "longest stall of a live event stream, SIGKILL to its next event, per kill: "
            f"restarts {spread(False)}; for good {spread(True)}",
        ] + [f"  {failure}" for failure in self.failures()[:20]]
