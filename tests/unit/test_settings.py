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
    # in type, out of range: a night ran on with them and gave tables that mean nothing, or stopped deep in a stage
    ("lsh_bands = 0\n", "lsh_bands must be at least 1, not 0"),
    ("lsh_bands = 33\n", "lsh_bands (33) must divide minhash_permutations (128)"),
    ("near_duplicate_threshold = 1.5\n", "near_duplicate_threshold must be above 0 and at most 1, not 1.5"),
    ("noise_floor = -0.1\n", "noise_floor must be from 0 to 1, not -0.1"),
    ("min_principle_members = 1\n", "min_principle_members must be at least 2, not 1"),
    ("earliest_timestamp = \"2100-01-01\"\nlatest_timestamp = \"1990-01-01\"\n",
     "earliest_timestamp (2100-01-01) must come before latest_timestamp (1990-01-01)"),
    ("earliest_timestamp = \"last year\"\n", "earliest_timestamp and latest_timestamp must be dates (YYYY-MM-DD)"),
    ("judge_endpoint = \"llama.local\"\n", "judge_endpoint must be empty (no chat judge) or an http(s) URL"),
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


def test_a_setting_out_of_range_is_refused_wherever_it_is_given(tmp_path):
    """The defaults are in range; a value out of it is refused by the settings themselves (the launchpad's
    run config builds them too), and by the command line's --set before anything runs."""
    from typer.testing import CliRunner

    from memcurator.cli import app

    CurationConfig()
    with pytest.raises(SettingsError, match="max_idle_days must be at least 0, not -1"):
        CurationConfig(max_idle_days=-1)
    result = CliRunner().invoke(app, ["profile-night", "--set", "lsh_bands=0", "--home", str(tmp_path / "home")])
    assert result.exit_code == 2 and "lsh_bands must be at least 1, not 0" in " ".join(result.output.replace("│", " ").split())
    assert not (tmp_path / "home" / "store.duckdb").exists()


def test_recorded_settings_take_the_judge_endpoint_whole_from_the_settings_at_hand():
    from memcurator.config import public_endpoint

    endpoint = "https://user:pw@judge.example/v1?api-key=s3cret"
    recorded = CurationConfig(judge_endpoint=endpoint, max_idle_days=365).recorded()
    assert recorded["judge_endpoint"] == public_endpoint(endpoint) == "https://judge.example/v1?api-key=***"
    back = CurationConfig.from_recorded(recorded, CurationConfig(judge_endpoint=endpoint))
    assert (back.judge_endpoint, back.max_idle_days) == (endpoint, 365)
    # a key rotated since the night: the settings at hand hold the one to ask with
    rotated = "https://judge.example/v1?api-key=n3w"
    assert CurationConfig.from_recorded(recorded, CurationConfig(judge_endpoint=rotated)).judge_endpoint == rotated
    for known in (None, CurationConfig(), CurationConfig(judge_endpoint="https://other.example/v1?api-key=s3cret")):
        with pytest.raises(SettingsError, match="query values the store does not keep"):
            CurationConfig.from_recorded(recorded, known)
    # nothing masked: the record is the endpoint (user info is never sent: judges.ChatJudge)
    plain = CurationConfig(judge_endpoint="https://judge.example/v1/chat").recorded()
    assert CurationConfig.from_recorded(plain).judge_endpoint == "https://judge.example/v1/chat"
    assert CurationConfig.from_recorded(CurationConfig().recorded()) == CurationConfig()
