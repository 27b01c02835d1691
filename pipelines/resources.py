"""Typed resources: where the store lives, and the curation knobs.

``CurationResource`` mirrors every field of ``memcurator.config.CurationConfig`` (generated from
it, so a knob is declared once) so each shows in the UI launchpad and can be overridden per run.
"""


from contextlib import contextmanager
from dataclasses import MISSING, fields
from typing import Iterator

import dagster as dg
import duckdb

from memcurator import store
from memcurator.config import CurationConfig
from memcurator.home import Home


class StoreResource(dg.ConfigurableResource):
    """The memcurator home (MEMCURATOR_HOME): landing folder, lake, DuckDB file. The one writer."""

    home: str

    @property
    def paths(self) -> Home:
        return Home.from_env(self.home).ensure()

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with store.connect(self.paths.store) as conn:
            yield conn


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
