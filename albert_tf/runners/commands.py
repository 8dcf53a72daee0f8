"""The runners' console commands (albert-pretrain, albert-classify, albert-squad, albert-ner,
albert-embedding; `python run_*.py` calls the same): argv parsed once into a settings value,
then the driver (or pretraining's run); the process' exit code."""

from __future__ import annotations

import sys


def _fine_tune(name: str, argv=None) -> None:
    import importlib

    from albert_tf.runners.driver import main
    from albert_tf.runners.families import FAMILIES

    family = FAMILIES[name]
    doc = importlib.import_module(type(family).__module__).__doc__
    sys.exit(main(family, doc, argv))


def pretrain(argv=None) -> None:
    from albert_tf.runners.pretraining import main

    sys.exit(main(argv))


def classify(argv=None) -> None:
    _fine_tune("classifier", argv)


def squad(argv=None) -> None:
    _fine_tune("squad", argv)


def ner(argv=None) -> None:
    _fine_tune("ner", argv)


def embedding(argv=None) -> None:
    _fine_tune("embedding", argv)
