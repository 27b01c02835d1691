"""kill -9 during the nightly run: the store always opens, the published snapshot is a whole night's, and
the rerun converges to the same tables.

`make test-crash` (a step of CI) runs one kill on a small fleet's first night and one on its third;
`make crash` runs twenty of each (docs/reliability.md has the figures). Each test runs the nightly job
as a process three or five times: 74-90 s each, apart from `make test` to keep it within its 10 minutes.
"""

from __future__ import annotations

import pytest

from memcurator.crash import crash_test

pytestmark = pytest.mark.crash


def test_killed_nightly_runs_leave_an_openable_store_and_converge(tmp_path):
    kills = crash_test(tmp_path, kills=1, writes=1_500, namespaces=3, progress=lambda _: None)
    assert len(kills) == 1
    for kill in kills:
        assert kill.store_opened, kill
        assert kill.converged, kill
        assert kill.published in ("none", "this night"), kill


def test_a_killed_later_night_leaves_the_snapshot_of_a_whole_night_and_converges(tmp_path):
    # the third night: incremental refreshes, and a publish that writes over the spare the second left
    kills = crash_test(tmp_path, kills=1, writes=1_500, namespaces=3, after_nights=2, progress=lambda _: None)
    assert len(kills) == 1
    for kill in kills:
        assert kill.store_opened, kill
        assert kill.converged, kill
        assert kill.published in ("before", "this night"), kill
