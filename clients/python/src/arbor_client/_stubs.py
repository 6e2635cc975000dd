"""The generated protobuf and gRPC modules, with a clear error when they were never built.

They exist only in a built package (setup.py generates them from proto/); importing the source
folder directly, without installing, finds none.
"""

try:
    from arbor_client._proto.arbor.v1 import entropix_pb2
    from arbor_client._proto.arbor.v1 import generation_pb2
    from arbor_client._proto.arbor.v1 import generation_pb2_grpc
except ModuleNotFoundError as error:
    if not (error.name or "").startswith("arbor_client._proto"):
        raise  # grpc or protobuf itself is missing: that message is the useful one.
    raise ImportError(
        "arbor_client's gRPC stubs are missing: they are generated when the package is built. "
        "Install it with `pip install --no-build-isolation clients/python` from Arbor's "
        "repository instead of importing the source folder.") from error

__all__ = ["entropix_pb2", "generation_pb2", "generation_pb2_grpc"]
