"""SQuAD prediction throughput on real questions: windows padded to max_seq_length against
windows grouped by length and padded to their bucket (`SquadFeatures.prediction_dataset(
length_buckets=...)`, what run_squad predicts with).

    python -m bench.real_text_squad [--config base] [--batch 32] [--limit 200] [--rounds 2]

ALBERT-base, random weights (speed does not depend on them), the ALBERT-recipe SentencePiece
model of $ALBERT_TF_DATA (de-30k-clean: English text makes more pieces than an English
vocabulary would, so windows are longer than with the released models), the first `limit`
questions of SQuAD v1.1 dev, windows of max_seq_length 384 / doc_stride 128 /
max_query_length 64. One case = records → tf.data → the model's traced forward pass →
start/end logits in feature order → postprocessed answers, as run_squad predicts. Padded
and length-aware alternate (padded, length-aware, padded, ...; `rounds` each, after one
warm-up pass of each that traces and gives the reference outputs) so that the machine's
drift falls on both; medians. Tokens computed / present: the batches' [B, L] against the
windows' tokens. The two paths' answers must be identical and their logits (on the
windows' tokens) agree within float tolerance.

`squad_predict_case` is importable (bench/real_text.py's table uses it); `--config tiny`
(a 2-layer, 32-wide model) is a quick smoke run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def _config(name: str):
    """A preset ("base", "large", ...), "tiny" (smoke runs), or an albert_config.json."""
    from albert_tf import AlbertConfig

    if name == "tiny":
        return AlbertConfig(
            vocab_size=30000,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
        )
    if name.endswith(".json"):
        return AlbertConfig.from_json_file(name)
    return AlbertConfig.preset(name)


def squad_predict_case(config_name="base", batch=32, limit=200, rounds=2, seq=384) -> dict:
    """Questions/s of padded and length-aware SQuAD prediction (records → answers) on the
    first `limit` questions of SQuAD v1.1 dev: a flat dict of numbers and strings (medians
    of `rounds` interleaved timings, tokens computed per token present, max abs Δ logits,
    whether the answers are identical)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np

    from albert_tf.modeling.models import AlbertQuestionAnswering
    from albert_tf.training.prediction import predict_logits
    from data_pipeline.length_buckets import LENGTH_BUCKETS
    from data_pipeline.squad.examples import read_squad
    from data_pipeline.squad.feature_records import squad_features
    from data_pipeline.squad.features import PER_TOKEN_FILL, PREDICTION_KEYS
    from data_pipeline.squad.postprocess import postprocess
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(os.path.join(DATA, "spm", "de-30k-clean.model"))
    source = os.path.join(DATA, "squad", "dev-v1.1.json")
    examples = read_squad(source)[:limit]
    cache = tempfile.TemporaryDirectory(prefix="real_text_squad-")  # removed on return
    features = squad_features(source, tok, cache.name, seq, 128, 64, False, examples)
    keras.utils.set_random_seed(0)
    model = AlbertQuestionAnswering(_config(config_name))
    model.build()

    def predict(aware):
        """(answers, outputs, tokens computed): one whole prediction, as run_squad's."""
        dataset = features.prediction_dataset(batch, LENGTH_BUCKETS if aware else None)
        out = predict_logits(
            model,
            dataset,
            ("start_logits", "end_logits"),
            carry=PREDICTION_KEYS,
            order_by="feature_index",
            per_token=PER_TOKEN_FILL,
            length=seq,
        )
        answers = postprocess(examples, out, out["start_logits"], out["end_logits"])[0]
        return answers, out, dataset

    reference, times = {}, {False: [], True: []}
    for aware in (False, True):  # warm-up: traces, and the outputs compared below
        reference[aware] = predict(aware)
    for _ in range(rounds):
        for aware in (False, True):
            start = time.perf_counter()
            predict(aware)
            times[aware].append(time.perf_counter() - start)
    computed = {
        aware: sum(int(np.prod(b["input_ids"].shape)) for b in reference[aware][2])
        for aware in (False, True)
    }
    mask = np.concatenate([b["input_mask"].numpy() for b in reference[False][2]]).astype(bool)
    present = int(mask.sum())
    diff = max(
        float(np.abs(reference[True][1][k][mask] - reference[False][1][k][mask]).max())
        for k in ("start_logits", "end_logits")
    )
    identical = reference[True][0] == reference[False][0]
    del reference
    cache.cleanup()
    padded, aware = (statistics.median(times[k]) for k in (False, True))
    return {
        "config": config_name,
        "questions": len(examples),
        "features": features.count,
        "batch": batch,
        "seq": seq,
        "rounds": rounds,
        "padded_questions_per_s": len(examples) / padded,
        "length_aware_questions_per_s": len(examples) / aware,
        "speedup": padded / aware,
        "padded_tokens_computed_per_present": computed[False] / present,
        "length_aware_tokens_computed_per_present": computed[True] / present,
        "max_abs_logit_diff": diff,
        "identical_predictions": identical,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="base", help='a preset, "tiny", or albert_config.json')
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", type=int, default=200, help="the first LIMIT questions of dev")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seq", type=int, default=384)
    args = p.parse_args()
    r = squad_predict_case(args.config, args.batch, args.limit, args.rounds, args.seq)
    import tensorflow as tf

    print(
        f"\nSQuAD v1.1 dev prediction, ALBERT-{r['config']} (random weights), max_seq_length "
        f"{r['seq']}, batch {r['batch']}, {os.cpu_count()} CPUs, TF {tf.__version__}, medians "
        f"of {r['rounds']} interleaved rounds\n"
    )
    print(
        "| questions | windows | padded q/s | length-aware q/s | ratio "
        "| tokens computed / present (padded, length-aware) | max abs Δ logits "
        "| same answers |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {r['questions']} | {r['features']} | {r['padded_questions_per_s']:.2f} "
        f"| {r['length_aware_questions_per_s']:.2f} | {r['speedup']:.2f}× "
        f"| {r['padded_tokens_computed_per_present']:.2f} / "
        f"{r['length_aware_tokens_computed_per_present']:.2f} | {r['max_abs_logit_diff']:.1e} "
        f"| {'yes' if r['identical_predictions'] else 'NO'} |"
    )


if __name__ == "__main__":
    main()
