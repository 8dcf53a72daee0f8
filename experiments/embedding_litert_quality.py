"""What int8 costs the sentence-embedding LiteRT file: STS-B dev Spearman of the cosine of
normalized mean-pooled vectors, from the encoder's float32 and int8 (dynamic-range: int8
weights, float activations) LiteRT files, text in (`LiteModel.embed`).

    python -m experiments.embedding_litert_quality \\
        --init_checkpoint out/sts_embedding/cosine_mean/run_0/checkpoints \\
        --albert_config_file out/sop_vs_nsp/albert_config.json \\
        --spm_model_file out/sop_vs_nsp/spm8k.model [--output_dir out/embedding_litert]

Any encoder checkpoint: the CPU-pretrained model's (unsupervised) or a run_embedding.py run's
(fine-tuned; experiments/sts_embedding.py writes three). Both files come from one
`export_tflite("encoder", ..., pooling="mean", normalize=True)`; each embeds the 1,500 pairs'
sentences 32 a request. Reported: Spearman of each file, the largest difference between the
two files' cosines, and the files' sizes. bench/embedding.py --lite float32,int8 times the
same two kinds of file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init_checkpoint", required=True)
    p.add_argument("--albert_config_file", default=None)
    p.add_argument("--spm_model_file", required=True)
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "embedding_litert"))
    args = p.parse_args()
    import numpy as np

    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.serving.export import export_tflite
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.classification.metrics import spearman
    from data_pipeline.tokenization.spec import TokenizerSpec
    from experiments.report import report_logger

    log = report_logger(args.output_dir)
    config = args.albert_config_file and AlbertConfig.from_json_file(args.albert_config_file)
    files = export_tflite(
        "encoder",
        args.init_checkpoint,
        os.path.join(args.output_dir, "lite"),
        ("float32", "int8"),
        albert_config=config,
        tokenizer=TokenizerSpec.from_files(args.spm_model_file),
        max_seq_length=args.max_seq_length,
        pooling="mean",
        normalize=True,
    )
    with open(os.path.join(DATA, "glue", "STS-B", "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    a, b = [r[7] for r in rows], [r[8] for r in rows]
    gold = np.array([float(r[9]) for r in rows])
    log(f"STS-B dev, {len(rows)} pairs, {args.init_checkpoint}, mean pooling, normalized")
    log(f"{'file':<24}{'MB':>6}{'Spearman':>10}")
    cosines = {}
    for path in files:
        lite = LiteModel(path)

        def vectors(texts, lite=lite):
            return np.concatenate(
                [lite.embed(texts[i : i + 32])["embeddings"] for i in range(0, len(texts), 32)]
            )

        name = os.path.basename(path)
        cosines[name] = (vectors(a) * vectors(b)).sum(-1)
        size = os.path.getsize(path) / 2**20
        log(f"{name:<24}{size:>6.1f}{spearman(cosines[name], gold):>10.4f}")
    first, second = cosines.values()
    log(f"largest |cosine float32 - cosine int8|: {np.abs(first - second).max():.4f}")
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({k: spearman(v, gold) for k, v in cosines.items()}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
