"""run_config.json, typed: what a training run is (its identity), how each of its segments
was trained, and the one place that writes, reads and compares it.

A run's output directory holds its checkpoints and `run_config.json`. Re-running a command
on that directory resumes the run, so the file answers two questions before anything is
written there:

- *Is this the same run?* `RunIdentity`: the runner, the task and its labels, the model
  config, the tokenizer (kind and sha256 of its file) and what the runner knows of its
  training data (the records' meta_data.json fingerprint, the training file's sha256 and
  the feature settings). A checkpoint of another task, model or vocabulary resumed under
  this one would train 0 steps or the wrong weights and report them as the new task; a
  difference is refused in one line naming each field (old → new).
- *With the same settings?* Each `Segment` (one invocation that trained: start step,
  time, settings) is kept; a resumed run whose settings that change the result
  (the guarded ones: the learning rate and its schedule, the number of steps, the
  optimizer, the batch, precision, seed) differ from the last segment's is refused unless
  each changed one is allowed explicitly, and then recorded as a new segment, never over
  the earlier one.

The file is JSON: the newest segment's full description at the top level (the keys readers
have always used: "runner", "flags", "albert_config", "trainer_config", "replicas", ...),
plus "identity" and "segments". Files written before the record was typed (no "identity")
are read with the identity their top level gives and one segment from their trainer_config.

Readers below the runners (export_encoder's config search, the fine-tuning tokenizer check,
the serving export's tokenizer check) find a checkpoint's record with `RunRecord.near`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

from data_pipeline.io import filesystem

RUN_RECORD_FILE = "run_config.json"
# A training run's evaluation report (written by albert_tf.training.run_files and the
# families; read here, beside the record, by the model card).
RESULTS_FILE = "eval_results.json"

# Which settings a resumed run may change only when named (guarded) or never (fixed) is
# metadata on the settings' fields (`setting(..., resume=...)`); the runners derive the
# lists from their dataclasses (albert_tf.training.resume_checks.resume_rules) and pass them in.


def _short(value) -> str:
    """A value for a one-line message: hashes shortened, long lists cut."""
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:16] + "..."
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _differences(old, new, name: str) -> list[str]:
    """`name: old → new` for every leaf that differs (dicts compared key by key; a key only
    one side has is compared with None)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += _differences(old.get(key), new.get(key), f"{name} {key}")
        return out
    if old == new:
        return []
    return [f"{name}: {_short(old)} → {_short(new)}"]


def check_allowed(allowed, guarded) -> None:
    """ValueError (one line) for a name of `allowed` (--allow_changed) that is not in
    `guarded` (the settings marked resume="guarded"; a typo would otherwise allow nothing,
    silently)."""
    unknown = [name for name in allowed if name not in guarded]
    if unknown:
        raise ValueError(
            f"--allow_changed={','.join(allowed)}: {', '.join(unknown)} is not a setting "
            f"a resumed run may change; those are {', '.join(guarded)}"
        )


@dataclasses.dataclass(frozen=True)
class RunIdentity:
    """What makes two invocations the same run. None: not known (a field either side does
    not know is not compared).

    runner: "run_pretraining", "run_classifier", "run_squad".
    task: the task's name ("pretraining", "mrpc", "squad v2.0 albert head", ...).
    labels: the classifier's label order (None: regression, SQuAD, pretraining).
    albert_config: the model config as a dict (`AlbertConfig.to_dict()`).
    tokenizer: {"kind": "sentencepiece" | "wordpiece", "sha256": of its file}.
    data: what the runner knows of its training data, flat ({"train_sha256": ...,
      "max_seq_length": ...}); compared only when both invocations train.
    """

    runner: str
    task: str | None = None
    labels: list | None = None
    albert_config: dict | None = None
    tokenizer: dict | None = None
    data: dict | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RunIdentity:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})

    def differences(self, new: RunIdentity, compare_data: bool = True) -> list[str]:
        """`what: old → new` for each known field that differs between this (recorded)
        identity and `new`."""
        out = []
        for field in dataclasses.fields(self):
            if field.name == "data" and not compare_data:
                continue
            old, now = getattr(self, field.name), getattr(new, field.name)
            if old is None or now is None:
                continue
            if field.name == "labels":
                old, now = list(old), list(now)
            if field.name == "tokenizer":  # (what identifies it; "file" names a copy)
                old, now = ({k: t.get(k) for k in ("kind", "sha256")} for t in (old, now))
            name = {"albert_config": "model config"}.get(field.name, field.name)
            out += _differences(old, now, name)
        return out


@dataclasses.dataclass(frozen=True)
class Segment:
    """One invocation that trained: from `start_step`, started at `started` (UTC, ISO 8601;
    None: not recorded), with `settings` (the trainer settings, train_batch_size and
    replicas)."""

    start_step: int
    started: str | None
    settings: dict

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Segment:
        return cls(int(d.get("start_step", 0)), d.get("started"), dict(d.get("settings", {})))


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """A run's run_config.json. identity: `RunIdentity`; segments: every invocation that
    trained, oldest first; details: the newest invocation's description (the file's top
    level: runner, flags, albert_config, trainer_config, replicas, what the runner adds);
    path: where it was read from (None: not yet written)."""

    identity: RunIdentity
    segments: tuple[Segment, ...] = ()
    details: dict = dataclasses.field(default_factory=dict)
    path: str | None = None

    # --- the file ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            **self.details,
            "identity": self.identity.to_dict(),
            "segments": [s.to_dict() for s in self.segments],
        }

    def write(self, directory: str) -> str:
        """Writes `directory`/run_config.json atomically (a reader sees the old file or the
        new one, never a part); returns its path."""
        from data_pipeline.io.atomic import write_json

        path = os.path.join(directory, RUN_RECORD_FILE)
        write_json(path, self.to_dict())
        return path

    @classmethod
    def from_dict(cls, d: dict, path: str | None = None) -> RunRecord:
        """The record of a run_config.json's content; files of before the typed record (no
        "identity") get the identity and the one segment their top level gives."""
        if not isinstance(d, dict):
            raise ValueError(f"{path}: not a run record (a JSON object is expected)")
        details = {k: v for k, v in d.items() if k not in ("identity", "segments")}
        if isinstance(d.get("identity"), dict):
            identity = RunIdentity.from_dict(d["identity"])
        else:
            tokenizer = (d.get("data_meta") or {}).get("tokenizer")
            identity = RunIdentity(
                runner=d.get("runner") or "unknown",
                labels=d.get("labels"),
                albert_config=d.get("albert_config"),
                tokenizer=tokenizer if isinstance(tokenizer, dict) else None,
            )
        if isinstance(d.get("segments"), list):
            segments = tuple(Segment.from_dict(s) for s in d["segments"] if isinstance(s, dict))
        elif isinstance(d.get("trainer_config"), dict):
            settings = dict(d["trainer_config"], replicas=d.get("replicas"))
            settings["train_batch_size"] = (d.get("flags") or {}).get("train_batch_size")
            settings.pop("output_dir", None)
            segments = (Segment(0, None, settings),)
        else:
            segments = ()
        return cls(identity, segments, details, path)

    @classmethod
    def read(cls, directory: str) -> RunRecord | None:
        """`directory`'s run_config.json, or None when it has none. ValueError (one line,
        naming the file and line) when it is not valid JSON or not an object."""
        path = os.path.join(directory, RUN_RECORD_FILE)
        if not filesystem.isfile(path):
            return None
        with filesystem.open(path) as f:
            text = f.read()
        try:
            content = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
        return cls.from_dict(content, path)

    @classmethod
    def near(cls, checkpoint_prefix: str) -> RunRecord | None:
        """The record of the run a checkpoint comes from: run_config.json in the
        checkpoint's directory, else in its parent (a run writes it beside `checkpoints/`
        and `best/`); None for a checkpoint of no run (converted, exported, hand-made)."""
        prefix = checkpoint_prefix
        here = os.path.dirname(prefix if filesystem.is_url(prefix) else os.path.abspath(prefix))
        for directory in dict.fromkeys((here, os.path.dirname(here))):
            record = cls.read(directory)
            if record is not None:
                return record
        return None

    @staticmethod
    def read_results(directory: str) -> dict | None:
        """`directory`'s eval_results.json (the run's evaluation report, as its family
        wrote it), or None when it has none; ValueError (one line naming the file and
        line) when it is not a JSON object."""
        path = os.path.join(directory, RESULTS_FILE)
        if not filesystem.isfile(path):
            return None
        with filesystem.open(path) as f:
            try:
                content = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
        if not isinstance(content, dict):
            raise ValueError(f"{path}: not an evaluation report (a JSON object is expected)")
        return content

    # --- what it says ----------------------------------------------------------------------
    @property
    def albert_config(self) -> dict | None:
        """The model config as recorded (a dict), or None."""
        config = self.details.get("albert_config", self.identity.albert_config)
        return config if isinstance(config, dict) else None

    @property
    def settings(self) -> dict:
        """The newest segment's settings ({} when none is recorded)."""
        return self.segments[-1].settings if self.segments else {}

    def describe(self) -> str:
        return self.path or RUN_RECORD_FILE

    # --- the checks a resumed run makes -------------------------------------------------------
    def check_same_run(self, identity: RunIdentity, directory: str, training: bool) -> None:
        """ValueError (one line) naming every field of `identity` that differs from the
        recorded one (the training data only when `training`)."""
        differences = self.identity.differences(identity, compare_data=training)
        if differences:
            raise ValueError(
                f"{directory} holds checkpoints of another run ({'; '.join(differences)}; "
                f"recorded in {self.describe()}): resuming would continue that model as "
                f"this one; use another --output_dir (its weights can be the "
                f"--init_checkpoint of a new run)"
            )

    def check_settings(self, settings: dict, allowed, rules) -> list[str]:
        """ValueError (one line) when a guarded value of `settings` (`rules.guarded`)
        differs from the newest segment's and is not in `allowed` (--allow_changed);
        returns the changes allowed (`name: old → new`) for the log. ValueError too for a
        name in `allowed` that is no guarded setting, and for a changed `rules.fixed` value
        (allowed or not)."""
        check_allowed(allowed, rules.guarded)
        before = self.settings
        changed, refused = [], []
        for name in rules.guarded:
            if name not in before or name not in settings or before[name] == settings[name]:
                continue
            line = f"{name}: {_short(before[name])} → {_short(settings[name])}"
            (changed if name in allowed else refused).append((name, line))
        fixed = [
            f"{name}: {_short(before[name])} → {_short(settings[name])}"
            for name in rules.fixed
            if name in before and name in settings and before[name] != settings[name]
        ]
        if fixed:
            raise ValueError(
                f"resuming the run of {self.describe()} with other LoRA adapters "
                f"({'; '.join(fixed)}): its checkpoints hold the adapters it was started "
                f"with, so these never change in a run; repeat them or use another --output_dir"
            )
        patience = before.get("early_stopping_patience"), settings.get("early_stopping_patience")
        if None not in patience and bool(patience[0]) != bool(patience[1]):
            raise ValueError(
                f"resuming the run of {self.describe()} with early stopping turned "
                f"{'on' if patience[1] else 'off'} (early_stopping_patience: {patience[0]} → "
                f"{patience[1]}): its state is part of the checkpoints, so a run keeps it "
                f"on or off; use another --output_dir"
            )
        if refused:
            names = ",".join(name for name, _ in refused)
            raise ValueError(
                f"resuming the run of {self.describe()} with other settings "
                f"({'; '.join(line for _, line in refused)}): repeat its settings, allow "
                f"the change with --allow_changed={names}, or use another --output_dir"
            )
        return [line for _, line in changed]

    def with_segment(self, segment: Segment, details: dict, identity: RunIdentity) -> RunRecord:
        """This record continued by `segment`, `details` as the newest description; fields
        of the identity recorded and not known now are kept."""
        merged = {
            f.name: getattr(self.identity, f.name)
            if getattr(identity, f.name) is None
            else getattr(identity, f.name)
            for f in dataclasses.fields(RunIdentity)
        }
        return RunRecord(RunIdentity(**merged), (*self.segments, segment), details, self.path)
