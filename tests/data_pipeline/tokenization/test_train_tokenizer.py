"""train_tokenizer: ALBERT's SentencePiece recipe fed by our reader and normalization,
a reproducible sample, atomic output, clear errors, the CLI, and real Chinese text."""

import gzip
import hashlib
import importlib
import inspect
import json
import os
import pathlib

import pytest

from data_pipeline.documents import split_sentences
from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SPECIAL_PIECES,
    AlbertTokenizer,
    normalize_text,
)
from data_pipeline.tokenization.sentencepiece_trainer import (
    CONTROL_SYMBOLS,
    USER_DEFINED_SYMBOLS,
    _reservoir_sample,
    train_sentencepiece,
    vocab_text,
)
from data_pipeline.tokenization.train_tokenizer import main
from tests.support.in_process import run_command

ROOT = pathlib.Path(__file__).resolve().parents[3]
MODULES = (
    "argparse",
    "ast",
    "asyncio",
    "calendar",
    "collections",
    "configparser",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fractions",
    "functools",
    "gettext",
    "heapq",
    "http.client",
    "inspect",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "mailbox",
    "optparse",
    "os",
    "pathlib",
    "pickle",
    "pydoc",
    "random",
    "re",
    "shutil",
    "socket",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "zipfile",
)


def docstring_documents() -> list[list[str]]:
    """Documents (lists of sentences, mixed case) from standard-library docstrings."""
    documents, seen = [], set()
    for name in MODULES:
        module = importlib.import_module(name)
        for obj in [module] + [
            o
            for _, o in sorted(vars(module).items())
            if inspect.isclass(o) or inspect.isfunction(o)
        ]:
            doc = inspect.getdoc(obj)
            if not doc or doc in seen:
                continue
            seen.add(doc)
            sentences = [
                s for para in doc.split("\n\n") for s in split_sentences(" ".join(para.split()))
            ]
            if sentences:
                documents.append(sentences)
    return documents


def write_text(path, documents) -> str:
    """The official format: one sentence a line, a blank line between documents."""
    text = "\n\n".join("\n".join(d) for d in documents) + "\n"
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return str(path)


@pytest.fixture(scope="module")
def documents():
    docs = docstring_documents()
    assert sum(map(len, docs)) > 2000
    return docs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, documents):
    return write_text(tmp_path_factory.mktemp("corpus") / "docs.txt", documents)


def sha256(path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def model_proto(path):
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(pathlib.Path(path).read_bytes())
    return proto


def normal_pieces(path) -> list[str]:
    proto = model_proto(path)
    return [p.piece for p in proto.pieces if p.type == p.NORMAL]


def test_albert_recipe(tmp_path, corpus, documents):
    report = train_sentencepiece(corpus, str(tmp_path / "out" / "spm"), 1000)
    assert report["model_file"] == str(tmp_path / "out" / "spm.model")
    assert report["model_sha256"] == sha256(report["model_file"])
    assert report["vocab_size"] == 1000 and report["num_threads"] == 16
    assert report["sentences_seen"] == sum(map(len, documents))
    assert report["documents"] == len(documents)
    assert report["sentences_sampled"] == report["sentences_valid"] == report["sentences_seen"]
    tok = AlbertTokenizer(report["model_file"])
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    proto = model_proto(report["model_file"])
    pieces = proto.pieces
    assert [p.piece for p in pieces[:13]] == list(SPECIAL_PIECES) + list(USER_DEFINED_SYMBOLS)
    assert [p.type for p in pieces[2:5]] == [pieces[0].CONTROL] * 3
    assert all(p.type == p.USER_DEFINED for p in pieces[5:13])
    spec = proto.trainer_spec
    assert spec.model_type == spec.UNIGRAM and spec.vocab_size == 1000
    assert (spec.pad_id, spec.unk_id, spec.bos_id, spec.eos_id) == (0, 1, -1, -1)
    assert list(spec.control_symbols) == list(CONTROL_SYMBOLS)
    assert abs(spec.character_coverage - 0.99995) < 1e-7  # float32
    assert spec.input_sentence_size == 10_000_000 and spec.shuffle_input_sentence
    assert spec.model_prefix == ""  # no path in the model: reproducible anywhere
    # User-defined symbols are always pieces of their own; the vocab file lists the model.
    assert '"' in tok.tokenize("a ``quoted'' word (x) - y.")
    vocab = pathlib.Path(report["vocab_file"]).read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[0] for line in vocab] == [p.piece for p in pieces]
    assert not [f for f in os.listdir(tmp_path / "out") if f.endswith(".tmp")]


def test_vocab_file_is_sentencepieces_own(tmp_path, documents):
    import sentencepiece as spm

    sentences = [s for d in documents[:300] for s in d]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_prefix=str(tmp_path / "sp"),
        vocab_size=400,
        num_threads=1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    assert vocab_text(sp) == (tmp_path / "sp.vocab").read_text(encoding="utf-8")


def test_lower_case_and_cased(tmp_path, corpus):
    lower = train_sentencepiece(corpus, str(tmp_path / "uncased"), 600, num_threads=1)
    pieces = normal_pieces(lower["model_file"])
    assert pieces and all(p == p.lower() for p in pieces)
    cased = train_sentencepiece(
        corpus, str(tmp_path / "cased"), 600, do_lower_case=False, num_threads=1
    )
    pieces = normal_pieces(cased["model_file"])
    assert sum(p != p.lower() for p in pieces) > 20
    tok = AlbertTokenizer(cased["model_file"], do_lower_case=False)
    assert any(p != p.lower() for p in tok.tokenize("Return the Value of the Object."))


def test_same_seed_same_bytes_across_processes(tmp_path, corpus):
    """The sample and the model depend only on the input and the options: a second run in
    another process (where SentencePiece's own sampler would draw differently) gives the
    same bytes; another seed draws another sample and gives another model."""
    options = dict(vocab_size=300, input_sentence_size=300, seed=7)
    first = train_sentencepiece(corpus, str(tmp_path / "a"), **options)
    assert first["sentences_valid"] > 2000
    assert first["sentences_sampled"] == 300 <= options["input_sentence_size"]
    run = run_command(
        "-m",
        "data_pipeline.tokenization.train_tokenizer",
        f"--input_file={corpus}",
        f"--model_prefix={tmp_path / 'b'}",
        "--vocab_size=300",
        "--input_sentence_size=300",
        "--seed=7",
        timeout=60,
    )
    assert run.returncode == 0, run.report()
    assert sha256(tmp_path / "b.model") == first["model_sha256"]
    assert (tmp_path / "b.vocab").read_bytes() == (tmp_path / "a.vocab").read_bytes()
    other = train_sentencepiece(corpus, str(tmp_path / "c"), **{**options, "seed": 8})
    assert other["sentences_sampled"] == 300
    assert other["model_sha256"] != first["model_sha256"]
    assert normal_pieces(other["model_file"]) != normal_pieces(first["model_file"])


def test_reservoir_sample():
    sample, position = _reservoir_sample((f"s{i}".encode() for i in range(5000)), 200, seed=1)
    assert len(sample) == 200 and len(set(sample)) == 200
    assert all(item == f"s{i}".encode() for item, i in zip(sample, position))
    again, _ = _reservoir_sample((f"s{i}".encode() for i in range(5000)), 200, seed=1)
    other, _ = _reservoir_sample((f"s{i}".encode() for i in range(5000)), 200, seed=2)
    assert again == sample and other != sample
    assert sum(i >= 2500 for i in position) in range(70, 131)  # uniform: ~100 per half
    small, position = _reservoir_sample((bytes([i]) for i in range(50)), 200, seed=1)
    assert small == [bytes([i]) for i in range(50)] and list(position) == list(range(50))


def test_sampling_everything_equals_streaming(tmp_path, corpus):
    """input_sentence_size above the corpus keeps every sentence in corpus order: the same
    pieces as streaming the whole corpus (input_sentence_size=0)."""
    sampled = train_sentencepiece(corpus, str(tmp_path / "s"), 500, num_threads=1)
    streamed = train_sentencepiece(
        corpus, str(tmp_path / "t"), 500, num_threads=1, input_sentence_size=0
    )
    assert streamed["sentences_sampled"] == sampled["sentences_sampled"]
    a, b = model_proto(sampled["model_file"]), model_proto(streamed["model_file"])
    assert [(p.piece, p.score) for p in a.pieces] == [(p.piece, p.score) for p in b.pieces]


def test_gzip_jsonl_and_globs(tmp_path, documents):
    half = len(documents) // 2
    (tmp_path / "plain").mkdir()
    plain = write_text(tmp_path / "plain" / "docs.txt", documents[:half])
    zipped = write_text(tmp_path / "docs.txt.gz", documents[:half])
    assert sha256(
        train_sentencepiece(plain, str(tmp_path / "p"), 500, num_threads=1)["model_file"]
    ) == sha256(train_sentencepiece(zipped, str(tmp_path / "z"), 500, num_threads=1)["model_file"])
    with gzip.open(tmp_path / "more.jsonl.gz", "wt", encoding="utf-8") as f:
        for d in documents[half:]:
            f.write(json.dumps({"text": " ".join(d), "id": len(d)}) + "\n")
    report = train_sentencepiece(
        f"{tmp_path}/*.txt.gz, {tmp_path}/*.jsonl.gz", str(tmp_path / "mixed"), 800, num_threads=1
    )
    assert report["input_files"] == 2
    assert report["documents"] == len(documents)
    assert report["sentences_seen"] > sum(len(d) for d in documents[:half]) + 1000
    tok = AlbertTokenizer(report["model_file"])
    assert tok.unk_id not in tok.encode("Return a new list of the items in the iterable.")


def test_clear_errors(tmp_path, corpus):
    with pytest.raises(FileNotFoundError, match=r"'.*nothing\*\.txt' matches no file"):
        train_sentencepiece(str(tmp_path / "nothing*.txt"), str(tmp_path / "m"), 500)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n   \n\t\n")
    for size in (10_000_000, 0):
        with pytest.raises(ValueError, match=r"no sentences to train on in .*blank\.txt"):
            train_sentencepiece(str(blank), str(tmp_path / "m"), 500, input_sentence_size=size)
    (tmp_path / "m.model").write_bytes(b"an earlier model")
    with pytest.raises(
        ValueError,
        match=r"vocab_size=50,000 is too large for this corpus.*"
        r"at most [\d,]+ here.*use a smaller vocab_size",
    ):
        train_sentencepiece(corpus, str(tmp_path / "m"), 50_000, num_threads=1)
    assert (tmp_path / "m.model").read_bytes() == b"an earlier model"  # untouched
    with pytest.raises(
        ValueError,
        match=r"vocab_size=20 is too small: this corpus needs "
        r"\d+ pieces",
    ):
        train_sentencepiece(corpus, str(tmp_path / "m"), 20, num_threads=1)
    with pytest.raises(ValueError, match="input_sentence_size=50"):
        train_sentencepiece(corpus, str(tmp_path / "m"), 500, input_sentence_size=50)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(OSError, match=r"cannot write the tokenizer to .*file"):
        train_sentencepiece(corpus, str(not_a_dir / "sub" / "m"), 500)
    assert sorted(os.listdir(tmp_path)) == ["blank.txt", "file", "m.model"]  # no temp files


def test_reader_error_while_streaming(tmp_path):
    """A malformed jsonl line met while SentencePiece pulls the stream is reported as the
    reader's own error (file and line), not as SentencePiece's opaque one."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "A fine first document."}\n{"text": broken\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: invalid JSON"):
        train_sentencepiece(str(bad), str(tmp_path / "m"), 500, input_sentence_size=0)
    assert os.listdir(tmp_path) == ["bad.jsonl"]


def test_main_end_to_end(tmp_path, corpus, capsys):
    prefix = tmp_path / "cli" / "spm"
    assert (
        main(
            [
                "train_tokenizer",
                f"--input_file={corpus}",
                f"--model_prefix={prefix}",
                "--vocab_size=400",
                "--nodo_lower_case",
                "--num_threads=2",
                "--input_sentence_size=1000",
                "--seed=3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "special ids: <pad>=0 <unk>=1 [CLS]=2 [SEP]=3 [MASK]=4" in out
    assert "sampled 1,000" in out and "training SentencePiece unigram" in out
    report = json.loads(out[out.index("\n{") + 1 :])
    assert report["model_file"] == f"{prefix}.model" and report["vocab_size"] == 400
    assert report["sentences_sampled"] == 1000 and report["seed"] == 3
    assert report["do_lower_case"] is False and report["num_threads"] == 2
    assert report["model_sha256"] == sha256(f"{prefix}.model")

    assert (
        main(["train_tokenizer", f"--input_file={tmp_path}/none*.txt", f"--model_prefix={prefix}"])
        == 1
    )
    assert "error: input pattern" in capsys.readouterr().err
    assert main(["train_tokenizer", f"--model_prefix={prefix}"]) == 2
    assert "input_file" in capsys.readouterr().err
    assert (
        main(["train_tokenizer", f"--input_file={corpus}", f"--model_prefix={prefix}", "stray"])
        == 2
    )
    assert "unexpected arguments ['stray']" in capsys.readouterr().err


def test_chinese_news(tmp_path, shared_data):
    """Real text in the official format: a small Chinese vocabulary encodes Chinese
    sentences into words and characters, not into <unk>."""
    news = shared_data / "corpus" / "zh_news" / "news_zh_1.txt"
    report = train_sentencepiece(str(news), str(tmp_path / "zh"), 2000)
    assert report["sentences_seen"] > 200 and report["documents"] >= 10
    tok = AlbertTokenizer(report["model_file"])
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    in_corpus = "最后的南京老城该往何处去 城市化时代呼唤文化自觉"
    unseen = "他在北京大学获得博士学位，现任教于南京大学。"
    for text in (in_corpus, unseen):
        ids = tok.encode(text)
        assert len(ids) >= 5 and ids.count(tok.unk_id) <= len(ids) // 10, tok.tokenize(text)
        assert len(ids) < len(normalize_text(text))  # multi-character pieces were learned
    assert tok.tokenize(unseen)[-1] == "。"


# --- WordPiece ------------------------------------------------------------------------------


def _wordpiece_corpus(tmp_path, shared_data):
    """ChnSentiCorp's dev reviews and an English address: Chinese, Latin words, numbers."""
    chn = (shared_data / "chinese" / "ChnSentiCorp" / "dev.tsv").read_text(encoding="utf-8")
    speech = shared_data / "corpus" / "en_speeches" / "inaugural"
    english = sorted(speech.glob("*.txt"))[-1].read_text(encoding="utf-8", errors="replace")
    corpus = tmp_path / "corpus.txt"
    lines = [line.split("\t")[0] for line in chn.splitlines()[1:]] + english.splitlines()
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus, [line for line in lines if line.strip()]


def test_wordpiece_vocabulary_covers_its_text_and_reruns_give_the_same_file(
    tmp_path, shared_data, capsys
):
    """--kind wordpiece: a vocab.txt in the official Chinese layout that WordPieceTokenizer
    loads, holding every CJK character of the text with its ## form, that encodes the text
    without [UNK] (words of over 100 characters aside); a rerun, and the command line in
    another process, write the same bytes (Hugging Face's trainer alone does not)."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer
    from data_pipeline.tokenization.wordpiece_trainer import train_wordpiece

    corpus, lines = _wordpiece_corpus(tmp_path, shared_data)
    report = train_wordpiece(str(corpus), str(tmp_path / "a" / "vocab.txt"), 8000)
    tok = WordPieceTokenizer(report["vocab_file"])
    assert tok.vocab_size == report["vocab_size"] == 8000
    assert tok.vocab[:2] == ["[PAD]", "[unused1]"] and tok.vocab[99] == "[unused99]"
    assert (tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (100, 101, 102, 103)
    cjk = {c for line in lines for c in line if "\u4e00" <= c <= "\u9fff"}
    assert report["cjk_characters"] >= len(cjk) > 1500
    assert all(c in tok.token_to_id and "##" + c in tok.token_to_id for c in cjk)
    assert report["unused_filled"] == 0 and report["sentences"] == len(lines)
    unknown = [line for line, ids in zip(lines, tok.encode_batch(lines)) if tok.unk_id in ids]
    assert all(max(len(w) for w in line.split()) > 100 for line in unknown), unknown[:3]
    learned = [t for t in tok.vocab[104 + 2 * len(cjk) :] if not t.startswith("[unused")]
    assert {"the", "of", "##s"} <= set(learned) and max(map(len, learned)) > 6

    train_wordpiece(str(corpus), str(tmp_path / "b" / "vocab.txt"), 8000)
    first = (tmp_path / "a" / "vocab.txt").read_bytes()
    assert (tmp_path / "b" / "vocab.txt").read_bytes() == first
    run = run_command(
        "-m",
        "data_pipeline.tokenization.train_tokenizer",
        "--kind=wordpiece",
        f"--input_file={corpus}",
        f"--vocab_file={tmp_path / 'c' / 'vocab.txt'}",
        "--vocab_size=8000",
    )
    assert run.returncode == 0, run.report()
    assert (tmp_path / "c" / "vocab.txt").read_bytes() == first
    assert json.loads(run.stdout[run.stdout.index("\n{") + 1 :])["vocab_sha256"] == (
        hashlib.sha256(first).hexdigest()
    )


def test_wordpiece_errors_are_one_line(tmp_path, shared_data, capsys):
    from data_pipeline.tokenization.wordpiece_trainer import train_wordpiece

    corpus, _ = _wordpiece_corpus(tmp_path, shared_data)
    with pytest.raises(ValueError, match=r"vocab_size=1,000 is too small: the text holds"):
        train_wordpiece(str(corpus), str(tmp_path / "small.txt"), 1000)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="no sentences to train on in .*empty.txt"):
        train_wordpiece(str(empty), str(tmp_path / "none.txt"), 1000)
    assert not (tmp_path / "small.txt").exists() and not (tmp_path / "none.txt").exists()
    assert main(["train_tokenizer", "--kind=wordpiece", f"--input_file={corpus}"]) == 2
    assert "--kind wordpiece writes --vocab_file" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_vocab_size_below_one_is_refused_naming_the_flag(tmp_path, capsys, value):
    """Q06: --vocab_size 0 silently meant the default 30,000 (`s.vocab_size or 30000`)."""
    from data_pipeline.tokenization.train_tokenizer import main

    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n")
    argv = ["train_tokenizer", f"--input_file={corpus}", f"--model_prefix={tmp_path / 'm'}"]
    assert main([*argv, f"--vocab_size={value}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "vocab_size" in error and value in error
    assert not (tmp_path / "m.model").exists()
