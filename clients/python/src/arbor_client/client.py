"""Client of Arbor's Generation service (the coordinator's public gRPC API).

    with arbor_client.Client("localhost:50051") as client:
        print(client.generate("The capital of France is", max_tokens=16).text)
        for piece in client.stream("Once upon a time", max_tokens=64).text():
            print(piece, end="", flush=True)

Every method raises an ArborError subclass (errors.py) when the call fails; a client-side
mistake in the arguments (two prompts, an unknown policy field) raises ValueError or TypeError
before anything is sent.
"""

from typing import Any, Iterable, Iterator, List, Optional, Sequence

import grpc

from arbor_client import errors
from arbor_client._convert import enum_value
from arbor_client._request import (ContinuationLike, MessageLike, PolicyLike, generate_request,
                                   score_request, set_policy)
from arbor_client._stubs import generation_pb2, generation_pb2_grpc
from arbor_client.events import CommittedText, Event, event_from_proto
from arbor_client.results import (Completion, Job, ScoreResult, job_from_proto,
                                  score_from_proto)
from arbor_client.tree import ReplayResult, Tree, replay_from_proto, tree_from_proto


class EventStream:
    """The events of one job, from Generate or Watch, as an iterator of plain Event objects.

    It also follows the committed text (`committed`, a CommittedText), so `text()` can yield
    only what no backspace can retract and `result()` can return the Completion once the job
    ends. Leaving a `with` block or calling `cancel()` ends the call: for a stream from
    Client.stream that cancels the job, for one from Client.watch it only stops watching.
    """

    def __init__(self, call: Any) -> None:
        self._call = call
        self._cancelled = False
        self._released = ""
        self.job_id: Optional[str] = None  # Known from the first event on.
        self.committed = CommittedText()

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Event:
        while True:
            try:
                message = next(self._call)
            except grpc.RpcError as error:
                if self._cancelled and error.code() == grpc.StatusCode.CANCELLED:
                    raise StopIteration from None
                raise errors.from_rpc_error(error) from error
            event = event_from_proto(message)
            if event is None:
                continue  # A kind of event newer than this client.
            self.job_id = self.job_id or event.job_id
            self._released = self.committed.push(event)
            return event

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.cancel()

    def cancel(self) -> None:
        """Ends the call; iteration stops. Harmless once the stream has ended."""
        self._cancelled = True
        self._call.cancel()

    def text(self) -> Iterator[str]:
        """Consumes the stream, yielding committed text as soon as it can no longer change.

        The pieces join to the job's final text: the latest token's text is held back until
        the next token, insert or the finish, since only it may still be backspaced.
        """
        for _ in self:
            if self._released:
                yield self._released

    def result(self) -> Completion:
        """Consumes the stream and returns what the job committed.

        Raises JobFailed when the job ended with an error, and ArborError when the stream ended
        before the job (a cancelled stream).
        """
        for _ in self:
            pass
        finished = self.committed.finished
        if finished is None:
            raise errors.ArborError(f"job {self.job_id}: the stream ended before the job",
                                    grpc.StatusCode.CANCELLED if self._cancelled else None)
        if finished.reason == "error":
            raise errors.JobFailed(finished.error, self.job_id or "")
        return Completion(job_id=self.job_id or "", text=self.committed.text,
                          token_ids=self.committed.token_ids, finish_reason=finished.reason,
                          usage=finished.usage, timings=finished.timings,
                          strategies=finished.strategies)


class Client:
    """A connection to an Arbor coordinator; a context manager that closes it.

    Args:
      address: the coordinator's gRPC address, host:port.
      timeout: deadline in seconds of each unary call (submit, get_job, score, ...); None for
        none. Streams take their own `timeout` argument.
      channel: an existing channel to use instead (e.g. with TLS credentials); the client then
        does not close it.
    """

    def __init__(self, address: str = "localhost:50051", *, timeout: Optional[float] = None,
                 channel: Optional[grpc.Channel] = None) -> None:
        self._owns_channel = channel is None
        self._channel = channel or grpc.insecure_channel(address)
        self._stub = generation_pb2_grpc.GenerationStub(self._channel)
        self._timeout = timeout

    def close(self) -> None:
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _unary(self, method: str, request: Any) -> Any:
        with errors.translated_errors():
            return getattr(self._stub, method)(request, timeout=self._timeout)

    # --- generation -----------------------------------------------------------------------------

    def generate(self, prompt: Optional[str] = None, *, timeout: Optional[float] = None,
                 **options: Any) -> Completion:
        """Runs a job to its end and returns what it committed.

        Takes one of `prompt` (text), `messages` (chat) or `token_ids`, and the options of
        `arbor_client.generate_request` (max_tokens, seed, policy, stop, top_logprobs, ...).
        `timeout` bounds the whole job in seconds.
        """
        return self.stream(prompt, timeout=timeout, **options).result()

    def stream(self, prompt: Optional[str] = None, *, timeout: Optional[float] = None,
               **options: Any) -> EventStream:
        """Starts a job and streams its events (arguments as in generate).

        Cancelling the stream cancels the job.
        """
        call = self._stub.Generate(generate_request(prompt, **options), timeout=timeout)
        return EventStream(call)

    def submit(self, prompt: Optional[str] = None, **options: Any) -> str:
        """Starts a detached job (arguments as in generate) and returns its id."""
        return self._unary("Submit", generate_request(prompt, **options)).job_id

    def watch(self, job_id: str, *, timeout: Optional[float] = None) -> EventStream:
        """Streams a job's events: everything so far, then live ones until it ends.

        Cancelling a watch does not cancel the job.
        """
        call = self._stub.Watch(generation_pb2.JobRef(job_id=job_id), timeout=timeout)
        return EventStream(call)

    def cancel(self, job_id: str) -> Job:
        """Cancels a queued or running job; returns its record (a finished job unchanged)."""
        return job_from_proto(self._unary("Cancel", generation_pb2.JobRef(job_id=job_id)))

    # --- inspection -----------------------------------------------------------------------------

    def get_job(self, job_id: str) -> Job:
        """The job's state, committed text and tokens, usage, timings and strategy counts."""
        return job_from_proto(self._unary("GetJob", generation_pb2.JobRef(job_id=job_id)))

    def list_jobs(self, limit: int = 0, states: Iterable[str] = ()) -> List[Job]:
        """Jobs newest first, without text and token ids.

        Args:
          limit: at most this many, [0, 1000]; 0 = 100.
          states: keep only these states ("queued", "running", "finished", "cancelled",
            "failed"); empty = all.
        """
        request = generation_pb2.ListJobsRequest(
            limit=limit, states=[enum_value(generation_pb2.JobState, s) for s in states])
        return [job_from_proto(job) for job in self._unary("ListJobs", request).jobs]

    def get_tree(self, job_id: str, *, root: int = 0, max_depth: int = 0,
                 include_top_logprobs: bool = False) -> Tree:
        """The job's search tree (running or finished), whole or the subtree under `root`.

        Args:
          root: the subtree's root node id; 0 = the prompt node, the whole tree.
          max_depth: levels below root; 0 = all.
          include_top_logprobs: fill Node.top_logprobs (when the job kept alternatives).
        """
        request = generation_pb2.GetTreeRequest(job_id=job_id, root=root, max_depth=max_depth,
                                                include_top_logprobs=include_top_logprobs)
        return tree_from_proto(self._unary("GetTree", request))

    def replay(self, job_id: str, *, policy: PolicyLike = None,
               timeout: Optional[float] = None) -> ReplayResult:
        """Runs a finished job's request again (its prompt, seed and policy) as a new job and
        compares the two search trees node for node; returns once the replay has finished.

        `policy` (see PolicyLike) sets fields in place of the job's own, to find where a changed
        policy makes the search depart (ReplayResult.policy_changed). `timeout` bounds the replay
        in seconds: when it passes the replay job is cancelled and DeadlineExceeded raised.
        """
        request = generation_pb2.ReplayRequest(job_id=job_id)
        set_policy(request, policy)
        with errors.translated_errors():
            return replay_from_proto(self._stub.Replay(request, timeout=timeout))

    def score(self, prompt: Optional[str] = None, *,
              messages: Optional[Iterable[MessageLike]] = None,
              token_ids: Optional[Iterable[int]] = None,
              continuations: Sequence[ContinuationLike],
              top_logprobs: int = 0, policy: PolicyLike = None,
              client_tag: str = "") -> ScoreResult:
        """Teacher-forced scoring of continuations after a prompt; nothing is sampled.

        Each continuation is text (tokenized on its own, without BOS) or token ids; the result
        holds every continuation token's logprob, rank and metrics, in request order.
        """
        request = score_request(prompt, messages=messages, token_ids=token_ids,
                                continuations=continuations, top_logprobs=top_logprobs,
                                policy=policy, client_tag=client_tag)
        return score_from_proto(self._unary("Score", request))


__all__ = ["Client", "EventStream"]
