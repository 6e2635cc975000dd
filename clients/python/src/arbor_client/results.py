"""Plain Python records of what the Generation service returns: jobs, completions, scores.

Protobuf messages stay inside the client: callers get dataclasses with Python types, enums as
short lowercase names ("max_tokens", "running", "branch") and metrics as dicts, so results can
be printed, compared, pickled or turned into JSON (`dataclasses.asdict`) without the stubs.
"""

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

from arbor_client._convert import enum_name, from_message, scalar_fields
from arbor_client._stubs import entropix_pb2, generation_pb2


@dataclass(frozen=True)
class Usage:
    """Token counts of a job."""

    prompt_tokens: int
    generated_tokens: int  # Committed generated tokens, inserts included.
    explored_tokens: int  # Computed on pruned branches and backspaced.
    cached_prompt_tokens: int  # Prompt tokens served from a worker's prefix cache.


@dataclass(frozen=True)
class Timings:
    """Where a job's time went, in microseconds since its submission."""

    queued_us: int
    first_token_us: int
    total_us: int
    worker_us: int  # Sum of the time inside worker runs.


@dataclass(frozen=True)
class TokenLogprob:
    """One candidate token and its natural-log probability at temperature 1."""

    token_id: int
    logprob: float
    text: str


@dataclass(frozen=True)
class Job:
    """A job's record (GetJob, Cancel, ListJobs; the last without text and token ids)."""

    job_id: str
    state: Optional[str]  # "queued", "running", "finished", "cancelled" or "failed".
    finish_reason: Optional[str]  # None while it runs; else e.g. "max_tokens", "stop_string".
    error: str
    seed: int  # The sampler seed, also when the server picked it.
    worker_id: str
    rehomed: int
    text: str
    token_ids: List[int]
    usage: Usage
    timings: Timings
    strategies: Dict[str, int]  # Steps per strategy: {"argmax": 12, "branch": 1, ...}.
    client_tag: str
    created_unix_ms: int

    @property
    def done(self) -> bool:
        """Whether the job has ended (finished, cancelled or failed)."""
        return self.state in ("finished", "cancelled", "failed")


@dataclass(frozen=True)
class Completion:
    """What a finished generation committed, as its event stream reported it."""

    job_id: str
    text: str
    token_ids: List[int]
    finish_reason: Optional[str]
    usage: Usage
    timings: Timings
    strategies: Dict[str, int]


@dataclass(frozen=True)
class ScoredToken:
    """A continuation token under teacher forcing."""

    token_id: int
    text: str
    position: int  # In the whole sequence, prompt included.
    logprob: float  # Natural log, temperature 1.
    rank: int  # 1 = the greedy choice.
    metrics: Dict[str, float]  # Entropix metrics of the distribution it was scored under.
    strategy: Optional[str]  # What the request's policy would have decided there.
    top_logprobs: List[TokenLogprob]


@dataclass(frozen=True)
class ScoredContinuation:
    """One continuation's tokens and totals."""

    tokens: List[ScoredToken]
    total_logprob: float
    mean_logprob: float
    greedy: bool  # Greedy decoding would produce exactly this continuation.


@dataclass(frozen=True)
class ScoreResult:
    """The answer to Score: continuations in request order."""

    prompt_token_ids: List[int]
    continuations: List[ScoredContinuation]
    worker_id: str
    cached_tokens: int
    worker_us: int


def top_logprobs_from_proto(alternatives: Iterable[Any]) -> List[TokenLogprob]:
    """TokenLogprob records of a repeated arbor.v1.TokenLogprob field."""
    return [from_message(TokenLogprob, alternative) for alternative in alternatives]


def usage_from_proto(usage: generation_pb2.Usage) -> Usage:
    """The Usage record of an arbor.v1.Usage message."""
    return from_message(Usage, usage)


def timings_from_proto(timings: generation_pb2.Timings) -> Timings:
    """The Timings record of an arbor.v1.Timings message."""
    return from_message(Timings, timings)


def job_from_proto(job: generation_pb2.Job) -> Job:
    """The Job record of an arbor.v1.Job message."""
    return from_message(
        Job, job,
        state=enum_name(generation_pb2.JobState, job.state),
        finish_reason=enum_name(generation_pb2.FinishReason, job.finish_reason),
        usage=usage_from_proto(job.usage),
        timings=timings_from_proto(job.timings),
        strategies=scalar_fields(job.strategies))


def score_from_proto(response: generation_pb2.ScoreResponse) -> ScoreResult:
    """The ScoreResult record of an arbor.v1.ScoreResponse message."""
    continuations = [
        from_message(ScoredContinuation, continuation, tokens=[
            from_message(ScoredToken, token,
                         metrics=scalar_fields(token.metrics),
                         strategy=enum_name(entropix_pb2.Strategy, token.strategy),
                         top_logprobs=top_logprobs_from_proto(token.top_logprobs))
            for token in continuation.tokens
        ]) for continuation in response.continuations
    ]
    return from_message(ScoreResult, response, continuations=continuations)


__all__ = [
    "Completion", "Job", "ScoreResult", "ScoredContinuation", "ScoredToken", "Timings",
    "TokenLogprob", "Usage", "job_from_proto", "score_from_proto", "timings_from_proto",
    "top_logprobs_from_proto", "usage_from_proto",
]
