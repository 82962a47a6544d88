"""docs/api.md runs as written: each ```python block, in order in one namespace from the
repository's root, prints exactly the ```text block that follows it."""

from __future__ import annotations

import contextlib
import io
import os
import re

from tests.conftest import ROOT

DOC = os.path.join(ROOT, "docs", "api.md")
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def examples(text: str) -> list[tuple[str, str | None]]:
    """(code, shown output or None) for each python block, the output being a text block that
    directly follows it."""
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in _BLOCK.finditer(text)]
    found = []
    for i, (lang, body, _start, end) in enumerate(blocks):
        if lang != "python":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        shown = (following[1] if following and following[0] == "text"
                 and not text[end:following[2]].strip() else None)
        found.append((body, shown))
    return found


def test_the_parser_pairs_code_with_its_output():
    text = "```python\nprint(1)\n```\n\n```text\n1\n```\nprose\n```python\nx = 2\n```\n"
    assert examples(text) == [("print(1)\n", "1\n"), ("x = 2\n", None)]


def test_the_api_doc_examples_print_what_the_doc_shows(monkeypatch):
    with open(DOC, encoding="utf-8") as fh:
        found = examples(fh.read())
    assert len(found) >= 3 and all(shown for _, shown in found)
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for code, shown in found:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, DOC, "exec"), namespace)  # noqa: S102 - the doc's own example
        assert out.getvalue() == shown, code
