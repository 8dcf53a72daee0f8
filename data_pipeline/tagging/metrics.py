"""Entity-level precision / recall / F1 (micro, macro, weighted, per type) and token
accuracy, defined as seqeval 1.2.2 defines them (checked against it in the tests).

An entity is (type, start, end) and counts as correct only when the prediction has the
same type and the same span. A tag is a prefix letter and a type: "B-PER" → (B, PER);
"O" → (O, "_").

Two ways to read entities out of tags:

* default (`scheme=None`), conlleval-compatible and lenient: the sentences are read as one
  sequence with an "O" between sentences (seqeval's default), and a chunk ends before a
  token when the previous tag was E or S, when B or I is followed by B, S or O, or when
  the type changes after anything but O; a chunk starts at B or S, at I or E after E, S
  or O, or at a type change. Ill-formed sequences still give chunks: "O I-PER" is a PER,
  "B-X E-Y" two. M (BMES) has no rule of its own there, exactly as in seqeval.
* strict (`scheme="IOB2" | "IOE2" | "IOBES" | "BMES" | "BILOU"`), per sentence: only
  well-formed chunks of that scheme count. IOB2: B then I of its type. IOE2: I of one type
  then E, starting after O, E or another type's I. IOBES: S alone, or B, I..., E of one type.
  BMES is IOBES with M for I, BILOU with U for S and L for E. A tag whose prefix the
  scheme does not have is a ValueError. Type: the tag less its prefix letter and any
  leading/trailing "-".

Scores per type: precision = correct / predicted, recall = correct / gold (support),
F1 = 2PR / (P + R), each 0.0 where its denominator is 0 (seqeval's zero_division=0, what
its default "warn" returns). The types are the union of gold and predicted types. Micro:
the counts summed over types; macro: the unweighted mean of the per-type scores; weighted:
their mean weighted by support (all 0.0 without gold entities).
"""

from __future__ import annotations

import dataclasses

SCHEMES = ("IOB2", "IOE2", "IOBES", "BMES", "BILOU")
# The least share of the default mode's gold entities a strict scheme must read to be the
# scheme the tags are written in (`misread`).
MIN_READ = 0.9
# Strict schemes as IOBES-style alphabets: prefix letter → role.
_ROLES = {
    "IOB2": {"O": "O", "B": "B", "I": "I"},
    "IOE2": {"O": "O", "I": "I", "E": "E"},
    "IOBES": {"O": "O", "B": "B", "I": "I", "E": "E", "S": "S"},
    "BMES": {"O": "O", "B": "B", "M": "I", "E": "E", "S": "S"},
    "BILOU": {"O": "O", "B": "B", "I": "I", "L": "E", "U": "S"},
}


@dataclasses.dataclass(frozen=True)
class Score:
    """precision, recall, f1; support: gold entities; predicted; correct."""

    precision: float
    recall: float
    f1: float
    support: int
    predicted: int
    correct: int


@dataclasses.dataclass(frozen=True)
class EntityReport:
    """Per-type scores (types sorted) and the micro, macro and weighted averages."""

    per_type: dict[str, Score]
    micro: Score
    macro: Score
    weighted: Score


# --- entities -----------------------------------------------------------------------------


def _lenient_parts(tag: str) -> tuple[str, str]:
    return tag[:1], tag[1:].split("-", 1)[-1] or "_"


def _chunk_ends(prev: str, prev_type: str, cur: str, cur_type: str) -> bool:
    return (
        prev in {"E", "S"}
        or (prev in {"B", "I"} and cur in {"B", "S", "O"})
        or (prev not in {"O", "."} and prev_type != cur_type)
    )


def _chunk_starts(prev: str, prev_type: str, cur: str, cur_type: str) -> bool:
    return (
        cur in {"B", "S"}
        or (cur in {"I", "E"} and prev in {"E", "S", "O"})
        or (cur not in {"O", "."} and prev_type != cur_type)
    )


def _lenient_entities(sequences) -> list[tuple[str, int, int]]:
    """Default-mode chunks (type, start, end exclusive) over the sentences joined with "O"."""
    flat = [tag for tags in sequences for tag in (*tags, "O")] + ["O"]
    chunks, begin, prev, prev_type = [], 0, "O", "_"
    for i, tag in enumerate(flat):
        cur, cur_type = _lenient_parts(tag)
        if _chunk_ends(prev, prev_type, cur, cur_type):
            chunks.append((prev_type, begin, i))
        if _chunk_starts(prev, prev_type, cur, cur_type):
            begin = i
        prev, prev_type = cur, cur_type
    return chunks


def _strict_entities(tags, roles: dict, scheme: str, offset: int) -> list[tuple[str, int, int]]:
    """Well-formed chunks of one sentence; positions shifted by `offset`."""
    parsed = []
    for tag in (*tags, "O"):
        role = roles.get(tag[:1]) if tag else None
        if role is None:
            raise ValueError(f"tag {tag!r} is not a {scheme} tag (prefixes {'/'.join(roles)})")
        parsed.append((role, tag[1:].strip("-") or "_"))

    def starts(i):
        role, kind = parsed[i]
        p_role, p_kind = parsed[i - 1] if i else ("O", "_")
        if scheme == "IOE2":
            return role in "IE" and (p_role in "OE" or (p_role == "I" and p_kind != kind))
        return role in "BS"

    def continues(j):  # token j extends the chunk ending at j - 1
        (p_role, p_kind), (role, kind) = parsed[j - 1], parsed[j]
        if scheme == "IOB2":
            return p_role in "BI" and role == "I" and p_kind == kind
        if scheme == "IOE2":
            return p_role == "I" and role in "IE" and p_kind == kind
        return p_role in "BI" and role in "IE" and p_kind == kind

    def closed(j):  # the chunk ending at j - 1 is complete
        p_role = parsed[j - 1][0]
        return p_role in "BI" if scheme == "IOB2" else p_role in "ES"

    chunks, i, n = [], 0, len(parsed)
    while i < n:
        if not starts(i):
            i += 1
            continue
        j = i + 1
        while j < n and continues(j):
            j += 1
        if closed(j):
            chunks.append((parsed[i][1], offset + i, offset + j))
        i = j
    return chunks


def entities(sequences, scheme: str | None = None) -> list[tuple[str, int, int]]:
    """(type, start, end exclusive) of every entity in `sequences` (tags per sentence),
    positions in the sentences laid end to end with one slot between sentences."""
    if scheme is None:
        return _lenient_entities(sequences)
    if scheme not in _ROLES:
        raise ValueError(f"scheme {scheme!r}: expected one of {', '.join(SCHEMES)} or None")
    chunks, offset = [], 0
    for tags in sequences:
        chunks += _strict_entities(tags, _ROLES[scheme], scheme, offset)
        offset += len(tags) + 1
    return chunks


def detect_scheme(labels) -> str | None:
    """The strict scheme a label list is written in (BMES for B/M/E/S, IOBES for B/I/E/S,
    BILOU, IOE2 for I/E, IOB2 for B/I), or None when it fits none (IO: I- tags only)."""
    prefixes = {tag[:1] for tag in labels} - {"O"}
    for scheme, marks in (
        ("IOB2", "B"),
        ("IOE2", "E"),
        ("IOBES", "ES"),
        ("BMES", "BMES"),
        ("BILOU", "LU"),
    ):
        if prefixes <= set(_ROLES[scheme]) - {"O"} and prefixes & set(marks):
            return scheme
    return None


def misread(sequences, scheme: str) -> tuple[int, int, int, int] | None:
    """None when the strict `scheme` reads at least MIN_READ of the entities seqeval's
    default mode reads in `sequences`; else (sentence, token) of the first entity tag no
    well-formed chunk covers, and the two counts (strict, default).

    A strict scheme silently drops what it cannot read, so gold tags written in another
    scheme (IOB1's "O I-LOC", BIO sentences read as IOBES) leave almost no gold entity to
    match and F1 near 0 for any model. Real files in their own scheme have a few
    ill-formed tags (CoNLL-2003's IOB2 copy: about 1% of entities; resume_zh's BMES
    train: 4 of 13,440), which strict mode drops as seqeval's does, so the rule is a
    share, not every tag."""
    strict, default = len(entities(sequences, scheme)), len(_lenient_entities(sequences))
    if strict >= MIN_READ * default:
        return None
    offset = 0
    for index, tags in enumerate(sequences):
        covered = set()
        for _, start, end in _strict_entities(tags, _ROLES[scheme], scheme, offset):
            covered.update(range(start - offset, end - offset))
        unread = [i for i, tag in enumerate(tags) if tag != "O" and i not in covered]
        if unread:
            return index, unread[0], strict, default
        offset += len(tags) + 1
    return None  # (fewer chunks without an unread tag: merged chunks; not a scheme misfit)


# --- scores -------------------------------------------------------------------------------


def _check_shapes(gold, pred) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{len(pred)} predicted sentences for {len(gold)} gold sentences")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(p)} predicted tags for {len(g)} gold tags")


def _score(correct: int, predicted: int, support: int) -> Score:
    precision = correct / predicted if predicted else 0.0
    recall = correct / support if support else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Score(precision, recall, f1, support, predicted, correct)


def _mean(scores: list[Score], weights: list[int] | None) -> Score:
    total = sum(weights) if weights is not None else len(scores)
    weights = weights if weights is not None else [1] * len(scores)

    def avg(name):
        return sum(w * getattr(s, name) for s, w in zip(scores, weights)) / total if total else 0.0

    return Score(
        avg("precision"),
        avg("recall"),
        avg("f1"),
        sum(s.support for s in scores),
        sum(s.predicted for s in scores),
        sum(s.correct for s in scores),
    )


def entity_report(gold, pred, scheme: str | None = None) -> EntityReport:
    """Entity scores of predicted tags `pred` against `gold` (both tags per sentence)."""
    _check_shapes(gold, pred)
    gold_by_type, pred_by_type = {}, {}
    for chunks, by_type in (
        (entities(gold, scheme), gold_by_type),
        (entities(pred, scheme), pred_by_type),
    ):
        for kind, start, end in chunks:
            by_type.setdefault(kind, set()).add((start, end))
    per_type = {}
    for kind in sorted(gold_by_type.keys() | pred_by_type.keys()):
        g, p = gold_by_type.get(kind, set()), pred_by_type.get(kind, set())
        per_type[kind] = _score(len(g & p), len(p), len(g))
    scores = list(per_type.values())
    micro = _score(
        sum(s.correct for s in scores),
        sum(s.predicted for s in scores),
        sum(s.support for s in scores),
    )
    return EntityReport(
        per_type, micro, _mean(scores, None), _mean(scores, [s.support for s in scores])
    )


def token_accuracy(gold, pred) -> float:
    """The fraction of tokens whose predicted tag equals the gold tag (0.0: no tokens)."""
    _check_shapes(gold, pred)
    total = sum(len(g) for g in gold)
    correct = sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p))
    return correct / total if total else 0.0


def tagging_metrics(gold, pred, scheme: str | None = None) -> dict[str, float]:
    """The evaluation's flat dict: precision, recall, f1 (micro), macro_f1, accuracy
    (tokens) and f1/<type> per type."""
    report = entity_report(gold, pred, scheme)
    out = {
        "precision": report.micro.precision,
        "recall": report.micro.recall,
        "f1": report.micro.f1,
        "macro_f1": report.macro.f1,
        "accuracy": token_accuracy(gold, pred),
    }
    out.update({f"f1/{kind}": s.f1 for kind, s in report.per_type.items()})
    return out
