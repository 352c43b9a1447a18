"""The reader's fast checks of a rank line take any JSON value where a name is expected
(CI's fuzzer found a call site whose "function" was a list: a TypeError, a traceback
instead of the one-line refusal); the message-building checker then names the value."""

from __future__ import annotations

from mpilens.report import validate


def test_a_list_where_a_call_site_name_is_expected_is_refused() -> None:
    site = {"function": ["MPI_Send"], "frames": [[0, 1]], "calls": 1}
    assert validate._sites_ok([site], 0) is False


def test_a_list_among_time_line_classes_is_refused() -> None:
    tl = {"bin_s": 0.1, "classes": [["p2p"], "coll"], "rows": []}
    assert validate.timeline_shape_ok(tl) is None
