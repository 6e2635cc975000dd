"""Jobs outlive a coordinator that is killed: the job store (--job_store=sqlite:PATH).

A real arbor-worker on a random `tiny` checkpoint behind a real arbor-coordinator with an SQLite
job store. Detached jobs (a greedy one and a branching SEARCH one, each long enough to be cut off
mid-generation) are submitted, clients follow them for a few events (the search job over gRPC
Watch, the greedy one over HTTP, GET /v1/jobs/{id}/events), and then the coordinator is
SIGKILLed. A new coordinator on the same store runs them again under their ids; the clients
reconnect with the count of events they have (Watch's last-event-id metadata, HTTP's
Last-Event-ID header) and must then get each remaining event exactly once, so that what each
saw equals an uninterrupted run's events. The
resumed jobs' text and tree must equal those of the same requests run uninterrupted, and a job
that had finished before the kill must still be listed and answer GetJob and GetTree (gRPC and
HTTP). A job whose store row names another model fails with that reason instead of running,
and a job that a SIGTERMed coordinator cancels on its way out runs to its end in the next one.
Run by ctest with the project virtualenv; ARBOR_BINARY_DIR and ARBOR_SOURCE_DIR point at the
build and the sources.
"""

import json
import os
import sqlite3
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

try:
    import grpc
    from google.protobuf import json_format
except ImportError as e:  # The dependency script installs it; without it nothing to test.
    print(f"{e.name} is not installed in this Python; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from arbor_processes import BIN, Processes, http_json  # noqa: E402
from grpc_stubs import generate_stubs  # noqa: E402
from job_runs import MAX_TOKENS, JobRuns, as_run  # noqa: E402

SEEN_BEFORE_KILL = 5  # Events the client takes before the coordinator dies.


def sse_events(base, job_id, last_event_id=None, count=None):
    """GET /v1/jobs/{id}/events: (id, event JSON) pairs, `count` of them or until the stream
    ends; with `last_event_id`, sent as Last-Event-ID."""
    headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
    request = urllib.request.Request(f"{base}/v1/jobs/{job_id}/events", headers=headers)
    events, fields = [], {}
    with urllib.request.urlopen(request, timeout=300) as response:
        for line in response:
            line = line.decode().rstrip("\n")
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            events.append((int(fields["id"]), json.loads(fields["data"])))
            fields = {}
            if len(events) == count:
                break
    return events


class JobStoreResumeTest(JobRuns, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-store-")
        cls.addClassCleanup(cls.processes.stop)
        cls.pb, cls.rpc, cls.entropix = generate_stubs(os.path.join(cls.processes.dir, "stubs"))
        cls.model = cls.processes.make_model("tiny")
        cls.store = os.path.join(cls.processes.dir, "jobs.db")
        worker, = cls.processes.start("arbor-worker", f"--model={cls.model}",
                                      "--listen=127.0.0.1:0", "--threads=1")
        cls.worker = f"127.0.0.1:{worker}"

    def start_coordinator(self, store, *flags):
        """A coordinator on the worker with `store`; returns (stub, HTTP base, process index),
        and keeps its gRPC address in self.address."""
        index = len(self.processes.processes)
        port, http_port = self.processes.start(
            "arbor-coordinator", f"--model={self.model}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--workers={self.worker}", f"--job_store=sqlite:{store}",
            "--steps_per_run=4", *flags, port_flags=("--port_file", "--http_port_file"))
        self.address = f"127.0.0.1:{port}"
        channel = grpc.insecure_channel(self.address)
        self.addCleanup(channel.close)
        return self.rpc.GenerationStub(channel), f"http://127.0.0.1:{http_port}", index

    def kill(self, index):
        process = self.processes.processes[index]
        process.kill()
        process.wait()

    def sse_after_resume(self, base, job_id, seen):
        """The job's events after the first `seen` over HTTP, waiting through a resume."""
        deadline = time.monotonic() + 300
        while True:
            try:
                return sse_events(base, job_id, last_event_id=seen)
            except urllib.error.HTTPError as e:  # 503 until the job is started again.
                if e.code != 503 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def test_killed_coordinator_resumes_its_jobs_exactly_and_keeps_history(self):
        stub, base, index = self.start_coordinator(self.store)
        done = self.submit(stub, self.request(self.greedy(), seed=5, max_tokens=8))
        done_job, done_tree = self.finished(stub, done)
        greedy = self.submit(stub, self.request(self.greedy(), seed=11))
        search = self.submit(stub, self.request(self.search(), seed=12))
        watch = stub.Watch(self.pb.JobRef(job_id=search), timeout=300)
        seen = [next(watch) for _ in range(SEEN_BEFORE_KILL)]
        seen_over_http = sse_events(base, greedy, count=SEEN_BEFORE_KILL)
        job = stub.GetJob(self.pb.JobRef(job_id=greedy), timeout=30)
        self.assertEqual(job.state, self.pb.JOB_STATE_RUNNING, "killed mid-generation")
        self.kill(index)

        stub, base, index = self.start_coordinator(self.store)
        seen += self.events(stub, search, seen=len(seen))
        seen_over_http += self.sse_after_resume(base, greedy, len(seen_over_http))
        resumed = {job_id: self.finished(stub, job_id) for job_id in (greedy, search)}
        log = self.processes.log(index)
        lines = [line for line in log.splitlines() if "job resumed from the job store" in line]
        self.assertEqual(len(lines), 2, log)
        self.assertTrue(greedy in lines[0] and search in lines[1], lines)

        # The same requests, uninterrupted, on the same coordinator.
        again_greedy = self.submit(stub, self.request(self.greedy(), seed=11))
        again_search = self.submit(stub, self.request(self.search(), seed=12))
        uninterrupted_events = self.events(stub, again_search)
        self.assert_same_run(resumed[greedy], self.finished(stub, again_greedy))
        # Over HTTP too: ids 1, 2, … each once, and the events an uninterrupted run makes.
        greedy_events = self.events(stub, again_greedy)
        self.assertEqual([i for i, _ in seen_over_http], list(range(1, len(greedy_events) + 1)))
        for (_, a), b in zip(seen_over_http, greedy_events):
            self.assertEqual(as_run(json_format.ParseDict(a, self.pb.GenerateEvent())), as_run(b))
        self.assert_same_run(resumed[search], self.finished(stub, again_search))
        self.assertTrue(
            any(n.status == self.pb.NODE_STATUS_PRUNED for n in resumed[search][1].nodes),
            "the search job branched")
        # Each event exactly once: what the reconnected client saw is an uninterrupted run.
        self.assertEqual(len(seen), len(uninterrupted_events))
        for i, (a, b) in enumerate(zip(seen, uninterrupted_events)):
            self.assertEqual(as_run(a), as_run(b), f"event {i}")

        # The job that finished before the kill is history the new process answers for.
        self.assertEqual(stub.GetJob(self.pb.JobRef(job_id=done), timeout=30), done_job)
        tree = stub.GetTree(self.pb.GetTreeRequest(job_id=done, include_top_logprobs=True),
                            timeout=30)
        self.assertEqual(tree, done_tree)
        listed = stub.ListJobs(self.pb.ListJobsRequest(states=[self.pb.JOB_STATE_FINISHED]),
                               timeout=30)
        self.assertLessEqual({done, greedy, search}, {j.job_id for j in listed.jobs})
        self.assert_listing_filters(stub, base, done_job)
        status, body = http_json(f"{base}/v1/jobs/{done}")
        self.assertEqual((status, body["text"]), (200, done_job.text), body)
        status, body = http_json(f"{base}/v1/jobs/{done}/tree")
        self.assertEqual((status, len(body["nodes"])), (200, len(done_tree.nodes)), body)
        for command in ("job", "tree"):  # The CLI reads it through the same calls.
            shown = subprocess.run([os.path.join(BIN, "arbor"), command, done, "--json",
                                    f"--coordinator={self.address}"],
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(shown.returncode, 0, shown.stderr)
            self.assertIn(done, shown.stdout)

    def assert_listing_filters(self, stub, base, done_job):
        """ListJobs' model and time filters reach the jobs only the store has."""
        with sqlite3.connect(self.store) as db:
            model, = db.execute("SELECT model FROM arbor_jobs WHERE job_id = ?",
                                (done_job.job_id,)).fetchone()
        created = done_job.created_unix_ms

        def listed(**filters):
            request = self.pb.ListJobsRequest(limit=1000, **filters)
            return {job.job_id for job in stub.ListJobs(request, timeout=30).jobs}

        self.assertIn(done_job.job_id, listed(model=model))
        self.assertEqual(listed(model="no such model"), set())
        self.assertIn(done_job.job_id, listed(created_before_unix_ms=created + 1))
        self.assertNotIn(done_job.job_id, listed(created_after_unix_ms=created + 1))
        self.assertEqual(listed(created_before_unix_ms=created + 1, model=model),
                         {done_job.job_id})
        status, body = http_json(f"{base}/v1/jobs?model={model}&created_before_ms={created + 1}")
        self.assertEqual((status, [j["job_id"] for j in body["jobs"]]), (200, [done_job.job_id]),
                         body)

    def test_stopped_coordinator_leaves_its_jobs_to_the_next(self):
        store = os.path.join(self.processes.dir, "stopped.db")
        # No drain: the job is still running when the coordinator cancels it on the way out.
        stub, _, index = self.start_coordinator(store, "--drain_seconds=0")
        job_id = self.submit(stub, self.request(self.greedy(), seed=4))
        watch = stub.Watch(self.pb.JobRef(job_id=job_id), timeout=300)
        next(watch)
        watch.cancel()
        process = self.processes.processes[index]
        process.terminate()  # SIGTERM: it drains, cancels what runs, and exits 0.
        self.assertEqual(process.wait(timeout=60), 0)
        stub, _, index = self.start_coordinator(store)
        job, _ = self.finished(stub, job_id)
        self.assertEqual((job.state, len(job.token_ids)), (self.pb.JOB_STATE_FINISHED, MAX_TOKENS),
                         job.error)
        self.assertIn("job resumed from the job store", self.processes.log(index))

    def test_job_of_another_model_fails_with_the_reason(self):
        store = os.path.join(self.processes.dir, "other.db")
        stub, _, index = self.start_coordinator(store)
        job_id = self.submit(stub, self.request(self.greedy(), seed=3))
        next(stub.Watch(self.pb.JobRef(job_id=job_id), timeout=300))
        job = stub.GetJob(self.pb.JobRef(job_id=job_id), timeout=30)
        self.assertEqual(job.state, self.pb.JOB_STATE_RUNNING, "killed mid-generation")
        self.kill(index)
        with sqlite3.connect(store) as db:
            db.execute("UPDATE arbor_jobs SET model_fingerprint = 'another model'")
        stub, _, _ = self.start_coordinator(store)
        self.events(stub, job_id)
        job = stub.GetJob(self.pb.JobRef(job_id=job_id), timeout=30)
        self.assertEqual(job.state, self.pb.JOB_STATE_FAILED)
        self.assertIn("another model", job.error)


if __name__ == "__main__":
    unittest.main()
