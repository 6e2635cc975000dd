"""A job's search tree as linked Python objects, with a walk over its branch points.

GetTree answers with nodes in pre-order, each naming its parent and children by id. Here every
node holds its parent and children as objects, so a tree can be walked without a lookup table.
A branch point is a node with more than one live child (backspaced tokens are not candidates):
the candidates the search rolled out there, and the one that won, which is the child on the
committed path (none while the branch is still being explored, or for a branch nested in a
losing rollout).
"""

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

from arbor_client._convert import enum_name, from_message, scalar_fields
from arbor_client._stubs import entropix_pb2, generation_pb2
from arbor_client.results import TokenLogprob, top_logprobs_from_proto

# Statuses of the nodes whose tokens the job kept.
_ON_PATH = ("committed", "inserted")


@dataclass(eq=False, repr=False)
class Node:
    """One token of the tree (or, for the root of a whole tree, the prompt)."""

    id: int
    token_id: Optional[int]  # None for the prompt node.
    text: str  # The decoded piece.
    position: int
    logprob: float  # Natural log, temperature 1.
    metrics: Dict[str, float]  # Of the step that produced the token.
    strategy: Optional[str]  # The decision at that step: "argmax", "branch", "forced", ...
    # "prompt", "committed", "inserted", "explored" (a rollout still running), "pruned" (a
    # losing branch) or "backspaced".
    status: Optional[str]
    branch_score: float  # Score of the rollout this node starts, for branch candidates.
    branch_depth: int
    sequence_id: int  # The worker sequence that computed it.
    top_logprobs: List[TokenLogprob]  # With include_top_logprobs.
    parent_id: Optional[int]  # None for the root of the whole tree.
    # Ids of every child, also those left out of a depth-limited subtree.
    child_ids: List[int] = field(default_factory=list)
    # The children present in this tree, in the server's order.
    children: List["Node"] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Not a dataclass field, so dataclasses.asdict follows children without a cycle.
        self._parent: Optional[Node] = None

    @property
    def parent(self) -> Optional["Node"]:
        """The parent node when it is in this tree."""
        return self._parent

    @property
    def on_path(self) -> bool:
        """Whether the job kept this token (committed or inserted)."""
        return self.status in _ON_PATH

    def __repr__(self) -> str:
        # Short: a node's metrics, alternatives and linked neighbours would drown the rest.
        return (f"Node(id={self.id}, token_id={self.token_id}, text={self.text!r}, "
                f"strategy={self.strategy!r}, status={self.status!r}, "
                f"child_ids={self.child_ids})")


@dataclass(frozen=True)
class BranchPoint:
    """A node where the search explored several continuations."""

    node: Node
    candidates: List[Node]  # Its children except backspaced ones, in the server's order.
    winner: Optional[Node]  # The candidate on the committed path, if any.

    @property
    def losers(self) -> List[Node]:
        return [c for c in self.candidates if c is not self.winner]


@dataclass(eq=False)
class Tree:
    """A job's tree (or the subtree GetTree was asked for)."""

    job_id: str
    root: Node
    nodes: Dict[int, Node]  # By id.
    prompt_token_ids: List[int]

    def __len__(self) -> int:
        return len(self.nodes)

    def walk(self, start: Optional[Node] = None) -> Iterator[Node]:
        """Nodes in pre-order from `start` (default: the root), children in server order."""
        stack = [start or self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def branch_points(self) -> List[BranchPoint]:
        """Every node with more than one live child, in pre-order, nested ones included."""
        points = []
        for node in self.walk():
            candidates = [c for c in node.children if c.status != "backspaced"]
            if len(candidates) > 1:
                winner = next((c for c in candidates if c.on_path), None)
                points.append(BranchPoint(node, candidates, winner))
        return points

    def committed_path(self) -> List[Node]:
        """The nodes the job kept, from the root down; empty when the root is off the path."""
        if not (self.root.on_path or self.root.status == "prompt"):
            return []
        path = [self.root]
        while True:
            following = [c for c in path[-1].children if c.on_path]
            if not following:
                return path
            path.append(following[-1])


def _node(node: generation_pb2.TreeNode) -> Node:
    return from_message(
        Node, node,
        token_id=None if node.token_id < 0 else node.token_id,
        metrics=scalar_fields(node.metrics),
        strategy=enum_name(entropix_pb2.Strategy, node.strategy),
        status=enum_name(generation_pb2.NodeStatus, node.status),
        top_logprobs=top_logprobs_from_proto(node.top_logprobs),
        parent_id=None if node.parent < 0 else node.parent,
        child_ids=list(node.children),
        children=[])


@dataclass(frozen=True)
class ReplayResult:
    """The answer to Replay: whether running a job's request again grew the same tree."""

    job_id: str  # The job replayed.
    replay_job_id: str  # The new job that ran its request again.
    identical: bool  # The same tree, node for node (worker sequence ids aside).
    nodes: int  # Nodes of the replayed job's tree.
    # Unless identical: the pre-order index of the first node that differs (-1: the prompt),
    # that node as the replayed job has it (past its tree's end: as the new job has it), and the
    # differing fields, one per line.
    first_difference_index: int
    first_difference: Optional[Node]
    difference: str
    policy_changed: bool  # The replay ran the job's policy with the replay's policy applied.


def replay_from_proto(result: generation_pb2.ReplayResult) -> ReplayResult:
    """The ReplayResult record of an arbor.v1.ReplayResult message."""
    return from_message(
        ReplayResult, result,
        first_difference=(_node(result.first_difference)
                          if result.HasField("first_difference") else None))


def tree_from_proto(tree: generation_pb2.Tree) -> Tree:
    """The linked Tree of an arbor.v1.Tree message."""
    nodes = {node.id: _node(node) for node in tree.nodes}
    for node in nodes.values():
        node.children = [nodes[c] for c in node.child_ids if c in nodes]
        for child in node.children:
            child._parent = node  # pylint: disable=protected-access
    return Tree(job_id=tree.job_id, root=nodes[tree.root], nodes=nodes,
                prompt_token_ids=list(tree.prompt_token_ids))


__all__ = ["BranchPoint", "Node", "ReplayResult", "Tree", "replay_from_proto", "tree_from_proto"]
