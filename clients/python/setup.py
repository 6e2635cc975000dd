"""Build hook of arbor-client: generates the gRPC stubs from Arbor's .proto files.

The stubs are not committed: generated once, they would drift from proto/ and from the protobuf
runtime they were made for. `build_py` runs protoc with the gRPC Python plugin into the build
tree, so a wheel carries stubs that match the `.proto` files it was built from and the codegen
installed next to the runtime. Metadata lives in pyproject.toml; this file only adds commands.

Where the .proto files come from:
  * a source checkout: `proto/` at the repository root, two levels above this file;
  * an sdist: `proto/` beside this file, copied there when the sdist was made.

Which protoc: `grpc_tools.protoc` (grpcio-tools) when importable, else `protoc` with
`grpc_python_plugin` from PATH (or the PROTOC and GRPC_PYTHON_PLUGIN environment variables).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import List

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
# The stubs' own package, so that protoc's top-level `arbor` cannot clash with another
# distribution's `arbor` module.
STUB_PACKAGE = "arbor_client._proto"
# A file every proto root must hold; it marks the right folder.
MARKER = Path("arbor", "v1", "generation.proto")


def find_proto_root() -> Path:
    """The folder holding arbor/v1/*.proto: an sdist's copy first, else the checkout's."""
    for candidate in (HERE / "proto", HERE.parent.parent / "proto"):
        if (candidate / MARKER).is_file():
            return candidate
    raise RuntimeError(
        f"arbor-client: no {MARKER} in {HERE / 'proto'} (sdist) or "
        f"{HERE.parent.parent / 'proto'} (source checkout); build from Arbor's repository or "
        "from an sdist made by this setup.py")


def proto_files(root: Path) -> List[Path]:
    """Every .proto of the API, relative to `root`, in a stable order."""
    return sorted(path.relative_to(root) for path in (root / "arbor").rglob("*.proto"))


def run_protoc(root: Path, out_dir: Path) -> None:
    """Writes <name>_pb2.py and <name>_pb2_grpc.py for every API .proto under `out_dir`."""
    args = [f"-I{root}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"]
    args += [str(path) for path in proto_files(root)]
    try:
        from grpc_tools import protoc  # pylint: disable=import-outside-toplevel
    except ImportError:
        protoc = None
    if protoc is not None:
        # grpc_tools bundles the well-known types; its own include folder must be on the path.
        include = Path(protoc.__file__).resolve().parent / "_proto"
        if protoc.main(["grpc_tools.protoc", f"-I{include}", *args]) != 0:
            raise RuntimeError("arbor-client: grpc_tools.protoc failed (see above)")
        return
    protoc_path = os.environ.get("PROTOC") or shutil.which("protoc")
    plugin = os.environ.get("GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
    if not protoc_path or not plugin:
        raise RuntimeError(
            "arbor-client: generating the gRPC stubs needs grpcio-tools, or protoc and "
            "grpc_python_plugin on PATH (Debian: protobuf-compiler protobuf-compiler-grpc)")
    subprocess.run([protoc_path, f"--plugin=protoc-gen-grpc_python={plugin}", *args], check=True)


def relocate(out_dir: Path) -> None:
    """Moves the generated modules from the top-level `arbor.v1` into STUB_PACKAGE.

    protoc names modules after the .proto paths (`from arbor.v1 import entropix_pb2`); the
    imports between them and the module names recorded in the messages are rewritten, and every
    folder becomes a package.
    """
    rewrites = [
        (re.compile(r"^from arbor\.v1 import ", re.MULTILINE),
         f"from {STUB_PACKAGE}.arbor.v1 import "),
        (re.compile(r"'arbor\.v1\.(\w+_pb2)'"), rf"'{STUB_PACKAGE}.arbor.v1.\1'"),
    ]
    for module in out_dir.rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        for pattern, replacement in rewrites:
            text = pattern.sub(replacement, text)
        module.write_text(text, encoding="utf-8")
    for folder in [out_dir, *(p for p in out_dir.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()


def generate_stubs(out_dir: Path) -> None:
    """Generates the stub package (arbor_client/_proto) into `out_dir`, replacing it."""
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    run_protoc(find_proto_root(), out_dir)
    relocate(out_dir)


class BuildPyWithStubs(build_py):
    """build_py that also generates the stubs into the build tree."""

    def run(self) -> None:
        super().run()
        # An editable install imports the package from src/, so the stubs go there.
        base = HERE / "src" if getattr(self, "editable_mode", False) else Path(self.build_lib)
        generate_stubs(base.joinpath(*STUB_PACKAGE.split(".")))


class SdistWithProtos(sdist):
    """sdist that carries the .proto files, which live outside this folder in a checkout."""

    def make_release_tree(self, base_dir: str, files: List[str]) -> None:
        super().make_release_tree(base_dir, files)
        root = find_proto_root()
        for path in proto_files(root):
            target = Path(base_dir, "proto", path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / path, target)


setup(cmdclass={"build_py": BuildPyWithStubs, "sdist": SdistWithProtos})
