"""Two coordinators share one job store; when one dies, the other takes its jobs over.

A PostgreSQL server started by the test holds the store; two real arbor-coordinators (ids a and
b, a 2 s lease renewed every 0.4 s) share it and one real arbor-worker on a random `tiny`
checkpoint. Jobs submitted to a (greedy and a branching SEARCH one, long enough to be cut off)
are followed by clients for a few events; then the worker is paused (SIGSTOP), which holds a's
jobs mid-generation. While a lives, b answers for a's jobs from the store: it lists them as
RUNNING, and a Cancel sent to b reaches a, which cancels the job. Clients of b (gRPC Watch, and
GET /v1/jobs/ID/events) stream a's jobs, relayed from a: the same events a's own clients got.
Then a is SIGKILLed and the worker resumed: once a's lease lapses, b takes the jobs over and runs
them again under their ids. a's clients reconnect to b with the count of events they have; b's
own streams stay open through a's death. Either way each remaining event must come exactly
once, so that what each client saw, and the jobs' text and tree, equal the same requests run
uninterrupted. Run by ctest with the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import signal
import sys
import time
import unittest
import urllib.request

try:
    import grpc
    from google.protobuf import json_format
except ImportError as e:  # The dependency script installs it; without it nothing to test.
    print(f"{e.name} is not installed in this Python; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from arbor_processes import Processes  # noqa: E402
from grpc_stubs import generate_stubs  # noqa: E402
from job_runs import MAX_TOKENS, JobRuns, as_run, sse_messages  # noqa: E402
import postgres_server  # noqa: E402

SEEN_BEFORE_KILL = 5
LEASE = ("--job_lease=2s", "--job_lease_renewal=400ms")

if postgres_server.find_binaries() is None:
    print("PostgreSQL's server binaries are absent (no /usr/lib/postgresql/N/bin/initdb): "
          "install the postgresql package (scripts/install-deps.sh); skipping")
    sys.exit(77)


def eventually(check, timeout=60):
    """Calls `check` until it returns a true value, which it returns; fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


class CoordinatorTakeoverTest(JobRuns, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Cleanups run last first: the coordinators stop while the store still answers.
        cls.postgres = postgres_server.PostgresServer(postgres_server.find_binaries())
        cls.addClassCleanup(cls.postgres.stop)
        cls.processes = Processes(prefix="arbor-takeover-")
        cls.addClassCleanup(cls.processes.stop)
        cls.pb, cls.rpc, cls.entropix = generate_stubs(os.path.join(cls.processes.dir, "stubs"))
        cls.model = cls.processes.make_model("tiny")
        worker, = cls.processes.start("arbor-worker", f"--model={cls.model}",
                                      "--listen=127.0.0.1:0", "--threads=1")
        cls.worker_index = len(cls.processes.processes) - 1
        cls.worker = f"127.0.0.1:{worker}"

    def start_coordinator(self, coordinator_id):
        """A coordinator on the worker and the shared store, with HTTP, stopped (SIGTERM) when
        the test ends; returns (stub, process index, HTTP base URL)."""
        index = len(self.processes.processes)
        self.addCleanup(lambda: self.processes.processes[index].terminate())
        port, http_port = self.processes.start(
            "arbor-coordinator", f"--model={self.model}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--workers={self.worker}",
            f"--job_store=postgres:{self.postgres.conninfo}", f"--coordinator_id={coordinator_id}",
            "--steps_per_run=4", *LEASE, port_flags=("--port_file", "--http_port_file"))
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.addCleanup(channel.close)
        return self.rpc.GenerationStub(channel), index, f"http://127.0.0.1:{http_port}"

    def assert_b_answers_for_a(self, a, b, job_id, cancelled):
        """While a holds `job_id` (its worker paused), b answers GetJob and GetTree from a, does
        not relay a call relayed to it already, and a Cancel of `cancelled` sent to b makes a
        cancel it."""
        job = b.GetJob(self.pb.JobRef(job_id=job_id), timeout=30)
        self.assertEqual(job.state, self.pb.JOB_STATE_RUNNING)
        # b asks a for what only a has while it runs the job: its text so far and its tree.
        self.assertEqual(job, a.GetJob(self.pb.JobRef(job_id=job_id), timeout=30))
        self.assertGreater(len(job.token_ids), 0, "a's text so far reached b")
        tree = self.pb.GetTreeRequest(job_id=job_id)
        self.assertEqual(b.GetTree(tree, timeout=30), a.GetTree(tree, timeout=30))
        with self.assertRaises(grpc.RpcError) as relayed:
            b.GetTree(tree, timeout=30, metadata=[("arbor-relayed", "1")])
        self.assertEqual(relayed.exception.code(), grpc.StatusCode.UNAVAILABLE)
        for states, listed_there in (([], True), ([self.pb.JOB_STATE_RUNNING], True),
                                     ([self.pb.JOB_STATE_QUEUED], False)):
            listed = b.ListJobs(self.pb.ListJobsRequest(states=states), timeout=30)
            self.assertEqual(job_id in {j.job_id for j in listed.jobs}, listed_there, states)
        # A call another coordinator relays is never relayed on: b names the holder instead.
        with self.assertRaises(grpc.RpcError) as watched:
            next(b.Watch(self.pb.JobRef(job_id=job_id), timeout=30,
                         metadata=[("arbor-relayed", "1")]))
        self.assertEqual(watched.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("runs on coordinator a", watched.exception.details())
        b.Cancel(self.pb.JobRef(job_id=cancelled), timeout=30)
        state = eventually(lambda: a.GetJob(self.pb.JobRef(job_id=cancelled), timeout=30).state
                           == self.pb.JOB_STATE_CANCELLED)
        self.assertTrue(state, "the Cancel sent to b reached a")
        stored = eventually(lambda: b.GetJob(self.pb.JobRef(job_id=cancelled), timeout=30).state
                            == self.pb.JOB_STATE_CANCELLED)
        self.assertTrue(stored, "b reads a's cancelled job from the store")

    def relay_through(self, b, b_base, seen):
        """Streams of a's jobs through b, which does not hold them: a gRPC Watch of each job of
        `seen` and an HTTP event stream of the first, each checked to start with the events a's
        own clients saw (`seen`, job id to events). Returns (job id to Watch, HTTP messages)."""
        watches = {job_id: b.Watch(self.pb.JobRef(job_id=job_id), timeout=300) for job_id in seen}
        for job_id, watch in watches.items():
            self.assertEqual([next(watch) for _ in range(SEEN_BEFORE_KILL)], seen[job_id])
        first = next(iter(seen))
        response = urllib.request.urlopen(f"{b_base}/v1/jobs/{first}/events", timeout=300)
        self.addCleanup(response.close)
        messages = sse_messages(response)
        for i, event in enumerate(seen[first]):
            message = next(messages)
            self.assertEqual(int(message["id"]), i + 1)
            self.assertEqual(json_format.Parse(message["data"], self.pb.GenerateEvent()), event)
        return watches, messages

    def rest_of(self, messages):
        """The events of the HTTP event stream `messages` still to come."""
        return [json_format.Parse(m["data"], self.pb.GenerateEvent()) for m in messages]

    def test_survivor_takes_over_a_killed_coordinators_jobs_exactly(self):
        a, a_index, _ = self.start_coordinator("a")
        b, b_index, b_base = self.start_coordinator("b")
        greedy = self.submit(a, self.request(self.greedy(), seed=11))
        search = self.submit(a, self.request(self.search(), seed=12))
        doomed = self.submit(a, self.request(self.greedy(), seed=13))
        watches = {job_id: a.Watch(self.pb.JobRef(job_id=job_id), timeout=300)
                   for job_id in (greedy, search)}
        seen = {job_id: [next(w) for _ in range(SEEN_BEFORE_KILL)]
                for job_id, w in watches.items()}
        worker = self.processes.processes[self.worker_index]
        worker.send_signal(signal.SIGSTOP)  # a's jobs stop mid-generation, still a's.
        try:
            self.assertEqual(a.GetJob(self.pb.JobRef(job_id=greedy), timeout=30).state,
                             self.pb.JOB_STATE_RUNNING, "paused mid-generation")
            self.assert_b_answers_for_a(a, b, greedy, cancelled=doomed)
            relayed, over_http = self.relay_through(b, b_base, seen)
            self.processes.processes[a_index].kill()
            self.processes.processes[a_index].wait()
        finally:
            worker.send_signal(signal.SIGCONT)

        # b's streams went on through a's death; a's clients reconnect to b.
        got = {("relayed", job_id): seen[job_id] + list(w) for job_id, w in relayed.items()}
        got["http", greedy] = seen[greedy] + self.rest_of(over_http)
        for job_id in (greedy, search):
            seen[job_id] += self.events(b, job_id, seen=len(seen[job_id]))
            got["reconnected", job_id] = seen[job_id]
        taken_over = {job_id: self.finished(b, job_id) for job_id in (greedy, search)}
        taken = [line for line in self.processes.log(b_index).splitlines()
                 if "job taken over" in line]
        self.assertEqual(sorted(job_id for job_id in (greedy, search, doomed)
                                if any(job_id in line for line in taken)),
                         sorted((greedy, search)), taken)

        # The same requests, uninterrupted, on the survivor.
        for job_id, request in ((greedy, self.request(self.greedy(), seed=11)),
                                (search, self.request(self.search(), seed=12))):
            again = self.submit(b, request)
            uninterrupted_events = self.events(b, again)
            self.assert_same_run(taken_over[job_id], self.finished(b, again))
            # Each event exactly once: what each client saw is an uninterrupted run.
            for (client, of), events in got.items():
                if of != job_id:
                    continue
                self.assertEqual(len(events), len(uninterrupted_events), (client, job_id))
                for i, (x, y) in enumerate(zip(events, uninterrupted_events)):
                    self.assertEqual(as_run(x), as_run(y), f"{client} job {job_id} event {i}")
        self.assertTrue(
            any(n.status == self.pb.NODE_STATUS_PRUNED for n in taken_over[search][1].nodes),
            "the search job branched")

    def test_a_paused_coordinator_that_comes_back_is_fenced(self):
        c, c_index, _ = self.start_coordinator("c")
        d, d_index, _ = self.start_coordinator("d")
        job_id = self.submit(c, self.request(self.greedy(), seed=21))
        next(c.Watch(self.pb.JobRef(job_id=job_id), timeout=300))
        paused = self.processes.processes[c_index]
        paused.send_signal(signal.SIGSTOP)  # Alive, but renews nothing: its lease lapses.
        try:
            job, _ = self.finished(d, job_id)
        finally:
            paused.send_signal(signal.SIGCONT)
        self.assertEqual((job.state, len(job.token_ids)), (self.pb.JOB_STATE_FINISHED, MAX_TOKENS),
                         job.error)
        # c learns at its first renewal that it lost the job, or its write of the end is refused.
        fenced = eventually(lambda: [
            line for line in self.processes.log(c_index).splitlines() if job_id in line and (
                "job stopped here" in line
                or "the end of the job here was not recorded" in line)])
        self.assertTrue(fenced, self.processes.log(c_index))
        time.sleep(1)  # Renewals of c's, had it any left to write.
        self.assertEqual(d.GetJob(self.pb.JobRef(job_id=job_id), timeout=30), job)
        # c answers with d's run too: its own, cut short, is not the job's.
        on_c = c.GetJob(self.pb.JobRef(job_id=job_id), timeout=30)
        self.assertEqual((on_c.state, on_c.text), (job.state, job.text), on_c.error)


if __name__ == "__main__":
    unittest.main()
