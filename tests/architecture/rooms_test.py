"""The layer rules of docs/ARCHITECTURE.md §2 hold in the tree, and the checker catches faults.

The tree test reads docs/rooms.txt and fails on any include that crosses a room's rules, any
namespace that is not its room's, any .cu file that reaches a host-only library, and any
difference between docs/rooms.txt and the table a reader sees in docs/ARCHITECTURE.md. The
planted-fault tests build a small tree of their own and show each check failing on it.
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rooms  # noqa: E402

SOURCE = os.environ.get("ARBOR_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
RULES = os.path.join(SOURCE, "docs", "rooms.txt")


class TreeTest(unittest.TestCase):
    def test_every_include_and_namespace_keeps_to_its_room(self):
        problems = rooms.check_tree(SOURCE, RULES)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_architecture_table_equals_rooms_file(self):
        with open(os.path.join(SOURCE, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
            table = rooms.doc_table(f.read())
        listed = rooms.read_rooms(RULES)
        self.assertEqual({r: sorted(d) for r, d in table.items()},
                         {r: sorted(d) for r, d in listed.items()},
                         "docs/ARCHITECTURE.md §2's table and docs/rooms.txt differ")


class PlantedFaultTest(unittest.TestCase):
    RULES = "low -\nmid low\nhigh mid\n"

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        self.write("rooms.txt", self.RULES)
        self.write("low/a.h", '#include "absl/status/status.h"\nnamespace arbor::low {}\n')
        self.write("mid/b.h", '#include "low/a.h"\nnamespace arbor::mid {}\n')
        self.write("high/c.cc", '#include "mid/b.h"\nnamespace arbor::high {}\n')

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def check(self):
        return rooms.check_tree(self.root, os.path.join(self.root, "rooms.txt"))

    def test_clean_tree_passes(self):
        self.assertEqual(self.check(), [])

    def test_build_trees_are_outside_but_a_room_inside_one_is_not(self):
        # Generated sources of any build* tree at the top (build/, build-avx2/) belong to no room.
        self.write("build-avx2/gen/x.pb.cc", '#include "high/c.cc"\n')
        self.write("build/y.cc", '#include "high/c.cc"\n')
        self.assertEqual(self.check(), [])
        self.write("mid/build/z.cc", '#include "high/c.cc"\nnamespace arbor::mid {}\n')
        self.assertIn("mid/build/z.cc: includes high/c.cc", self.check()[0])

    def test_upward_include_fails(self):
        self.write("low/d.cc", '#include "high/c.cc"\nnamespace arbor::low {}\n')
        problems = self.check()
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("low/d.cc: includes high/c.cc of room high", problems[0])

    def test_sideways_include_fails(self):
        self.write("rooms.txt", self.RULES + "side low\n")
        self.write("side/e.h", '#include "mid/b.h"\nnamespace arbor::side {}\n')
        self.assertIn("side/e.h: includes mid/b.h", self.check()[0])

    def test_transitive_include_passes(self):
        self.write("high/f.cc", '#include "low/a.h"\nnamespace arbor::high {}\n')
        self.assertEqual(self.check(), [])

    def test_foreign_namespace_fails(self):
        self.write("mid/g.h", "namespace arbor::high {}\n")
        problems = self.check()
        self.assertTrue(any("must be in namespace arbor::mid" in p for p in problems), problems)

    def test_forward_declaration_of_a_lower_room_passes(self):
        self.write("high/h.h", "namespace arbor::low {\nclass A;\n}\nnamespace arbor::high {}\n")
        self.assertEqual(self.check(), [])

    def test_file_outside_every_room_fails(self):
        self.write("stray/i.h", "namespace arbor::stray {}\n")
        self.assertIn("stray/i.h: in no room", self.check()[0])

    def test_cuda_file_reaching_abseil_through_a_header_fails(self):
        self.write("mid/k.cu", '#include "mid/b.h"\nnamespace arbor::mid {}\n')
        problems = self.check()
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("mid/k.cu: reaches absl/status/status.h (through low/a.h)", problems[0])

    def test_circle_in_rules_fails(self):
        self.write("rooms.txt", "low mid\nmid low\n")
        with self.assertRaisesRegex(rooms.RulesError, "circle: low -> mid -> low"):
            self.check()

    def test_unknown_room_in_rules_fails(self):
        self.write("rooms.txt", "low nowhere\n")
        with self.assertRaisesRegex(rooms.RulesError, "nowhere, which is not a room"):
            self.check()

    def test_doc_table_is_read_with_notes_dropped(self):
        doc = ("## 2. Rooms\n\n| room | what | may depend on |\n|---|---|---|\n"
               "| `low/` | x | — |\n| `mid/` | y | low (types) |\n\n## 3. Next\n")
        self.assertEqual(rooms.doc_table(doc), {"low": [], "mid": ["low"]})


if __name__ == "__main__":
    unittest.main()
