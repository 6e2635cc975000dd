"""The rules of docs/ARCHITECTURE.md §2, read from docs/rooms.txt and checked against a tree.

A room is a folder of the code; it may include its own headers and those of the rooms it may
depend on, directly or through them. Checked here, for every source file in a room:
  - each project #include lands in the file's own room or in one it may depend on;
  - each `namespace arbor::X` it opens is its room's (arbor::<first folder>) or, for forward
    declarations, one of a room it may depend on, and it opens its own;
  - a .cu file reaches no abseil, protobuf or gRPC header, even through project headers;
and for the rules themselves: every room names only rooms that exist, and the rooms form no
circle. The checks take a root folder, so the tests can plant faults in a small tree of their own.
"""

import os
import re

SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")
# Outside the rooms: tests and benchmarks may include anything; generated code is the proto room's;
# every top-level build* folder is a build tree (.gitignore's /build*/, as build-avx2).
OUTSIDE = ("tests/", "bench/", "build", "clients/", "scripts/", "deploy/", "docs/", ".")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NAMESPACE = re.compile(r"^\s*namespace\s+arbor::([A-Za-z_][\w:]*)\s*\{", re.M)
# Host-only libraries a .cu file must not reach (nvcc builds it without them).
CUDA_FORBIDDEN = ("absl/", "google/protobuf/", "grpc", "grpcpp/")


class RulesError(Exception):
    """The rooms file itself is wrong: unknown rooms, a circle, a bad line."""


def read_rooms(path):
    """{room: [rooms it may depend on]} from a rooms file, in file order."""
    rooms = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            room, deps = line[0], [d for d in line[1:] if d != "-"]
            if room in rooms:
                raise RulesError(f"{path}:{number}: room {room} listed twice")
            rooms[room] = deps
    for room, deps in rooms.items():
        for dep in deps:
            if dep not in rooms:
                raise RulesError(f"room {room} depends on {dep}, which is not a room")
    return rooms


def allowed_closure(rooms):
    """{room: set of rooms it may include}, itself included; raises RulesError on a circle."""
    closure, visiting = {}, []

    def visit(room):
        if room in closure:
            return closure[room]
        if room in visiting:
            circle = visiting[visiting.index(room):] + [room]
            raise RulesError("the rooms form a circle: " + " -> ".join(circle))
        visiting.append(room)
        reach = {room}
        for dep in rooms[room]:
            reach |= visit(dep)
        visiting.pop()
        closure[room] = reach
        return reach

    for room in rooms:
        visit(room)
    return closure


def room_of(path, rooms):
    """The longest room folder holding `path` (relative, '/'-separated), or None."""
    best = None
    for room in rooms:
        if path.startswith(room + "/") and (best is None or len(room) > len(best)):
            best = room
    return best


def source_files(root):
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        dirs[:] = sorted(d for d in dirs if not (rel + d + "/").startswith(OUTSIDE))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield rel + name


def include_room(header, rooms, root):
    """The room a quoted include names, or None for a header outside the project."""
    if header.startswith("arbor/v1/"):  # Generated from proto/arbor/v1/*.proto.
        return "proto"
    if not os.path.exists(os.path.join(root, header)):
        return None
    return room_of(header, rooms)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def check_includes(root, rooms, closure, path, text):
    room = room_of(path, rooms)
    for header in INCLUDE.findall(text):
        target = include_room(header, rooms, root)
        if target is not None and target not in closure[room]:
            yield (f"{path}: includes {header} of room {target}, which room {room} may not "
                   f"depend on (docs/rooms.txt)")


def check_namespaces(rooms, closure, path, text):
    room = room_of(path, rooms)
    own = room.split("/")[0]
    opened = [ns.split("::")[0] for ns in NAMESPACE.findall(text)]
    if opened and own not in opened:
        yield f"{path}: code of room {room} must be in namespace arbor::{own}, not arbor::{opened[0]}"
    tops = {r.split("/")[0] for r in closure[room]}
    for ns in opened:
        if ns != own and ns not in tops:
            yield f"{path}: opens namespace arbor::{ns}, which is no room that {room} may use"


def check_cuda_reach(root, path):
    """Every host-only header a .cu file reaches through quoted project includes."""
    seen, stack = set(), [path]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for header in INCLUDE.findall(read(root, current)):
            if header.startswith(CUDA_FORBIDDEN):
                yield f"{path}: reaches {header} (through {current}); .cu files are built without it"
            elif os.path.exists(os.path.join(root, header)):
                stack.append(header)


def check_tree(root, rooms_path):
    """Every violation in the tree at `root` of the rules in `rooms_path`, as messages."""
    rooms = read_rooms(rooms_path)
    closure = allowed_closure(rooms)
    problems = []
    for path in source_files(root):
        if room_of(path, rooms) is None:
            problems.append(f"{path}: in no room; add its folder to docs/rooms.txt")
            continue
        text = read(root, path)
        problems += check_includes(root, rooms, closure, path, text)
        problems += check_namespaces(rooms, closure, path, text)
        if path.endswith(".cu"):
            problems += check_cuda_reach(root, path)
    return problems


def doc_table(markdown):
    """{room: [rooms]} from the rooms table of an ARCHITECTURE.md text (§2's first table)."""
    section = markdown.split("## 2.", 1)[1].split("\n## ", 1)[0]
    rooms = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        room = cells[0].strip("`").rstrip("/")
        deps = re.sub(r"\([^)]*\)", "", cells[2])
        rooms[room] = [d.strip().strip("`").rstrip("/") for d in deps.split(",")
                       if d.strip() not in ("", "—", "-")]
    return rooms
