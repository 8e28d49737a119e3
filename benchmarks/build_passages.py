"""Build a million distinct English passages offline, for ``bench … --corpus``.

How the 1,002,000-passage corpus of ``docs/results/ann-real-text.md`` and the README's 1M
real-text rows was made (reproducible in kind, not byte for byte: the sentences depend on the
package versions). First download the wheels, without installing them::

    pip download --no-deps -d wheels botocore google-api-python-client sympy django scipy \\
        pandas matplotlib scikit-learn statsmodels astropy networkx sqlalchemy \\
        azure-mgmt-network azure-mgmt-compute azure-mgmt-web azure-mgmt-sql
    python benchmarks/build_passages.py wheels passages.txt

Sources: the ``documentation`` / ``description`` strings of botocore's service models and
Google's discovery documents (HTML stripped), the docstrings of every ``.py`` file in the
other wheels, and those of this interpreter's standard library and installed packages.
Passages: sentences of 40–300 characters starting with a capitalised word, each kept once;
then two and three consecutive sentences of one document (≤ 400 / 500 characters) until there
are ``--count`` of them, shuffled with seed 0. A NUL character becomes the four characters
``\\x00`` (the stores refuse NUL; docstrings quote it).
"""

from __future__ import annotations

import argparse
import ast
import glob
import gzip
import html
import json
import random
import re
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
TAG = re.compile(r"<[^>]+>")
CAPITALISED = re.compile(r"^[A-Z][a-z]")


def sentences(text: str) -> list[str]:
    """The text's sentences of 40–300 characters that start with a capitalised word."""
    flat = " ".join(html.unescape(TAG.sub(" ", text)).replace("\x00", "\\x00").split())
    return [s for s in SENTENCE_END.split(flat) if 40 <= len(s) <= 300 and CAPITALISED.match(s)]


def json_docs(value: object) -> Iterator[list[str]]:
    """Sentences of every ``documentation`` / ``description`` string in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("documentation", "description") and isinstance(item, str):
                yield sentences(item)
            else:
                yield from json_docs(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_docs(item)


def docstrings(source: str) -> Iterator[list[str]]:
    """Sentences of every module, class and function docstring of a Python source."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        doc = ast.get_docstring(node) if isinstance(node, kinds) else None
        if doc:
            yield sentences(doc)


def wheel_docs(path: str) -> Iterator[list[str]]:
    """Documents of one wheel: service-model / discovery JSON, and ``.py`` docstrings."""
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            if name.endswith(("service-2.json", "service-2.json.gz")) or (
                "discovery_cache" in name and name.endswith(".json")
            ):
                raw = wheel.read(name)
                try:
                    yield from json_docs(
                        json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw)
                    )
                except ValueError:
                    continue
            elif name.endswith(".py"):
                yield from docstrings(wheel.read(name).decode("utf-8", "replace"))


def installed_docs() -> Iterator[list[str]]:
    """Docstrings of the standard library and the installed packages."""
    for root in (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]):
        for path in sorted(glob.glob(f"{root}/**/*.py", recursive=True)):
            try:
                yield from docstrings(Path(path).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue


def passages(documents: list[list[str]], count: int) -> list[str]:
    """Distinct sentences first, then runs of 2 and 3 consecutive ones, ``count`` in all."""
    seen: set[str] = set()
    singles = [s for doc in documents for s in doc if not (s in seen or seen.add(s))]
    runs = []
    for width, limit in ((2, 400), (3, 500)):
        for doc in documents:
            for i in range(len(doc) - width + 1):
                text = " ".join(doc[i : i + width])
                if len(text) <= limit and text not in seen:
                    seen.add(text)
                    runs.append(text)
    rng = random.Random(0)
    rng.shuffle(singles)
    rng.shuffle(runs)
    out = singles[:count] + runs[: max(0, count - len(singles))]
    rng.shuffle(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", help="folder of downloaded wheels")
    parser.add_argument("out", help="output file, one passage per line")
    parser.add_argument("--count", type=int, default=1_002_000)
    args = parser.parse_args()
    documents: list[list[str]] = []
    for wheel in sorted(glob.glob(f"{args.wheels}/*.whl")):
        documents.extend(wheel_docs(wheel))
    documents.extend(installed_docs())
    out = passages(documents, args.count)
    Path(args.out).write_text("\n".join(out), encoding="utf-8")
    print(f"{len(out)} passages → {args.out}")


if __name__ == "__main__":
    main()
