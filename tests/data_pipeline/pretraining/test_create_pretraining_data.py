"""create_pretraining_data: reproducible, faithful to the official recipe (with its defects
fixed), pure SOP, official record layout, clear errors on bad input, safe against SIGKILL,
resumable. Runs on real text from ../shared/data (skipped without it)."""

import dataclasses
import glob
import gzip
import hashlib
import json
import os
import random
import signal
import time

import numpy as np
import pytest

from data_pipeline import records as features
from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.local_writer import create_pretraining_data
from data_pipeline.records import read_records
from tests.support.harness import SHARED_DATA, Cli, run_cli
from tests.support.in_process import run_command

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SEQ, PRED = 128, 20
P_NGRAM = np.array([6, 3, 2]) / 11


# --- helpers ----------------------------------------------------------------------------------


def _need_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


def spm_model():
    return str(_need_data() / "spm" / "de-30k-clean.model")


def real_corpus():
    """WikiText-2 valid (one paragraph a line) + the 20th/21st-century inaugural addresses."""
    d = _need_data() / "corpus"
    return f"{d}/wikitext-2/valid.txt,{d}/en_speeches/inaugural/19*.txt"


def config(input_file, output_dir, **kw):
    args = dict(
        input_file=input_file,
        output_dir=str(output_dir),
        spm_model_file=spm_model(),
        max_seq_length=SEQ,
        max_predictions_per_seq=PRED,
        dupe_factor=1,
        num_output_shards=4,
    )
    args.update(kw)
    return DataConfig.from_flags(**args)


def with_flags(cfg: DataConfig, **changes) -> DataConfig:
    """`cfg` with some flags' values changed (the tokenizer's too: `--spm_model_file`,
    `--vocab_file`, `--do_lower_case`, `--keep_accents`), made as the command line makes it."""
    return DataConfig.from_flags(**{**cfg.settings(), **changes})


def cli_args(cfg: DataConfig, **extra):
    """The command line equal to `cfg` (every flag of its settings that is set) plus `extra`
    flags."""
    args = []
    for name, value in cfg.settings().items():
        if value is None:  # an unset flag (the tokenizer file not chosen)
            continue
        if isinstance(value, bool):
            args.append(f"--{'' if value else 'no'}{name}")
        else:
            args.append(f"--{name}={value}")
    args += [f"--{k}={v}" for k, v in extra.items()]
    return args


TOOL = ("-m", "data_pipeline.pretraining.create_pretraining_data")


def run_tool(args, timeout=300):
    """create_pretraining_data with `args`: in this process (tests.support.in_process), or,
    when --num_workers > 1 asks for forked worker processes (which a test process holding
    TensorFlow's threads must not fork), in a process of its own (`timeout` seconds)."""
    forks = any(str(a).startswith("--num_workers=") and str(a) != "--num_workers=1" for a in args)
    return run_cli(*TOOL, *args, timeout=timeout) if forks else run_command(*TOOL, *args)


def make(cfg, **kw):
    return create_pretraining_data(cfg, progress_every=1e9, **kw)


def digests(out_dir):
    """sha256 of every output file (shards, per-shard stats, meta_data.json)."""
    out = {}
    for path in sorted(
        glob.glob(f"{out_dir}/*.tfrecord")
        + glob.glob(f"{out_dir}/stats/*.json")
        + glob.glob(f"{out_dir}/meta_data.json")
    ):
        with open(path, "rb") as f:
            out[os.path.relpath(path, out_dir)] = hashlib.sha256(f.read()).hexdigest()
    return out


def raw_records(out_dir):
    return [r for p in sorted(glob.glob(f"{out_dir}/*.tfrecord")) for r in read_records(p)]


def load(out_dir, seq=SEQ, pred=PRED, dynamic=False):
    """All records of a run (shard order), parsed by TensorFlow, as numpy arrays."""
    import tensorflow as tf

    recs = raw_records(out_dir)
    parsed = tf.io.parse_example(
        tf.constant(recs, tf.string), features.parse_spec(seq, pred, dynamic)
    )
    return {k: v.numpy() for k, v in parsed.items()}


def meta_of(out_dir):
    with open(os.path.join(out_dir, "meta_data.json")) as f:
        return json.load(f)


def restore(r):
    """input_ids with every masked position set back to its label."""
    ids = r["input_ids"].copy()
    rows, cols = np.nonzero(r["masked_lm_weights"])
    ids[rows, r["masked_lm_positions"][rows, cols]] = r["masked_lm_ids"][rows, cols]
    return ids


def masked_matrix(r):
    m = np.zeros(r["input_ids"].shape, bool)
    rows, cols = np.nonzero(r["masked_lm_weights"])
    m[rows, r["masked_lm_positions"][rows, cols]] = True
    return m


def binomial_tol(p, n, sds=4.0):
    return sds * np.sqrt(p * (1 - p) / max(n, 1))


# --- real text: one static and one dynamic run -------------------------------------------------


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("real")
    static = config(real_corpus(), base / "static", split_sentences=True)
    dynamic = dataclasses.replace(static, output_dir=str(base / "dynamic"), dynamic_masking=True)
    make(static)
    make(dynamic)
    return dict(
        static=static.output_dir,
        dynamic=dynamic.output_dir,
        r=load(static.output_dir),
        d=load(dynamic.output_dir, dynamic=True),
        meta=meta_of(static.output_dir),
        dmeta=meta_of(dynamic.output_dir),
    )


def test_real_instance_structure(real_run):
    for key in ("r", "d"):
        r = real_run[key]
        ids = restore(r) if key == "r" else r["input_ids"]
        seg, mask = r["segment_ids"], r["input_mask"]
        count = len(ids)
        assert count > 3000
        n = mask.sum(axis=1)
        assert ids.shape == (count, SEQ) and (n <= SEQ).all() and (n >= 5).all()
        assert (mask == (np.arange(SEQ) < n[:, None])).all()  # 1…1 0…0
        assert (ids[mask == 0] == PAD).all() and (seg[mask == 0] == 0).all()
        assert (ids[:, 0] == CLS).all()
        is_sep = ids == SEP
        assert (is_sep.sum(axis=1) == 2).all()  # [CLS] A [SEP] B [SEP]
        first = is_sep.argmax(axis=1)
        assert (ids[np.arange(count), n - 1] == SEP).all()
        assert (first >= 2).all() and (n - 1 - first >= 2).all()  # A and B non-empty
        expect_seg = (np.arange(SEQ) > first[:, None]) & (mask == 1)
        np.testing.assert_array_equal(seg, expect_seg.astype(seg.dtype))
        assert not np.isin(ids[:, 1:][mask[:, 1:] == 1], [PAD, CLS, MASK]).any()
        tb = r["token_boundary"]
        assert (tb[mask == 0] == 0).all() and (tb[is_sep] == 1).all() and (tb[:, 0] == 1).all()
        # Most instances are full length (targets are max_num_tokens 90% of the time).
        assert np.mean(n == SEQ) > 0.5


def test_real_meta_matches_records(real_run):
    r, meta = real_run["r"], real_run["meta"]
    w = r["masked_lm_weights"]
    labels = r["next_sentence_labels"][:, 0]
    assert meta["instances"] == len(labels) == sum(s["instances"] for s in meta["shards"])
    assert meta["sentence_order_labels"]["0"] == int((labels == 0).sum())
    assert meta["sentence_order_labels"]["1"] == int((labels == 1).sum())
    assert meta["instance_creation"]["tokens"] == int(r["input_mask"].sum())
    assert meta["masking"]["masked_tokens"] == int(w.sum())
    m = masked_matrix(r)
    at = r["input_ids"][m]
    assert meta["masking"]["replacements"]["mask"] == int((at == MASK).sum())
    # Masked words counted from the records (word starts are token_boundary) equal the
    # n-gram units of meta_data.json weighted by n.
    units = meta["masking"]["ngram_units"]
    masked_words = int((m & (r["token_boundary"] == 1)).sum())
    assert masked_words == sum(int(n) * c for n, c in units.items())
    assert meta["sentence_order"] == "sop" and meta["instance_creation"]["nsp_random_segments"] == 0
    assert meta["features"] == features.feature_lengths(SEQ, PRED)
    dmeta = real_run["dmeta"]
    assert "masking" not in dmeta and dmeta["instances"] == meta["instances"]
    assert set(real_run["d"]) == set(features.feature_lengths(SEQ, PRED, True))


def test_real_ngram_mix(real_run):
    meta = real_run["meta"]
    units = np.array([meta["masking"]["ngram_units"][k] for k in ("1", "2", "3")], float)
    assert units.sum() > 10000
    np.testing.assert_allclose(units / units.sum(), P_NGRAM, atol=0.015)
    np.testing.assert_allclose(meta["masking"]["ngram_fraction"], units / units.sum())


def test_real_masked_fraction(real_run):
    r, meta = real_run["r"], real_run["meta"]
    n = r["input_mask"].sum(axis=1)
    budget = np.minimum(PRED, np.maximum(1, np.round(n * 0.15)))
    masked = r["masked_lm_weights"].sum(axis=1)
    assert (masked <= budget).all()
    # Whole words only: an instance gets no mask exactly when every word of it is longer
    # than its budget (e.g. 12 tokens, budget 2, words of 3 pieces); rare.
    ids = restore(r)
    for i in np.flatnonzero(masked == 0):
        starts = np.flatnonzero(r["token_boundary"][i, : n[i]]).tolist() + [int(n[i])]
        sizes = [b - a for a, b in zip(starts, starts[1:]) if ids[i, a] not in (CLS, SEP)]
        assert min(sizes) > budget[i], (i, sizes, budget[i])
    assert (masked == 0).mean() < 0.001
    assert masked.sum() >= 0.995 * budget.sum()
    frac = masked.sum() / n.sum()
    assert 0.14 <= frac <= 0.155, frac
    assert meta["masking"]["masked_fraction"] == pytest.approx(frac)


def test_real_sop_labels_balanced(real_run):
    labels = real_run["r"]["next_sentence_labels"][:, 0]
    assert set(np.unique(labels)) == {0, 1}
    assert abs(labels.mean() - 0.5) <= 0.02


def test_real_positions_labels_and_replacements(real_run):
    r, meta = real_run["r"], real_run["meta"]
    w, pos, lab = r["masked_lm_weights"], r["masked_lm_positions"], r["masked_lm_ids"]
    n = r["input_mask"].sum(axis=1)
    ids = r["input_ids"]
    sep_first = (restore(r) == SEP).argmax(axis=1)
    for i in range(len(ids)):
        k = int(w[i].sum())
        assert (w[i, :k] == 1).all() and (w[i, k:] == 0).all()
        assert (pos[i, k:] == 0).all() and (lab[i, k:] == 0).all()
        p = pos[i, :k]
        assert (np.diff(p) > 0).all() and (p >= 1).all() and (p < n[i] - 1).all()
        assert sep_first[i] not in p
    valid = w == 1
    assert not np.isin(lab[valid], [PAD, CLS, SEP, MASK]).any()
    m = masked_matrix(r)
    at, orig = ids[m], restore(r)[m]
    is_mask, same = at == MASK, at == orig
    other = ~is_mask & ~same
    fractions = np.array([is_mask.mean(), other.mean(), same.mean()])
    np.testing.assert_allclose(fractions, [0.8, 0.1, 0.1], atol=0.02)
    assert not np.isin(at[other], [PAD, UNK, CLS, SEP, MASK]).any()
    rep = meta["masking"]["replacements"]
    assert rep["unchanged"] <= int(same.sum()) <= rep["unchanged"] + 5
    assert rep["random"] == int(other.sum()) + int(same.sum()) - rep["unchanged"]
    np.testing.assert_allclose(meta["masking"]["replacement_fraction"], fractions, atol=1e-3)


def test_real_labels_are_the_original_tokens(real_run):
    """Masking is the last draw of each part, so the dynamic-masking run (no masks) holds
    the same instances: putting the labels back into the static run gives them exactly."""
    r, d = real_run["r"], real_run["d"]
    np.testing.assert_array_equal(restore(r), d["input_ids"])
    for name in ("input_mask", "segment_ids", "token_boundary", "next_sentence_labels"):
        np.testing.assert_array_equal(r[name], d[name], err_msg=name)
    # And unmasked positions are untouched.
    m = masked_matrix(r)
    np.testing.assert_array_equal(r["input_ids"][~m], d["input_ids"][~m])


def test_real_whole_words_masked(real_run):
    r = real_run["r"]
    m = masked_matrix(r)
    tb = r["token_boundary"] == 1
    inside = r["input_mask"] == 1
    # A continuation piece (no boundary) belongs to the word of the piece before it: both
    # are masked or neither.
    cont = inside & ~tb
    cont[:, 0] = False
    left = np.roll(m, 1, axis=1)
    assert (m[cont] == left[cont]).all()
    assert cont.sum() > 10000 and (m & cont).sum() > 1000


def test_short_target_scopes(real_run, tmp_path):
    """short_seq_prob: per document and pass (official) draws once per document × pass;
    per instance makes the fraction of instances built from short targets ≈ the prob."""
    p = 0.1
    meta = real_run["meta"]
    ic, docs = meta["instance_creation"], meta["documents"]["documents"]
    assert ic["target_draws"] == docs * 1  # dupe_factor 1
    assert abs(ic["short_target_fraction"] - p) <= binomial_tol(p, ic["target_draws"])
    assert ic["short_target_fraction"] == ic["short_targets"] / ic["target_draws"]

    cfg = config(
        real_corpus(),
        tmp_path / "inst",
        split_sentences=True,
        short_seq_scope="instance",
        dupe_factor=2,
        dynamic_masking=True,
    )
    make(cfg)
    m = meta_of(cfg.output_dir)
    ic = m["instance_creation"]
    inst = m["instances"]
    assert ic["target_draws"] == (
        m["documents"]["documents"] * 2 + inst + ic["single_sentence_chunks_dropped"]
    )
    assert abs(ic["short_target_fraction"] - p) <= binomial_tol(p, ic["target_draws"])
    frac = ic["short_target_instances"] / inst
    assert abs(frac - p) <= binomial_tol(p, inst), frac
    assert inst > 1.5 * meta["instances"]  # two passes: more instances


# --- documents never mix: a corpus whose every token names its document and position ---------


@pytest.fixture(scope="module")
def marked_corpus(tmp_path_factory):
    """Documents of words that are single pieces of the model, each used once in the whole
    corpus, so each token id identifies (document, position)."""
    import re

    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(spm_model())
    words = []
    for i in range(5, tok.vocab_size):
        piece = tok.id_to_piece(i)
        if piece.startswith("\u2581") and re.fullmatch("[a-z]{3,}", piece[1:]):
            if tok.encode(piece[1:]) == [i]:
                words.append((i, piece[1:]))
    rnd = random.Random(0)
    rnd.shuffle(words)
    where = {}
    docs, k = [], 0
    kinds = ["multi"] * 30 + ["single"] * 6 + ["oneword"] * 4
    rnd.shuffle(kinds)
    for d, kind in enumerate(kinds):
        if kind == "multi":
            lengths = [rnd.randint(2, 12) for _ in range(rnd.randint(2, 10))]
            if d % 7 == 0:
                lengths[rnd.randrange(len(lengths))] = rnd.choice([35, 40])  # > 29 tokens
        elif kind == "single":
            lengths = [rnd.randint(3, 12)]
        else:
            lengths = [1]
        doc, pos = [], 0
        for n in lengths:
            sent = []
            for _ in range(n):
                i, w = words[k]
                k += 1
                where[i] = (d, pos)
                pos += 1
                sent.append(w)
            doc.append(" ".join(sent))
        docs.append(doc)
    path = tmp_path_factory.mktemp("marked") / "marked.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in docs) + "\n")
    return dict(path=str(path), where=where, kinds=kinds, docs=docs)


def _segments(ids, mask):
    n = int(mask.sum())
    seps = np.flatnonzero(ids[:n] == SEP)
    return ids[1 : seps[0]], ids[seps[0] + 1 : n - 1] if len(seps) > 1 else ids[:0], seps


def _locate(where, tokens):
    return np.array([where[int(t)] for t in tokens]).reshape(-1, 2)


def _marked_run(marked, tmp_path, **kw):
    cfg = config(
        marked["path"],
        tmp_path / kw.get("sentence_order", "sop"),
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=3,
        num_output_shards=1,
        **kw,
    )
    make(cfg)
    return load(cfg.output_dir, 32, 5), meta_of(cfg.output_dir)


def test_segments_never_cross_documents_sop(marked_corpus, tmp_path):
    r, meta = _marked_run(marked_corpus, tmp_path)
    where, kinds = marked_corpus["where"], marked_corpus["kinds"]
    ids = restore(r)  # masked positions back to their labels: every token is known
    seen = {}
    for i in range(len(ids)):
        a, b, seps = _segments(ids[i], r["input_mask"][i])
        assert len(seps) == 2 and len(a) and len(b)
        la, lb = _locate(where, a), _locate(where, b)  # KeyError: a token of no document
        docs = set(la[:, 0]) | set(lb[:, 0])
        assert len(docs) == 1, (i, docs)
        # Each segment is a contiguous run of its document; the label says their order.
        assert (np.diff(la[:, 1]) == 1).all() and (np.diff(lb[:, 1]) == 1).all()
        label = r["next_sentence_labels"][i, 0]
        if label == 0:
            assert la[-1, 1] < lb[0, 1]
        else:
            assert lb[-1, 1] < la[0, 1]
        d = int(la[0, 0])
        seen.setdefault(d, []).append(np.sort(np.r_[la[:, 1], lb[:, 1]]))
    ic = meta["instance_creation"]
    for d, kind in enumerate(kinds):
        if kind == "oneword":
            assert d not in seen  # dropped: a one-word sentence has no inner word boundary
        elif kind == "single":
            # Pure SOP: split inside the sentence, once per pass, covering all of it.
            assert len(seen[d]) == 3
            n = len(marked_corpus["docs"][d][0].split())
            for positions in seen[d]:
                np.testing.assert_array_equal(positions, np.arange(n))
    assert ic["single_sentence_chunks_dropped"] == 3 * kinds.count("oneword")
    assert ic["single_sentence_chunks_split"] >= 3 * kinds.count("single")
    assert ic["nsp_random_segments"] == 0
    assert meta["documents"]["long_sentences_split"] > 0
    assert ic["truncated_tokens"] > 0
    assert abs(meta["sentence_order_labels"]["fraction_1"] - 0.5) < 0.1


def test_sentence_order_none_has_one_segment(marked_corpus, tmp_path):
    r, meta = _marked_run(marked_corpus, tmp_path, sentence_order="none")
    where = marked_corpus["where"]
    ids = restore(r)
    assert (r["segment_ids"] == 0).all()
    assert (r["next_sentence_labels"] == 0).all()
    for i in range(len(ids)):
        a, b, seps = _segments(ids[i], r["input_mask"][i])
        assert len(seps) == 1 and seps[0] == r["input_mask"][i].sum() - 1
        la = _locate(where, a)
        assert len(set(la[:, 0])) == 1 and (np.diff(la[:, 1]) == 1).all()
    assert meta["instance_creation"]["nsp_random_segments"] == 0


def test_sentence_order_nsp_uses_random_documents(marked_corpus, tmp_path):
    r, meta = _marked_run(marked_corpus, tmp_path, sentence_order="nsp")
    where = marked_corpus["where"]
    ids = restore(r)
    labels = r["next_sentence_labels"][:, 0]
    for i in range(len(ids)):
        a, b, _ = _segments(ids[i], r["input_mask"][i])
        la, lb = _locate(where, a), _locate(where, b)
        assert len(set(la[:, 0])) == 1 and len(set(lb[:, 0])) == 1
        assert (np.diff(la[:, 1]) == 1).all() and (np.diff(lb[:, 1]) == 1).all()
        if labels[i] == 0:
            assert la[0, 0] == lb[0, 0] and la[-1, 1] < lb[0, 1]
        else:
            assert la[0, 0] != lb[0, 0]  # B from another document
    ic = meta["instance_creation"]
    assert ic["nsp_random_segments"] > 0
    assert ic["nsp_random_segments"] == int((labels == 1).sum())
    assert ic["single_sentence_chunks_split"] == ic["single_sentence_chunks_dropped"] == 0


# --- reproducibility --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def repro(tmp_path_factory):
    base = tmp_path_factory.mktemp("repro")
    lines = (_need_data() / "corpus" / "wikitext-2" / "test.txt").read_text().splitlines()
    extra = base / "extra.jsonl.gz"
    paras = [line.strip() for line in lines[:600] if len(line.strip()) > 40]
    extra.write_bytes(
        gzip.compress(
            "".join(
                json.dumps({"text": "\n".join(paras[i : i + 3])}) + "\n"
                for i in range(0, len(paras), 3)
            ).encode()
        )
    )
    inputs = f"{_need_data()}/corpus/wikitext-2/valid.txt,{extra}"
    cfg = config(inputs, base / "w1", split_sentences=True, block_size=65536, dupe_factor=2)
    make(cfg)
    return dict(base=base, cfg=cfg)


def test_reproducible_across_workers_and_tasks(repro):
    cfg, base = repro["cfg"], repro["base"]
    ref = digests(cfg.output_dir)
    assert len([k for k in ref if k.endswith(".tfrecord")]) == 4 and "meta_data.json" in ref
    meta = meta_of(cfg.output_dir)
    assert len(meta["input"]["files"]) == 2 and meta["instances"] > 5000
    assert all(s["instances"] > 0 for s in meta["shards"])

    w2 = dataclasses.replace(cfg, output_dir=str(base / "w2"))
    out = run_tool(cli_args(w2, num_workers=2))
    assert out.returncode == 0, out.stderr
    assert digests(w2.output_dir) == {**ref}

    tasks = dataclasses.replace(cfg, output_dir=str(base / "tasks"))
    out = run_tool(cli_args(tasks, num_workers=1, num_tasks=2, task_index=0))
    assert out.returncode == 0, out.stderr
    assert "still missing" in out.stdout
    assert not os.path.exists(os.path.join(tasks.output_dir, "meta_data.json"))
    out = run_tool(cli_args(tasks, num_workers=1, num_tasks=2, task_index=1))
    assert out.returncode == 0, out.stderr
    assert digests(tasks.output_dir) == ref


def test_other_seed_other_masks(repro):
    cfg, base = repro["cfg"], repro["base"]
    other = dataclasses.replace(cfg, output_dir=str(base / "seed2"), random_seed=2)
    make(other)
    a, b = load(cfg.output_dir), load(other.output_dir)
    assert digests(cfg.output_dir)["meta_data.json"] != digests(other.output_dir)["meta_data.json"]
    if a["input_ids"].shape == b["input_ids"].shape:
        assert not np.array_equal(a["masked_lm_positions"], b["masked_lm_positions"])
        assert not np.array_equal(a["input_ids"], b["input_ids"])
    # Same statistics all the same.
    assert abs(a["next_sentence_labels"].mean() - b["next_sentence_labels"].mean()) < 0.03


def test_resume_of_complete_run_skips_everything(repro):
    cfg = repro["cfg"]
    before = digests(cfg.output_dir)
    shards = sorted(glob.glob(f"{cfg.output_dir}/*.tfrecord"))
    mtimes = [os.stat(p).st_mtime_ns for p in shards]
    out = run_tool(cli_args(cfg, num_workers=2))
    assert out.returncode == 0, out.stderr
    assert "4 of this task's 4 already complete, 0 to write" in out.stdout
    assert digests(cfg.output_dir) == before
    assert [os.stat(p).st_mtime_ns for p in shards] == mtimes


# --- records ----------------------------------------------------------------------------------


def official_spec(tf, seq, pred, token_boundary=True):
    spec = {
        "input_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([pred], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([pred], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([pred], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    if token_boundary:
        spec["token_boundary"] = tf.io.FixedLenFeature([seq], tf.int64)
    return spec


def _example(tf, values):
    feats = {}
    for name, v in values.items():
        v = np.asarray(v).reshape(-1)
        if v.dtype.kind == "f":
            feats[name] = tf.train.Feature(float_list=tf.train.FloatList(value=v.tolist()))
        else:
            feats[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=v.tolist()))
    return tf.train.Example(features=tf.train.Features(feature=feats))


def test_records_are_official_examples_byte_for_byte(real_run):
    import tensorflow as tf

    spec = official_spec(tf, SEQ, PRED)
    ours = features.parse_spec(SEQ, PRED)
    assert set(ours) == set(spec)
    for name in spec:
        assert (ours[name].shape, ours[name].dtype) == (spec[name].shape, spec[name].dtype)
    recs = raw_records(real_run["static"])
    for i in list(range(40)) + [len(recs) - 1]:
        values = {k: v.numpy() for k, v in tf.io.parse_single_example(recs[i], spec).items()}
        assert _example(tf, values).SerializeToString(deterministic=True) == recs[i]
    dspec = {k: v for k, v in spec.items() if not k.startswith("masked_lm")}
    for rec in raw_records(real_run["dynamic"])[:20]:
        values = {k: v.numpy() for k, v in tf.io.parse_single_example(rec, dspec).items()}
        assert _example(tf, values).SerializeToString(deterministic=True) == rec
    # Ids >= 2**14 take 3-byte varints: the real vocabulary exercises them.
    assert real_run["r"]["input_ids"].max() >= 1 << 14


def test_official_layout_record_reads_back(tmp_path):
    """A record as the official tool wrote it (no token_boundary), via TFRecordWriter."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    path = str(tmp_path / "official.tfrecord")
    rows = []
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(3):
            values = {
                "input_ids": rng.integers(0, 30000, SEQ),
                "input_mask": np.r_[np.ones(100, int), np.zeros(SEQ - 100, int)],
                "segment_ids": np.r_[np.zeros(50, int), np.ones(78, int)],
                "masked_lm_positions": np.sort(rng.choice(100, PRED, replace=False)),
                "masked_lm_ids": rng.integers(5, 30000, PRED),
                "masked_lm_weights": np.r_[np.ones(15), np.zeros(5)].astype(np.float32),
                "next_sentence_labels": [int(rng.integers(2))],
            }
            rows.append(values)
            w.write(_example(tf, values).SerializeToString())
    assert len(list(read_records(path))) == 3  # TensorFlow's framing and CRCs check out
    spec = features.parse_spec(SEQ, PRED, with_token_boundary=False)
    assert "token_boundary" not in spec
    got = next(
        iter(tf.data.TFRecordDataset(path).batch(3).map(lambda x: tf.io.parse_example(x, spec)))
    )
    for name in spec:
        np.testing.assert_array_equal(
            got[name].numpy(), np.stack([np.asarray(r[name]) for r in rows]), name
        )


def test_encode_examples_equals_protobuf_on_edge_values():
    import tensorflow as tf

    values = {
        "a": np.array(
            [
                [0, 127, 128, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 35) - 1],
                [1, 2, 3, 4, 5, 6, 7, 8],
            ],
            np.int64,
        ),
        "b": np.array([[0.0, 1.0, -2.5, 1e-30], [3.0, 0.0, 0.0, 0.0]], np.float32),
        "c": np.zeros((2, 0), np.int64),
        "d": np.zeros((2, 0), np.float32),
    }
    encoded = features.encode_examples(values)
    for r in range(2):
        ex = _example(tf, {k: v[r] for k, v in values.items()})
        assert encoded[r] == ex.SerializeToString(deterministic=True)


# --- bad input, through the command line ------------------------------------------------------


def test_the_command_line_is_the_configs_fields(tmp_path):
    """The command's flags are DataConfig's fields (its DataSettings), the tokenizer's
    official flags and the writer's, each declared once; a config's command line parses
    back into that config, and --random_next_sentence is --sentence_order nsp."""
    from data_pipeline.pretraining.create_pretraining_data import COMMAND, data_config
    from data_pipeline.pretraining.data_config import TOKENIZER_FLAGS

    names = [field.name for _, field, _ in COMMAND.fields()]
    fields = [f.name for f in dataclasses.fields(DataConfig) if f.name != "tokenizer"]
    assert len(names) == len(set(names)) and set(fields) | set(TOKENIZER_FLAGS) <= set(names)
    cfg = config(str(tmp_path / "a.txt"), tmp_path / "out", ngram=2, dynamic_masking=True)
    assert data_config(COMMAND.parse(["tool", *cli_args(cfg)])) == cfg
    official = COMMAND.parse(["tool", *cli_args(cfg), "--random_next_sentence"])
    assert data_config(official) == dataclasses.replace(cfg, sentence_order="nsp")


def _one_line_error(out, *needles):
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    err = out.stderr.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("error: ")
    for needle in needles:
        assert needle in err, err
    assert "Traceback" not in out.stderr + out.stdout
    return err


def test_cli_empty_or_blank_input_is_a_clear_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n\t\n\r\n\n")
    for i, inputs in enumerate((str(empty), str(blank), f"{empty},{blank}")):
        cfg = config(inputs, tmp_path / f"out{i}", num_output_shards=2)
        out = run_tool(cli_args(cfg, num_workers=1))
        n = inputs.count(",") + 1
        _one_line_error(
            out,
            "no instances were made",
            f"{n} input file(s) ({n} empty or blank)",
            "0 document(s)",
        )
        assert not os.path.exists(os.path.join(cfg.output_dir, "meta_data.json"))


def test_cli_empty_files_among_real_ones_are_counted(tmp_path):
    (tmp_path / "a-empty.txt").write_text("")
    (tmp_path / "b-blank.txt").write_text("\n\n  \n")
    (tmp_path / "c-real.txt").write_text(
        "The first sentence is here.\nA second one follows it.\nAnd a third.\n\n"
        "Another document starts.\nIt ends here.\n"
    )
    cfg = config(f"{tmp_path}/*.txt", tmp_path / "out", num_output_shards=1)
    out = run_tool(cli_args(cfg, num_workers=1))
    assert out.returncode == 0, out.stderr
    meta = meta_of(cfg.output_dir)
    assert meta["input"]["empty_files"] == 2 and len(meta["input"]["files"]) == 3
    assert meta["input"]["documents"] == 2 and meta["instances"] >= 2


def test_cli_invalid_utf8_is_replaced_and_counted(tmp_path):
    good = "A perfectly ordinary sentence number {}.\n"
    data = b"".join(
        good.format(i).encode() + (b"Broken \xff\xfe bytes here.\n" if i % 10 == 3 else b"")
        for i in range(30)
    )
    (tmp_path / "bad.txt").write_bytes(data + b"\n" + data)
    cfg = config(f"{tmp_path}/bad.txt", tmp_path / "out", num_output_shards=1)
    out = run_tool(cli_args(cfg, num_workers=1))
    assert out.returncode == 0, out.stderr
    meta = meta_of(cfg.output_dir)
    assert meta["input"]["invalid_utf8_lines"] == 6
    assert meta["input"]["documents"] == 2 and meta["documents"]["sentences"] == 66


def test_cli_one_megabyte_line(tmp_path):
    words = (_need_data() / "corpus" / "wikitext-2" / "valid.txt").read_text().split()[:50000]
    rnd = random.Random(0)
    line = " ".join(rnd.choice(words) for _ in range(200_000))[:1_000_000]
    (tmp_path / "long.txt").write_text("A short sentence.\nAnother one.\n\n" + line + "\n")
    cfg = config(f"{tmp_path}/long.txt", tmp_path / "out", num_output_shards=1)
    out = run_tool(cli_args(cfg, num_workers=1))
    assert out.returncode == 0, out.stderr
    meta = meta_of(cfg.output_dir)
    assert meta["input"]["sentences"] == 3
    assert meta["documents"]["long_sentences_split"] == 1
    assert meta["documents"]["sentences"] > 1000  # the long one, cut into pieces that fit
    assert meta["instances"] > 1000


def test_cli_missing_spm_model(tmp_path):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    cfg = config(f"{tmp_path}/a.txt", tmp_path / "out")
    missing = str(tmp_path / "nope" / "30k-clean.model")
    cfg = with_flags(cfg, spm_model_file=missing)
    err = _one_line_error(run_tool(cli_args(cfg, num_workers=1)), missing, "not found")
    assert err.startswith("error: SentencePiece model not found")


def test_cli_unwritable_output_dir(tmp_path):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    under_file = tmp_path / "a.txt" / "sub"  # a path below a regular file: even root fails
    cfg = config(f"{tmp_path}/a.txt", under_file)
    err = _one_line_error(run_tool(cli_args(cfg, num_workers=1)), str(under_file), "not writable")
    assert not os.path.exists(under_file) and "output_dir" in err
    if os.geteuid() != 0:  # root writes into read-only directories regardless
        ro = tmp_path / "readonly"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            cfg = config(f"{tmp_path}/a.txt", ro / "out")
            _one_line_error(run_tool(cli_args(cfg, num_workers=1)), str(ro / "out"), "not writable")
        finally:
            ro.chmod(0o700)


def test_cli_glob_matching_nothing(tmp_path):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    pattern = f"{tmp_path}/typo-*.txt"
    cfg = config(f"{tmp_path}/a.txt,{pattern}", tmp_path / "out")
    _one_line_error(run_tool(cli_args(cfg, num_workers=1)), pattern, "matches no file")
    assert not os.path.exists(cfg.output_dir)


# --- SIGKILL ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_sigkill_leaves_no_truncated_shard_and_rerun_completes(tmp_path):
    d = _need_data() / "corpus"
    inputs = f"{d}/wikitext-2/valid.txt,{d}/wikitext-2/test.txt,{d}/en_speeches/state_union/*.txt"
    cfg = config(
        inputs,
        tmp_path / "killed",
        split_sentences=True,
        dupe_factor=3,
        block_size=131072,
        num_output_shards=6,
    )
    cli = Cli(*TOOL, *cli_args(cfg, num_workers=1))
    proc = cli.proc
    try:
        deadline = time.time() + 120
        while not glob.glob(f"{cfg.output_dir}/*.tfrecord"):
            assert proc.poll() is None, "the run ended before writing a shard"
            assert time.time() < deadline
            time.sleep(0.01)
        time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        cli.kill()
    assert proc.returncode == -signal.SIGKILL
    shards = sorted(glob.glob(f"{cfg.output_dir}/*.tfrecord"))
    assert 1 <= len(shards) < 6
    assert not os.path.exists(os.path.join(cfg.output_dir, "meta_data.json"))
    complete = 0
    for path in shards:  # every visible shard is complete: all records parse, CRCs ok
        count = sum(1 for _ in read_records(path))
        assert count > 0
        stats_path = os.path.join(cfg.output_dir, "stats", os.path.basename(path) + ".json")
        if os.path.exists(stats_path):  # (absent only if killed between the two renames)
            with open(stats_path) as f:
                assert json.load(f)["instances"] == count
            complete += 1

    out = run_tool(cli_args(cfg, num_workers=1))
    assert out.returncode == 0, out.stderr
    assert f"{complete} of this task's 6 already complete, {6 - complete} to write" in out.stdout
    assert not glob.glob(f"{cfg.output_dir}/*.tmp")
    fresh = dataclasses.replace(cfg, output_dir=str(tmp_path / "fresh"))
    out = run_tool(cli_args(fresh, num_workers=2))
    assert out.returncode == 0, out.stderr
    assert digests(cfg.output_dir) == digests(fresh.output_dir)

    # Other settings into the same directory are refused, whatever they change.
    for change in (dict(dupe_factor=2), dict(num_output_shards=3), dict(random_seed=7)):
        other = dataclasses.replace(cfg, **change)
        _one_line_error(
            run_tool(cli_args(other, num_workers=1)), cfg.output_dir, "use a new --output_dir"
        )
    assert digests(cfg.output_dir) == digests(fresh.output_dir)
