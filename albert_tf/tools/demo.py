"""`make demo`: the project end to end on text this machine already has, offline.

Parameter counts of every preset and sharing mode; a SentencePiece vocabulary trained with
ALBERT's recipe on the Python standard library's docstrings (a sentence tokenized by
`AlbertTokenizer`, checked against the in-graph tokenizer); pretraining TFRecords made from
the same docstrings (SOP pairs, n-gram masks, meta_data.json); a batch read back by the
tf.data pipeline and fed to the pretraining model; a few minutes of pretraining a tiny
model (held-out MLM and SOP accuracy before and after); fine-tuning it with
run_classifier.py on a 4-way task built from the same data (which module does a docstring
paragraph document?), against the same model from scratch; a checkpoint save → load round
trip; and, to end, the fine-tuned classifier exported as a SavedModel that takes raw text
and queried from a separate process.

    python -m albert_tf.tools.demo [--output_dir out/demo]
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf.tools.demo_corpus import stdlib_module_documents, write_corpus
from albert_tf.tools.demo_finetune import TOPICS, finetune_topics, query_saved_model
from data_pipeline.cli import setting
from data_pipeline.command import Command


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """Where the demo writes, and how long it trains."""

    output_dir: str = setting("out/demo", "Where the demo writes.")
    pretrain_steps: int = setting(600, "Pretraining steps.")
    finetune_steps: int = setting(300, "Fine-tuning steps.")


COMMAND = Command("demo", __doc__, (DemoSettings,))  # (`make demo`: no console script)


def main(argv=None) -> int:
    """`make demo`: parse once, then the whole tour; the exit code (2: a bad command line)."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    os.makedirs(s.output_dir, exist_ok=True)
    start = time.time()

    import keras
    import numpy as np

    from albert_tf import (
        AlbertConfig,
        AlbertEncoder,
        AlbertPretrainer,
        load_checkpoint,
        save_checkpoint,
    )
    from albert_tf.modeling.encoder import count_parameters

    keras.utils.set_random_seed(12345)

    print("== Parameters (backbone incl. pooler; + MLM/SOP heads) ==")
    print(
        f"{'preset':<9}"
        + "".join(f"{m:>14}" for m in ("all", "attention", "ffn", "none"))
        + f"{'all + heads':>14}"
    )
    for name in ("base", "large", "xlarge", "xxlarge"):
        config = AlbertConfig.preset(name)
        counts = [
            count_parameters(config.replace(sharing=m)) for m in ("all", "attention", "ffn", "none")
        ]
        print(
            f"{name:<9}"
            + "".join(f"{c:>14,}" for c in counts)
            + f"{count_parameters(config, heads=True):>14,}"
        )
    base = AlbertEncoder(AlbertConfig.preset("base"))
    base.build()
    print(
        f"built ALBERT-base: count_params() = {base.count_params():,} (paper: 12M; BERT-base: 108M)"
    )
    del base

    print("\n== Vocabulary: SentencePiece on the Python standard library's docstrings ==")
    module_documents = stdlib_module_documents()
    # Every 10th docstring is held out: pretraining is evaluated on documents it never saw
    # (and the fine-tuning task below on paragraphs of those documents).
    held_out = [d for i, (_, d) in enumerate(module_documents) if i % 10 == 9]
    documents = [d for i, (_, d) in enumerate(module_documents) if i % 10 != 9]
    corpus = os.path.join(s.output_dir, "stdlib_docstrings.txt")
    eval_corpus = os.path.join(s.output_dir, "stdlib_docstrings_heldout.txt")
    write_corpus(documents, corpus)
    write_corpus(held_out, eval_corpus)
    # ALBERT's recipe (data_pipeline.tokenization.train_tokenizer): <pad>=0 <unk>=1 [CLS]=2 [SEP]=3
    # [MASK]=4.
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    model_file = train_sentencepiece(
        [corpus], os.path.join(s.output_dir, "stdlib_spm"), vocab_size=2000, num_threads=1
    )["model_file"]
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(model_file, do_lower_case=True)
    print(
        f"{len(documents)} docstrings, {sum(map(len, documents))} paragraphs, "
        f"{tok.vocab_size} pieces -> {model_file}"
    )
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    text_a = "Return a new list containing all items from the iterable in ascending order."
    text_b = "A custom key function can be supplied to customize the sort order."
    a, b = tok.encode(text_a), tok.encode(text_b)
    import tensorflow as tf

    in_graph = tok.graph_tokenizer()(tf.constant([text_a, text_b])).to_list()
    print("pieces:", " ".join(tok.id_to_piece(i) for i in a))
    print(f"in-graph (tensorflow-text) ids equal the Python tokenizer's: {in_graph == [a, b]}")

    print("\n== Pretraining data: SOP pairs + n-gram masks -> TFRecords ==")
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data

    seq_len, preds = 128, 20
    data_dir = os.path.join(s.output_dir, "pretraining_data")
    eval_dir = os.path.join(s.output_dir, "pretraining_data_heldout")
    for d in (data_dir, eval_dir):
        shutil.rmtree(d, ignore_errors=True)  # a re-run would resume (skip) instead
    meta = create_pretraining_data(
        DataConfig.from_flags(
            input_file=corpus,
            output_dir=data_dir,
            spm_model_file=model_file,
            max_seq_length=seq_len,
            max_predictions_per_seq=preds,
            dupe_factor=5,
            split_sentences=True,
            num_output_shards=4,
        ),
        num_workers=os.cpu_count() or 1,
        progress_every=1e9,
    )
    create_pretraining_data(
        DataConfig.from_flags(
            input_file=eval_corpus,
            output_dir=eval_dir,
            spm_model_file=model_file,
            max_seq_length=seq_len,
            max_predictions_per_seq=preds,
            dupe_factor=1,
            split_sentences=True,
            num_output_shards=1,
        ),
        num_workers=1,
        progress_every=1e9,
    )
    masking = meta["masking"]
    print(
        f"n-gram units 1/2/3: {', '.join(f'{x:.1%}' for x in masking['ngram_fraction'])} "
        f"(paper: 54.5%, 27.3%, 18.2%); masked {masking['masked_fraction']:.1%} of tokens; "
        f"[MASK]/random/kept {', '.join(f'{x:.0%}' for x in masking['replacement_fraction'])}; "
        f"SOP swapped {meta['sentence_order_labels']['fraction_1']:.1%}; single-sentence "
        f"chunks split {meta['instance_creation']['single_sentence_chunks_split']}, dropped "
        f"{meta['instance_creation']['single_sentence_chunks_dropped']}"
    )

    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    batch = next(
        iter(
            pretraining_dataset(os.path.join(data_dir, "*.tfrecord"), 8, seq_len, preds, seed=12345)
        )
    )
    batch = {k: v.numpy() for k, v in batch.items()}
    n = int(batch["input_mask"][0].sum())
    shown = [tok.id_to_piece(int(i)) for i in batch["input_ids"][0, :n]]
    k = int(batch["masked_lm_weights"][0].sum())
    for pos, label in zip(batch["masked_lm_positions"][0, :k], batch["masked_lm_ids"][0, :k]):
        shown[pos] = f"{shown[pos]}<{tok.id_to_piece(int(label))}>"
    print(
        f"an instance from the tf.data pipeline (SOP label "
        f"{int(batch['next_sentence_labels'][0, 0])}; masked piece<original>):"
    )
    print("  " + " ".join(shown))

    print("\n== Forward pass on that batch: a small ALBERT (E=128, H=256, 4 layers, one block) ==")
    config = AlbertConfig(
        vocab_size=tok.vocab_size,
        embedding_size=128,
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        max_position_embeddings=seq_len,
    )
    model = AlbertPretrainer(config)
    out = model(batch)
    for key, value in out.items():
        print(f"{key:<16} {str(tuple(value.shape)):<16} {value.dtype.name}")
    mlm = keras.ops.sparse_categorical_crossentropy(
        batch["masked_lm_ids"], out["mlm_logits"], from_logits=True
    ).numpy()
    mlm_loss = float((mlm * batch["masked_lm_weights"]).sum() / batch["masked_lm_weights"].sum())
    print(
        f"untrained MLM loss {mlm_loss:.2f} (ln {tok.vocab_size} = "
        f"{np.log(tok.vocab_size):.2f}); SOP probabilities of the first pair: "
        f"{[round(float(p), 3) for p in keras.ops.softmax(out['sop_logits'])[0].numpy()]}"
    )

    print("\n== Pretraining a tiny ALBERT (4 layers sharing one block, H=128) for a few minutes ==")
    from albert_tf.training import PretrainingTask, Trainer, TrainerConfig

    tiny = AlbertConfig(
        vocab_size=tok.vocab_size,
        embedding_size=64,
        hidden_size=128,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=512,
        max_position_embeddings=seq_len,
    )
    run_dir = os.path.join(s.output_dir, "pretraining_run")
    shutil.rmtree(run_dir, ignore_errors=True)

    def dataset(pattern, training):
        return lambda ctx: pretraining_dataset(
            pattern, 32, seq_len, preds, is_training=training, seed=12345
        )

    trainer = Trainer(
        PretrainingTask(tiny, seq_len, preds),
        TrainerConfig(
            output_dir=run_dir,
            num_train_steps=s.pretrain_steps,
            learning_rate=1e-2,
            num_warmup_steps=s.pretrain_steps // 10,
            optimizer="lamb",
            steps_per_loop=50,
            save_checkpoints_steps=s.pretrain_steps,
            eval_every=s.pretrain_steps // 4,
            max_eval_steps=20,
        ),
        tf.distribute.get_strategy(),
        dataset(os.path.join(data_dir, "*.tfrecord"), True),
        dataset(os.path.join(eval_dir, "*.tfrecord"), False),
        log=lambda line: print("  " + line),
    )
    before = trainer.evaluate(0)
    after = trainer.train()["eval"]
    print(
        f"held-out docstrings: MLM accuracy {before['mlm_accuracy']:.1%} -> "
        f"{after['mlm_accuracy']:.1%}, SOP accuracy {before['sop_accuracy']:.1%} -> "
        f"{after['sop_accuracy']:.1%} (TensorBoard: {run_dir})"
    )
    keras.config.set_dtype_policy("float32")
    tiny.to_json_file(os.path.join(run_dir, "albert_config.json"))

    print(
        "\n== Fine-tuning (run_classifier.py): which module does a docstring paragraph document? =="
    )
    export_dir = os.path.join(s.output_dir, "serving")
    shutil.rmtree(export_dir, ignore_errors=True)
    results = finetune_topics(
        module_documents,
        s.output_dir,
        model_file,
        os.path.join(run_dir, "albert_config.json"),
        os.path.join(run_dir, "checkpoints"),
        s.finetune_steps,
        export_dir,
    )
    if results is None:
        return 1

    print("\n== Checkpoint round trip ==")
    ckpt_dir = os.path.join(s.output_dir, "checkpoint")
    prefix = save_checkpoint(model, ckpt_dir)
    encoder = AlbertEncoder(
        AlbertConfig.from_json_file(os.path.join(ckpt_dir, "albert_config.json"))
    )
    report = load_checkpoint(encoder, ckpt_dir)
    again = encoder(batch)["sequence_output"].numpy()
    diff = float(np.max(np.abs(again - out["sequence_output"].numpy())))
    print(f"saved {prefix}; {report}; max |Δ| sequence_output = {diff:.1e}")
    if diff > 1e-6:
        print("error: the reloaded encoder differs", file=sys.stderr)
        return 1
    print("\n== Serving: the fine-tuned classifier as a SavedModel that takes raw text ==")
    if not query_saved_model(
        export_dir,
        [p for m, d in module_documents[9::10] if m in TOPICS for p in d][:3]
        + [
            "Wait until the coroutine finishes or the timeout expires.",
            "Return the sample variance of the data.",
        ],
    ):
        return 1

    print(f"\ndemo finished in {time.time() - start:.0f}s; artifacts in {s.output_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
