"""A home's settings.toml: the curation settings its nights run with, read strictly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memcurator.config import CurationConfig, SettingsError, read_settings
from memcurator.home import HOME_ENV


def test_a_settings_file_gives_its_values_with_their_types(tmp_path):
    path = tmp_path / "settings.toml"
    assert read_settings(path) == {}  # no file: the defaults
    path.write_text("# our fleet recalls monthly\nmax_idle_days = 60\nnoise_floor = 1\n"
                    "shingle_drop_stopwords = false\njudge_model = \"qwen2.5\"\n")
    settings = read_settings(path)
    assert settings == {"max_idle_days": 60, "noise_floor": 1.0, "shingle_drop_stopwords": False, "judge_model": "qwen2.5"}
    assert type(settings["noise_floor"]) is float  # an integer does for a decimal
    assert CurationConfig(**settings).max_idle_days == 60


@pytest.mark.parametrize("text, said", [
    ("max_idle_days = 60.5\n", "max_idle_days takes a whole number, not 60.5"),
    ("max_idle_days = true\n", "max_idle_days takes a whole number, not True"),
    ("noise_floor = \"low\"\n", "noise_floor takes a number, not 'low'"),
    ("judge_endpoint = 3\n", "judge_endpoint takes text in quotes, not 3"),
    ("max_idle_dayz = 60\n", "max_idle_dayz is no curation setting"),
    ("[lifecycle]\nmax_idle_days = 60\n", "lifecycle is no curation setting"),
    ("max_idle_days = \n", "not a TOML file"),
])
def test_a_settings_file_the_night_cannot_use_is_an_error_naming_the_file_and_setting(tmp_path, text, said):
    path = tmp_path / "settings.toml"
    path.write_text(text)
    with pytest.raises(SettingsError) as error:
        read_settings(path)
    assert str(error.value).startswith(f"{path}: ") and said in str(error.value)


def _load_definitions(home) -> subprocess.CompletedProcess:
    """Load the Dagster definitions as the UI and each run's process do, for ``home``."""
    code = "from pipelines.definitions import defs; print('max_idle_days', defs.resources['curation'].max_idle_days)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, HOME_ENV: str(home)})


def test_the_definitions_take_the_homes_settings_and_refuse_a_file_they_cannot_use(tmp_path):
    (tmp_path / "settings.toml").write_text("max_idle_days = 60\n")
    loaded = _load_definitions(tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["max_idle_days", "60"]
    (tmp_path / "settings.toml").write_text("max_idle_days = \"sixty\"\n")
    loaded = _load_definitions(tmp_path)
    assert loaded.returncode != 0 and "SettingsError" in loaded.stderr
    assert "settings.toml: max_idle_days takes a whole number, not 'sixty'" in loaded.stderr
