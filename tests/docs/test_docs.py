"""The README is a map: short, its links resolve, and its picture of the layers is the contract
import-linter checks."""
import os
import re
import tomllib

from helpers import REPO

README = os.path.join(REPO, "README.md")
MARKER = "<!-- layers"


def documents() -> list[str]:
    docs = os.path.join(REPO, "docs")
    return [README] + sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))


def relative_links(text: str) -> list[str]:
    """Markdown link targets that are paths in the repository (not URLs, not in-page anchors)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def picture(text: str) -> list[list[str]]:
    """The README's layer picture: the code block after the marker, one line per layer, wings
    separated by |."""
    after = text[text.index(MARKER):]
    block = re.search(r"```\n(.*?)```", after, re.S).group(1)
    return [sorted(w.strip() for w in line.split("|")) for line in block.strip().splitlines()]


def contract() -> list[list[str]]:
    """The first import-linter contract's layers; siblings may be written a | b or a : b."""
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as handle:
        layers = tomllib.load(handle)["tool"]["importlinter"]["contracts"][0]["layers"]
    return [sorted(w.strip().removeprefix("timefoil.") for w in re.split(r"[|:]", layer)) for layer in layers]


def test_the_link_and_picture_readers_work_on_examples():
    text = "[a](docs/x.md) [b](https://e.org) [c](#top) [d](../examples/p#k)\n<!-- layers -->\n```\na\nb | c\n```\n"
    assert relative_links(text) == ["docs/x.md", "../examples/p"]
    assert picture(text) == [["a"], ["b", "c"]]


def test_the_readme_is_a_short_map_with_guides():
    with open(README, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert len(lines) <= 300
    assert len(documents()) - 1 >= 4


def test_every_relative_link_resolves():
    broken = []
    for path in documents():
        with open(path, encoding="utf-8") as handle:
            for target in relative_links(handle.read()):
                if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                    broken.append(f"{os.path.relpath(path, REPO)} -> {target}")
    assert broken == []


def test_the_readmes_layer_picture_is_the_import_contract():
    with open(README, encoding="utf-8") as handle:
        assert picture(handle.read()) == contract()
