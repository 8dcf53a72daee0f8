"""`make demo`: the project end to end on text this machine already has, offline.

Today (the model library): parameter counts of every preset and sharing mode, a
SentencePiece vocabulary trained with ALBERT's recipe on the Python standard library's
docstrings, a sentence pair tokenized by `AlbertTokenizer` (checked against the in-graph
tokenizer) as `[CLS] A [SEP] B [SEP]` with a `[MASK]`, a
forward pass of the pretraining model, and a checkpoint save → load round trip. Weights are
random here (pretraining comes with run_pretraining.py), so predictions are not meaningful;
shapes, counts and the round trip are.

    python -m albert_tf.demo [--output_dir out/demo]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Standard-library modules whose docstrings make the demo corpus (fixed order: reproducible).
STDLIB_MODULES = (
    "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "collections", "configparser",
    "contextlib", "csv", "dataclasses", "datetime", "decimal", "difflib", "email", "enum",
    "fractions", "functools", "gettext", "gzip", "hashlib", "heapq", "html", "http.client",
    "inspect", "io", "ipaddress", "itertools", "json", "logging", "mailbox", "math",
    "multiprocessing", "optparse", "os", "pathlib", "pickle", "pprint", "pydoc", "queue",
    "random", "re", "shutil", "socket", "sqlite3", "statistics", "string", "subprocess",
    "tarfile", "tempfile", "textwrap", "threading", "tkinter", "tokenize", "traceback",
    "typing", "unittest", "urllib.parse", "uuid", "wave", "xml.dom.minidom", "zipfile",
)


def stdlib_docstrings() -> list[str]:
    """Paragraphs of the docstrings of STDLIB_MODULES, their classes and functions."""
    paragraphs, seen = [], set()
    for name in STDLIB_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        objects = [module] + [obj for _, obj in sorted(vars(module).items())
                              if inspect.isclass(obj) or inspect.isfunction(obj)]
        for obj in objects:
            doc = inspect.getdoc(obj)
            if not doc or doc in seen:
                continue
            seen.add(doc)
            for para in doc.split("\n\n"):
                text = " ".join(para.split())
                if len(text) > 40:
                    paragraphs.append(text)
    return paragraphs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="ALBERT demo (offline)")
    p.add_argument("--output_dir", default="out/demo")
    args = p.parse_args(argv)
    os.makedirs(args.output_dir, exist_ok=True)
    start = time.time()

    import numpy as np
    import keras
    from albert_tf import (AlbertConfig, AlbertEncoder, AlbertPretrainer, load_checkpoint,
                           save_checkpoint)
    from albert_tf.encoder import count_parameters

    keras.utils.set_random_seed(12345)

    print("== Parameters (backbone incl. pooler; + MLM/SOP heads) ==")
    print(f"{'preset':<9}" + "".join(f"{m:>14}" for m in ("all", "attention", "ffn", "none"))
          + f"{'all + heads':>14}")
    for name in ("base", "large", "xlarge", "xxlarge"):
        config = AlbertConfig.preset(name)
        counts = [count_parameters(config.replace(sharing=m))
                  for m in ("all", "attention", "ffn", "none")]
        print(f"{name:<9}" + "".join(f"{c:>14,}" for c in counts)
              + f"{count_parameters(config, heads=True):>14,}")
    base = AlbertEncoder(AlbertConfig.preset("base"))
    base.build()
    print(f"built ALBERT-base: count_params() = {base.count_params():,} "
          f"(paper: 12M; BERT-base: 108M)")
    del base

    print("\n== Vocabulary: SentencePiece on the Python standard library's docstrings ==")
    paragraphs = stdlib_docstrings()
    # ALBERT's recipe (data_pipeline.train_tokenizer) on the paragraphs, one a line.
    from data_pipeline.train_tokenizer import train_sentencepiece
    corpus = os.path.join(args.output_dir, "stdlib_spm.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(paragraphs) + "\n")
    model_file = train_sentencepiece([corpus], os.path.join(args.output_dir, "stdlib_spm"),
                                     vocab_size=2000, num_threads=1)["model_file"]
    from data_pipeline.tokenization import AlbertTokenizer
    tok = AlbertTokenizer(model_file, do_lower_case=True)
    print(f"{len(paragraphs)} paragraphs, {tok.vocab_size} pieces -> {model_file}")
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)

    text_a = "Return a new list containing all items from the iterable in ascending order."
    text_b = "A custom key function can be supplied to customize the sort order."
    a, b = tok.encode(text_a), tok.encode(text_b)
    import tensorflow as tf
    in_graph = tok.graph_tokenizer()(tf.constant([text_a, text_b])).to_list()
    print(f"in-graph (tensorflow-text) ids equal the Python tokenizer's: {in_graph == [a, b]}")
    ids = [tok.cls_id] + a + [tok.sep_id] + b + [tok.sep_id]
    segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    masked_at = 1 + len(a) // 2  # a piece in the middle of sentence A
    original = ids[masked_at]
    ids[masked_at] = tok.mask_id
    seq_len = 64
    pad = seq_len - len(ids)
    batch = {"input_ids": np.array([ids + [0] * pad], np.int32),
             "input_mask": np.array([[1] * len(ids) + [0] * pad], np.int32),
             "segment_ids": np.array([segments + [0] * pad], np.int32),
             "masked_lm_positions": np.array([[masked_at]], np.int32)}
    print("pieces:", " ".join(tok.id_to_piece(i) for i in ids))

    print("\n== Forward pass: a small ALBERT (E=128, H=256, 4 layers sharing one block) ==")
    config = AlbertConfig(vocab_size=tok.vocab_size, embedding_size=128, hidden_size=256,
                          num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                          max_position_embeddings=seq_len)
    model = AlbertPretrainer(config)
    out = model(batch)
    for key, value in out.items():
        print(f"{key:<16} {str(tuple(value.shape)):<16} {value.dtype.name}")
    top = np.argsort(-out["mlm_logits"].numpy()[0, 0])[:5]
    print(f"[MASK] was {tok.id_to_piece(original)!r}; top-5 of the untrained model: "
          f"{[tok.id_to_piece(int(i)) for i in top]}")
    print(f"SOP probabilities (in order, swapped): "
          f"{[round(float(p), 3) for p in keras.ops.softmax(out['sop_logits'])[0].numpy()]}")

    print("\n== Checkpoint round trip ==")
    ckpt_dir = os.path.join(args.output_dir, "checkpoint")
    prefix = save_checkpoint(model, ckpt_dir)
    encoder = AlbertEncoder(AlbertConfig.from_json_file(os.path.join(ckpt_dir,
                                                                     "albert_config.json")))
    report = load_checkpoint(encoder, ckpt_dir)
    again = encoder(batch)["sequence_output"].numpy()
    diff = float(np.max(np.abs(again - out["sequence_output"].numpy())))
    print(f"saved {prefix}; {report}; max |Δ| sequence_output = {diff:.1e}")
    if diff > 1e-6:
        print("error: the reloaded encoder differs", file=sys.stderr)
        return 1
    print(f"\ndemo finished in {time.time() - start:.0f}s; artifacts in {args.output_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
