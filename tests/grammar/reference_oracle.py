"""Random schema documents for the reference resolution tests: nested resources whose `$id`s are
relative or absolute, each holding targets (a distinct `const`, with an `$anchor`), and a root
whose required properties reference them by absolute URI and pointer, by anchor, or through a
reference inside the target's own resource written relative to it. Python's `jsonschema`
(tests/grammar/json_schema_oracle.py) then judges what Arbor generates: a reference resolved to
the wrong schema yields the wrong constant.

Reads {"seed": S, "count": N} on stdin and answers {"schemas": [TEXT, ...]}.
"""

import json
import random
import sys
from urllib.parse import urljoin

RELATIVE_IDS = ["a/", "b.json", "sub/c.json", "../d/", "/abs/e.json", "f/../g.json"]


class Document:
    def __init__(self, rng):
        self.rng = rng
        self.targets = []  # (resource URI, name of the target in its resource's $defs, anchor)
        self.count = 0

    def resource(self, base, depth):
        """A resource at `base` (absolute, no fragment) with targets and nested resources."""
        schema = {"$defs": {}}
        for _ in range(self.rng.randint(1, 2)):
            self.count += 1
            name, anchor = "t%d" % self.count, "A%d" % self.count
            schema["$defs"][name] = {"const": self.count, "$anchor": anchor}
            self.targets.append((base, name, anchor))
            # A reference inside the resource, relative to it, to one of its own targets.
            local = self.rng.choice(["#/$defs/" + name, "#" + anchor])
            schema["$defs"]["via_" + name] = {"$ref": local}
            self.targets.append((base, "via_" + name, None))
        for i in range(self.rng.randint(0, 2) if depth < 3 else 0):
            if base.startswith("http") and self.rng.random() < 0.7:
                child_id = self.rng.choice(RELATIVE_IDS)
            else:
                child_id = self.rng.choice(["urn:uuid:%d-%d" % (depth, i),
                                            "http://other.example/%d/%d/x.json" % (depth, i)])
            child_base = urljoin(base, child_id)
            if any(t[0] == child_base for t in self.targets):
                continue  # An $id given twice would make references ambiguous.
            child = self.resource(child_base, depth + 1)
            child["$id"] = child_id
            schema["$defs"]["r%d" % i] = child
        return schema

    def root(self):
        base = "http://x.example/root/schema.json"
        schema = self.resource(base, 0)
        schema["$id"] = base
        schema["type"] = "object"
        schema["properties"] = {}
        for i, (uri, name, anchor) in enumerate(self.targets):
            if anchor is not None and self.rng.random() < 0.5:
                ref = uri + "#" + anchor
            else:
                ref = uri + "#/$defs/" + name
            schema["properties"]["p%d" % i] = {"$ref": ref}
        schema["required"] = list(schema["properties"])
        return schema


def main():
    request = json.load(sys.stdin)
    rng = random.Random(request["seed"])
    schemas = [json.dumps(Document(rng).root()) for _ in range(request["count"])]
    json.dump({"schemas": schemas}, sys.stdout)


if __name__ == "__main__":
    main()
