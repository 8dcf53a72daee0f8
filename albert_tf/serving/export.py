"""SavedModels that take raw text: classify, choose, answer questions, embed.

    python -m albert_tf.serving.export --task {classifier,multiple_choice,squad,encoder} \\
        --init_checkpoint C [--albert_config_file F] [--spm_model_file M | --vocab_file V] \\
        --export_dir D \\
        [--format savedmodel --format tflite --quantize float32,float16,int8]

(`--format tflite`: on-device LiteRT files, see albert_tf.serving.litert.)

The tokenization the model was trained with runs inside the graph: ALBERT's normalization
and SentencePiece (tensorflow-text;
`data_pipeline.tokenization.sentencepiece_tokenizer.GraphTokenizer`, whose ids
equal the Python tokenizer's), with the SentencePiece model stored in the SavedModel (and
as the file `assets/<name>.model`); then truncation and packing exactly as for training;
then the model. A client needs only `tensorflow` and `tensorflow_text` (for the op kernels).
A WordPiece model (`--vocab_file`, the official Chinese ALBERTs') tokenizes with BERT's
basic tokenizer and WordPiece in the graph instead (`albert_tf.serving.text_tokenizer.
TextTokenizer`, ids equal to `data_pipeline.tokenization.wordpiece.WordPieceTokenizer`'s), its
vocab.txt
under `assets/`: every task but squad.

`--init_checkpoint` is best a fine-tuned model directory (a runner's `--export_dir`,
`albert_tf.checkpoints.finetuned`): its task.json brings the labels, sequence length, casing and
vocabulary, so none can be mismatched. Any checkpoint works for `--task encoder` (give
`--spm_model_file` or `--vocab_file`; a pretraining run's checkpoint is checked against the
tokenizer its records were written with, recorded in its run_config.json). Each export is
a new version directory `D/1`, `D/2`, ... as TF Serving expects, written under a temporary
name and renamed when complete.

Signatures (batch dimension first; strings are UTF-8, invalid bytes become U+FFFD):
  classifier       serving_default(text_a [B] (, text_b [B] for pair tasks)) →
                   probabilities [B, L] float32, label [B] string, logits; regression:
                   score [B].
  multiple_choice  serving_default(passage [B], question [B], options [B, C]) →
                   probabilities [B, C], choice [B] int32; "" options are padding.
  encoder          embed(text [B]) → pooled_output [B, H], sequence_output [B, S, H],
                   input_mask [B, S]; encode(input_ids, input_mask, segment_ids [B, S]).
  squad            serving_default(question [B], context [B]) → answer [B] string,
                   score [B], start/end [B] int32 (character offsets in the context;
                   -1 for no answer), and no_answer_probability, null_odds [B] for v2.0.
  all but squad    tokenize(text_a [B], text_b [B]) → input_ids, input_mask, segment_ids
                   [B, S]: the packed ids, to check a client's own tokenization.
Empty strings give [CLS] [SEP] (a defined prediction); text longer than max_seq_length is
truncated as in training; a SQuAD context longer than one window is windowed in the
graph with the doc stride (as many windows as the batch's longest context needs).
Control characters and NUL bytes are tokenized as the Python tokenizer does (see
`data_pipeline.tokenization.sentencepiece_tokenizer`). An empty batch (0 rows) gives empty outputs
of the same
dtypes ([0, L] probabilities, [0] labels, ...). Inputs of one request must have the same
number of rows, else InvalidArgumentError "text_a has 3 rows but text_b has 2".
"""

from __future__ import annotations

import os
import shutil
import sys

import tensorflow as tf

from albert_tf.modeling.config import AlbertConfig
from data_pipeline.io import filesystem
from data_pipeline.length_buckets import bucket_sizes

TASKS = ("classifier", "multiple_choice", "squad", "encoder")


# --- in-graph text → ids ------------------------------------------------------------------


def _asset_tokenizer(spm_model_file: str, do_lower_case: bool):
    """(GraphTokenizer, Asset of the SentencePiece model file, AlbertTokenizer).

    tensorflow-text's SentencepieceOp takes the model as an op attribute, so the graph
    holds the model bytes itself; the same file is also stored under `assets/` (with its
    sha256 in the `albert_spm_sha256` constant) for clients that tokenize outside the
    graph or audit what the model was trained with."""
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    python_tokenizer = AlbertTokenizer(spm_model_file, do_lower_case)
    return (
        python_tokenizer.graph_tokenizer(),
        tf.saved_model.Asset(spm_model_file),
        python_tokenizer,
    )


def valid_utf8(text):
    """Invalid UTF-8 bytes → U+FFFD, as Python's decode(errors="replace")."""
    return tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )


def truncated_lengths(la, lb, budget):
    """The lengths the official `_truncate_seq_pair` leaves (pop from the longer, B on
    ties) in closed form: the shorter keeps its length s when 2s ≤ budget and the longer
    gets the rest; otherwise A keeps ceil(budget/2) and B floor(budget/2)."""
    fits = la + lb <= budget
    short = tf.minimum(la, lb)
    half = 2 * short <= budget
    a = tf.where(fits, la, tf.where(half, tf.where(la > lb, budget - lb, la), (budget + 1) // 2))
    b = tf.where(fits, lb, tf.where(half, tf.where(la > lb, lb, budget - la), budget // 2))
    return a, b


def same_rows(**inputs):
    """The inputs (in order), after checking that they have the same number of rows: a
    clear InvalidArgumentError ("text_a has 3 rows but text_b has 2") rather than a shape
    error deep in the graph, or a one-row input silently broadcast over the batch."""
    (first, x), *rest = inputs.items()
    rows = tf.shape(x)[0]
    checks = []
    for name, y in rest:
        other = tf.shape(y)[0]
        message = tf.strings.format(f"{first} has {{}} rows but {name} has {{}}", (rows, other))
        checks.append(tf.debugging.Assert(tf.equal(rows, other), [message]))
    with tf.control_dependencies(checks):
        return [tf.identity(t) for t in inputs.values()]


def at_least_one_row(x):
    """`x` with one empty row ("" or 0) added when it has none: the model and the span
    search need a row. Callers cut the outputs back to the request's rows (`[:batch]`),
    so a non-empty batch computes exactly what it did without this."""
    missing = tf.maximum(1 - tf.shape(x)[0], 0)
    paddings = [[0, missing]] + [[0, 0]] * (x.shape.rank - 1)
    return tf.pad(x, paddings, constant_values="" if x.dtype == tf.string else 0)


def _take(ragged, lengths):
    """Row i of `ragged` cut to lengths[i]."""
    keep = tf.ragged.range(ragged.row_lengths()) < tf.cast(lengths, tf.int64)[:, None]
    return tf.ragged.boolean_mask(ragged, keep)


def bucket_length(longest, max_seq_length: int):
    """int32 scalar: the smallest of `bucket_sizes(max_seq_length)` (the buckets of the
    training and evaluation batches, data_pipeline.length_buckets) ≥ `longest`. Serving
    pads a request to it: a short sentence costs what its length costs, and the model's
    kernels see a handful of shapes rather than one per length."""
    sizes = tf.constant(bucket_sizes(max_seq_length), tf.int32)
    index = tf.searchsorted(sizes, tf.reshape(tf.cast(longest, tf.int32), [1]))[0]
    return sizes[tf.minimum(index, tf.size(sizes) - 1)]


# A request's rows are computed in groups of this many, sorted by length (`by_length`).
LENGTH_GROUP = 8


def by_length(forward, input_ids, input_mask, segment_ids, max_seq_length: int, group=LENGTH_GROUP):
    """`forward(input_ids, input_mask, segment_ids)` → float32 [rows, ...] computed on the
    request's rows sorted by length, `group` rows at a time, each group cut to its own
    bucket (`bucket_length` of its longest row), and returned in the request's order.
    Inputs int32 [B, L] or [B, C, L] (multiple choice: a row's length is its longest
    choice). A batch of 32 mixed sentences then costs about what its tokens cost instead
    of 32 times its longest; a batch of up to `group` rows is one group, as before."""
    lengths = tf.reduce_sum(input_mask, axis=-1)
    if input_mask.shape.rank == 3:
        lengths = tf.reduce_max(lengths, axis=1)
    order = tf.argsort(lengths, stable=True)  # [B]
    rows = tf.shape(order)[0]
    groups = (rows + group - 1) // group
    parts = tf.TensorArray(tf.float32, size=groups, infer_shape=False)

    def body(i, parts):
        take = order[i * group : tf.minimum((i + 1) * group, rows)]
        length = bucket_length(tf.reduce_max(tf.gather(lengths, take)), max_seq_length)
        cut = [tf.gather(x, take)[..., :length] for x in (input_ids, input_mask, segment_ids)]
        return i + 1, parts.write(i, forward(*cut))

    _, parts = tf.while_loop(lambda i, _: i < groups, body, (tf.constant(0), parts))
    ordered = parts.concat()  # rows in `order`
    return tf.scatter_nd(order[:, None], ordered, tf.shape(ordered))


def pack(ids_a, ids_b, max_seq_length: int, cls_id: int, sep_id: int, length_aware=False):
    """`[CLS] a [SEP] (b [SEP])` per row, truncated as in training (`classifier_features.
    _pack`; a row with an empty b is a single sentence). Ragged int32 [B, (.)] →
    (input_ids, input_mask, segment_ids) int32 [B, L]: L = max_seq_length, or with
    `length_aware` the request's longest row rounded up to a bucket (`bucket_length`;
    padding beyond a row changes none of its outputs: attention masks it)."""
    la = tf.cast(ids_a.row_lengths(), tf.int32)
    lb = tf.cast(ids_b.row_lengths(), tf.int32)
    has_b = tf.cast(lb > 0, tf.int32)
    a_len, b_len = truncated_lengths(la, lb, max_seq_length - 2 - has_b)
    a, b = _take(ids_a, a_len), _take(ids_b, b_len)
    batch = tf.shape(la)[0]
    one = tf.RaggedTensor.from_row_lengths(tf.fill([batch], cls_id), tf.ones([batch], tf.int64))
    sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch], sep_id), tf.ones([batch], tf.int64))
    sep_b = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(has_b)], sep_id), tf.cast(has_b, tf.int64)
    )
    ids = tf.concat([one, a, sep, b, sep_b], axis=1)
    first = a_len + 2
    total = first + b_len + has_b
    length = bucket_length(tf.reduce_max(total), max_seq_length) if length_aware else None
    length = max_seq_length if length is None else length
    positions = tf.range(length)[None, :]
    dense = ids.to_tensor(0)
    input_ids = tf.pad(dense, [[0, 0], [0, length - tf.shape(dense)[1]]])
    if not length_aware:  # (the static shape the tokenize signature has always declared)
        input_ids = tf.ensure_shape(input_ids, [None, max_seq_length])
    input_mask = tf.cast(positions < total[:, None], tf.int32)
    segment_ids = tf.cast((positions >= first[:, None]) & (positions < total[:, None]), tf.int32)
    return input_ids, input_mask, segment_ids


# --- the exported modules -----------------------------------------------------------------


class _Serving(tf.Module):
    def __init__(self, model, spm_model_file, do_lower_case, max_seq_length, vocab_file=None):
        super().__init__()
        self.model = model
        if vocab_file:  # WordPiece: the vocab.txt under assets/ (TextTokenizer)
            from albert_tf.serving.text_tokenizer import TextTokenizer

            self.text = TextTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
            self.tokenizer = self.text.graph_tokenizer
            python_tokenizer = self.text.python_tokenizer
        else:
            self.tokenizer, self.spm_asset, python_tokenizer = _asset_tokenizer(
                spm_model_file, do_lower_case
            )
            self.sentencepiece = self.tokenizer.sp  # tracked: its resource is saved
            self.spm_sha256 = tf.constant(python_tokenizer.checksum, name="albert_spm_sha256")
        self.text_tokenizer = python_tokenizer  # (not saved; on-device exports reuse it)
        self.cls_id, self.sep_id = python_tokenizer.cls_id, python_tokenizer.sep_id
        self.max_seq_length = max_seq_length

    def _ids(self, text):
        return self.tokenizer(valid_utf8(text))

    def tokenize(self, text_a, text_b):
        """The model's inputs for (text_a, text_b) as training packs them ("" text_b: a
        single sentence): what a client can compare with its own tokenizer."""
        text_a, text_b = same_rows(text_a=text_a, text_b=text_b)
        ids = pack(
            self._ids(text_a), self._ids(text_b), self.max_seq_length, self.cls_id, self.sep_id
        )
        return dict(zip(("input_ids", "input_mask", "segment_ids"), ids))

    def _tokenize_signature(self):
        return tf.function(
            self.tokenize,
            input_signature=[
                tf.TensorSpec([None], tf.string, "text_a"),
                tf.TensorSpec([None], tf.string, "text_b"),
            ],
        ).get_concrete_function()

    def _forward(self, input_ids, input_mask, segment_ids):
        return self.model(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            training=False,
        )

    def _logits(self, input_ids, input_mask, segment_ids):
        return tf.cast(self._forward(input_ids, input_mask, segment_ids)["logits"], tf.float32)


def classifier_outputs(logits, labels, regression: bool) -> dict:
    """The classifier signature's outputs from float32 logits [B, L]: probabilities,
    logits and label (a string of `labels`), or score [B] for regression."""
    if regression:
        return {"score": logits[:, 0]}
    return {
        "probabilities": tf.nn.softmax(logits),
        "logits": logits,
        "label": tf.gather(labels, tf.argmax(logits, -1, output_type=tf.int32)),
    }


class ClassifierServing(_Serving):
    def __init__(
        self,
        model,
        spm_model_file,
        do_lower_case,
        max_seq_length,
        labels,
        regression,
        text_pair,
        vocab_file=None,
    ):
        super().__init__(model, spm_model_file, do_lower_case, max_seq_length, vocab_file)
        self.regression = regression
        self.labels = tf.constant(labels or [""])
        self.text_pair = text_pair

    def classify(self, text_a, text_b):
        text_a, text_b = same_rows(text_a=text_a, text_b=text_b)
        batch = tf.shape(text_a)[0]
        ids = pack(
            self._ids(at_least_one_row(text_a)),
            self._ids(at_least_one_row(text_b)),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )
        logits = by_length(self._logits, *ids, self.max_seq_length)[:batch]
        return classifier_outputs(logits, self.labels, self.regression)

    def signatures(self):
        if self.text_pair:
            fn = tf.function(
                lambda text_a, text_b: self.classify(text_a, text_b),
                input_signature=[
                    tf.TensorSpec([None], tf.string, "text_a"),
                    tf.TensorSpec([None], tf.string, "text_b"),
                ],
            )
        else:
            fn = tf.function(
                lambda text_a: self.classify(text_a, tf.zeros_like(text_a)),
                input_signature=[tf.TensorSpec([None], tf.string, "text_a")],
            )
        return {
            "serving_default": fn.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


class MultipleChoiceServing(_Serving):
    def choose(self, passage, question, options):
        """passage, question [B]; options [B, C] ("" = no such option). No options at all
        (C = 0) gives [B, 0] probabilities and choice 0, as a row of "" options does."""
        passage, question, options = same_rows(passage=passage, question=question, options=options)
        rows, columns = tf.shape(options)[0], tf.shape(options)[1]
        # One "" row / option when there are none (cut off the outputs again below).
        options = tf.pad(
            options,
            [[0, tf.maximum(1 - rows, 0)], [0, tf.maximum(1 - columns, 0)]],
            constant_values="",
        )
        passage, question = at_least_one_row(passage), at_least_one_row(question)
        batch, choices = tf.shape(options)[0], tf.shape(options)[1]
        present = tf.strings.length(options) > 0
        # The training text: the question with "_" filled by the option, else appended.
        q = tf.repeat(question, choices)
        o = tf.reshape(options, [-1])
        parts = tf.strings.split(q, "_")  # [B*C, (P)]
        last = tf.equal(
            tf.ragged.range(parts.row_lengths()).flat_values,
            tf.gather(parts.row_lengths() - 1, parts.value_rowids()),
        )
        pieces = tf.where(
            last,
            parts.flat_values,
            tf.strings.join([parts.flat_values, tf.gather(o, parts.value_rowids())]),
        )
        filled = tf.where(
            tf.strings.regex_full_match(q, "(?s).*_.*"),
            tf.strings.reduce_join(parts.with_flat_values(pieces), axis=1),
            tf.strings.join([q, o], " "),
        )
        ids = pack(
            self._ids(tf.repeat(passage, choices)),
            self._ids(filled),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )
        keep = tf.cast(tf.reshape(present, [-1, 1]), tf.int32)
        ids = [ids[0] * keep, ids[1] * keep, ids[2] * keep]
        shaped = [tf.reshape(x, [batch, choices, tf.shape(ids[0])[1]]) for x in ids]
        logits = by_length(self._logits, *shaped, self.max_seq_length)
        return {
            "probabilities": tf.nn.softmax(logits)[:rows, :columns],
            "logits": logits[:rows, :columns],
            "choice": tf.argmax(logits, -1, output_type=tf.int32)[:rows],
        }

    def signatures(self):
        fn = tf.function(
            self.choose,
            input_signature=[
                tf.TensorSpec([None], tf.string, "passage"),
                tf.TensorSpec([None], tf.string, "question"),
                tf.TensorSpec([None, None], tf.string, "options"),
            ],
        )
        return {
            "serving_default": fn.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


class EncoderServing(_Serving):
    def embed(self, text):
        batch = tf.shape(text)[0]
        text = at_least_one_row(text)
        ids = pack(
            self._ids(text),
            self._ids(tf.zeros_like(text)),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )
        out = self._forward(*ids)
        # Computed at the request's bucket length, returned at max_seq_length as before;
        # every padding position (input_mask 0) is a zero vector, whatever the bucket.
        extra = self.max_seq_length - tf.shape(ids[1])[1]
        mask = tf.cast(ids[1], tf.float32)[:batch, :, None]
        sequence = tf.cast(out["sequence_output"], tf.float32)[:batch] * mask
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32)[:batch],
            "sequence_output": tf.pad(sequence, [[0, 0], [0, extra], [0, 0]]),
            "input_mask": tf.pad(ids[1][:batch], [[0, 0], [0, extra]]),
        }

    def encode(self, input_ids, input_mask, segment_ids):
        ids = same_rows(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)
        batch = tf.shape(input_ids)[0]
        out = self._forward(*(at_least_one_row(x) for x in ids))
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32)[:batch],
            "sequence_output": tf.cast(out["sequence_output"], tf.float32)[:batch],
        }

    def signatures(self):
        embed = tf.function(self.embed, input_signature=[tf.TensorSpec([None], tf.string, "text")])
        ids = [
            tf.TensorSpec([None, None], tf.int32, n)
            for n in ("input_ids", "input_mask", "segment_ids")
        ]
        encode = tf.function(self.encode, input_signature=ids)
        embed_fn = embed.get_concrete_function()
        return {
            "serving_default": embed_fn,
            "embed": embed_fn,
            "encode": encode.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


# --- building and writing -----------------------------------------------------------------


def next_version_dir(export_dir: str) -> str:
    """export_dir/N for the next integer N (TF Serving's versions)."""
    versions = (
        [int(n) for n in filesystem.listdir(export_dir) if n.isdigit()]
        if filesystem.isdir(export_dir)
        else []
    )
    return os.path.join(export_dir, str(max(versions, default=0) + 1))


def write_saved_model(module, export_dir: str, finetuned_dir: str | None = None) -> str:
    """Saves `module` with its signatures as a new version of `export_dir`; returns it.
    `finetuned_dir` (the model's fine-tuned model directory) is kept beside the graph in
    `VERSION/assets.extra/finetuned/` (TF Serving ignores assets.extra): each version
    carries the checkpoint it was made from.

    The graph is traced with `kernels.portable_kernels()`: plain TensorFlow ops instead of
    the XLA-compiled elementwise kernels used in training, so that runtimes built without
    XLA (TF Serving by default) run it.

    A local version is written beside the others and renamed; for a URL `export_dir` (no
    directory rename on object stores) it is written locally and copied up with
    saved_model.pb last, so that a server never loads a half-copied version."""
    import tempfile

    from albert_tf.modeling.kernels import portable_kernels
    from data_pipeline.io.atomic import output_lock

    filesystem.makedirs(export_dir)
    remote = filesystem.is_url(export_dir)
    # One exporter at a time: two would both pick version N (data_pipeline.io.atomic locks;
    # not on URLs, where nothing can be locked).
    with output_lock(export_dir, "albert_tf.serving.export"):
        target = next_version_dir(export_dir)
        if remote:
            tmp = tempfile.mkdtemp(prefix="albert-savedmodel-")
        else:
            tmp = os.path.join(export_dir, f".tmp-{os.path.basename(target)}-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
        try:
            with portable_kernels():
                tf.saved_model.save(module, tmp, signatures=module.signatures())
            if finetuned_dir:
                kept = os.path.join(tmp, "assets.extra", "finetuned")
                filesystem.copy_tree(finetuned_dir, kept)
            if remote:
                filesystem.copy_tree(tmp, target, last=("saved_model.pb",))
            else:
                os.replace(tmp, target)
        except (tf.errors.OpError, OSError) as e:  # e.g. a full disk
            lines = (getattr(e, "message", None) or str(e)).strip().splitlines()
            reason = lines[0] if lines else type(e).__name__
            raise OSError(
                f"cannot write the SavedModel {target}: {reason}; nothing was written there"
            ) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def pretraining_run(init_checkpoint: str) -> tuple[str, dict] | None:
    """(path, content) of the run_config.json of the pretraining run a checkpoint comes
    from (in the checkpoint's directory or its parent, where run_pretraining writes it),
    or None (a converted or hand-made checkpoint)."""
    import json

    from albert_tf.checkpoints import resolve_checkpoint
    from albert_tf.checkpoints.export_encoder import RUN_CONFIG_NAME

    prefix = resolve_checkpoint(init_checkpoint)
    here = os.path.dirname(prefix if filesystem.is_url(prefix) else os.path.abspath(prefix))
    for directory in dict.fromkeys((here, os.path.dirname(here))):
        path = os.path.join(directory, RUN_CONFIG_NAME)
        if filesystem.isfile(path):
            with filesystem.open(path) as f:
                try:
                    run = json.load(f)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
            return (path, run) if isinstance(run, dict) else None
    return None


def check_run_tokenizer(run: tuple[str, dict] | None, tokenizer, given: str) -> None:
    """ValueError unless `tokenizer` (given as the flag text `given`) is the one the
    pretraining run's records were written with, as run_config.json records it (their
    meta_data.json's tokenizer: kind and sha256): an encoder exported with another
    vocabulary would turn text into ids the model never saw. Runs that recorded none
    are not checked."""
    from data_pipeline.tokenization.choice import tokenizer_kind

    if not run:
        return
    path, config = run
    recorded = (config.get("data_meta") or {}).get("tokenizer")
    if not isinstance(recorded, dict):
        return
    names = {"sentencepiece": "SentencePiece model", "wordpiece": "WordPiece vocab.txt"}
    kind, sha = recorded.get("kind", "sentencepiece"), recorded.get("sha256")
    if kind != tokenizer_kind(tokenizer):
        raise ValueError(
            f"{path}: the model was pretrained on records of a {names.get(kind, kind)}, "
            f"but {given} is a {names[tokenizer_kind(tokenizer)]}"
        )
    if sha and tokenizer.checksum != sha:
        raise ValueError(
            f"{path}: the model was pretrained on records of a {names[kind]} of sha256 "
            f"{sha[:16]}..., but {given} has sha256 {tokenizer.checksum[:16]}..."
        )


def vocabulary_files(info: dict, spm_model_file=None, vocab_file=None) -> tuple:
    """(spm_model_file, vocab_file) an export uses, at most one set: the given ones (both:
    the SentencePiece model, as `tokenizer_choice`), else those of a fine-tuned model
    directory's task.json `info` (`finetuned.read_task`)."""
    if spm_model_file:
        return spm_model_file, None
    if vocab_file:
        return None, vocab_file
    return info.get("spm_model"), info.get("vocab_file")


def build_module(
    task: str,
    init_checkpoint: str,
    albert_config: AlbertConfig | None = None,
    spm_model_file: str | None = None,
    max_seq_length: int | None = None,
    do_lower_case: bool | None = None,
    vocab_file: str | None = None,
    **squad_options,
):
    """The serving module of `task` with weights from `init_checkpoint` (a fine-tuned
    model directory brings its own config, vocabulary, labels and settings). The
    vocabulary: `spm_model_file`, else `vocab_file` (WordPiece), else the directory's;
    an encoder checkpoint of a pretraining run is checked against the tokenizer its
    records were written with (`check_run_tokenizer`), and takes that run's sequence
    length and casing unless they are given."""
    from albert_tf.checkpoints import finetuned
    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.checkpoints.export_encoder import checkpoint_config

    if task not in TASKS:
        raise ValueError(f"--task {task!r} is not one of {', '.join(TASKS)}")
    info = {}
    if filesystem.exists(os.path.join(init_checkpoint, finetuned.TASK_FILE)):
        info = finetuned.read_task(init_checkpoint)
    elif task != "encoder":
        raise ValueError(
            f"{init_checkpoint} is not a fine-tuned model directory (no "
            f"{finetuned.TASK_FILE}); export a runner's --export_dir, or use "
            f"--task encoder"
        )
    if task != "encoder" and info.get("kind") != task:
        raise ValueError(f"{init_checkpoint} holds a {info.get('kind')} model, not {task}")
    spm_model_file, vocab_file = vocabulary_files(info, spm_model_file, vocab_file)
    if not (spm_model_file or vocab_file):
        raise ValueError(
            "--spm_model_file or --vocab_file is needed (the checkpoint has no vocabulary)"
        )
    run = pretraining_run(init_checkpoint) if task == "encoder" and not info else None
    data = (run[1].get("data") or {}) if run else {}  # (the run's records' settings)
    max_seq_length = (
        max_seq_length or info.get("max_seq_length") or data.get("max_seq_length") or 128
    )
    if do_lower_case is None:
        do_lower_case = data.get("do_lower_case")
    do_lower_case = info.get("do_lower_case", True) if do_lower_case is None else do_lower_case
    if task == "encoder":
        from albert_tf.modeling.encoder import AlbertEncoder
        from data_pipeline.tokenization.choice import tokenizer_for

        if run:
            tokenizer = tokenizer_for(spm_model_file, vocab_file, do_lower_case)
            given = (
                f"--spm_model_file={spm_model_file}"
                if spm_model_file
                else f"--vocab_file={vocab_file}"
            )
            check_run_tokenizer(run, tokenizer, given)
        config, _ = checkpoint_config(init_checkpoint, albert_config)
        model = AlbertEncoder(config)
        model.build()
        load_checkpoint(model, init_checkpoint)
        return EncoderServing(model, spm_model_file, do_lower_case, max_seq_length, vocab_file)
    if task == "squad":
        from albert_tf.serving.squad import SquadServing

        model, info = finetuned.load_finetuned(init_checkpoint)
        return SquadServing(
            model,
            spm_model_file,
            do_lower_case,
            max_seq_length,
            info,
            vocab_file=vocab_file,
            **squad_options,
        )
    model, info = finetuned.load_finetuned(init_checkpoint)
    if task == "multiple_choice":
        return MultipleChoiceServing(
            model, spm_model_file, do_lower_case, max_seq_length, vocab_file
        )
    return ClassifierServing(
        model,
        spm_model_file,
        do_lower_case,
        max_seq_length,
        info.get("labels"),
        bool(info.get("regression")),
        bool(info.get("text_pair", True)),
        vocab_file,
    )


def export(task: str, init_checkpoint: str, export_dir: str, **options) -> str:
    """Builds and writes the SavedModel; returns its version directory."""
    from albert_tf.checkpoints import finetuned

    keep = (
        init_checkpoint
        if filesystem.exists(os.path.join(init_checkpoint, finetuned.TASK_FILE))
        else None
    )
    return write_saved_model(build_module(task, init_checkpoint, **options), export_dir, keep)


FORMATS = ("savedmodel", "tflite")
LITERT_DIR = "litert"


def export_formats(
    task: str,
    init_checkpoint: str,
    export_dir: str,
    formats=("savedmodel",),
    quantize=("float32",),
    fixed_length: bool = False,
    **options,
) -> list[str]:
    """Each of `formats`: the SavedModel as version `export_dir/N`, the on-device files
    as `export_dir/litert/<task>-<quantize>.tflite` (albert_tf.serving.litert), one per
    `quantize`, `fixed_length` or not. Returns what was written."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"export format {unknown[0]!r} is not one of {', '.join(FORMATS)}")
    if "tflite" in formats and task == "squad":  # refused before anything is written
        from albert_tf.checkpoints import finetuned

        task_file = os.path.join(init_checkpoint, finetuned.TASK_FILE)
        info = finetuned.read_task(init_checkpoint) if filesystem.exists(task_file) else {}
        chosen = vocabulary_files(info, options.get("spm_model_file"), options.get("vocab_file"))
        if chosen[1]:
            raise ValueError(
                f"{init_checkpoint}: a WordPiece model; on-device SQuAD files of WordPiece "
                "models are not written (their runner windows text with the SentencePiece "
                "model the file carries)"
            )
    paths = []
    if "savedmodel" in formats:
        paths.append(export(task, init_checkpoint, export_dir, **options))
    if "tflite" in formats:
        from albert_tf.serving.litert import export_tflite

        litert_dir = os.path.join(export_dir, LITERT_DIR)
        paths += export_tflite(task, init_checkpoint, litert_dir, quantize, fixed_length, **options)
    return paths


def export_trained(
    model,
    export_dir: str,
    task: dict,
    spm_model_file: str | None,
    formats=("savedmodel",),
    quantize=("float32",),
    vocab_file: str | None = None,
    **options,
) -> list[str]:
    """A runner's `--export_dir`: `model` (just trained) → fine-tuned model directory →
    SavedModel version `export_dir/N` (with the directory in its assets.extra/finetuned)
    and/or LiteRT files (`export_formats`). The vocabulary: `spm_model_file`, or a
    WordPiece `vocab_file` (SQuAD LiteRT files: SentencePiece only). Returns what was
    written."""
    import tempfile
    from albert_tf.checkpoints import finetuned

    filesystem.makedirs(export_dir)
    # Beside the export (same disk), or in the local temporary directory for a URL.
    scratch = None if filesystem.is_url(export_dir) else export_dir
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".finetuned-") as tmp:
        directory = finetuned.save_finetuned(
            model, os.path.join(tmp, "model"), task, spm_model_file, vocab_file
        )
        return export_formats(task["kind"], directory, export_dir, formats, quantize, **options)


def main(argv=None) -> int:
    from absl import flags
    from albert_tf.cli import parse_tool_flags

    fv = flags.FlagValues()
    flags.DEFINE_enum("task", None, list(TASKS), "What the SavedModel does.", flag_values=fv)
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "A fine-tuned model directory (a runner's "
        "--export_dir), or any checkpoint for --task encoder.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "albert_config_file",
        None,
        "Config (encoder exports of plain checkpoints; found beside the checkpoint otherwise).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "spm_model_file",
        None,
        "SentencePiece model (default: the fine-tuned directory's).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "vocab_file",
        None,
        "WordPiece vocab.txt, instead of --spm_model_file (default: the fine-tuned directory's).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "export_dir",
        None,
        "SavedModel versions are written as EXPORT_DIR/N, LiteRT files in EXPORT_DIR/litert/.",
        flag_values=fv,
    )
    flags.DEFINE_multi_enum(
        "format",
        ["savedmodel"],
        list(FORMATS),
        "savedmodel (TF Serving, TF) and/or tflite (on-device LiteRT, albert_tf.serving.litert).",
        flag_values=fv,
    )
    flags.DEFINE_list(
        "quantize",
        ["float32"],
        "tflite: float32, float16 (float16 weights) and/or int8 (dynamic-range int8 weights).",
        flag_values=fv,
    )
    flags.DEFINE_bool(
        "fixed_length",
        False,
        "tflite: pad every request to max_seq_length (static shapes, for delegates that "
        "need them) instead of to its longest row.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_seq_length",
        None,
        "Default: the fine-tuned model's or the pretraining run's (else 128).",
        flag_values=fv,
    )
    flags.DEFINE_bool(
        "do_lower_case",
        None,
        "Default: the fine-tuned model's or the pretraining run's (else True).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "doc_stride", None, "squad: default the model's (else 128).", flag_values=fv
    )
    flags.DEFINE_integer(
        "max_query_length", None, "squad: default the model's (else 64).", flag_values=fv
    )
    flags.DEFINE_integer(
        "max_answer_length",
        None,
        "squad: longest answer in tokens (default the model's, else 30).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "n_best_size",
        None,
        "squad: start/end candidates per window (default the model's, else 20).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "null_score_diff_threshold",
        None,
        "squad v2.0: default the model's (else 0).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_windows",
        None,
        "squad: the most windows one request may need (default the model's, else "
        "albert_tf.serving.squad_windows.DEFAULT_MAX_WINDOWS); beyond, an error.",
        flag_values=fv,
    )
    if not parse_tool_flags(fv, argv, ["task", "init_checkpoint", "export_dir"]):
        return 2
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.modeling.config import ConfigError

    squad = (
        {
            k: fv[k].value
            for k in (
                "doc_stride",
                "max_query_length",
                "max_answer_length",
                "n_best_size",
                "null_score_diff_threshold",
                "max_windows",
            )
            if fv[k].value is not None
        }
        if fv.task == "squad"
        else {}
    )
    try:
        config = (
            AlbertConfig.from_json_file(fv.albert_config_file) if fv.albert_config_file else None
        )
        paths = export_formats(
            fv.task,
            fv.init_checkpoint,
            fv.export_dir,
            fv.format,
            fv.quantize,
            fv.fixed_length,
            albert_config=config,
            spm_model_file=fv.spm_model_file,
            vocab_file=fv.vocab_file,
            max_seq_length=fv.max_seq_length,
            do_lower_case=fv.do_lower_case,
            **squad,
        )
    except (ValueError, OSError, CheckpointError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"exported {fv.task}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
