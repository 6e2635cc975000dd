"""The seed of a Python test's random draws, the same way tests/support/test_seed.h gives C++
tests theirs: ARBOR_TEST_SEED when it is set (to replay a failure), else a fresh random one;
either way logged with the line that replays it.

    sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))  # tests/support
    from test_seed import test_seed
    rng = random.Random(test_seed(self))

A test that asks more than once gets seed, seed + 1, ... in the order asked, so the one logged
seed replays all of them.
"""

import os
import random
import sys

_drawn = {}  # test id -> [first seed, how many handed out]


def test_seed(test=None):
    """This test's next seed; `test` is the unittest.TestCase asking (None: the whole file)."""
    name = test.id().replace("__main__.", "") if test is not None else os.path.basename(sys.argv[0])
    if name not in _drawn:
        fixed = os.environ.get("ARBOR_TEST_SEED")
        seed = int(fixed) if fixed else random.SystemRandom().randrange(1 << 32)
        _drawn[name] = [seed, 0]
        print(f"{name}: seed {seed} (replay: ARBOR_TEST_SEED={seed})", file=sys.stderr, flush=True)
    drawn = _drawn[name]
    drawn[1] += 1
    return drawn[0] + drawn[1] - 1


# Not a test, whatever a test runner's name pattern says.
test_seed.__test__ = False
