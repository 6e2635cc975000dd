"""arbor_client: a Python client of Arbor's gRPC Generation API.

    import arbor_client

    with arbor_client.Client("localhost:50051") as client:
        completion = client.generate("The capital of France is", max_tokens=16, seed=1)
        tree = client.get_tree(completion.job_id)
        for point in tree.branch_points():
            print(point.node.text, [c.text for c in point.candidates], point.winner)

Results, events and trees are plain dataclasses (results.py, events.py, tree.py); failures are
ArborError subclasses named after their gRPC status (errors.py).
"""

from arbor_client._request import generate_request, score_request
from arbor_client.client import Client, EventStream
from arbor_client.errors import (AlreadyExists, ArborError, Cancelled, DeadlineExceeded,
                                 FailedPrecondition, InvalidArgument, JobFailed, NotFound,
                                 ResourceExhausted, Unavailable)
from arbor_client.events import (Backspace, BranchCandidate, BranchOpened, BranchResolved,
                                 CommittedText, Event, Finished, Insert, Rehomed, Token)
from arbor_client.results import (Completion, Job, ScoredContinuation, ScoredToken, ScoreResult,
                                  Timings, TokenLogprob, Usage)
from arbor_client.tree import BranchPoint, Node, ReplayResult, Tree

__version__ = "0.1.0"

__all__ = [
    "AlreadyExists", "ArborError", "Backspace", "BranchCandidate", "BranchOpened",
    "BranchPoint", "BranchResolved", "Cancelled", "Client", "CommittedText", "Completion",
    "DeadlineExceeded", "Event", "EventStream", "FailedPrecondition", "Finished", "Insert",
    "InvalidArgument", "Job", "JobFailed", "Node", "NotFound", "Rehomed", "ReplayResult",
    "ResourceExhausted",
    "ScoreResult", "ScoredContinuation", "ScoredToken", "Timings", "Token", "TokenLogprob",
    "Tree", "Unavailable", "Usage", "generate_request", "score_request",
]
