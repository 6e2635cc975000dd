"""Exceptions of arbor_client: one class per gRPC status code the Arbor API answers with.

Arbor's servers put the offending field first in the message (`max_tokens: 0 is outside
[1, 2040]`, docs/API.md), so the message is kept verbatim and the field is offered parsed.
"""

import contextlib
import re
from typing import Dict, Iterator, Optional, Type

import grpc

# "policy.branch.width: 1 is outside [2, 64]" → "policy.branch.width".
_FIELD_PATH = re.compile(r"^([A-Za-z_][\w.\[\]]*): ")


class ArborError(Exception):
    """A call to Arbor failed. `code` is the gRPC status code, `message` the server's text."""

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def field(self) -> Optional[str]:
        """The request field the server named at the start of its message, if any."""
        match = _FIELD_PATH.match(self.message)
        return match.group(1) if match else None

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}" if self.code else self.message


class InvalidArgument(ArborError):
    """A request field is missing, malformed or out of range; `field` names it."""


class NotFound(ArborError):
    """Unknown job id, or a tree node that is not in the job's tree."""


class AlreadyExists(ArborError):
    """The resource exists already (e.g. a worker id live at another address)."""


class ResourceExhausted(ArborError):
    """Admission refused the job (running and queued jobs at their limits); retry later."""


class FailedPrecondition(ArborError):
    """The server cannot do this as configured (e.g. a text prompt without a tokenizer)."""


class Unavailable(ArborError):
    """No worker is ready, the server is shutting down, or it cannot be reached; retry."""


class DeadlineExceeded(ArborError):
    """The call's deadline (the `timeout` given to the client or the call) passed."""


class Cancelled(ArborError):
    """The call was cancelled."""


class JobFailed(ArborError):
    """The job started but ended with FINISH_REASON_ERROR; the stream itself succeeded."""

    def __init__(self, message: str, job_id: str) -> None:
        super().__init__(message)
        self.job_id = job_id


_BY_CODE: Dict[grpc.StatusCode, Type[ArborError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
}


def from_rpc_error(error: grpc.RpcError) -> ArborError:
    """The exception for a failed gRPC call: its class from the code, the server's message."""
    code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
    message = (error.details() if isinstance(error, grpc.Call) else None) or str(error)
    return _BY_CODE.get(code, ArborError)(message, code)


@contextlib.contextmanager
def translated_errors() -> Iterator[None]:
    """Re-raises grpc.RpcError inside the block as the matching ArborError."""
    try:
        yield
    except grpc.RpcError as error:
        raise from_rpc_error(error) from error
