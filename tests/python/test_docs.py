"""Runs every ```python block of docs/python-api.md, in order, in one namespace: the page's
examples must stay runnable (their asserts compare with values stated in the text)."""
import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python-api.md")


def test_python_api_doc_examples_run():
    text = open(DOC, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 8
    env = {"__name__": "docs_example"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC}:block{i}", "exec"), env)
