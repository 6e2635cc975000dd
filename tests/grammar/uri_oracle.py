"""Ground truth for the URI reference tests: Python's urllib.parse.urljoin (RFC 3986 resolution
for hierarchical schemes) on random references.

Reads {"seed": S, "count": N} on stdin and answers {"cases": [{"base", "reference", "target"}]}.
The draws keep to what urljoin resolves as RFC 3986 does: no dot segments in bases or beside an
authority (urljoin leaves those); no empty path segments, queries or fragments (urljoin drops
them); no scheme in the reference (urljoin reads "http:g" as relative, which the RFC's strict
parser does not).
"""

import json
import random
import sys
from urllib.parse import urljoin

SEGMENTS = ["a", "b", "c", "g;x", "%41", "..", ".", "d.json", "e-f"]


def path(rng, segments, absolute):
    parts = [rng.choice(segments) for _ in range(rng.randint(0, 4))]
    text = "/".join(parts)
    return "/" + text if absolute else text


def reference(rng, plain):
    text = ""
    kind = rng.randint(0, 3)
    if kind == 0:
        text = "//" + rng.choice(["h", "other.example", "u@x:8080"]) + path(rng, plain, True)
    elif kind == 1:
        text = path(rng, SEGMENTS, True)
    else:
        text = path(rng, SEGMENTS, False)
    if rng.random() < 0.3:
        text += "?" + rng.choice(["y", "q=1/./x"])
    if rng.random() < 0.3:
        text += "#" + rng.choice(["s", "/$defs/a"])
    return text


def main():
    request = json.load(sys.stdin)
    rng = random.Random(request["seed"])
    plain = [s for s in SEGMENTS if s not in ("..", ".")]
    cases = []
    for _ in range(request["count"]):
        base = rng.choice(["http", "https"]) + "://" + rng.choice(["a", "x.example"])
        base += path(rng, plain, True) + rng.choice(["", "?q"])
        ref = reference(rng, plain)
        cases.append({"base": base, "reference": ref, "target": urljoin(base, ref)})
    json.dump({"cases": cases}, sys.stdout)


if __name__ == "__main__":
    main()
