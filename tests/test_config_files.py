"""Files a configuration names are read as bounded regular files: /dev/zero, a FIFO or a huge file fail at
once, naming the setting and the path, wherever the setting comes from (constructor, dict, YAML, CLI)."""

import json
import os
import threading

import pytest

from crag_shared import ActionPolicy, Corrector, CRAGConfig, ReplaySearch, evaluator_from_spec
from crag_shared.files import MAX_SETTINGS_BYTES
from crag_shared.tools.cli import main

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def finishes(call, seconds=10.0):
    """Run `call` in a thread and return what it raised; a call still running after `seconds` hangs."""
    outcome = {}

    def run():
        try:
            call()
        except Exception as error:
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the loader hangs"
    return outcome.get("error")


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "huge", "directory"])
def test_every_config_file_is_a_bounded_regular_file(target, fifo, tmp_path):
    path = {"/dev/zero": "/dev/zero", "fifo": str(fifo), "directory": str(tmp_path)}.get(target)
    if target == "huge":
        path = str(tmp_path / "huge.json")
        with open(path, "wb") as handle:
            handle.truncate(MAX_SETTINGS_BYTES + 1)
    calls = {
        "thresholds_path": lambda: Corrector.from_config(CRAGConfig(thresholds_path=path)),
        "ActionPolicy.load": lambda: ActionPolicy.load(path),
        "combined:": lambda: evaluator_from_spec(f"combined:{path}"),
        "replay": lambda: ReplaySearch(path),
        "from_dict": lambda: Corrector.from_config(CRAGConfig.from_dict({"thresholds_path": path})),
    }
    for name, call in calls.items():
        error = finishes(call)
        assert isinstance(error, ValueError), (name, error)
        if target != "huge" or name != "replay":  # a replay file may be larger than a settings file
            assert path in str(error) and ("regular file" in str(error) or "bytes" in str(error)), (name, error)


def test_the_cli_refuses_them_in_one_line(fifo, capsys):
    data = fifo.parent / "pairs.jsonl"
    data.write_text(json.dumps({"query": "q", "passage": "p", "label": True}) + "\n")
    out = fifo.parent / "out.jsonl"
    for argv in (["run", "--data", str(data), "--out", str(out), "--evaluator", f"combined:{fifo}"],
                 ["run", "--data", str(data), "--out", str(out), "--thresholds", "/dev/zero"],
                 ["run", "--data", str(data), "--out", str(out), "--web", "replay:/dev/zero"],
                 ["calibrate", "--data", str(data), "--evaluator", "combined:/dev/zero", "--plot", ""]):
        codes: list[int] = []
        assert finishes(lambda argv=argv, codes=codes: codes.append(main(argv))) is None and codes == [2], argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("crag: error:"), err


def test_a_combination_that_names_itself_is_refused_with_the_chain(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    body = {"format": 2, "weights": [1.0], "bias": 0.0, "thresholds": [0.5, -0.5]}
    first.write_text(json.dumps({**body, "members": [f"combined:{second}"]}))
    second.write_text(json.dumps({**body, "members": [f"combined:{first}"]}))
    with pytest.raises(ValueError, match="names itself") as raised:
        evaluator_from_spec(f"combined:{first}")
    assert str(first.resolve()) in str(raised.value) and str(second.resolve()) in str(raised.value)
    first.write_text(json.dumps({**body, "members": [f"combined:{first}"]}))
    with pytest.raises(ValueError, match="names itself"):
        evaluator_from_spec(f"combined:{first}")


def test_a_haystack_yaml_naming_a_device_fails_at_load():
    pytest.importorskip("haystack")
    from haystack import Pipeline

    from crag_haystack import CRAG, ReplayWebSearch
    from crag_shared.demo import recorded_web_path

    pipeline = Pipeline()
    pipeline.add_component("crag", CRAG())
    pipeline.add_component("web", ReplayWebSearch(str(recorded_web_path())))
    for yaml in (pipeline.dumps().replace("thresholds_path: null", "thresholds_path: /dev/zero"),
                 pipeline.dumps().replace(str(recorded_web_path()), "/dev/zero")):
        assert "/dev/zero" in yaml
        error = finishes(lambda yaml=yaml: Pipeline.loads(yaml).warm_up())
        assert error is not None and "/dev/zero" in str(error) and "regular file" in str(error), error
