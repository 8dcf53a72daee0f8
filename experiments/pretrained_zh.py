"""The project's Chinese CPU-pretrained model: sop_vs_nsp's TINY ALBERT pretrained with SOP on
the shared Chinese news corpus, so that resume_zh NER has a pretrained start
(experiments/ner_quality.py `--pretrained_zh_dir`).

    python -m experiments.pretrained_zh [--steps 2000] [--output_dir out/pretrained_zh]

At this scale SOP stays at chance for ~2,600 steps while MLM learns, then leaves it: the
default 2,000 steps end on the plateau (SOP 50%); `--steps 4000` reaches 64.7% on its
training batches and 56.2% on held-out articles (docs/performance.md).

A script of its own rather than a `--language zh` mode of sop_vs_nsp: the corpus, the
tokenizer and the masking differ, and there is no NSP arm; the pretraining itself is
sop_vs_nsp's (`pretrain`: run_pretraining.py, the real runner, LAMB, the same flags) and its
held-out evaluation (`evaluate`).

Corpus ($ALBERT_TF_DATA/corpus/zh_news): the articles of thucnews_1000.txt
(`label<TAB>article`, one document a line; the label is dropped, the article split into
sentences at 。！？) and news_zh_1.txt (one sentence a line, a blank line between documents).
The last `--heldout_articles` THUCNews articles are held out (MLM/SOP accuracy on them,
besides the final training figures). Written to OUTPUT_DIR/corpus/ as plain text, one
sentence a line, a blank line between documents.

Tokenizer: a WordPiece vocab.txt of `--vocab_size` entries (default 8000, TINY's size) in the
official Chinese layout, learned by the project's trainer (data_pipeline.tokenization
.wordpiece_trainer, as `train_tokenizer --kind wordpiece`) on the training text, uncased:
every CJK character of the corpus and its `##` form, then WordPiece pieces for the rest.
resume_zh characters the news never holds are [UNK] when fine-tuning.

Masking: whole-word masking of jieba's words (`--zh_whole_word_mask`, as Chinese-BERT-wwm and
brightmart's albert_zh; jieba is the project's `zh` extra, pinned in requirements-dev.txt and
installed in the project's environment); `--nozh_whole_word_mask` masks single characters
(the official code's behaviour for Chinese). n-gram masking (up to 3 units) either way.

Model: TINY (4 layers sharing one block, H=256, E=64, 4 heads, FFN 1024, max_position 128)
with vocab_size = the vocab.txt's size; pretraining data max_seq_length 128, 20 predictions,
dupe_factor `--dupe_factor`; SOP; batch 32, float32 (bfloat16 is slow on CPUs without
AVX512_BF16). Output layout as sop_vs_nsp's (albert_config.json, run_sop/checkpoints) with
vocab.txt in place of spm8k.model, so experiments/pretrained.py's `pretrained_flags` gives the
runner flags of either model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from experiments.sop_vs_nsp import DATA, ROOT, TINY, evaluate, pretrain, write_instances

ZH = os.path.join(DATA, "zh_news")


def write_corpus(
    out: str, heldout_articles: int, max_articles: int = 0
) -> tuple[list[str], list[str]]:
    """The training and held-out text files (one sentence a line, documents separated by a
    blank line) under OUT/corpus, from the first `max_articles` THUCNews articles (0: all);
    returns (train files, held-out files)."""
    from data_pipeline.documents import split_sentences
    from data_pipeline.io.atomic import write_text

    corpus = os.path.join(out, "corpus")
    os.makedirs(corpus, exist_ok=True)
    articles = []
    path = os.path.join(ZH, "thucnews_1000.txt")
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if "\t" not in line:
                raise SystemExit(f"{path}:{n}: expected `label<TAB>article`")
            sentences = split_sentences(line.split("\t", 1)[1].strip())
            if sentences:
                articles.append("\n".join(sentences))
            if len(articles) == max_articles:
                break
    if not 0 <= heldout_articles < len(articles):
        raise SystemExit(f"--heldout_articles {heldout_articles}: {path} has {len(articles)}")
    cut = len(articles) - heldout_articles
    train = os.path.join(corpus, "thucnews_train.txt")
    heldout = os.path.join(corpus, "thucnews_heldout.txt")
    write_text(train, "\n\n".join(articles[:cut]) + "\n")
    write_text(heldout, "\n\n".join(articles[cut:]) + "\n")
    return [train, os.path.join(ZH, "news_zh_1.txt")], [heldout]


def prepare(out: str, args, log) -> dict:
    """vocab.txt and the pretraining data (train_sop, eval_sop) under `out`; kept when
    already there (a rerun resumes)."""
    from data_pipeline.tokenization.wordpiece_trainer import train_wordpiece

    train_files, heldout_files = write_corpus(out, args.heldout_articles, args.max_articles)
    vocab = os.path.join(out, "vocab.txt")
    if not os.path.exists(vocab):
        report = train_wordpiece(train_files, vocab, args.vocab_size, do_lower_case=True)
        log(f"vocab.txt: {args.vocab_size} pieces, {report.get('seconds', 0):.0f}s")
    paths = {"vocab": vocab}
    for name, files, dupe in (
        ("train_sop", train_files, args.dupe_factor),
        ("eval_sop", heldout_files, 1),
    ):
        paths[name] = write_instances(
            os.path.join(out, name),
            files,
            dupe,
            log,
            vocab_file=vocab,
            sentence_order="sop",
            zh_whole_word_mask=args.zh_whole_word_mask,
        )
    return paths


def vocab_size(vocab_file: str) -> int:
    with open(vocab_file, encoding="utf-8") as f:
        return sum(1 for line in f if line.rstrip("\n"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "pretrained_zh"))
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=5e-3)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--vocab_size", type=int, default=8000)
    p.add_argument("--dupe_factor", type=int, default=5)
    p.add_argument("--heldout_articles", type=int, default=50)
    p.add_argument("--max_eval_batches", type=int, default=50)
    p.add_argument("--max_articles", type=int, default=0, help="0: all (a smoke run: fewer)")
    p.add_argument(
        "--zh_whole_word_mask",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="mask jieba words whole (default); --no-zh_whole_word_mask: single characters",
    )
    args = p.parse_args()
    if args.steps < 1 or args.batch_size < 1:
        p.error("--steps and --batch_size must be >= 1")
    from experiments.report import report_logger

    out = os.path.abspath(args.output_dir)
    log = report_logger(out)
    paths = prepare(out, args, log)
    config_file = os.path.join(out, "albert_config.json")
    with open(config_file, "w") as f:
        json.dump({**TINY, "vocab_size": vocab_size(paths["vocab"])}, f, indent=1)
    run_dir = pretrain("sop", paths["train_sop"], out, config_file, args, log)
    with open(os.path.join(run_dir, "final_metrics.json")) as f:
        final = json.load(f)
    heldout = evaluate(run_dir, config_file, paths["eval_sop"], args.max_eval_batches)
    train = final["train"]
    log(
        f"\n{final['step']} steps × batch {args.batch_size}, zh_whole_word_mask "
        f"{args.zh_whole_word_mask}"
    )
    log(f"{'':<28}{'MLM acc':>9}{'SOP acc':>9}")
    log(f"{'train (last loop)':<28}{train['mlm_accuracy']:>9.1%}{train['sop_accuracy']:>9.1%}")
    log(
        f"{'held-out THUCNews articles':<28}{heldout['mlm_accuracy']:>9.1%}"
        f"{heldout['order_accuracy']:>9.1%}"
    )
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"train": final, "heldout": heldout, "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
