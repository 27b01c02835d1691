"""Typed resources: where the store lives, and the curation knobs.

``CurationResource`` mirrors every field of ``memcurator.config.CurationConfig`` (generated from
it, so a knob is declared once) so each shows in the UI launchpad and can be overridden per run.
"""


from contextlib import AbstractContextManager, contextmanager
from dataclasses import MISSING, fields
from typing import Iterator, Optional

import dagster as dg
import duckdb
from pydantic import PrivateAttr

from memcurator import store
from memcurator.config import CurationConfig, read_settings
from memcurator.home import Home


class StoreResource(dg.ConfigurableResource):
    """The memcurator home (MEMCURATOR_HOME): landing folder, lake, DuckDB file. The one writer.

    In a run, the steps of a process share one connection, opened by the first step that writes and
    closed when the run ends: each step opening the file again started from cold buffers and closed with
    a checkpoint of its own. A step that fails closes it; the next step opens another. Outside a run (a
    sensor, a test calling a check) each use opens its own. Either way, while another process holds the
    store (DuckDB lets one open it), the opening waits up to ``lock_wait_seconds`` (docs/reliability.md)."""

    home: str
    # how long a step waits for the store while another process holds it (store.connect_when_free)
    lock_wait_seconds: int = 3600
    _run: bool = PrivateAttr(default=False)
    _open: Optional[AbstractContextManager] = PrivateAttr(default=None)
    _conn: Optional[duckdb.DuckDBPyConnection] = PrivateAttr(default=None)

    @property
    def paths(self) -> Home:
        return Home.from_env(self.home).ensure()

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._run = True

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self._close()
        self._run = False

    def _close(self) -> None:
        if self._open is not None:
            opened, self._open, self._conn = self._open, None, None
            opened.__exit__(None, None, None)

    def _connect(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        return store.connect_when_free(self.paths.store, self.lock_wait_seconds, dg.get_dagster_logger().info)

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if not self._run:
            with self._connect() as conn:
                yield conn
            return
        if self._conn is None:
            self._open = self._connect()
            self._conn = self._open.__enter__()
        try:
            yield self._conn
        except BaseException:
            self._close()
            raise


def _curation_resource_class() -> type[dg.ConfigurableResource]:
    annotations = {}
    defaults = {}
    for f in fields(CurationConfig):
        default = f.default if f.default is not MISSING else None
        annotations[f.name] = type(default)
        defaults[f.name] = default

    def config(self) -> CurationConfig:
        return CurationConfig(**{name: getattr(self, name) for name in annotations})

    namespace = {"__annotations__": annotations, **defaults, "config": config,
                 "__doc__": "Curation knobs (thresholds, windows, weights); defaults in memcurator.config.",
                 "__module__": __name__}
    return type("CurationResource", (dg.ConfigurableResource,), namespace)


CurationResource = _curation_resource_class()


def home_settings(home: str | None = None) -> dict:
    """The curation settings of the home's settings.toml (``home``, default MEMCURATOR_HOME), read as the
    definitions load: the UI's launchpad shows them as the resource's values, and each run's process loads
    the definitions again, so a night starts with the file as it is then. A file the night cannot use
    stops the loading with the reason (``SettingsError``) instead of a night with other settings."""
    return read_settings(Home.from_env(home).settings)
