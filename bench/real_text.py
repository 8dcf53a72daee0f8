"""The real-text bench: ALBERT-base end to end on real text (GLUE dev/train, SQuAD v1.1 dev),
ours side by side with KerasHub and Hugging Face, in one run.

    python -m bench.real_text                                   # the whole bench
    python -m bench.real_text --tasks sst-2 --cases infer --batches 32 --peers hf
    python -m bench.real_text --dtype float32,bfloat16 --rounds 3 --json_out out/real_text.json

Cases (each one process, so that its peak RSS and TensorFlow state are its own):
  infer       text → probabilities in process, batches of --batches (32: the dev set, or
              its first --limit examples; 1: the first --limit1 examples, one request each).
              Ours (bench/real_text_cases.py): our tokenizer + length-aware batches +
              predict_logits ("ours"), against the same with batches padded to
              max_seq_length ("padded"). KerasHub: AlbertTextClassifier with its
              preprocessor, predict / predict_on_batch, XLA
              (bench/peers/real_text_keras_hub.py). HF: tokenizer(padding=True) +
              AlbertForSequenceClassification under inference_mode (bench/peers/
              real_text_hf.py).
  savedmodel  our exported classifier's serving_default on raw strings (tokenizer in the
              graph); exported once per task and dtype before the rounds. Its peers'
              columns repeat the infer figures.
  litert      the same classifier as a float32 LiteRT file (tokenizer in the file,
              XNNPack on every core) through LiteModel.classify: our on-device export,
              also a CPU server's fastest batch-1 path. float32 only; exported once per
              task before the rounds; its peers' columns repeat the infer figures.
  train       fine-tuning examples/s at --train_batch over --warmup untimed then --reps ×
              --steps timed steps: our Trainer + ClassificationTask, length-aware against
              padded batches; KerasHub fit; HF AdamW with dynamic padding.
  squad       SQuAD v1.1 dev prediction, padded against length-aware windows
              (bench/real_text_squad.py's squad_predict_case; ours only).
Random weights everywhere (speed does not depend on them), ALBERT-base, the SentencePiece
model --spm for every system, max_seq_length --seq, float32 (--dtype adds our bfloat16
cases: the trainer's mixed-precision policy; the peers stay float32).

Rounds: the machine drifts 10-15% within minutes, so every (task, case, batch) runs its
systems back to back, peer, ours, padded, peer, in reverse order on every other round,
--rounds times; each process times --reps passes/steps after a warm-up and reports their
median, and the table gives the median over rounds. Also printed: tokens computed / tokens
present per system (the batches' padded size against their real tokens), p50/p95 latency at
batch 1, peak RSS per process, the largest difference of our paths' probabilities from the
padded path's, and the real-text targets (`targets`). `--json_out` keeps every RESULT.

Run it on an idle machine: with other jobs on the cores, every parallel op waits for its
threads to be scheduled (torch at batch 1 measured 1.7 s a request instead of 80 ms with
the load average at 4 on 2 cores), and the figures say more about the load than about
the systems. The load average at the start and the end is printed with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
PEERS_HOME = os.environ.get("PEERS_HOME", os.path.join(os.path.dirname(ROOT), "peers"))
NAMES = {"kh": "KerasHub", "hf": "HF"}
SCRIPTS = {"kh": "peers/real_text_keras_hub.py", "hf": "peers/real_text_hf.py"}
CASES = ["-m", "bench.real_text_cases"]  # run from ROOT
TIMEOUT = 3 * 3600  # seconds for one process
LOAD_AT_START = os.getloadavg()[0]  # (other jobs distort the timings, see the docstring)


def run(cmd: list[str], label: str) -> list[dict]:
    """The RESULT lines of one process ([] and its stderr's tail when it fails)."""
    start = time.time()
    print(f"[{time.strftime('%H:%M:%S')}] {label} ...", file=sys.stderr, end=" ", flush=True)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        print(f"FAILED: no result within {TIMEOUT} s", file=sys.stderr, flush=True)
        return []
    found = [json.loads(x[7:]) for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode or not found:
        print(f"FAILED ({done.returncode}):\n{done.stderr[-2500:]}", file=sys.stderr, flush=True)
        return []
    last = found[-1]
    rate = last.get("examples_per_s", last.get("length_aware_questions_per_s"))
    shown = f"{rate:.2f}/s" if rate else last.get("skipped", "done")
    print(f"{shown} ({time.time() - start:.0f} s)", file=sys.stderr, flush=True)
    return found


def plan(args) -> list[tuple[tuple, list[tuple[str, list[str]]]]]:
    """[((task, case, batch), [(column, command), ...]), ...]: one round, in order."""
    groups = []
    for task in args.tasks:
        for case in [c for c in args.cases if c != "squad"]:
            for batch in [args.train_batch] if case == "train" else args.batches:
                groups.append(((task, case, batch), group(args, task, case, batch)))
    if "squad" in args.cases:
        cmd = [sys.executable, *CASES, "--mode", "squad", "--batch", str(args.train_batch)]
        cmd += ["--limit", str(args.squad_limit), "--reps", str(args.reps)]
        columns = [(f"ours {dtype}", cmd + ["--dtype", dtype]) for dtype in args.dtype]
        groups.append((("squad-v1.1", "squad", args.train_batch), columns))
    return groups


def group(args, task: str, case: str, batch: int) -> list[tuple[str, list[str]]]:
    """[(column, command)] of one (task, case, batch): peer, ours, padded, peer."""
    limit = {"train": args.train_limit}.get(case, args.limit1 if batch == 1 else args.limit)
    shared = ["--task", task, "--mode", case, "--batch", str(batch), "--limit", str(limit)]
    shared += ["--seq", str(args.seq), "--spm", args.spm, "--reps", str(args.reps)]
    if case == "train":
        shared += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    ours, padded = [], []
    for dtype in args.dtype:
        cmd = [sys.executable, *CASES, *shared, "--dtype", dtype]
        probs = os.path.join(args.work, f"{task}-{case}-{batch}-{dtype}")
        if case == "savedmodel":
            cmd += ["--saved_model", saved_model_dir(args, task, dtype)]
            ours.append((f"ours {dtype}", cmd + ["--probs_out", f"{probs}.npy"]))
            continue
        if case == "litert":  # the file's weights are float32 whatever --dtype says
            if dtype == "float32":
                cmd += ["--litert_file", litert_file(args, task)]
                ours.append((f"ours {dtype}", cmd + ["--probs_out", f"{probs}.npy"]))
            continue
        for variant, column, runs in (("length_aware", "ours", ours), ("padded", "padded", padded)):
            keep = ["--probs_out", f"{probs}-{variant}.npy"] if case == "infer" else []
            runs.append((f"{column} {dtype}", cmd + ["--variant", variant, *keep]))
    peers = [
        (peer, [args.python[peer], os.path.join(HERE, SCRIPTS[peer]), *shared])
        for peer in (args.peers if case not in ("savedmodel", "litert") else [])
    ]
    return peers[:1] + ours + padded + peers[1:]


def saved_model_dir(args, task: str, dtype: str) -> str:
    return os.path.join(args.work, f"saved_model-{task}-{dtype}")


def litert_file(args, task: str) -> str:
    return os.path.join(args.work, f"litert-{task}", "classifier-float32.tflite")


def probability_diffs(args) -> dict:
    """max |probability - the padded path's| per (task, case, batch, dtype), last round."""
    import numpy as np

    diffs = {}
    for task in args.tasks:
        for batch in args.batches:
            for dtype in args.dtype:
                base = os.path.join(args.work, f"{task}-{{}}-{batch}-{dtype}{{}}.npy")
                if not os.path.exists(base.format("infer", "-padded")):
                    continue
                padded = np.load(base.format("infer", "-padded"))
                for case, path in (
                    ("infer", base.format("infer", "-length_aware")),
                    ("savedmodel", base.format("savedmodel", "")),
                    ("litert", base.format("litert", "")),
                ):
                    if os.path.exists(path) and np.load(path).shape == padded.shape:
                        diffs[(task, case, batch, dtype)] = float(
                            np.abs(np.load(path) - padded).max()
                        )
    return diffs


def median(found: list[dict], key: str):
    values = [r[key] for r in found if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def fmt(x, spec=".2f", none="–") -> str:
    return none if x is None else format(x, spec)


def ratio(a, b):
    return a / b if a and b else None


def summarize(args, results: dict, task, case, batch, dtype) -> dict:
    """One table row's figures: examples/s (squad: questions/s) of ours, padded and each
    peer (medians over rounds); their tokens computed/present, latencies and peak RSS."""
    peer_case = "infer" if case in ("savedmodel", "litert") else case
    found = {"ours": results.get((task, case, batch, f"ours {dtype}"), [])}
    found["padded"] = results.get((task, case, batch, f"padded {dtype}"), [])
    found.update({p: results.get((task, peer_case, batch, p), []) for p in args.peers})
    if case == "squad":  # one process gives both paths' figures
        keys = {"ours": "length_aware", "padded": "padded"}
        row = {
            c: median(found["ours"], f"{keys[c]}_questions_per_s") if c in keys else None
            for c in found
        }
        tokens = {
            c: median(found["ours"], f"{keys[c]}_tokens_computed_per_present")
            if c in keys
            else None
            for c in found
        }
    else:
        row = {c: median(found[c], "examples_per_s") for c in found}
        tokens = {
            c: ratio(median(found[c], "tokens_computed"), median(found[c], "tokens_present"))
            for c in found
        }
    row.update(
        task=task,
        case=case,
        batch=batch,
        dtype=dtype,
        found=found,
        tokens=tokens,
        best=max((row[p] or 0 for p in args.peers), default=0) or None,
        rss={c: max((r["peak_rss_mib"] for r in found[c]), default=None) for c in found},
        p50={c: median(found[c], "latency_ms_p50") for c in found},
        p95={c: median(found[c], "latency_ms_p95") for c in found},
    )
    return row


def table(args, results: dict, diffs: dict) -> list[dict]:
    """Prints the markdown table; returns its rows' figures."""
    systems = ["ours", "padded", *args.peers]
    names = " · ".join(["ours", "padded"] + [NAMES[p] for p in args.peers])
    head = ["case", "ours ex/s", "padded ex/s", "ours / padded"]
    head += [f"{NAMES[p]} ex/s" for p in args.peers] + ["ours / best peer"]
    head += [f"tokens computed / present ({names})", f"p50/p95 ms ({names})"]
    head += [f"peak RSS MiB ({names})", "max Δ prob vs padded"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    rows = []
    for (task, case, batch), _ in plan(args):
        for dtype in args.dtype:
            r = summarize(args, results, task, case, batch, dtype)
            rows.append(r)
            label = f"{task} {case}" + (" (questions/s)" if case == "squad" else f" b{batch}")
            latency = " · ".join(
                f"{fmt(r['p50'][c], '.0f')}/{fmt(r['p95'][c], '.0f')}" for c in systems
            )
            line = [label + (" bf16" if dtype == "bfloat16" else ""), fmt(r["ours"])]
            line += [fmt(r["padded"]), fmt(ratio(r["ours"], r["padded"]), ".2f")]
            line += [fmt(r[p]) for p in args.peers] + [fmt(ratio(r["ours"], r["best"]), ".2f")]
            line += [" · ".join(fmt(r["tokens"][c]) for c in systems)]
            line += [latency if batch == 1 else ""]
            line += [" · ".join(fmt(r["rss"][c], ".0f") for c in systems)]
            line += [fmt(diffs.get((task, case, batch, dtype)), ".1e", "")]
            print("| " + " | ".join(line) + " |")
    return rows


def targets(rows: list[dict]) -> None:
    """The real-text targets (length-aware batches against the peers and our padded path)
    against this run's figures."""

    def find(task, case, batch=None, dtype="float32"):
        for r in rows:
            same = (r["task"], r["case"], r["dtype"]) == (task, case, dtype)
            if same and (batch is None or r["batch"] == batch):
                return r
        return {}

    b32, b1, train = find("sst-2", "infer", 32), find("sst-2", "infer", 1), find("sst-2", "train")
    checks = [
        ("SST-2 infer b32: ours / best peer ≥ 2", ratio(b32.get("ours"), b32.get("best")), 2.0),
        ("SST-2 infer b1: ours / our padded ≥ 2.5", ratio(b1.get("ours"), b1.get("padded")), 2.5),
        (
            "SST-2 LiteRT float32 b1: ours / our padded (in-process) ≥ 2.5",
            ratio(find("sst-2", "litert", 1).get("ours"), b1.get("padded")),
            2.5,
        ),
        (
            "SST-2 infer b32: ours bf16 / ours fp32 ≥ 1.6",
            ratio(find("sst-2", "infer", 32, "bfloat16").get("ours"), b32.get("ours")),
            1.6,
        ),
        ("SST-2 train: ours / KerasHub ≥ 2", ratio(train.get("ours"), train.get("kh")), 2.0),
        ("SST-2 train: ours / HF ≥ 1.3", ratio(train.get("ours"), train.get("hf")), 1.3),
    ]
    for r in rows:
        name = f"{r['task']} {r['case']} b{r['batch']} {r['dtype']}"
        if r["task"] in ("mrpc", "rte") and r["case"] in ("infer", "train"):
            checks.append((f"{name}: ours / padded ≥ 1", ratio(r["ours"], r["padded"]), 1.0))
        if r["case"] == "squad":
            label = f"SQuAD v1.1 dev predict {r['dtype']}: length-aware / padded ≥ 1.3"
            checks.append((label, ratio(r["ours"], r["padded"]), 1.3))
        elif r["rss"].get("ours") and r["rss"].get("padded"):
            label = f"{name}: peak RSS padded / ours ≥ 1"
            checks.append((label, r["rss"]["padded"] / r["rss"]["ours"], 1.0))
    print("\nTargets (length-aware batches):\n")
    for label, value, goal in checks:
        verdict = "not measured" if value is None else ("met" if value >= goal else "NOT met")
        print(f"- {label}: {fmt(value, '.2f', 'n/a')} — {verdict}")


def machine(results: dict) -> str:
    """CPU model, cores, load, and the versions each system reported."""
    model = "unknown CPU"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        model = names[0] if names else model
    git = ["git", "describe", "--always", "--dirty"]
    commit = subprocess.run(git, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    versions = {}
    for (_, _, _, column), found in results.items():
        system = NAMES.get(column, f"ours ({commit})")
        if found and "versions" in found[0]:
            versions.setdefault(system, found[0]["versions"])
    text = "; ".join(
        f"{system}: " + ", ".join(f"{k} {v}" for k, v in found.items())
        for system, found in versions.items()
    )
    load = f"load average {LOAD_AT_START:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    return f"{model}, {os.cpu_count()} cores, {load}. {text}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    lists = lambda text: [x for x in text.split(",") if x]
    p.add_argument(
        "--tasks", type=lists, default=lists("sst-2,mrpc,rte"), help="sst-2,mrpc,rte,sts-b"
    )
    p.add_argument("--cases", type=lists, default=lists("infer,savedmodel,train,squad"))
    p.add_argument("--peers", type=lists, default=lists("kh,hf"), help="kh,hf (empty: ours only)")
    p.add_argument("--dtype", type=lists, default=lists("float32"), help="ours: float32,bfloat16")
    p.add_argument("--batches", type=lambda t: [int(x) for x in lists(t)], default=[32, 1])
    p.add_argument("--limit", type=int, default=0, help="batch > 1: first examples of dev (0: all)")
    p.add_argument("--limit1", type=int, default=64, help="batch 1: first examples of dev")
    p.add_argument("--train_batch", type=int, default=32)
    p.add_argument("--train_limit", type=int, default=0, help="train examples (0: what steps need)")
    p.add_argument("--steps", type=int, default=3, help="train steps per timed rep")
    p.add_argument("--warmup", type=int, default=2, help="untimed train steps first")
    p.add_argument("--squad_limit", type=int, default=200, help="SQuAD v1.1 dev questions")
    p.add_argument("--reps", type=int, default=2, help="timed passes / train reps per process")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--spm", default=os.path.join(DATA, "spm", "de-30k-clean.model"))
    p.add_argument("--kh_python", default=os.path.join(PEERS_HOME, "kh", "bin", "python"))
    p.add_argument("--hf_python", default=sys.executable)
    p.add_argument("--json_out", help="write every RESULT here")
    args = p.parse_args()
    args.python = {"kh": args.kh_python, "hf": args.hf_python}
    for peer in list(args.peers):
        if not os.path.exists(args.python[peer]):
            print(f"note: {NAMES[peer]} skipped: no {args.python[peer]}", file=sys.stderr)
            args.peers.remove(peer)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="real_text-") as work:
        args.work = work
        results = {}
        if "savedmodel" in args.cases:  # one export per task and dtype, before the timing
            for task in args.tasks:
                for dtype in args.dtype:
                    cmd = [sys.executable, *CASES, "--mode", "export", "--task", task]
                    cmd += ["--dtype", dtype, "--seq", str(args.seq), "--spm", args.spm]
                    cmd += ["--saved_model", saved_model_dir(args, task, dtype)]
                    run(cmd, f"export {task} {dtype}")
        if "litert" in args.cases and "float32" in args.dtype:
            for task in args.tasks:
                cmd = [sys.executable, *CASES, "--mode", "export_litert", "--task", task]
                cmd += ["--seq", str(args.seq), "--spm", args.spm]
                run(cmd + ["--litert_file", litert_file(args, task)], f"export {task} LiteRT")
        for r in range(args.rounds):
            for (task, case, batch), order in plan(args):
                for column, cmd in order if r % 2 == 0 else order[::-1]:
                    found = run(cmd, f"round {r + 1}/{args.rounds} {task} {case} b{batch} {column}")
                    results.setdefault((task, case, batch, column), []).extend(found)
        diffs = probability_diffs(args)
    print(
        f"\nALBERT-base (random weights) on real text, max_seq_length {args.seq}, "
        f"{args.rounds} rounds × {args.reps} reps (medians), {time.time() - start:.0f} s in all\n"
    )
    rows = table(args, results, diffs)
    targets(rows)
    print(f"\nMachine: {machine(results)}")
    if args.json_out:
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w") as f:
            json.dump([{"key": list(k), "results": v} for k, v in results.items()], f, indent=1)


if __name__ == "__main__":
    main()
