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
                                         ("combination", {"members", "weights", "bias", "thresholds"}),
                                         ("row", set())])
def test_crag_schema_prints_each_files_json_schema(capsys, name, fields):
    assert main(["schema", name]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert fields <= set(schema.get("properties", {})), schema.keys()


def test_the_files_crag_writes_validate_against_their_schemas(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    result = Corrector("lexical").correct("Who wrote Middlemarch?", ["Middlemarch is a novel by George Eliot."])
    records = {"config": CRAGConfig(upper=0.3).to_dict(), "summary": result.to_dict(),
               "thresholds": {"upper": 0.3, "lower": -0.5, "chosen_by": "Eq. 2"},
               "combination": json.loads((SHIPPED_COMBINATIONS / "reader-lexical.json").read_text()),
               "row": {"id": 1, "question": "Who wrote it?", "answers": ["Eliot"], "split": "eval",
                       "passages": ["Middlemarch.", {"text": "By Eliot.", "title": "M", "label": True, "rank": 1}]}}
    for name, record in records.items():
        main(["schema", name])
        jsonschema.validate(record, json.loads(capsys.readouterr().out))


def test_a_data_row_is_one_pydantic_shape_whose_schema_names_every_field_and_its_other_names(tmp_path, capsys):
    """`crag schema row`: the record and the pair row with their canonical names, each other name a field goes
    by in its description; the rows crag reads validate against it, a row of the wrong shape does not."""
    jsonschema = pytest.importorskip("jsonschema")
    from crag_shared.rows import read_records

    main(["schema", "row"])
    schema = json.loads(capsys.readouterr().out)
    record, pair, passage = (schema["$defs"][name]["properties"] for name in ("RecordRow", "PairRow", "PassageRow"))
    assert {"question", "id", "passages", "answers"} <= set(record) and {"question_id", "text", "label"} <= set(pair)
    assert "`ctxs`" in record["passages"]["description"] and "`content`" in passage["text"]["description"]
    pair_row = {"question": "Who wrote it?", "question_id": "q1", "text": "By Eliot.", "label": True}
    jsonschema.validate(pair_row, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"question": "Who?", "passages": [{"title": "no text"}]}, schema)
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(pair_row) + "\n")
    [read] = read_records(data)
    assert (read.key, read.labels, read.passages[0].text) == ("q1", [True], "By Eliot.")
