"""Train ALBERT's SentencePiece vocabulary on a pretraining corpus (`train_sentencepiece`;
the command is `python -m data_pipeline.tokenization.train_tokenizer`).

ALBERT's recipe (the official `spm_train` command): a unigram model with `<pad>`=0,
`<unk>`=1, no BOS/EOS, control symbols `[CLS]` `[SEP]` `[MASK]` (ids 2, 3, 4), the
user-defined symbols `( ) " - . – £ €` (always single pieces), character_coverage 0.99995,
and a uniform random sample of at most 10M sentences (`input_sentence_size`).

Input is read by `data_pipeline.documents`, the reader that creates pretraining data (comma
separated globs, gzip, text or jsonl, optional sentence splitting); every sentence is one
training line. Each is normalized by `tokenization.normalize_text` (whitespace, quotes,
accents, lowercasing when `do_lower_case`): `AlbertTokenizer` owns normalization and applies
exactly this before encoding, so the pieces are learned on the text they will encode.

Sampling. The corpus is streamed; only the sample is held in memory (UTF-8 bytes), drawn by
reservoir sampling (Algorithm R) with `random.Random(seed)` over the valid sentences and
handed to SentencePiece in corpus order. SentencePiece's own sampler
(`shuffle_input_sentence`) is not used for the draw: in sentencepiece 0.2.3 it ignores
`set_random_generator_seed` (its sample is fixed within a process and differs between
processes), so models would not be reproducible. SentencePiece is still told
`input_sentence_size` and `shuffle_input_sentence=true`, which it records in the model; it
never gets more sentences than that, so its sampler keeps them all, in order.

Determinism: the same files, options (seed, num_threads, ...) and sentencepiece version
give a byte-identical `.model`, in any process and at any output path (the model records no
path; tested across processes, not across CPU types). `num_threads` changes the model (EM
sums per thread: scores move by ~3e-5, and 2-3 near-tied pieces of 2000 swap), so it
defaults to 16, the official value, rather than to the machine's core count.

Output: PREFIX.model and PREFIX.vocab, each written to a temporary file in the same
directory and moved into place with os.replace (the .vocab first, so a new .model always
has its .vocab); the model is checked with `AlbertTokenizer` (special ids 0-4) before
either is replaced. PREFIX and the input globs may be URLs (gs://, ram://, ...:
`data_pipeline.io.filesystem`); SentencePiece trains from the sentences streamed to it and
returns the model as bytes, so nothing needs a local copy. Sentences SentencePiece would
skip (longer than `max_sentence_length` bytes) or that normalize to nothing are dropped
here and counted in the report.
"""

from __future__ import annotations

import array
import hashlib
import io
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from data_pipeline.documents import FORMATS, ReadStats, expand_input_files, plan_blocks, read_block
from data_pipeline.io import filesystem
from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SPECIAL_PIECES,
    AlbertTokenizer,
    normalize_text,
)

CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "–", "£", "€")
DEFAULT_NUM_THREADS = 16  # official value; fixed so that the model is reproducible
MAX_SENTENCE_LENGTH = 4192  # SentencePiece's default, in bytes
PROGRESS_SECONDS = 10.0


def train_sentencepiece(
    input_files: str | Sequence[str],
    model_prefix: str,
    vocab_size: int,
    do_lower_case: bool = True,
    input_format: str = "auto",
    split_sentences: bool = False,
    input_sentence_size: int = 10_000_000,
    seed: int = 12345,
    num_threads: int = DEFAULT_NUM_THREADS,
    character_coverage: float = 0.99995,
    user_defined_symbols: Sequence[str] = USER_DEFINED_SYMBOLS,
    max_sentence_length: int = MAX_SENTENCE_LENGTH,
    block_size: int = 1 << 20,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Trains a SentencePiece unigram model with ALBERT's recipe; writes PREFIX.model/.vocab.

    Args:
      input_files: comma-separated globs, or a list of globs/paths (see
        `documents.expand_input_files`); a pattern matching nothing is an error.
      model_prefix: output path without extension; its directory is created.
      vocab_size: number of pieces, special and user-defined symbols included.
      do_lower_case: lowercase in normalization (uncased model); use the same value for
        `AlbertTokenizer`.
      input_format, split_sentences, block_size: as in `data_pipeline.documents`.
      input_sentence_size: train on a uniform sample of at most this many sentences;
        0 trains on every sentence (streamed to SentencePiece, nothing held here).
      seed: the sample's seed (also given to `sentencepiece.set_random_generator_seed`).
      num_threads: SentencePiece threads; part of what determines the model.
      character_coverage, user_defined_symbols, max_sentence_length: SentencePiece's.
      progress: called with one-line progress messages (e.g. `print`); None is silent.

    Returns a report (JSON-serializable dict): output paths, the model's sha256, counts
    of what was read, dropped and sampled.

    Raises:
      FileNotFoundError: an input pattern matches no file.
      ValueError: invalid arguments, no sentences in the input, malformed jsonl, or a
        vocab_size the corpus cannot fill (or too small for its characters).
      OSError: the output cannot be written.
    """
    import sentencepiece as spm

    start = time.time()
    say = progress or (lambda message: None)
    if vocab_size < len(SPECIAL_PIECES) + len(user_defined_symbols) + 1:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: the {len(SPECIAL_PIECES)} "
            f"special and {len(user_defined_symbols)} user-defined pieces alone "
            "take that many"
        )
    if input_sentence_size < 0 or 0 < input_sentence_size <= 100:
        raise ValueError(
            f"input_sentence_size={input_sentence_size}: use 0 (every sentence) "
            "or more than 100 (SentencePiece's minimum)"
        )
    if not 0 <= seed < 2**32 - 1:
        raise ValueError(f"seed={seed} must be in [0, 2**32 - 1)")
    if not 1 <= num_threads <= 1024:
        raise ValueError(f"num_threads={num_threads} must be in [1, 1024]")
    if input_format not in FORMATS:
        raise ValueError(f"input_format={input_format!r} is not one of {FORMATS}")
    if not model_prefix or os.path.basename(model_prefix) == "":
        raise ValueError(f"model_prefix={model_prefix!r} must name a file prefix, not a directory")

    files = expand_input_files(input_files)
    if not files:
        raise ValueError("no input files given (input_files is empty)")
    total_bytes = sum(filesystem.getsize(f) for f in files)
    say(f"input: {len(files)} file(s), {total_bytes / 1e6:,.1f} MB on disk")

    # Temporary outputs first: an unwritable destination fails now, not after training.
    model_file, vocab_file = model_prefix + ".model", model_prefix + ".vocab"
    remote = filesystem.is_url(model_prefix)
    out_dir = os.path.dirname(model_prefix if remote else os.path.abspath(model_prefix))
    base = os.path.basename(model_prefix)
    temporary = []
    try:
        filesystem.makedirs(out_dir)
        for suffix in (".model", ".vocab"):
            # Not tempfile.mkstemp: its files are 0600, these get the umask's permissions.
            path = os.path.join(out_dir, f".{base}{suffix}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
            if remote:  # a random name: no exclusive create on object stores
                filesystem.open(path, "wb").close()
            else:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            temporary.append(path)
    except OSError as e:
        _remove(temporary)
        raise type(e)(f"cannot write the tokenizer to {out_dir}: {e.strerror or e}") from None
    tmp_model, tmp_vocab = temporary

    try:
        stats = ReadStats()
        counts = {"empty": 0, "too_long": 0, "valid": 0}
        sentences = _normalized_sentences(
            files,
            input_format,
            split_sentences,
            block_size,
            do_lower_case,
            max_sentence_length,
            stats,
            counts,
            say,
        )
        if input_sentence_size:
            sample, order = _reservoir_sample(sentences, input_sentence_size, seed)
            _check_not_empty(counts, stats, files)
            say(
                _read_summary(counts, stats, files)
                + f"; sampled {len(sample):,} (input_sentence_size={input_sentence_size:,}, "
                f"seed={seed})"
            )
            feed: Iterator[bytes] = _in_order(sample, order)
            n_sampled = len(sample)
        else:
            feed = sentences  # streamed: SentencePiece holds the corpus, we hold nothing
            n_sampled = None

        say(
            f"training SentencePiece unigram: vocab_size={vocab_size:,}, "
            f"num_threads={num_threads}"
            + (f", {n_sampled:,} sentences" if n_sampled is not None else ", every sentence")
        )
        errors: list[BaseException] = []
        model = io.BytesIO()
        spm.set_random_generator_seed(seed)
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=_recording(feed, errors),
                model_writer=model,
                model_type="unigram",
                vocab_size=vocab_size,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=list(CONTROL_SYMBOLS),
                user_defined_symbols=list(user_defined_symbols),
                character_coverage=character_coverage,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                max_sentence_length=max_sentence_length,
                num_threads=num_threads,
                minloglevel=1,
            )
        except (RuntimeError, ValueError, IndexError) as e:
            if errors:  # the reader failed (e.g. malformed jsonl) while streaming
                raise errors[0] from None
            if n_sampled is None:
                _check_not_empty(counts, stats, files)
            raise _explain(
                e,
                vocab_size,
                character_coverage,
                n_sampled if n_sampled is not None else counts["valid"],
            ) from None
        if n_sampled is None:
            n_sampled = counts["valid"]
            say(_read_summary(counts, stats, files) + "; all used (input_sentence_size=0)")

        proto = model.getvalue()
        with filesystem.open(tmp_model, "wb") as f:
            f.write(proto)
        tokenizer = AlbertTokenizer(tmp_model, do_lower_case=do_lower_case)
        ids = (
            tokenizer.pad_id,
            tokenizer.unk_id,
            tokenizer.cls_id,
            tokenizer.sep_id,
            tokenizer.mask_id,
        )
        if ids != (0, 1, 2, 3, 4):
            raise RuntimeError(
                f"trained model has special ids {ids} for {SPECIAL_PIECES}, "
                "expected (0, 1, 2, 3, 4)"
            )
        with filesystem.open(tmp_vocab, "w") as f:
            f.write(vocab_text(tokenizer.sp))
        filesystem.replace(tmp_vocab, vocab_file)
        filesystem.replace(tmp_model, model_file)
    finally:
        _remove(temporary)

    checksum = hashlib.sha256(proto).hexdigest()
    seconds = time.time() - start
    say(
        f"wrote {model_file} ({tokenizer.vocab_size:,} pieces, sha256 {checksum[:16]}...) "
        f"and {vocab_file} in {seconds:.1f}s"
    )
    return {
        "model_file": model_file,
        "vocab_file": vocab_file,
        "model_sha256": checksum,
        "vocab_size": tokenizer.vocab_size,
        "do_lower_case": do_lower_case,
        "input_files": len(files),
        "input_bytes": stats.bytes,
        "documents": stats.documents,
        "sentences_seen": stats.sentences,
        "sentences_empty": counts["empty"],
        "sentences_too_long": counts["too_long"],
        "sentences_valid": counts["valid"],
        "sentences_sampled": n_sampled,
        "input_sentence_size": input_sentence_size,
        "seed": seed,
        "num_threads": num_threads,
        "invalid_utf8_lines": stats.invalid_utf8_lines,
        "empty_files": stats.empty_files,
        "sentencepiece_version": spm.__version__,
        "seconds": round(seconds, 2),
    }


def vocab_text(sp) -> str:
    """The .vocab file of a SentencePieceProcessor: `piece<TAB>score` per line, scores as
    SentencePiece's own trainer prints them (C++ stream default, i.e. %g)."""
    return "".join(
        f"{sp.id_to_piece(i)}\t{sp.get_score(i):g}\n" for i in range(sp.get_piece_size())
    )


def _normalized_sentences(
    files, input_format, split, block_size, do_lower_case, max_length, stats, counts, say
) -> Iterator[bytes]:
    """Every sentence of the corpus, normalized, as UTF-8; empty and too-long ones are
    counted and skipped (SentencePiece would skip them silently)."""
    blocks = plan_blocks(files, block_size, input_format)
    last = time.time()
    for block in blocks:
        for _, documents in read_block(block, block_size, split, stats):
            for document in documents:
                for sentence in document:
                    data = normalize_text(sentence, do_lower_case).encode("utf-8")
                    if not data:
                        counts["empty"] += 1
                    elif len(data) > max_length:
                        counts["too_long"] += 1
                    else:
                        counts["valid"] += 1
                        yield data
            if time.time() - last > PROGRESS_SECONDS:
                last = time.time()
                say(
                    f"read {stats.bytes / 1e6:,.1f} MB of text (file {block.file_index + 1} "
                    f"of {len(files)}): {counts['valid']:,} sentences"
                )


def _reservoir_sample(items: Iterable[bytes], size: int, seed: int):
    """A uniform sample of at most `size` items (Algorithm R) and each one's position in
    the stream. Memory: the sample and 8 bytes an item."""
    rng = random.Random(seed)
    sample: list[bytes] = []
    position = array.array("q")
    for i, item in enumerate(items):
        if i < size:
            sample.append(item)
            position.append(i)
        else:
            j = rng.randrange(i + 1)
            if j < size:
                sample[j] = item
                position[j] = i
    return sample, position


def _in_order(sample: list, position: array.array) -> Iterator[bytes]:
    """The sample in corpus order, releasing each item once SentencePiece has copied it."""
    import numpy as np

    order = np.argsort(np.frombuffer(position, dtype=np.int64), kind="stable") if position else ()
    for j in order:
        item, sample[j] = sample[j], None
        yield item


def _recording(items: Iterator[bytes], errors: list) -> Iterator[bytes]:
    """`items`, recording an exception raised while iterating: SentencePiece turns it into
    an opaque RuntimeError, the caller re-raises the original."""
    try:
        yield from items
    except BaseException as e:
        errors.append(e)
        raise


def _read_summary(counts, stats, files) -> str:
    dropped = []
    if counts["empty"]:
        dropped.append(f"{counts['empty']:,} empty after normalization")
    if counts["too_long"]:
        dropped.append(
            f"{counts['too_long']:,} longer than max_sentence_length, skipped "
            "(one paragraph a line? try split_sentences)"
        )
    if stats.invalid_utf8_lines:
        dropped.append(f"{stats.invalid_utf8_lines:,} lines with invalid UTF-8 (replaced)")
    return (
        f"read {counts['valid']:,} sentences in {stats.documents:,} documents from "
        f"{len(files)} file(s)" + (f" ({'; '.join(dropped)})" if dropped else "")
    )


def _check_not_empty(counts, stats, files) -> None:
    if counts["valid"] == 0:
        where = files[0] if len(files) == 1 else f"{len(files)} input files"
        raise ValueError(
            f"no sentences to train on in {where} ({stats.empty_files} empty "
            f"file(s), {counts['empty']} empty and {counts['too_long']} too long "
            "sentence(s))"
        )


def _explain(
    error: Exception, vocab_size: int, character_coverage: float, sentences: int
) -> Exception:
    """SentencePiece's error as a one-line message that says what to change."""
    message = str(error)
    if "Vocabulary size too high" in message:
        most = re.search(r"value <= (\d+)", message)
        limit = f" (at most {int(most.group(1)):,} here)" if most else ""
        return ValueError(
            f"vocab_size={vocab_size:,} is too large for this corpus: "
            f"{sentences:,} sentences do not yield that many pieces{limit}; "
            "use a smaller vocab_size or more text"
        )
    if "smaller than required_chars" in message:
        need = re.search(r"(\d+) vs (\d+)", message)
        pieces = f"{int(need.group(2)):,} pieces" if need else "more pieces"
        return ValueError(
            f"vocab_size={vocab_size:,} is too small: this corpus needs {pieces} "
            "for its characters and special symbols (character_coverage="
            f"{character_coverage}); use a larger vocab_size or a lower "
            "character_coverage"
        )
    return RuntimeError(f"SentencePiece training failed: {message}")


def _remove(paths: Iterable[str]) -> None:
    for path in paths:
        try:
            filesystem.remove(path)
        except FileNotFoundError:
            pass
