"""A job's stream of events as plain objects, and the committed text they add up to.

Generate and Watch stream what the search does: committed tokens, branch points opening and
resolving, backspaces, inserts, re-homes and the final summary. Each event is a frozen
dataclass with a `kind` ("token", "branch_opened", ...); dispatch on `kind` or `isinstance`.

Text. A `Token` event carries the committed text its token adds (possibly empty while the
server holds back bytes a stop string could still start with); a `Backspace` retracts exactly
the text of the token event it removes, and only the latest token is ever backspaced (never an
inserted one). `CommittedText` applies that contract: `text` is the job's committed text so
far, and what `push` returns is text that can no longer change, for printing as it comes.
"""

from dataclasses import dataclass
from typing import Callable, ClassVar, Dict, List, Optional

from arbor_client._convert import enum_name, from_message, scalar_fields
from arbor_client._stubs import entropix_pb2, generation_pb2
from arbor_client.errors import ArborError
from arbor_client.results import (Timings, TokenLogprob, Usage, timings_from_proto,
                                  top_logprobs_from_proto, usage_from_proto)


@dataclass(frozen=True)
class Event:
    """Fields every event has."""

    kind: ClassVar[str] = ""
    job_id: str
    time_us: int  # Since the job's submission.


@dataclass(frozen=True)
class Token(Event):
    """A committed token."""

    kind: ClassVar[str] = "token"
    node_id: int
    token_id: int
    text: str  # Committed text this token adds; may be empty while the server buffers.
    strategy: Optional[str]  # The policy's decision at the step: "argmax", "branch", ...
    metrics: Dict[str, float]  # Entropix metrics of that step (entropies in bits).
    logprob: float
    position: int
    top_logprobs: List[TokenLogprob]  # When the request asked for top_logprobs > 0.
    token_text: str  # This token alone, decoded (only with top_logprobs > 0).


@dataclass(frozen=True)
class BranchCandidate:
    """One child of a branch point."""

    node_id: int
    token_id: int
    text: str
    logprob: float


@dataclass(frozen=True)
class BranchOpened(Event):
    """The policy chose BRANCH: candidates are rolled out below `parent_node_id`."""

    kind: ClassVar[str] = "branch_opened"
    parent_node_id: int
    candidates: List[BranchCandidate]
    metrics: Dict[str, float]


@dataclass(frozen=True)
class BranchResolved(Event):
    """A branch point was decided; the winner's rollout tokens follow as Token events."""

    kind: ClassVar[str] = "branch_resolved"
    winner_node_id: int
    candidate_node_ids: List[int]
    scores: List[float]  # Same order as candidate_node_ids.
    pruned_node_ids: List[int]
    committed_tokens: int


@dataclass(frozen=True)
class Backspace(Event):
    """The latest committed token was removed (and is re-drawn by the next Token event)."""

    kind: ClassVar[str] = "backspace"
    removed_node_id: int
    removed_token_id: int
    position: int


@dataclass(frozen=True)
class Insert(Event):
    """Thinking tokens appended by INSERT; committed at once."""

    kind: ClassVar[str] = "insert"
    node_ids: List[int]
    token_ids: List[int]
    text: str
    logprobs: List[float]


@dataclass(frozen=True)
class Rehomed(Event):
    """The job moved to another worker (failure or drain) and continues there."""

    kind: ClassVar[str] = "rehomed"
    from_worker: str
    to_worker: str
    reason: str


@dataclass(frozen=True)
class Finished(Event):
    """The last event of every job."""

    kind: ClassVar[str] = "finished"
    reason: Optional[str]  # "max_tokens", "stop_token", "stop_string", "cancelled", "error", ...
    usage: Usage
    timings: Timings
    strategies: Dict[str, int]
    error: str  # When reason is "error".


def _token(event: generation_pb2.TokenEvent, **common) -> Token:
    return from_message(Token, event, **common,
                        strategy=enum_name(entropix_pb2.Strategy, event.strategy),
                        metrics=scalar_fields(event.metrics),
                        top_logprobs=top_logprobs_from_proto(event.top_logprobs))


def _branch_opened(event: generation_pb2.BranchOpened, **common) -> BranchOpened:
    return from_message(BranchOpened, event, **common,
                        candidates=[from_message(BranchCandidate, c) for c in event.candidates],
                        metrics=scalar_fields(event.metrics))


def _finished(event: generation_pb2.FinishedEvent, **common) -> Finished:
    return from_message(Finished, event, **common,
                        reason=enum_name(generation_pb2.FinishReason, event.reason),
                        usage=usage_from_proto(event.usage),
                        timings=timings_from_proto(event.timings),
                        strategies=scalar_fields(event.strategies))


def _copied(cls) -> Callable[..., Event]:
    return lambda event, **common: from_message(cls, event, **common)


# The GenerateEvent oneof case → its converter.
_CONVERTERS: Dict[str, Callable[..., Event]] = {
    "token": _token,
    "branch_opened": _branch_opened,
    "branch_resolved": _copied(BranchResolved),
    "backspace": _copied(Backspace),
    "insert": _copied(Insert),
    "rehomed": _copied(Rehomed),
    "finished": _finished,
}


def event_from_proto(event: generation_pb2.GenerateEvent) -> Optional[Event]:
    """The plain event of an arbor.v1.GenerateEvent; None for a kind this client does not know."""
    case = event.WhichOneof("event")
    converter = _CONVERTERS.get(case) if case else None
    if converter is None:
        return None
    return converter(getattr(event, case), job_id=event.job_id, time_us=event.time_us)


@dataclass
class _Piece:
    node_id: Optional[int]  # None for an insert, which cannot be backspaced.
    text: str
    token_ids: List[int]


class CommittedText:
    """Follows a job's events and keeps its committed text and tokens.

    `text` and `token_ids` are the job's committed output so far, the latest token included
    although a backspace may still retract it. `push` returns the text that became final with
    the event: everything but the latest token until the next token, insert or the finish.
    Joining what `push` returns gives the job's text without ever showing a retracted piece.
    """

    def __init__(self) -> None:
        self._pieces: List[_Piece] = []
        self._final = 0  # Pieces returned by push so far.
        self.finished: Optional[Finished] = None

    @property
    def text(self) -> str:
        return "".join(piece.text for piece in self._pieces)

    @property
    def token_ids(self) -> List[int]:
        return [token for piece in self._pieces for token in piece.token_ids]

    def push(self, event: Event) -> str:
        """Applies one event; returns the text it made final ("" when none)."""
        if isinstance(event, Token):
            self._pieces.append(_Piece(event.node_id, event.text, [event.token_id]))
        elif isinstance(event, Insert):
            self._pieces.append(_Piece(None, event.text, list(event.token_ids)))
        elif isinstance(event, Backspace):
            self._retract(event)
        elif isinstance(event, Finished):
            self.finished = event
        tentative = (self.finished is None and self._pieces and
                     self._pieces[-1].node_id is not None)
        final = len(self._pieces) - 1 if tentative else len(self._pieces)
        released = "".join(piece.text for piece in self._pieces[self._final:final])
        self._final = max(self._final, final)
        return released

    def _retract(self, event: Backspace) -> None:
        latest = self._pieces[-1] if len(self._pieces) > self._final else None
        if latest is None or latest.node_id != event.removed_node_id:
            raise ArborError(f"job {event.job_id}: backspace of node {event.removed_node_id}, "
                             "which is not the latest committed token")
        self._pieces.pop()


__all__ = [
    "Backspace", "BranchCandidate", "BranchOpened", "BranchResolved", "CommittedText", "Event",
    "Finished", "Insert", "Rehomed", "Token", "event_from_proto",
]
