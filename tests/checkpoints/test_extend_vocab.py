"""albert-extend-vocab: a released tokenizer plus new words, and its checkpoint grown to fit.

For both tokenizer kinds (the German ALBERT-recipe SentencePiece model of the real data, a
WordPiece vocab.txt learned from it): every new word is one new piece at the end, every old
id keeps its piece, real text without the new words tokenizes exactly as before (in Python
and in the graph), the model gives the same sequence and pooled outputs on it, and each new
embedding row and MLM bias is the mean of the old pieces' rows. The extended model exported
to Hugging Face gives our outputs with Hugging Face's own tokenizer. Bad input is one line
naming the flag, file and line, and nothing is written."""

import json

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA
from tests.support.in_process import run_command
from tests.support.tiny import tiny_config

SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
# New words: none is a piece yet ("Transformer" is lowercased as the model's text is).
SPM_WORDS = ["covid", "tokenization", "bundestag", "Transformer"]
WP_WORDS = ["covid", "tokenizations", "##graphies"]


def _corpus_lines(words, limit=400) -> list[str]:
    """Real English lines (inaugural addresses, WikiText-2) holding none of `words`, even
    inside another word."""
    files = sorted((SHARED_DATA / "corpus" / "en_speeches" / "inaugural").glob("*.txt"))[:20]
    files.append(SHARED_DATA / "corpus" / "wikitext-2" / "valid.txt")
    forms = [w.lstrip("#").lower() for w in words]
    lines = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not any(f in line.lower() for f in forms):
                lines.append(line.strip())
    return lines[:: max(1, len(lines) // limit)][:limit]


def _source_checkpoint(directory, vocab_size, seed=0):
    """A tiny pretraining model (encoder, MLM and SOP heads) with every weight random, the
    MLM biases too (a zero bias would hide a wrong bias row)."""
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer

    keras.utils.set_random_seed(seed)
    config = tiny_config(vocab_size=vocab_size)
    model = AlbertPretrainer(config)
    model.build()
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(0, 0.2, w.shape))
    save_checkpoint(model, str(directory), config)
    return str(directory)


def _pretrainer(directory):
    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.models import AlbertPretrainer

    model = AlbertPretrainer(AlbertConfig.from_json_file(str(directory / "albert_config.json")))
    report = load_checkpoint(model, str(directory))
    assert report.missing == []
    return model


def _extend(tmp_path, flag, tokenizer_file, words, source, name="out"):
    pieces = tmp_path / f"{name}-words.txt"
    pieces.write_text("\n".join(words) + "\n", encoding="utf-8")
    out = tmp_path / name
    ran = run_command(
        "-m",
        "albert_tf.checkpoints.extend_vocab",
        f"--init_checkpoint={source}",
        f"{flag}={tokenizer_file}",
        f"--new_pieces={pieces}",
        f"--output_dir={out}",
    )
    return ran, out, pieces


def _batch(ids_rows, length=40):
    """[CLS] ids [SEP] rows, padded: the encoder inputs [B, length]."""
    ids = np.zeros([len(ids_rows), length], np.int32)
    mask = np.zeros_like(ids)
    for row, piece_ids in enumerate(ids_rows):
        seq = [2, *piece_ids[: length - 2], 3]
        ids[row, : len(seq)], mask[row, : len(seq)] = seq, 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


def _check_extended(old_tok, new_tok, old_model, new_model, words, lines):
    """The invariants both kinds share (module docstring)."""
    old_size = old_tok.vocab_size
    assert new_tok.vocab_size == old_size + len(words)
    assert all(new_tok.id_to_piece(i) == old_tok.id_to_piece(i) for i in range(old_size))
    for index, word in enumerate(words):
        if not word.startswith("##"):
            assert new_tok.encode(word) == [old_size + index], word
    assert new_tok.encode_batch(lines) == old_tok.encode_batch(lines)

    old_table = old_model.encoder.embeddings.word_embeddings.numpy()
    new_table = new_model.encoder.embeddings.word_embeddings.numpy()
    old_bias = old_model.mlm_head.output_bias.numpy()
    new_bias = new_model.mlm_head.output_bias.numpy()
    assert new_table.shape == (old_size + len(words), old_table.shape[1])
    np.testing.assert_array_equal(new_table[:old_size], old_table)
    np.testing.assert_array_equal(new_bias[:old_size], old_bias)
    for index, word in enumerate(words):
        parts = old_tok.encode(word) if not word.startswith("##") else None
        if parts is None:  # a continuation: its old pieces after a word start that stays apart
            start = next(c for c in "xqzjk" if old_tok.tokenize(c + word[2:])[0] == c)
            parts = old_tok.encode(start + word[2:])[1:]
        assert len(parts) > 1, (word, parts)
        np.testing.assert_allclose(new_table[old_size + index], old_table[parts].mean(0), 1e-6)
        np.testing.assert_allclose(new_bias[old_size + index], old_bias[parts].mean(0), 1e-6)

    batch = _batch(new_tok.encode_batch(lines[:8]))
    before, after = old_model.encoder(batch), new_model.encoder(batch)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(after[key].numpy(), before[key].numpy())


@pytest.fixture(scope="module")
def spm_extended(tmp_path_factory):
    """(source dir, output dir, the command's result) of the SentencePiece extension."""
    if not SPM.exists():
        pytest.skip(f"real data not available: {SPM} is absent")
    tmp_path = tmp_path_factory.mktemp("extend-spm")
    source = _source_checkpoint(tmp_path / "source", 30000)
    ran, out, _ = _extend(tmp_path, "--spm_model_file", SPM, SPM_WORDS, source)
    assert ran.returncode == 0, ran.report()
    return tmp_path / "source", out, ran


def test_sentencepiece_extension(spm_extended):
    from albert_tf.checkpoints.tokenizer_record import check_tokenizer, file_record
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    source, out, ran = spm_extended
    old_tok, new_tok = AlbertTokenizer(str(SPM)), AlbertTokenizer(str(out / "spm.model"))
    assert "vocab_size 30000 → 30004" in ran.stdout
    lines = _corpus_lines(SPM_WORDS)
    assert len(lines) == 400
    _check_extended(old_tok, new_tok, _pretrainer(source), _pretrainer(out), SPM_WORDS, lines[:200])
    # The new pieces win only where the word starts a word: "covidiot" begins with it.
    assert new_tok.tokenize("covidiot anticovid")[0] == "▁covid"
    assert new_tok.encode("anticovid") == old_tok.encode("anticovid")
    # In the graph too (tensorflow-text): the same ids on the new words and on real text.
    text = [" ".join(SPM_WORDS), "Covid und Bundestag, tokenization.", *lines[200:260]]
    graph = new_tok.graph_tokenizer()(np.array(text, object)).to_list()
    assert graph == new_tok.encode_batch(text)
    # Recorded as every tokenizer is: config vocab_size and tokenizer.json (kind, sha256).
    config = json.loads((out / "albert_config.json").read_text())
    assert config["vocab_size"] == 30004
    record = json.loads((out / "tokenizer.json").read_text())
    assert record["kind"] == "sentencepiece" and record["sha256"] == new_tok.checksum
    check_tokenizer(str(out), file_record(str(out / "spm.model"), "sentencepiece"), "new")
    with pytest.raises(ValueError, match="sha256"):  # fine-tuning with the old one: refused
        check_tokenizer(str(out), file_record(str(SPM), "sentencepiece"), f"--spm={SPM}")


def test_sentencepiece_words_beginning_with_a_new_word_only_merge(shared_data, tmp_path):
    """A real word beginning with a new word ("present" with "pres") keeps its old pieces,
    unless they began with the new word's old pieces: those merge into the new piece and
    the rest is unchanged ("statistics": "▁" "stat" "ist" "ics" → "▁stat" "ist" "ics").
    Checked on every distinct word of the English speeches, with new words that begin
    with other new words in either order (a USER_DEFINED piece, or one scored as the best
    piece, would re-split some: "present" → "▁pres" "ent"; docs/design/tokenization.md)."""
    from data_pipeline.tokenization.extension import extend_sentencepiece
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    old = AlbertTokenizer(str(SPM))
    # (longer words before their prefixes too: "states" is scored after "stat")
    news = ["states", "pres", "stat", "government", "gover", "regier", "bun"]
    extended = extend_sentencepiece(old, list(enumerate(news, 1)), "words.txt")
    (tmp_path / "spm.model").write_bytes(extended.content)
    new = AlbertTokenizer(str(tmp_path / "spm.model"))
    extended.check(new, "words.txt")
    text = " ".join(
        p.read_text(encoding="utf-8", errors="replace").lower()
        for p in sorted((shared_data / "corpus" / "en_speeches").glob("*/*.txt"))
    )
    words = sorted(set(text.split()))
    assert len(words) > 20_000
    before, after = old.encode_batch(words), new.encode_batch(words)
    changed = [(w, a, b) for w, a, b in zip(words, before, after) if a != b]
    assert len(changed) > 50  # the merges
    for word, was, now in changed:
        assert now[0] >= old.vocab_size, word  # a new piece first ...
        head = extended.pieces[now[0] - old.vocab_size].old_ids
        assert was == [*head, *now[1:]], word  # ... where its old pieces were, rest as before
    assert new.tokenize("present") == old.tokenize("present") == ["▁", "present"]
    assert new.tokenize("statistics") == ["▁stat", "ist", "ics"]
    assert new.tokenize("statesman") == ["▁states", "man"]  # (the longer new piece)
    assert new.tokenize("stated") == old.tokenize("stated") == ["▁", "st", "ated"]
    assert [new.encode(w) for w in news] == [[old.vocab_size + i] for i in range(len(news))]


@pytest.fixture(scope="module")
def wp_extended(tmp_path_factory, wordpiece_vocab):
    """(source dir, output dir) of the WordPiece extension."""
    tmp_path = tmp_path_factory.mktemp("extend-wp")
    source = _source_checkpoint(tmp_path / "source", 21128, seed=1)
    ran, out, _ = _extend(tmp_path, "--vocab_file", wordpiece_vocab, WP_WORDS, source)
    assert ran.returncode == 0, ran.report()
    return tmp_path / "source", out


def test_wordpiece_extension(wp_extended, wordpiece_vocab):
    from data_pipeline.tokenization.extension import extend_wordpiece
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    source, out = wp_extended
    old_tok = WordPieceTokenizer(wordpiece_vocab)
    new_tok = WordPieceTokenizer(str(out / "vocab.txt"))
    text = (out / "vocab.txt").read_text(encoding="utf-8")
    assert text.endswith("\ncovid\ntokenizations\n##graphies\n")
    lines = _corpus_lines(WP_WORDS, limit=200)
    _check_extended(old_tok, new_tok, _pretrainer(source), _pretrainer(out), WP_WORDS, lines)
    # The continuation piece is taken inside words: "biographies" ends with it now.
    assert old_tok.tokenize("biographies") == ["bio", "##graph", "##ies"]
    assert new_tok.tokenize("biographies") == ["bio", "##graphies"]
    graph = new_tok.graph_tokenizer()(np.array(["Covid tokenizations", *lines[:40]], object))
    assert graph.to_list() == new_tok.encode_batch(["Covid tokenizations", *lines[:40]])
    record = json.loads((out / "tokenizer.json").read_text())
    assert record["kind"] == "wordpiece" and record["sha256"] == new_tok.checksum
    # One word of BERT's basic tokenization a line: punctuation splits "covid-19".
    with pytest.raises(ValueError, match=r"^--new_pieces=w.txt:4: 'covid-19' is not one word"):
        extend_wordpiece(old_tok, [(4, "covid-19")], "w.txt")


def test_hugging_face_tokenizer_of_an_extended_vocab_txt(wp_extended, tmp_path):
    """convert --to transformers with the new vocab.txt: Hugging Face's BertTokenizer
    gives our ids, new pieces and continuation included, on real text and the new words."""
    import transformers

    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    _, out = wp_extended
    ran = run_command(
        "-m",
        "albert_tf.checkpoints.convert",
        "--to=transformers",
        f"--input={out}",
        f"--vocab_file={out / 'vocab.txt'}",
        f"--output_dir={tmp_path / 'hf'}",
    )
    assert ran.returncode == 0, ran.report()
    ours = WordPieceTokenizer(str(out / "vocab.txt"))
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    texts = ["Covid biographies and tokenizations.", *_corpus_lines(WP_WORDS, limit=50)]
    ids = [ours.encode(t) for t in texts]
    assert sum(i >= 21128 for i in ids[0]) == 3
    assert [theirs(t, add_special_tokens=False)["input_ids"] for t in texts] == ids


def test_a_fine_tuned_directory_stays_one(tmp_path):
    """A fine-tuned classifier directory (its own spm.model the default tokenizer) gives a
    fine-tuned directory: task.json naming the new spm.model beside it, the labels kept,
    the classifier's logits on text without new words unchanged and its embedding grown."""
    from albert_tf.checkpoints.finetuned import load_finetuned, save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec

    if not SPM.exists():
        pytest.skip(f"real data not available: {SPM} is absent")
    task = TaskInfo.build(kind="classifier", labels=["no", "yes"], regression=False)
    model = task.model(tiny_config(vocab_size=30000))
    model.build()
    rng = np.random.default_rng(3)
    for w in model.weights:
        w.assign(rng.normal(0, 0.2, w.shape))
    source = str(tmp_path / "finetuned")
    save_finetuned(model, source, task, TokenizerSpec.from_files(str(SPM)))
    pieces = tmp_path / "words.txt"
    pieces.write_text("covid\nbundestag\n", encoding="utf-8")
    out = tmp_path / "out"
    ran = run_command(
        "-m",
        "albert_tf.checkpoints.extend_vocab",
        f"--init_checkpoint={source}",
        f"--new_pieces={pieces}",
        f"--output_dir={out}",
    )
    assert ran.returncode == 0, ran.report()
    new_model, new_task = load_finetuned(str(out))
    assert list(new_task.details.labels) == ["no", "yes"]
    assert new_task.tokenizer().path == str(out / "spm.model")
    assert not (out / "tokenizer.json").exists()  # (the directory's own vocabulary says it)
    new_tok = AlbertTokenizer(str(out / "spm.model"))
    assert new_tok.encode("Bundestag") == [30001]
    table = new_model.encoder.embeddings.word_embeddings.numpy()
    old_table = model.encoder.embeddings.word_embeddings.numpy()
    parts = AlbertTokenizer(str(SPM)).encode("Bundestag")
    np.testing.assert_allclose(table[30001], old_table[parts].mean(0), 1e-6)
    batch = _batch([new_tok.encode(t) for t in _corpus_lines(["covid", "bundestag"], 6)])
    np.testing.assert_array_equal(new_model(batch)["logits"], model(batch)["logits"])


def test_hugging_face_round_trip_of_an_extended_model(spm_extended, tmp_path):
    """convert --to transformers with the new spm.model: Hugging Face's tokenizer gives
    our ids on text with the new words, and its model our outputs on them."""
    import torch
    import transformers

    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    _, out, _ = spm_extended
    hf_dir = tmp_path / "hf"
    ran = run_command(
        "-m",
        "albert_tf.checkpoints.convert",
        "--to=transformers",
        f"--input={out}",
        f"--spm_model_file={out / 'spm.model'}",
        f"--output_dir={hf_dir}",
    )
    assert ran.returncode == 0, ran.report()
    ours_tok = AlbertTokenizer(str(out / "spm.model"))
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    text = ["The Bundestag debated covid and tokenization.", "A Transformer, the covidiot"]
    ids = [ours_tok.encode(t) for t in text]
    assert [hf_tok(t, add_special_tokens=False)["input_ids"] for t in text] == ids
    assert any(i >= 30000 for row in ids for i in row)

    hf, info = transformers.AlbertForPreTraining.from_pretrained(
        str(hf_dir), output_loading_info=True, attn_implementation="eager"
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert hf.config.vocab_size == 30004
    hf.eval()
    batch = _batch(ids, length=24)
    with torch.no_grad():
        theirs = hf.albert(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        )
    mine = _pretrainer(out).encoder(batch)
    real = batch["input_mask"].astype(bool)
    np.testing.assert_allclose(
        mine["sequence_output"].numpy()[real], theirs.last_hidden_state.numpy()[real], atol=1e-5
    )
    np.testing.assert_allclose(mine["pooled_output"].numpy(), theirs.pooler_output, atol=1e-5)


@pytest.mark.parametrize(
    "case",
    ["already", "twice", "empty", "huge", "space", "vocab_size", "recorded", "output_exists"],
)
def test_bad_input_is_one_line_and_writes_nothing(spm_extended, tmp_path, case):
    source, done, _ = spm_extended
    words = {
        "already": ["covid", "Und"],  # ▁und is a piece of the German model
        "empty": ["", "  "],
        "huge": [f"w{i}" for i in range(10_001)],
        "space": ["covid", "new word"],
        "twice": ["covid", "bundestag", "covid"],
    }.get(case, ["covid"])
    checkpoint = str(source)
    if case == "vocab_size":
        checkpoint = _source_checkpoint(tmp_path / "small", 29000)
    if case == "recorded":  # a model trained with another vocabulary of the same size
        from albert_tf.checkpoints.tokenizer_record import write_tokenizer_record

        checkpoint = _source_checkpoint(tmp_path / "other", 30000)
        write_tokenizer_record(checkpoint, {"kind": "sentencepiece", "sha256": "ab" * 32})
    name = "out"
    if case == "output_exists":
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.txt").write_text("mine")
    ran, out, pieces = _extend(tmp_path, "--spm_model_file", SPM, words, checkpoint, name)
    assert ran.returncode == 1, ran.report()
    error = ran.stderr.strip().splitlines()[-1]
    assert error.startswith("error: ") and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    expected = {
        "already": f"--new_pieces={pieces}:2: 'Und' is already in the vocabulary (piece '▁und'",
        "empty": f"--new_pieces={pieces}: no pieces",
        "huge": f"--new_pieces={pieces}:10001: more than 10,000 new pieces",
        "space": f"--new_pieces={pieces}:2: 'new word' holds a space",
        "twice": f"--new_pieces={pieces}:3: 'covid' is given twice (first on line 1)",
        "recorded": "was trained with a SentencePiece model of sha256 abababababababab...",
        "vocab_size": f"has vocab_size 29000 ({tmp_path / 'small' / 'albert_config.json'}), "
        f"but --spm_model_file={SPM} has 30000 entries",
        "output_exists": f"--output_dir {out} already holds",
    }[case]
    assert expected in error, error
    if case == "output_exists":
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    else:
        assert not out.exists()


def test_savedmodel_and_litert_exports_of_an_extended_model(spm_extended, tmp_path):
    """albert_tf.serving.export of the extended directory with its spm.model, no special
    case: the encoder SavedModel and LiteRT file embed text holding the new words as the
    Python model does with the new tokenizer."""
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.modeling.pooling import AlbertEmbedder
    from albert_tf.serving.export import export_formats
    from albert_tf.serving.tflite_predict import LiteModel
    from albert_tf.training.sentence_similarity import single_sentence_features
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.serving_client import served

    _, out, _ = spm_extended
    spec = TokenizerSpec.from_files(str(out / "spm.model"))
    saved, lite = export_formats(
        "encoder",
        str(out),
        str(tmp_path / "serving"),
        ("savedmodel", "tflite"),
        tokenizer=spec,
        max_seq_length=40,
        pooling="mean",
        normalize=False,
    )
    texts = ["Der Bundestag und covid.", "Tokenization: a Transformer", "covidiot im Haus"]
    tokenizer = AlbertTokenizer(str(out / "spm.model"))
    assert sum(i >= 30000 for t in texts for i in tokenizer.encode(t)) == 5
    features = single_sentence_features(texts, tokenizer, 40)
    encoder = _pretrainer(out).encoder
    assert isinstance(encoder, AlbertEncoder)
    want = AlbertEmbedder(encoder.config, encoder, pooling="mean")(features)["embeddings"]
    got = served(saved, {"text": texts}, signature="embed")["embeddings"]
    np.testing.assert_allclose(got, np.asarray(want), atol=1e-5)
    np.testing.assert_allclose(LiteModel(lite).vectors(texts), np.asarray(want), atol=1e-5)


def test_keras_hub_preset_of_an_extended_model(spm_extended, tmp_path):
    """convert --to keras_hub with the new spm.model: the preset's backbone has the grown
    vocabulary and its tokenizer gives our ids on (normalized) text with the new words."""
    keras_hub = pytest.importorskip("keras_hub")
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    _, out, _ = spm_extended
    preset = tmp_path / "preset"
    ran = run_command(
        "-m",
        "albert_tf.checkpoints.convert",
        "--to=keras_hub",
        f"--input={out}",
        f"--spm_model_file={out / 'spm.model'}",
        f"--output_dir={preset}",
    )
    assert ran.returncode == 0, ran.report()
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(preset))
    assert backbone.vocabulary_size == 30004
    ours = AlbertTokenizer(str(out / "spm.model"))
    text = "der bundestag und covid tokenization"
    theirs = keras_hub.models.AlbertTokenizer.from_preset(str(preset))(text)
    assert list(np.asarray(theirs)) == ours.encode(text)
    assert 30000 in ours.encode(text)


def test_grown_rows_are_the_means_of_their_sources():
    """`grown`: old rows untouched, one new row per source list, its mean (float64, cast
    back to the table's dtype), for a table [V, E] and a bias [V]."""
    from albert_tf.checkpoints.extend_vocab import grown

    table = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    out = grown(table, [(0, 1), (3,), (1, 2, 3)])
    assert out.shape == (7, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out[:4], table)
    np.testing.assert_allclose(out[4:], [table[:2].mean(0), table[3], table[1:].mean(0)], 1e-7)
    bias = np.array([1.0, -2.0, 0.5], np.float32)
    np.testing.assert_allclose(grown(bias, [(0, 1, 2)]), [1.0, -2.0, 0.5, -0.5 / 3], 1e-7)
