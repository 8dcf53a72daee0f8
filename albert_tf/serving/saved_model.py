"""SavedModel writing: each export is a new version directory `EXPORT_DIR/N` (N = 1, 2, ...
as TF Serving expects), written under a temporary name and renamed when complete (copied
up with saved_model.pb last on URLs), under the export directory's lock, so a server or a
second exporter never sees a half-written version."""

from __future__ import annotations

import os
import shutil

import tensorflow as tf

from data_pipeline.io import filesystem


def next_version_dir(export_dir: str) -> str:
    """export_dir/N for the next integer N (TF Serving's versions)."""
    versions = (
        [int(n) for n in filesystem.listdir(export_dir) if n.isdigit()]
        if filesystem.isdir(export_dir)
        else []
    )
    return os.path.join(export_dir, str(max(versions, default=0) + 1))


def write_saved_model(
    module, export_dir: str, finetuned_dir: str | None = None, task=None, card=None
) -> str:
    """Saves `module` with its signatures as a new version of `export_dir`; returns it.
    `finetuned_dir` (the model's fine-tuned model directory) is kept beside the graph in
    `VERSION/assets.extra/finetuned/` (TF Serving ignores assets.extra): each version
    carries the checkpoint it was made from, its task.json replaced by `task` of the same
    kind (a TaskInfo: with the settings the export applied, e.g. --max_windows). Without
    one, `task` (the encoder's, with its embedding settings) is written as
    `VERSION/assets.extra/task.json`. `VERSION/README.md` is its model card
    (`albert_tf.checkpoints.model_card`), from the task.json kept in the version and the
    records in `card["sources"]` (a run's), naming `card["commands"]`.

    The graph is traced with `kernels.portable_kernels()`: plain TensorFlow ops instead of
    the XLA-compiled elementwise kernels used in training, so that runtimes built without
    XLA (TF Serving by default) run it.

    A local version is written beside the others and renamed; for a URL `export_dir` (no
    directory rename on object stores) it is written locally and copied up with
    saved_model.pb last, so that a server never loads a half-copied version."""
    import tempfile

    from albert_tf.modeling.kernels import portable_kernels
    from albert_tf.serving.request_windows import capped_signatures
    from data_pipeline.io.locks import output_lock

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
                signatures = capped_signatures(module)  # (the one request-size cap)
                tf.saved_model.save(module, tmp, signatures=signatures)
            if finetuned_dir:
                kept = os.path.join(tmp, "assets.extra", "finetuned")
                filesystem.copy_tree(finetuned_dir, kept)
                if task is not None and task.task_kind.finetuned:  # (not an encoder's)
                    task.write(kept)  # with the export's own settings (--max_windows, ...)
            elif task is not None:
                filesystem.makedirs(os.path.join(tmp, "assets.extra"))
                task.write(os.path.join(tmp, "assets.extra"))
            _write_card(tmp, target, task, card or {})
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


def _write_card(version_dir: str, target: str, task, card: dict) -> None:
    """The version's README.md: the task.json it keeps, then the run's records. Those
    (run_config.json, eval_results.json) are kept in assets.extra/ too, which TF Serving
    ignores: a model converted from the version's assets.extra/finetuned, or exported from
    it again, still has its run's settings and figures."""
    from albert_tf.checkpoints.model_card import write_model_card
    from albert_tf.checkpoints.run_record import RESULTS_FILE, RUN_RECORD_FILE

    extra = os.path.join(version_dir, "assets.extra")
    sources = tuple(card.get("sources", ()))
    if filesystem.isdir(extra):
        for record in (RUN_RECORD_FILE, RESULTS_FILE):
            found = [os.path.join(d, record) for d in sources]
            found = [path for path in found if filesystem.isfile(path)]
            if found and not filesystem.exists(os.path.join(extra, record)):
                filesystem.copy(found[0], os.path.join(extra, record))
    kind = f"{task.task_kind.title} " if task is not None else ""
    name = f"{os.path.basename(os.path.dirname(target))}/{os.path.basename(target)}"
    write_model_card(
        version_dir,
        (os.path.join(extra, "finetuned"), extra, *sources),
        name=name,
        what=f"A {kind}SavedModel that takes raw text (TF Serving version {name}; the "
        "tokenizer runs in the graph).",
        commands=tuple(card.get("commands", ())),
        known=card.get("known"),
    )
