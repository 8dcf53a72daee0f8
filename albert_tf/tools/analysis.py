"""The paper's Figure 2: how much each layer changes its input, for shared and unshared models.

    python -m albert_tf.tools.analysis --init_checkpoint RUN/checkpoints \\
        --input_file 'records/*.tfrecord' --output_dir DIR \\
        [--compare_checkpoint NONE_RUN/checkpoints] [--albert_config_file FILE] \\
        [--max_batches 20 --batch_size 8 --max_seq_length 512]

Lan et al. (2019, Section 3.1, Figure 2) measure, per layer, the L2 distance and the cosine
similarity between the layer's input and output embeddings: with cross-layer sharing the
transitions are much smoother than in BERT, where they oscillate. Here layer l's input is
layer l-1's output, and layer 1's is the embedding output after the E→H projection (the
encoder's `embedding_output`, H wide). Both measures are averaged over the real tokens of
the batches (padding excluded). With `inner_group_num` > 1 a layer is the whole group of
blocks, as in the paper. Layer 1's distance is on its own scale: the embeddings are
layer-normalized at width E, before the projection, while every layer's output is normalized
at width H.

Writes DIR/figure2.csv (model, sharing, layer, l2_distance, cosine_similarity and
angle_degrees, the mean angle arccos(cos) that the paper's right panel shows "in terms of
degree") and DIR/figure2.png (two panels, one line per model). Each model's config is
`--albert_config_file` (first model only) or found beside its checkpoint
(`export_encoder.checkpoint_config`). Records are read for `input_ids`, `input_mask` and
`segment_ids` only, so any pretraining records work (masked, dynamic-masking or official).
"""

from __future__ import annotations

import csv
import dataclasses
import os
import sys
import time
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from data_pipeline.cli import setting
from data_pipeline.command import Command

CSV_NAME = "figure2.csv"
PNG_NAME = "figure2.png"
CSV_COLUMNS = ("model", "sharing", "layer", "l2_distance", "cosine_similarity", "angle_degrees")


@dataclasses.dataclass(frozen=True)
class AnalysisSettings:
    """The models, the records they are measured on, and where the figure goes."""

    init_checkpoint: str | None = setting(
        None, "Checkpoint (directory or prefix) of the model to analyze."
    )
    albert_config_file: str | None = setting(
        None,
        "Config of --init_checkpoint; by default found beside it (albert_config.json or "
        "run_config.json).",
    )
    compare_checkpoint: tuple[str, ...] = setting(
        (),
        "Another model to plot beside it (typically sharing=none trained the same way); "
        "repeatable. Its config must be beside it.",
        repeatable=True,
    )
    input_file: str | None = setting(None, "Pretraining TFRecords: comma-separated globs.")
    output_dir: str | None = setting(None, "Where figure2.csv and figure2.png go.")
    max_batches: int = setting(20, "Batches to average over (0: all).", minimum=0)
    batch_size: int = setting(8, "Records per batch.", minimum=1)
    max_seq_length: int | None = setting(
        None, "Length of the records' input_ids (default: read from the first record).", minimum=1
    )


COMMAND = Command(
    "albert-analysis",
    __doc__,
    (AnalysisSettings,),
    required=("init_checkpoint", "input_file", "output_dir"),
)


class LayerSimilarity(NamedTuple):
    """Per-layer means over real tokens; arrays of shape [num_hidden_layers]."""

    l2_distance: np.ndarray
    cosine_similarity: np.ndarray
    angle_degrees: np.ndarray
    tokens: int


def layer_inputs_outputs(encoder_outputs: dict, inner_group_num: int) -> list:
    """[embedding_output, layer 1 output, ..., layer L output] from an encoder called with
    `output_hidden_states=True` (whose `encoder_outputs` has one entry per block)."""
    blocks = list(encoder_outputs["encoder_outputs"])
    return [encoder_outputs["embedding_output"]] + blocks[inner_group_num - 1 :: inner_group_num]


def layer_similarity(
    encoder, batches: Iterable[dict], max_batches: int | None = None, log=None
) -> LayerSimilarity:
    """Figure 2's measures for `encoder` over `batches`.

    Args:
      encoder: an `AlbertEncoder`.
      batches: dicts with `input_ids`, `input_mask`, `segment_ids` int [batch, seq].
      max_batches: stop after this many batches (None: all).
      log: a function taking a progress line, or None.

    Returns per layer l = 1..L the mean over tokens with input_mask 1 of
    ||out_l - in_l||_2, cos(in_l, out_l) and arccos(cos) in degrees.
    """
    import tensorflow as tf

    inner = encoder.config.inner_group_num

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 3)
    def sums(input_ids, input_mask, segment_ids):
        outputs = encoder(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            output_hidden_states=True,
        )
        states = layer_inputs_outputs(outputs, inner)
        mask = tf.cast(input_mask, tf.float32)
        l2, cos, angle = [], [], []
        for x, y in zip(states[:-1], states[1:]):
            xn = x / tf.maximum(tf.norm(x, axis=-1, keepdims=True), 1e-30)
            yn = y / tf.maximum(tf.norm(y, axis=-1, keepdims=True), 1e-30)
            l2.append(tf.reduce_sum(tf.norm(y - x, axis=-1) * mask))
            cos.append(tf.reduce_sum(tf.reduce_sum(xn * yn, axis=-1) * mask))
            # 2·atan2(|x̂-ŷ|, |x̂+ŷ|) rather than acos(cos): exact for small angles too.
            angle.append(
                tf.reduce_sum(
                    2.0 * tf.atan2(tf.norm(xn - yn, axis=-1), tf.norm(xn + yn, axis=-1)) * mask
                )
            )
        return tf.stack(l2), tf.stack(cos), tf.stack(angle), tf.reduce_sum(mask)

    layers = encoder.config.num_hidden_layers
    total = np.zeros((3, layers), np.float64)
    tokens = 0.0
    start, n = time.time(), 0
    for n, batch in enumerate(batches, 1):
        l2, cos, angle, count = sums(
            *(
                tf.convert_to_tensor(batch[k], tf.int32)
                for k in ("input_ids", "input_mask", "segment_ids")
            )
        )
        total += np.stack([l2.numpy(), cos.numpy(), angle.numpy()]).astype(np.float64)
        tokens += float(count)
        if log is not None and (n % 10 == 0 or n == max_batches):
            rate = n / max(time.time() - start, 1e-9)
            eta = f", ETA {(max_batches - n) / rate:.0f} s" if max_batches else ""
            log(
                f"  batch {n}{f'/{max_batches}' if max_batches else ''} ({rate:.1f} batches/s{eta})"
            )
        if max_batches is not None and n >= max_batches:
            break
    if tokens == 0:
        raise ValueError(
            f"no real token in {n} batch(es): input_mask is all zeros or the input is empty"
        )
    l2, cos, angle = total / tokens
    return LayerSimilarity(l2, cos, np.degrees(angle), int(tokens))


def pretraining_batches(input_file, batch_size: int, max_seq_length: int | None = None):
    """Batches of `input_ids`, `input_mask`, `segment_ids` (int32 [batch, seq]) from
    pretraining TFRecords, in file order, the last batch possibly smaller.

    `max_seq_length` None reads it from the first record.
    """
    import tensorflow as tf

    from data_pipeline import documents as documents_lib
    from data_pipeline import records as records_lib

    files = documents_lib.expand_input_files(input_file)
    if max_seq_length is None:
        max_seq_length = record_seq_length(files[0])
    names = ("input_ids", "input_mask", "segment_ids")
    spec = {k: v for k, v in records_lib.parse_spec(max_seq_length, 1, True).items() if k in names}

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        return {k: tf.cast(parsed[k], tf.int32) for k in names}

    return (
        tf.data.TFRecordDataset(files)
        .batch(batch_size)
        .map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .prefetch(tf.data.AUTOTUNE)
    )


def record_seq_length(path: str) -> int:
    """Length of `input_ids` in the first record of `path`."""
    import tensorflow as tf

    from data_pipeline import records as records_lib

    for data in records_lib.read_records(path):
        feature = tf.train.Example.FromString(data).features.feature
        if "input_ids" not in feature:
            raise ValueError(f"{path}: record 0 has no input_ids (not pretraining records?)")
        return len(feature["input_ids"].int64_list.value)
    raise ValueError(f"{path}: no records")


def write_csv(path: str, results: list[tuple[str, str, LayerSimilarity]]) -> None:
    """`results`: (model label, sharing mode, measures) per model. Written atomically."""
    from data_pipeline.io.atomic import atomic_open

    with atomic_open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for label, sharing, r in results:
            for layer in range(len(r.l2_distance)):
                writer.writerow(
                    [
                        label,
                        sharing,
                        layer + 1,
                        f"{r.l2_distance[layer]:.8g}",
                        f"{r.cosine_similarity[layer]:.8g}",
                        f"{r.angle_degrees[layer]:.8g}",
                    ]
                )


def plot(path: str, results: list[tuple[str, str, LayerSimilarity]]) -> None:
    """Figure 2 as a PNG: L2 distance and cosine similarity against the layer, one line per
    model. Uses matplotlib's Agg canvas directly (no pyplot, no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    for label, sharing, r in results:
        layers = np.arange(1, len(r.l2_distance) + 1)
        name = f"{sharing}: {label}"
        left.plot(layers, r.l2_distance, marker="o", markersize=3, label=name)
        right.plot(layers, r.cosine_similarity, marker="o", markersize=3, label=name)
    for axes, title in ((left, "L2 distance"), (right, "cosine similarity")):
        axes.set_xlabel("layer")
        axes.set_ylabel(title)
        axes.set_title(f"{title} of each layer's input and output embeddings", fontsize=9)
        axes.grid(alpha=0.3)
        axes.xaxis.get_major_locator().set_params(integer=True)
    left.legend(fontsize=7)
    fig.suptitle("Input vs output embedding per layer (ALBERT paper, Figure 2)", fontsize=10)
    fig.tight_layout()
    from data_pipeline.io.atomic import atomic_open

    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png", dpi=120)


def analyze(
    checkpoints: list[str],
    input_file,
    output_dir: str,
    albert_config_file: str | None = None,
    batch_size: int = 8,
    max_seq_length: int | None = None,
    max_batches: int | None = 20,
    log=print,
) -> dict[str, str]:
    """Loads each checkpoint's encoder, measures it on the same batches, writes the CSV and
    the PNG. `albert_config_file` applies to the first checkpoint; the others' configs are
    found beside them. Returns {"csv": path, "png": path}."""
    import tensorflow as tf

    from albert_tf.checkpoints import load_checkpoint, resolve_checkpoint
    from albert_tf.checkpoints.export_encoder import checkpoint_config
    from albert_tf.modeling.encoder import AlbertEncoder

    models = []
    for i, path in enumerate(checkpoints):  # all configs first: fail before any work
        config, source = checkpoint_config(path, albert_config_file if i == 0 else None)
        models.append((path, resolve_checkpoint(path), config, source))
    results = []
    for label, prefix, config, source in models:
        encoder = AlbertEncoder(config)
        if log:
            log(
                f"{label}: sharing={config.sharing}, {config.num_hidden_layers} layers; "
                f"{load_checkpoint(encoder, prefix)}; config {source}"
            )
        else:
            load_checkpoint(encoder, prefix)
        batches = pretraining_batches(input_file, batch_size, max_seq_length)
        try:
            r = layer_similarity(encoder, batches, max_batches, log=log)
        except tf.errors.OpError as e:  # e.g. records of another max_seq_length
            first = e.message.strip().splitlines()[0] if e.message.strip() else type(e).__name__
            raise ValueError(
                f"reading {input_file} (max_seq_length="
                f"{max_seq_length or 'from the first record'}): {first}"
            ) from None
        if log:
            log(
                f"  {r.tokens:,} tokens; L2 distance {np.round(r.l2_distance, 3).tolist()}; "
                f"cosine {np.round(r.cosine_similarity, 4).tolist()}"
            )
        results.append((label, config.sharing, r))
    os.makedirs(output_dir, exist_ok=True)
    out = {"csv": os.path.join(output_dir, CSV_NAME), "png": os.path.join(output_dir, PNG_NAME)}
    write_csv(out["csv"], results)
    plot(out["png"], results)
    return out


def main(argv=None) -> int:
    """The console command `albert-analysis`: parse once (--help: before TensorFlow),
    analyze; the exit code (2: a bad command line; 1: one `error:` line)."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    try:
        out = analyze(
            [s.init_checkpoint, *(s.compare_checkpoint or ())],
            s.input_file,
            s.output_dir,
            s.albert_config_file,
            s.batch_size,
            s.max_seq_length,
            s.max_batches or None,
        )
    except (FileNotFoundError, ValueError) as e:  # ConfigError, CheckpointError
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out['csv']} and {out['png']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
