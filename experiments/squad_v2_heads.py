"""SQuAD v2.0 heads compared on one CPU budget: the official ALBERT head (`--squad_head
albert`: start log-probs, ends conditioned on the start, a start_n_top × end_n_top beam,
an answer-class logit deciding "no answer") against start/end logits with the BERT-style
[CLS] null score (`--squad_head bert`).

    python -m experiments.squad_v2_heads [--work_dir out/squad_v2_heads]
        [--inits pretrained scratch] [--heads albert bert] [--budget_minutes 45]

Why: the two heads decide "no answer" differently (a learned classifier against comparing
the [CLS] span score with the best span), and only the same data, steps, seed and model
tell which of them a small CPU-trained model gets more out of.

Data: slices of SQuAD v2.0 dev ($ALBERT_TF_DATA/squad/dev-v2.0.json) by article, written
to WORK_DIR/data: articles [0, 25) to train, [25, 30) to predict and score, [30, 35) to
tune the no-answer threshold on (never the scored set). Every run is the same
`run_squad.py` command but for `--squad_head` (and, for `scratch`, no `--init_checkpoint`):
the 4-layer H=256 model of experiments/sop_vs_nsp.py, `pretrained` starting from its SOP run's
checkpoint, max_seq_length 128, doc_stride 64, max_query_length 64, batch 32, the same
steps, peak learning rate and seed. Each run writes WORK_DIR/runs/HEAD_INIT (its
eval_results.json) and WORK_DIR/logs/HEAD_INIT.log.

Reported per run: EM/F1 at threshold 0; EM/F1 at the threshold tuned on the tune slice
(with HasAns/NoAns F1); the oracle best F1 on the predicted slice (threshold tuned on that
slice itself, so optimistic); the training time (the sum of the training loops' times from
metrics.jsonl: tracing included, feature building, checkpointing and prediction not) and
the whole run's wall time; the HasAns F1 of always answering (the best non-empty span of
every question: the spans' quality apart from abstaining) and the spread of the null
odds. "Always no answer" is the floor every v2.0 score is read against. Table and
numbers: WORK_DIR/results.md and results.json.

Fairness on a shared machine: before each run, the script waits (polling) until no
process matching a `--wait_for` pattern is running (default bench/on_device.py, the
latency benchmark), giving up after `--max_wait_minutes` and recording that it did.
Only the start is guarded: work that begins during a run slows it, so the times are
comparable only when the per-loop examples/s in each run's metrics.jsonl agree.
Runs with an eval_results.json are reused unless `--fresh`; `--budget_minutes` skips an
initialization whose runs (one per head) would not fit, judged from the runs so far.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
DEV = os.path.join(DATA, "squad", "dev-v2.0.json")
PRETRAINED = "out/sop_vs_nsp"
SLICES = {"train": (0, 25), "predict": (25, 30), "tune": (30, 35)}


def write_slices(dev_path: str, data_dir: str) -> dict:
    """{name: {path, articles, questions, has_answer, no_answer}} for the SLICES of the
    dev file, each written as a SQuAD v2.0 file of its articles."""
    with open(dev_path, encoding="utf-8") as f:
        dev = json.load(f)
    os.makedirs(data_dir, exist_ok=True)
    slices = {}
    for name, (first, end) in SLICES.items():
        articles = dev["data"][first:end]
        questions = [q for a in articles for p in a["paragraphs"] for q in p["qas"]]
        no_answer = sum(bool(q.get("is_impossible")) for q in questions)
        path = os.path.join(data_dir, f"{name}-v2.0.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"version": dev.get("version", "v2.0"), "data": articles}, f)
        slices[name] = {
            "path": path,
            "articles": [first, end],
            "questions": len(questions),
            "has_answer": len(questions) - no_answer,
            "no_answer": no_answer,
        }
    return slices


def _ancestors() -> set[int]:
    """This process and its parents (whose command lines may name a waited-for pattern)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def busy(patterns: list[str]) -> list[str]:
    """`pid command` of the other running processes whose command line matches a pattern."""
    mine, found = _ancestors(), []
    for pattern in patterns:
        out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True).stdout
        for line in out.splitlines():
            pid = int(line.split(maxsplit=1)[0])
            if pid not in mine:
                found.append(line[:200])
    return found


def wait_until_free(patterns: list[str], poll_s: float, max_wait_s: float, log) -> dict:
    """Polls until no process matches `patterns` or `max_wait_s` has passed:
    {waited_s, gave_up, busy (what was running when it gave up)}."""
    start = time.time()
    while True:
        running = busy(patterns)
        waited = time.time() - start
        if not running:
            return {"waited_s": round(waited), "gave_up": False, "busy": []}
        if waited >= max_wait_s:
            log(f"  still running after {waited / 60:.0f} min, going ahead: {running}")
            return {"waited_s": round(waited), "gave_up": True, "busy": running}
        log(f"  waiting ({waited / 60:.0f} min so far) for: {running}")
        time.sleep(poll_s)


def squad_command(head: str, init: str, slices: dict, output_dir: str, args) -> list[str]:
    """The run_squad.py command of one run; only --squad_head and the initialization vary."""
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_squad.py"),
        "--version_2_with_negative",
        f"--squad_head={head}",
        f"--train_file={slices['train']['path']}",
        f"--predict_file={slices['predict']['path']}",
        f"--tune_threshold_on={slices['tune']['path']}",
        "--do_train",
        "--do_predict",
        "--do_eval",
        f"--albert_config_file={os.path.join(args.pretrained_dir, 'albert_config.json')}",
        f"--spm_model_file={os.path.join(args.pretrained_dir, 'spm8k.model')}",
        "--max_seq_length=128",
        "--doc_stride=64",
        f"--max_query_length={args.max_query_length}",
        f"--train_batch_size={args.batch_size}",
        f"--train_step={args.steps}",
        f"--learning_rate={args.learning_rate}",
        f"--seed={args.seed}",
        f"--output_dir={output_dir}",
    ]
    if init == "pretrained":
        checkpoints = os.path.join(args.pretrained_dir, "run_sop", "checkpoints")
        cmd.append(f"--init_checkpoint={checkpoints}")
    return cmd


def training_seconds(output_dir: str, batch_size: int) -> float | None:
    """Sum of the training loops' times: each metrics.jsonl training row covers the steps
    since the previous one at its examples_per_second."""
    path = os.path.join(output_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    total, previous = 0.0, 0
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("split") != "train":
                continue
            total += (row["step"] - previous) * batch_size / row["examples_per_second"]
            previous = row["step"]
    return total


def run(head: str, init: str, slices: dict, args, log) -> dict:
    """One run (or the record of an earlier one): {head, init, command, returncode,
    wall_s, train_s, wait, eval (eval_results.json), log}."""
    name = f"{head}_{init}"
    output_dir = os.path.join(args.work_dir, "runs", name)
    log_path = os.path.join(args.work_dir, "logs", f"{name}.log")
    record_path = os.path.join(args.work_dir, "logs", f"{name}.json")
    results_path = os.path.join(output_dir, "eval_results.json")
    if not args.fresh and os.path.exists(results_path) and os.path.exists(record_path):
        with open(record_path) as f:
            log(f"{name}: reusing {results_path}")
            return dict(json.load(f), reused=True)
    shutil.rmtree(output_dir, ignore_errors=True)  # no resuming from a partial run
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    cmd = squad_command(head, init, slices, output_dir, args)
    wait = wait_until_free(args.wait_for, args.poll_seconds, args.max_wait_minutes * 60, log)
    log(f"{name}: {' '.join(cmd[1:])}")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    start = time.time()
    with open(log_path, "w") as out:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    wall = time.time() - start
    record = {
        "head": head,
        "init": init,
        "command": cmd,
        "returncode": code.returncode,
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)),
        "wall_s": wall,
        "train_s": training_seconds(output_dir, args.batch_size),
        "wait": wait,
        "log": log_path,
        "eval": None,
        "reused": False,
    }
    if code.returncode == 0 and os.path.exists(results_path):
        with open(results_path) as f:
            record["eval"] = json.load(f)
        log(f"{name}: done in {wall / 60:.1f} min")
    else:
        with open(log_path) as f:
            tail = f.read()[-3000:]
        log(f"{name}: FAILED (exit {code.returncode}) after {wall / 60:.1f} min:\n{tail}")
    with open(record_path, "w") as f:
        json.dump(record, f, indent=1)
    return record


def no_answer_floor(predict_path: str) -> dict:
    """The official scores of answering nothing on the predicted slice."""
    from data_pipeline.squad import evaluation

    with open(predict_path, encoding="utf-8") as f:
        dataset = json.load(f)
    questions = [q["id"] for a in dataset["data"] for p in a["paragraphs"] for q in p["qas"]]
    return evaluation.evaluate(dataset, {q: "" for q in questions}, version="2.0")


def _read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def forced_answers(output_dir: str, predict_path: str) -> dict | None:
    """What the spans are worth apart from abstaining: the official scores of the best
    non-empty span of every question (nbest_predictions.json, threshold +inf), and the
    spread of null_odds.json (min, median, max), which says why a threshold abstains."""
    from data_pipeline.squad import evaluation
    from data_pipeline.squad.postprocess import predictions_at_threshold

    paths = [os.path.join(output_dir, f"{n}.json") for n in ("nbest_predictions", "null_odds")]
    if not all(os.path.exists(path) for path in paths):
        return None
    nbest, null_odds, dataset = (_read_json(path) for path in paths + [predict_path])
    answers = predictions_at_threshold(nbest, null_odds, float("inf"))
    odds = sorted(null_odds.values())
    return {
        "scores": evaluation.evaluate(dataset, answers, version="2.0"),
        "null_odds_min_median_max": [odds[0], odds[len(odds) // 2], odds[-1]],
    }


COLUMNS = (
    "head",
    "init",
    "EM @0",
    "F1 @0",
    "HasAns / NoAns F1 @0",
    "tuned threshold",
    "EM @tuned",
    "F1 @tuned",
    "HasAns / NoAns F1 @tuned",
    "oracle F1 (optimistic) at its threshold",
    "HasAns F1 always answering",
    "null odds min / median / max",
    "training s",
    "run s",
)


def _f(x, digits=2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _split(scores: dict) -> str:
    """HasAns / NoAns F1, where reported."""
    if "HasAns_f1" not in scores and "NoAns_f1" not in scores:
        return ""
    return f"{_f(scores.get('HasAns_f1'))} / {_f(scores.get('NoAns_f1'))}"


def _row(cells: list[str]) -> str:
    cells = cells + [""] * (len(COLUMNS) - len(cells))
    return "| " + " | ".join(cells) + " |"


def table_row(record: dict) -> str:
    """One markdown row of a run (a failed run says so)."""
    times = [_f(record["train_s"], 0), _f(record["wall_s"], 0)]
    if record["eval"] is None:
        failed = f"failed (exit {record['returncode']})"
        return _row([record["head"], record["init"], failed] + [""] * 9 + times)
    ev = record["eval"]
    at0, tuned = ev["at_threshold"], ev.get("tuned_threshold", {})
    oracle = ev.get("oracle_threshold_on_this_set", {})
    best = f"{_f(oracle.get('best_f1'))} (at {_f(oracle.get('best_f1_thresh'), 3)})"
    forced = record.get("forced") or {}
    odds = " / ".join(_f(x) for x in forced.get("null_odds_min_median_max", []))
    return _row(
        [record["head"], record["init"], _f(at0["exact"]), _f(at0["f1"]), _split(at0)]
        + [_f(tuned.get("threshold"), 3), _f(tuned.get("exact")), _f(tuned.get("f1"))]
        + [_split(tuned), best if oracle else ""]
        + [_f(forced.get("scores", {}).get("HasAns_f1")), odds]
        + times
    )


def markdown(records: list[dict], floor: dict, slices: dict, args) -> str:
    """The results table with its setting."""
    sizes = ", ".join(
        f"{name} articles [{s['articles'][0]}, {s['articles'][1]}): {s['questions']:,} "
        f"questions ({s['no_answer']:,} unanswerable)"
        for name, s in slices.items()
    )
    lines = [
        f"SQuAD v2.0 dev slices: {sizes}. Model {args.pretrained_dir}/albert_config.json, "
        f"max_seq_length 128, doc_stride 64, max_query_length {args.max_query_length}, "
        f"{args.steps} steps × batch {args.batch_size}, peak learning rate "
        f"{args.learning_rate}, seed {args.seed}, {os.cpu_count()} CPUs. Scores on the "
        "predict slice; the threshold is tuned on the tune slice; oracle: tuned on the "
        "predict slice itself. Always answering: the best non-empty span of every question "
        "(the spans' worth apart from abstaining). Null odds: > threshold means no answer.",
        "",
        _row(list(COLUMNS)),
        _row(["---"] * len(COLUMNS)),
    ]
    lines += [table_row(r) for r in records]
    lines.append(_row(["always no answer", "", _f(floor["exact"]), _f(floor["f1"]), _split(floor)]))
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", default="out/squad_v2_heads")
    p.add_argument("--dev_file", default=DEV)
    p.add_argument("--pretrained_dir", default=PRETRAINED, help="experiments/sop_vs_nsp.py output")
    p.add_argument("--heads", nargs="+", default=["albert", "bert"], choices=["albert", "bert"])
    p.add_argument(
        "--inits", nargs="+", default=["pretrained", "scratch"], choices=["pretrained", "scratch"]
    )
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=1e-4)
    p.add_argument("--max_query_length", type=int, default=64)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--budget_minutes", type=float, default=45.0, help="of runs, waits excluded")
    p.add_argument("--wait_for", nargs="+", default=["bench/on_device.py"])
    p.add_argument("--poll_seconds", type=float, default=60.0)
    p.add_argument("--max_wait_minutes", type=float, default=40.0)
    p.add_argument("--fresh", action="store_true", help="rerun runs that have results")
    args = p.parse_args()
    from experiments.report import report_logger

    log = report_logger(args.work_dir)
    slices = write_slices(args.dev_file, os.path.join(args.work_dir, "data"))
    for name, s in slices.items():
        log(
            f"{name}: articles [{s['articles'][0]}, {s['articles'][1]}), {s['questions']:,} "
            f"questions ({s['has_answer']:,} answerable, {s['no_answer']:,} not)"
        )
    records, spent = [], 0.0  # spent: wall time of the runs made by this invocation
    for init in args.inits:  # an initialization runs with every head or not at all
        walls = [r["wall_s"] for r in records]
        expected = len(args.heads) * sum(walls) / len(walls) if walls else 0.0
        if spent + expected > args.budget_minutes * 60:
            log(f"{init}: skipped (budget: {spent / 60:.0f} min of runs so far)")
            continue
        for head in args.heads:
            record = run(head, init, slices, args, log)
            output_dir = os.path.join(args.work_dir, "runs", f"{head}_{init}")
            record["forced"] = forced_answers(output_dir, slices["predict"]["path"])
            spent += 0.0 if record["reused"] else record["wall_s"]
            records.append(record)
    floor = no_answer_floor(slices["predict"]["path"])
    text = markdown(records, floor, slices, args)
    log("\n" + text)
    with open(os.path.join(args.work_dir, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.work_dir, "results.json"), "w") as f:
        json.dump(
            {"slices": slices, "always_no_answer": floor, "runs": records, "args": vars(args)},
            f,
            indent=1,
        )
    return 0 if all(r["eval"] is not None for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
