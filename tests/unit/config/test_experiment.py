"""The experiment file: defaults, named positions, validation messages, YAML reading, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rotscope.config.experiment import (
    NAMED_POSITIONS,
    ExperimentConfig,
    build_config,
    dump_config,
    load_config,
    quick_config_data,
    read_config_file,
)
from rotscope.errors import BadInput


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_valid() -> None:
    config = ExperimentConfig()
    assert config.lengths == [256, 512, 1024]
    assert config.trials == 1
    assert config.controls is True
    assert config.filler.kind == "code"
    assert config.generation.temperature == 0.0
    assert 0.0 < config.length_tolerance < 1.0
    # The defaults must also survive validation from an empty mapping.
    assert build_config({}) == config


def test_quick_experiment_is_valid() -> None:
    config = build_config(quick_config_data())
    assert config.tasks == ["niah"]
    assert [name for _, name in config.positions()] == ["midpoint"]
    # the built-in experiment and its example file are the same experiment
    assert config == build_config(read_config_file(Path(__file__).parents[3] / "examples" / "quick.yaml"))


def test_named_positions_map_to_fractions() -> None:
    assert NAMED_POSITIONS == {
        "beginning": 0.0,
        "early-middle": 0.25,
        "midpoint": 0.5,
        "late-middle": 0.75,
        "end": 1.0,
    }
    config = build_config({"depths": ["beginning", "early-middle", "midpoint", "late-middle", "end"]})
    assert config.positions() == [
        (0.0, "beginning"),
        (0.25, "early-middle"),
        (0.5, "midpoint"),
        (0.75, "late-middle"),
        (1.0, "end"),
    ]


def test_positions_mix_names_and_fractions_without_repeats() -> None:
    config = build_config({"depths": [0.1, "midpoint", 0.5, 1.0, "end"]})
    # 0.5 is already given as "midpoint", and "end" is 1.0 given as a number first.
    assert config.positions() == [(0.1, None), (0.5, "midpoint"), (1.0, None)]


@pytest.mark.parametrize("depth", [1.5, -0.1, float("nan")])
def test_depth_outside_unit_interval_is_rejected(depth: float) -> None:
    with pytest.raises(BadInput) as raised:
        build_config({"depths": [0.5, depth]}, "exp.yaml")
    message = str(raised.value)
    assert message.startswith("exp.yaml:")
    assert "depths" in message
    assert str(depth) in message
    assert "\n" not in message


def test_depth_1_5_message_names_field_and_value() -> None:
    with pytest.raises(BadInput, match=r"'depths'.*1\.5"):
        build_config({"depths": [1.5]})


def test_unknown_named_position_is_rejected() -> None:
    with pytest.raises(BadInput, match="unknown position 'centre'"):
        build_config({"depths": ["centre"]})


@pytest.mark.parametrize("length", [0, -1, -256])
def test_non_positive_length_is_rejected(length: int) -> None:
    with pytest.raises(BadInput) as raised:
        build_config({"lengths": [256, length]})
    message = str(raised.value)
    assert "lengths" in message
    assert f"length {length} is not positive" in message


def test_lengths_are_sorted_and_deduplicated() -> None:
    assert build_config({"lengths": [1024, 256, 512, 256]}).lengths == [256, 512, 1024]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"trials": 0}, "trials"),
        ({"limit": 0}, "limit"),
        ({"length_tolerance": 1.0}, "length_tolerance"),
        ({"lengths": []}, "lengths"),
        ({"tasks": []}, "tasks"),
        ({"generation": {"max_tokens": 0}}, "generation.max_tokens"),
    ],
)
def test_out_of_range_fields_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(BadInput, match=f"field '{field}'"):
        build_config(data)


def test_unknown_key_is_an_error() -> None:
    with pytest.raises(BadInput, match="unknown key 'bogus'"):
        build_config({"bogus": 1}, "exp.yaml")


def test_unknown_nested_key_names_its_path() -> None:
    with pytest.raises(BadInput, match=r"unknown key 'filler\.colour'"):
        build_config({"filler": {"kind": "text", "colour": "red"}})


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "broken.yaml", "name: x\nlengths: [256, 512\n")
    with pytest.raises(BadInput) as raised:
        read_config_file(path)
    message = str(raised.value)
    assert str(path) in message
    assert "malformed YAML" in message


def test_yaml_list_is_not_an_experiment(tmp_path: Path) -> None:
    path = _write(tmp_path / "list.yaml", "- niah\n- nolima\n")
    with pytest.raises(BadInput, match="must be a mapping") as raised:
        load_config(path)
    assert str(path) in str(raised.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not found"):
        load_config(tmp_path / "absent.yaml")


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path / "empty.yaml", "")
    assert load_config(path) == ExperimentConfig()


def test_unknown_key_in_file_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "exp.yaml", "name: x\nbogus: 1\n")
    with pytest.raises(BadInput) as raised:
        load_config(path)
    assert str(raised.value) == f"{path}: unknown key 'bogus'"


def test_overrides_replace_file_values_and_none_keeps_them(tmp_path: Path) -> None:
    path = _write(tmp_path / "exp.yaml", "name: mine\ntrials: 3\nlengths: [256, 512]\nseed: 7\n")
    config = load_config(path, {"lengths": [128], "trials": None, "seed": 11, "model": "fake/lexical"})
    assert config.name == "mine"
    assert config.lengths == [128]
    assert config.trials == 3  # None means "not given on the command line"
    assert config.seed == 11
    assert config.model == "fake/lexical"


def test_overrides_are_validated_too(tmp_path: Path) -> None:
    path = _write(tmp_path / "exp.yaml", "name: mine\n")
    with pytest.raises(BadInput, match=r"depth 1\.5 is outside"):
        load_config(path, {"depths": [1.5]})


def test_dump_round_trips(tmp_path: Path) -> None:
    config = build_config(
        {
            "name": "rt",
            "model": "fake/lexical",
            "tasks": ["niah", "nolima"],
            "lengths": [300, 200],
            "depths": ["midpoint", 0.25],
            "filler": {"kind": "text", "glob": "/x/*.txt", "allow_repeat": True},
            "out": "/runs/rt",  # relative paths resolve against the file (test_paths_resolve_...)
        }
    )
    path = _write(tmp_path / "dumped.yaml", dump_config(config))
    assert yaml.safe_load(path.read_text(encoding="utf-8"))["lengths"] == [200, 300]
    assert load_config(path) == config


def test_config_is_frozen() -> None:
    config = ExperimentConfig()
    with pytest.raises(Exception):  # noqa: B017  (pydantic raises ValidationError on frozen models)
        config.trials = 5  # type: ignore[misc]
