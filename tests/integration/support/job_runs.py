"""What the tests of a job outliving its coordinator share: the requests they run (long enough
to be cut off mid-generation), and a client that submits, follows and reads a job back while its
coordinator dies and another (or the same, restarted) runs it again.

`JobRuns` is a mixin for a unittest.TestCase whose class has `pb` and `entropix` (the generated
message modules, grpc_stubs.generate_stubs).
"""

import time

import grpc

MAX_TOKENS = 1500  # Long enough that a kill lands mid-generation (tiny's context: 2048).


def as_run(event):
    """An event without what differs between runs of one request: when it came, its job id, and
    the finished event's timings and the prompt tokens the worker's cache served."""
    copy = type(event)()
    copy.CopyFrom(event)
    copy.time_us = 0
    copy.job_id = ""
    copy.finished.ClearField("timings")
    copy.finished.usage.cached_prompt_tokens = 0
    if not event.HasField("finished"):
        copy.ClearField("finished")
    return copy


def sse_messages(response):
    """The server-sent events of an HTTP response (GET /v1/jobs/ID/events) as {field: value}
    dicts, as they arrive."""
    fields = {}
    for line in response:
        line = line.decode().rstrip("\r\n")
        if line:
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value
        elif fields:
            yield fields
            fields = {}


class JobRuns:
    def request(self, policy, seed, max_tokens=MAX_TOKENS):
        return self.pb.GenerateRequest(
            text="Once upon a time", max_tokens=max_tokens, seed=seed, policy=policy,
            stop=self.entropix.StopConditions(ignore_eos=True))

    def greedy(self):
        thresholds = self.entropix.Thresholds(lelv_entropy=64, lelv_varentropy=4096)
        return self.entropix.PolicyConfig(mode=self.entropix.POLICY_MODE_CANONICAL,
                                          thresholds=thresholds)

    def search(self):
        return self.entropix.PolicyConfig(mode=self.entropix.POLICY_MODE_SEARCH,
                                          branch=self.entropix.BranchOptions(width=3, max_len=6))

    def submit(self, stub, request):
        """Submits, retrying while the worker is not ready yet; returns the job id."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return stub.Submit(request, timeout=30).job_id
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def events(self, stub, job_id, seen=0):
        """Every event of `job_id` after the first `seen`, waiting while it is UNAVAILABLE
        (until it runs again, here or on the coordinator that took it over, or has ended)."""
        deadline = time.monotonic() + 300
        while True:
            try:
                return list(stub.Watch(self.pb.JobRef(job_id=job_id), timeout=300,
                                       metadata=[("last-event-id", str(seen))]))
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def finished(self, stub, job_id):
        """The job once it ended, and its whole tree."""
        self.events(stub, job_id)
        job = stub.GetJob(self.pb.JobRef(job_id=job_id), timeout=30)
        tree = stub.GetTree(self.pb.GetTreeRequest(job_id=job_id, include_top_logprobs=True),
                            timeout=30)
        return job, tree

    def assert_same_run(self, again, uninterrupted):
        """A job run again after its coordinator died equals the uninterrupted run: state,
        text, tokens and tree (the worker's sequence ids aside)."""
        (job, tree), (job0, tree0) = again, uninterrupted
        self.assertEqual(job.state, self.pb.JOB_STATE_FINISHED, job.error)
        self.assertEqual(job.text, job0.text)
        self.assertEqual(list(job.token_ids), list(job0.token_ids))
        self.assertEqual(len(job.token_ids), MAX_TOKENS)
        self.assertEqual(len(tree.nodes), len(tree0.nodes))
        for a, b in zip(tree.nodes, tree0.nodes):
            a.sequence_id = b.sequence_id = 0  # Worker sequences are per run.
            self.assertEqual(a, b)
