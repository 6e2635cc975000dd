"""Python stubs of Arbor's public gRPC API, compiled from proto/arbor/v1 at test time.

Import it after putting this folder on sys.path; ARBOR_SOURCE_DIR names the sources. A test
script whose Python lacks grpcio, protoc or grpc_python_plugin skips (exit 77), saying which.
"""

import glob
import importlib
import os
import shutil
import subprocess
import sys

SRC = os.environ.get("ARBOR_SOURCE_DIR", ".")


def generate_stubs(out_dir):
    """Compiles proto/arbor/v1 into importable Python modules under out_dir; returns the
    generation messages, the generation stubs and the entropix messages."""
    plugin = shutil.which("grpc_python_plugin")
    if shutil.which("protoc") is None or plugin is None:
        print("protoc or grpc_python_plugin is missing; skipping")
        sys.exit(77)
    protos = sorted(glob.glob(os.path.join(SRC, "proto", "arbor", "v1", "*.proto")))
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run(["protoc", f"--proto_path={os.path.join(SRC, 'proto')}",
                    f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
                    f"--plugin=protoc-gen-grpc_python={plugin}", *protos], check=True)
    sys.path.insert(0, out_dir)
    return (importlib.import_module("arbor.v1.generation_pb2"),
            importlib.import_module("arbor.v1.generation_pb2_grpc"),
            importlib.import_module("arbor.v1.entropix_pb2"))
