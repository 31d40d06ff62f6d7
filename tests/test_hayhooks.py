"""The hayhooks examples deployed as users deploy them: a YAML pipeline and a PipelineWrapper, served by
`hayhooks run` in a fresh process with no allowlist setting, answering concurrent clients on loopback."""

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
httpx = pytest.importorskip("httpx")
pytest.importorskip("hayhooks")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "hayhooks"
DOCUMENTS = [{"content": "Paris is the capital and largest city of France."}, {"content": "Bees live in colonies."}]
QUESTIONS = {"What is the capital of France?": "correct", "Who wrote War and Peace?": "incorrect"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pipelines = tmp_path_factory.mktemp("pipelines")
    shutil.copy(EXAMPLES / "crag.yml", pipelines / "crag.yml")
    shutil.copytree(EXAMPLES / "crag_wrapper", pipelines / "crag_wrapper")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAYSTACK_DESERIALIZATION")}
    env["HAYHOOKS_PIPELINES_DIR"] = str(pipelines)
    hayhooks = Path(sys.executable).with_name("hayhooks")
    process = subprocess.Popen([str(hayhooks), "run", "--host", "127.0.0.1", "--port", str(port)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            status = httpx.get(f"{url}/status", timeout=2).json()
            if set(status["pipelines"]) >= {"crag", "crag_wrapper"}:
                break
        except httpx.HTTPError:
            pass
        assert process.poll() is None, process.stdout.read()
        time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("hayhooks did not deploy both pipelines in 90 s")
    yield url
    process.terminate()
    process.wait(timeout=20)


async def ask_all(url: str, route: str, clients: int = 10, each: int = 5) -> list[tuple[int, str, str]]:
    questions = list(QUESTIONS)

    async def client(i: int, http: httpx.AsyncClient) -> list[tuple[int, str, str]]:
        answers = []
        for j in range(each):
            question = questions[(i + j) % len(questions)]
            response = await http.post(f"{url}/{route}/run", json={"query": question, "documents": DOCUMENTS})
            result = response.json().get("result", {}) if response.status_code == 200 else {}
            action = result.get("action") or result.get("crag", {}).get("action", "")
            answers.append((response.status_code, question, action))
        return answers

    async with httpx.AsyncClient(timeout=60) as http:
        runs = await asyncio.gather(*(client(i, http) for i in range(clients)))
    return [answer for run in runs for answer in run]


@pytest.mark.parametrize("route", ["crag", "crag_wrapper"])
def test_fifty_requests_from_ten_clients_with_documents_all_answered(server, route):
    answers = asyncio.run(ask_all(server, route))
    assert len(answers) == 50
    assert [a for a in answers if a[0] != 200] == []
    assert all(action == QUESTIONS[question] for _, question, action in answers)
