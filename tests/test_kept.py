"""fedrepro.core.kept: the values a job's cells share, the least recently used dropped first."""
import pytest

from fedrepro.core.kept import Kept


def test_kept_values_are_reused_and_the_least_recently_used_goes_before_a_new_one_is_made():
    kept, made, alive = Kept(2), [], []

    def make(name):
        def f():
            alive.append(len(kept))                 # values held while this one is made
            made.append(name)
            return name.upper()
        return f

    assert kept.get("a", make("a")) == "A" and kept.get("b", make("b")) == "B"
    assert kept.get("a", make("a")) == "A" and made == ["a", "b"]          # reused: a is now the newest
    assert kept.get("c", make("c")) == "C" and kept.keys() == ["a", "c"]  # b, the least recently used, went
    assert max(alive) == 1                                                # never size + 1 values at once
    assert kept.get("b", make("b")) == "B" and made[-1] == "b"


def test_invalid_values_and_stale_keys_are_replaced():
    kept = Kept(3)
    kept.get(("f", 1), lambda: "v1")
    kept.get("other", lambda: "x")
    assert kept.get(("f", 2), lambda: "v2", stale=lambda k: k[0] == "f") == "v2"
    assert kept.keys() == ["other", ("f", 2)]                             # the older version dropped
    assert kept.get("other", lambda: "y", valid=lambda v: v == "y") == "y"
    kept.clear()
    assert len(kept) == 0
    with pytest.raises(ValueError, match="size >= 1"):
        Kept(0)
