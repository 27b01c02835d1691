"""kill -9 during the nightly run: the store always opens and the rerun converges to the same tables.

CI runs one kill on a small fleet (to keep `make test` within its 10 minutes); `make crash` runs twenty (docs/reliability.md has the figures).
"""

from __future__ import annotations

from memcurator.crash import crash_test


def test_killed_nightly_runs_leave_an_openable_store_and_converge(tmp_path):
    kills = crash_test(tmp_path, kills=1, writes=1_500, namespaces=3, progress=lambda _: None)
    assert len(kills) == 1
    for kill in kills:
        assert kill.store_opened, kill
        assert kill.converged, kill
