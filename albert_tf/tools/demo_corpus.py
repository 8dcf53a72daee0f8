"""The demo's corpus: docstrings of the Python standard library (text every machine with
Python already has, so `make demo` runs offline), one document per module, class or
function, written in the official pretraining input format."""

from __future__ import annotations

import importlib
import inspect

# Standard-library modules whose docstrings make the demo corpus (fixed order: reproducible).
STDLIB_MODULES = (
    "argparse",
    "ast",
    "asyncio",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "configparser",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fractions",
    "functools",
    "gettext",
    "gzip",
    "hashlib",
    "heapq",
    "html",
    "http.client",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "mailbox",
    "math",
    "multiprocessing",
    "optparse",
    "os",
    "pathlib",
    "pickle",
    "pprint",
    "pydoc",
    "queue",
    "random",
    "re",
    "shutil",
    "socket",
    "sqlite3",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "tkinter",
    "tokenize",
    "traceback",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "wave",
    "xml.dom.minidom",
    "zipfile",
)


def stdlib_documents() -> list[list[str]]:
    """Docstrings of STDLIB_MODULES, their classes and functions: one document each, as a
    list of its paragraphs (whitespace collapsed, short ones dropped)."""
    return [paragraphs for _, paragraphs in stdlib_module_documents()]


def stdlib_module_documents() -> list[tuple[str, list[str]]]:
    """(module name, paragraphs) for every document of `stdlib_documents()`, in order."""
    documents, seen = [], set()
    for name in STDLIB_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        objects = [module] + [
            obj
            for _, obj in sorted(vars(module).items())
            if inspect.isclass(obj) or inspect.isfunction(obj)
        ]
        for obj in objects:
            doc = inspect.getdoc(obj)
            if not doc or doc in seen:
                continue
            seen.add(doc)
            paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
            paragraphs = [p for p in paragraphs if len(p) > 40]
            if paragraphs:
                documents.append((name, paragraphs))
    return documents


def stdlib_docstrings() -> list[str]:
    """Every paragraph of `stdlib_documents()`, in order."""
    return [p for doc in stdlib_documents() for p in doc]


def write_corpus(documents: list[list[str]], path: str) -> None:
    """The official input format: a paragraph a line, a blank line between documents."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(doc) for doc in documents) + "\n")
