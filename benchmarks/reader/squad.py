"""SQuAD from the SQuAD explorer's article pages (`rajpurkar/SQuAD-explorer`, CC BY-SA 4.0), read from a git
clone of that repository: v1.1 train (answerable questions with their answers) and v2.0 dev (with the
questions written to be unanswerable from their own paragraph). The pages hold every paragraph with its
questions, ids and answers; nothing is downloaded and nothing of it is stored in this project.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

#: Where each release's pages live in the explorer's history (the v1.1 train pages left the gh-pages tip).
RELEASES = {"v1.1-train": ("13f82e35b9a1fb9173f863b35f5675030646571e", "explore/1.1/train"),
            "v2.0-dev": ("cfe983f480dbff178a5bcd5730c2fe4068dc597b", "explore/v2.0/dev")}


@dataclass
class Question:
    """One SQuAD question: its id (empty in the v1.1 train pages), text, answers and whether it is unanswerable."""
    id: str
    text: str
    answers: list[str]
    impossible: bool


@dataclass
class Paragraph:
    """One paragraph of an article with the questions written against it."""
    text: str
    questions: list[Question] = field(default_factory=list)


@dataclass
class Article:
    """One Wikipedia article of SQuAD: its title and paragraphs."""
    title: str
    paragraphs: list[Paragraph]


@cache
def read_release(clone: Path, release: str) -> list[Article]:
    """Every article of `release` ("v1.1-train" or "v2.0-dev") in the explorer clone at `clone` (a git
    directory or work tree), parsed once per process (the recipe reads v2.0 dev three times). Read only."""
    commit, folder = RELEASES[release]
    names = _git(clone, "ls-tree", "--name-only", f"{commit}:{folder}").split("\n")
    return [parse_page(_git(clone, "show", f"{commit}:{folder}/{name}"))
            for name in sorted(names) if name.endswith(".html") and name != "index.html"]


def parse_page(html: str) -> Article:
    """An article page's title, paragraphs, questions and answers."""
    from lxml import html as lxml_html

    root = lxml_html.fromstring(html)
    title = (root.xpath('string(//h1[@id="title"])') or "").strip()
    paragraphs = []
    for wrap in root.xpath('//div[@class="para-wrap"]'):
        text = " ".join(wrap.xpath("string(.//pre)").split())
        paragraph = Paragraph(text)
        for qa in wrap.xpath('.//div[@class="qa-wrap"]'):
            answers = list(dict.fromkeys(" ".join(a.text_content().split())
                                         for a in qa.xpath('.//span[@class="answer"]')))
            paragraph.questions.append(Question(
                qa.get("data-id") or "", " ".join(qa.xpath('string(.//strong[@class="question"])').split()),
                [a for a in answers if a], bool(qa.xpath('.//span[@class="no-answer"]'))))
        if text:
            paragraphs.append(paragraph)
    return Article(title.replace("_", " "), paragraphs)


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True,
                          text=True).stdout.strip()
