"""The shapes crag reads and writes are declared once, as pydantic models, and published as JSON Schemas."""

import json
import subprocess
import sys

import pytest

from crag_shared import Corrector, CRAGConfig
from crag_shared.evaluators import SHIPPED_COMBINATIONS
from crag_shared.tools.cli import main


def test_the_config_and_the_summary_publish_their_schemas():
    for code in ("from crag_shared import CRAGConfig; print(CRAGConfig.model_json_schema())",
                 "from crag_shared.summary import Summary; print(Summary.model_json_schema())"):
        printed = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
        assert "'properties'" in printed


@pytest.mark.parametrize("name,fields", [("config", {"evaluator", "upper", "lower", "ambiguous"}),
                                         ("summary", {"action", "scores", "abstention", "abstained", "judge"}),
                                         ("thresholds", {"upper", "lower"}),
                                         ("combination", {"members", "weights", "bias", "thresholds"})])
def test_crag_schema_prints_each_files_json_schema(capsys, name, fields):
    assert main(["schema", name]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert fields <= set(schema["properties"]), schema["properties"].keys()


def test_the_files_crag_writes_validate_against_their_schemas(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    result = Corrector("lexical").correct("Who wrote Middlemarch?", ["Middlemarch is a novel by George Eliot."])
    records = {"config": CRAGConfig(upper=0.3).to_dict(), "summary": result.to_dict(),
               "thresholds": {"upper": 0.3, "lower": -0.5, "chosen_by": "Eq. 2"},
               "combination": json.loads((SHIPPED_COMBINATIONS / "reader-lexical.json").read_text())}
    for name, record in records.items():
        main(["schema", name])
        jsonschema.validate(record, json.loads(capsys.readouterr().out))
